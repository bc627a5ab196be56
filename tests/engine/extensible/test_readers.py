"""The Extensible Load Manager's data as operators can produce it.

The files under ``data/`` are built in exactly the shapes upstream writes:

* ``broker-load-data.consume.txt`` — ``bin/pulsar-client consume -n 0 -s shedlab
  non-persistent://pulsar/system/loadbalancer-broker-load-data`` as a 3.0 client prints it
  (``CmdConsume.interpretMessage``: ``----- got message -----`` then ``key:[..], properties:[], content:..``,
  client log lines in between — the example of Pulsar's administration-load-balance.md); the values are
  ``BrokerLoadData`` (pulsar-broker ``loadbalance.extensions.data.BrokerLoadData``) as Jackson writes it
  (``1.0E7`` doubles); broker-1 published twice, the later value must win (TableView).
* ``top-bundles-load-data.consume.txt`` — the same command on ``.../loadbalancer-top-bundles-load-data``
  as a 3.x/4.x client prints it (``AbstractCmdConsume``: a ``publishTime:[..], eventTime:[..], `` prefix);
  values are ``TopBundlesLoadData`` (``{"topBundlesLoadData": [BundleLoadData(bundleName, stats)]}``,
  ``stats`` a ``NamespaceBundleStats``), as ``TopKBundles.update`` fills them.
* ``elm-messages.jsonl`` — the same messages as ``{"key", "value"}`` lines (a consumer script's output).
* ``broker-2:8080.json`` — one ``BrokerLoadData`` value, its broker in the file name.
"""
import io
import json
import zipfile
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.extensible import ExtensibleLoadData
from engine.io import load_snapshot, load_snapshot_bytes, load_timeline

DATA = Path(__file__).parent / "data"
BLD = DATA / "broker-load-data.consume.txt"
TOP = DATA / "top-bundles-load-data.consume.txt"
JSONL = DATA / "elm-messages.jsonl"
ONE = DATA / "broker-2:8080.json"
BROKERS = ["broker-1:8080", "broker-2:8080", "broker-3:8080"]


def _zip(*paths) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in paths:
            zf.write(p, p.name)
    return buf.getvalue()


def test_consume_output_of_broker_load_data_alone():
    # CmdConsume 3.0 text, log lines around the messages; broker-1's second message wins
    ext = load_snapshot(BLD)
    assert isinstance(ext, ExtensibleLoadData)
    assert sorted(ext.broker_load_data) == BROKERS
    b1 = ext.broker_load_data["broker-1:8080"]
    assert (b1.weighted_max_ema, b1.updated_at, b1.bandwidth_in.limit) == (0.8, 1732510800000, 1.0e7)
    assert ext.top_bundles == {}
    assert any("no top-bundles load data" in w for w in ext.warnings)


def test_zip_of_both_topics_consume_output_equals_json_lines():
    # both `pulsar-client consume` outputs in one zip (3.0 and 3.x print formats) == {key, value} lines
    ext = load_snapshot_bytes(_zip(BLD, TOP), "elm.zip")
    assert sorted(ext.broker_load_data) == BROKERS
    # kept in the published order: ascending, smallest of the top K first (TopKBundles.update adds
    # the partition-sorted head from index k-1 down to 0)
    assert [x.bundle_name for x in ext.top_bundles["broker-1:8080"]] == [
        "public/default/0x80000000_0xc0000000", "public/default/0x40000000_0x80000000",
        "public/default/0x00000000_0x40000000"]
    assert ext.owners()["tenant-a/ns1/0x00000000_0x80000000"] == "broker-2:8080"
    assert ext.top_bundles["broker-1:8080"][-1].stats.msg_throughput_out == 6.0e6
    assert not any("top-K lists show" in w for w in ext.warnings)  # bundleCount 3 + 2 + 1: all listed
    lines = load_snapshot(JSONL)
    assert lines.to_json() == ext.to_json()
    assert load_timeline(JSONL)[0].to_json() == ext.to_json()  # one snapshot, not one per line


def test_single_broker_load_data_named_by_file_or_by_broker(tmp_path):
    # one BrokerLoadData value: was misread as a modular load report ("missing brokerId")
    ext = load_snapshot(ONE)
    assert list(ext.broker_load_data) == ["broker-2:8080"]
    assert ext.broker_load_data["broker-2:8080"].weighted_max_ema == 0.3
    assert any("taken from the file name" in w for w in ext.warnings)
    other = tmp_path / "value.json"
    other.write_bytes(ONE.read_bytes())
    assert list(load_snapshot(other, broker="10.0.0.7:8080").broker_load_data) == ["10.0.0.7:8080"]


def test_container_shape_and_modular_report_still_read(tmp_path):
    ext = load_snapshot_bytes(_zip(BLD, TOP), "elm.zip")
    f = tmp_path / "container.json"
    f.write_text(json.dumps(ext.to_json()))
    assert load_snapshot(f).to_json() == ext.to_json()
    # a modular LocalBrokerData report (lastStats, webServiceUrl...) is still a modular snapshot
    rep = tmp_path / "rep.json"
    rep.write_text(json.dumps({"webServiceUrl": "http://b1:8080", "cpu": {"usage": 10, "limit": 100},
                               "lastUpdate": 5, "lastStats": {}}))
    assert not getattr(load_snapshot(rep), "extensible", False)


@pytest.mark.parametrize("obj,words", [
    ({"version": 3, "hosts": []}, ["tried", "modular LoadData", "BrokerLoadData", "TopBundlesLoadData",
                                   "keys: hosts, version"]),
    ({"cpu": {"usage": 1, "limit": 8}, "lastStats": {}, "weightedMaxEMA": 0.5}, ["'lastStats'", "'weightedMaxEMA'"]),
])
def test_neither_shape_names_the_shapes_tried_and_the_field(tmp_path, obj, words):
    f = tmp_path / "odd.json"
    f.write_text(json.dumps(obj))
    with pytest.raises(InputError) as e:
        load_snapshot(f)
    assert "odd.json" in str(e.value) and e.value.field
    for w in words:
        assert w in str(e.value)


def test_consume_printed_with_auto_consume_or_without_key_is_refused(tmp_path):
    f = tmp_path / "auto.txt"
    f.write_text("----- got message -----\nkey:[b1:8080], properties:[], content:{cpu={usage=1.0, limit=8.0}}\n")
    with pytest.raises(InputError, match=r"auto.txt:2.*auto_consume"):
        load_snapshot(f)
    f.write_text("----- got message -----\nkey:[null], properties:[], content:{\"weightedMaxEMA\":0.1}\n")
    with pytest.raises(InputError, match="without a key"):
        load_snapshot(f)


def test_tombstone_removes_the_broker_and_print_metadata_is_read(tmp_path):
    # content:null = a tombstone (the broker's entry deleted); a 4.x/5.x client (V5MessageSupport) prints
    # eventTime:[null] and, with --print-metadata, ", message-id:..., producer-name:..." after the content
    f = tmp_path / "c.txt"
    f.write_text(BLD.read_text() + "----- got message -----\nkey:[broker-3:8080], properties:[], content:null\n"
                 "----- got message -----\npublishTime:[1732510801000], eventTime:[null], key:[broker-4:8080], "
                 'properties:[], content:{"weightedMaxEMA":0.2,"updatedAt":1732510801000}, message-id:3:1:-1, '
                 "producer-name:broker-4, sequence-id:7, replicated-from:null, redelivery-count:0\n")
    ext = load_snapshot(f)
    assert sorted(ext.broker_load_data) == BROKERS[:2] + ["broker-4:8080"]
    assert ext.broker_load_data["broker-4:8080"].weighted_max_ema == 0.2


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_exit_codes(capsys, tmp_path):
    z = tmp_path / "elm.zip"
    z.write_bytes(_zip(BLD, TOP))
    rc, out, err = run(capsys, "shed", z, "--cycles", "4", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["strategy"] == "TransferShedder"
    assert [c["decisions"][0]["reason"] for c in d["cycles"]][:3] == ["HitCount"] * 3
    assert d["cycles"][3]["label"] == "Success" and d["cycles"][3]["unloads"]
    rc, out, err = run(capsys, "place", z, "--bundle", "public/default/0x00000000_0x40000000", "--json")
    assert rc == 0, err
    assert json.loads(out)["broker"] in BROKERS
    v = tmp_path / "v.json"
    v.write_bytes(ONE.read_bytes())
    rc, out, err = run(capsys, "place", v, "--broker", "b9:8080", "--bundle", "t/n/0x00000000_0xffffffff", "--json")
    assert rc == 0, err
    assert json.loads(out)["broker"] == "b9:8080"
    bad = tmp_path / "bad.json"
    bad.write_text('{"hosts": []}')
    rc, out, err = run(capsys, "shed", bad)
    assert rc == 2 and "bad.json" in err and "tried" in err
