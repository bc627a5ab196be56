"""The doLoadShedding driver: grace period, destinations, skips, cycles, issue order."""
import numpy as np
import pytest

from engine.config import BIGO_AVGSHEDDER, LoadBalancerConfig
from engine.javacompat import java_map_rank
from engine.load_manager import ModularLoadManager, NamespacePolicies
from engine.samples import load_sample
from engine.synth import make_snapshot

MB = 1024 * 1024
NOEVEN = LoadBalancerConfig().with_values({"loadBalancerDistributeBundlesEvenlyEnabled": "false"})
OVERLOAD = NOEVEN.with_values({"loadBalancerLoadSheddingStrategy": "OverloadShedder"})


def hot_spec(n=6):
    return {"hot:1": dict(cpu=95, bundles={f"t/n/h{i}": dict(rate=100, throughput=(10 - i) * MB) for i in range(n)}),
            "cold:1": dict(cpu=10, bundles={"t/n/c": dict(rate=10)})}


def avg_config(**values) -> LoadBalancerConfig:
    """AvgShedder shedding and placement, low threshold 2, both hit counts 1, and ``values``."""
    from engine.config import IMPL

    return LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder", "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder",
        "loadBalancerAvgShedderLowThreshold": "2", "loadBalancerAvgShedderHitCountLowThreshold": "1",
        "loadBalancerAvgShedderHitCountHighThreshold": "1", **values})


def test_unloaded_bundles_enter_grace_period_and_cycles_advance_time():
    lm = ModularLoadManager(make_snapshot(hot_spec()), OVERLOAD)
    cycles = lm.run_cycles(3)
    shed = [u.bundle for c in cycles for u in c.unloads]
    assert len(shed) == len(set(shed)) == 3  # never the same bundle twice within the grace period
    assert [c.now_ms - cycles[0].now_ms for c in cycles] == [0, 60_000, 120_000]
    assert set(lm.recently_unloaded) == set(shed)
    assert all(u.destination == "cold:1" for c in cycles for u in c.unloads)


def test_grace_period_expires():
    lm = ModularLoadManager(make_snapshot(hot_spec(2)), OVERLOAD.with_values({"loadBalancerSheddingGracePeriodMinutes": "2"}))
    t0 = lm.now
    c = [lm.do_load_shedding(t0 + i * 60_000) for i in range(4)]
    assert [u.bundle for u in c[0].unloads] == ["t/n/h0"]
    assert [u.bundle for u in c[1].unloads] == ["t/n/h1"]
    assert c[2].unloads == []  # both still recent (sole-bundle rule does not apply: 2 bundles)
    assert [u.bundle for u in c[3].unloads] == ["t/n/h0"]  # h0 unloaded 3 min ago > 2 min grace


def test_snapshot_recently_unloaded_respected():
    ld = make_snapshot(hot_spec(3), recently_unloaded={"t/n/h0": make_snapshot({}).now - 60_000})
    c = ModularLoadManager(ld, OVERLOAD).do_load_shedding()
    assert "t/n/h0" not in [u.bundle for u in c.unloads]


def test_same_broker_destination_is_skipped():
    spec = {"hot:1": dict(cpu=95, bundles={"t/n/a": dict(throughput=5 * MB), "t/n/b": dict(throughput=MB)}),
            "other:1": dict(cpu=96, bundles={"t/n/c": dict(throughput=MB), "t/n/d": dict(throughput=MB)})}
    # every broker overloaded; LLTMR draws among both -> some picks are the source itself
    skipped = 0
    for s in range(10):
        c = ModularLoadManager(make_snapshot(spec), OVERLOAD, seed=s).do_load_shedding()
        skipped += sum(1 for u in c.skipped if "same as the current owner" in u.skipped)
        assert all(u.destination != u.broker for u in c.unloads)
    assert skipped > 0


def test_shedding_disabled_and_single_broker():
    c = ModularLoadManager(make_snapshot(hot_spec()), OVERLOAD.with_values({"loadBalancerSheddingEnabled": "false"})).do_load_shedding()
    assert c.unloads == [] and "disabled" in c.reason
    c = ModularLoadManager(make_snapshot({"hot:1": hot_spec()["hot:1"]}), OVERLOAD).do_load_shedding()
    assert c.unloads == [] and c.shedding is None and "1 available broker" in c.reason


def test_excluded_namespace_not_shed():
    cfg = OVERLOAD.with_values({"loadBalancerSheddingExcludedNamespaces": "t/n"})
    c = ModularLoadManager(make_snapshot(hot_spec()), cfg).do_load_shedding()
    assert c.unloads == [] and c.skipped and "loadBalancerSheddingExcludedNamespaces" in c.skipped[0].skipped


def test_heartbeat_bundles_never_shed():
    spec = {"hot:1": dict(cpu=95, bundles={"pulsar/hot:1/0x00000000_0xffffffff": dict(throughput=50 * MB),
                                           "t/n/a": dict(throughput=MB), "t/n/b": dict(throughput=MB)}),
            "cold:1": dict(cpu=10)}
    c = ModularLoadManager(make_snapshot(spec), OVERLOAD).do_load_shedding()
    assert c.unloads and all(not u.bundle.startswith("pulsar/") for u in c.unloads)


def test_issue_order_follows_guava_multimap_keys():
    names = [f"broker-{i}:8080" for i in range(12)]
    spec = {b: dict(cpu=95, bundles={f"t/n/{b}-{k}": dict(throughput=MB) for k in range(3)}) for b in names}
    spec["cold:1"] = dict(cpu=1)
    c = ModularLoadManager(make_snapshot(spec), OVERLOAD).do_load_shedding()
    sel_order = []
    for s in c.shedding.selected:
        if s.broker not in sel_order:
            sel_order.append(s.broker)
    issued = []
    for u in c.processed:
        if u.broker not in issued:
            issued.append(u.broker)
    # Guava's ArrayListMultimap: a HashMap table of 16 (12 keys do not grow it)
    rank = java_map_rank(sel_order, initial=16)
    assert issued == [sel_order[i] for i in np.argsort(rank)]
    assert issued != [sel_order[i] for i in np.argsort(java_map_rank(sel_order, initial=32))]


def test_avg_bigo_distribute_evenly_breaks_plans():
    """With 4.x's loadBalancerDistributeBundlesEvenlyEnabled=true the planned destination may be filtered
    out and the bundle goes to a random candidate (why BIGO recommends false)."""
    ld = load_sample("avgshedder-pairing-6-brokers")
    on = BIGO_AVGSHEDDER.with_values({"loadBalancerDistributeBundlesEvenlyEnabled": "true"})
    cycles = ModularLoadManager(ld, on, seed=0).run_cycles(2)
    assert cycles[1].unloads
    off = ModularLoadManager(load_sample("avgshedder-pairing-6-brokers"), BIGO_AVGSHEDDER, seed=0).run_cycles(2)
    assert all(u.placement.from_plan for u in off[1].unloads)


def test_timeline_update_carries_state_and_prunes():
    lm = ModularLoadManager(load_sample("bigo-avgshedder-homogeneous"), BIGO_AVGSHEDDER)
    lm.do_load_shedding()
    assert lm.shedding.hit_low
    ld2 = load_sample("bigo-avgshedder-homogeneous")
    del ld2.brokers["10.0.0.161:8080"]
    lm.update(ld2)
    c = lm.do_load_shedding(lm.now + 60_000)
    assert all(p.low != "10.0.0.161:8080" and p.high != "10.0.0.161:8080" for p in c.shedding.pairs)


def test_state_is_inspectable_and_json_ready():
    import json

    lm = ModularLoadManager(load_sample("bigo-threshold-first-unload"), NOEVEN)
    c = lm.do_load_shedding()
    json.dumps(c.to_json())
    st = lm.state()
    assert set(st["shedding"]["history"]) == set(lm.view.brokers)


class SamePolicies(NamespacePolicies):
    """The default policies as a subclass: the load manager keeps nothing for them (the whole path)."""


def _decision_facts(dec):
    return (dec.broker, dec.reason, dec.from_plan, dec.retried, dec.first_choice,
            [(f.name, f.note, f.candidates, f.removed) for f in dec.filters])


@pytest.mark.parametrize("shed,place", [("AvgShedder", "AvgShedder"),
                                        ("ThresholdShedder", "LeastLongTermMessageRate")])
def test_filter_steps_kept_per_namespace_equal_computing_them_per_bundle(shed, place):
    """Without namespace policies the steps before the strategy are kept per namespace; a manager
    whose policies are a subclass (so nothing is kept) must decide and explain every placement the
    same, also across preallocations (which change topic and namespace counts) and a shedding cycle."""
    from engine.config import IMPL
    from engine.synth import random_view

    v = random_view(40, 12, seed=5)
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + shed, "loadBalancerLoadPlacementStrategy": IMPL + place,
        "loadBalancerAvgShedderHitCountLowThreshold": "1", "loadBalancerAvgShedderHitCountHighThreshold": "1",
        "loadBalancerBrokerMaxTopics": "60"})
    kept = ModularLoadManager(v, cfg, seed=3)
    fresh = ModularLoadManager(v, cfg, seed=3, policies=SamePolicies())
    a, b = kept.do_load_shedding(), fresh.do_load_shedding()
    assert [_decision_facts(u.placement) for u in a.processed if u.placement] == \
        [_decision_facts(u.placement) for u in b.processed if u.placement]
    assert any(u.placement for u in a.processed)
    assert len(kept._pipe_cache) > 2  # the kept path was taken
    for name in v.bundles[:60] + ["persistent://t/ns-new/x/0x00000000_0x40000000"]:
        assert _decision_facts(kept.select_broker(name)) == _decision_facts(fresh.select_broker(name))
    for name in v.bundles[60:90]:  # preallocations: nothing is kept while there are some
        da, db = kept.select_broker_for_assignment(name), fresh.select_broker_for_assignment(name)
        assert _decision_facts(da) == _decision_facts(db)
    for name in v.bundles[90:120]:
        assert _decision_facts(kept.select_broker(name)) == _decision_facts(fresh.select_broker(name))


@pytest.mark.parametrize("shed,place", [("AvgShedder", "AvgShedder"),
                                        ("ThresholdShedder", "LeastResourceUsageWithWeight"),
                                        ("ThresholdShedder", "RoundRobinBrokerSelector")])
def test_a_cycles_placements_with_steps_taken_once_per_namespace_equal_the_whole_path(shed, place):
    """A shedding cycle takes each namespace's filter steps once for all its unloads; the strategy's
    own state (AvgShedder's plans, the round robin's position) and the overload retry still go bundle
    by bundle. Every decision over cycles, across many namespaces and with retries, must equal a
    manager that takes the whole path for each bundle (policies of a subclass keep nothing)."""
    from engine.config import IMPL
    from engine.synth import random_view

    v = random_view(60, 20, seed=9)
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + shed, "loadBalancerLoadPlacementStrategy": IMPL + place,
        "loadBalancerAvgShedderLowThreshold": "2", "loadBalancerAvgShedderHitCountLowThreshold": "1",
        "loadBalancerAvgShedderHitCountHighThreshold": "1", "maxUnloadPercentage": "0.6",
        "loadBalancerBrokerThresholdShedderPercentage": "2", "loadBalancerBrokerOverloadedThresholdPercentage": "45",
        "loadBalancerSheddingExcludedNamespaces": "tenant/ns4,tenant/ns11"})

    def run(**kw):
        lm = ModularLoadManager(v, cfg, seed=5, **kw)
        cycles = lm.run_cycles(3)
        assert any(u.skipped and "ExcludedNamespaces" in u.skipped for c in cycles for u in c.processed)
        for c in cycles:  # the unloads' indices the manager gave (where it did) equal looking each name up
            given = c.__dict__.pop("_index", None)
            if given is not None:
                assert [x.tolist() for x in given[1:5]] == [x.tolist() for x in c.processed_index(v)]
                gave.append(c.cycle)
        got = [[(u.bundle, u.destination, u.skipped, *_decision_facts(u.placement)) for u in c.processed
                if u.placement] + [(u.bundle, u.skipped) for u in c.processed] for c in cycles]
        return got, lm.rng.bit_generator.state, lm.placement.state(), lm.unload_bundle_count, lm.unload_broker_count

    gave = []
    (kept, *left_k), (whole, *left_w) = run(), run(policies=SamePolicies())
    assert kept == whole
    assert left_k == left_w  # the RNG, the strategy's memory (AvgShedder's plans) and the counts left behind
    assert bool(gave) == (place == "AvgShedder")  # (a strategy placing a run at once gives the indices)
    placed = [x for c in kept for x in c if len(x) > 2]
    assert len({b.split("/")[1] for b, *_ in placed}) > 5  # many namespaces in one cycle
    assert not {b.split("/")[1] for b, *_ in placed} & {"ns4", "ns11"}  # (the excluded ones are not placed)
    if place != "LeastResourceUsageWithWeight":  # (it picks a broker under the overload line)
        assert any(x[6] for x in placed)  # some placements went through the overload retry


@pytest.mark.parametrize("version", ["3.0.5", "4.0.11"])
def test_filter_steps_kept_across_namespaces_only_where_no_step_reads_the_namespace(version):
    """Without the even spread, one kept answer serves bundles of every namespace in turn, except
    pulsar/system on the releases that spread it anyway (from 3.0.6): each placement must equal the
    one of a manager that keeps nothing (its policies a subclass) — the broker, the reason and every
    filter step, the spread step of pulsar/system included."""
    from engine.config import IMPL
    from engine.synth import random_view

    v = random_view(25, 10, seed=8)
    for place in ("LeastLongTermMessageRate", "AvgShedder")[:1 if version == "3.0.5" else 2]:  # (no AvgShedder in 3.0.5)
        cfg = LoadBalancerConfig().with_values({
            "pulsarVersion": version, "loadBalancerLoadPlacementStrategy": IMPL + place,
            "loadBalancerLoadSheddingStrategy": IMPL + (place if place == "AvgShedder" else "ThresholdShedder"),
            "loadBalancerDistributeBundlesEvenlyEnabled": "false"})
        kept = ModularLoadManager(v, cfg, seed=4)
        full = ModularLoadManager(v, cfg, seed=4, policies=SamePolicies())
        names = []
        for k in range(40):
            names += [v.bundles[k], f"pulsar/system/0x{k:08x}_0x{k + 1:08x}", v.bundles[k + 100]]
        steps = set()
        for name in names:
            a, b = kept.select_broker(name), full.select_broker(name)
            assert _decision_facts(a) == _decision_facts(b), name
            steps.add(tuple(f.name for f in a.filters))
        spread = any("distribute bundles evenly" in n for s in steps for n in s)
        assert spread == (version != "3.0.5")  # pulsar/system spread from 3.0.6 only


def test_bundle_value_key_memo_equals_the_bundle_data_value():
    from engine.synth import random_view

    v = random_view(5, 4, seed=2)
    for i, name in enumerate(v.bundles):
        assert v.bundle_value_key(i) == v.bundle_data(name).value_key()
        assert v.bundle_value_key(np.int64(i)) is v.bundle_value_key(i)


def test_round_robin_lookups_of_excluded_namespaces_equal_the_full_path():
    """Repeated lookups of an excluded namespace's bundles reuse the previous lookup's candidates and
    skip the quiet-arithmetic entry; each must equal the full ``selectBroker`` (a manager whose
    policies are a subclass takes it every time): the broker, the reason, the filter steps, the
    overload retry (some brokers are above the threshold), across namespaces, topic types,
    preallocations, a new view and a new configuration, and the round-robin state left behind."""
    from engine.config import IMPL
    from engine.synth import random_view

    v = random_view(30, 8, seed=11)
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate",
        "loadBalancerDistributeBundlesEvenlyEnabled": "false",
        "loadBalancerSheddingExcludedNamespaces": "t/ex,t/ex2", "loadBalancerBrokerOverloadedThresholdPercentage": "60"})
    kept = ModularLoadManager(v, cfg, seed=3)
    full = ModularLoadManager(v, cfg, seed=3, policies=SamePolicies())
    uw = kept._usage_with_weight() if kept._uw else kept.view.overload_usage(cfg)
    assert (uw > 0.6).any() and (uw <= 0.6).any()  # some picks are retried, some are not

    def both(name, **kw):
        a, b = kept.select_broker(name, **kw), full.select_broker(name, **kw)
        assert _decision_facts(a) == _decision_facts(b) and a.to_json() == b.to_json(), name
        return a

    got = [both(f"t/ex/0x{k:08x}_0x{k + 1:08x}") for k in range(70)]
    assert any(d.retried for d in got) and sum(not d.retried for d in got) > 30
    assert isinstance(got[-1].filters, tuple)  # the lookup reused the kept steps
    for k in range(20):  # namespaces and topic types in turn
        both(f"t/ex2/0x{k:08x}_0x{k + 1:08x}")
        both(f"t/ex/0x{k:08x}_0x{k + 1:08x}", non_persistent=bool(k % 3 == 0))
        both(v.bundles[k])
    for k in range(10):  # preallocations change the candidates' topic counts
        a = kept.select_broker_for_assignment(f"t/other/0x{k:08x}_0x{k + 1:08x}")
        b = full.select_broker_for_assignment(f"t/other/0x{k:08x}_0x{k + 1:08x}")
        assert _decision_facts(a) == _decision_facts(b)
        both(f"t/ex/0x{k:08x}_0x{k + 2:08x}")
    v2 = random_view(30, 8, seed=12)
    kept.update(v2), full.update(v2)
    kept.config = full.config = cfg.with_values({"loadBalancerBrokerOverloadedThresholdPercentage": "95"})
    for k in range(30):
        both(f"t/ex/0x{k:08x}_0x{k + 3:08x}")
    assert kept.round_robin.state() == full.round_robin.state()


def test_int32_draws_taken_at_once_equal_one_call_each_and_leave_the_same_state():
    from engine.placement.base import Int32Draws

    for n, used in ((5, 3), (3, 10), (4, 0)):  # fewer than taken, more (taken again), none
        a, b = np.random.default_rng(17), np.random.default_rng(17)
        a.random()  # a state mid-stream (PCG64's buffered half-word included)
        b.random()
        d = Int32Draws(a, n)
        got = [d.next() for _ in range(used)]
        d.close()
        want = [int(b.integers(-2**31, 2**31)) for _ in range(used)]
        assert got == want
        assert a.bit_generator.state == b.bit_generator.state
        assert a.integers(-2**31, 2**31, size=4).tolist() == b.integers(-2**31, 2**31, size=4).tolist()


def test_avgshedder_cycles_with_a_cycles_draws_taken_at_once_equal_one_draw_per_placement(monkeypatch):
    """AvgShedder's placements without a plan hash a random int; the load manager takes a cycle's ints
    at once. Every decision (broker, reason, overload retry) over several cycles and the RNG left
    behind must equal drawing one int per placement."""
    from engine.shedding.avg_shedder import AvgShedder
    from engine.synth import random_view

    v = random_view(60, 20, seed=9)
    cfg = avg_config(maxUnloadPercentage="0.6", loadBalancerBrokerOverloadedThresholdPercentage="45")

    def run():
        lm = ModularLoadManager(v, cfg, seed=5)
        facts = [[(u.bundle, u.destination, u.skipped, *_decision_facts(u.placement)[:5],
                   u.placement.random) for u in c.processed if u.placement] for c in lm.run_cycles(3)]
        return facts, lm.rng.bit_generator.state

    batched, state_b = run()
    monkeypatch.setattr(AvgShedder, "draws_int32", False)
    one_by_one, state_o = run()
    assert batched == one_by_one and state_b == state_o
    flat = [f for c in batched for f in c]
    assert sum(f[-1] for f in flat) > 20  # many random placements ...
    assert any(f[6] for f in flat)  # ... and some retried on an overloaded first choice


def test_a_cycle_kept_as_columns_lists_the_same_unloads_as_the_whole_path():
    """A cycle placed at once keeps its unloads as columns, each built when read: the same processed,
    issued and skipped unloads in the same order (excluded namespaces first among the skipped) as the
    whole path, one object per unload across the three lists, the same columns read without building
    them, the same grace-period memory and counters, and the same lists after a pickle."""
    import pickle

    from engine.results import UnloadRows, column_of
    from engine.synth import random_view

    v = random_view(40, 12, seed=5)
    cfg = avg_config(loadBalancerBrokerOverloadedThresholdPercentage="45",
                     loadBalancerSheddingExcludedNamespaces="tenant/ns0,tenant/ns1")
    cols = ModularLoadManager(v, cfg, seed=3)
    whole = ModularLoadManager(v, cfg, seed=3, policies=SamePolicies())
    seen = set()
    for _ in range(3):
        a, b = cols.do_load_shedding(), whole.do_load_shedding()
        assert isinstance(a.processed, UnloadRows) and isinstance(b.processed, list)
        for name in ("processed", "unloads", "skipped"):
            got, want = getattr(a, name), getattr(b, name)
            assert [u.to_json() for u in got] == [u.to_json() for u in want]
            for f in ("broker", "bundle", "destination", "msg_rate", "throughput", "skipped"):
                assert column_of(got, f) == [getattr(u, f) for u in want]
        assert all(any(u is p for p in a.processed) for u in list(a.unloads) + list(a.skipped))
        assert len(a.unloads) + len(a.skipped) == len(a.processed)
        seen.update(u.skipped.split(" ")[0] for u in a.skipped)
        again = pickle.loads(pickle.dumps(a))
        assert [u.to_json() for u in again.processed] == [u.to_json() for u in b.processed]
        assert again.unloads[0] is again.processed[next(i for i, u in enumerate(b.processed) if not u.skipped)]
        assert a.reason == b.reason and cols.recently_unloaded == whole.recently_unloaded
    assert (cols.unload_bundle_count, cols.unload_broker_count) == (whole.unload_bundle_count, whole.unload_broker_count)
    assert "namespace" in seen and sum(len(c) for c in (a.unloads,)) > 0


def test_avgshedder_selections_kept_as_columns_read_as_the_selections_they_build():
    """AvgShedder keeps its selections as columns: each column reads as the built selections' field, a
    selection's reason is its pair's, its broker and planned destination the pair's hot and cool broker,
    and the sequence equals (and pickles as) the list of its selections."""
    import pickle

    from engine.results import SelectionRows, column_of
    from engine.shedding.avg_shedder import AvgShedder
    from engine.synth import random_view

    v = random_view(40, 12, seed=5)
    cfg = avg_config()
    res = AvgShedder().find_bundles_for_unloading(v, cfg, {})
    sel = res.selected
    assert isinstance(sel, SelectionRows) and len(sel) > 10
    cols = {f: column_of(sel, f) for f in ("broker", "bundle", "value", "value_unit", "msg_rate",
                                                  "throughput", "planned_destination")}
    built = list(sel)
    for f, col in cols.items():
        assert col == [getattr(s, f) for s in built]
    pairs = {(p.high, p.low): p for p in res.pairs if p.triggered}
    for s in built:
        p = pairs[(s.broker, s.planned_destination)]
        assert s.reason == p.reason and s.value_unit == p.amount_unit
    k = v.bundle_index[built[0].bundle]
    assert built[0].msg_rate == float(v.short_rate[k]) and built[0].throughput == float(v.short_throughput[k])
    assert sel[-1] is built[-1] and sel[1:3] == built[1:3] and sel == built
    again = pickle.loads(pickle.dumps(sel))
    assert type(again) is list and again == built
    assert res.reason == f"{len(built)} bundle(s) from {len(set(cols['broker']))} broker(s)"
