"""Every finite double a Pulsar report may hold, decided as Pulsar decides.

Pulsar's Jackson readers take any finite ``double`` for a rate, throughput or usage (its own
``ThresholdShedderTest.testBrokerReachThreshold`` reports ``msgThroughputIn = Double.MAX_VALUE``);
sums overflow to Infinity, ``Infinity / Infinity`` and ``Infinity * 0`` give NaN, and
``LocalBrokerData.max(...)`` (a ``d > max`` loop from ``-Infinity``) never picks a NaN. The inputs
here are Pulsar's formats (LoadData JSON, a ``broker-stats load-report``, the Extensible Load
Manager's ``BrokerLoadData``) with Java's ``Double.MAX_VALUE`` where upstream's tests put it.
"""
import json
import math
import warnings

import numpy as np
import pytest

from engine.config import LoadBalancerConfig
from engine.io import load_snapshot_bytes
from engine.javacompat import java_max, java_max_rows
from engine.managers import make_manager
from engine.model import LocalBrokerData, ResourceUsage
from engine.samples import SAMPLES_DIR
from engine.strategies import registry
from engine.view import LoadView

DOUBLE_MAX = 1.7976931348623157e308  # Java's Double.MAX_VALUE
MB = 1024 * 1024


def ru(usage, limit):
    return {"usage": usage, "limit": limit}


def broker(cpu, bundles, **kw):
    d = {"cpu": ru(cpu, 100), "memory": ru(10, 100), "directMemory": ru(10, 100),
         "bandwidthIn": ru(500, 1000), "bandwidthOut": ru(500, 1000), "bundles": bundles,
         "lastUpdate": 1765000000000}
    d.update(kw)
    return d


def tamd(thr_in, thr_out, samples=10, rate=0.0):
    return {"maxSamples": samples, "numSamples": samples, "msgThroughputIn": thr_in, "msgThroughputOut": thr_out,
            "msgRateIn": rate, "msgRateOut": rate}


def bundle(i):
    return f"public/default/0x{i:08x}_0x{i + 1:08x}"


def bundle_data(thr, rate=0.0):
    return {"shortTermData": tamd(thr, thr, rate=rate), "longTermData": tamd(thr, thr, 1000, rate=rate)}


def read(obj):
    return load_snapshot_bytes(json.dumps(obj).encode(), "snapshot.json")


def shed(snap, strategy, cycles=1, placement=None):
    """``cycles`` cycles of ``strategy``; numpy's floating-point warnings are errors here (Java says
    nothing when a double overflows, neither may we)."""
    values = {"loadBalancerLoadSheddingStrategy": strategy}
    if placement:
        values["loadBalancerLoadPlacementStrategy"] = placement
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = make_manager(snap, LoadBalancerConfig().with_values(values), seed=0)
        return [lm.do_load_shedding() for _ in range(cycles)]


def unloads(cycle):
    return [(u.broker, u.bundle, u.destination) for u in cycle.unloads if not u.skipped]


def reach_threshold_snapshot():
    """``ThresholdShedderTest.testBrokerReachThreshold``: broker-2 at 140 % CPU reporting
    ``msgThroughputIn = Double.MAX_VALUE`` owns bundle-1 and bundle-2 (only bundle-2 has bundle data);
    broker-3 at 10 % CPU."""
    return {"brokers": {"broker-2:8080": broker(140, [bundle(1), bundle(2)], msgThroughputIn=DOUBLE_MAX),
                        "broker-3:8080": broker(10, [bundle(3), bundle(4)])},
            "bundleData": {bundle(2): {"shortTermData": tamd(1000.0, 1000.0),
                                       "longTermData": tamd(1000.0, 1000.0, 1000)}}}


def test_double_max_throughput_is_read_as_pulsar_reads_it():
    snap = read(reach_threshold_snapshot())
    assert snap.brokers["broker-2:8080"].local.msg_throughput_in == DOUBLE_MAX


def test_threshold_shedder_reach_threshold_with_double_max_throughput():
    """Upstream asserts the shedder unloads something from broker-2 (the bundle with data)."""
    (cyc,) = shed(read(reach_threshold_snapshot()), "ThresholdShedder")
    assert [(b, n) for b, n, _ in unloads(cyc)] == [("broker-2:8080", bundle(2))]


@pytest.mark.parametrize("strategy", ["OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"])
def test_reach_threshold_input_decides_under_every_modular_strategy(strategy):
    """No strategy refuses, crashes or warns on the report; the three that shed on broker-2's load
    unload its bundle; AvgShedder needs two hits first (loadBalancerAvgShedderHitCountHighThreshold)."""
    cycles = shed(read(reach_threshold_snapshot()), strategy, cycles=2)
    got = [u for c in cycles for u in unloads(c)]
    assert got and all(b == "broker-2:8080" and d == "broker-3:8080" for b, _, d in got)


def test_broker_totals_summed_from_last_stats_overflow_to_infinity():
    """A report without its totals: the reader sums ``lastStats`` as ``LocalBrokerData.updateBundleData``
    does; two bundles at Double.MAX_VALUE make Infinity, which is accepted and decides."""
    stat = {"msgRateIn": DOUBLE_MAX, "msgThroughputIn": DOUBLE_MAX, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
            "consumerCount": 1, "producerCount": 1, "topics": 1}
    obj = {"brokers": {"a:8080": broker(140, [bundle(1), bundle(2)], lastStats={bundle(1): stat, bundle(2): stat}),
                       "b:8080": broker(10, [bundle(3)])}}
    snap = read(obj)
    assert snap.brokers["a:8080"].local.msg_throughput_in == math.inf
    (cyc,) = shed(snap, "ThresholdShedder")
    # minimumThroughputToOffload = Infinity: every bundle of broker a goes
    assert sorted(n for _, n, _ in unloads(cyc)) == [bundle(1), bundle(2)]


def test_java_max_never_picks_nan():
    assert java_max([math.nan, 30.0, 20.0]) == 30.0
    assert java_max([math.nan, math.nan]) == -math.inf
    got = java_max_rows([np.array([math.nan, 1.0, math.nan]), np.array([2.0, math.nan, math.nan])])
    assert got.tolist() == [2.0, 1.0, -math.inf]


def test_nan_resource_percentage_is_skipped_by_max_resource_usage():
    """``bandwidthIn`` usage and limit both Double.MAX_VALUE: ``(float)`` makes both Infinity and the
    percentage NaN; Pulsar's max skips it, so the broker's usage is its CPU's 30 % (object model and
    columnar view alike), and a CPU weight of 0 on an Infinity CPU (NaN) is skipped too."""
    b = LocalBrokerData("a:8080", cpu=ResourceUsage(30, 100), bandwidth_in=ResourceUsage(DOUBLE_MAX, DOUBLE_MAX))
    assert math.isnan(b.bandwidth_in.percent_usage())
    assert b.max_resource_usage() == pytest.approx(0.3, rel=1e-6)
    assert b.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == pytest.approx(0.3, rel=1e-6)
    hot = LocalBrokerData("b:8080", cpu=ResourceUsage(DOUBLE_MAX, 100), bandwidth_in=ResourceUsage(40, 100))
    assert hot.max_resource_usage_with_weight(0.0, 1.0, 1.0, 1.0) == pytest.approx(0.4, rel=1e-6)
    snap = read({"brokers": {"a:8080": broker(30, [], bandwidthIn=ru(DOUBLE_MAX, DOUBLE_MAX)),
                             "b:8080": broker(DOUBLE_MAX, [], bandwidthIn=ru(40, 100))}})
    v = LoadView.from_load_data(snap)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert v.usage_unweighted().tolist() == pytest.approx([0.5, math.inf], rel=1e-6)  # bandwidthOut 50 %
        assert v.usage_with_weight((0.0, 1.0, 1.0, 1.0)).tolist() == pytest.approx([0.5, 0.5], rel=1e-6)


def test_uniform_load_shedder_when_every_broker_carries_more_than_integer_max_value():
    """UniformLoadShedder starts its minimum at ``Integer.MAX_VALUE``: brokers at 10 GB/s and 3 GB/s
    never lower it, so the ratio is 1e10 / 2147483647 = 4.66 > 4 (the real ratio, 3.33, would not
    shed) and it moves ``(int)((1e10 - 2147483647) * 0.2)`` bytes/s from the busy broker."""
    obj = {"brokers": {"a:8080": broker(50, [bundle(1), bundle(2)], msgThroughputIn=6e9, msgThroughputOut=4e9),
                       "b:8080": broker(50, [bundle(3), bundle(4)], msgThroughputIn=2e9, msgThroughputOut=1e9)},
           "bundleData": {bundle(1): bundle_data(2.5e8), bundle(2): bundle_data(2e8),
                          bundle(3): bundle_data(1e8), bundle(4): bundle_data(1e8)}}
    (cyc,) = shed(read(obj), "UniformLoadShedder")
    assert sorted(unloads(cyc)) == [("a:8080", bundle(1), "b:8080"), ("a:8080", bundle(2), "b:8080")]


def _maxed_variants():
    """Pulsar-format inputs with Double.MAX_VALUE in throughputs, rates, usages and limits."""
    yj = json.loads((SAMPLES_DIR / "yahoo-japan-3-brokers.json").read_text())
    out = {}
    d = json.loads(json.dumps(yj))
    first = next(iter(d["brokers"].values()))
    first.update(msgThroughputIn=DOUBLE_MAX, msgThroughputOut=DOUBLE_MAX, msgRateIn=DOUBLE_MAX, msgRateOut=DOUBLE_MAX)
    out["broker totals"] = d
    d = json.loads(json.dumps(yj))
    for bd in list(d["bundleData"].values())[:3]:
        for k in ("shortTermData", "longTermData"):
            bd[k].update(msgThroughputIn=DOUBLE_MAX, msgRateOut=DOUBLE_MAX)
    out["bundle data"] = d
    d = json.loads(json.dumps(yj))
    b0, b1 = list(d["brokers"].values())[:2]
    b0["cpu"] = ru(DOUBLE_MAX, 100)
    b0["bandwidthIn"] = ru(DOUBLE_MAX, DOUBLE_MAX)
    b1["directMemory"] = ru(1, DOUBLE_MAX)
    out["usages"] = d
    elm = json.loads((SAMPLES_DIR.parent / "extensible" / "transfer-shedder-5-brokers.json").read_text())
    a = next(iter(elm["brokerLoadData"].values()))
    a.update(msgThroughputIn=DOUBLE_MAX, msgThroughputOut=DOUBLE_MAX, msgThroughputEMA=DOUBLE_MAX)
    out["elm broker"] = elm
    elm = json.loads(json.dumps(elm))
    for v in elm["topBundlesLoadData"].values():
        for e in v["topBundlesLoadData"][:2]:
            e["stats"]["msgThroughputIn"] = DOUBLE_MAX
    out["elm bundles"] = elm
    return out


VARIANTS = _maxed_variants()
STRATEGIES = [s.name for s in registry.specs("shedding")]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_strategy_decides_on_double_max_inputs_without_a_warning(variant):
    """Three cycles of every shedding strategy (with its placement) on each input: read, decided,
    no exception and no numpy overflow warning; every unload has a destination or says why not."""
    snap = read(VARIANTS[variant])
    for strategy in STRATEGIES:
        for cyc in shed(snap, strategy, cycles=3):
            for u in cyc.unloads:
                assert u.destination or u.skipped, (strategy, u)
