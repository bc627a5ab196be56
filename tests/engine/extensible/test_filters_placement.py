"""The extensible filter pipeline, transferable (§8.4) and LeastResourceUsageWithWeight (§8.5)."""
import numpy as np
import pytest

from engine.errors import UsageError
from engine.extensible import (
    BrokerLookupData,
    ExtensibleLeastResourceUsageWithWeight,
    ExtensibleLoadManager,
    ExtensiblePolicies,
    FilterContext,
    TransferShedder,
    transferable,
)
from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER
from engine.load_manager import ModularLoadManager
from engine.synth import random_snapshot

from ._clusters import CFG, cluster

B = "t/n/0x00000000_0xffffffff"


def test_max_topic_filter_drops_at_the_limit_without_fallback():
    mx = CFG.loadBalancerBrokerMaxTopics
    data = cluster({"a:8080": (0.1, 1, None, {"topics": mx}), "b:8080": (0.2, 1, None, {"topics": mx - 1}),
                    "c:8080": (0.3, 1, None, {"topics": mx + 5})})
    ctx = FilterContext(data, CFG)
    assert ctx.filter(["a:8080", "b:8080", "c:8080"], B).candidates == ["b:8080"]
    assert transferable(ctx, B, "c:8080", "b:8080") is True
    assert transferable(ctx, B, "b:8080", "a:8080") is False  # destination filtered out
    assert transferable(ctx, B, "b:8080", None) is False  # nothing left once the source is removed
    # all brokers at the limit: no candidate at all (the modular filter would fall back to every broker)
    full = cluster({"a:8080": (0.1, 1, None, {"topics": mx}), "b:8080": (0.2, 1, None, {"topics": mx})})
    lm = ExtensibleLoadManager(full, CFG)
    dec = lm.select_broker(B)
    assert dec.broker is None and dec.candidates == []
    assert any("BrokerMaxTopicCountFilter" in f.name for f in dec.filters)


def test_filtered_min_broker_blocks_transfers():
    mx = CFG.loadBalancerBrokerMaxTopics
    data = cluster({"a:8080": (0.1, 100, None, {"topics": mx}), "b:8080": (0.9, 900, [100, 200, 300])})
    res = TransferShedder(3).find_bundles_for_unloading(data, CFG, {}, {})
    assert res.decisions[0].reason == "NoBundles"


def test_load_manager_class_and_version_filters():
    data = cluster({"a:8080": (0.1, 1, None), "b:8080": (0.2, 1, None), "c:8080": (0.3, 1, None)},
                   lookup={"a:8080": BrokerLookupData(broker_version="4.0.1"),
                           "b:8080": BrokerLookupData(broker_version="4.1.0"),
                           "c:8080": BrokerLookupData("org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
                                                      "4.1.0")})
    names = ["a:8080", "b:8080", "c:8080"]
    assert FilterContext(data, CFG).filter(names, B).candidates == ["a:8080", "b:8080"]
    later = CFG.with_values({"preferLaterVersions": True})
    assert FilterContext(data, later).filter(names, B).candidates == ["b:8080"]
    data.lookup["a:8080"].broker_version = "nightly"
    res = FilterContext(data, later).filter(names, B)
    assert res.error and "nightly" in res.error and res.candidates == ["a:8080", "b:8080"]  # removes nothing
    assert transferable(FilterContext(data, later), B, "a:8080", "b:8080") is False  # a failure: not transferable
    # a modular config is read as the extensible one (this pipeline only exists there)
    assert FilterContext(data, later.with_values({"loadManagerClassName": "x.ModularLoadManagerImpl"})).conf \
        .loadManagerClassName == EXTENSIBLE_LOAD_MANAGER


def test_version_filter_orders_as_semver():
    """java-semver's order: a pre-release is older than its release, build metadata does not make a version
    another one, and a version it cannot parse fails the filter."""
    later = CFG.with_values({"preferLaterVersions": True})
    names = ["a:8080", "b:8080", "c:8080"]

    def kept(*versions):
        data = cluster({b: (0.1, 1, None) for b in names},
                       lookup={b: BrokerLookupData(broker_version=v) for b, v in zip(names, versions)})
        res = FilterContext(data, later).filter(names, B)
        return res.candidates if res.error is None else "error"

    assert kept("4.0.0-rc.1", "4.0.0", "3.9.9") == ["b:8080"]
    assert kept("4.0.0-rc.2", "4.0.0-rc.10", "4.0.0-rc.10") == ["b:8080", "c:8080"]  # numeric identifiers
    assert kept("4.0.0-alpha", "4.0.0-1", "4.0.0-alpha.1") == ["c:8080"]  # longer list, alphanumeric on top
    assert kept("4.0.0+b1", "4.0.0", "4.0.0+b2") == names  # equal without their build metadata
    assert kept("10.0.0", "9.9.9", "4.0.0") == ["a:8080"]
    for bad in ("04.0.0", "4.0", "4.0.0abc", "4.0.0-01", ""):
        assert kept(bad, "4.0.0", "4.0.0") == "error", bad


class _Pinned(ExtensiblePolicies):
    """Namespace pin/ns may only live on a:8080 or b:8080."""

    def has_policies(self, namespace):
        return namespace == "pin/ns"

    def isolation_filter(self, brokers, bundle, data):
        return [b for b in brokers if not bundle.startswith("pin/ns/") or b in ("a:8080", "b:8080")]


def test_policies_hook():
    data = cluster({"a:8080": (0.1, 1, None), "b:8080": (0.2, 1, None), "c:8080": (0.3, 1, None)})
    x = "pin/ns/0x00000000_0xffffffff"
    ctx = FilterContext(data, CFG, _Pinned())
    assert transferable(ctx, x, "a:8080", "b:8080") is False  # has policies, shedding them disabled
    on = CFG.with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": True})
    ctx = FilterContext(data, on, _Pinned())
    assert transferable(ctx, x, "a:8080", "b:8080") is True
    assert transferable(ctx, x, "a:8080", "c:8080") is False
    lm = ExtensibleLoadManager(data, on, policies=_Pinned(), seed=1)
    for _ in range(5):
        assert lm.select_broker(x).broker in ("a:8080", "b:8080")


def test_transferable_with_transfer_disabled():
    data = cluster({"a:8080": (0.1, 1, None), "b:8080": (0.2, 1, None)})
    off = CFG.with_values({"loadBalancerTransferEnabled": False})
    assert transferable(FilterContext(data, off), B, "a:8080", "b:8080") is True
    assert transferable(FilterContext(data, off), B, "a:8080", None) is True


# ---------------------------------------------------------------------------------------- placement
def _loads(**kw):
    return cluster({f"{k}:8080": (v, 1, None) for k, v in kw.items()})


def test_lruww_uses_the_ema_against_the_average():
    data = _loads(a=0.1, b=0.5, c=0.9)
    s = ExtensibleLeastResourceUsageWithWeight()
    dec = s.select(["a:8080", "b:8080", "c:8080"], B, data, CFG, np.random.default_rng(0))
    # average 0.5, diff 10 %: 0.1 + 0.1 <= 0.5 only
    assert (dec.broker, dec.best, dec.random) == ("a:8080", ["a:8080"], False)
    assert dec.lines["average"] == pytest.approx(50.0)
    # the broker's current usage does not matter, only weightedMaxEMA
    data.broker_load_data["a:8080"].cpu.usage, data.broker_load_data["a:8080"].cpu.limit = 99.0, 100.0
    assert s.select(["a:8080", "b:8080", "c:8080"], B, data, CFG, np.random.default_rng(0)).broker == "a:8080"


def test_lruww_random_among_several_and_fallback_to_all():
    data = _loads(a=0.1, b=0.15, c=0.9)  # avg 0.3833: a and b qualify
    s = ExtensibleLeastResourceUsageWithWeight()
    picks = {s.select(["a:8080", "b:8080", "c:8080"], B, data, CFG, np.random.default_rng(i)).broker
             for i in range(30)}
    assert picks == {"a:8080", "b:8080"}
    flat = _loads(a=0.5, b=0.52, c=0.55)  # nobody 10 % below the average: every candidate
    dec = s.select(["a:8080", "b:8080", "c:8080"], B, flat, CFG, np.random.default_rng(0))
    assert dec.best == ["a:8080", "b:8080", "c:8080"] and dec.random and "overloaded" in dec.reason


def test_lruww_brokers_without_load_data():
    data = _loads(a=0.1, c=0.9)
    s = ExtensibleLeastResourceUsageWithWeight()
    dec = s.select(["a:8080", "nodata:8080", "c:8080"], B, data, CFG, np.random.default_rng(0))
    assert dec.best == ["a:8080"]  # average over a and c only: 0.5
    assert dec.scores["nodata:8080"] != dec.scores["nodata:8080"]  # NaN: no score
    flat = _loads(a=0.5, c=0.5)
    dec = s.select(["a:8080", "nodata:8080", "c:8080"], B, flat, CFG, np.random.default_rng(0))
    assert dec.best == ["a:8080", "nodata:8080", "c:8080"]  # the fallback includes it
    assert s.select([], B, flat, CFG, np.random.default_rng(0)).broker is None


def test_excluded_namespace_uses_round_robin():
    data = _loads(a=0.1, b=0.5, c=0.9)
    cfg = CFG.with_values({"loadBalancerSheddingExcludedNamespaces": "t/n"})
    lm = ExtensibleLoadManager(data, cfg)
    got = [lm.select_broker(B).broker for _ in range(6)]
    assert got[:3] == got[3:] and sorted(got[:3]) == ["a:8080", "b:8080", "c:8080"]
    assert "round robin" in lm.select_broker(B).reason


def test_modular_manager_refuses_the_extensible_placement():
    cfg = CFG.with_values({"loadBalancerLoadPlacementStrategy":
                           "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"})
    lm = ModularLoadManager(random_snapshot(3, 2, seed=1), cfg)
    assert lm.placement.name == "ExtensibleLeastResourceUsageWithWeight"
    with pytest.raises(UsageError, match="ExtensibleLoadManager"):
        lm.select_broker("tenant/ns0/0x00000000_0x10000000")
