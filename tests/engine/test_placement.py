"""Placement strategies and the selectBroker pipeline (filters, retry, preallocation)."""
import numpy as np
import pytest

from engine.config import BIGO_AVGSHEDDER, LoadBalancerConfig
from engine.errors import InputError, UsageError
from engine.javacompat import java_map_order
from engine.load_manager import ModularLoadManager
from engine.placement import LeastLongTermMessageRate, LeastResourceUsageWithWeight, PlacementContext, RoundRobinBrokerSelector
from engine.shedding import AvgShedder
from engine.synth import make_snapshot
from engine.view import LoadView

CFG = LoadBalancerConfig()
NOEVEN = CFG.with_values({"loadBalancerDistributeBundlesEvenlyEnabled": "false"})


def lm_of(spec, cfg=NOEVEN, seed=0, **kw):
    return ModularLoadManager(make_snapshot(spec, **kw), cfg, seed=seed)


def test_lltmr_lowest_long_term_rate_and_overload_infinity():
    spec = {"a:1": dict(cpu=50, bundles={"t/n/1": dict(rate=3000)}),
            "b:1": dict(cpu=90, bundles={"t/n/2": dict(rate=100)}),   # lowest rate but overloaded (> 85 %)
            "c:1": dict(cpu=40, bundles={"t/n/3": dict(rate=2000)})}
    d = lm_of(spec).select_broker("t/n/new")
    assert d.broker == "c:1" and not d.random
    assert d.scores["b:1"] == float("inf") and d.scores["c:1"] == 2000


def test_lltmr_all_overloaded_random_among_all():
    spec = {b: dict(cpu=90 + i, bundles={f"t/n/{b}": dict(rate=100 * i)}) for i, b in enumerate(["a:1", "b:1", "c:1"])}
    seen = {lm_of(spec, seed=s).select_broker("t/n/new").broker for s in range(30)}
    assert seen == {"a:1", "b:1", "c:1"}
    d = lm_of(spec).select_broker("t/n/new")
    assert d.random and "every candidate is above the overload line" in d.reason


def test_lltmr_preallocation_counts_default_100_msgs():
    spec = {"a:1": dict(cpu=10, bundles={"t/n/1": dict(rate=1000)}), "b:1": dict(cpu=10, bundles={"t/n/2": dict(rate=1000)})}
    lm = lm_of(spec, seed=5)
    first = lm.select_broker_for_assignment("t/n/new1")
    assert first.random and first.preallocated
    second = lm.select_broker_for_assignment("t/n/new2")
    # the unseen bundle's default long-term rate (50 + 50 msg/s) now weighs on the first broker
    assert second.broker != first.broker and not second.random
    assert second.scores[first.broker] == 1100.0
    again = lm.select_broker_for_assignment("t/n/new1")
    assert again.broker == first.broker and again.strategy == "preallocation"


def test_lruww_band_and_history_updates_each_call():
    spec = {"a:1": dict(cpu=10, bundles={"t/n/1": dict(rate=100)}), "b:1": dict(cpu=50, bundles={"t/n/2": dict(rate=100)}),
            "c:1": dict(cpu=60, bundles={"t/n/3": dict(rate=100)})}
    cfg = NOEVEN.with_values({"loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight"})
    lm = lm_of(spec, cfg)
    d = lm.select_broker("t/n/x")
    # avg 40 %, only a (10 % + 10 % <= 40 %) passes
    assert d.broker == "a:1" and not d.random and d.lines["average"] == pytest.approx(40.0, abs=1e-5)
    lm.placement.history["a:1"] = 0.5
    lm.select_broker("t/n/y")
    assert lm.placement.history["a:1"] == pytest.approx(0.9 * 0.5 + 0.1 * 0.1)  # EMA advanced by the call


def test_lruww_restart_reset_when_no_traffic():
    spec = {"a:1": dict(cpu=10, bundles={"t/n/1": dict(rate=0.0)}), "b:1": dict(cpu=50, bundles={"t/n/2": dict(rate=100)})}
    s = LeastResourceUsageWithWeight(history={"a:1": 0.9, "b:1": 0.5})
    v = LoadView.from_load_data(make_snapshot(spec))
    s.select_broker(np.arange(2), "t/n/x", v.bundle_data("t/n/x"), v, CFG, PlacementContext())
    assert s.history["a:1"] == pytest.approx(0.1)  # reset: zero message rate
    assert s.history["b:1"] == pytest.approx(0.9 * 0.5 + 0.1 * 0.5)


def test_round_robin_cycles_in_candidate_order():
    v = LoadView.from_load_data(make_snapshot({b: dict() for b in ["x:1", "y:1", "z:1"]}))
    rr = RoundRobinBrokerSelector()
    cand = np.array([2, 0, 1])
    picks = [rr.select_broker(cand, "t/n/a", None, v, CFG, PlacementContext()).broker for _ in range(4)]
    order = [v.brokers[i] for i in cand]
    assert picks == [order[0], order[1], order[2], order[0]]


def test_avg_placement_random_hash_and_sticky():
    v = LoadView.from_load_data(make_snapshot({b: dict() for b in ["x:1", "y:1", "z:1"]}))
    a = AvgShedder()
    ctx = PlacementContext(np.random.default_rng(11))
    d = a.select_broker(np.arange(3), "t/n/a", v.bundle_data("t/n/a"), v, CFG, ctx)
    assert d.random and "hash of a random number" in d.reason
    d2 = a.select_broker(np.arange(3), "t/n/a", v.bundle_data("t/n/a"), v, CFG, ctx)
    assert d2.broker == d.broker and d2.from_plan  # remembered
    # what a decision that follows a plan says: planned for another bundle of the same value here
    assert d2.reason == (f"remembered {d.broker} for an identical BundleData value (planned for t/n/a at "
                         f"placement); AvgShedder keys its plans by value")
    assert d2.best == [d.broker] and d2.candidates == v.brokers and d2.lines == {}
    d3 = a.select_broker(np.arange(3), "t/n/b", v.bundle_data("t/n/b"), v, CFG, ctx)  # same (default) value
    assert d3.broker == d.broker and "(planned for t/n/a at placement)" in d3.reason
    key = v.bundle_data("t/n/c").value_key()
    a.plans[key] = ("z:1", "t/n/c", "shedding")
    d4 = a.select_broker(np.arange(3), "t/n/c", v.bundle_data("t/n/c"), v, CFG, ctx)
    assert d4.reason == "destination planned when shedding: z:1" and d4.to_json()["reason"] == d4.reason
    d4.prefix_reason("note: ")
    assert d4.reason == "note: destination planned when shedding: z:1"
    assert a.select_broker(np.array([1, 2]), "t/n/c", v.bundle_data("t/n/c"), v, CFG, ctx).reason.startswith(
        "planned destination not a candidate")
    picks = {AvgShedder().select_broker(np.arange(3), "t/n/a", v.bundle_data("t/n/a"), v, CFG,
                                        PlacementContext(np.random.default_rng(s))).broker for s in range(40)}
    assert picks == {"x:1", "y:1", "z:1"}  # not the bundle name: every broker can be chosen


def test_avg_placement_requires_avg_shedding():
    cfg = CFG.with_values({"loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"})
    with pytest.raises((UsageError, InputError), match="refuses to start"):
        ModularLoadManager(make_snapshot({"a:1": dict()}), cfg)
    lm = ModularLoadManager(make_snapshot({"a:1": dict()}), BIGO_AVGSHEDDER)
    assert lm.placement is lm.shedding  # one instance, both roles


def test_max_topics_filter_and_fallback():
    spec = {"a:1": dict(cpu=10, bundles={"t/n/1": dict(rate=10, topics=60000)}),
            "b:1": dict(cpu=10, bundles={"t/n/2": dict(rate=5000, topics=10)})}
    d = lm_of(spec).select_broker("t/n/x")
    assert d.broker == "b:1"  # a has the lowest rate but too many topics
    assert any(f.removed == ["a:1"] for f in d.filters)
    spec["b:1"]["bundles"]["t/n/2"]["topics"] = 70000
    d = lm_of(spec).select_broker("t/n/x")
    assert d.broker == "a:1" and any("filter ignored" in f.note for f in d.filters)


def test_distribute_bundles_evenly_keeps_fewest_of_namespace():
    spec = {"a:1": dict(cpu=10, bundles={"t/n/1": dict(rate=10), "t/n/2": dict(rate=10)}),
            "b:1": dict(cpu=10, bundles={"t/n/3": dict(rate=9000), "t/other/1": dict(rate=10)})}
    d = lm_of(spec, CFG).select_broker("t/n/new")
    assert d.broker == "b:1"  # fewer bundles of t/n, despite its higher rate
    d = lm_of(spec, NOEVEN).select_broker("t/n/new")
    assert d.broker == "a:1"


def test_overload_retry_with_all_brokers():
    # the even-distribution filter leaves only the overloaded broker; the retry drops the filters
    spec = {"a:1": dict(cpu=95, bundles={"t/other/1": dict(rate=10)}),
            "b:1": dict(cpu=10, bundles={"t/n/1": dict(rate=10)})}
    d = lm_of(spec, CFG).select_broker("t/n/new")
    assert d.retried and d.first_choice == "a:1" and d.broker == "b:1"


def test_load_manager_class_filter():
    spec = {"a:1": dict(cpu=10, load_manager="org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"),
            "b:1": dict(cpu=60, bundles={"t/n/1": dict(rate=10000)})}
    d = lm_of(spec).select_broker("t/n/new")
    assert d.broker == "b:1"


def test_prefer_later_versions():
    spec = {"a:1": dict(cpu=10, version="3.3.1"), "b:1": dict(cpu=60, version="4.1.0", bundles={"t/n/1": dict(rate=9999)})}
    cfg = NOEVEN.with_values({"preferLaterVersions": "true"})
    assert lm_of(spec, cfg).select_broker("t/n/new").broker == "b:1"
    assert lm_of(spec, NOEVEN).select_broker("t/n/new").broker == "a:1"


def test_excluded_namespace_uses_round_robin():
    spec = {"a:1": dict(cpu=10), "b:1": dict(cpu=10), "c:1": dict(cpu=10)}
    cfg = NOEVEN.with_values({"loadBalancerSheddingExcludedNamespaces": "t/ex"})
    lm = lm_of(spec, cfg)
    picks = [lm.select_broker(f"t/ex/{i}").broker for i in range(3)]
    assert picks == java_map_order(["a:1", "b:1", "c:1"])
    assert "loadBalancerSheddingExcludedNamespaces" in lm.select_broker("t/ex/9").reason


def test_non_persistent_topics_need_support():
    spec = {"a:1": dict(cpu=10), "b:1": dict(cpu=50, bundles={"t/n/1": dict(rate=100)})}
    ld = make_snapshot(spec)
    ld.brokers["a:1"].local.non_persistent_topics_enabled = False
    lm = ModularLoadManager(ld, NOEVEN)
    assert lm.select_broker("t/n/x", non_persistent=True).broker == "b:1"
    assert lm.select_broker("t/n/x").broker == "a:1"


def test_candidates_option_runs_only_the_strategy():
    spec = {"a:1": dict(cpu=10), "b:1": dict(cpu=50, bundles={"t/n/1": dict(rate=100)})}
    d = lm_of(spec).select_broker("t/n/x", candidates=["b:1"])
    assert d.broker == "b:1" and d.candidates == ["b:1"]


def test_context_facts_per_candidate_array():
    """PlacementContext keeps the name order and membership per candidate array: equal to computing
    them, and never confused between arrays or views."""
    from engine.synth import random_view

    v = random_view(30, 2, seed=4)
    w = random_view(30, 2, seed=5)
    ctx = PlacementContext()
    a = np.array([7, 3, 21, 0, 12], dtype=np.int64)
    b = np.array([5, 29], dtype=np.int64)
    for _ in range(2):
        for cand in (a, b):
            want = sorted(cand.tolist(), key=lambda j: v.brokers[j].encode("utf-16-be"))
            assert ctx.by_name(v, cand).tolist() == want
            assert [ctx.is_candidate(v, cand, j) for j in range(v.nb)] == [j in cand.tolist() for j in range(v.nb)]
    assert ctx.by_name(w, a).tolist() == sorted(a.tolist(), key=lambda j: w.brokers[j].encode("utf-16-be"))


@pytest.mark.parametrize("name", ["LeastResourceUsageWithWeight", "LeastLongTermMessageRate", "RoundRobinBrokerSelector"])
def test_placement_on_a_reused_candidate_array_decides_as_on_fresh_copies(name):
    """What a strategy keeps per candidate array (LRUWW once every history reached its fixed point,
    LLTMR its scores, round robin the names) changes no decision: 300 placements on one array give
    the same brokers, ties, averages and history as on a new copy of it each time."""
    from engine.placement.base import PlacementContext
    from engine.synth import random_view

    view = random_view(40, 3, seed=5)
    cfg = LoadBalancerConfig().with_values({"loadBalancerHistoryResourcePercentage": "0.5"})
    cand = np.arange(view.nb)[::-1].copy()
    runs = []
    for reuse in (True, False):
        strategy = {"LeastResourceUsageWithWeight": LeastResourceUsageWithWeight, "LeastLongTermMessageRate":
                    LeastLongTermMessageRate, "RoundRobinBrokerSelector": RoundRobinBrokerSelector}[name]()
        ctx = PlacementContext(np.random.default_rng(3))
        ctx.prealloc_rate(view)
        out = []
        for i in range(300):
            c = cand if reuse else cand.copy()
            d = strategy.select_broker(c, f"t/n/{i}", None, view, cfg, ctx)
            out.append((d.broker, d.random, d.best, d.lines if hasattr(d, "lines") else None))
        runs.append((out, strategy.state()))
    assert runs[0] == runs[1]


def test_excluded_namespace_overloaded_round_robin_pick_retries_with_the_placement_strategy():
    """Round robin picks an overloaded broker for a bundle of an excluded namespace: the retry runs the
    configured placement strategy on all brokers, with the bundle's data when that strategy reads it
    (AvgShedder keys its plans by the data's value)."""
    order = java_map_order(["a:1", "b:1", "c:1"])
    spec = {b: dict(cpu=95 if b == order[0] else 10 + 20 * i, bundles={f"t/n/{i}": dict(rate=100)})
            for i, b in enumerate(["a:1", "b:1", "c:1"])}
    cfg = BIGO_AVGSHEDDER.with_values({"loadBalancerSheddingExcludedNamespaces": "t/ex",
                                       "loadBalancerDistributeBundlesEvenlyEnabled": "false"})
    lm = ModularLoadManager(make_snapshot(spec), cfg, seed=4)
    dec = lm.select_broker("t/ex/0x00000000_0x10000000")
    assert dec.retried and dec.first_choice == order[0]
    assert dec.strategy == "AvgShedder" and dec.broker is not None
    key = lm._placement_data("t/ex/0x00000000_0x10000000").value_key()
    assert lm.placement.plans[key][0] == dec.broker  # the retry remembered its draw under the bundle's value


def test_namespace_counts_per_broker_equal_counting_each_listed_bundle():
    """The even-distribution step's counts (BundleRangeCache, reported part): per broker, how many
    bundles of a namespace it lists, for every namespace, one a broker lists twice over, and one nobody has."""
    from collections import Counter

    from engine.model import bundle_namespace
    from engine.synth import random_view

    v = random_view(30, 7, seed=4)
    want: dict = {}
    for j, ks in enumerate(v.owned):
        for k in ks.tolist():
            want.setdefault(bundle_namespace(v.bundles[k]), Counter())[j] += 1
    assert len(want) == 3
    for ns, per in want.items():
        assert v.ns_counts(ns).tolist() == [per.get(j, 0) for j in range(v.nb)], ns
    assert v.ns_counts("no/such-namespace").tolist() == [0] * v.nb
