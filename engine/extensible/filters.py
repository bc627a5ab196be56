"""The extensible load manager's broker filter pipeline and TransferShedder's ``transferable`` check.

Examples
--------
>>> from engine.config import LoadBalancerConfig
>>> from engine.extensible.broker_load_data import BrokerLoadData
>>> from engine.extensible.snapshot import ExtensibleLoadData
>>> data = ExtensibleLoadData({"a:8080": BrokerLoadData(topics=50000), "b:8080": BrokerLoadData(topics=49999)})
>>> ctx = FilterContext(data, LoadBalancerConfig())
>>> ctx.filter(["a:8080", "b:8080"], "t/n/0x00000000_0xffffffff").candidates   # topics >= max dropped
['b:8080']
>>> transferable(ctx, "t/n/0x00000000_0xffffffff", "b:8080", "a:8080")          # a is filtered out
False
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import LoadBalancerConfig
from ..javacompat import java_semver as semver
from ..model import bundle_namespace
from ..policy_hooks import ExtensiblePolicies
from ..results import FilterStep
from .snapshot import ExtensibleLoadData, extensible_config

__all__ = ["ExtensiblePolicies", "FilterContext", "FilterResult", "BrokerFilterError", "transferable",
           "topic_type_filter"]

class BrokerFilterError(Exception):
    """A filter failed (Pulsar's ``BrokerFilterException``), e.g. an unparsable broker version."""


@dataclass
class FilterResult:
    """Candidates after the pipeline, the steps that removed brokers, and a filter failure if any."""

    candidates: list
    steps: list = field(default_factory=list)  # FilterStep
    error: str | None = None


class FilterContext:
    """Runs the filter pipeline of ``ExtensibleLoadManagerImpl`` over one snapshot and config.

    Pipeline, in order: ``BrokerLoadManagerClassFilter`` (the broker's ``loadManagerClassName`` must
    equal the config's), ``BrokerMaxTopicCountFilter`` (drop brokers whose reported ``topics >=
    loadBalancerBrokerMaxTopics``; no load data counts as 0 topics; **no** fallback when every broker
    is dropped, unlike the modular filter), ``BrokerVersionFilter`` (with ``preferLaterVersions``, keep
    the highest version; an unparsable version is a filter failure: ``transferable`` is then false,
    while a placement goes on with what the other filters left, as ``selectAsync`` does), then the
    anti-affinity and isolation filters of :class:`ExtensiblePolicies`. The anti-affinity filter counts
    the owned bundles of the channel (``owners``): an assignment the leader has just made counts for
    the next one, as the channel's ownership entries do in Pulsar.

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.4. Config keys: ``loadManagerClassName`` (read through
    :func:`~engine.extensible.snapshot.extensible_config`: a modular class name counts as
    ExtensibleLoadManagerImpl), ``loadBalancerBrokerMaxTopics``, ``preferLaterVersions``. The
    bundle-independent part of the pipeline is computed once per context (one context per shedding
    cycle or placement).
    """

    def __init__(self, data: ExtensibleLoadData, conf: LoadBalancerConfig,
                 policies: ExtensiblePolicies | None = None, owners=None):
        self.data, self.conf = data, extensible_config(conf)
        #: ``owners() -> {bundle: broker}``: the service-unit channel as the leader sees it now (its own
        #: assignments and unloads included); the snapshot's owners when not given
        self.owners = owners if owners is not None else data.owners
        self.policies = policies or ExtensiblePolicies()
        if hasattr(self.policies, "bind_conf"):
            self.policies.bind_conf(self.conf)  # failureDomainsEnabled
        self._base: dict = {}
        self.available = data.available_brokers  # HashMap order of the broker registry


    def _static(self, brokers: tuple) -> FilterResult:
        got = self._base.get(brokers)
        if got is not None:
            return got
        conf, data = self.conf, self.data
        c = list(brokers)
        steps = []
        kept = [b for b in c if data.lookup_data(b).load_manager_class_name == conf.loadManagerClassName]
        if len(kept) != len(c):
            steps.append(FilterStep(f"BrokerLoadManagerClassFilter (loadManagerClassName = "
                                    f"{conf.loadManagerClassName.rsplit('.', 1)[-1]})", kept, c))
        c = kept
        mx = conf.loadBalancerBrokerMaxTopics
        store = data.broker_load_data
        kept = [b for b in c if (store[b].topics if b in store else 0) < mx]
        if len(kept) != len(c):
            steps.append(FilterStep(f"BrokerMaxTopicCountFilter (topics >= {mx} dropped)", kept, c,
                                    "no fallback: the extensible filter may leave no broker" if not kept else ""))
        c = kept
        error = None
        if conf.preferLaterVersions and c:
            vers, names = [], []
            for b in c:
                v = data.lookup_data(b).broker_version or ""
                sv = semver(v)
                if sv is None:
                    error = f"BrokerVersionFilter failed: cannot parse the version {v!r} of {b}"
                    break
                vers.append(sv)
                names.append(v)
            if error is None:
                # the latest by the build-aware order; kept: the versions equal to it, without their build
                # metadata (java-semver 0.9) or with it (0.10, pulsar-broker 5.0)
                i = max(range(len(vers)), key=lambda j: vers[j])
                exact = conf.has("version_filter_build_metadata")
                top = vers[i] if exact else vers[i][0]
                kept = [b for b, v in zip(c, vers) if (v if exact else v[0]) == top]
                if len(kept) != len(c):
                    steps.append(FilterStep(f"BrokerVersionFilter (latest {names[i]})", kept, c))
                c = kept
            else:
                steps.append(FilterStep("BrokerVersionFilter", c, c, error + " (it removes nothing)"))
        res = FilterResult(c, steps, error)
        self._base[brokers] = res
        return res

    def filter(self, brokers: list, bundle: str, non_persistent: bool = False) -> FilterResult:
        """Run the whole pipeline on ``brokers`` (kept in the given order) for ``bundle``.

        ``non_persistent``: the lookup is for a non-persistent topic (Pulsar's bundle then has
        ``hasNonPersistentTopic``); for a namespace without an isolation policy the
        ``BrokerIsolationPoliciesFilter`` keeps only brokers with ``nonPersistentTopicsEnabled``
        (``persistentTopicsEnabled`` for any other bundle, unloads and transfers included)."""
        base = self._static(tuple(brokers))
        c = base.candidates
        steps = list(base.steps)
        p = self.policies
        explain = getattr(p, "explain_anti_affinity", None)
        if explain is not None:  # engine.policies: one step per rule, each removal with its reason
            c2, more = explain(list(c), bundle, self.data, owners=self.owners)
            steps += [FilterStep(f"AntiAffinityGroupPolicyFilter: {n}", a, b, reasons=r) for n, a, b, r in more]
        else:
            c2 = p.anti_affinity_filter(list(c), bundle, self.data)
            if len(c2) != len(c):
                steps.append(FilterStep("AntiAffinityGroupPolicyFilter", c2, c))
        explain = getattr(p, "explain_isolation", None)
        if explain is not None:
            c3, name, reasons = explain(list(c2), bundle, self.data, non_persistent=non_persistent)
            if len(c3) != len(c2) or p.cp.policy_for(bundle_namespace(bundle)) is not None:
                steps.append(FilterStep(f"BrokerIsolationPoliciesFilter: {name}", c3, c2, reasons=reasons))
        else:
            c3 = p.isolation_filter(list(c2), bundle, self.data)
            if len(c3) != len(c2):
                steps.append(FilterStep("BrokerIsolationPoliciesFilter", c3, c2))
            if not p.has_policies(bundle_namespace(bundle)):  # no isolation policy: the topic-type rule
                c4, reasons = topic_type_filter(c3, self.data, non_persistent)
                if len(c4) != len(c3):
                    steps.append(FilterStep("BrokerIsolationPoliciesFilter: brokers serving the topic type",
                                            c4, c3, reasons=reasons))
                c3 = c4
        return FilterResult(list(c3), steps, base.error)


def topic_type_filter(brokers: list, data: ExtensibleLoadData, non_persistent: bool = False) -> tuple[list, dict]:
    """``applyNamespacePolicies`` for a namespace without an isolation policy: a broker is kept when its
    ``BrokerLookupData`` enables the bundle's topic type (``nonPersistentTopicsEnabled`` for a
    non-persistent topic's lookup, else ``persistentTopicsEnabled``). Returns (kept, reasons)."""
    key = "nonPersistentTopicsEnabled" if non_persistent else "persistentTopicsEnabled"
    kept, reasons = [], {}
    for b in brokers:
        look = data.lookup_data(b)
        if look.non_persistent_topics_enabled if non_persistent else look.persistent_topics_enabled:
            kept.append(b)
        else:
            reasons[b] = f"{key} is false: it does not serve the bundle's topic type"
    return kept, reasons


def transferable(ctx: FilterContext, bundle: str, src: str, dst: str | None) -> bool:
    """TransferShedder's ``isTransferable(bundle, src, dst)`` (§8.4).

    False when the namespace has policies and ``loadBalancerSheddingBundlesWithPoliciesEnabled`` is
    off, when a filter fails, or when ``dst`` is given but filtered out. Otherwise, once ``src`` is
    removed from the filtered available brokers: some candidate is left (no ``dst``, or
    ``loadBalancerTransferEnabled`` off), or ``dst`` is among them.
    """
    conf = ctx.conf
    if ctx.policies.has_policies(bundle_namespace(bundle)) and not conf.loadBalancerSheddingBundlesWithPoliciesEnabled:
        return False
    res = ctx.filter(ctx.available, bundle)
    if res.error:
        return False
    cands = set(res.candidates)
    if dst is not None and dst not in cands:
        return False
    cands.discard(src)
    if dst is None or not conf.loadBalancerTransferEnabled:
        return bool(cands)
    return dst in cands
