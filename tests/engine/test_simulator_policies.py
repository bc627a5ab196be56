"""Scenarios with the cluster's policies: the simulated leader applies them, so an operator
sees whether an isolation policy starves (or overloads) a broker group. The ``policies:`` section is
the bundle shape of engine.policies (``namespaceIsolationPolicies`` as ``ns-isolation-policy list``
prints NamespaceIsolationDataImpl)."""
import pytest

from engine.errors import InputError
from engine.simulator import parse_scenario, simulate

from .test_simulator_core import tiny

PIN = {"namespaceIsolationPolicies": {"pin": {
    "namespaces": ["t/ns"], "primary": ["b[01]"], "secondary": [],
    "auto_failover_policy": {"policy_type": "min_available", "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}}


def _last(r):
    b = r.brokers
    return b[b["minute"] == b["minute"].max()].set_index("broker")["bundles"].to_dict()


def test_isolation_policy_pins_the_namespace_and_starves_the_rest():
    free = simulate(*(lambda sc: (sc, sc.lb_config()))(parse_scenario(tiny(), "t.yaml")))
    assert sum(1 for n in _last(free).values() if n > 0) == 4
    sc = parse_scenario(tiny(policies=PIN), "t.yaml")
    assert sc.policies.summary() == "1 isolation policy"
    r = simulate(sc, sc.lb_config())
    last = _last(r)
    assert last["b2:8080"] == 0 and last["b3:8080"] == 0 and last["b0:8080"] + last["b1:8080"] == 16
    moved = r.events[r.events["kind"].isin(["unload", "assign"])]
    assert set(moved["destination"].dropna()) <= {"b0:8080", "b1:8080"}


def test_bad_policies_name_the_field():
    bad = {"namespaceIsolationPolicies": {"pin": dict(PIN["namespaceIsolationPolicies"]["pin"], primary=["b[0"])}}
    with pytest.raises(InputError) as ei:
        parse_scenario(tiny(policies=bad), "t.yaml")
    assert ei.value.field.startswith("policies.pin.primary[0]") and "invalid regex" in ei.value.message
    with pytest.raises(InputError, match="unknown key"):
        parse_scenario(tiny(policies={"isolation": {}}), "t.yaml")


def test_shipped_isolation_starvation_scenario():
    """samples/scenarios/isolation-starvation.yaml: payments only on its primaries broker-0/1 while both
    are up; once broker-1 leaves (1 primary < min_limit 2) it fails over to the secondary broker-2; the
    shared brokers broker-3..5 never get a payments bundle."""
    from engine.simulator import load_scenario

    sc = load_scenario("isolation-starvation")
    r = simulate(sc, sc.lb_config())
    ev = r.events
    pay = ev[ev["kind"].isin(["unload", "assign"]) & ev["bundle"].fillna("").str.startswith("acme/payments/")]
    before = set(pay[pay["minute"] < 30]["destination"].dropna())
    after = set(pay[pay["minute"] > 30]["destination"].dropna())
    assert before and before <= {"broker-0.example:8080", "broker-1.example:8080"}
    assert "broker-2.example:8080" in after and after <= {"broker-0.example:8080", "broker-2.example:8080"}
    b = r.brokers
    hot = b[(b["minute"] == 29)].set_index("broker")["usage"]
    assert hot["broker-1.example:8080"] > 3 * hot["broker-4.example:8080"]


def test_isolation_starvation_under_transfer_shedder():
    """The same scenario with TransferShedder's leader (ExtensibleLeader): its placement runs
    BrokerIsolationPoliciesFilter, so nothing of acme/payments lands outside broker-0/1 while both are up,
    and at broker-1's exit (1 primary < min_limit 2) it fails over to the secondary broker-2 only; acme/web
    (no policy) stays on the shared brokers. With loadBalancerSheddingBundlesWithPoliciesEnabled off the
    payments bundles are not even in the top-K lists, so TransferShedder never moves one; on, its
    transfers obey the same filter. Without the policies the same run spreads payments everywhere."""
    import dataclasses

    from engine.simulator import load_scenario, run_scenario

    sc = load_scenario("isolation-starvation")
    moved = {}
    for on in ("false", "true"):
        r = run_scenario(sc, strategy="TransferShedder", set={"loadBalancerSheddingBundlesWithPoliciesEnabled": on})
        ev = r.events[r.events["kind"].isin(["unload", "assign"])]
        pay = ev[ev["bundle"].fillna("").str.startswith("acme/payments/")]
        web = ev[ev["bundle"].fillna("").str.startswith("acme/web/")]
        assert set(pay[pay["minute"] < 30]["destination"].dropna()) == {"broker-0.example:8080", "broker-1.example:8080"}
        assert set(pay[pay["minute"] >= 30]["destination"].dropna()) <= {"broker-0.example:8080", "broker-2.example:8080"}
        assert "broker-2.example:8080" in set(pay[pay["minute"] >= 30]["destination"].dropna())
        assert not set(web["destination"].dropna()) & {"broker-0.example:8080", "broker-1.example:8080"}
        moved[on] = pay[pay["kind"] == "unload"]
    assert moved["false"].empty
    free = run_scenario(dataclasses.replace(sc, policies=None), strategy="TransferShedder")
    ev = free.events[free.events["kind"].isin(["unload", "assign"])]
    spread = set(ev[ev["bundle"].fillna("").str.startswith("acme/payments/") & (ev["minute"] < 30)]["destination"].dropna())
    assert len(spread) > 2


def test_top_k_reports_leave_out_policy_namespaces():
    """TopKBundles.update: a namespace with policies is not reported unless
    loadBalancerSheddingBundlesWithPoliciesEnabled (the simulator's vectorised top-K lists)."""
    import numpy as np

    from engine.config import LoadBalancerConfig
    from engine.extensible.sim_leader import top_k_reports

    names = ["t/pinned/0x00000000_0x80000000", "t/free/0x00000000_0x80000000"]
    stats = np.array([[10.0, 1e6, 10.0, 1e6], [5.0, 5e5, 5.0, 5e5]])
    args = (1, np.array([0, 0]), names, stats, np.array([1, 1]), np.array([1, 1]))
    pol = lambda ns: ns == "t/pinned"  # noqa: E731
    got = top_k_reports(*args, LoadBalancerConfig(), None, pol)
    assert [x.bundle_name for x in got[0]] == ["t/free/0x00000000_0x80000000"]
    on = LoadBalancerConfig().with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": True})
    assert len(top_k_reports(*args, on, None, pol)[0]) == 2
