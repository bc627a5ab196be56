"""engine.fastload: a LoadData JSON read as columns gives exactly what the object reader gives.

The snapshots are LoadData JSON as ``ModularLoadManagerImpl`` keeps it (``LoadData`` with
``LocalBrokerData`` reports keyed by broker id, ``BundleData`` with ``shortTermData``/``longTermData``
``TimeAverageMessageData``, ``TimeAverageBrokerData`` per broker: Jackson field names), written by
:meth:`engine.model.LoadData.to_json` from the shipped samples and from seeded random clusters, then
varied the ways real inputs vary (older ``bundleStats``, reports without totals, bundles without
bundle data, quotas, a bundle listed by two brokers). Bad input falls back to the ordinary reader, so
the error is the same message naming the same field.
"""
from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from engine.config import IMPL, LoadBalancerConfig
from engine.errors import InputError
from engine.fastload import FAST_MIN_BYTES, ColumnarLoadData, load_bytes_typed, load_data_fast, parse_json_fast
from engine.io import load_data_from_json, load_snapshot_bytes, read_json_bytes
from engine.load_manager import ModularLoadManager
from engine.synth import random_snapshot
from engine.view import LoadView

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "snapshots").glob("*.json"))
PAIRS = [("ThresholdShedder", "LeastResourceUsageWithWeight"), ("OverloadShedder", "LeastLongTermMessageRate"),
         ("UniformLoadShedder", "LeastLongTermMessageRate"), ("AvgShedder", "AvgShedder")]


def _both(obj, source="snap.json"):
    raw = json.dumps(obj).encode()
    old = load_data_from_json(read_json_bytes(raw, source), source)
    new = load_data_fast(parse_json_fast(raw, source), source)
    return old, new


def _same_view(a: LoadView, b: LoadView) -> None:
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if f == "owned":
            assert len(x) == len(y) and all(np.array_equal(p, q) and p.dtype == q.dtype for p, q in zip(x, y))
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f
        else:
            assert x == y, f


def _decisions(data, shed, place):
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + shed, "loadBalancerLoadPlacementStrategy": IMPL + place,
        "loadBalancerAvgShedderHitCountLowThreshold": "1", "loadBalancerAvgShedderHitCountHighThreshold": "1"})
    return [c.to_json() for c in ModularLoadManager(data, cfg, seed=3).run_cycles(2)]


def _check_equal(obj):
    old, new = _both(obj)
    # the typed decoding (msgspec records for the bulk entries) must read the same bytes to the same snapshot
    typed = load_bytes_typed(json.dumps(obj).encode(), "snap.json")
    assert isinstance(typed, ColumnarLoadData)
    _check_equal_to(old, typed)
    # with a probe (the upload's policy-file check): the same snapshot
    probed = load_bytes_typed(json.dumps(obj).encode(), "snap.json", {})
    assert isinstance(probed, ColumnarLoadData)
    _check_equal_to(old, probed)
    # read key by key (what a document with other keys takes): the same view, warnings and reports
    from engine import fastload

    keyed = fastload._load_typed(fastload._typed_decoders(), json.dumps(obj).encode(), "snap.json", {})
    assert isinstance(keyed, ColumnarLoadData) and not keyed.materialised
    _same_view(LoadView.from_load_data(keyed), LoadView.from_load_data(probed))
    assert keyed.warnings == probed.warnings and keyed.to_json() == probed.to_json()
    return _check_equal_to(old, new)


def _check_equal_to(old, new):
    assert isinstance(new, ColumnarLoadData) and not new.materialised
    _same_view(LoadView.from_load_data(old), LoadView.from_load_data(new))
    assert new.warnings == old.warnings and new.now == old.now
    for shed, place in PAIRS:
        assert _decisions(new, shed, place) == _decisions(old, shed, place), (shed, place)
    assert not new.materialised  # the decisions ran on the arrays
    assert new.owners() == old.owners() and new.preallocations().keys() == old.preallocations().keys()
    # the object model, built on demand, is the reader's
    assert new.to_json() == old.to_json()
    assert new.materialised and LoadView.from_load_data(new) is not None
    return old, new


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_shipped_samples_equal(path):
    _check_equal(json.loads(path.read_text()))


def test_seeded_random_cluster_equal():
    _check_equal(random_snapshot(40, 25, seed=11, namespaces=5).to_json())


def _variants(base: dict):
    """The ways real LoadData JSON differs from our own writer's."""
    brokers = list(base["brokers"])
    b0, b1 = base["brokers"][brokers[0]], base["brokers"][brokers[1]]
    some = list(b0["lastStats"])[:3]

    v = copy.deepcopy(base)  # older reports: bundleStats, no totals, no bundles list
    for rep in v["brokers"].values():
        rep["bundleStats"] = rep.pop("lastStats")
        for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut", "numTopics", "numBundles",
                  "numConsumers", "numProducers", "bundles"):
            rep.pop(k, None)
    yield "bundleStats, no totals", v

    v = copy.deepcopy(base)  # the leader has not written bundle data or time averages yet
    for b in some:
        del v["bundleData"][b]
    v["resourceQuotas"] = {some[0]: {"msgRateIn": 40.0, "msgRateOut": 120.0, "bandwidthIn": 1e5,
                                     "bandwidthOut": 3e5, "memory": 80.0, "dynamic": True}}
    del v["timeAverageData"]
    yield "derived bundle data and time averages", v

    v = copy.deepcopy(base)  # an ownership change in progress, repeated names, grace period, preallocation
    v["brokers"][brokers[1]]["bundles"] = b1["bundles"] + [some[0], some[0]]
    v["recentlyUnloadedBundles"] = {some[1]: v["now"] - 1000}
    v["preallocatedBundleData"] = {brokers[2]: {"new/ns/0x00000000_0xffffffff": base["bundleData"][some[2]]}}
    v["brokers"][brokers[0]]["cpu"] = {"usage": 900.0, "limit": 800.0}  # a warning
    v["extraTopLevel"] = {"kept": [1, 2]}
    yield "shared bundle, recently unloaded, preallocated, warnings", v

    v = copy.deepcopy(base)
    v["bundleData"] = {}
    yield "no bundle data at all", v

    v = copy.deepcopy(base)  # some reports list their bundles (one only listed), the others rely on lastStats
    for i, bid in enumerate(brokers):
        if i % 2:
            v["brokers"][bid].pop("bundles", None)
        elif i == 2:
            v["brokers"][bid]["bundles"] = ["listed/only/0x00000000_0x10000000"] + v["brokers"][bid]["bundles"]
    for b in some[:2]:
        del v["bundleData"][b]
    yield "mixed bundle lists", v

    v = copy.deepcopy(base)  # reports listing their lastStats keys: in the same order, in another, one less
    for i, bid in enumerate(brokers):
        keys = list(v["brokers"][bid]["lastStats"])
        v["brokers"][bid]["bundles"] = keys[::-1] if i % 3 == 1 else keys[1:] if i % 3 == 2 else keys
    yield "bundle lists in lastStats order or not", v


@pytest.mark.parametrize("name", ["bundleStats, no totals", "derived bundle data and time averages",
                                  "shared bundle, recently unloaded, preallocated, warnings", "no bundle data at all",
                                  "mixed bundle lists", "bundle lists in lastStats order or not"])
def test_variants_equal(name):
    base = random_snapshot(12, 10, seed=5, namespaces=3).to_json()
    obj = dict(_variants(base))[name]
    old, new = _check_equal(obj)
    if name.startswith("shared"):
        assert any("is listed by 2 brokers" in w for w in new.warnings)
        assert any("above its limit" in w for w in new.warnings)


def _big(mutate=None) -> tuple[bytes, dict]:
    obj = random_snapshot(40, 60, seed=2, namespaces=4).to_json()
    if mutate:
        mutate(obj)
    raw = json.dumps(obj).encode()
    assert len(raw) >= FAST_MIN_BYTES  # the size that takes the fast path in load_snapshot_bytes
    return raw, obj


def test_big_file_takes_the_fast_path():
    raw, obj = _big()
    ld = load_snapshot_bytes(raw, "big.json")
    assert isinstance(ld, ColumnarLoadData)
    cfg = LoadBalancerConfig()
    old = load_data_from_json(obj, "big.json")
    assert [c.to_json() for c in ModularLoadManager(ld, cfg, seed=1).run_cycles(1)] == \
           [c.to_json() for c in ModularLoadManager(old, cfg, seed=1).run_cycles(1)]
    # pickled (the dashboard's diskcache) it stays columnar, with the same view
    back = pickle.loads(pickle.dumps(ld))
    assert isinstance(back, ColumnarLoadData) and not back.materialised
    _same_view(LoadView.from_load_data(back), LoadView.from_load_data(old))


def test_broker_versions_read_without_building_the_object_model():
    """The Tuner reads every broker's version before each decision: on a columnar snapshot that must not
    build the million lastStats objects (the view would then be rebuilt from them)."""
    from engine.releases import broker_versions

    raw, obj = _big()
    next(iter(obj["brokers"].values()))["brokerVersionString"] = "3.0.7"
    ld = load_snapshot_bytes(json.dumps(obj).encode(), "big.json")
    assert isinstance(ld, ColumnarLoadData)
    got = broker_versions(ld)
    assert not ld.materialised
    assert got == broker_versions(load_data_from_json(obj, "big.json"))
    assert list(got.values()).count("3.0.7") == 1


def _first_stat(obj):
    rep = next(iter(obj["brokers"].values()))
    return rep["lastStats"][next(iter(rep["lastStats"]))]


def _last_bd(obj):
    return obj["bundleData"][list(obj["bundleData"])[-1]]


BAD = {
    "negative rate": lambda o: _first_stat(o).update(msgRateIn=-1.0),
    "rate as text": lambda o: _first_stat(o).update(msgRateOut="12.5"),  # accepted by both readers
    "boolean count": lambda o: _first_stat(o).update(topics=True),
    "fractional count": lambda o: _first_stat(o).update(consumerCount=1.5),
    "huge rate": lambda o: _first_stat(o).update(msgThroughputIn=1e300),
    "cacheSize above Long.MAX_VALUE": lambda o: _first_stat(o).update(cacheSize=2.0 ** 63),
    "null stat": lambda o: _first_stat(o).update(producerCount=None),  # the default: accepted
    "maxSamples 0": lambda o: _last_bd(o)["longTermData"].update(maxSamples=0),
    "numSamples as list": lambda o: _last_bd(o)["shortTermData"].update(numSamples=[1]),
    "bundle data not an object": lambda o: o["bundleData"].update({list(o["bundleData"])[0]: 3}),
    "unknown nested key": lambda o: _last_bd(o).update(extra={"a": {"b": 1}}),
    "bundles not names": lambda o: next(iter(o["brokers"].values())).update(bundles=[1, 2]),
    "bad lastUpdate": lambda o: next(iter(o["brokers"].values())).update(lastUpdate=-5),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_same_answer_as_the_reader(name):
    raw, obj = _big(BAD[name])
    try:
        want = load_data_from_json(read_json_bytes(raw, "big.json"), "big.json")
    except InputError as exc:
        want = exc
    try:
        got = load_snapshot_bytes(raw, "big.json")
    except InputError as exc:
        got = exc
    if isinstance(want, InputError):
        assert isinstance(got, InputError) and str(got) == str(want)
        assert "big.json" in str(got)
    else:
        assert not isinstance(got, InputError) and got.to_json() == want.to_json()


def test_nesting_limit_kept(monkeypatch):
    raw, _ = _big()
    monkeypatch.setenv("SHEDLAB_MAX_NESTING", "4")  # lastStats entries sit at depth 5
    assert load_data_fast(parse_json_fast(raw, "big.json"), "big.json") is None
    assert load_bytes_typed(raw, "big.json") is None
    with pytest.raises(InputError, match="nested more than 4 levels"):
        load_snapshot_bytes(raw, "big.json")


def test_size_limit_message(monkeypatch):
    raw, _ = _big()
    monkeypatch.setenv("SHEDLAB_MAX_INPUT_MB", "1")
    with pytest.raises(InputError, match="SHEDLAB_MAX_INPUT_MB"):
        load_snapshot_bytes(raw, "big.json")


def test_orjson_differences_fall_back():
    # orjson reads an integer beyond 64 bits as a float (json keeps the int): such a snapshot is left to
    # the reader, whose message shows the number as written
    obj = parse_json_fast(b'{"brokers": {}, "now": 123456789012345678901234567890}', "s")
    assert obj is not None and load_data_fast(obj, "s") is None
    with pytest.raises(InputError, match="field now: expected epoch milliseconds"):
        load_snapshot_bytes(b'{"brokers": {}, "now": 123456789012345678901234567890}' + b" " * FAST_MIN_BYTES, "s")
    assert parse_json_fast(b'{"brokers": {}, "x": "\\ud800"}', "s") is None  # a lone surrogate
    assert parse_json_fast(b"\xef\xbb\xbf{}", "s") == {}


@pytest.mark.parametrize("value, refused", [(-3e18, False), (9.2e18, False), (2.0**63, True), (-(2.0**63), True),
                                            (1e300, True), (float("inf"), True), (float("nan"), True),
                                            (2**63, False), (True, False)])
def test_depth_check_refuses_floats_that_may_have_been_longs(value, refused):
    """The fast path leaves to the reader any float of magnitude 2**63 or more (orjson's reading of an
    integer beyond 64 bits) or not a number, wherever it sits; ints, bools and smaller floats pass."""
    from engine.fastcheck import _depth, _Fallback

    for doc in ({"a": [1.5, value, 2]}, {"b": {"x": 0.5, "y": value}}):
        if refused:
            with pytest.raises(_Fallback):
                _depth(doc, 64)
        else:
            assert _depth(doc, 64) == 2


# ------------------------------------------------------------------ shed --json: small by default
def test_shed_json_placement_summary_and_candidates_option(tmp_path, capsys):
    from engine.cli import main

    snap = tmp_path / "c.json"
    snap.write_text(json.dumps(random_snapshot(30, 10, seed=4, namespaces=3).to_json()))
    base = ["shed", str(snap), "--placement", "LeastLongTermMessageRate", "--json", "--seed", "1"]
    assert main(base) == 0
    small = json.loads(capsys.readouterr().out)
    assert main(base + ["--candidates"]) == 0
    full = json.loads(capsys.readouterr().out)
    us, uf = small["cycles"][0]["unloads"], full["cycles"][0]["unloads"]
    assert us and len(us) == len(uf)
    for s, f in zip(us, uf):
        ps, pf = s["placement"], f["placement"]
        assert "candidates" not in ps and "scores" not in ps
        assert ps["candidate_count"] == len(pf["candidates"]) and ps["score"] == pf["scores"][pf["broker"]]
        assert [(x["name"], x["count"], x["removed_count"]) for x in ps["filters"]] == \
               [(x["name"], len(x["candidates"]), len(x["removed"])) for x in pf["filters"]]
        for k in ("bundle", "broker", "strategy", "random", "best", "reason", "score_unit"):
            assert ps[k] == pf[k]
        assert {k: v for k, v in s.items() if k != "placement"} == {k: v for k, v in f.items() if k != "placement"}
    assert main(["shed", str(snap), "--candidates"]) == 2
    assert "--candidates goes with --json" in capsys.readouterr().err


def test_import_engine_and_shed_do_not_load_pandas(tmp_path):
    import subprocess
    import sys

    snap = Path(__file__).resolve().parents[2] / "samples" / "snapshots" / "yahoo-japan-3-brokers.json"
    code = ("import sys, engine; from engine.cli import main; import io, contextlib\n"
            "assert 'pandas' not in sys.modules\n"
            f"with contextlib.redirect_stdout(io.StringIO()): rc = main(['shed', {str(snap)!r}])\n"
            "print(rc, 'pandas' in sys.modules, engine.LoadBalancerConfig.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "False", "LoadBalancerConfig"]


EDGES = [0, -0.0, 1, 1.0, 1.5, -1, 256, 257, 2**31 - 1, 2**31, 2**53, 2**63 - 1, 2**63, 2**64, 10**400, 1e19, 1.0000001e19,
         1e300, True, None, "7",
         "x", [1], {}]


@pytest.mark.parametrize("where", ["stat", "short", "long", "topics"])
def test_edge_values_never_accepted_differently(where):
    """Every bulk field at edge values: the fast path either gives exactly the reader's snapshot or leaves
    the input to the reader (so a range rule added to the reader is never bypassed silently)."""
    base = random_snapshot(3, 2, seed=1, namespaces=1).to_json()
    keys = {"stat": list(_first_stat(base)), "short": list(_last_bd(base)["shortTermData"]),
            "long": list(_last_bd(base)["longTermData"]), "topics": ["topics"]}[where]
    for key in keys:
        for value in EDGES:
            obj = copy.deepcopy(base)
            target = {"stat": _first_stat, "short": lambda o: _last_bd(o)["shortTermData"],
                      "long": lambda o: _last_bd(o)["longTermData"], "topics": _last_bd}[where](obj)
            target[key] = value
            try:
                want = load_data_from_json(copy.deepcopy(obj), "e.json")
            except InputError:
                want = None
            typed = load_bytes_typed(json.dumps(obj).encode(), "e.json")  # msgspec records
            for got in (load_data_fast(copy.deepcopy(obj), "e.json"), typed):
                if got is None:
                    continue
                assert want is not None, (where, key, value)
                assert got.to_json() == want.to_json(), (where, key, value)


def test_print_json_same_document_as_json(capsys):
    from engine.cli import print_json

    obj = {"a": [1, 2.5, 1e16, None, True, "broker → é"], "n": np.float64(0.25), "i": np.int64(3), "t": (1, 2),
           "big": 2**70}
    print_json(obj)  # an integer beyond 64 bits: the json module writes it
    assert json.loads(capsys.readouterr().out) == {**obj, "n": 0.25, "i": 3, "t": [1, 2]}
    del obj["big"]
    print_json(obj)
    out = capsys.readouterr().out
    assert json.loads(out) == {**obj, "n": 0.25, "i": 3, "t": [1, 2]} and out.startswith('{\n  "a": [\n    1,')


def test_typed_decoding_probe_and_fallback():
    """The typed decoding's shape probe classifies like the parsed document (the upload's policy-file
    check), and what it cannot prove goes the orjson way with the same answer."""
    from engine.policies import classify_policy_json

    raw, obj = _big()
    probe: dict = {}
    ld = load_bytes_typed(raw, "big.json", probe)
    assert isinstance(ld, ColumnarLoadData) and probe["top"].keys() == obj.keys()  # the order is not kept
    assert all(set(probe["top"][k]) == set(v) for k, v in obj.items() if isinstance(v, dict))
    assert classify_policy_json(probe["top"]) == classify_policy_json(obj) is None
    _same_view(LoadView.from_load_data(ld), LoadView.from_load_data(load_data_fast(obj, "big.json")))
    # a number written as text: refused by the typed records, accepted by the reader (via load_snapshot_bytes)
    raw2, obj2 = _big(lambda o: _first_stat(o).update(msgRateOut="12.5"))
    assert load_bytes_typed(raw2, "big.json") is None
    assert load_snapshot_bytes(raw2, "big.json").to_json() == load_data_from_json(obj2, "big.json").to_json()
    assert load_bytes_typed(b'{"not": "load data"}' + b" " * FAST_MIN_BYTES, "x.json") is None


@pytest.mark.parametrize("extra", ["top", "report", "both-stats", "null-parts"])
def test_one_decode_and_key_by_key_agree(extra):
    """The one-pass decode takes only documents of known keys; any other key (or lastStats beside
    bundleStats) goes key by key or to the reader, with the reader's snapshot and warnings."""
    from engine import fastcheck, fastload

    obj = random_snapshot(4, 3, seed=2, namespaces=2).to_json()
    rep = next(iter(obj["brokers"].values()))
    if extra == "top":
        obj["shedlabSomethingNew"] = {"a": [1, 2]}
    elif extra == "report":
        rep["someVendorField"] = 7
    elif extra == "both-stats":
        rep["bundleStats"] = {}
    else:
        rep["bundles"], obj["bundleData"], obj["recentlyUnloadedBundles"] = None, None, None
    raw = json.dumps(obj).encode()
    T = fastload._typed_decoders()
    one = None
    try:
        one = fastload._load_whole(T, raw, "w.json")
    except (*T["error"], fastcheck._Fallback):
        assert extra != "null-parts"
    want = load_data_from_json(json.loads(raw), "w.json")
    got = load_bytes_typed(raw, "w.json")
    for ld in (one, got):
        if ld is not None:
            assert ld.warnings == want.warnings and ld.to_json() == want.to_json()


def _one_and_two_processes(raw: bytes):
    """The one-process decode and the two-process one of the same bytes, each with its probe."""
    from engine import fastcheck, fastload

    T = fastload._typed_decoders()
    p1, p2 = {}, {}
    try:
        one = fastload._load_whole(T, raw, "snap.json", p1) if len(raw) < fastload.FORK_MIN_BYTES else None
    except (*T["error"], fastcheck._Fallback, InputError):
        one = "refused"
    try:
        two = fastload._load_whole_forked(T, raw, "snap.json", p2)
    except (*T["error"], fastcheck._Fallback, InputError):
        two = "refused"
    return one, p1, two, p2


@pytest.mark.parametrize("name", ["seeded", "bundleStats, no totals", "derived bundle data and time averages",
                                  "shared bundle, recently unloaded, preallocated, warnings", "no bundle data at all",
                                  "mixed bundle lists", "bundle lists in lastStats order or not", "null parts"])
def test_two_process_decode_equals_one(name):
    """A big document is decoded in two processes (the bundle data in a forked child, the reports in the
    parent): the same snapshot, view, warnings, decisions and probe as one process, on every shape."""
    base = random_snapshot(12, 10, seed=5, namespaces=3).to_json()
    if name == "seeded":
        obj = random_snapshot(40, 25, seed=11, namespaces=5).to_json()
    elif name == "null parts":
        obj = copy.deepcopy(base)
        obj["bundleData"], obj["recentlyUnloadedBundles"] = None, None
    else:
        obj = dict(_variants(base))[name]
    raw = json.dumps(obj).encode()
    one, p1, two, p2 = _one_and_two_processes(raw)
    if name.startswith("shared"):  # (a top-level key of its own: the one-pass decode leaves it to key by key)
        assert one == "refused" and two is None
        return
    assert isinstance(two, ColumnarLoadData) and isinstance(one, ColumnarLoadData)
    from engine import view as view_mod

    v2 = two._view
    got = view_mod._name_facts(v2.bundles)
    if v2.nk and v2.nk == len(obj.get("bundleData") or {}):  # the child's namespaces of the names, given as they are
        want = view_mod.namespace_facts(list(v2.bundles))
        assert got["namespaces"] == want["namespaces"] and got["namespace_index"] == want["namespace_index"]
        assert np.array_equal(got["ns_id"], want["ns_id"]) and np.array_equal(got["bad_ns"], want["bad_ns"])
    else:  # more bundles than the child named: left to the view to compute
        assert "namespaces" not in got
    _same_view(LoadView.from_load_data(one), LoadView.from_load_data(two))
    assert p1 == p2 and two.warnings == one.warnings
    _check_equal_to(load_data_from_json(json.loads(raw), "snap.json"), two)


@pytest.mark.parametrize("bad", ["text in a stat (this half)", "text in bundle data (the child's half)",
                                 "lastStats beside bundleStats", "malformed JSON in the reports",
                                 "malformed JSON in the bundle data",
                                 "an unknown top-level key", "a count beyond a double"])
def test_two_process_decode_leaves_every_doubt_to_one_process(bad, monkeypatch):
    """What either half refuses makes the two-process decode give no answer (None), or, for a bundleData
    value the child refuses once the names are back, leave it to the key-by-key reading (as one process
    does); the upload path (with the two-process decode on) ends with the same snapshot or refusal as the
    one-process path."""
    from engine import fastload

    obj = random_snapshot(12, 10, seed=5, namespaces=3).to_json()
    if bad.startswith("text in a stat"):
        _first_stat(obj).update(msgRateOut="12.5")
    elif bad.startswith("text in bundle"):
        _last_bd(obj)["shortTermData"]["msgRateIn"] = "1.0"
    elif bad.startswith("lastStats beside"):
        next(iter(obj["brokers"].values()))["bundleStats"] = {}
    elif bad == "an unknown top-level key":
        obj["shedlabSomethingNew"] = [1]
    elif bad == "a count beyond a double":
        _last_bd(obj)["topics"] = 10 ** 400
    raw = json.dumps(obj).encode()
    if bad == "malformed JSON in the reports":
        raw = raw.replace(b'"lastStats": {', b'"lastStats": {,', 1)
    elif bad == "malformed JSON in the bundle data":
        raw = raw.replace(b'"shortTermData": {', b'"shortTermData": {,', 1)
    T = fastload._typed_decoders()
    if bad == "a count beyond a double":  # a bundleData value, refused by the child after the names came back
        with pytest.raises(fastload._Fallback):  # left to the key-by-key reading, as one process leaves it
            fastload._load_whole_forked(T, raw, "snap.json", None)
    else:
        assert fastload._load_whole_forked(T, raw, "snap.json", None) is None
    monkeypatch.setattr(fastload, "FAST_MIN_BYTES", 0)
    one = _answer(raw)
    monkeypatch.setattr(fastload, "FORK_MIN_BYTES", 0)
    assert _answer(raw) == one


def _answer(raw: bytes):
    try:
        return load_snapshot_bytes(raw, "snap.json").to_json()
    except InputError as exc:
        return str(exc)


def test_a_child_that_does_not_answer_in_time_leaves_the_document_to_one_process(monkeypatch):
    """Past its time the child is ended and the two-process decode gives no answer; the next decode forks
    a new child and answers."""
    from engine import fastload

    obj = random_snapshot(2, 2, seed=5, namespaces=1).to_json()  # two small reports, much bundle data
    one = next(iter(obj["bundleData"].values()))
    obj["bundleData"].update({f"t/ns/0x{i:08x}_0x{i + 1:08x}": one for i in range(50_000)})
    raw = json.dumps(obj).encode()
    T = fastload._typed_decoders()
    monkeypatch.setattr(fastload, "FORK_TIMEOUT_S", 0.0)
    assert fastload._load_whole_forked(T, raw, "snap.json", None) is None
    monkeypatch.setattr(fastload, "FORK_TIMEOUT_S", 60.0)
    got = fastload._load_whole_forked(T, raw, "snap.json", None)
    assert isinstance(got, ColumnarLoadData)
    assert got.to_json() == load_data_from_json(json.loads(raw), "snap.json").to_json()
