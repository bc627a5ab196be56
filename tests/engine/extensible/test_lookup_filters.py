"""The Extensible Load Manager's lookups through its filters as Pulsar runs them, on the ELM container
(``brokerLoadData`` values as the broker publishes them, ``brokerLookupData`` as the registry holds
``BrokerLookupData``, ``bundleOwnership`` the service-unit channel, anti-affinity groups as
``namespaces get-anti-affinity-group`` gives them).

* ``AntiAffinityGroupPolicyFilter`` counts the channel's owned bundles of the group
  (``LoadManagerShared.getAntiAffinityNamespaceOwnedBrokers`` over ``getOwnershipEntrySet()``): a bundle
  the leader has just assigned is owned in the channel when the next lookup comes, so two back-to-back
  lookups of two namespaces of one group land on two brokers.
* ``BrokerIsolationPoliciesFilter`` (``applyNamespacePoliciesAsync``): for a namespace without an
  isolation policy a broker is kept only when its lookup data enables the bundle's topic type —
  ``nonPersistentTopicsEnabled`` for a non-persistent topic's lookup (``ConsistentHashingTopicBundleAssigner``
  sets ``hasNonPersistentTopic``), ``persistentTopicsEnabled`` otherwise; with or without other policies.
"""
import json

import pytest

from engine.config import LoadBalancerConfig
from engine.extensible import ExtensibleLoadManager
from engine.extensible.sim_leader import ExtensibleLeader
from engine.io import load_snapshot_bytes

LM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
NS1, NS2 = "shop/orders-eu/0x00000000_0xffffffff", "shop/orders-us/0x00000000_0xffffffff"


def _broker(ema):
    return {"cpu": {"usage": ema * 800, "limit": 800.0}, "memory": {"usage": 100.0, "limit": 8192.0},
            "directMemory": {"usage": 0.0, "limit": 4096.0}, "bandwidthIn": {"usage": 0.0, "limit": 1e7},
            "bandwidthOut": {"usage": 0.0, "limit": 1e7}, "msgThroughputIn": 0.0, "msgThroughputOut": 0.0,
            "msgRateIn": 0.0, "msgRateOut": 0.0, "bundleCount": 1, "topics": 10, "maxResourceUsage": ema,
            "weightedMaxEMA": ema, "msgThroughputEMA": 0.0, "updatedAt": 1765000000000, "reportedAt": 0}


def container(emas, lookup=None, groups=None, ownership=None):
    obj = {"brokerLoadData": {b: _broker(e) for b, e in emas.items()},
           "brokerLookupData": {b: {"persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
                                    "loadManagerClassName": LM, "brokerVersion": "4.0.3", **(lookup or {}).get(b, {})}
                                for b in emas},
           "bundleOwnership": ownership or {}, "now": 1765000000000}
    if groups:
        obj["shedlabPolicies"] = {"antiAffinityGroups": groups}
    return load_snapshot_bytes(json.dumps(obj).encode(), "elm.json")


# broker-a is the only one well below the average (0.1 + 0.1 <= 0.4): the strategy alone picks it every time
EMAS = {"broker-a:8080": 0.1, "broker-b:8080": 0.5, "broker-c:8080": 0.6}
GROUPS = {"shop/orders-eu": "orders", "shop/orders-us": "orders"}


def test_back_to_back_lookups_of_one_anti_affinity_group_land_on_two_brokers():
    lm = ExtensibleLoadManager(container(EMAS, groups=GROUPS), LoadBalancerConfig(), seed=0)
    first = lm.select_broker_for_assignment(NS1)
    assert first.broker == "broker-a:8080"
    second = lm.select_broker_for_assignment(NS2)
    assert second.broker in ("broker-b:8080", "broker-c:8080")
    step = next(f for f in second.filters if f.name.startswith("AntiAffinityGroupPolicyFilter"))
    assert "broker-a:8080" not in step.candidates and "already serves 1" in step.reasons["broker-a:8080"]
    # the same lookups without the group: both on broker-a (the filter is what moves the second one)
    free = ExtensibleLoadManager(container(EMAS), LoadBalancerConfig(), seed=0)
    assert [free.select_broker_for_assignment(b).broker for b in (NS1, NS2)] == ["broker-a:8080"] * 2


def test_a_bundle_of_the_group_owned_in_the_channel_counts_too():
    own = {"shop/orders-eu/0x00000000_0x80000000": "broker-a:8080"}
    lm = ExtensibleLoadManager(container(EMAS, groups=GROUPS, ownership=own), LoadBalancerConfig(), seed=0)
    assert lm.select_broker(NS2).broker != "broker-a:8080"


def test_simulated_leader_counts_its_own_lookups_of_the_minute():
    """The simulator's leader answers a minute's lookups one after the other on one snapshot: the
    second sees the first in the channel."""
    leader = ExtensibleLeader(LoadBalancerConfig(), seed=0)
    data = container(EMAS, groups=GROUPS)
    from engine.policies import ExtensibleClusterPolicies, policies_of

    leader.manager = ExtensibleLoadManager(data, leader.config, seed=0,
                                           policies=ExtensibleClusterPolicies(policies_of(data)))
    got = [leader.assign(b).broker for b in (NS1, NS2)]
    assert got[0] == "broker-a:8080" and got[1] != "broker-a:8080"
    # a new minute: the channel is the simulator's again (the assignment now stands in it, or not)
    leader.manager.update(container(EMAS, groups=GROUPS, ownership={}))
    assert leader.manager.owners() == {}


@pytest.mark.parametrize("groups", [None, GROUPS], ids=["no policies", "anti-affinity only"])
def test_brokers_not_serving_the_topic_type_are_dropped(groups):
    lookup = {"broker-a:8080": {"persistentTopicsEnabled": False},
              "broker-b:8080": {"nonPersistentTopicsEnabled": False}}
    data = container(EMAS, lookup=lookup, groups=groups)
    lm = ExtensibleLoadManager(data, LoadBalancerConfig(), seed=0)
    persistent = lm.select_broker(NS1)
    assert persistent.broker != "broker-a:8080" and "broker-a:8080" not in persistent.candidates
    step = next(f for f in persistent.filters if f.name.startswith("BrokerIsolationPoliciesFilter"))
    assert "persistentTopicsEnabled" in step.reasons["broker-a:8080"]
    non_persistent = lm.select_broker(NS1, non_persistent=True)
    assert non_persistent.broker == "broker-a:8080"  # broker-a serves non-persistent topics, b does not
    assert "broker-b:8080" not in non_persistent.candidates
    # a broker that serves neither is never a candidate
    none = container(EMAS, lookup={"broker-a:8080": {"persistentTopicsEnabled": False,
                                                     "nonPersistentTopicsEnabled": False}}, groups=groups)
    lm = ExtensibleLoadManager(none, LoadBalancerConfig(), seed=0)
    for np_ in (False, True):
        assert "broker-a:8080" not in lm.select_broker(NS1, non_persistent=np_).candidates
