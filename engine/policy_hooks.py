"""The extensible load manager's namespace-policy hook, :class:`ExtensiblePolicies` (no policies by
default). A leaf: :mod:`engine.extensible.filters` (the filter pipeline that calls it, and re-exports it)
and :mod:`engine.policies` (the cluster's real policies, a subclass) both import it from here, so the
policies never import the extensible package.
"""
from __future__ import annotations

__all__ = ["ExtensiblePolicies"]


class ExtensiblePolicies:
    """Hook for namespace isolation and anti-affinity policies (none by default).

    Subclass and override to model ``AntiAffinityGroupPolicyFilter`` and
    ``BrokerIsolationPoliciesFilter`` and which namespaces carry such policies (their bundles are left
    out of top-K reports and are not transferable unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``). The cluster's real policies are
    :class:`engine.policies.ExtensibleClusterPolicies` (picked by ``ExtensibleLoadManager`` when the snapshot
    carries them); its ``explain_*`` methods give :class:`~engine.extensible.filters.FilterContext` one step
    per rule with a reason per removed broker.
    """

    def has_policies(self, namespace: str) -> bool:
        """The namespace has isolation policies or an anti-affinity group."""
        return False

    def anti_affinity_filter(self, brokers: list, bundle: str, data: "ExtensibleLoadData") -> list:
        return brokers

    def isolation_filter(self, brokers: list, bundle: str, data: "ExtensibleLoadData") -> list:
        return brokers
