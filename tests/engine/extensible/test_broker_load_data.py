"""BrokerLoadData (§8.1): the EMA update with five weights and float32 percentages; Pulsar's JSON."""
import json

import numpy as np
import pytest

from engine.config import LoadBalancerConfig
from engine.errors import InputError
from engine.extensible import BrokerLoadData
from engine.model import ResourceUsage


def f32pct(u, lim):
    return float(np.float32(np.float32(np.float32(u) / np.float32(lim)) * np.float32(100)))


def test_defaults_are_pulsars():
    d = BrokerLoadData()
    assert (d.max_resource_usage, d.weighted_max_ema, d.msg_throughput_ema, d.updated_at) == (1.0, 1.0, 0.0, 0)


def test_first_update_takes_the_current_value_then_the_ema_advances():
    cfg = LoadBalancerConfig()
    d = BrokerLoadData()
    d.update({"cpu": ResourceUsage(30, 100)}, 100.0, 200.0, 1.0, 2.0, 3, 4, cfg, now_ms=5000)
    w1 = f32pct(30, 100) / 100
    assert d.weighted_max_ema == w1 == 0.30000001907348633
    assert d.msg_throughput_ema == 300.0 and d.updated_at == 5000
    assert (d.bundle_count, d.topics, d.msg_rate) == (3, 4, 3.0)
    d.update({"cpu": ResourceUsage(70, 100)}, 1000.0, 0.0, 0, 0, 3, 4, cfg, now_ms=10000)
    w2 = f32pct(70, 100) / 100
    assert d.weighted_max_ema == w1 * 0.9 + (1 - 0.9) * w2  # h * old + (1 - h) * new, in this order
    assert d.msg_throughput_ema == 300.0 * 0.9 + (1 - 0.9) * 1000.0
    h = 0.5
    d2 = BrokerLoadData()
    c2 = cfg.with_values({"loadBalancerHistoryResourcePercentage": h})
    d2.update({"cpu": ResourceUsage(30, 100)}, 0, 0, 0, 0, 0, 0, c2, now_ms=1)
    d2.update({"cpu": ResourceUsage(70, 100)}, 0, 0, 0, 0, 0, 0, c2, now_ms=2)
    assert d2.weighted_max_ema == w1 * h + (1 - h) * w2


def test_five_weights_include_memory():
    usage = {"cpu": ResourceUsage(20, 100), "memory": ResourceUsage(60, 100), "direct_memory": ResourceUsage(50, 100),
             "bandwidth_in": ResourceUsage(10, 100), "bandwidth_out": ResourceUsage(15, 100)}
    d = BrokerLoadData()
    d.update(usage, 0, 0, 0, 0, 0, 0, LoadBalancerConfig(), now_ms=1)  # memory and direct memory weights 0
    assert d.weighted_max_ema == pytest.approx(0.20)
    assert d.max_resource_usage == float(np.float32(np.float32(50.0) / np.float32(100)))  # memory excluded
    cfg = LoadBalancerConfig().with_values({"loadBalancerMemoryResourceWeight": 1.0})
    d = BrokerLoadData()
    d.update(usage, 0, 0, 0, 0, 0, 0, cfg, now_ms=1)
    assert d.weighted_max_ema == f32pct(60, 100) * 1.0 / 100
    cfg = LoadBalancerConfig().with_values({"loadBalancerBandwithOutResourceWeight": 3.0})  # PIP-357 typo key
    d = BrokerLoadData()
    d.update(usage, 0, 0, 0, 0, 0, 0, cfg, now_ms=1)
    assert d.weighted_max_ema == f32pct(15, 100) * 3.0 / 100


def test_json_round_trip_with_pulsar_field_names():
    d = BrokerLoadData()
    d.update({"cpu": ResourceUsage(30, 100), "bandwidth_in": (5, 10)}, 1.5, 2.5, 3.5, 4.5, 6, 7,
             LoadBalancerConfig(), now_ms=123)
    j = d.to_json()
    assert set(j) == {"cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut", "msgThroughputIn",
                      "msgThroughputOut", "msgRateIn", "msgRateOut", "bundleCount", "topics", "maxResourceUsage",
                      "weightedMaxEMA", "msgThroughputEMA", "updatedAt", "reportedAt"}
    back = BrokerLoadData.from_json(json.loads(json.dumps(j)))
    assert back == d


@pytest.mark.parametrize("obj, field", [
    ({"weightedMaxEMA": -0.1}, "brokerLoadData['b'].weightedMaxEMA"),
    ({"weightedMaxEMA": "x"}, "brokerLoadData['b'].weightedMaxEMA"),
    ({"cpu": {"usage": -1, "limit": 100}}, "brokerLoadData['b'].cpu.usage"),
    ({"updatedAt": 1.5}, "brokerLoadData['b'].updatedAt"),
])
def test_bad_values_name_the_field(obj, field):
    with pytest.raises(InputError) as e:
        BrokerLoadData.from_json(obj, "brokerLoadData['b']", "f.json")
    assert e.value.field == field and e.value.source == "f.json"


def test_missing_ema_takes_pulsars_default_with_a_warning():
    w = []
    d = BrokerLoadData.from_json({"cpu": {"usage": 10, "limit": 100}}, "x", "f.json", w)
    assert d.weighted_max_ema == 1.0 and any("weightedMaxEMA" in m for m in w)


def test_first_updates_of_many_brokers_are_each_brokers_own_update():
    """A view's brokers seen for the first time are updated all at once: every field (float32
    percentages, double weighted max, the EMAs' first value) equals BrokerLoadData.update on each,
    including a zero limit, an unlimited resource, weights of 0 and a usage whose weighted product is
    not finite (inf x 0)."""
    import random

    from engine.extensible.broker_load_data import first_updates
    from engine.model import LocalBrokerData, ResourceUsage

    rng = random.Random(3)

    def res():
        return ResourceUsage(rng.choice([0.0, rng.random() * 300, 1e39]), rng.choice([0.0, 100.0, 8.0, rng.random() * 1e5]))

    locals_ = [LocalBrokerData(f"b{i}:8080", cpu=res(), memory=res(), direct_memory=res(), bandwidth_in=res(),
                               bandwidth_out=res(), msg_throughput_in=rng.random() * 1e8,
                               msg_throughput_out=rng.random() * 1e8, msg_rate_in=rng.random() * 1e4,
                               msg_rate_out=rng.random() * 1e4, num_topics=rng.randrange(100),
                               num_bundles=rng.randrange(50), bundles=[f"t/n/{i}"] * rng.randrange(2))
               for i in range(300)]
    times = [rng.randrange(1, 10**12) for _ in locals_]
    for cfg in (LoadBalancerConfig(), LoadBalancerConfig().with_values(
            {"loadBalancerCPUResourceWeight": "0", "loadBalancerMemoryResourceWeight": "2.5",
             "loadBalancerBandwithInResourceWeight": "0.3"})):
        got = first_updates(locals_, times, cfg)
        for L, t, d in zip(locals_, times, got):
            want = BrokerLoadData()
            want.update({"cpu": L.cpu, "memory": L.memory, "direct_memory": L.direct_memory,
                         "bandwidth_in": L.bandwidth_in, "bandwidth_out": L.bandwidth_out},
                        L.msg_throughput_in, L.msg_throughput_out, L.msg_rate_in, L.msg_rate_out,
                        len(L.bundles) if L.bundles else L.num_bundles, L.num_topics, cfg, now_ms=t)
            assert repr(d) == repr(want)  # repr: NaN fields compare equal too
            assert d.cpu is not L.cpu  # the report's resources are copied, not shared
