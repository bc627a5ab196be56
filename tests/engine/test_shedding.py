"""Shedding strategies against the field findings' worked examples and the reference formulas."""
import numpy as np
import pytest

from engine.config import BIGO_AVGSHEDDER, LoadBalancerConfig
from engine.javacompat import java_map_order
from engine.load_manager import ModularLoadManager
from engine.samples import load_sample, sample_config
from engine.shedding import AvgShedder, OverloadShedder, ThresholdShedder, UniformLoadShedder
from engine.synth import bundle_names, make_snapshot
from engine.view import LoadView

MB = 1024 * 1024
CFG = LoadBalancerConfig()


def view_of(spec, **kw):
    return LoadView.from_load_data(make_snapshot(spec, **kw))


def sel(res):
    return [(s.broker, s.bundle) for s in res.selected]


# ----------------------------------------------------------------------------- OverloadShedder
def test_overload_yahoo_japan_example():
    """Field findings §3: broker1 (CPU 89 %) >= 85 % -> unload from broker1, largest throughput first."""
    v = LoadView.from_load_data(load_sample("yahoo-japan-3-brokers"))
    res = OverloadShedder().find_bundles_for_unloading(v, CFG, {})
    names = bundle_names("public/default", 8)
    # need = 284 MiB/s * (0.89 - 0.85 + 0.05) = 25.56 MiB/s: the 120 MiB/s bundle alone covers it
    over = [vd for vd in res.verdicts if vd.status == "over"]
    assert [vd.broker for vd in over] == ["broker1:8080"]
    assert over[0].need == pytest.approx(284 * MB * (0.8899999856948853 - 0.85 + 0.05))
    assert sel(res) == [("broker1:8080", names[0])]


def test_overload_docs_example_95_percent_moves_15_percent():
    """Pulsar docs: threshold 85 %, broker at 95 % CPU -> unload (95 - 85) + 5 = 15 % of its traffic."""
    spec = {"hot:1": dict(cpu=95, bundles={f"t/n/{i}": dict(rate=100, throughput=(10 - i) * MB) for i in range(6)}),
            "cold:1": dict(cpu=10, bundles={"t/n/x": dict(rate=1)})}
    v = view_of(spec)
    res = OverloadShedder().find_bundles_for_unloading(v, CFG, {})
    thr = sum(10 - i for i in range(6)) * MB + 1024  # 45 MiB + the 1 msg/s bundle? no: only hot's bundles
    hot = [vd for vd in res.verdicts if vd.broker == "hot:1"][0]
    assert hot.need == pytest.approx(45 * MB * 0.15, rel=1e-6)
    # 10 MiB >= 6.75 MiB after the first bundle: exactly one bundle
    assert sel(res) == [("hot:1", "t/n/0")]
    del thr


def test_overload_threshold_is_inclusive_and_needs_more_bundles():
    spec = {"a:1": dict(cpu=85, bundles={f"t/n/{i}": dict(throughput=1 * MB) for i in range(10)}),
            "b:1": dict(cpu=20, bundles={"t/n/z": dict(throughput=1 * MB)})}
    res = OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    # u == T counts (>=); need = 10 MiB * 0.05 = 0.5 MiB -> one 1 MiB bundle
    assert len(res.selected) == 1 and res.selected[0].broker == "a:1"
    spec["a:1"]["cpu"] = 99
    res = OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    # need = 10 MiB * (0.99 - 0.85 + 0.05) = 1.9 MiB -> two bundles
    assert len(res.selected) == 2


def test_overload_sole_bundle_and_recently_unloaded():
    spec = {"a:1": dict(cpu=95, bundles={"t/n/only": dict(throughput=MB)}), "b:1": dict(cpu=5)}
    res = OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    assert res.selected == [] and "sole bundle" in res.reason
    assert (res.label, res.reason_code) == ("Skip", "NoBundles")
    spec = {"a:1": dict(cpu=95, bundles={"t/n/x": dict(throughput=5 * MB), "t/n/y": dict(throughput=MB)}),
            "b:1": dict(cpu=5)}
    res = OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {"t/n/x": 1})
    assert sel(res) == [("a:1", "t/n/y")]
    assert (res.label, res.reason_code) == ("Success", "Overloaded")
    assert res.details.event_fields("a:1")["gap"] == pytest.approx(10.0)
    assert res.details.event_fields("b:1") == {}


def test_overload_ties_follow_hashmap_order():
    names = [f"t/n/bundle-{i}" for i in range(11)]
    spec = {"a:1": dict(cpu=99, bundles={n: dict(throughput=MB) for n in names}), "b:1": dict(cpu=1)}
    res = OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    # need = 11 MiB * 0.19 = 2.09 MiB -> three equal bundles, in getBundleDataForLoadShedding() HashMap order
    expected = [n for n in java_map_order(names)][:3]
    assert [b for _, b in sel(res)] == expected


def test_overload_uses_weighted_usage():
    spec = {"a:1": dict(cpu=10, direct_memory=95, bundles={"t/n/1": dict(throughput=MB), "t/n/2": dict(throughput=MB)}),
            "b:1": dict(cpu=5)}
    assert OverloadShedder().find_bundles_for_unloading(view_of(spec), CFG, {}).selected == []
    cfg = CFG.with_values({"loadBalancerDirectMemoryResourceWeight": "1.0"})
    assert OverloadShedder().find_bundles_for_unloading(view_of(spec), cfg, {}).selected


# ----------------------------------------------------------------------------- ThresholdShedder
def test_threshold_yahoo_japan_line_62():
    """Field findings §3: line = (89 + 64 + 3) / 3 + 10 = 62 % -> broker1 sheds."""
    v = LoadView.from_load_data(load_sample("yahoo-japan-3-brokers"))
    res = ThresholdShedder().find_bundles_for_unloading(v, CFG, {})
    assert res.lines["average + threshold"] == pytest.approx(62.0, abs=1e-5)
    assert {s.broker for s in res.selected} == {"broker1:8080"}
    # broker2 (64 %) is above the line too, but its 12 MiB/s x 7 % is below the 10 MB minimum
    b2 = [vd for vd in res.verdicts if vd.broker == "broker2:8080"][0]
    assert b2.status == "skipped" and "MinThroughputThreshold" in b2.reason


def test_threshold_bigo_first_unload_log_numbers():
    """Field findings §1.1: history {.83 .1464, .32 .1781, .87 .1344, .206 .2895, .161 .1192}, avg .1735:
    only .206 sheds, offloading at least 14.709 MB/s of 222.96 MB/s (left 208.25 MB/s)."""
    ld = load_sample("bigo-threshold-first-unload")
    lm = ModularLoadManager(ld, sample_config("bigo-threshold-first-unload"), seed=7)
    cyc = lm.do_load_shedding()
    res = cyc.shedding
    assert {b: round(s / 100, 4) for b, s in res.scores.items()} == {
        "10.0.0.83:8080": 0.1464, "10.0.0.32:8080": 0.1781, "10.0.0.87:8080": 0.1344,
        "10.0.0.206:8080": 0.2895, "10.0.0.161:8080": 0.1192}
    assert res.lines["average"] == pytest.approx(17.35, abs=0.01)
    over = [vd for vd in res.verdicts if vd.status == "over"]
    assert [vd.broker for vd in over] == ["10.0.0.206:8080"]
    assert over[0].need / MB == pytest.approx(14.709, abs=0.01)
    assert "left throughput 208.2" in over[0].reason
    # the real usage is far above the history score: the history lags
    assert lm.view.usage_with_weight(CFG.weights)[lm.view.broker_index["10.0.0.206:8080"]] == pytest.approx(0.685, abs=1e-6)
    # placement: weighted history {.83 .0825, .32 .1114, .87 .0460, .206 .2393, .161 .0601}, avg .1079:
    # nobody has usage + 10 % <= avg -> random among all 5 ("all brokers are overloaded")
    u = cyc.processed[0]
    p = u.placement
    assert {b: round(s / 100, 4) for b, s in p.scores.items()} == {
        "10.0.0.83:8080": 0.0825, "10.0.0.32:8080": 0.1114, "10.0.0.87:8080": 0.0460,
        "10.0.0.206:8080": 0.2393, "10.0.0.161:8080": 0.0601}
    assert p.lines["average"] == pytest.approx(10.79, abs=0.01)
    assert p.random and sorted(p.best) == sorted(ld.brokers)
    assert "all 5 brokers are overloaded" in p.reason


def test_threshold_bigo_over_unloading_round2():
    """Field findings §1.1 round 2: 78.09 % > 65.79 % + 10 %, offload 14.887 MB/s, left 188.944 MB/s;
    placement history {.83 .6968, .32 .6564, .206 .5448}, avg .6327 -> no candidate -> random."""
    ld = load_sample("bigo-threshold-over-unloading")
    lm = ModularLoadManager(ld, sample_config("bigo-threshold-over-unloading"), seed=1)
    cyc = lm.do_load_shedding()
    over = [vd for vd in cyc.shedding.verdicts if vd.status == "over"]
    assert [vd.broker for vd in over] == ["10.0.0.32:8080"]
    assert over[0].score == pytest.approx(78.09, abs=1e-6) and over[0].line == pytest.approx(75.79, abs=0.01)
    assert over[0].need / MB == pytest.approx(14.887, abs=0.01)
    first = cyc.processed[0].placement
    assert {b: round(s / 100, 4) for b, s in first.scores.items()} == {
        "10.0.0.83:8080": 0.6968, "10.0.0.32:8080": 0.6564, "10.0.0.206:8080": 0.5448}
    assert first.random and len(first.best) == 3


def test_threshold_history_pip364_lag():
    """PIP-364: scores 90/10; real load evened to 50/50 -> next scores 86/14 (it sheds again); after real
    14/86 the scores are 78.8/21.2."""
    t = ThresholdShedder(history={"a:1": 0.90, "b:1": 0.10})
    cfg = CFG
    bundles = {"a:1": {f"t/n/a{i}": dict(throughput=50 * MB) for i in range(4)},
               "b:1": {f"t/n/b{i}": dict(throughput=50 * MB) for i in range(4)}}

    def step(ua, ub):
        v = view_of({"a:1": dict(cpu=ua, bundles=bundles["a:1"]), "b:1": dict(cpu=ub, bundles=bundles["b:1"])})
        return t.find_bundles_for_unloading(v, cfg, {})

    r = step(50, 50)
    assert r.scores["a:1"] == pytest.approx(86.0) and r.scores["b:1"] == pytest.approx(14.0)
    assert r.selected and {s.broker for s in r.selected} == {"a:1"}  # sheds again although really balanced
    r = step(14, 86)
    assert r.scores["a:1"] == pytest.approx(78.8) and r.scores["b:1"] == pytest.approx(21.2)


def test_threshold_history_starts_at_first_observation_and_prunes():
    t = ThresholdShedder()
    v = view_of({"a:1": dict(cpu=40), "b:1": dict(cpu=20)})
    t.find_bundles_for_unloading(v, CFG, {})
    assert t.history == {"a:1": pytest.approx(0.40000000596046446), "b:1": pytest.approx(0.2)}
    t.on_active_brokers_change({"a:1"})
    assert list(t.history) == ["a:1"]


def test_threshold_zero_average_sheds_nothing():
    res = ThresholdShedder().find_bundles_for_unloading(view_of({"a:1": dict(), "b:1": dict()}), CFG, {})
    assert res.selected == [] and "average max resource usage is 0" in res.reason
    assert (res.label, res.reason_code) == ("Skip", "NoLoadData")


def test_threshold_lower_boundary_advances_history_twice():
    bundles = {f"t/n/a{i}": dict(throughput=100 * MB) for i in range(4)}
    spec = {"a:1": dict(cpu=44, bundles=bundles), "b:1": dict(cpu=40, bundles={"t/n/b": dict(throughput=MB)}),
            "c:1": dict(cpu=20, bundles={"t/n/c": dict(throughput=MB)})}
    cfg = CFG.with_values({"lowerBoundarySheddingEnabled": "true"})
    seeds = {"a:1": 0.40, "b:1": 0.40, "c:1": 0.20}
    t = ThresholdShedder(history=seeds)
    res = t.find_bundles_for_unloading(view_of(spec), cfg, {})
    once = 0.9 * 0.40 + 0.1 * 0.44
    assert t.history["a:1"] == pytest.approx(0.9 * once + 0.1 * 0.44)  # two EMA steps in one cycle
    # nobody above avg + 10 %, c is below avg - 10 % -> the hottest with >1 bundle (b has 1, so a) moves 5 %
    assert {s.broker for s in res.selected} == {"a:1"}
    assert any("lower boundary" in s.reason for s in res.selected)
    # need = 400 MiB/s * 0.1 * 0.5 = 20 MiB/s -> one 100 MiB/s bundle
    assert len(res.selected) == 1
    assert (res.label, res.reason_code) == ("Success", "Underloaded")
    assert res.details.event_fields("a:1")["trigger"] == "lower boundary"
    assert res.details.event_fields("a:1")["amount"] == pytest.approx(400 * MB * 0.1 * 0.5)
    t2 = ThresholdShedder(history=seeds)
    assert t2.find_bundles_for_unloading(view_of(spec), CFG, {}).selected == []  # off by default


# ----------------------------------------------------------------------------- UniformLoadShedder
def test_uniform_yahoo_japan_example_and_int_truncation():
    """9680 / 512 / 98 msg/s: 100 x (9680 - 98) / 98 = 9777 % > 50 % -> unload from broker1.
    Required = (int)((9680 - 98) x 0.2) = 1916; bundles 4000, 3000, 1680, 1000 msg/s: only those <= the
    remaining amount are taken: 1680 (-> 236 left), then nothing fits."""
    v = LoadView.from_load_data(load_sample("yahoo-japan-3-brokers"))
    res = UniformLoadShedder().find_bundles_for_unloading(v, CFG, {})
    names = bundle_names("public/default", 8)
    assert res.state["msg_rate_difference_pct"] == pytest.approx(100 * (9680 - 98) / 98)
    assert res.state["throughput_ratio"] == pytest.approx(284 / 2)
    assert sel(res) == [("broker1:8080", names[2])]
    over = [vd for vd in res.verdicts if vd.status == "over"][0]
    assert over.need == 1916


def test_uniform_truncates_each_subtraction():
    # required (int)((4000 - 1000) * 0.5) = 1500; bundles 700.7 and 799.6: after 700.7 -> 1500 + (int)(-700.7)
    # = 800 (not 799.3), so 799.6 still fits; with exact arithmetic it would not
    spec = {"a:1": dict(bundles={"t/n/x": dict(rate=700.7), "t/n/y": dict(rate=799.6), "t/n/z": dict(rate=2499.7)}),
            "b:1": dict(bundles={"t/n/w": dict(rate=1000)})}
    cfg = CFG.with_values({"maxUnloadPercentage": "0.5"})
    res = UniformLoadShedder().find_bundles_for_unloading(view_of(spec), cfg, {})
    assert [b for _, b in sel(res)] == ["t/n/y", "t/n/x"]


def test_uniform_throughput_mode_and_zero_min():
    # rates balanced, throughput ratio 5x > 4 -> throughput mode; min throughput 0 -> replaced by 1.0
    spec = {"a:1": dict(bundles={"t/n/x": dict(rate=1000, throughput=5 * MB), "t/n/y": dict(rate=1000, throughput=0.0)}),
            "b:1": dict(bundles={"t/n/w": dict(rate=2000, throughput=1 * MB)})}
    res = UniformLoadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    # required = (int)((5 MiB - 1 MiB) * 0.2) = 838860 B/s is below minUnloadMessageThroughput (1 MiB)
    assert res.selected == [] and "minimum" in res.reason
    res = UniformLoadShedder().find_bundles_for_unloading(view_of(spec), CFG.with_values({"maxUnloadPercentage": "0.5"}), {})
    # required 2 MiB/s: the 5 MiB/s bundle does not fit, the zero-traffic bundle does
    assert sel(res) == [("a:1", "t/n/y")]
    spec2 = {"a:1": dict(bundles={"t/n/x": dict(rate=10, throughput=3 * MB), "t/n/y": dict(rate=10, throughput=2 * MB)}),
             "b:1": dict(bundles={})}
    res2 = UniformLoadShedder().find_bundles_for_unloading(view_of(spec2), CFG, {})
    assert res2.state["min_rate_broker"] == "b:1" and res2.lines["min msg rate"] == 1.0


def test_uniform_max_bundles_per_shedding_and_balanced():
    spec = {"a:1": dict(bundles={f"t/n/{i}": dict(rate=100) for i in range(10)}), "b:1": dict(bundles={"t/n/z": dict(rate=10)})}
    cfg = CFG.with_values({"maxUnloadBundleNumPerShedding": "2", "minUnloadMessage": "0", "maxUnloadPercentage": "1.0"})
    assert len(UniformLoadShedder().find_bundles_for_unloading(view_of(spec), cfg, {}).selected) == 2
    bal = {"a:1": dict(bundles={"t/n/1": dict(rate=100), "t/n/2": dict(rate=100)}),
           "b:1": dict(bundles={"t/n/3": dict(rate=120), "t/n/4": dict(rate=100)})}
    r = UniformLoadShedder().find_bundles_for_unloading(view_of(bal), CFG, {})
    assert r.selected == [] and r.reason.startswith("balanced")
    assert (r.label, r.reason_code) == ("Skip", "Balanced")


def test_uniform_min_unload_floor():
    spec = {"a:1": dict(bundles={"t/n/1": dict(rate=300), "t/n/2": dict(rate=300)}), "b:1": dict(bundles={"t/n/3": dict(rate=100)})}
    r = UniformLoadShedder().find_bundles_for_unloading(view_of(spec), CFG, {})
    # (int)((600 - 100) * 0.2) = 100 < minUnloadMessage 1000
    assert r.selected == [] and "minimum" in r.reason
    assert (r.label, r.reason_code) == ("Skip", "Balanced")
    assert r.details.event_fields("a:1") == {"partner": "b:1", "trigger": "msg rate", "gap": 500.0, "amount": 100.0}


# ----------------------------------------------------------------------------- AvgShedder
def _scores_spec(scores, per=4, rate=1000.0):
    spec = {}
    for j, s in enumerate(scores):
        spec[f"broker-{j + 1}:8080"] = dict(cpu=s, bundles={
            f"t/n/b{j}-{i}": dict(rate=rate * s / 10 * (1 + 0.1 * i), throughput=1e5 * s * (1 + 0.1 * i))
            for i in range(per)})
    return spec


def _distinct(v):
    v.lt_samples = 900 + np.arange(v.nk)
    return v


def test_avg_pairing_example_20_51_52_80_80_80():
    """Field findings §1.3: pairs (20, 80), (51, 80), (52, 80); the 60-point gap is a high hit."""
    v = _distinct(view_of(_scores_spec([20, 51, 52, 80, 80, 80])))
    a = AvgShedder()
    r = a.find_bundles_for_unloading(v, BIGO_AVGSHEDDER, {})
    # ties among the 80s keep brokerScoreMap (HashMap) order
    eighties = [b for b in java_map_order(v.brokers) if b in ("broker-4:8080", "broker-5:8080", "broker-6:8080")]
    pairs = [(p.low, p.high, p.gap) for p in r.pairs]
    assert pairs == [("broker-1:8080", eighties[2], 60.0), ("broker-2:8080", eighties[1], 29.0),
                     ("broker-3:8080", eighties[0], 28.0)]
    assert r.selected == []
    assert a.hit_high == {"broker-1:8080": 1, eighties[2]: 1}
    assert all(a.hit_low[b] == 1 for b in v.brokers)
    # second round: 2 of 2 high hits -> the hottest pair shares load, planned to the 20
    r2 = a.find_bundles_for_unloading(v, BIGO_AVGSHEDDER, {})
    assert {s.broker for s in r2.selected} == {eighties[2]}
    assert {s.planned_destination for s in r2.selected} == {"broker-1:8080"}
    assert r2.pairs[0].triggered and r2.pairs[0].trigger == "high"
    assert "broker-1:8080" not in a.hit_low and eighties[2] not in a.hit_high  # reset after triggering
    assert a.hit_low["broker-2:8080"] == 2  # other pairs keep counting


def test_avg_hit_counts_are_per_broker_article_example():
    """Field findings §1.3: brokers 80, 80, 20, count threshold 3: round 1 broker1:1, broker3:1; round 2
    broker2 pairs with broker3 -> broker2:1, broker3:2, broker1 dropped; round 3 broker3:3 triggers."""
    cfg = CFG.with_values({"loadBalancerAvgShedderHitCountLowThreshold": "3", "loadBalancerAvgShedderHighThreshold": "100",
                           "minUnloadMessage": "0"})
    a = AvgShedder()
    rounds = [(80.5, 80.0), (80.0, 80.5), (80.5, 80.0)]
    for n, (s1, s2) in enumerate(rounds, 1):
        v = _distinct(view_of({"broker1:1": dict(cpu=s1, bundles={"t/n/1": dict(rate=5000), "t/n/1b": dict(rate=100)}),
                               "broker2:1": dict(cpu=s2, bundles={"t/n/2": dict(rate=5000), "t/n/2b": dict(rate=100)}),
                               "broker3:1": dict(cpu=20, bundles={"t/n/3": dict(rate=100)})}))
        r = a.find_bundles_for_unloading(v, cfg, {})
        if n == 1:
            assert a.hit_low == {"broker1:1": 1, "broker3:1": 1}
        if n == 2:
            assert a.hit_low == {"broker2:1": 1, "broker3:1": 2}
        if n == 3:
            assert r.pairs[0].triggered and r.pairs[0].hit_low["broker3:1"] == 3
            assert {s.broker for s in r.selected} == {"broker1:1"}


def test_avg_counters_cleared_when_no_pair_and_high_reset_in_low_band():
    a = AvgShedder(hit_low={"x:1": 5}, hit_high={"x:1": 1})
    v = view_of({"a:1": dict(cpu=50), "b:1": dict(cpu=45)})
    r = a.find_bundles_for_unloading(v, BIGO_AVGSHEDDER, {})
    assert a.hit_low == {} and a.hit_high == {} and "cleared" in r.reason
    assert (r.label, r.reason_code) == ("Skip", "Balanced")
    a = AvgShedder(hit_high={"a:1": 1, "b:1": 1})
    a.find_bundles_for_unloading(view_of({"a:1": dict(cpu=70), "b:1": dict(cpu=50)}), BIGO_AVGSHEDDER, {})
    assert a.hit_high == {} and a.hit_low == {"a:1": 1, "b:1": 1}  # gap 20 in [15, 40): high counters reset


def test_avg_amount_rate_first_then_throughput_greedy_fit():
    # rate difference (20000 - 1000) * 0.5 = 9500 msg/s > 1000: bundles 8000, 6000, 3000, 3000 -> 8000 fits
    # (1500 left), 6000 and 3000 do not; a zero-rate bundle is never taken
    spec = {"hot:1": dict(cpu=90, bundles={"t/n/a": dict(rate=8000), "t/n/b": dict(rate=6000), "t/n/c": dict(rate=3000),
                                           "t/n/d": dict(rate=3000), "t/n/e": dict(rate=0.0)}),
            "cold:1": dict(cpu=10, bundles={"t/n/f": dict(rate=1000)})}
    a = AvgShedder(hit_high={"hot:1": 1, "cold:1": 1})
    r = a.find_bundles_for_unloading(_distinct(view_of(spec)), CFG.with_values({"maxUnloadPercentage": "0.5"}), {})
    assert [b for _, b in sel(r)] == ["t/n/a"]
    assert r.pairs[0].amount == pytest.approx(9500) and r.pairs[0].amount_unit == "msg/s"
    # throughput mode when the rate difference is too small
    spec2 = {"hot:1": dict(cpu=90, bundles={"t/n/a": dict(rate=100, throughput=30 * MB), "t/n/b": dict(rate=100, throughput=8 * MB)}),
             "cold:1": dict(cpu=10, bundles={"t/n/f": dict(rate=150, throughput=2 * MB)})}
    a2 = AvgShedder(hit_high={"hot:1": 1})
    r2 = a2.find_bundles_for_unloading(_distinct(view_of(spec2)), CFG.with_values({"maxUnloadPercentage": "0.5"}), {})
    assert r2.pairs[0].amount_unit == "B/s" and r2.pairs[0].amount == pytest.approx(18 * MB)
    assert [b for _, b in sel(r2)] == ["t/n/b"]


def test_avg_sole_bundle_can_be_unloaded_and_plan_is_used_by_placement():
    spec = {"hot:1": dict(cpu=90, bundles={"t/n/a": dict(rate=8000)}), "mid:1": dict(cpu=50, bundles={"t/n/m": dict(rate=10)}),
            "cold:1": dict(cpu=10, bundles={"t/n/f": dict(rate=0.0)})}
    ld = make_snapshot(spec)
    cfg = BIGO_AVGSHEDDER.with_values({"loadBalancerDistributeBundlesEvenlyEnabled": "false", "maxUnloadPercentage": "1.0",
                                       "loadBalancerAvgShedderHitCountHighThreshold": "1", "minUnloadMessage": "1000"})
    lm = ModularLoadManager(ld, cfg, seed=3)
    cyc = lm.do_load_shedding()
    assert [(u.broker, u.bundle, u.destination) for u in cyc.unloads] == [("hot:1", "t/n/a", "cold:1")]
    assert cyc.unloads[0].placement.from_plan
    assert any("1 bundle(s)" in n for n in cyc.shedding.notes)


def test_avg_plan_lost_when_bundle_data_changes():
    a = AvgShedder()
    v = view_of({"a:1": dict(cpu=10, bundles={"t/n/x": dict(rate=10)}), "b:1": dict(cpu=20)})
    d = v.bundle_data("t/n/x")
    a.plans[d.value_key()] = ("b:1", "t/n/x", "shedding")
    from engine.placement.base import PlacementContext

    ctx = PlacementContext(np.random.default_rng(0))
    cand = np.arange(v.nb)
    assert a.select_broker(cand, "t/n/x", d, v, CFG, ctx).broker == "b:1"
    d2 = d.copy()
    d2.short_term.num_samples -= 1  # the leader updated the bundle data: value key changed
    dec = a.select_broker(cand, "t/n/x", d2, v, CFG, ctx)
    assert not dec.from_plan and "no planned destination" in dec.reason


def test_avg_homogeneous_start_unloads_after_8_checks():
    """Field findings §1.4: 63 vs 38.5 differ by 24.5 > 15 -> after 8 checks they share load."""
    ld = load_sample("bigo-avgshedder-homogeneous")
    lm = ModularLoadManager(ld, sample_config("bigo-avgshedder-homogeneous"), seed=0)
    cycles = lm.run_cycles(8)
    assert [len(c.unloads) for c in cycles[:7]] == [0] * 7
    assert cycles[7].unloads
    assert {(u.broker, u.destination) for u in cycles[7].unloads} == {("10.0.0.83:8080", "10.0.0.161:8080")}
    assert all(u.placement.from_plan for u in cycles[7].unloads)


def test_avg_counters_read_as_dicts_and_assigned_as_mappings():
    """The counters read as a new dict each time (changing it changes nothing) and are replaced by assigning
    a mapping, which the next round counts on: 3 low hits given, the 4th triggers the pair."""
    a = AvgShedder()
    a.hit_low = {"a:1": 3, "z:1": 7}
    got = a.hit_low
    got["a:1"] = 100
    assert a.hit_low == {"a:1": 3, "z:1": 7} and a.hit_high == {}
    cfg = CFG.with_values({"loadBalancerAvgShedderHitCountLowThreshold": "4", "minUnloadMessage": "0"})
    r = a.find_bundles_for_unloading(view_of({"a:1": dict(cpu=70, bundles={"t/n/1": dict(rate=500)}),
                                              "b:1": dict(cpu=50, bundles={"t/n/2": dict(rate=100)})}), cfg, {})
    assert r.pairs[0].triggered and r.pairs[0].hit_low == {"b:1": 1, "a:1": 4}
    assert a.hit_low == {"z:1": 7}  # the pair's counters reset; a broker not in the view keeps its own


def _avg_round_by_hand(hl: dict, hh: dict, pairing, brokers, th) -> tuple:
    """AvgShedder's hit counting written out pair by pair on two dicts (the rules of
    ``pulsar-load-balancing.md`` §5.4): returns the pairs as the result lists them ``(low, high,
    low hits, high hits, triggered)`` and whether any pair counted; ``hl`` / ``hh`` are updated."""
    low, high, n_low, n_high = th
    lo_l, hi_l, gaps = pairing[2], pairing[3], pairing[6]
    resets, counted = [], []
    for q in range(len(lo_l)):
        a, b = brokers[lo_l[q]], brokers[hi_l[q]]
        if gaps[q] < low:
            for d in (hl, hh):
                d.pop(a, None)
                d.pop(b, None)
            if a != b:
                resets.append((a, b, {}, {}, False))
            continue
        hl[a] = hl.get(a, 0) + 1
        hl[b] = hl.get(b, 0) + 1
        if gaps[q] < high:
            hh.pop(a, None)
            hh.pop(b, None)
            u = v = 0
        else:
            hh[a] = hh.get(a, 0) + 1
            hh[b] = hh.get(b, 0) + 1
            u, v = hh[a], hh[b]
        x, y = hl[a], hl[b]
        counted.append((a, b, {a: x, b: y}, {a: u, b: v}, u >= n_high or v >= n_high or x >= n_low or y >= n_low))
    if not counted:
        hl.clear()
        hh.clear()
    for a, b, _x, _u, fired in counted:
        if fired:
            for d in (hl, hh):
                d.pop(a, None)
                d.pop(b, None)
    return resets + counted, bool(counted)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_avg_hit_counters_match_the_rules_written_pair_by_pair(seed):
    """Round after round on a changing cluster (brokers join and leave, odd counts pair the middle broker
    with itself, scores tie), with the memory passed through its JSON now and then: the counters, in the
    order the state lists them, every pair's hit counts and whether it triggered equal the rules applied
    pair by pair on two dicts."""
    import json

    from engine.shedding.avg_shedder import _pairing

    rng = np.random.default_rng(seed)
    pool = [f"b{i}:8080" for i in range(23)]
    a, hl, hh = AvgShedder(), {}, {}
    fired_any = reset_any = middle = 0
    for rnd in range(60):
        present = [b for b in pool if rng.random() < 0.8]
        cfg = CFG.with_values({"loadBalancerAvgShedderLowThreshold": str(int(rng.choice([0, 2, 10, 20, 30]))),
                               "loadBalancerAvgShedderHighThreshold": str(int(rng.integers(20, 60))),
                               "loadBalancerAvgShedderHitCountLowThreshold": str(int(rng.integers(1, 6))),
                               "loadBalancerAvgShedderHitCountHighThreshold": str(int(rng.integers(1, 4)))})
        spec = {b: dict(cpu=float(rng.choice([10, 30, 50, 70, 90])) + float(rng.integers(0, 3)),
                        bundles={f"t/n/{b}-{k}": dict(rate=float(rng.integers(1, 5000))) for k in range(3)})
                for b in present}
        v = _distinct(view_of(spec))
        pairing = _pairing(v, cfg.weights, not cfg.has("avg_shedder_double_comparator"))
        th = (cfg.loadBalancerAvgShedderLowThreshold, cfg.loadBalancerAvgShedderHighThreshold,
              cfg.loadBalancerAvgShedderHitCountLowThreshold, cfg.loadBalancerAvgShedderHitCountHighThreshold)
        want, any_counted = _avg_round_by_hand(hl, hh, pairing, v.brokers, th)
        r = a.find_bundles_for_unloading(v, cfg, {})
        got = [(p.low, p.high, p.hit_low, p.hit_high, p.triggered) for p in r.pairs]
        assert got == want, rnd
        assert list(a.hit_low.items()) == list(hl.items()) and list(a.hit_high.items()) == list(hh.items()), rnd
        assert r.state["hit_low"] == hl and list(r.state["hit_high"].items()) == list(hh.items())
        assert ("cleared" in r.reason) == (not any_counted)
        fired_any += any(w[4] for w in want)
        reset_any += any(not w[2] for w in want)
        middle += any(w[0] == w[1] and w[2] for w in want)  # the middle broker counted (a low threshold of 0)
        if rnd % 7 == 3:  # the memory through its JSON, into a new instance
            state = json.loads(json.dumps(a.state_value().to_json()))
            a = AvgShedder()
            a.restore(state)
    assert fired_any > 10 and reset_any > 5 and middle > 1  # the run went through every branch


# ----------------------------------------------------------------------------- result codes
def test_cycle_json_carries_the_reason_code_and_one_broker_is_nobrokers():
    lm = ModularLoadManager(load_sample("yahoo-japan-3-brokers"))
    c = lm.do_load_shedding()
    assert c.to_json()["reason_code"] == c.shedding.reason_code and c.reason_code in ("Overloaded", "Balanced")
    one = ModularLoadManager(make_snapshot({"a:1": dict(cpu=99)})).do_load_shedding()
    assert one.shedding is None and one.reason_code == "NoBrokers" and one.to_json()["reason_code"] == "NoBrokers"
    off = ModularLoadManager(make_snapshot({"a:1": dict(cpu=99), "b:1": dict()}),
                             CFG.with_values({"loadBalancerSheddingEnabled": "false"})).do_load_shedding()
    assert off.reason_code is None


def test_avg_hit_count_holds_back_then_overloaded_with_the_pair_as_explanation():
    v = _distinct(view_of(_scores_spec([20, 80])))
    a = AvgShedder()
    cfg = BIGO_AVGSHEDDER.with_values({"loadBalancerAvgShedderHitCountHighThreshold": "2"})
    r1 = a.find_bundles_for_unloading(v, cfg, {})
    assert (r1.label, r1.reason_code) == ("Skip", "HitCount") and r1.details.pairs[0].high == "broker-2:8080"
    r2 = a.find_bundles_for_unloading(v, cfg, {})
    assert (r2.label, r2.reason_code) == ("Success", "Overloaded")
    f = r2.details.event_fields("broker-2:8080")
    assert f["partner"] == "broker-1:8080" and f["trigger"] == "high" and f["gap"] == pytest.approx(60.0)


def test_avg_without_plans_decides_the_same_and_selections_carry_the_pair_reason():
    """A backtest runs no placement, so its AvgShedder keeps no plans: every cycle selects the same bundles
    and counts the same hits as one that keeps them. Each selection reads the pair's reason as text (made
    once, when first read), also after a copy or a pickle."""
    import copy
    import pickle

    spec = {f"b{i}:1": dict(cpu=10 + 9 * i, bundles={f"t/n/{i}-{k}": dict(rate=500.0 * (i + 1) * (k + 1),
                                                                        throughput=MB * (i + 1) * (k + 1))
                                                  for k in range(4)}) for i in range(7)}
    v = _distinct(view_of(spec))
    cfg = CFG.with_values({"loadBalancerAvgShedderHitCountLowThreshold": "2", "minUnloadMessage": "100"})
    keep, lean = AvgShedder(), AvgShedder()
    lean.keep_plans = False
    fired = 0
    for _ in range(4):
        a, b = keep.find_bundles_for_unloading(v, cfg, {}), lean.find_bundles_for_unloading(v, cfg, {})
        assert [(s.broker, s.bundle, s.planned_destination, s.value) for s in a.selected] == \
               [(s.broker, s.bundle, s.planned_destination, s.value) for s in b.selected]
        assert (keep.hit_low, keep.hit_high) == (lean.hit_low, lean.hit_high)
        fired += len(a.selected)
        for s in b.selected:
            pair = next(p for p in b.pairs if p.high == s.broker)
            assert s.reason == pair.reason and "unload from" in s.reason
            assert pickle.loads(pickle.dumps(s)).reason == s.reason == copy.deepcopy(s).reason
    assert fired and keep.plans and not lean.plans


def test_avg_unload_carries_the_selections_reason_text():
    """A cycle's unload reads the reason its selection gives (the pair's text, formatted when first read by
    either), also through ``to_json`` and a pickle."""
    import pickle

    spec = {"hot:1": dict(cpu=90, bundles={"t/n/a": dict(rate=8000), "t/n/b": dict(rate=500)}),
            "cold:1": dict(cpu=10, bundles={"t/n/f": dict(rate=0.0)})}
    cfg = BIGO_AVGSHEDDER.with_values({"loadBalancerDistributeBundlesEvenlyEnabled": "false", "maxUnloadPercentage": "1.0",
                                       "loadBalancerAvgShedderHitCountHighThreshold": "1", "minUnloadMessage": "1000"})
    cyc = ModularLoadManager(make_snapshot(spec), cfg, seed=3).do_load_shedding()
    u = cyc.unloads[0]
    pickled = pickle.loads(pickle.dumps(u))  # before any read: the pickle carries the text
    assert u.to_json()["reason"] == u.reason == cyc.shedding.selected[0].reason == pickled.reason
    assert "unload from hot:1 to cold:1" in u.reason
