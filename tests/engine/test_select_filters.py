"""selectBroker's broker filters and 5.0's broker-id isolation matching, as the oracle's filters kind found them
in Pulsar's own classes (docs/fidelity.md); small inputs, each decided on the lines that differ."""
from __future__ import annotations

from engine.config import LoadBalancerConfig
from engine.load_manager import ModularLoadManager
from engine.policies import attach, read_policies_json
from engine.synth import make_snapshot


def _cands(ld, cfg, bundle):
    lm = ModularLoadManager(ld, cfg, seed=0)
    return sorted(lm.select_broker(bundle).candidates)  # (no broker is overloaded: no retry)


def _cfg(version="4.2.4", **keys):
    return LoadBalancerConfig().with_values({"pulsarVersion": version, **keys})


def test_version_filter_reads_only_the_candidates_versions():
    """b3 reports an unparseable version but is filtered out before (max topics): the version filter keeps the
    newest of b1 / b2 instead of giving up on every candidate."""
    ld = make_snapshot({"b1": dict(cpu=10, version="4.1.0"), "b2": dict(cpu=10, version="4.0.0"),
                        "b3": dict(cpu=10, version="not-a-version",
                                   bundles={"x/y/0x00000000_0x10000000": dict(rate=1, topics=100)})})
    cfg = _cfg(preferLaterVersions=True, loadBalancerBrokerMaxTopics=10)
    assert _cands(ld, cfg, "t/ns/0x00000000_0xffffffff") == ["b1"]


def test_version_filter_orders_a_pre_release_below_its_release():
    ld = make_snapshot({"b1": dict(cpu=10, version="4.1.0-SNAPSHOT"), "b2": dict(cpu=10, version="4.1.0"),
                        "b3": dict(cpu=10, version="4.0.9")})
    assert _cands(ld, _cfg(preferLaterVersions=True), "t/ns/0x00000000_0xffffffff") == ["b2"]


def test_unparseable_candidate_version_restores_the_candidates():
    ld = make_snapshot({"b1": dict(cpu=10, version="4.1.0"), "b2": dict(cpu=10, version="4.1")})
    assert _cands(ld, _cfg(preferLaterVersions=True), "t/ns/0x00000000_0xffffffff") == ["b1", "b2"]


def _isolated():
    ld = make_snapshot({"b1:8080": dict(cpu=10), "b2:8080": dict(cpu=10), "b3:8080": dict(cpu=10)})
    return attach(ld, read_policies_json({"namespaceIsolationPolicies": {"iso": {
        "namespaces": ["t/iso"], "primary": ["b1:8080"], "secondary": ["b2"],
        "auto_failover_policy": {"policy_type": "min_available",
                                 "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}}, "test", "bundle"))


def test_isolation_regex_with_a_port_matches_the_broker_id_from_5_0():
    assert _cands(_isolated(), _cfg("5.0.1"), "t/iso/0x00000000_0xffffffff") == ["b1:8080"]
    # before 5.0 the host alone is matched: no primary, so min_limit 1 fails over to the secondary
    assert _cands(_isolated(), _cfg("4.2.4"), "t/iso/0x00000000_0xffffffff") == ["b2:8080"]


def test_a_broker_named_primary_by_its_id_is_not_shared_from_5_0():
    """A namespace without a policy may use only shared brokers: from 5.0, b1:8080 is a primary of `iso`."""
    assert _cands(_isolated(), _cfg("5.0.1"), "other/ns/0x00000000_0xffffffff") == ["b2:8080", "b3:8080"]
    assert _cands(_isolated(), _cfg("4.2.4"), "other/ns/0x00000000_0xffffffff") == ["b1:8080", "b2:8080",
                                                                                     "b3:8080"]
