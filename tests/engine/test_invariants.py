"""Invariants every shedding strategy must keep, over named and seeded random clusters."""
import pytest

from engine.config import LoadBalancerConfig
from engine.load_manager import ModularLoadManager
from engine.strategies import SHEDDING, shedding_name
from engine.synth import make_snapshot, random_snapshot

IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def _strategies():
    shedding_name("ThresholdShedder")  # load the registry
    return sorted(n for n, cls in SHEDDING.items() if not getattr(cls, "manager_factory", None))


def _cfg(name):
    placement = "AvgShedder" if name == "AvgShedder" else "LeastLongTermMessageRate"
    return LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + name, "loadBalancerLoadPlacementStrategy": IMPL + placement,
        "loadBalancerAvgShedderHitCountLowThreshold": "2", "loadBalancerAvgShedderHitCountHighThreshold": "1",
        "loadBalancerBundleUnloadMinThroughputThreshold": "0.01", "minUnloadMessage": "10",
        "minUnloadMessageThroughput": "1024", "loadBalancerBrokerOverloadedThresholdPercentage": "60"})


CLUSTERS = [dict(n_brokers=n, bundles_per_broker=k, seed=s, skew=sk)
            for n, k, s, sk in [(3, 4, 1, 1.0), (6, 8, 2, 1.5), (12, 5, 3, 2.0), (25, 6, 4, 1.0)]]


@pytest.mark.parametrize("name", _strategies())
@pytest.mark.parametrize("cluster", CLUSTERS, ids=lambda c: f"{c['n_brokers']}x{c['bundles_per_broker']}")
def test_strategy_invariants(name, cluster):
    ld = random_snapshot(**cluster)
    owned = {b: bid for bid, bd in ld.brokers.items() for b in bd.local.bundles}
    lm = ModularLoadManager(ld, _cfg(name), seed=cluster["seed"])
    max_topics = lm.config.loadBalancerBrokerMaxTopics
    seen = {}
    total = 0
    for c in lm.run_cycles(6):
        bundles = [u.bundle for u in c.processed]
        assert len(bundles) == len(set(bundles)), "a bundle selected twice in one cycle"
        for u in c.unloads:
            total += 1
            assert owned[u.bundle] == u.broker, "unloaded from a broker that does not own it (conservation)"
            assert u.destination in ld.brokers and u.destination != u.broker
            assert u.bundle not in seen, "a recently unloaded bundle was shed again within the grace period"
            seen[u.bundle] = c.now_ms
            assert u.destination in u.placement.candidates, "placed outside the final candidate set"
            final = u.placement.filters[-1].candidates if u.placement.filters else u.placement.candidates
            assert u.destination in final or u.placement.retried
            topics = lm.view.num_topics[lm.view.broker_index[u.destination]]
            assert topics <= max_topics
    # every strategy found something to do on these skewed clusters at least once
    if cluster["skew"] >= 1.5:
        assert total > 0


@pytest.mark.parametrize("name", _strategies())
def test_balanced_cluster_sheds_nothing(name):
    spec = {f"b{i}:8080": dict(cpu=40, bandwidth_in=30, bandwidth_out=30,
                               bundles={f"t/n/{i}-{k}": dict(rate=500, throughput=500 * 2048) for k in range(4)})
            for i in range(5)}
    lm = ModularLoadManager(make_snapshot(spec), _cfg(name))
    for c in lm.run_cycles(4):
        assert c.unloads == [] and c.reason
        assert c.shedding.label == "Skip"
