"""LoadData model: float32 usage, weighted max usage, time averages, default bundle data."""
import numpy as np
import pytest

from engine.model import (
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    default_bundle_data,
    is_sla_or_heartbeat_namespace,
    update_time_average_arrays,
)
from engine.synth import make_snapshot


def test_max_resource_usage_excludes_memory_and_is_float32():
    b = LocalBrokerData("b:8080", cpu=ResourceUsage(30, 100), memory=ResourceUsage(99, 100),
                        direct_memory=ResourceUsage(10, 100), bandwidth_in=ResourceUsage(20, 100),
                        bandwidth_out=ResourceUsage(25, 100))
    # float32 max divided by 100 in float
    assert b.max_resource_usage() == float(np.float32(np.float32(30.000001907348633) / np.float32(100)))
    assert b.max_resource_usage() == 0.30000001192092896


def test_weighted_max_usage():
    b = LocalBrokerData("b:8080", cpu=ResourceUsage(30, 100), direct_memory=ResourceUsage(90, 100),
                        bandwidth_in=ResourceUsage(50, 100), bandwidth_out=ResourceUsage(10, 100))
    # default weights: direct memory 0 -> bandwidth in wins
    assert b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 1.0) == 0.5
    # with direct memory weight 1.0 it wins
    assert b.max_resource_usage_with_weight(1.0, 1.0, 1.0, 1.0) == 0.9
    # products in double of the float32 percentage
    assert b.max_resource_usage_with_weight(2.0, 0, 0, 0) == 30.000001907348633 * 2.0 / 100


def test_time_average_rules():
    t = TimeAverageMessageData(max_samples=3, num_samples=0, msg_rate_in=50.0)
    t.update(NamespaceBundleStats(msg_rate_in=10.0))  # first sample overwrites the default
    assert (t.num_samples, t.msg_rate_in) == (1, 10.0)
    t.update(NamespaceBundleStats(msg_rate_in=20.0))  # plain mean until max
    assert (t.num_samples, t.msg_rate_in) == (2, 15.0)
    t.update(NamespaceBundleStats(msg_rate_in=30.0))
    assert (t.num_samples, t.msg_rate_in) == (3, 20.0)
    t.update(NamespaceBundleStats(msg_rate_in=50.0))  # then EMA with weight 1/max
    assert t.num_samples == 3 and t.msg_rate_in == pytest.approx((2 * 20.0 + 50.0) / 3)


def test_vectorised_time_average_matches_objects():
    rng = np.random.default_rng(1)
    objs = [TimeAverageMessageData(10, int(n)) for n in rng.integers(0, 11, 50)]
    vals = np.zeros((50, 4))
    ns = np.array([o.num_samples for o in objs])
    for step in range(15):
        sample = rng.uniform(0, 1000, (50, 4))
        for o, s in zip(objs, sample):
            o.update(NamespaceBundleStats(s[2], s[0], s[3], s[1]))
        update_time_average_arrays(vals, ns, 10, sample)
    assert ns.tolist() == [o.num_samples for o in objs]
    assert np.allclose(vals, [[o.msg_throughput_in, o.msg_throughput_out, o.msg_rate_in, o.msg_rate_out] for o in objs],
                       rtol=0, atol=1e-9)


def test_default_bundle_data():
    d = default_bundle_data()
    assert d.short_term.num_samples == 0 and d.long_term.num_samples == 0
    assert d.long_term.total_msg_rate() == 100.0 and d.long_term.total_msg_throughput() == 100000.0
    d.update(NamespaceBundleStats(msg_rate_in=7.0))
    assert d.short_term.msg_rate_in == 7.0 and d.long_term.msg_rate_in == 7.0  # first sample replaces
    q = default_bundle_data({"msgRateIn": 10, "msgRateOut": 20, "bandwidthIn": 1000, "bandwidthOut": 2000})
    assert (q.short_term.num_samples, q.long_term.num_samples) == (10, 1000)
    assert q.long_term.total_msg_rate() == 30 and q.short_term.total_msg_throughput() == 3000


def test_bundle_data_value_identity():
    a, b = default_bundle_data(), default_bundle_data()
    assert a.value_key() == b.value_key()  # Lombok equals: identical stats are "equal"
    a.update(NamespaceBundleStats(msg_rate_in=1.0))
    assert a.value_key() != b.value_key()  # ... and the key changes after an update


def test_local_broker_data_update_gains_losses():
    b = LocalBrokerData("b:8080", bundles=["t/n/a", "t/n/b"])
    b.update(None, {"t/n/b": NamespaceBundleStats(msg_rate_in=5, topics=3), "t/n/c": NamespaceBundleStats(msg_rate_out=2)})
    assert b.bundles == ["t/n/b", "t/n/c"]
    assert b.last_bundle_losses == ["t/n/a"] and b.last_bundle_gains == ["t/n/c"]
    assert (b.msg_rate_in, b.msg_rate_out, b.num_topics, b.num_bundles) == (5, 2, 3, 2)


def test_time_average_broker_data_reset_uses_defaults_for_unknown():
    bd = {"x": BundleData(TimeAverageMessageData(10, 10, 1, 2, 3, 4), TimeAverageMessageData(1000, 10, 5, 6, 7, 8), 1)}
    t = TimeAverageBrokerData()
    t.reset(["x", "unknown"], bd)
    assert t.short_term_msg_rate_in == 3 + 50 and t.long_term_msg_rate_out == 8 + 50
    assert t.long_term_msg_throughput_in == 5 + 50000


def test_update_bundle_data_advances_samples_and_forgets():
    ld = make_snapshot({"b1:8080": dict(cpu=10, bundles={"t/n/a": dict(rate=100)})}, samples=(0, 0))
    ld.bundle_data["t/n/gone"] = default_bundle_data()
    ld.update_bundle_data()
    assert "t/n/gone" not in ld.bundle_data
    assert ld.bundle_data["t/n/a"].short_term.num_samples == 1
    ld.update_bundle_data()
    assert ld.bundle_data["t/n/a"].long_term.num_samples == 2


def test_now_is_the_snapshot_time():
    ld = make_snapshot({"a:1": dict(last_update=1000), "b:1": dict(last_update=5000)}, now_ms=None)
    assert ld.now == 5000
    assert LoadData().now == 0


@pytest.mark.parametrize("ns,expected", [
    ("pulsar/10.0.0.1:8080", True), ("pulsar/cluster-a/10.0.0.1:8080", True),
    ("sla-monitor/cluster-a/10.0.0.1:8080", True), ("public/default", False), ("pulsar/system", False),
])
def test_heartbeat_and_sla_namespaces(ns, expected):
    assert is_sla_or_heartbeat_namespace(ns) is expected


@pytest.mark.parametrize("names", [["t/ns1/0x0_0x8", "t/ns2/0x0_0x8", "t/ns1/0x8_0xf"],
                                   ["a/b/c", "a/b", "x", "", "/q", "ab/", "//", "pulsar/c/10.0.0.1:8080/0x0_0x1"]])
def test_view_namespaces_are_bundle_namespace_of_each_name(names):
    """The view's namespace of each bundle (found in bulk) is ``bundle_namespace``'s, names without a
    ``/`` or starting with one included; namespaces sorted, each bundle pointing at its own."""
    from engine.model import bundle_namespace
    from engine.view import LoadView

    v = LoadView.__new__(LoadView)
    v.__dict__["bundles"] = list(names)
    assert v.namespaces == sorted({bundle_namespace(b) for b in names})
    assert [v.namespaces[i] for i in v.bundle_namespace_id] == [bundle_namespace(b) for b in names]


def test_negative_limit_of_a_nic_of_unknown_speed_is_zero_percent():
    # what a real Pulsar 4.0 broker writes when its NIC's speed is unknown (virtio: speed file -1)
    rep = LocalBrokerData.from_json({"cpu": {"usage": 10.0, "limit": 25.0},
                                     "bandwidthIn": {"usage": 0.0, "limit": -1000.0},
                                     "bandwidthOut": {"usage": 0.0, "limit": -1000.0}}, broker_id="b:8080")
    assert rep.bandwidth_in.limit == -1000.0
    assert rep.bandwidth_in.percent_usage() == 0.0
    assert rep.max_resource_usage() == pytest.approx(0.4)
    with pytest.raises(Exception, match="negative"):
        ResourceUsage.from_json({"usage": -1.0, "limit": 100.0}, "cpu")


@pytest.mark.parametrize("field", ["msgRateIn", "numTopics"])
def test_an_integer_beyond_every_double_is_refused_naming_the_field(field):
    from engine.errors import InputError

    with pytest.raises(InputError, match=rf"{field}.*out of range"):
        LocalBrokerData.from_json({field: 10**400}, broker_id="b:8080")
