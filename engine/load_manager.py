"""The ModularLoadManager driver: ``selectBroker`` (placement pipeline) and ``doLoadShedding``.

Notes
-----
Pulsar file ``impl/ModularLoadManagerImpl.java`` (``pulsar-load-balancing.md`` §4). Config keys:
``loadBalancerEnabled``, ``loadBalancerSheddingEnabled``, ``loadBalancerSheddingIntervalMinutes``,
``loadBalancerSheddingGracePeriodMinutes``, ``loadBalancerDistributeBundlesEvenlyEnabled``,
``loadBalancerBrokerMaxTopics``, ``loadBalancerBrokerOverloadedThresholdPercentage`` (the overload
retry), ``loadBalancerSheddingExcludedNamespaces``, ``preferLaterVersions``, ``loadManagerClassName``,
plus every key the chosen strategies read.

Deliberate choices:

* Namespace isolation and anti-affinity policies are a hook (:class:`NamespacePolicies`); the default
  is "no policies", where every broker supporting the topic type is a candidate. A snapshot carrying
  the cluster's policies (``engine.policies``: isolation, anti-affinity groups, failure domains) gets
  :class:`engine.policies.ModularPolicies`, which applies them as ``LoadManagerShared`` does, each
  removal with its reason in the placement's filter steps.
* A broker whose report has no ``loadManagerClassName`` passes the load-manager-class filter.
* The unloads of one cycle are issued per broker in the key order of the strategy's Guava
  ``ArrayListMultimap`` (a ``HashMap``: table of 16 for up to 12 brokers, kept grown by the shedders that
  keep their multimap: :func:`unload_broker_rank`), then in selection order —
  what ``bundlesToUnload.asMap().forEach`` does. (The reference describes this as key insertion
  order; Guava's ``ArrayListMultimap`` is ``HashMap``-backed.)
* "Now" is the snapshot's own time; ``run_cycles`` advances it by one shedding interval per cycle.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

import numpy as np

from .config import LoadBalancerConfig
from .errors import InputError, UsageError
from .javacompat import hashmap_capacity, java_double_math, java_map_rank, java_semver
from .release_lines import modular_startup
from .model import BundleData, LoadData, bundle_namespace
from .placement.base import Int32Draws, NamespacePolicies, PlacementContext
from .placement.round_robin import RoundRobinBrokerSelector
from .results import (NO_BROKERS, Cycle, FilterStep, PlacementDecision, Unload, UnloadRows, UnloadTable, column_of,
                      open_cycle, share_reason)
from .cadence import forget_expired
from .strategies import make_placement, make_shedding, placement_name, registry, shedding_name
from .strategies.state import HoldsStrategyStates
from .view import LoadView, ViewBundle

__all__ = ["ModularLoadManager", "NamespacePolicies", "as_rng", "unload_broker_rank"]

#: shedders that keep one Guava ``ArrayListMultimap`` per instance and ``clear()`` it every cycle: its
#: ``HashMap`` keeps the largest table it ever grew to. AvgShedder (and any other) builds a new one each cycle.
_KEEPS_UNLOAD_MULTIMAP = frozenset({"OverloadShedder", "ThresholdShedder", "UniformLoadShedder"})


def unload_broker_rank(shedding, brokers: Sequence[str]) -> np.ndarray:
    """Where each broker (in the order the strategy first selected one of its bundles) comes when
    ``doLoadShedding`` walks the strategy's ``ArrayListMultimap``: a ``java.util.HashMap`` sized by Guava's
    ``Maps.newHashMapWithExpectedSize(12)`` (a table of 16, doubling past 0.75 full). A strategy that keeps
    its multimap across cycles keeps the grown table too (``clear()`` does not shrink it): remembered on the
    strategy instance."""
    keep = getattr(shedding, "name", None) in _KEEPS_UNLOAD_MULTIMAP
    start = max(16, int(getattr(shedding, "_unload_table", 16))) if keep else 16
    table = hashmap_capacity(len(brokers), initial=start)
    if keep:
        shedding._unload_table = table
    return java_map_rank(list(brokers), initial=table)


def as_rng(seed=None) -> np.random.Generator:
    """``seed`` may be ``None`` (0), an int or a ``numpy.random.Generator``."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(0 if seed is None else int(seed))


class _FilterError(Exception):
    pass


#: why an unload is skipped: no placement found a destination
NO_DESTINATION = "no broker available to unload the bundle to"


def _excluded(ns: str) -> str:
    """Why an unload of namespace ``ns`` is skipped: ``loadBalancerSheddingExcludedNamespaces`` names it."""
    return f"namespace {ns} is in loadBalancerSheddingExcludedNamespaces"


def _same_owner(broker: str) -> str:
    """Why an unload is skipped: its placement chose the broker that owns it."""
    return f"the destination broker {broker} is the same as the current owner"


class ModularLoadManager(HoldsStrategyStates):
    """The leader's load manager over one snapshot (or a sequence of them).

    Parameters
    ----------
    data : LoadData or LoadView
        The snapshot.
    config : LoadBalancerConfig, optional
        Pulsar 4.x defaults if omitted.
    seed : int or numpy.random.Generator, optional
        Randomness of the placement strategies (Pulsar uses ``ThreadLocalRandom``).
    shedding, placement : strategy instances, optional
        Override the strategies named in ``config`` (e.g. to carry state over).

    Examples
    --------
    >>> from engine.samples import load_sample
    >>> lm = ModularLoadManager(load_sample("yahoo-japan-3-brokers"))
    >>> cyc = lm.do_load_shedding()
    >>> [(u.broker, u.destination) for u in cyc.unloads][:1]  # doctest: +SKIP
    """

    @java_double_math
    def __init__(self, data, config: LoadBalancerConfig | None = None, *, seed=None, shedding=None,
                 placement=None, policies: NamespacePolicies | None = None, view: LoadView | None = None):
        self.config = config or LoadBalancerConfig()
        self.rng = as_rng(seed)
        if policies is None:  # the snapshot's own isolation / anti-affinity / failure-domain policies
            cp = getattr(data, "cluster_policies", None)
            policies = cp.modular() if cp is not None else NamespacePolicies()
        self.policies = policies
        if hasattr(policies, "bind"):
            policies.bind(self)
        self.recently_unloaded: dict[str, int] = {}
        self.preallocated: dict[str, dict[str, BundleData]] = {}
        self.preallocated_to_broker: dict[str, str] = {}
        self.cycles = 0
        #: what start-up made of the configured strategies on this release (e.g. a fallback), for every cycle
        self.notes: list[str] = []
        self._make_strategies(shedding, placement)
        self.round_robin = RoundRobinBrokerSelector()
        self.unload_bundle_count = 0
        self.unload_broker_count = 0
        self.view: LoadView
        self._ctx = None
        self._mask_key = None
        self._prealloc_version = 0
        self._prefix_cache = {}
        self._pipe_cache = {}
        self._pipe_last = None
        self._conf = None
        self._uw = None
        self._retry_cache = {}
        self.update(data, view=view)
        seeds = getattr(data, "strategy_state", None) or {}
        if seeds:
            if shedding is None and self.shedding.name in seeds:
                self.shedding.load_state(seeds[self.shedding.name])
            if placement is None and self.placement is not self.shedding and self.placement.name in seeds:
                self.placement.load_state(seeds[self.placement.name])

    # ------------------------------------------------------------------ wiring
    def _make_strategies(self, shedding, placement):
        cfg = self.config
        sname = shedding.name if shedding is not None else shedding_name(cfg.loadBalancerLoadSheddingStrategy)
        pname = placement.name if placement is not None else placement_name(cfg.loadBalancerLoadPlacementStrategy)
        if shedding is None and placement is None:  # what this release's initialize() makes of the pair
            sname, pname, note = modular_startup(sname, pname, cfg.release)
            if note:
                self.notes.append(note)
            if "AvgShedder" in (sname, pname) and cfg.has("avg_shedder_plans_by_name"):
                self.notes.append(f"Pulsar {cfg.pulsarVersion} keys AvgShedder's planned destinations by bundle name "
                                  f"and drops them after one unload attempt; Shedlab keys them by BundleData value "
                                  f"(as up to 4.0.13 / 4.2.4): a planned bundle's destination may differ")
        pspec = registry.spec(pname)
        if pspec.is_shedding and pname != sname:
            raise UsageError(
                f"loadBalancerLoadPlacementStrategy is {pname} but loadBalancerLoadSheddingStrategy is "
                f"{sname}: Pulsar {cfg.pulsarVersion} refuses to start (a placement strategy that is also a "
                "shedding strategy must be both keys)")
        self.shedding = shedding if shedding is not None else make_shedding(sname)
        if placement is not None:
            self.placement = placement
        elif pspec.is_shedding:
            self.placement = self.shedding  # the same instance plays both roles (§4.1)
        else:
            self.placement = make_placement(pname)

    @java_double_math
    def update(self, data, view: LoadView | None = None) -> None:
        """New load reports (a timeline step): rebuild the view and tell the strategies which
        brokers are active. Recently unloaded bundles and preallocations of the snapshot are merged
        with ours. ``view``: an already built view of ``data`` (e.g. cached by the dashboard)."""
        if isinstance(data, LoadData):
            view = view if view is not None else LoadView.from_load_data(data)
            for b, t in data.recently_unloaded.items():
                self.recently_unloaded[b] = max(int(t), self.recently_unloaded.get(b, 0))
            for bid, pre in data.preallocations().items():
                self.preallocated.setdefault(bid, {}).update(pre)
                for b in pre:
                    self.preallocated_to_broker[b] = bid
        elif isinstance(data, LoadView):
            view = data
        else:
            raise InputError(f"expected a LoadData or LoadView, got {type(data).__name__}")
        self.view = view
        self.now = int(view.now_ms)
        active = set(view.brokers)
        for b in list(self.preallocated):
            if b not in active:
                for x in self.preallocated.pop(b):
                    self.preallocated_to_broker.pop(x, None)
        self.shedding.on_active_brokers_change(active)
        if self.placement is not self.shedding:
            self.placement.on_active_brokers_change(active)
        # candidate set order: a HashSet<String> of the available brokers
        self._avail = np.argsort(java_map_rank(view.brokers), kind="stable").astype(np.int64)
        self._ctx = None

    def ctx(self) -> PlacementContext:
        if self._ctx is None or self._ctx.pre_rate is None or len(self._ctx.pre_rate) != self.view.nb:
            draws = None if self._ctx is None else self._ctx.draws  # (a cycle's draws go on)
            self._ctx = PlacementContext(self.rng, self.preallocated, draws=draws)
            self._ctx.prealloc_rate(self.view)
        return self._ctx

    @contextmanager
    def _cycle_draws(self, n: int):
        """The placement's random ints of a cycle placing ``n`` bundles taken at once
        (:class:`~engine.placement.base.Int32Draws`), for a strategy that draws one per placement;
        ``rng`` is left where one draw per call leaves it."""
        if n < 2 or not getattr(self.placement, "draws_int32", False) or self.ctx().draws is not None:
            yield
            return
        draws = self.ctx().draws = Int32Draws(self.rng, n)
        try:
            yield
        finally:
            draws.close()
            if self._ctx is not None:
                self._ctx.draws = None

    def state(self) -> dict:
        """Everything the leader remembers between cycles (the display form; the strategies' lossless
        values are :attr:`shedding_state` / :attr:`placement_state`)."""
        return {"shedding": self.shedding.state(),
                "placement": self.placement.state() if self.placement is not self.shedding else "same as shedding",
                "recently_unloaded": dict(self.recently_unloaded),
                "preallocated": {b: sorted(d) for b, d in self.preallocated.items() if d},
                "round_robin": self.round_robin.state()}

    # ------------------------------------------------------------------ placement (§4.2)
    def _apply_policies(self, bundle: str, non_persistent: bool) -> np.ndarray:
        return self.policies.candidates(bundle, self._avail, self.view, non_persistent)

    def _ns_counts(self, ns: str) -> np.ndarray:
        """BundleRangeCache: per broker, bundles of ``ns`` it reports plus those preallocated to it."""
        v = self.view
        counts = v.ns_counts(ns)
        extra = None
        for b, pre in self.preallocated.items():
            j = v.broker_index.get(b)
            if j is None:
                continue
            n = 0
            for x in pre:
                if bundle_namespace(x) == ns and not self._reports(j, x):
                    n += 1
            if n:
                if extra is None:
                    extra = counts.copy()
                extra[j] += n
        return counts if extra is None else extra

    def _reports(self, j: int, bundle: str) -> bool:
        k = self.view.bundle_index.get(bundle)
        return k is not None and bool(np.any(self.view.owned[j] == k))

    def _class_mask(self) -> np.ndarray:
        """Brokers passing the load-manager-class and version filters (cached per view and these two
        settings, on the view: every manager the Tuner builds on it reads them)."""
        key = (id(self.view), self.config.loadManagerClassName, self.config.preferLaterVersions)
        if self._mask_key != key:
            v, cfg = self.view, self.config
            kept = v.__dict__.setdefault("_class_masks", {})
            got = kept.get(key[1:])
            if got is None:
                ok = np.ones(v.nb, dtype=bool)
                vers = []
                for j, info in enumerate(v.broker_info or []):
                    if (info.load_manager_class_name is not None
                            and info.load_manager_class_name != cfg.loadManagerClassName):
                        ok[j] = False
                    if cfg.preferLaterVersions:
                        sv = java_semver(info.version or "")
                        vers.append(sv[0] if sv else None)  # precedence (build metadata does not count)
                got = kept[key[1:]] = (ok, vers, bool(ok.all()))
            self._mask_key = key
            self._mask, self._vers, self._mask_all = got
        return self._mask

    def _filter_pipeline(self, c: np.ndarray) -> np.ndarray:
        ok = self._class_mask()
        out = c if self._mask_all else c[ok[c]]  # the same array when nothing is filtered out
        if self.config.preferLaterVersions and len(out):
            # BrokerVersionFilter reads the versions of the candidates left, and gives up on the first it
            # cannot parse (selectBroker then restores the namespace-policy candidates)
            vers = [self._vers[j] for j in out.tolist()]
            for j, x in zip(out.tolist(), vers):
                if x is None:
                    raise _FilterError(f"cannot parse the version {self.view.broker_info[j].version!r} of "
                                       f"{self.view.brokers[j]}")
            top = max(vers)
            out = out[np.array([x == top for x in vers], dtype=bool)]
        return out

    def _idx(self, names) -> np.ndarray:
        v = self.view
        unknown = [b for b in names if b not in v.broker_index]
        if unknown:
            raise InputError(f"unknown broker(s): {', '.join(unknown)}", field="--candidates")
        return np.array([v.broker_index[b] for b in names], dtype=np.int64)

    def select_broker(self, bundle: str, *, candidates: Sequence[str] | None = None,
                      non_persistent: bool = False) -> PlacementDecision:
        """Pulsar's ``selectBroker(bundle)``: filters, strategy and the overload retry (§4.2).

        With ``candidates`` only the strategy runs, on exactly those brokers (in the given order).

        A bundle of ``loadBalancerSheddingExcludedNamespaces`` whose filtered candidates are those of
        the previous lookup, and whose round-robin pick is not overloaded, involves no arithmetic: it
        is answered here, outside the quiet-arithmetic entry (:func:`java_double_math`), whose own cost
        would be a sixth of such a lookup. Everything else goes through it.
        """
        if candidates is None:
            dec = self._round_robin_again(bundle, non_persistent)
            if dec is not None:
                return dec
        return self._select_broker(bundle, candidates, non_persistent)

    def _round_robin_again(self, bundle: str, non_persistent: bool):
        """The round-robin lookup of an excluded namespace's bundle when its candidates are the
        previous lookup's and the usage the overload retry reads is known; ``None`` otherwise."""
        conf, uw = self._conf, self._uw
        if conf is None or uw is None or not conf[1]:
            return None
        ns = bundle_namespace(bundle)
        if ns not in conf[1] or conf[0] is not self.config or uw[0] is not self.view or uw[1] is not self.config:
            return None
        last = self._kept_pipeline(ns, non_persistent)
        if last is None:
            return None
        ctx, note = self._ctx, conf[3].get(ns)
        if ctx is None or ctx.pre_rate is None or note is None:  # (the context is new with each view)
            return None
        steps, c, _ = last[5]
        dec = self.round_robin.select_broker(c, bundle, None, self.view, self.config, ctx)
        if dec.broker is None or uw[3][dec._j] > conf[2]:
            return self._round_robin_finish(dec, bundle, ns, non_persistent, list(steps), conf)
        dec.filters = last[6]  # one tuple of the steps for every such lookup
        dec.prefix_reason(note)
        return dec

    @java_double_math
    def _round_robin_finish(self, dec, bundle, ns, non_persistent, steps, conf) -> PlacementDecision:
        dec.filters = steps
        dec.prefix_reason(self._excluded_note(ns, conf))
        if dec.broker is None:
            return dec
        return self._overload_retry(dec, bundle, non_persistent, steps, None, conf)

    @staticmethod
    def _excluded_note(ns: str, conf) -> str:
        note = conf[3].get(ns)
        if note is None:
            note = conf[3][ns] = _excluded(ns) + ": "
        return note

    @java_double_math
    def _select_broker(self, bundle: str, candidates, non_persistent: bool, ns: str | None = None) -> PlacementDecision:
        if ns is None:
            ns = bundle_namespace(bundle)
        conf = self._conf_facts()
        if candidates is None and ns in conf[1]:
            return self._round_robin_lookup(bundle, ns, non_persistent, conf)
        v, cfg = self.view, self.config
        ctx = self.ctx()
        data = self._placement_data(bundle) if getattr(self.placement, "uses_bundle_data", True) else None
        if candidates is not None:
            c = self._idx(list(candidates))
            dec = self.placement.select_broker(c, bundle, data, v, cfg, ctx)
            dec.filters = [FilterStep("given candidates", c, names=v.brokers)]
            return dec
        steps, c, base = self._pipeline(bundle, ns, non_persistent, ctx)
        return self._strategy_then_retry(bundle, non_persistent, steps, c, data, ctx, conf)

    def _strategy_then_retry(self, bundle, non_persistent, steps, c, data, ctx, conf) -> PlacementDecision:
        """The placement strategy on the filtered candidates ``c``, then the overload retry."""
        dec = self.placement.select_broker(c, bundle, data, self.view, self.config, ctx)
        dec.filters = steps
        if dec.broker is None:
            return dec
        return self._overload_retry(dec, bundle, non_persistent, steps, data, conf)

    def _round_robin_lookup(self, bundle: str, ns: str, non_persistent: bool, conf) -> PlacementDecision:
        """A bundle of ``loadBalancerSheddingExcludedNamespaces``: round robin over the filtered
        candidates (it reads no bundle data), then the same overload retry."""
        ctx = self.ctx()
        steps, c, base = self._pipeline(bundle, ns, non_persistent, ctx)
        dec = self.round_robin.select_broker(c, bundle, None, self.view, self.config, ctx)
        return self._round_robin_finish(dec, bundle, ns, non_persistent, steps, conf)

    def _conf_facts(self) -> tuple:
        """``(config, excluded namespaces, overload threshold, {namespace: note})`` of the current
        configuration, read once per configuration object."""
        got = self._conf
        if got is None or got[0] is not self.config:
            cfg = self.config
            got = self._conf = (cfg, cfg.excluded_namespaces, cfg.overload_threshold, {})
        return got

    def _overload_retry(self, dec, bundle, non_persistent, steps, data, conf) -> PlacementDecision:
        """When the chosen broker's usage is above ``loadBalancerBrokerOverloadedThresholdPercentage``,
        the placement strategy again on every broker the namespace policies allow."""
        v = self.view
        self._usage_with_weight()
        j = getattr(dec, "_j", None)  # (a lean decision holds its broker's index)
        uw = self._uw[3][v.broker_index[dec.broker] if j is None else j]
        if not uw > conf[2]:
            return dec
        cfg, ctx, names = self.config, self.ctx(), v.brokers
        full = self._retry_candidates(bundle, non_persistent)
        if data is None and getattr(self.placement, "uses_bundle_data", True):
            data = self._placement_data(bundle)  # (round robin chose first and reads none)
        alt = self.placement.select_broker(full, bundle, data, v, cfg, ctx)
        first = dec.broker
        if alt.broker is not None:
            alt.filters = [*steps, FilterStep(
                f"{first} is overloaded ({uw * 100:.1f} % > "
                f"{cfg.loadBalancerBrokerOverloadedThresholdPercentage} %): retry with all brokers", full,
                names=names)]
            alt.retried, alt.first_choice = True, first
            alt.reason = f"first choice {first} overloaded ({uw * 100:.1f} %); retry: {alt.reason}"
            dec = alt
        return dec

    def _retry_candidates(self, bundle: str, non_persistent: bool) -> np.ndarray:
        """The overload retry's candidates (namespace policies only); without policies they depend on
        the topic type alone, so one array per view serves every retry of a cycle."""
        if self.policies.__class__ is not NamespacePolicies:
            return self._apply_policies(bundle, non_persistent)
        got = self._retry_cache.get(non_persistent)
        if got is None or got[0] is not self.view or got[1] is not self._avail:
            got = self._retry_cache[non_persistent] = (self.view, self._avail,
                                                       self._apply_policies(bundle, non_persistent))
        return got[2]

    def _usage_with_weight(self) -> np.ndarray:
        """The usage the overload retry reads (weighted from 4.0, see :meth:`LoadView.overload_usage`),
        looked up once per view and config."""
        got = self._uw
        if got is None or got[0] is not self.view or got[1] is not self.config:
            usage = self.view.overload_usage(self.config)
            got = self._uw = (self.view, self.config, usage, usage.tolist())  # (the list for one-broker reads)
        return got[2]

    def _pipeline(self, bundle: str, ns: str, non_persistent: bool, ctx):
        """The filter steps before the strategy: ``(steps, candidates, base)``; ``steps`` is a sequence
        its readers never change (a tuple shared by the bundles the answer is kept for).

        Without namespace policies and preallocations every step depends on the bundle only through
        its namespace (isolation, anti-affinity and the preallocated bundles' namespaces are what
        make it per bundle), and only the even-distribution step reads the namespace, so the result is
        kept per topic type (and per namespace while ``loadBalancerDistributeBundlesEvenlyEnabled``,
        and for ``pulsar/system``) for as long as the cached prefix (view, configuration,
        preallocation version) holds: the same steps, in Pulsar's order, and the same candidates as
        computing them again."""
        if self.policies.__class__ is not NamespacePolicies or self.preallocated:
            steps, c, base = self._pipeline_for(bundle, ns, non_persistent, ctx)
            return steps, c, base
        last = self._kept_pipeline(ns, non_persistent)
        if last is not None:
            got = last[5]
            return last[6], got[1], got[2]
        prefix = self._prefix(bundle, non_persistent, ctx)
        pc = self._pipe_cache
        if pc.get("prefix") is not prefix or pc.get("config") is not self.config:
            pc = self._pipe_cache = {"prefix": prefix, "config": self.config}
        # without the even-distribution step (and pulsar/system's own spread) nothing after the prefix
        # reads the namespace either: one entry serves every namespace
        key = (ns if self._spreads(ns) else None, non_persistent)
        got = pc.get(key)
        if got is None:
            got = pc[key] = self._pipeline_for(bundle, ns, non_persistent, ctx)
        steps = tuple(got[0])
        self._pipe_last = (self.view, self.config, self._prealloc_version, key[0], non_persistent, got, steps)
        return steps, got[1], got[2]

    def _kept_pipeline(self, ns: str, non_persistent: bool):
        """The previous :meth:`_pipeline` answer (``(view, config, preallocation version, namespace or
        ``None`` when no step read it, topic type, (steps, candidates, base), steps as a tuple)``) while
        nothing it depends on changed: no namespace policies, no preallocations, the same view,
        configuration and topic type, and the same namespace if a step read it (else any namespace no
        step reads); ``None`` otherwise."""
        last = self._pipe_last
        if (last is None or self.preallocated or self.policies.__class__ is not NamespacePolicies
                or last[0] is not self.view or last[1] is not self.config or last[2] != self._prealloc_version
                or last[4] != non_persistent):
            return None
        # (kept for any namespace: the configuration does not spread bundles evenly, so only
        # pulsar/system's own spread could read the namespace)
        if last[3] != ns and (last[3] is not None or (ns == "pulsar/system" and self._spreads(ns))):
            return None
        return last

    def _spreads(self, ns: str) -> bool:
        """Whether the even-distribution step runs for a bundle of ``ns`` (the one step that reads it)."""
        cfg = self.config
        return bool(cfg.loadBalancerDistributeBundlesEvenlyEnabled
                    or (ns == "pulsar/system" and cfg.has("system_namespace_spread")))

    def _pipeline_for(self, bundle: str, ns: str, non_persistent: bool, ctx):
        v, names = self.view, self.view.brokers
        steps, base, c = self._prefix(bundle, non_persistent, ctx)
        steps = list(steps)
        explain = getattr(self.policies, "explain_anti_affinity", None)
        if explain is not None:
            c, more = explain(bundle, c, v)
            steps += [FilterStep(n, a, b, names=names, reasons=r) for n, a, b, r in more]
        else:
            c2 = self.policies.anti_affinity_filter(bundle, c, v)
            if len(c2) != len(c):
                steps.append(FilterStep("anti-affinity", c2, c, names=names))
                c = c2
        if self._spreads(ns) and len(c):
            counts = self._ns_counts(ns)[c]
            m = int(counts.min())
            kept = c[counts == m]
            steps.append(FilterStep(f"distribute bundles evenly (fewest bundles of {ns}: {m})", kept, c,
                                    names=names))
            c = kept
        try:
            c2 = self._filter_pipeline(c)
            if len(c2) != len(c):
                steps.append(FilterStep("load manager class / version filters", c2, c, names=names))
            c = c2
        except _FilterError as exc:
            c = base
            steps.append(FilterStep("filter error: candidates restored", c, None, str(exc), names=names))
        if len(c) == 0:
            c = base
            steps.append(FilterStep("no candidate left: restored", c, None, names=names))
        return steps, c, base

    def _prefix(self, bundle: str, non_persistent: bool, ctx):
        """Namespace policies and the max-topics filter: the same for every bundle until a
        preallocation changes topic counts, so cached per (view, preallocation version)."""
        key = (self._prealloc_version, non_persistent, self.config)
        pc = self._prefix_cache
        if self.policies.__class__ is NamespacePolicies and pc.get("view") is self.view and pc.get("key") == key:
            return pc["value"]
        v, cfg, names = self.view, self.config, self.view.brokers
        steps = []
        explain = getattr(self.policies, "explain_candidates", None)
        if explain is not None:
            base, name, reasons = explain(bundle, self._avail, self.view, non_persistent)
            steps.append(FilterStep(name, base, self._avail, names=names, reasons=reasons))
        else:
            base = self._apply_policies(bundle, non_persistent)
            steps.append(FilterStep("available brokers (namespace policies, topic type)", base, self._avail,
                                    names=names))
        c = base
        mx = cfg.loadBalancerBrokerMaxTopics
        totals = v.num_topics + ctx.pre_topics
        kept = c[totals[c] <= mx]
        if len(kept):
            if len(kept) != len(c):
                steps.append(FilterStep(f"loadBalancerBrokerMaxTopics <= {mx}", kept, c, names=names))
            c = kept
        elif len(c):
            steps.append(FilterStep(f"loadBalancerBrokerMaxTopics <= {mx}", c, c,
                                    "every broker is over the limit: filter ignored", names=names))
        value = (tuple(steps), base, c)
        self._prefix_cache = {"view": self.view, "key": key, "value": value}
        return value

    def prune_preallocations(self, view: LoadView | None = None) -> None:
        """Drop preallocations the brokers now report (``updateBundleData``'s rule: the bundle is in
        a broker's report and has bundle data). Pulsar's other rule ("not owned by the leader") has
        no signal in a snapshot and is not applied."""
        v = view if view is not None else self.view
        if not self.preallocated_to_broker:
            return
        listed = np.zeros(v.nk, dtype=bool)
        for o in v.owned:
            listed[o] = True
        idx = v.bundle_index
        for b, pre in list(self.preallocated.items()):
            for x in list(pre):
                k = idx.get(x)
                if k is not None and listed[k] and v.in_bundle_data[k]:
                    del pre[x]
                    if self.preallocated_to_broker.get(x) == b:
                        del self.preallocated_to_broker[x]
            if not pre:
                del self.preallocated[b]
        self._ctx = None  # preallocation sums changed
        self._prealloc_version += 1

    def _placement_data(self, bundle: str):
        """What a placement strategy gets as the bundle's data: for a bundle of the view a
        :class:`~engine.view.ViewBundle` (its ``value_key()`` without building the object), else
        the preallocated or default ``BundleData``."""
        i = self.view.bundle_index.get(bundle)
        if i is not None and self.view.in_bundle_data[i]:
            return ViewBundle(self.view, i)
        return self._bundle_data(bundle)

    def _bundle_data(self, bundle: str) -> BundleData:
        i = self.view.bundle_index.get(bundle)
        if i is not None and self.view.in_bundle_data[i]:
            return self.view.bundle_data(bundle)
        for pre in self.preallocated.values():
            if bundle in pre:
                return pre[bundle]
        return self.view.bundle_data(bundle)  # Pulsar's default (§2.4)

    @java_double_math
    def select_broker_for_assignment(self, bundle: str, non_persistent: bool = False) -> PlacementDecision:
        """A new or orphaned bundle's lookup: an existing preallocation, else ``selectBroker`` and
        preallocate the bundle on the chosen broker."""
        b = self.preallocated_to_broker.get(bundle)
        if b is not None and b in self.view.broker_index:
            dec = PlacementDecision(bundle, "preallocation", broker=b)
            dec.reason = f"already preallocated to {b}"
            dec.preallocated = True
            return dec
        dec = self.select_broker(bundle, non_persistent=non_persistent)
        if dec.broker is not None:
            d = self._bundle_data(bundle)
            self.preallocated.setdefault(dec.broker, {})[bundle] = d
            self.preallocated_to_broker[bundle] = dec.broker
            ctx = self.ctx()
            j = self.view.broker_index[dec.broker]
            ctx.pre_rate[j] += d.long_term.msg_rate_in + d.long_term.msg_rate_out
            ctx.pre_topics[j] += d.topics
            ctx.pre_version += 1
            self._prealloc_version += 1
            dec.preallocated = True
        return dec

    # ------------------------------------------------------------------ shedding (§4.3)
    @java_double_math
    def do_load_shedding(self, now: int | None = None) -> Cycle:
        """One ``doLoadShedding`` at ``now`` (the snapshot's time by default)."""
        cfg, v = self.config, self.view
        cyc = open_cycle(self, now)
        if cyc.reason:
            return cyc
        if v.nb <= 1:
            cyc.reason = f"{v.nb} available broker(s): nothing to balance"
            cyc.skip_code = NO_BROKERS
            return cyc
        self.recently_unloaded = forget_expired(self.recently_unloaded, self.now,
                                                cfg.loadBalancerSheddingGracePeriodMinutes)
        # strategy.run(view, conf, recently, state) from the state this manager last left it in: the
        # working memory goes on as it is, so no state value is built before or after the cycle (on
        # AvgShedder that is a copy of every plan; lm.shedding_state builds one when asked)
        res = self.shedding.find_bundles_for_unloading(v, cfg, self.recently_unloaded)
        if self.notes:
            res.notes.extend(n for n in self.notes if n not in res.notes)
        cyc.shedding = res
        by_broker: dict[str, list] = {}
        for p, b in enumerate(column_of(res.selected, "broker")):
            by_broker.setdefault(b, []).append(p)
        keys = list(by_broker)
        rank = unload_broker_rank(self.shedding, keys)
        order = [p for bi in np.argsort(rank).tolist() for p in by_broker[keys[bi]]]  # positions in selected
        many = getattr(self.placement, "select_many", None)
        with self._cycle_draws(len(res.selected)):
            if many is not None and self.policies.__class__ is NamespacePolicies and not self.preallocated:
                self._unload_many(cyc, res, order, many)
            else:
                self._unload_each(cyc, [res.selected[p] for p in order])
        self.unload_bundle_count += len(cyc.unloads)
        self.unload_broker_count += len(set(column_of(cyc.unloads, "broker")))
        if cyc.unloads:
            cyc.reason = res.reason
        elif res.selected:
            cyc.reason = "selected bundles were not unloaded: " + "; ".join(
                sorted({x for x in column_of(cyc.skipped, "skipped") if x}))
        else:
            cyc.reason = res.reason or "nothing to unload"
        return cyc

    def _unload_each(self, cyc: Cycle, order: list) -> None:
        """The selections in the order the leader walks them: skipped (an excluded namespace, a policy,
        no destination or the same broker) or unloaded to the placement's choice."""
        excluded, v = self._conf_facts()[1], self.view
        place = self._cycle_placer()
        for s in order:
            ns = bundle_namespace(s.bundle)
            u = self._opened(cyc, s, ns, excluded)
            if u is None:
                continue
            ok, why = self.policies.should_unload(s.bundle, s.broker, v)
            if not ok:
                u.skipped = why
                cyc.skipped.append(u)
                continue
            self._placed(cyc, u, place(s.bundle, ns))  # (not an excluded namespace's)

    @staticmethod
    def _opened(cyc: Cycle, s, ns: str, excluded) -> Unload | None:
        """The unload of selection ``s`` (of namespace ``ns``), processed; ``None`` when it is skipped as
        a namespace of ``loadBalancerSheddingExcludedNamespaces``."""
        u = Unload(s.broker, s.bundle, None, "", s.msg_rate, s.throughput)
        share_reason(u, s)
        cyc.processed.append(u)
        if ns in excluded:
            u.skipped = _excluded(ns)
            cyc.skipped.append(u)
            return None
        return u

    def _placed(self, cyc: Cycle, u: Unload, dec: PlacementDecision) -> bool:
        """Unload ``u`` with its placement: issued (True), or skipped without a destination or to its own
        broker."""
        u.placement = dec
        if dec.broker is None:
            u.skipped = NO_DESTINATION
            cyc.skipped.append(u)
            return False
        u.destination = dec.broker
        if dec.broker == u.broker:
            u.skipped = _same_owner(u.broker)
            cyc.skipped.append(u)
            return False
        self.recently_unloaded[u.bundle] = self.now
        cyc.unloads.append(u)
        return True

    def _unload_many(self, cyc: Cycle, res, order: list, many) -> None:
        """:meth:`_unload_each` for a placement strategy that places a run of bundles at once
        (``select_many``), without namespace policies or preallocations: nothing a placement reads
        changes between the bundles of a cycle but the strategy's own memory, and the policies let
        every bundle be unloaded. The strategy stops after a choice of an overloaded broker, whose
        retry (:meth:`_overload_retry`) runs before the next bundle's choice, as bundle by bundle: the
        same decisions, draws and memory. ``order``: positions in ``res.selected``.

        The cycle's unloads are kept as columns (:class:`~engine.results.UnloadTable`): the same lists,
        in the same order (the skipped ones: those of excluded namespaces first, then those the placement
        could not move), each :class:`~engine.results.Unload` built when first read.

        A strategy that knows each selection's view index and ``BundleData`` value key gives them
        (``res._for_placement``: two lists in selection order): the namespaces then come from the view's
        and no name is looked up in its million-entry index. The cycle is given the indices of its
        unloads (:meth:`~engine.results.Cycle.give_index`) when every bundle is in the view's bundle data."""
        v, ctx, conf = self.view, self.ctx(), self._conf_facts()
        excluded, sel, bidx = conf[1], res.selected, v.broker_index
        given = getattr(res, "_for_placement", None)
        if given is not None and len(given[0]) != len(sel):
            given = None
        if given is not None:
            ks = [given[0][p] for p in order]
            ns_names, ns_ids = v.namespaces, v.bundle_namespace_id[np.array(ks, dtype=np.int64)].tolist()
        n_all = len(order)
        src, nss, at, excl = [], [], [], []  # (at: the rows placed; excl: the rows of excluded namespaces)
        skip, decs = [None] * n_all, [None] * n_all
        owners, names = column_of(sel, "broker"), column_of(sel, "bundle")
        last, jb = None, -1
        for i, p in enumerate(order):
            b = owners[p]
            if b is not last:
                last, jb = b, bidx.get(b, -1)
            src.append(jb)
            ns = ns_names[ns_ids[i]] if given is not None else bundle_namespace(names[p])
            if ns in excluded:
                skip[i] = _excluded(ns)
                excl.append(i)
            else:
                nss.append(ns)
                at.append(i)
        table = UnloadTable(sel, order, decs, skip)
        issued_rows, placed_skips = [], []
        cyc.processed, cyc.unloads = UnloadRows(table, range(n_all)), UnloadRows(table, issued_rows)
        if not at:
            cyc.skipped = UnloadRows(table, excl)
            if given is not None:
                cyc.give_index(v, np.array(src, dtype=np.int64), np.array(ks, dtype=np.int64),
                               np.full(len(ks), -1, dtype=np.int64), np.zeros(len(ks), dtype=bool))
            return
        bundles = [names[order[i]] for i in at]
        pipes, steps, cands = {}, [], []
        for bundle, ns in zip(bundles, nss):
            got = pipes.get(ns)
            if got is None:
                got = pipes[ns] = self._pipeline(bundle, ns, False, ctx)
            steps.append(got[0])
            cands.append(got[1])
        tk = [ks[i] for i in at] if given is not None else list(map(v.bundle_index.get, bundles))
        if not all(k is not None for k in tk) or not v.in_bundle_data[np.array(tk, dtype=np.int64)].all():
            keys, tk = [self._placement_data(b).value_key() for b in bundles], None
        else:
            keys = [given[1][order[i]] for i in at] if given is not None else v.bundle_value_keys(tk)
        over = (self._usage_with_weight() > conf[2]).tolist()
        recent, now = self.recently_unloaded, self.now
        i, n, dst, issued = 0, len(at), [-1] * n_all, [False] * n_all
        while i < n:
            decs_i = many(bundles, keys, cands, i, over, v, self.config, ctx)
            for dec in decs_i:
                dec.filters = steps[i]
                j, r, b = -1, at[i], dec.broker
                if b is not None:
                    j = getattr(dec, "_j", None)
                    if j is None:
                        j = bidx[b]
                    if over[j]:
                        dec = self._overload_retry(dec, bundles[i], False, steps[i], None, conf)
                        b = dec.broker
                        j = getattr(dec, "_j", None)
                        j = bidx[b] if j is None else j
                decs[r], dst[r] = dec, j
                if b is None:
                    skip[r] = NO_DESTINATION
                    placed_skips.append(r)
                elif b == owners[order[r]]:
                    skip[r] = _same_owner(b)
                    placed_skips.append(r)
                else:
                    recent[bundles[i]] = now
                    issued_rows.append(r)
                    issued[r] = True
                i += 1
        cyc.skipped = UnloadRows(table, excl + placed_skips)
        if given is not None and tk is not None:  # what the cycle's readers index by (no name looked up)
            cyc.give_index(v, np.array(src, dtype=np.int64), np.array(ks, dtype=np.int64),
                           np.array(dst, dtype=np.int64), np.array(issued, dtype=bool))

    def _cycle_placer(self):
        """``place(bundle, namespace)``: ``selectBroker`` for the unloads of one shedding cycle (a
        namespace not excluded from shedding, a persistent topic).

        Nothing a placement reads before its strategy changes while a cycle unloads (``selectBroker``
        preallocates nothing, and the view, configuration and preallocations stay as they are), so
        without namespace policies or preallocations the filter steps of a namespace are taken once per
        cycle and the configuration's facts and placement context once; the strategy (whose own state,
        AvgShedder's plans and the round robin's position, does change) and the overload retry run for
        each bundle as in :meth:`select_broker`. With policies or preallocations each bundle takes the
        whole path."""
        if self.policies.__class__ is not NamespacePolicies or self.preallocated:
            return lambda bundle, ns: self._select_broker(bundle, None, False, ns)
        conf, ctx, pipes, then = self._conf_facts(), self.ctx(), {}, self._strategy_then_retry
        data_of = self._placement_data if getattr(self.placement, "uses_bundle_data", True) else None

        def place(bundle: str, ns: str) -> PlacementDecision:
            got = pipes.get(ns)
            if got is None:
                got = pipes[ns] = self._pipeline(bundle, ns, False, ctx)
            return then(bundle, False, got[0], got[1], None if data_of is None else data_of(bundle), ctx, conf)

        return place

    def run_cycles(self, n: int) -> list[Cycle]:
        """``n`` shedding cycles on unchanged load reports, one shedding interval apart."""
        out = []
        step = self.config.loadBalancerSheddingIntervalMinutes * 60_000
        t0 = self.now
        for i in range(n):
            out.append(self.do_load_shedding(t0 + i * step))
        return out
