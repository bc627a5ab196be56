"""The Tuner's engine calls: the cached-view manager decides exactly what ModularLoadManager(load_data) decides."""
import numpy as np
import pytest

from dashboard import sources
from dashboard.tuner import analysis
from dashboard.tuner.state import TunerState, build_config, coerce_state
from engine.load_manager import ModularLoadManager
from engine.samples import SAMPLES, load_sample

PAIRS = [("ThresholdShedder", "LeastResourceUsageWithWeight"), ("ThresholdShedder", "LeastLongTermMessageRate"),
         ("AvgShedder", "AvgShedder"), ("OverloadShedder", "RoundRobinBrokerSelector"),
         ("UniformLoadShedder", "LeastLongTermMessageRate")]


def _cfg(name, shed, place, **values):
    st, _ = coerce_state({"src": f"sample:{name}", "shed": shed, "place": place,
                          "values": {**{k: str(v) for k, v in SAMPLES[name].config.items()
                                        if "Strategy" not in k}, **values}})
    return build_config(st)[0]


@pytest.mark.parametrize("name", [n for n in SAMPLES if n != "cluster-100-brokers"])
@pytest.mark.parametrize("shed,place", PAIRS)
def test_analysis001_same_decisions_as_the_engine(name, shed, place):
    cfg = _cfg(name, shed, place, loadBalancerBrokerOverloadedThresholdPercentage=60)
    snap = sources.get_snapshot(f"sample:{name}")
    ours = analysis.build_manager(snap, cfg, 3).run_cycles(3)
    ref = ModularLoadManager(load_sample(name), cfg, seed=3).run_cycles(3)
    assert [c.to_json() for c in ours] == [c.to_json() for c in ref]


def test_analysis002_before_after_conserves_traffic():
    snap = sources.get_snapshot("sample:cluster-100-brokers")
    a = analysis.analyze(snap, _cfg("cluster-100-brokers", "ThresholdShedder", "LeastLongTermMessageRate"), 0)
    assert len(a.cycle.unloads) > 10
    assert np.isclose(a.before_thr.sum(), a.after_thr.sum()) and np.isclose(a.before_rate.sum(), a.after_rate.sum())
    r_before, r_after = a.ratios["throughput"]
    assert r_before > r_after > 1
    assert {a.status[u.broker] for u in a.cycle.unloads} == {"over"}
    assert a.headline().startswith(f"Unload {len(a.cycle.unloads)} bundles from ")
    assert len(a.plan) == len(a.cycle.processed)


def test_analysis002b_plan_rows_written_when_read():
    """The plan's rows are the processed unloads as the page and the report read them, each built when
    first read (a slider release reads the first rows and the count)."""
    snap = sources.get_snapshot("sample:cluster-100-brokers")
    cfg = _cfg("cluster-100-brokers", "ThresholdShedder", "LeastLongTermMessageRate", loadBalancerBrokerThresholdShedderPercentage=5)
    a = analysis.analyze(snap, cfg, 7)
    plan, units = a.plan, a.cycle.processed
    assert len(plan) == len(units) > 12
    fresh = analysis.PlanRows(units)
    assert fresh._rows.count(None) == len(units)  # nothing written yet
    head = fresh[:3]
    assert fresh._rows.count(None) == len(units) - 3 and fresh[0] is head[0]  # built once, then kept
    for row, u in zip(plan, units):
        dec = u.placement
        assert row == {"source": u.broker, "destination": u.destination or "", "bundle": u.bundle,
                       "msg_rate": float(u.msg_rate), "throughput": float(u.throughput), "reason": u.reason,
                       "placement": dec.reason if dec else "", "placement_strategy": dec.strategy if dec else "",
                       "random": bool(dec.random) if dec else False, "skipped": u.skipped or ""}
    assert plan[-1]["bundle"] == units[-1].bundle and plan[-3:] == list(plan)[-3:]
    assert plan == list(plan) and list(plan) == plan and plan != list(plan)[1:]
    assert any(r["destination"] for r in plan) and all(r["reason"] for r in plan)


def test_analysis003_memoised_and_revisioned():
    snap = sources.get_snapshot(sources.DEFAULT_SOURCE)
    cfg = _cfg("bigo-threshold-first-unload", "ThresholdShedder", "LeastResourceUsageWithWeight")
    a1, a2 = analysis.analyze(snap, cfg, 0), analysis.analyze(snap, cfg, 0)
    assert a1 is a2
    cfg2 = cfg.with_values({"loadBalancerBrokerThresholdShedderPercentage": "12"})
    a3 = analysis.analyze(snap, cfg2, 0)
    assert a3.rev != a1.rev and a3.headline() == "Nothing moves"
    assert a1.headline() == "Unload 1 bundle from 10.0.0.206:8080 to 10.0.0.32:8080"  # field findings §1.1


def test_analysis004_status_of_avgshedder_pairs():
    snap = sources.get_snapshot("sample:avgshedder-pairing-6-brokers")
    cfg = _cfg("avgshedder-pairing-6-brokers", "AvgShedder", "AvgShedder")
    a = analysis.analyze(snap, cfg, 0)
    assert set(a.status.values()) == {"pending"}  # three pairs counting hits, nothing moves yet
    cycles = analysis.run_cycles(snap, cfg, 0, 2)
    assert not cycles[0].unloads and cycles[1].unloads  # 2 high hits (field findings §1.3)
    assert analysis.broker_status(cycles[1])["broker-1:8080"] == "destination"


def test_analysis005_timeline_step(sid):
    import json

    from engine.samples import sample_json

    from .conftest import data_url
    raw = json.dumps([sample_json("yahoo-japan-3-brokers"), sample_json("bigo-avgshedder-homogeneous")]).encode()
    info = sources.ingest_files(sid, [data_url(raw)], ["tl.json"]).sources[0]
    st = TunerState(src=info["id"], step=0)
    cfg, _ = build_config(st)
    a0 = analysis.analyze(sources.get_snapshot(info["id"], 0), cfg, 0)
    a1 = analysis.analyze(sources.get_snapshot(info["id"], 1), cfg, 0)
    assert (a0.view.nb, a1.view.nb) == (3, 5) and a0.rev != a1.rev


@pytest.mark.parametrize("shed,place", PAIRS)
def test_analysis006_uploaded_report_with_double_max_values(sid, shed, place):
    """An uploaded snapshot reporting Java's Double.MAX_VALUE (Pulsar's ThresholdShedderTest input, both
    directions, so the broker's throughput overflows to Infinity): read, decided and drawn, quietly."""
    import json
    import warnings

    import plotly.io as pio

    from dashboard.figures.plan import before_after
    from dashboard.figures.scores import broker_scores
    from dashboard.tuner import service
    from tests.engine.test_double_range import DOUBLE_MAX, reach_threshold_snapshot

    from .conftest import data_url
    obj = reach_threshold_snapshot()
    obj["brokers"]["broker-2:8080"]["msgThroughputOut"] = DOUBLE_MAX
    got = sources.ingest_files(sid, [data_url(json.dumps(obj).encode())], ["max.json"])
    assert not got.errors
    st, _ = coerce_state({"src": got.sources[0]["id"], "shed": shed, "place": place})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = service.tune(st)
        a = t.analysis
        assert a.view.msg_throughput.max() == float("inf")
        figs = [broker_scores(a.view, a.cycle.shedding, t.config, a.status),
                before_after(a.view, a.before_thr, a.after_thr, a.before_rate, a.after_rate, a.status, a.ratios)]
        for fig in figs:
            pio.to_json(fig)
    assert all(u.broker == "broker-2:8080" for u in a.cycle.unloads)


def test_after_moves_applies_each_unload_in_order_bit_for_bit():
    """The brokers' rates after the unloads, done at once, equal taking each unload's rate and throughput
    from its broker and adding them to its destination one unload after the other (same doubles: the
    order of a broker's additions is kept), with unknown brokers and no destination skipped."""
    import random

    import numpy as np

    from dashboard.tuner.analysis import _after_moves
    from engine.results import Unload

    rng = random.Random(3)
    names = [f"b{i}" for i in range(40)]
    idx = {n: i for i, n in enumerate(names)}
    for _ in range(100):
        br = np.array([rng.uniform(0, 1e6) for _ in names])
        bt = np.array([rng.uniform(0, 1e9) for _ in names])
        us = [Unload(broker=rng.choice(names + ["gone"]), bundle="ns/b/0x0_0x1",
                     destination=rng.choice(names + [None, "", "gone"]), reason="r",
                     msg_rate=rng.uniform(0, 1e5) if rng.random() < .9 else rng.randint(0, 10 ** 6),
                     throughput=rng.uniform(0, 1e8)) for _ in range(rng.randint(0, 200))]
        ar, at = br.copy(), bt.copy()
        for u in us:
            i, j = idx.get(u.broker), idx.get(u.destination) if u.destination else None
            if i is not None:
                ar[i] -= u.msg_rate
                at[i] -= u.throughput
            if j is not None:
                ar[j] += u.msg_rate
                at[j] += u.throughput
        got_r, got_t = _after_moves(idx, us, br, bt)
        assert got_r.tobytes() == ar.tobytes() and got_t.tobytes() == at.tobytes()
        assert not np.shares_memory(got_r, br)


def test_broker_status_from_the_cycles_indices_equals_walking_every_unload():
    """The brokers' states read from the cycle's unload indices equal walking the unloads one by one (a
    broker an unload leaves is over; a destination stays over when its verdict or an earlier unload says
    so), for a cycle whose manager gave the indices (AvgShedder) and one looked up (ThresholdShedder)."""
    from engine.config import IMPL, LoadBalancerConfig
    from engine.load_manager import ModularLoadManager
    from engine.synth import random_view

    from dashboard.tuner.analysis import broker_status

    v = random_view(60, 20, seed=9)
    seen = 0
    for shed, place in (("AvgShedder", "AvgShedder"), ("ThresholdShedder", "LeastLongTermMessageRate")):
        cfg = LoadBalancerConfig().with_values({
            "loadBalancerLoadSheddingStrategy": IMPL + shed, "loadBalancerLoadPlacementStrategy": IMPL + place,
            "loadBalancerAvgShedderLowThreshold": "2", "loadBalancerAvgShedderHitCountLowThreshold": "1",
            "loadBalancerAvgShedderHitCountHighThreshold": "1", "maxUnloadPercentage": "0.6",
            "loadBalancerBrokerThresholdShedderPercentage": "2"})
        for c in ModularLoadManager(v, cfg, seed=5).run_cycles(3):
            walked = broker_status(c)
            assert broker_status(c, v) == walked
            seen += len(c.unloads)
            # both ways round: a broker that receives and then sends (or the reverse) is over
            both = {u.broker for u in c.unloads} & {u.destination for u in c.unloads}
            assert all(walked[b] == "over" for b in both)
    assert seen > 50
    # without verdicts: A -> B, B -> C, D -> A (a destination that leaves later, a source that receives later)
    from engine.results import Cycle, Unload

    a_, b_, c_, d_ = v.brokers[:4]
    us = [Unload(x, v.bundles[i], y, "") for i, (x, y) in enumerate(((a_, b_), (b_, c_), (d_, a_)))]
    c = Cycle(1, 0, None, unloads=list(us), processed=list(us))
    assert broker_status(c, v) == broker_status(c) == {a_: "over", b_: "over", c_: "destination", d_: "over"}


def test_analysis_prepares_the_next_avgshedder_rounds_in_the_background_once_per_view(monkeypatch):
    """After an AvgShedder decision on a big enough view the Tuner sorts, in a background thread, the
    bundles of every broker that can be a pair's hot one (once per view and weights); a strategy without
    a preparation, or a small view, starts nothing."""
    import threading

    from engine.shedding.avg_shedder import _pairing

    snap = sources.get_snapshot("sample:cluster-100-brokers")
    v = snap.view
    v.__dict__.pop("_prepared", None)
    v.__dict__.pop("_avg_largest", None)
    started = []
    real = threading.Thread

    class Spy(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            if k.get("name") == "shedlab-prepare":
                started.append(self)

    monkeypatch.setattr(analysis.threading, "Thread", Spy)
    cfg = _cfg("cluster-100-brokers", "AvgShedder", "AvgShedder", loadBalancerAvgShedderLowThreshold=40)
    analysis.analyze(snap, cfg, 0)
    assert started == []  # 10,000 bundles: below the size worth preparing
    monkeypatch.setattr(analysis, "_PREPARE_MIN_BUNDLES", 1)
    analysis.analyze(snap, cfg.with_values({"loadBalancerAvgShedderLowThreshold": "41"}), 0)
    assert len(started) == 1
    started[0].join(30)
    hot = _pairing(v, cfg.weights, not cfg.has("avg_shedder_double_comparator"))[3]
    assert {("rate", j) for j in hot} <= set(v.__dict__["_avg_largest"])
    analysis.analyze(snap, cfg.with_values({"loadBalancerAvgShedderLowThreshold": "42"}), 0)
    analysis.analyze(snap, _cfg("cluster-100-brokers", "ThresholdShedder", "LeastLongTermMessageRate"), 0)
    assert len(started) == 1  # once per view and weights; ThresholdShedder prepares nothing
