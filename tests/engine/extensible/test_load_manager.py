"""ExtensibleLoadManager: UnloadScheduler semantics, transfers, cool-down, grace period, ownership."""
import pytest

from engine.config import LoadBalancerConfig
from engine.extensible import ExtensibleLoadManager, TransferShedder, derive_extensible
from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER
from engine.synth import make_snapshot

from ._clusters import CFG, NOW, cluster

MIN = 60_000


def hot_cold(now=NOW, a_updated=None):
    extra = {} if a_updated is None else {"updated_at": a_updated}
    return cluster({"a:8080": (0.9, 900, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120], extra),
                    "b:8080": (0.1, 100, None)}, now=now)


def test_hit_count_then_transfer_to_the_min_broker():
    lm = ExtensibleLoadManager(hot_cold(), CFG)
    cycles = lm.run_cycles(4)
    assert [c.shedding.decisions[0].reason for c in cycles] == ["HitCount", "HitCount", "HitCount", "Overloaded"]
    assert [c.shedding.state["unloadConditionHitCount"] for c in cycles] == [1, 2, 3, 0]
    last = cycles[-1]
    assert last.unloads and {(u.broker, u.destination) for u in last.unloads} == {("a:8080", "b:8080")}
    assert all(u.placement is None for u in last.unloads)  # a transfer: no placement
    assert all(lm.recently_unloaded[u.bundle] == last.now_ms for u in last.unloads)
    assert lm.recently_unloaded_brokers == {"a:8080": last.now_ms}
    assert lm.unload_bundle_count == len(last.unloads) and lm.unload_broker_count == 1
    assert last.to_json()["decisions"][0]["reason"] == "Overloaded"


def test_cool_down_in_run_cycles_lasts_180_seconds_of_fresh_data():
    cfg = CFG.with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})
    data = hot_cold()
    lm = ExtensibleLoadManager(data, cfg)
    got = [(c.shedding.decisions[0].reason if c.shedding else None) for c in lm.run_cycles(5)]
    assert data.broker_load_data["a:8080"].updated_at == NOW  # the caller's data is not modified
    assert lm.view.broker_load_data["a:8080"].updated_at == NOW + 4 * MIN
    # unchanged data re-published every minute: data 60 s and 120 s after the unload are < 180 s (CoolDown);
    # at 180 s the cool-down is over and a gives the next bundles
    assert got == ["Overloaded", "CoolDown", "CoolDown", "Overloaded", "CoolDown"]


def test_cool_down_compares_the_brokers_updated_at_with_its_unload_time():
    cfg = CFG.with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})
    lm = ExtensibleLoadManager(hot_cold(), cfg)
    t0 = NOW
    assert lm.do_load_shedding(t0).unloads
    lm.update(hot_cold(now=t0 + 10 * MIN, a_updated=t0 + 179_999))  # stale report of a: still cooling down
    assert lm.do_load_shedding().shedding.decisions[0].reason == "CoolDown"
    lm.update(hot_cold(now=t0 + 10 * MIN, a_updated=t0 + 180_000))
    c = lm.do_load_shedding()
    assert c.shedding.decisions[0].reason == "Overloaded"
    assert lm.recently_unloaded_brokers == {"a:8080": t0 + 10 * MIN}


def test_moved_and_recently_unloaded_bundles_are_not_shed_again():
    cfg = CFG.with_values({"loadBalancerSheddingConditionHitCountThreshold": 0})
    lm = ExtensibleLoadManager(hot_cold(), cfg)
    first = {u.bundle for u in lm.do_load_shedding(NOW).unloads}
    # fresh load data (the cool-down is over) but a stale top-K: it still lists the moved bundles under a
    lm.update(hot_cold(now=NOW + 5 * MIN, a_updated=NOW + 5 * MIN))
    c = lm.do_load_shedding()
    assert c.shedding.label == "Success"
    assert first and not first & {u.bundle for u in c.unloads}
    assert lm.owners()[sorted(first)[0]] == "b:8080"
    assert any("owned by b:8080" in n for n in c.shedding.notes)


def test_grace_period_expiry():
    cfg = CFG.with_values({"loadBalancerSheddingConditionHitCountThreshold": 99})
    lm = ExtensibleLoadManager(hot_cold(), cfg)
    grace = cfg.loadBalancerSheddingGracePeriodMinutes * MIN
    lm.recently_unloaded["x"] = NOW
    lm.do_load_shedding(NOW + grace)
    assert "x" in lm.recently_unloaded  # t + grace < now is expired; equal is not
    lm.do_load_shedding(NOW + grace + 1)
    assert "x" not in lm.recently_unloaded


def test_transfer_disabled_places_on_the_next_lookup():
    data = cluster({"a:8080": (0.9, 900, [10, 20, 30, 40, 50, 200]), "b:8080": (0.1, 100, None),
                    "c:8080": (0.12, 100, None), "d:8080": (0.88, 900, None)})
    cfg = CFG.with_values({"loadBalancerTransferEnabled": False, "loadBalancerSheddingConditionHitCountThreshold": 0})
    lm = ExtensibleLoadManager(data, cfg, seed=3)
    c = lm.do_load_shedding()
    assert c.unloads and all(d.destination is None for d in c.shedding.decisions)
    for u in c.unloads:
        # placed by the extensible LRUWW: average 0.5, only 0.1 and 0.12 are 10 % below it
        assert u.placement is not None and u.placement.strategy == "ExtensibleLeastResourceUsageWithWeight"
        assert u.destination in ("b:8080", "c:8080") and u.destination == u.placement.broker


def test_no_shedding_with_one_broker_or_disabled():
    lm = ExtensibleLoadManager(cluster({"a:8080": (0.9, 900, [1, 2])}), CFG)
    c = lm.do_load_shedding()
    assert c.shedding is None and "1 available broker" in c.reason
    lm = ExtensibleLoadManager(hot_cold(), CFG.with_values({"loadBalancerSheddingEnabled": False}))
    assert lm.do_load_shedding().shedding is None


def test_strategy_state_seed_and_state():
    data = hot_cold()
    data.strategy_state = {"TransferShedder": {"unloadConditionHitCount": 3}}
    lm = ExtensibleLoadManager(data, CFG)
    assert lm.do_load_shedding().unloads
    st = lm.state()
    assert set(st) == {"shedding", "placement", "recently_unloaded", "recently_unloaded_brokers", "round_robin"}
    assert st["shedding"] == {"unloadConditionHitCount": 0}


def test_config_wiring_and_fallbacks():
    lm = ExtensibleLoadManager(hot_cold(), LoadBalancerConfig())  # 4.x defaults: modular names
    assert lm.config.loadManagerClassName == EXTENSIBLE_LOAD_MANAGER
    assert isinstance(lm.shedding, TransferShedder)
    assert lm.placement.name == "ExtensibleLeastResourceUsageWithWeight"
    assert any("ThresholdShedder" in n for n in lm.notes) and any("LeastLongTermMessageRate" in n for n in lm.notes)
    rr = ExtensibleLoadManager(hot_cold(), CFG.with_values({
        "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector"}))
    assert rr.placement.name == "RoundRobinBrokerSelector"


def test_assignment_is_recorded_in_the_channel():
    lm = ExtensibleLoadManager(hot_cold(), CFG)
    x = "new/ns/0x00000000_0xffffffff"
    dec = lm.select_broker_for_assignment(x)
    assert dec.broker == "b:8080"  # avg 0.5: only 0.1 qualifies
    again = lm.select_broker_for_assignment(x)
    assert again.broker == "b:8080" and again.strategy == "ownership"


def test_modular_timeline_continues_the_ema():
    def snap(cpu, t):
        ld = make_snapshot({"a:8080": dict(cpu=cpu, bundles={"t/n/0x00000000_0x80000000": dict(rate=10)}),
                            "b:8080": dict(cpu=10, bundles={"t/n/0x80000000_0xffffffff": dict(rate=10)})}, now_ms=t)
        return ld

    cfg = CFG
    lm = ExtensibleLoadManager(snap(20, NOW), cfg)
    first = lm.view.broker_load_data["a:8080"].weighted_max_ema
    lm.update(snap(80, NOW + MIN))
    # one EMA step per 5 s report in between (12 steps at 80 %): old * 0.9^12 + 0.8 * (1 - 0.9^12)
    got = lm.view.broker_load_data["a:8080"].weighted_max_ema
    w = first
    for _ in range(12):
        w = w * 0.9 + (1 - 0.9) * 0.8
    assert got == pytest.approx(w, rel=1e-9)
    assert derive_extensible(snap(80, NOW)).broker_load_data["a:8080"].weighted_max_ema == pytest.approx(0.8)
    lm.update(snap(80, NOW + MIN))  # the same report again: no extra step
    assert lm.view.broker_load_data["a:8080"].weighted_max_ema == got
