"""The extensible snapshot: JSON layout, validation, loader detection, derivation, the shipped sample."""
import json

import numpy as np
import pytest

from engine.errors import InputError
from engine.extensible import (
    ExtensibleLoadData,
    bundle_stats_key,
    ExtensibleLoadManager,
    derive_extensible,
    extensible_from_json,
    load_extensible_snapshot,
)
from engine.extensible.samples import EXTENSIBLE_SAMPLES, EXTENSIBLE_SAMPLES_DIR, extensible_sample_json
from engine.io import load_snapshot, load_timeline
from engine.samples import SAMPLES, load_sample

from ._clusters import CFG, cluster


def _doc():
    return {
        "brokerLoadData": {"a:8080": {"weightedMaxEMA": 0.9, "msgThroughputIn": 900.0, "updatedAt": 1000},
                           "b:8080": {"weightedMaxEMA": 0.1, "msgThroughputIn": 100.0, "updatedAt": 1000}},
        "topBundlesLoadData": {"a:8080": {"topBundlesLoadData": [
            {"bundleName": "t/n/0x00000000_0x80000000", "stats": {"msgThroughputIn": 100.0}},
            {"bundleName": "t/n/0x80000000_0xffffffff", "stats": {"msgThroughputIn": 300.0}}]},
            "b:8080": [{"bundleName": "u/n/0x00000000_0xffffffff", "stats": {"msgThroughputIn": 50.0}}]},
        "recentlyUnloadedBrokers": {"b:8080": 10},
        "now": 2000,
        "shedlabStrategyState": {"TransferShedder": {"unloadConditionHitCount": 2}},
    }


def test_read_and_round_trip():
    data = extensible_from_json(_doc(), "x.json")
    assert data.now == 2000 and set(data.available_brokers) == {"a:8080", "b:8080"}
    assert [b.bundle_name for b in data.top_bundles["a:8080"]] == ["t/n/0x00000000_0x80000000",
                                                                  "t/n/0x80000000_0xffffffff"]
    assert data.owners() == {"t/n/0x00000000_0x80000000": "a:8080", "t/n/0x80000000_0xffffffff": "a:8080",
                             "u/n/0x00000000_0xffffffff": "b:8080"}
    again = extensible_from_json(json.loads(json.dumps(data.to_json())), "y.json")
    assert again.to_json() == data.to_json()
    assert again.strategy_state["TransferShedder"]["unloadConditionHitCount"] == 2


def test_load_snapshot_recognises_the_extensible_form(tmp_path):
    p = tmp_path / "ext.json"
    p.write_text(json.dumps(_doc()))
    got = load_snapshot(p)
    assert isinstance(got, ExtensibleLoadData) and got.source == str(p)
    assert isinstance(load_extensible_snapshot(p), ExtensibleLoadData)
    tl = tmp_path / "timeline.json"
    tl.write_text(json.dumps([_doc(), _doc()]))
    assert all(isinstance(x, ExtensibleLoadData) for x in load_timeline(tl))


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(brokerLoadData=[]), "brokerLoadData"),
    (lambda d: d["brokerLoadData"]["a:8080"].update(weightedMaxEMA=-1), "brokerLoadData['a:8080'].weightedMaxEMA"),
    (lambda d: d["topBundlesLoadData"]["a:8080"]["topBundlesLoadData"][0].pop("bundleName"),
     "topBundlesLoadData['a:8080'].topBundlesLoadData[0].bundleName"),
    (lambda d: d["topBundlesLoadData"]["b:8080"][0]["stats"].update(msgThroughputIn="fast"),
     "topBundlesLoadData['b:8080'][0].stats.msgThroughputIn"),
    (lambda d: d["topBundlesLoadData"].update({"b:8080": 3}), "topBundlesLoadData['b:8080']"),
    (lambda d: d.update(recentlyUnloadedBrokers={"b:8080": "soon"}), "recentlyUnloadedBrokers['b:8080']"),
    (lambda d: d.update(now=-5), "now"),
    (lambda d: d.update(bundleOwnership={"x": 1}), "bundleOwnership"),
    (lambda d: d["shedlabStrategyState"]["TransferShedder"].update(unloadConditionHitCount=-1),
     "shedlabStrategyState.TransferShedder.unloadConditionHitCount"),
])
def test_bad_input_names_file_and_field(tmp_path, mutate, field):
    d = _doc()
    mutate(d)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(InputError) as e:
        load_extensible_snapshot(p)
    assert e.value.source == str(p) and e.value.field == field


def test_not_json_and_not_extensible(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{nope")
    with pytest.raises(InputError, match="not valid JSON"):
        load_extensible_snapshot(p)
    p.write_text(json.dumps({"brokers": {}}))
    with pytest.raises(InputError, match="brokerLoadData"):
        load_extensible_snapshot(p)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_modular_sample_can_be_viewed_the_extensible_way(name):
    ld = load_sample(name)
    ext = derive_extensible(ld, CFG)
    assert set(ext.broker_load_data) == set(ld.brokers)
    for bid, bd in ld.brokers.items():
        d = ext.broker_load_data[bid]
        assert d.weighted_max_ema == d.weighted_max(CFG)  # first report: the EMA is the current value
        assert d.msg_throughput == pytest.approx(bd.local.msg_throughput)
        lst = ext.top_bundles[bid]
        assert len(lst) <= CFG.loadBalancerMaxNumberOfBundlesInBundleLoadReport
        keys = [bundle_stats_key(b.stats) for b in lst]
        assert keys == sorted(keys)  # ascending in compareTo order (not raw throughput: 100 KB/s resolution)
        assert all(ext.owners()[b.bundle_name] == bid for b in lst)
    lm = ExtensibleLoadManager(ld, CFG, seed=1)
    for c in lm.run_cycles(5):
        assert c.shedding.decisions


def test_shipped_sample_is_in_sync_and_reproduces_its_description():
    for name in EXTENSIBLE_SAMPLES:
        path = EXTENSIBLE_SAMPLES_DIR / f"{name}.json"
        assert json.loads(path.read_text()) == json.loads(json.dumps(extensible_sample_json(name)))
    data = load_snapshot(EXTENSIBLE_SAMPLES_DIR / "transfer-shedder-5-brokers.json")
    lm = ExtensibleLoadManager(data, CFG)
    c = lm.do_load_shedding()
    d = c.shedding.decisions
    assert c.shedding.label == "Success"
    assert {x.broker for x in d if not x.swap} == {"broker-a:8080"}
    assert {(x.broker, x.destination) for x in d if x.swap} == {("broker-e:8080", "broker-a:8080")}
    assert sum(x.swap for x in d) == 4
    loads = {b: v.weighted_max_ema for b, v in data.broker_load_data.items()}
    assert loads["broker-a:8080"] == pytest.approx(0.92) and loads["broker-e:8080"] == pytest.approx(0.08)
    assert c.shedding.lines["std"] == pytest.approx(float(np.std(list(loads.values()))) * 100)
    moved = sum(s.throughput for s, x in zip(c.shedding.selected, d) if not x.swap) / 2 ** 20
    assert moved == pytest.approx(12 + 20 + 30 + 40 + 55 + 70)  # 227 MB/s > the 210 MB/s target
    adj = moved * 0.92 / 460
    loads["broker-a:8080"] -= adj
    loads["broker-e:8080"] += adj
    assert c.shedding.lines["std after"] == pytest.approx(float(np.std(list(loads.values()))) * 100)
    assert round(c.shedding.lines["std after"], 1) == 19.2


def test_ownership_defaults_and_lookup_defaults():
    data = cluster({"a:8080": (0.5, 1, [1, 2]), "b:8080": (0.5, 1, [3])})
    assert data.lookup is None and data.available_brokers and data.lookup_data("a:8080").load_manager_class_name
    data.top_bundles["b:8080"] = list(data.top_bundles["a:8080"])  # a handover: both list the bundles
    assert set(data.owners().values()) == {"a:8080"} or set(data.owners().values()) == {"b:8080"}


def _tied_snapshot_json(seed=5):
    """A seeded cluster's LoadData JSON with what decides top-K lists: rounded-equal stats (ties at and
    inside the top K), zero-throughput bundles, a system and a heartbeat bundle on some brokers."""
    import random

    from engine.synth import NOW, random_snapshot

    rng = random.Random(seed)
    obj = random_snapshot(40, 30, seed=seed, namespaces=4, skew=0.6, now_ms=NOW).to_json()
    for j, (bid, rep) in enumerate(obj["brokers"].items()):
        stats = rep["lastStats"]
        for name in list(stats)[: rng.choice([0, 5, 20])]:
            stats[name].update(msgThroughputIn=rng.choice([0.0, 1e5, 2e5]), msgThroughputOut=0.0,
                               msgRateIn=rng.choice([0.0, 100.0]), msgRateOut=0.0)
        if j % 7 == 0:
            some = next(iter(stats.values()))
            stats["pulsar/system/0x00000000_0xffffffff"] = dict(some, msgThroughputIn=9e9)
            stats[f"pulsar/{bid}/0x00000000_0xffffffff"] = dict(some, msgThroughputIn=8e9)
    return obj


@pytest.mark.parametrize("version", ["3.0.7", "4.0.8", "4.2.4"])
def test_view_from_a_snapshot_files_columns_is_the_view_from_its_objects(version):
    """A big snapshot file is read into columns (no object per bundle): its extensible view, every
    broker's top-K list included (ties, system namespaces, excluded namespaces, policies, a small K,
    the threshold compareTo of older releases), is the one derived from the object model, and deriving
    it builds no object model."""
    from engine.fastload import ColumnarLoadData, load_data_fast, parse_json_fast
    from engine.loaddata_json import load_data_from_json

    obj = _tied_snapshot_json()
    raw = json.dumps(obj).encode()
    objects = load_data_from_json(json.loads(raw), "s.json")
    pol = lambda ns: ns == "tenant/ns2"  # noqa: E731
    for extra in ({}, {"loadBalancerMaxNumberOfBundlesInBundleLoadReport": "3"},
                  {"loadBalancerSheddingExcludedNamespaces": "tenant/ns1"}):
        cfg = CFG.with_values(dict(extra, pulsarVersion=version))
        for has_policies in (None, pol):
            col = load_data_fast(parse_json_fast(raw, "s.json"), "s.json")
            assert isinstance(col, ColumnarLoadData)
            got = derive_extensible(col, cfg, has_policies=has_policies)
            assert not col.materialised
            want = derive_extensible(objects, cfg, has_policies=has_policies)
            assert got.bundles == want.bundles
            if cfg.has("topk_rounding_compare"):  # every bundle a list may name is owned: no list is needed
                assert repr(got.top_bundles).endswith(" 0 lists read)")
            assert got.to_json() == want.to_json()
            assert list(got.top_bundles) == list(want.top_bundles)


def test_top_lists_are_worked_out_when_read():
    """The derived view's top-K lists: one broker's read alone, the same list as every other way of
    reading (all at once, a copy, a pickle), and a list assigned replaces the worked-out one."""
    import copy
    import pickle

    from engine.extensible.top_bundles import TopBundles
    from engine.loaddata_json import load_data_from_json

    ld = load_data_from_json(_tied_snapshot_json(seed=9), "s.json")
    ext = derive_extensible(ld, CFG)
    tb = ext.top_bundles
    assert isinstance(tb, TopBundles) and len(tb) == 40
    first = next(iter(tb))
    one = tb[first]
    assert repr(tb).endswith("1 lists read)")
    whole = dict(tb.items())
    assert whole[first] is one and whole == derive_extensible(ld, CFG).top_bundles
    for other in (pickle.loads(pickle.dumps(tb)), copy.deepcopy(tb), ext.shallow_copy().top_bundles):
        assert dict(other.items()) == whole
    with pytest.raises(KeyError):
        tb["nobody:8080"]
    assert tb.get("nobody:8080") is None
    tb[first] = []
    assert tb[first] == [] and ext.to_json()["topBundlesLoadData"][first]["topBundlesLoadData"] == []
    tb[first] = [one[0].__class__("x/y/0x00000000_0xffffffff", one[0].stats)]  # a list naming a bundle nobody owns
    assert ext.bundles[-1] == "x/y/0x00000000_0xffffffff"


def test_channel_of_a_snapshot_files_columns_answers_as_the_dict():
    """The channel over a big snapshot's arrays (no dict of every bundle) gives the owners the dict of
    the object model gives, in the same order, as the leader unloads, assigns and releases bundles; a
    bundle listed by two brokers stays with the first."""
    from engine.extensible.snapshot import ChannelOwnership
    from engine.fastload import load_data_fast, parse_json_fast
    from engine.loaddata_json import load_data_from_json

    obj = _tied_snapshot_json(seed=11)
    first, second = list(obj["brokers"])[:2]
    shared = next(iter(obj["brokers"][first]["lastStats"]))
    obj["brokers"][first]["bundles"] = list(obj["brokers"][first]["lastStats"])
    obj["brokers"][second]["bundles"] = [shared] + list(obj["brokers"][second]["lastStats"])
    raw = json.dumps(obj).encode()
    cfg = CFG.with_values({"loadBalancerLoadSheddingStrategy": "TransferShedder",
                           "loadBalancerBrokerLoadTargetStd": "0.05", "loadBalancerSheddingConditionHitCountThreshold": "1"})
    col = load_data_fast(parse_json_fast(raw, "s.json"), "s.json")
    lms = [ExtensibleLoadManager(col, cfg, seed=3),
           ExtensibleLoadManager(load_data_from_json(json.loads(raw), "s.json"), cfg, seed=3)]
    assert isinstance(lms[0].view.ownership, ChannelOwnership) and isinstance(lms[1].view.ownership, dict)

    def same():
        a, b = (lm.owners() for lm in lms)
        assert list(a.items()) == list(b.items()) and len(a) == len(b)
        some = list(b)[:5] + list(b)[-3:] + ["nobody/ns/0x00000000_0xffffffff"]
        assert [a.get(x) for x in some] == [b.get(x) for x in some]
        assert [x in a for x in some] == [x in b for x in some]

    same()
    assert lms[0].owners()[shared] == first
    assert lms[0].view.to_json() == lms[1].view.to_json()
    runs = [lm.run_cycles(2) for lm in lms]
    assert [c.to_json() for c in runs[0]] == [c.to_json() for c in runs[1]]
    assert sum(len(c.unloads) for c in runs[0]) > 0
    same()
    for k in range(4):
        decs = [lm.select_broker_for_assignment(f"tenant/new/0x{k:08x}_0x{k + 1:08x}") for lm in lms]
        assert decs[0].broker == decs[1].broker is not None
        same()
    gone = next(iter(lms[1]._moved))
    for lm in lms:  # an unload no broker took: the bundle has no owner until a lookup assigns it (last)
        lm._moved[gone] = (lm._moved[gone][0], None)
    same()
    assert gone not in lms[0].owners()
    for lm in lms:
        lm.select_broker_for_assignment(gone)
    same()
    assert list(lms[0].owners())[-1] == gone
