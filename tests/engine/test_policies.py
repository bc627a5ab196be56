"""Namespace isolation, anti-affinity groups and failure domains (engine.policies).

Most cases are transcribed from upstream tests (each cites its test method); the inputs are in the
shapes Pulsar serialises: ``NamespaceIsolationDataImpl`` (``ns-isolation-policy list``),
``FailureDomainImpl`` (``clusters list-failure-domains``), ``LocalPolicies.namespaceAntiAffinityGroup``
(``/admin/local-policies/<tenant>/<ns>``) and ``Policies.antiAffinityGroup``.
"""
import io
import json
import zipfile

import numpy as np
import pytest

from engine.config import LoadBalancerConfig
from engine.errors import InputError
from engine.extensible import ExtensibleLoadManager, FilterContext, transferable
from engine.io import load_data_from_json, load_snapshot_bytes
from engine.load_manager import ModularLoadManager
from engine.policies import (
    POLICY_KEY,
    ClusterPolicies,
    ExtensibleClusterPolicies,
    anti_affinity,
    anti_affinity_should_unload,
    apply_isolation,
    attach,
    classify_policy_json,
    policies_from_zip,
    read_isolation_policies,
    read_policies_json,
)
from engine.synth import make_snapshot

from .extensible._clusters import CFG as XCFG
from .extensible._clusters import cluster

# NamespaceIsolationPolicyImplTest.defaultPolicyJson (the shape Jackson writes)
DEFAULT_POLICY = {"namespaces": ["pulsar/use/test.*"], "primary": ["prod1-broker[1-3].messaging.use.example.com"],
                  "secondary": ["prod1-broker.*.use.example.com"],
                  "auto_failover_policy": {"policy_type": "min_available",
                                           "parameters": {"min_limit": "3", "usage_threshold": "90"}}}


def _iso(primary, secondary, min_limit, ns="my-tenant/my-ns"):
    return ClusterPolicies(isolation=read_isolation_policies({"p": {
        "namespaces": [ns], "primary": primary, "secondary": secondary,
        "auto_failover_policy": {"policy_type": "min_available",
                                 "parameters": {"min_limit": min_limit, "usage_threshold": 80}}}}))


# ------------------------------------------------------------------------------------ reading
def test_is_primary_or_secondary_broker():
    """NamespaceIsolationPolicyImplTest.testIsPrimaryOrSecondaryBroker / testGetPrimaryBrokers."""
    p = read_isolation_policies({"default": DEFAULT_POLICY})["default"]
    assert p.primary == ["prod1-broker[1-3].messaging.use.example.com"]
    assert p.is_primary("prod1-broker2.messaging.use.example.com")
    assert not p.is_primary("prod1-broker5.messaging.use.example.com")
    assert p.is_secondary("prod1-broker5.messaging.use.example.com")
    assert not p.is_secondary("broker-X.messaging.use.example.com")
    assert p.matches_namespace("pulsar/use/testns-1") and not p.matches_namespace("no/such/namespace")
    assert (p.min_limit, p.usage_threshold) == (3, 90)


def test_min_available_should_failover():
    """MinAvailablePolicyTest.testMinAvailablePolicty: MinAvailablePolicy(3, 10) fails over below 3."""
    p = _iso(["x"], [], "3").policy_for("my-tenant/my-ns")
    assert not p.should_failover(15) and not p.should_failover(3) and p.should_failover(2)


def test_bad_policy_names_the_field():
    bad = json.loads(json.dumps(DEFAULT_POLICY))
    bad["primary"] = ["broker[1-"]
    with pytest.raises(InputError, match=r"field p\.primary\[0\].*invalid regex"):
        read_isolation_policies({"p": bad}, "iso.json")
    bad = json.loads(json.dumps(DEFAULT_POLICY))
    del bad["auto_failover_policy"]["parameters"]["min_limit"]
    with pytest.raises(InputError, match="min_limit"):
        read_isolation_policies({"p": bad}, "iso.json")
    bad["auto_failover_policy"] = {"policy_type": "other", "parameters": {}}
    with pytest.raises(InputError, match="min_available"):
        read_isolation_policies({"p": bad}, "iso.json")


def test_exponential_regex_is_refused():
    bad = json.loads(json.dumps(DEFAULT_POLICY))
    bad["primary"] = ["(broker-[0-9]+)+x"]
    with pytest.raises(InputError, match="exponential"):
        read_isolation_policies({"p": bad}, "iso.json")


def test_classify_each_upstream_shape():
    assert classify_policy_json({"p1": DEFAULT_POLICY}) == "isolation"
    assert classify_policy_json({"domain-0": {"brokers": ["b0:8080"]}}) == "failure-domains"
    assert classify_policy_json({"t/ns": "g"}) == "anti-affinity"
    assert classify_policy_json({"t/ns": {"namespaceAntiAffinityGroup": "g"}}) == "anti-affinity"
    assert classify_policy_json({"brokers": {"a:8080": {}}}) is None  # a LoadData snapshot
    cp = read_policies_json({"t/a": {"antiAffinityGroup": "g1"}, "t/b": {"namespaceAntiAffinityGroup": ""},
                             "t/c": "g1"}, "aa.json")
    assert cp.anti_affinity == {"t/a": "g1", "t/c": "g1"}


def test_zookeeper_dump_nodes_and_loose_files():
    """The nodes at their metadata-store paths: ClusterResources (namespaceIsolationPolicies,
    failureDomain/<d>), LocalPoliciesResources (/admin/local-policies) and NamespaceResources
    (/admin/policies, the older antiAffinityGroup field)."""
    ld = make_snapshot({"b0:8080": dict(cpu=10), "b1:8080": dict(cpu=20)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for b, bd in ld.brokers.items():
            z.writestr(f"loadbalance/brokers/{b}", json.dumps(bd.local.to_json()))
        z.writestr("admin/clusters/c1/namespaceIsolationPolicies", json.dumps({"p1": DEFAULT_POLICY}))
        z.writestr("admin/clusters/c1/failureDomain/domain-0", json.dumps({"brokers": ["b0:8080"]}))
        z.writestr("admin/local-policies/t/ns1", json.dumps({"namespaceAntiAffinityGroup": "g"}))
        z.writestr("admin/policies/t/ns2", json.dumps({"antiAffinityGroup": "g", "deleted": False}))
        z.writestr("admin/policies/t/ns1", json.dumps({"antiAffinityGroup": "old"}))
    raw = buf.getvalue()
    cp = policies_from_zip(raw, "dump.zip")
    assert set(cp.isolation) == {"p1"} and cp.failure_domains == {"domain-0": ["b0:8080"]}
    assert cp.anti_affinity == {"t/ns1": "g", "t/ns2": "g"}  # the local policies win
    snap = load_snapshot_bytes(raw, "dump.zip")
    assert snap.cluster_policies.summary().startswith("1 isolation policy")


def test_load_data_json_carries_the_bundle():
    ld = make_snapshot({"b0:8080": dict(cpu=10)})
    obj = ld.to_json()
    obj[POLICY_KEY] = {"namespaceIsolationPolicies": {"p1": DEFAULT_POLICY}, "antiAffinityGroups": {"t/a": "g"}}
    back = load_data_from_json(obj, "x.json")
    assert set(back.cluster_policies.isolation) == {"p1"} and back.cluster_policies.group_of("t/a") == "g"
    obj[POLICY_KEY] = {"namespaceIsolationPolicies": {"p1": {"namespaces": []}}}
    with pytest.raises(InputError, match="x.json"):
        load_data_from_json(obj, "x.json")


def test_cluster_policies_give_each_load_manager_its_hook():
    from engine.placement.base import NamespacePolicies
    from engine.policies import ModularPolicies
    from engine.policy_hooks import ExtensiblePolicies

    cp = _iso(["b1.*"], [], "1")
    mod, ext = cp.modular(), cp.extensible()
    assert type(mod) is ModularPolicies and mod.cp is cp
    assert type(ext) is ExtensibleClusterPolicies and ext.cp is cp
    empty = ClusterPolicies()
    assert type(empty.modular()) is NamespacePolicies and type(empty.extensible()) is ExtensiblePolicies
    # the snapshot's policies reach the modular load manager as the same hook
    ld = attach(make_snapshot({"b1:8080": dict(cpu=10), "b2:8080": dict(cpu=10)}), cp)
    lm = ModularLoadManager(ld, LoadBalancerConfig())
    assert type(lm.policies) is ModularPolicies and lm.policies.cp is cp


# ------------------------------------------------------------------------------------ isolation
def _filter(cp, brokers, ns="my-tenant/my-ns"):
    return set(apply_isolation(cp, ns, brokers, lambda b: True)[0])


def test_primary_and_secondary_brokers_with_min_limit():
    """BrokerIsolationPoliciesFilterTest.testFilterWithNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers
    (primary=broker1, secondary=broker2, shared=broker3)."""
    cp = _iso(["broker1"], ["broker2"], "1")
    assert _filter(cp, ["broker1:8080", "broker2:8080", "broker3:8080"]) == {"broker1:8080"}
    assert _filter(cp, ["broker2:8080", "broker3:8080"]) == {"broker2:8080"}
    assert _filter(cp, ["broker3:8080"]) == set()
    cp = _iso(["broker1"], ["broker2"], "2")
    assert _filter(cp, ["broker1:8080", "broker2:8080", "broker3:8080"]) == {"broker1:8080", "broker2:8080"}
    assert _filter(cp, ["broker2:8080", "broker3:8080"]) == {"broker2:8080"}
    assert _filter(cp, ["broker3:8080"]) == set()


def test_namespace_isolation_policies_for_primary_and_secondary_brokers():
    """ModularLoadManagerImplTest.testNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers, with the
    policy JSON exactly as the test formats it (min_limit a JSON number) and real regex matching."""
    template = ('{"namespaces":["%s/%s/%s.*"],"primary":["%s"],"secondary":["%s"],"auto_failover_policy":'
                '{"policy_type":"min_available","parameters":{"min_limit":%s,"usage_threshold":80}}}')
    b1, b2, shared = "localhost0:8080", "localhost1:8080", "broker3:8080"
    ns = "my-property/use/my-ns"

    def cands(min_limit, available):
        obj = json.loads(template % ("my-property", "use", "my-ns", "localhost0", "localhost1", min_limit))
        cp = ClusterPolicies(isolation=read_isolation_policies({"my-ns-isolation-policies": obj}))
        return set(apply_isolation(cp, ns, available, lambda b: True)[0])

    assert cands(1, [shared, b1, b2]) == {b1}
    assert cands(1, [shared, b2]) == {b2}
    assert cands(1, [shared]) == set()
    assert cands(2, [shared, b1, b2]) == {b1, b2}
    assert cands(2, [shared, b2]) == {b2}
    assert cands(2, [shared]) == set()


def test_shared_brokers_and_topic_type_without_policy():
    """BrokerIsolationPoliciesFilterTest.testFilterWithPersistentOrNonPersistentDisabled and
    NamespaceIsolationPolicies.isSharedBroker: a namespace without a policy avoids every broker some
    policy names as primary, and brokers that do not take its topic type."""
    cp = _iso(["broker1"], ["broker2"], "1")
    kept, name, reasons = apply_isolation(cp, "other/ns", ["broker1:8080", "broker2:8080", "broker3:8080"],
                                          lambda b: b != "broker3:8080")
    assert kept == ["broker2:8080"]
    assert "primary broker of isolation policy `p`" in reasons["broker1:8080"]
    assert "topic type" in reasons["broker3:8080"]
    assert _filter(ClusterPolicies(), ["a:1", "b:1"], "any/ns") == {"a:1", "b:1"}


def test_select_broker_explains_the_isolation():
    """ModularLoadManagerImpl.selectBroker: applyNamespacePolicies first; the step names the policy and
    every excluded broker says why (e.g. "broker-7 excluded ... isolated to primary brokers")."""
    spec = {f"broker-{i}:8080": dict(cpu=10 + 5 * i) for i in range(8)}
    ld = attach(make_snapshot(spec), _iso(["broker-[0-3].*"], [], "1", ns="tenant/ns"))
    lm = ModularLoadManager(ld, seed=1)
    for _ in range(6):
        dec = lm.select_broker("tenant/ns/0x00000000_0xffffffff")
        assert dec.broker in {f"broker-{i}:8080" for i in range(4)}
    step = dec.filters[0]
    assert "namespace isolation `p`" in step.name
    assert "isolated by policy `p` to primary brokers `broker-[0-3].*`" in step.reasons["broker-7:8080"]
    assert step.to_json()["reasons"]["broker-7:8080"] == step.reasons["broker-7:8080"]
    # a namespace without a policy only gets the shared brokers
    dec = lm.select_broker("other/ns/0x00000000_0xffffffff")
    assert dec.broker in {f"broker-{i}:8080" for i in range(4, 8)}


def test_load_shedding_with_namespace_isolation_policies():
    """ModularLoadManagerImplTest.testLoadSheddingWithNamespaceIsolationPolicies: two brokers on one host
    (localhost:8080, localhost:8081); no policy: true; isolated to a host no broker has ("localhost1"):
    false; isolated to "localhost": true (the other broker of the host can take it)."""
    ns, bundle = "my-tenant/use/my-ns", "my-tenant/use/my-ns/0x00000000_0xffffffff"
    spec = {"localhost:8080": dict(cpu=50, bundles={bundle: dict(rate=100, throughput=1e6)}),
            "localhost:8081": dict(cpu=10)}
    lm = ModularLoadManager(make_snapshot(spec))
    assert lm.policies.should_unload(bundle, "localhost:8080", lm.view) == (True, "")
    lm = ModularLoadManager(attach(make_snapshot(spec), _iso(["localhost1"], ["localhost1"], 1, ns=ns + ".*")))
    ok, why = lm.policies.should_unload(bundle, "localhost1:8080", lm.view)
    assert not ok and "shouldNamespacePoliciesUnload" in why
    lm = ModularLoadManager(attach(make_snapshot(spec), _iso(["localhost"], ["localhost"], 1, ns=ns + ".*")))
    assert lm.policies.should_unload(bundle, "localhost:8080", lm.view)[0]


# ------------------------------------------------------------------------------------ anti-affinity
def _group(n, group, prefix):
    return ClusterPolicies(anti_affinity={f"{prefix}{i}": group for i in range(n)})


def test_anti_affinity_filtering_with_domain():
    """AntiAffinityNamespaceGroupTest.testAntiAffinityNamespaceFilteringWithDomain."""
    prefix = "my-tenant/test/my-ns"
    cp = _group(5, "my-antiaffinity", prefix)
    cp.failure_domains = {"domain-0": ["brokerName-0", "brokerName-1"], "domain-1": ["brokerName-2", "brokerName-3"]}
    brokers = [f"brokerName-{i}" for i in range(4)]
    counts = {}

    def cands(i):
        return set(anti_affinity(cp, f"{prefix}{i}", brokers, counts, True)[0])

    assert cands(0) == set(brokers)
    counts["brokerName-0"] = 1  # ns0 -> b0
    assert cands(1) == {"brokerName-2", "brokerName-3"}
    counts["brokerName-2"] = 1  # ns1 -> b2
    assert cands(2) == {"brokerName-1", "brokerName-3"}
    counts["brokerName-1"] = 1  # ns2 -> b1
    assert cands(3) == {"brokerName-3"}
    counts["brokerName-3"] = 1  # ns3 -> b3
    assert cands(4) == set(brokers)


def test_anti_affinity_filtering_without_domain():
    """AntiAffinityNamespaceGroupTest.testAntiAffinityNamespaceFilteringWithoutDomain."""
    prefix = "my-tenant/test/my-ns-wo-domain"
    cp = _group(5, "my-antiaffinity-wo-domain", prefix)
    brokers = ["broker-0", "broker-1", "broker-2"]
    counts = {}
    assert anti_affinity(cp, prefix + "0", brokers, counts, False)[0] == brokers
    counts["broker-0"] = 1
    assert set(anti_affinity(cp, prefix + "1", brokers, counts, False)[0]) == {"broker-1", "broker-2"}
    counts["broker-1"] = 1
    assert anti_affinity(cp, prefix + "2", brokers, counts, False)[0] == ["broker-2"]
    counts["broker-2"] = 1
    assert anti_affinity(cp, prefix + "3", brokers, counts, False)[0] == brokers


def test_load_shedding_util_with_anti_affinity_namespace():
    """AntiAffinityNamespaceGroupTest.testLoadSheddingUtilWithAntiAffinityNamespace."""
    prefix = "my-tenant/test/my-ns-load-shedding-util"
    cp = _group(5, "my-antiaffinity-load-shedding-util", prefix)
    brokers = ["broker-0", "broker-1", "broker-2"]
    counts = {"broker-0": 1}
    assert anti_affinity_should_unload(cp, prefix + "0", "broker-0", brokers, counts)[0]
    counts["broker-1"] = 1
    assert anti_affinity_should_unload(cp, prefix + "0", "broker-0", brokers, counts)[0]
    counts["broker-2"] = 1
    ok, why = anti_affinity_should_unload(cp, prefix + "0", "broker-0", brokers, counts)
    assert not ok and "every candidate broker serves 1" in why


def test_broker_selection_for_anti_affinity_group():
    """AntiAffinityNamespaceGroupTest.testBrokerSelectionForAntiAffinityGroup: two namespaces of one
    group, failure domains domain1 = {broker1}, domain2 = {broker2}: placed on different brokers
    (through selectBrokerForAssignment, so the first preallocation counts for the second)."""
    ld = make_snapshot({"broker1:8080": dict(cpu=10), "broker2:8080": dict(cpu=10)})
    cp = ClusterPolicies(anti_affinity={"tenant/c/ns1": "group", "tenant/c/ns2": "group"},
                         failure_domains={"domain1": ["broker1:8080"], "domain2": ["broker2:8080"]})
    cfg = LoadBalancerConfig().with_values({"failureDomainsEnabled": True,
                                            "loadBalancerBrokerOverloadedThresholdPercentage": 400})
    for seed in range(4):
        lm = ModularLoadManager(attach(make_snapshot({"broker1:8080": dict(cpu=10), "broker2:8080": dict(cpu=10)}),
                                       cp), cfg, seed=seed)
        a = lm.select_broker_for_assignment("tenant/c/ns1/0x00000000_0xffffffff").broker
        dec = lm.select_broker_for_assignment("tenant/c/ns2/0x00000000_0xffffffff")
        assert dec.broker != a
        step = [f for f in dec.filters if "anti-affinity" in f.name][0]
        assert "failure domain" in step.reasons[a]
    assert ld.brokers  # the unattached snapshot has no policies
    assert ModularLoadManager(ld).policies.__class__.__name__ == "NamespacePolicies"


# ------------------------------------------------------------------------------------ extensible
def test_extensible_isolation_and_transfer_with_policies():
    """TransferShedderTest.testBundlesWithIsolationPolicies: a bundle of an isolated namespace is not
    transferable unless loadBalancerSheddingBundlesWithPoliciesEnabled; with it, only to a broker the
    isolation filter keeps (my-namespaceE isolated to broker5)."""
    data = cluster({f"broker{i}:8080": (0.1 * i, 1, None) for i in range(1, 6)})
    cp = _iso(["broker5"], [], "1", ns="my-tenant/my-namespaceE")
    b = "my-tenant/my-namespaceE/0x00000000_0x0FFFFFFF"
    pol = ExtensibleClusterPolicies(cp)
    assert not transferable(FilterContext(data, XCFG, pol), b, "broker4:8080", "broker5:8080")
    on = XCFG.with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": True})
    ctx = FilterContext(data, on, pol)
    assert transferable(ctx, b, "broker4:8080", "broker5:8080")
    assert not transferable(ctx, b, "broker4:8080", "broker1:8080")
    res = ctx.filter(data.available_brokers, b)
    assert res.candidates == ["broker5:8080"]
    step = res.steps[-1]
    assert step.name.startswith("BrokerIsolationPoliciesFilter") and "broker5" in step.reasons["broker1:8080"]
    lm = ExtensibleLoadManager(attach(data, cp), on, seed=2)
    assert lm.select_broker(b).broker == "broker5:8080"


def test_anti_affinity_group_policy_filter():
    """AntiAffinityNamespaceGroupExtensionTest.testAntiAffinityGroupPolicyFilter: a namespace without a
    group keeps every broker; the group's namespace, whose bundle the channel says a:8080 owns, loses
    a:8080 (counts come from the service-unit channel's owned bundles, per bundle)."""
    ns = "my-tenant/test/my-ns-filter"
    enabled = ns + "-antiaffinity-enabled"
    bundle = "0x00000000_0xffffffff"
    data = cluster({"a:8080": (0.1, 1, None), "b:8080": (0.2, 1, None), "c:8080": (0.3, 1, None)},
                   ownership={f"{enabled}/{bundle}": "a:8080"})
    cp = ClusterPolicies(anti_affinity={enabled: "my-antiaffinity-filter"})
    ctx = FilterContext(data, XCFG, ExtensibleClusterPolicies(cp))
    assert ctx.filter(data.available_brokers, f"{ns}/{bundle}").candidates == data.available_brokers
    res = ctx.filter(data.available_brokers, f"{enabled}/{bundle}")
    assert res.candidates == [b for b in data.available_brokers if b != "a:8080"]
    assert "anti-affinity group `my-antiaffinity-filter`" in res.steps[-1].reasons["a:8080"]


def test_policy_counts_are_arrays_of_the_view():
    spec = {"b0:8080": dict(cpu=10, bundles={"t/ns0/0x00000000_0xffffffff": dict(rate=1, throughput=1)}),
            "b1:8080": dict(cpu=10)}
    lm = ModularLoadManager(attach(make_snapshot(spec), _group(2, "g", "t/ns")))
    assert lm.policies.group_counts("t/ns1", lm.view) == {"b0:8080": 1}
    ix = lm.view.broker_index
    c, steps = lm.policies.explain_anti_affinity("t/ns1/0x00000000_0xffffffff", np.array([0, 1]), lm.view)
    assert c.tolist() == [ix["b1:8080"]] and len(steps) == 1


# ------------------------------------------------------------------------------------ command line
def test_place_with_policy_files(tmp_path, capsys):
    """`python -m engine place SNAPSHOT --policies isolation.json --policies domains.json`; a bad file
    exits 2 naming it."""
    from engine.cli import main
    from engine.io import save_snapshot

    snap = tmp_path / "snap.json"
    save_snapshot(make_snapshot({f"broker-{i}:8080": dict(cpu=10 + i) for i in range(6)}), snap)
    iso = tmp_path / "isolation.json"
    iso.write_text(json.dumps({"p": dict(DEFAULT_POLICY, namespaces=["t/pinned"], primary=["broker-[45]"])}))
    dom = tmp_path / "domains.json"
    dom.write_text(json.dumps({"zone-a": {"brokers": ["broker-4:8080"]}}))
    rc = main(["place", str(snap), "--bundle", "t/pinned/0x00000000_0xffffffff", "--policies", str(iso),
               "--policies", str(dom), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["broker"] in ("broker-4:8080", "broker-5:8080")
    assert "broker-0:8080" in d["filters"][0]["reasons"]
    rc = main(["place", str(snap), "--bundle", "t/pinned/0x00000000_0xffffffff", "--policies", str(iso)])
    assert "broker-0:8080 excluded: namespace t/pinned is isolated by policy `p`" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"p": dict(DEFAULT_POLICY, primary=[])}))
    rc = main(["place", str(snap), "--bundle", "t/pinned/0x00000000_0xffffffff", "--policies", str(bad)])
    assert rc == 2 and "bad.json" in capsys.readouterr().err


def test_transfer_shedder_leaves_policy_bundles_alone():
    """TopKBundles and TransferShedder.isTransferable on the isolation-groups sample: broker-0 only holds
    acme/payments-a bundles (isolated, anti-affinity). With loadBalancerSheddingBundlesWithPoliciesEnabled
    off they are not even in its top-K report (NoLoadData); on, the min broker broker-7 is outside the
    payments group, so none is transferable (NoBundles)."""
    from engine.samples import load_sample

    reasons = {}
    for on in (False, True):
        cfg = LoadBalancerConfig().with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": on,
                                                "loadBalancerSheddingConditionHitCountThreshold": 0})
        cyc = ExtensibleLoadManager(load_sample("isolation-groups"), cfg, seed=0).do_load_shedding()
        assert not cyc.unloads
        reasons[on] = cyc.reason.split(":")[0]
    assert reasons == {False: "NoLoadData", True: "NoBundles"}
