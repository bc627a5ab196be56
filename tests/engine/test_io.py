"""Reading snapshots: every format, and bad input that must give one clear message."""
import io
import json
import zipfile

import pytest

from engine.errors import InputError
from engine.io import load_snapshot, load_snapshot_bytes, load_timeline, save_snapshot
from engine.samples import load_sample
from engine.synth import make_snapshot, random_snapshot
from engine.view import LoadView

REPORT = {
    "brokerId": "10.0.0.1:8080", "webServiceUrl": "http://10.0.0.1:8080", "pulsarServiceUrl": "pulsar://10.0.0.1:6650",
    "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
    "cpu": {"usage": 350.0, "limit": 800.0}, "memory": {"usage": 614.0, "limit": 2048.0},
    "directMemory": {"usage": 32.0, "limit": 4096.0}, "bandwidthIn": {"usage": 12000.0, "limit": 10000000.0},
    "bandwidthOut": {"usage": 9000.0, "limit": 10000000.0},
    "msgThroughputIn": 1.2E6, "msgThroughputOut": 9.0E5, "msgRateIn": 1200.0, "msgRateOut": 900.0,
    "lastUpdate": 1765000000000,
    "lastStats": {"public/default/0x00000000_0x40000000": {
        "msgRateIn": 1200.0, "msgThroughputIn": 1.2E6, "msgRateOut": 900.0, "msgThroughputOut": 9.0E5,
        "consumerCount": 3, "producerCount": 2, "topics": 5, "cacheSize": 0}},
    "numTopics": 5, "numBundles": 1, "numConsumers": 3, "numProducers": 2,
    "bundles": ["public/default/0x00000000_0x40000000"], "lastBundleGains": [], "lastBundleLosses": [],
    "brokerVersionString": "4.1.0", "protocols": {}, "advertisedListeners": {},
    "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    "startTimestamp": 1764990000000, "maxResourceUsage": 0.4375, "loadReportType": "LocalBrokerData",
}


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def test_single_load_report_reference_example(tmp_path):
    ld = load_snapshot(_write(tmp_path, "r.json", REPORT))
    b = ld.brokers["10.0.0.1:8080"].local
    assert b.cpu.percent_usage() == 43.75 and b.max_resource_usage() == 0.4375
    # missing bundleData is derived as the leader does: default, then the first sample replaces it
    d = ld.bundle_data["public/default/0x00000000_0x40000000"]
    assert d.short_term.num_samples == 1 and d.short_term.msg_rate_in == 1200.0 and d.topics == 5
    assert ld.now == 1765000000000
    assert b.extra["protocols"] == {}  # unknown-to-us keys kept


def test_loaddata_round_trip(tmp_path):
    ld = random_snapshot(5, 4, seed=2)
    ld.recently_unloaded["x/y/0x00000000_0xffffffff"] = 123
    p = tmp_path / "s.json"
    save_snapshot(ld, p)
    back = load_snapshot(p)
    assert back.to_json() == ld.to_json()


def test_load_report_directory(tmp_path):
    d = tmp_path / "reports"
    d.mkdir()
    r2 = dict(REPORT, brokerId="10.0.0.2:8080", bundles=[], lastStats={})
    _write(d, "a.json", REPORT)
    _write(d, "b.json", r2)
    ld = load_snapshot(d)
    assert sorted(ld.brokers) == ["10.0.0.1:8080", "10.0.0.2:8080"]


def _zk_files(ld):
    files = {}
    for bid, bd in ld.brokers.items():
        files[f"loadbalance/brokers/{bid}"] = json.dumps(bd.local.to_json())
        files[f"loadbalance/broker-time-average/{bid}"] = json.dumps(bd.time_average.to_json())
    for b, d in ld.bundle_data.items():
        files[f"loadbalance/bundle-data/{b}"] = json.dumps(d.to_json())
    files["loadbalance/leader"] = ""
    return files


def test_zookeeper_dump_directory_and_zip(tmp_path):
    ld = random_snapshot(4, 3, seed=5)
    for rel, content in _zk_files(ld).items():
        p = tmp_path / "dump" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    got = load_snapshot(tmp_path / "dump")
    assert set(got.brokers) == set(ld.brokers) and set(got.bundle_data) == set(ld.bundle_data)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for rel, content in _zk_files(ld).items():
            z.writestr(rel, content)
        z.writestr("../../etc/evil", "x")  # never used as a path
    got2 = load_snapshot_bytes(buf.getvalue(), "dump.zip")
    assert set(got2.brokers) == set(ld.brokers)
    assert got2.bundle_data[next(iter(ld.bundle_data))].to_json() == next(iter(ld.bundle_data.values())).to_json()


def test_timeline_formats(tmp_path):
    snaps = [make_snapshot({"a:1": dict(cpu=10 + i)}, now_ms=1000 * i) for i in range(3)]
    d = tmp_path / "tl"
    d.mkdir()
    for i, s in enumerate(snaps):
        save_snapshot(s, d / f"{i:03d}.json")
    got = load_timeline(d)
    assert [s.now for s in got] == [0, 1000, 2000]
    lst = _write(tmp_path, "tl.json", [s.to_json() for s in snaps])
    assert [s.now for s in load_timeline(lst)] == [0, 1000, 2000]
    jl = tmp_path / "tl.jsonl"
    jl.write_text("\n".join(json.dumps(s.to_json()) for s in snaps))
    assert [s.now for s in load_timeline(jl)] == [0, 1000, 2000]


@pytest.mark.parametrize("content,field,words", [
    (b"{not json", None, "not valid JSON"),
    (b"", None, "empty"),
    (json.dumps({"brokers": {"b:1": dict(REPORT, cpu={"usage": "abc", "limit": 100})}}).encode(),
     "brokers['b:1'].cpu.usage", "expected a number"),
    (json.dumps({"brokers": {"b:1": dict(REPORT, cpu={"usage": -5, "limit": 100})}}).encode(),
     "brokers['b:1'].cpu.usage", "negative"),
    (b'{"brokers": {"b:1": {"cpu": {"usage": NaN, "limit": 100}}}}', None, "NaN"),
    (json.dumps({"brokers": []}).encode(), "brokers", "expected an object"),
    (json.dumps({"nothing": 1}).encode(), "brokers", "missing"),
    (json.dumps({"brokers": {"b:1": dict(REPORT, bundles="x")}}).encode(), "brokers['b:1'].bundles", "list"),
    (b"\xff\xfe\x00binary", None, "UTF-8"),
])
def test_bad_input_one_clear_message(content, field, words):
    with pytest.raises(InputError) as e:
        load_snapshot_bytes(content, "snap.json")
    msg = str(e.value)
    assert msg.startswith("snap.json") and "\n" not in msg
    assert words in msg
    if field:
        assert e.value.field == field


def test_huge_file_rejected_before_reading(tmp_path):
    p = tmp_path / "huge.json"
    with open(p, "wb") as f:
        f.truncate(200 * 1024 * 1024)  # sparse 200 MB
    with pytest.raises(InputError) as e:
        load_snapshot(p)
    assert "larger than" in str(e.value) and "huge.json" in str(e.value)


def test_missing_file():
    with pytest.raises(InputError):
        load_snapshot("/nonexistent/x.json")


def test_odd_but_real_states_accepted_with_warnings():
    # empty cluster
    ld = load_snapshot_bytes(json.dumps({"brokers": {}}).encode(), "empty.json")
    assert any("empty" in w for w in ld.warnings)
    # a bundle listed by two brokers during an ownership change, limit 0, usage over 100 %
    b = "public/default/0x00000000_0x40000000"
    r1 = dict(REPORT, brokerId="a:1", cpu={"usage": 900.0, "limit": 800.0})
    r2 = dict(REPORT, brokerId="b:1", directMemory={"usage": 10.0, "limit": 0.0})
    ld = load_snapshot_bytes(json.dumps({"brokers": {"a:1": r1, "b:1": r2}}).encode(), "odd.json")
    text = " ".join(ld.warnings)
    assert "listed by 2 brokers" in text and "limit is 0" in text and "above its limit" in text
    assert ld.brokers["a:1"].local.cpu.percent_usage() == 112.5
    assert ld.brokers["b:1"].local.direct_memory.percent_usage() == 0.0
    v = LoadView.from_load_data(ld)
    assert sorted(v.owners[v.bundle_index[b]]) == [0, 1]


def test_samples_load():
    for name in ("yahoo-japan-3-brokers", "bigo-threshold-first-unload"):
        assert load_sample(name).brokers


# ------------------------------------------------------------------------------------ import direction
def _engine_imports(rel: str) -> set:
    """The engine modules ``engine/<rel>`` imports anywhere in it (module level and inside functions)."""
    import ast
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "engine" / rel
    pkg = ["engine"] + rel[:-3].split("/")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "engine" or m.startswith("engine.")}


@pytest.mark.parametrize("rel, forbidden", [
    # the shared helpers and LoadData JSON sit below every reader
    ("inputs.py", ("engine.io", "engine.fastload", "engine.loaddata_json", "engine.policies", "engine.extensible")),
    ("loaddata_json.py", ("engine.io", "engine.fastload")),
    ("policy_hooks.py", ("engine.",)),
    # the readers of one format import downward only: never the dispatcher engine.io
    ("fastload.py", ("engine.io",)),
    ("policies.py", ("engine.io", "engine.load_manager", "engine.extensible", "engine.fastload")),
    ("extensible/snapshot.py", ("engine.io", "engine.fastload", "engine.loaddata_json")),
    ("extensible/filters.py", ("engine.io", "engine.policies")),
    ("extensible/readers.py", ("engine.io", "engine.fastload", "engine.loaddata_json")),
])
def test_readers_import_one_way(rel, forbidden):
    got = _engine_imports(rel)
    bad = sorted(m for m in got for f in forbidden if m == f or m.startswith(f + ".") or
                 (f.endswith(".") and m.startswith(f)))
    assert not bad, f"engine/{rel} imports {bad}: the readers' imports must run one way (see engine/io.py)"


def test_moved_reader_names_still_import_from_engine_io():
    import engine.inputs
    import engine.io
    import engine.loaddata_json

    for name in ("MAX_INPUT_BYTES", "read_json_bytes", "read_input_bytes", "read_input_text", "report_broker_id",
                 "resource_quota_from_json"):
        assert getattr(engine.io, name) is getattr(engine.inputs, name), name
    assert engine.io.load_data_from_json is engine.loaddata_json.load_data_from_json
    assert engine.io._finish is engine.inputs.finish_load_data
