"""TransferShedder (§8.3): load statistics, trigger, offload and swap arithmetic, std update, reasons.

Every expected number is derived here from the reference's formulas on small hand-checked clusters.
"""
import math

import numpy as np
import pytest

from engine.errors import UsageError
from engine.load_manager import ModularLoadManager
from engine.extensible import BrokerLoadData, ExtensibleLoadData, TransferShedder
from engine.extensible.snapshot import BrokerLookupData
from engine.model import ResourceUsage
from engine.synth import random_snapshot
from engine.view import LoadView

from ._clusters import CFG, NOW, cluster

HIT = 3  # loadBalancerSheddingConditionHitCountThreshold default: a seeded count of 3 sheds at once


def shed(data, cfg=CFG, hit=HIT, rub=None, recent=None, now=None):
    ts = TransferShedder(unload_condition_hit_count=hit)
    res = ts.find_bundles_for_unloading(data, cfg, recent or {}, {} if rub is None else rub, now_ms=now)
    return ts, res


def moves(res):
    return [(d.broker, d.bundle, d.destination, d.swap) for d in res.decisions]


# ---------------------------------------------------------------------------------------- statistics
def test_load_statistics_float32_population_std():
    # cpu 10 %, 20 %, 30 % of 100: percentUsage is float32, so 30 % is 30.000001907348633
    data = ExtensibleLoadData(now_ms=NOW)
    for b, cpu in (("b1:8080", 10), ("b2:8080", 20), ("b3:8080", 30)):
        d = BrokerLoadData()
        d.update({"cpu": ResourceUsage(cpu, 100)}, 0, 0, 0, 0, 1, 1, CFG, now_ms=NOW)
        data.broker_load_data[b] = d
    loads = [float(np.float32(np.float32(c) / np.float32(100)) * np.float32(100)) / 100 for c in (10, 20, 30)]
    assert loads[2] == 0.30000001907348633
    ts, res = shed(data, hit=0)
    # the reference's worked value (§13 item 6): only float32 emulation gives it
    assert ts.stats.avg == 0.2000000063578288
    assert ts.stats.avg != (0.1 + 0.2 + 0.3) / 3
    total = sq = 0.0
    for x in loads:
        total += x
        sq += x * x
    avg = total / 3
    assert ts.stats.std == math.sqrt(sq / 3 - avg * avg)  # population std (n, not n - 1)
    assert ts.stats.std == pytest.approx(float(np.std(loads)), abs=1e-12)
    assert ts.stats.n == 3
    assert res.lines["average"] == pytest.approx(20.00000063578288)
    assert res.label == "Skip" and res.decisions[0].reason == "HitCount"  # std 0.08 <= 0.25: balanced


def test_sorted_brokers_include_outdated_data_but_n_does_not():
    ttl = CFG.loadBalancerBrokerLoadDataTTLInSeconds * 1000
    data = cluster({
        "a:8080": (0.1, 200, None),
        "b:8080": (0.2, 300, None),
        "c:8080": (0.95, 950, [100, 200, 300, 350], {"updated_at": NOW - ttl - 1}),  # outdated, hottest
    })
    ts, res = shed(data)
    s = ts.stats
    assert s.n == 2 and s.avg == pytest.approx(0.15) and res.lines["std"] == pytest.approx(5.0)  # before
    # std 0.05 <= 0.25 and a not underloaded (0.1 >= 0.15 * 0.125; 200 >= 950 * 0.125), but the outdated c is
    # still the max of the sorted list and is overloaded: 0.95 > 0.85 and > 0.15 + 0.25
    assert res.label == "Success"
    assert moves(res) == [("c:8080", "t/c/b0", "a:8080", False), ("c:8080", "t/c/b1", "a:8080", False)]
    assert {d.reason for d in res.decisions} == {"Overloaded"}
    # offload (0.95 - 0.1) / 2 = 0.425 -> 950 * 0.425 / 0.95 = 425 B/s: 100 + 200 fit, 300 does not (a has no
    # top bundles to swap). adjusted = 300 * 0.95 / 950 = 0.3; the std update uses n = 2 and |.|:
    sq = 0.1 ** 2 + 0.2 ** 2
    sq -= 0.95 ** 2 + 0.1 ** 2
    sq += (0.95 - 0.3) ** 2 + (0.1 + 0.3) ** 2
    assert s.std == pytest.approx(math.sqrt(abs(sq / 2 - 0.15 ** 2)), abs=1e-12)
    assert s.std == pytest.approx(math.sqrt(0.1625), abs=1e-12)
    assert next(v for v in res.verdicts if v.broker == "c:8080").status == "over"


# ---------------------------------------------------------------------------------------- skip reasons
def test_skip_no_brokers():
    data = ExtensibleLoadData(now_ms=NOW, lookup={"a:8080": BrokerLookupData(), "b:8080": BrokerLookupData()})
    ts, res = shed(data)
    assert (res.label, res.decisions[0].label, res.decisions[0].reason) == ("Skip", "Skip", "NoBrokers")
    assert res.reason_code == "NoBrokers"


def test_skip_outdated_data_when_every_broker_is_too_old():
    ttl = CFG.loadBalancerBrokerLoadDataTTLInSeconds * 1000
    old = {"updated_at": NOW - ttl - 1}
    data = cluster({"a:8080": (0.1, 1, [1, 2], old), "b:8080": (0.9, 9, [1, 2], old)})
    assert shed(data)[1].decisions[0].reason == "OutDatedData"
    # exactly the TTL old is still fresh (now - updatedAt > ttl is outdated)
    fresh = {"updated_at": NOW - ttl}
    data = cluster({"a:8080": (0.1, 1, [1, 2], fresh), "b:8080": (0.9, 9, [1, 2], fresh)})
    assert shed(data)[1].decisions[0].reason != "OutDatedData"


def test_skip_no_load_data_for_an_available_broker():
    data = cluster({"a:8080": (0.1, 100, [10, 20]), "b:8080": (0.9, 900, [100, 200])},
                   lookup={b: BrokerLookupData() for b in ("a:8080", "b:8080", "c:8080")})
    ts, res = shed(data)
    assert res.decisions[0].reason == "NoLoadData" and "c:8080" in res.decisions[0].detail
    assert ts.unload_condition_hit_count == HIT  # skipped before the trigger: count unchanged


def test_skip_cool_down_is_the_whole_cycle_and_ends_at_the_delay():
    delay = CFG.loadBalanceSheddingDelayInSeconds * 1000
    assert delay == 180_000
    spec = {"a:8080": (0.1, 100, [10, 20]), "b:8080": (0.9, 900, [100, 200, 300])}
    data = cluster(spec)
    rub = {"a:8080": NOW - delay + 1}  # a's data is only 179.999 s newer than its last unload
    ts, res = shed(data, rub=rub)
    assert res.decisions[0].reason == "CoolDown" and res.decisions == res.decisions[:1]
    assert rub == {"a:8080": NOW - delay + 1}
    assert ts.unload_condition_hit_count == HIT
    rub = {"a:8080": NOW - delay}  # 180 s: over, and forgotten
    ts, res = shed(data, rub=rub)
    assert res.label == "Success" and rub == {}


def test_skip_hit_count_until_the_threshold_is_exceeded():
    data = cluster({"a:8080": (0.1, 100, [10, 20]), "b:8080": (0.9, 900, [100, 200, 300])})
    ts = TransferShedder()
    got = []
    for _ in range(5):
        res = ts.find_bundles_for_unloading(data, CFG, {}, {})
        got.append((res.label, res.decisions[0].reason, ts.unload_condition_hit_count))
    # hit 1, 2, 3 <= 3: Skip; hit 4 > 3: shed and reset to 0; then 1 again
    assert got == [("Skip", "HitCount", 1), ("Skip", "HitCount", 2), ("Skip", "HitCount", 3),
                   ("Success", "Overloaded", 0), ("Skip", "HitCount", 1)]
    ts = TransferShedder()
    res = ts.find_bundles_for_unloading(data, CFG.with_values({"loadBalancerSheddingConditionHitCountThreshold": 0}),
                                        {}, {})
    assert res.label == "Success"


def test_balanced_cycle_resets_the_hit_count():
    unbalanced = cluster({"a:8080": (0.1, 100, [10, 20]), "b:8080": (0.9, 900, [100, 200, 300])})
    balanced = cluster({"a:8080": (0.5, 500, [10, 20]), "b:8080": (0.55, 900, [100, 200, 300])})
    ts = TransferShedder()
    ts.find_bundles_for_unloading(unbalanced, CFG, {}, {})
    ts.find_bundles_for_unloading(unbalanced, CFG, {}, {})
    assert ts.unload_condition_hit_count == 2
    res = ts.find_bundles_for_unloading(balanced, CFG, {}, {})
    assert ts.unload_condition_hit_count == 0
    assert res.decisions[0].reason == "HitCount" and "balanced" in res.decisions[0].detail


def test_skip_no_bundles_for_a_sole_bundle_and_no_load_data_without_top_bundles():
    sole = cluster({"a:8080": (0.1, 100, [10]), "b:8080": (0.9, 900, [900])})
    ts, res = shed(sole)
    assert res.decisions[0].reason == "NoBundles"
    no_top = cluster({"a:8080": (0.1, 100, [10]), "b:8080": (0.9, 900, None)})
    assert shed(no_top)[1].decisions[0].reason == "NoLoadData"
    empty_top = cluster({"a:8080": (0.1, 100, [10]), "b:8080": (0.9, 900, [])})
    assert shed(empty_top)[1].decisions[0].reason == "NoLoadData"
    # every bundle bigger than the target and nothing to swap: NoBundles
    big = cluster({"a:8080": (0.1, 100, None), "b:8080": (0.9, 900, [500, 600])})
    ts, res = shed(big)
    assert res.decisions[0].reason == "NoBundles"
    assert ts.unload_condition_hit_count == HIT + 1  # not reset: nothing was decided


def test_skip_hit_count_when_no_pair_is_left():
    data = cluster({"a:8080": (0.1, 100, [10, 20]), "b:8080": (0.9, 900, [100, 200, 300])})
    cfg = CFG.with_values({"loadBalancerMaxNumberOfBrokerSheddingPerCycle": 0})
    assert shed(data, cfg)[1].decisions[0].reason == "HitCount"


# ---------------------------------------------------------------------------------------- offload and swaps
def test_offload_and_swap_arithmetic():
    # a: load 0.9, 900 B/s; b: load 0.1, 100 B/s. avg 0.5, std 0.4 > 0.25: Overloaded.
    # offload = (0.9 - 0.1) / 2 = 0.4 -> 900 * 0.4 / 0.9 = 400 B/s.
    # a's bundles (ascending) 50, 100, 150 fit (300); 200 would make 500 > 400: swap from b (walked ascending):
    #   newMax = 900 - 300 - 200 = 400, newMin = 100 + 300 + 200 = 600
    #   b/30: 430 < 900, 570 < 900 -> taken; 570 <= 430? no
    #   b/70: 500, 500 -> taken; 500 <= 500 and 500 < 0.75 * 900 -> swap done
    # then 200 is unloaded; 400 is the last of 5 bundles left: kept.
    data = cluster({"a:8080": (0.9, 900, [50, 100, 150, 200, 400]), "b:8080": (0.1, 100, [30, 70])})
    ts, res = shed(data)
    assert res.lines["std"] == pytest.approx(40.0)
    assert moves(res) == [("a:8080", "t/a/b0", "b:8080", False), ("a:8080", "t/a/b1", "b:8080", False),
                          ("a:8080", "t/a/b2", "b:8080", False), ("b:8080", "t/b/b0", "a:8080", True),
                          ("b:8080", "t/b/b1", "a:8080", True), ("a:8080", "t/a/b3", "b:8080", False)]
    assert {(d.label, d.reason) for d in res.decisions} == {("Success", "Overloaded")}
    assert [s.throughput for s in res.selected] == [50, 100, 150, 30, 70, 200]
    # std update (debug off: the 100 B/s swapped back is not counted): adjusted = 500 * 0.9 / 900 = 0.5
    # -> loads 0.4 and 0.6 -> std 0.1
    assert ts.stats.std == pytest.approx(0.1, abs=1e-12)
    assert res.lines["std after"] == pytest.approx(10.0)
    assert ts.unload_condition_hit_count == 0
    assert (res.label, res.reason_code) == ("Success", "Overloaded")
    d = res.details
    assert (d.std, d.std_after, d.hit_count) == (pytest.approx(40.0), pytest.approx(10.0), HIT + 1)
    assert d.event_fields("a:8080") == {"partner": "b:8080", "trigger": "Overloaded", "score": pytest.approx(90.0),
                                        "partner_score": pytest.approx(10.0), "gap": pytest.approx(80.0),
                                        "amount": pytest.approx(400.0)}


def test_transfer_disabled_has_no_destination_and_no_swap():
    data = cluster({"a:8080": (0.9, 900, [50, 100, 150, 200, 400]), "b:8080": (0.1, 100, [30, 70])})
    ts, res = shed(data, CFG.with_values({"loadBalancerTransferEnabled": False}))
    assert moves(res) == [("a:8080", f"t/a/b{i}", None, False) for i in range(3)]
    assert ts.stats.std == pytest.approx(abs(0.9 - 300 * 0.9 / 900 - 0.5), abs=1e-12)


CASE = {"a:8080": (0.9, 1000, [145, 150, 160, 170, 175]), "b:8080": (0.1, 300, [90, 100])}


def test_debug_mode_gain_quirk_off():
    # offload target 1000 * 0.4 / 0.9 = 444.4 B/s: 145 + 150 = 295 fit; 160 -> 455 > 444.4: swap
    #   newMax = 1000 - 295 - 160 = 545, newMin = 300 + 295 + 160 = 755
    #   b/90: 635, 665 -> taken (665 > 635); b/100: 735, 565 -> taken; 565 <= 735 < 750: swap done (190 B/s)
    # debug off: 170 -> 455 + 170 = 625 > 444.4, b's iterator is exhausted: stop.
    # adjusted = 455 * 0.9 / 1000 = 0.4095 -> a 0.4905, b 0.5095: std = |0.4905 - 0.5| = 0.0095
    ts, res = shed(cluster(CASE), CFG.with_values({"loadBalancerDebugModeEnabled": False}))
    assert [d.bundle for d in res.decisions] == ["t/a/b0", "t/a/b1", "t/b/b0", "t/b/b1", "t/a/b2"]
    assert ts.stats.std == pytest.approx(0.0095, abs=1e-12)


def test_debug_mode_gain_quirk_on():
    # debug on: the 190 B/s swapped back counts: 170 -> 455 - 190 + 170 = 435 <= 444.4: unloaded too;
    # 175 is then the last bundle: kept. adjusted = (625 - 190) * 0.9 / 1000 = 0.3915 -> std 0.0085
    ts, res = shed(cluster(CASE), CFG.with_values({"loadBalancerDebugModeEnabled": True}))
    assert [d.bundle for d in res.decisions] == ["t/a/b0", "t/a/b1", "t/b/b0", "t/b/b1", "t/a/b2", "t/a/b3"]
    assert ts.stats.std == pytest.approx(0.0085, abs=1e-12)


def test_recently_unloaded_excluded_namespace_and_foreign_bundles_are_skipped():
    data = cluster({"a:8080": (0.9, 900, [50, 60, 70, 80, 100]), "b:8080": (0.1, 100, None)})
    data.top_bundles["a:8080"][0].bundle_name = "excluded/ns/b0"
    data.ownership = {x.bundle_name: "a:8080" for x in data.top_bundles["a:8080"]}
    data.ownership["t/a/b2"] = "b:8080"  # the channel already moved it
    cfg = CFG.with_values({"loadBalancerSheddingExcludedNamespaces": "excluded/ns"})
    ts, res = shed(data, cfg, recent={"t/a/b1": NOW - 1000})
    assert [d.bundle for d in res.decisions] == ["t/a/b3", "t/a/b4"]
    assert any("owned by b:8080" in n for n in res.notes)


def test_zero_throughput_bundle_is_skipped_but_counts_as_remaining():
    # target 400 B/s; b0 has no traffic: skipped, yet it is one of the 3 remaining top bundles, so after
    # b1 (100) and b2 (+200 = 300) the "keep the last bundle" rule is met by b0
    data = cluster({"a:8080": (0.9, 900, [0, 100, 200]), "b:8080": (0.1, 100, None)})
    assert [d.bundle for d in shed(data)[1].decisions] == ["t/a/b1", "t/a/b2"]


# ---------------------------------------------------------------------------------------- the walk over pairs
def _limit_cluster():
    hot = {"h1:8080": 0.95, "h2:8080": 0.9, "h3:8080": 0.85, "h4:8080": 0.8}
    cool = {"l1:8080": 0.02, "l2:8080": 0.03, "l3:8080": 0.04, "l4:8080": 0.05}
    spec = {b: (x, 1000, [100] * 10) for b, x in hot.items()}
    spec.update({b: (x, 20, None) for b, x in cool.items()})  # no top bundles: nothing to swap
    return cluster(spec), hot, cool


@pytest.mark.parametrize("max_shed", [1, 2, 3, 4])
def test_per_cycle_broker_limit_and_std_update(max_shed):
    data, hot, cool = _limit_cluster()
    cfg = CFG.with_values({"loadBalancerMaxNumberOfBrokerSheddingPerCycle": max_shed})
    ts, res = shed(data, cfg)
    pairs = list(zip(sorted(hot, key=hot.get, reverse=True), sorted(cool, key=cool.get)))[:max_shed]
    # each pair: offload (max - min) / 2 of 1000 B/s is 468..490 B/s: four bundles of 100 fit, the fifth not
    expected, loads = [], {**hot, **cool}
    for h, c in pairs:
        # the reason is decided on the std estimate before this pair (population std of the loads so far)
        before = float(np.std(list(loads.values())))
        reason = "Overloaded" if before > 0.25 else "Underloaded"  # every cool broker is below avg * 0.125
        expected += [(h, f"t/{h.split(':')[0]}/b{i}", c, reason) for i in range(4)]
        adj = 400 * hot[h] / 1000
        loads[h], loads[c] = max(0.0, loads[h] - adj), loads[c] + adj
    assert [(d.broker, d.bundle, d.destination, d.reason) for d in res.decisions] == expected
    assert len({d.broker for d in res.decisions}) == min(max_shed, 4)
    assert ts.stats.std == pytest.approx(float(np.std(list(loads.values()))), abs=1e-12)
    assert ts.stats.shed_brokers == len(pairs)


def test_underloaded_reason_when_std_is_within_target():
    # loads 0.02, 0.5, 0.5, 0.55: avg 0.3925, population std 0.216 <= 0.25, but 0.02 < 0.3925 * 0.125
    data = cluster({"a:8080": (0.02, 20, None), "b:8080": (0.5, 500, [50, 60]), "c:8080": (0.5, 500, [50, 60]),
                    "d:8080": (0.55, 550, [40, 50, 60, 70])})
    ts, res = shed(data)
    assert res.lines["std"] / 100 == pytest.approx(float(np.std([0.02, 0.5, 0.5, 0.55])))
    assert res.decisions[0].reason == "Underloaded" and res.decisions[0].broker == "d:8080"
    assert {d.destination for d in res.decisions} == {"a:8080"}
    assert (res.label, res.reason_code) == ("Success", "Underloaded")


def test_underloaded_by_throughput_ema():
    # loads close (no std trigger, no load underload) but the min broker's throughput EMA is < max's * 0.125
    data = cluster({"a:8080": (0.40, 10, None), "b:8080": (0.45, 500, None), "c:8080": (0.5, 1000, [50, 200, 300])})
    ts, res = shed(data)
    assert res.label == "Success" and res.decisions[0].reason == "Underloaded"


def test_overloaded_reason_from_the_max_broker_alone():
    # ten brokers at 0.5 and one at 0.9: std 0.115 <= 0.25, min not underloaded, 0.9 > 0.85 and > avg + 0.25
    spec = {f"n{i}:8080": (0.5, 500, [50, 60]) for i in range(10)}
    spec["hot:8080"] = (0.9, 900, [100, 120, 140, 160])
    ts, res = shed(cluster(spec))
    assert ts.stats.std <= 0.25
    assert res.decisions[0].reason == "Overloaded" and res.decisions[0].broker == "hot:8080"


def test_refuses_a_modular_view():
    view = LoadView.from_load_data(random_snapshot(3, 2, seed=1))
    with pytest.raises(UsageError, match="Extensible Load Manager"):
        TransferShedder().find_bundles_for_unloading(view, CFG, {}, {})
    # as a modular manager would call it
    lm = ModularLoadManager(random_snapshot(3, 2, seed=1), CFG.with_values({
        "loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"}))
    with pytest.raises(UsageError, match="Extensible Load Manager"):
        lm.do_load_shedding()
