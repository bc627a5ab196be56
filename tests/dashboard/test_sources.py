"""Uploads and sources: every input kind, bad files named in one line, names never used as paths."""
import io
import json
import os
import zipfile

import pytest

from dashboard import sources
from engine.errors import InputError
from engine.samples import load_sample, sample_json

from .conftest import data_url


def _reports():
    ld = load_sample("yahoo-japan-3-brokers")
    return [bd.local.to_json() for bd in ld.brokers.values()]


def test_sources001_sample_and_default():
    info = sources.source_info(sources.DEFAULT_SOURCE)
    assert info["kind"] == "sample" and info["brokers"] == 5 and info["bundles"] == 40
    snap = sources.get_snapshot(sources.DEFAULT_SOURCE)
    assert snap.view.nb == 5 and snap.steps == 1
    assert sources.sample_state(sources.DEFAULT_SOURCE)["values"]["loadBalancerDistributeBundlesEvenlyEnabled"] == "false"
    assert sources.sample_state("upload:" + "0" * 20) is None


@pytest.mark.parametrize("bad", ["", "sample:", "sample:nope", "upload:xyz", "upload:" + "0" * 19, "../../etc/passwd",
                                 None, 3, "sample:../x"])
def test_sources002_bad_ids(bad):
    with pytest.raises(InputError):
        sources.parse_source_id(bad)


def test_sources003_loaddata_json(sid):
    raw = json.dumps(sample_json("avgshedder-pairing-6-brokers")).encode()
    got = sources.ingest_files(sid, [data_url(raw)], ["cluster.json"])
    assert not got.errors and len(got.sources) == 1
    info = got.sources[0]
    assert info["id"].startswith("upload:") and info["brokers"] == 6 and info["label"] == "cluster.json"
    assert sources.get_snapshot(info["id"]).view.nb == 6
    assert info["id"] in {o["value"] for o in sources.source_options(sid)}
    # the same bytes again in the same session give the same (random, not content-derived) id
    again = sources.ingest_files(sid, [data_url(raw)], ["renamed.json"]).sources[0]
    assert again["id"] == info["id"]
    sources.clear_memory()
    assert sources.get_snapshot(info["id"]).view.nb == 6  # from diskcache


def test_sources004_several_load_reports_at_once(sid):
    reps = _reports()
    urls = [data_url(json.dumps(r).encode()) for r in reps]
    got = sources.ingest_files(sid, urls, [f"r{i}.json" for i in range(3)])
    assert not got.errors and len(got.sources) == 1
    assert got.sources[0]["brokers"] == 3 and got.sources[0]["label"] == "3 load reports"


def test_sources005_zipped_zk_dump_and_zip_of_reports(sid):
    ld = load_sample("yahoo-japan-3-brokers")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for bid, bd in ld.brokers.items():
            zf.writestr(f"loadbalance/brokers/{bid}", json.dumps(bd.local.to_json()))
        for b, d in ld.bundle_data.items():
            zf.writestr(f"loadbalance/bundle-data/{b}", json.dumps(d.to_json()))
        zf.writestr("../evil", "ignored")
    got = sources.ingest_files(sid, [data_url(buf.getvalue())], ["zk.zip"])
    assert not got.errors and got.sources[0]["brokers"] == 3 and got.sources[0]["bundles"] == 8
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, r in enumerate(_reports()):
            zf.writestr(f"reports/{i}.json", json.dumps(r))
    got = sources.ingest_files(sid, [data_url(buf.getvalue())], ["reports.zip"])
    assert not got.errors and got.sources[0]["brokers"] == 3


def test_sources006_timelines(sid):
    snaps = [sample_json("bigo-avgshedder-homogeneous"), sample_json("bigo-avgshedder-homogeneous")]
    got = sources.ingest_files(sid, [data_url(json.dumps(snaps).encode())], ["tl.json"])
    info = got.sources[0]
    assert info["steps"] == 2
    assert sources.get_snapshot(info["id"], 0).step == 0 and sources.get_snapshot(info["id"]).step == 1
    lines = "\n".join(json.dumps(s) for s in snaps).encode()
    assert sources.ingest_files(sid, [data_url(lines)], ["tl.jsonl"]).sources[0]["steps"] == 2
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, s in enumerate(snaps + snaps[:1]):
            zf.writestr(f"incident/snapshot-{i:04d}.json", json.dumps(s))
    assert sources.ingest_files(sid, [data_url(buf.getvalue())], ["incident.zip"]).sources[0]["steps"] == 3


def test_sources007_scenario_kept_for_the_simulator(sid):
    from pathlib import Path

    yml = (Path(sources.__file__).resolve().parents[1] / "samples" / "scenarios" / "bigo-jitter.yaml").read_bytes()
    got = sources.ingest_files(sid, [data_url(yml)], ["jitter.yaml"])
    assert not got.errors and not got.sources and len(got.scenarios) == 1
    sc = got.scenarios[0]
    assert sc["id"].startswith("scenario:") and sc["name"] == "bigo-jitter" and sc["brokers"] == 4
    stored = sources.get_scenario(sc["id"])
    assert stored["data"]["name"] == "bigo-jitter" and stored["text"].startswith("# BIGO")
    assert sources.list_scenarios(sid)[0]["id"] == sc["id"]
    import yaml

    js = json.dumps(yaml.safe_load(yml)).encode()  # the same scenario as JSON
    assert sources.ingest_files(sid, [data_url(js)], ["s.json"]).scenarios[0]["minutes"] == 60
    bad = sources.ingest_files(sid, [data_url(b"name: x\nbrokers: []\n")], ["s.yaml"])
    assert bad.errors and "s.yaml" in bad.errors[0] and "minutes" in bad.errors[0]  # the simulator's validation
    bad = sources.ingest_files(sid, [data_url(b"- just\n- a list\n")], ["s.yaml"])
    assert bad.errors and "mapping" in bad.errors[0] and "s.yaml" in bad.errors[0]
    bad = sources.ingest_files(sid, [data_url(b"a: [1,\n")], ["s.yml"])
    assert "not valid YAML" in bad.errors[0]


def test_sources008_broker_conf(sid):
    conf = b"# tuned\nloadBalancerBrokerThresholdShedderPercentage=15\nmanagedLedgerDefaultEnsembleSize=3\n"
    got = sources.ingest_files(sid, [data_url(conf)], ["broker.conf"])
    assert got.conf["values"] == {"loadBalancerBrokerThresholdShedderPercentage": "15"} and got.conf["ignored"] == 1
    bad = sources.ingest_files(sid, [data_url(b"loadBalancerBrokerThresholdShedderPercentage=lots\n")], ["b.conf"])
    assert "b.conf" in bad.errors[0] and "loadBalancerBrokerThresholdShedderPercentage" in bad.errors[0]


@pytest.mark.parametrize("raw,name,needle", [
    (b'{"brokers": {"b1": {"cpu": {"usage": -5, "limit": 100}}}}', "neg.json", "neg.json"),
    (b'{"brokers": [1, 2', "trunc.json", "line 1"),
    (b"\x89PNG\r\n\x1a\n\x00\x00binary", "picture.png", "not a text file"),
    (b"PK\x03\x04 not really a zip", "broken.zip", "not a valid zip"),
    (b"hello world", "notes.txt", "not a recognised file"),
    (b'{"nothing": 1}', "empty.json", "brokers"),
])
def test_sources009_bad_files_name_the_problem(sid, raw, name, needle):
    got = sources.ingest_files(sid, [data_url(raw)], [name])
    assert not got.sources and len(got.errors) == 1
    assert name in got.errors[0] and needle in got.errors[0]


def test_sources010_size_limit_rechecked_on_server(sid, monkeypatch):
    monkeypatch.setattr(sources, "MAX_UPLOAD_BYTES", 1000)
    got = sources.ingest_files(sid, [data_url(b"{" + b" " * 2000 + b"}")], ["big.json"])
    assert "upload limit" in got.errors[0] and "big.json" in got.errors[0]
    assert "corrupted" in sources.ingest_files(sid, ["data:x;base64,@@@"], ["x.json"]).errors[0]
    assert sources.ingest_files(sid, ["not a data url"], ["x.json"]).errors


def test_sources011_file_names_are_labels_only(sid, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = json.dumps(sample_json("yahoo-japan-3-brokers")).encode()
    evil = "../../../../tmp/evil\x00name.json"
    got = sources.ingest_files(sid, [data_url(raw)], [evil])
    assert got.sources and got.sources[0]["label"] == "evilname.json"
    assert not os.listdir(tmp_path)  # nothing written where the process runs
    assert sources.display_name("C:\\Users\\me\\cluster.json") == "cluster.json"
    assert sources.display_name(None) == "upload"


def test_sources012_one_bad_file_does_not_lose_the_others(sid):
    good = json.dumps(sample_json("yahoo-japan-3-brokers")).encode()
    got = sources.ingest_files(sid, [data_url(b"{oops"), data_url(good)], ["bad.json", "good.json"])
    assert len(got.errors) == 1 and "bad.json" in got.errors[0] and got.sources[0]["label"] == "good.json"


def test_sources013_expired_upload_is_a_clear_error():
    with pytest.raises(InputError, match="upload it again"):
        sources.get_snapshot("upload:" + "f" * 20)
    with pytest.raises(InputError):
        sources.get_scenario("scenario:nope")


def test_sources015_labels_keep_broker_ids_and_drop_markup():
    assert sources.display_name("10.0.0.1:8080.json") == "10.0.0.1:8080.json"
    assert sources.display_name("<script>.json") == "_script_.json"
    assert sources.display_name("\x00\x07") == "upload"
