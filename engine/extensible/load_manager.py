"""The Extensible Load Manager's leader side: ``UnloadScheduler`` + TransferShedder + ``selectAsync``.

:class:`ExtensibleLoadManager` has the interface of :class:`engine.load_manager.ModularLoadManager`
(``update``, ``do_load_shedding``, ``run_cycles``, ``select_broker``,
``select_broker_for_assignment``, ``state``; attributes ``shedding``, ``placement``, ``view``,
``recently_unloaded``), so the command line and the pages can drive either.

Driving it from a simulator
---------------------------
Keep one :class:`~engine.extensible.broker_load_data.BrokerLoadData` per broker and call its
``update(...)`` at every load-data generation (``loadBalancerReportUpdateMinIntervalMillis``, 5 s —
the EMA advances on each call); build each broker's top-K list with
:func:`~engine.extensible.top_bundles.top_k_bundles`; every shedding interval pass an
:class:`~engine.extensible.snapshot.ExtensibleLoadData` (with ``ownership`` = the simulator's bundle
owners and ``now_ms``) to :meth:`ExtensibleLoadManager.update`, call
:meth:`ExtensibleLoadManager.do_load_shedding` with the same time and move every
``cycle.unloads[i].bundle`` from ``.broker`` to ``.destination`` (``None``: left unassigned). The
manager keeps the hit count, ``recentlyUnloadedBundles`` (grace period) and
``recentlyUnloadedBrokers`` (the 180 s cool-down compares each broker's ``updatedAt`` with its last
unload, so the cool-down ends only once fresh load data arrives). :mod:`~engine.extensible.sim_leader`
does this for :mod:`engine.simulator`.

Examples
--------
>>> from engine.samples import load_sample
>>> lm = ExtensibleLoadManager(load_sample("yahoo-japan-3-brokers"))
>>> [c.shedding.decisions[0].reason for c in lm.run_cycles(3)]     # hit count 1, 2, 3 <= 3
['HitCount', 'HitCount', 'HitCount']
>>> cyc = lm.do_load_shedding(lm.now + 60_000)
>>> cyc.shedding.label, {u.broker for u in cyc.unloads}
('Success', {'broker1:8080'})
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Sequence

from ..cadence import forget_expired
from ..config import LoadBalancerConfig
from ..errors import InputError, UsageError
from ..javacompat import java_double_math, java_map_order
from ..load_manager import as_rng
from ..model import LoadData, bundle_namespace
from ..results import NO_BROKERS, Cycle, FilterStep, PlacementDecision, Unload, open_cycle
from ..strategies import registry
from ..strategies.spec import EXTENSIBLE
from ..strategies.state import HoldsStrategyStates
from .filters import ExtensiblePolicies, FilterContext
from .placement import ExtensibleLeastResourceUsageWithWeight, ExtensibleRoundRobin
from .snapshot import ChannelOwnership, ExtensibleLoadData, OwnerMapping, derive_extensible, extensible_config
from .transfer_shedder import SUCCESS, TransferShedder

__all__ = ["ExtensibleLoadManager"]


class ExtensibleLoadManager(HoldsStrategyStates):
    """The extensible leader over one snapshot (or a sequence of them).

    Parameters
    ----------
    data : ExtensibleLoadData or LoadData
        An extensible snapshot, or a modular one (derived with
        :func:`~engine.extensible.snapshot.derive_extensible`; successive modular snapshots continue
        the EMAs).
    config : LoadBalancerConfig, optional
        Pulsar 4.x defaults if omitted. A ``loadManagerClassName`` other than
        ``ExtensibleLoadManagerImpl`` is replaced by it (this manager *is* that class).
    seed : int or numpy.random.Generator, optional
        Randomness of the placement draw.
    shedding, placement : optional
        Strategy instances overriding the config (e.g. to carry state over).
    policies : ExtensiblePolicies, optional
        Isolation / anti-affinity hooks (none by default).

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.3 (``UnloadScheduler``) and §8.5 (``selectAsync``). Config keys:
    ``loadBalancerEnabled``, ``loadBalancerSheddingEnabled``, ``loadBalancerSheddingIntervalMinutes``,
    ``loadBalancerSheddingGracePeriodMinutes``, ``loadBalancerTransferEnabled``,
    ``loadBalancerSheddingExcludedNamespaces`` (round robin), the filter keys of
    :class:`~engine.extensible.filters.FilterContext` and every key of TransferShedder.

    * Shedding runs when enabled and at least 2 brokers are available; recently unloaded bundles
      older than the grace period are forgotten first.
    * Every Success decision is an unload: the bundle enters ``recently_unloaded`` and its source
      broker ``recently_unloaded_brokers`` (both at the cycle's time). With
      ``loadBalancerTransferEnabled`` the destination is TransferShedder's min broker (no placement);
      otherwise the bundle is released and the next lookup places it: :meth:`select_broker` with no
      broker excluded, so it may land on its source again (shown, still counted).
    * The service-unit channel's ownership is the snapshot's (explicit, or derived from the top-K
      lists), except that bundles this manager moved and that a stale report still shows on their
      old broker count as owned by their new one while they are recently unloaded.
    * A ``loadBalancerLoadSheddingStrategy`` that is not an extensible unload strategy falls back to
      TransferShedder, as Pulsar's ``createNamespaceUnloadStrategy`` does; a modular placement strategy
      is replaced by the extensible LeastResourceUsageWithWeight (``RoundRobinBrokerSelector`` is kept
      as round robin). Both are recorded in :attr:`notes`.
    * "Now" is the snapshot's own time; :meth:`run_cycles` advances it by one shedding interval per
      cycle and shifts every broker's ``updatedAt`` by the same amount (the brokers keep publishing
      unchanged load data), so report ages, the TTL and the cool-down behave as on a live cluster.
    """

    @java_double_math
    def __init__(self, data, config: LoadBalancerConfig | None = None, *, seed=None, shedding=None, placement=None,
                 policies: ExtensiblePolicies | None = None):
        self.notes: list[str] = []
        self.config = extensible_config(config)
        self.rng = as_rng(seed)
        if policies is None:  # the snapshot's own isolation / anti-affinity / failure-domain policies
            cp = getattr(data, "cluster_policies", None)
            policies = cp.extensible() if cp is not None else ExtensiblePolicies()
        self.policies = policies
        self.shedding = shedding if shedding is not None else self._make_shedding()
        self.placement = placement if placement is not None else self._make_placement()
        self.round_robin = ExtensibleRoundRobin()
        self.recently_unloaded: dict[str, int] = {}
        self.recently_unloaded_brokers: dict[str, int] = {}
        self._moved: dict[str, tuple] = {}  # bundle -> (source, destination) of our own unloads
        self._assigned: dict[str, str] = {}  # bundle -> broker of select_broker_for_assignment
        self.cycles = 0
        self.unload_bundle_count = 0
        self.unload_broker_count = 0
        self.view: ExtensibleLoadData | None = None
        self.now = 0
        self.update(data)
        seeds = self.view.strategy_state or {}
        if shedding is None and isinstance(seeds.get(self.shedding.name), dict):
            self.shedding.load_state(seeds[self.shedding.name])

    # ------------------------------------------------------------------ wiring
    def _make_shedding(self):
        raw = self.config.loadBalancerLoadSheddingStrategy
        try:
            spec = registry.spec(registry.shedding_name(raw))
        except UsageError:
            spec = None
        if spec is not None and spec.load_manager == EXTENSIBLE:
            return spec.factory()
        self.notes.append(f"loadBalancerLoadSheddingStrategy {raw.rsplit('.', 1)[-1]} is not an extensible unload "
                          "strategy: TransferShedder is used, as Pulsar falls back to it")
        return TransferShedder()

    def _make_placement(self):
        raw = self.config.loadBalancerLoadPlacementStrategy
        try:
            spec = registry.spec(registry.placement_name(raw))
        except UsageError:
            spec = None
        if spec is not None and spec.load_manager == EXTENSIBLE:
            return spec.factory()
        if spec is not None and spec.runs_in(EXTENSIBLE):  # round robin: the extensible manager's own
            return ExtensibleRoundRobin()
        self.notes.append(f"placement {raw.rsplit('.', 1)[-1]} is a modular strategy: the extensible "
                          "LeastResourceUsageWithWeight is used")
        return ExtensibleLeastResourceUsageWithWeight()

    @java_double_math
    def update(self, data) -> None:
        """New load data (a timeline step): an :class:`ExtensibleLoadData` (shallow-copied: the caller's
        objects are never modified; its top-K lists are shared, read only) or a modular
        ``LoadData`` (derived; EMAs continue from the previous view). Recently unloaded bundles and
        brokers of the snapshot are merged with the manager's."""
        if isinstance(data, ExtensibleLoadData):
            view = data.shallow_copy()
        elif isinstance(data, LoadData):
            view = derive_extensible(data, self.config, previous=self.view, has_policies=self.policies.has_policies)
        else:
            raise InputError(f"expected an ExtensibleLoadData or a LoadData, got {type(data).__name__}")
        for b, t in view.recently_unloaded.items():
            self.recently_unloaded[b] = max(int(t), self.recently_unloaded.get(b, 0))
        for b, t in view.recently_unloaded_brokers.items():
            self.recently_unloaded_brokers[b] = max(int(t), self.recently_unloaded_brokers.get(b, 0))
        if view.ownership is not None:  # the channel itself: our assignments are in it while they stand
            self._assigned.clear()
        self.view = view
        self.now = int(view.now)

    def owners(self) -> Mapping[str, str]:
        """The service-unit channel's bundle → owner (see the class Notes): a ``dict``, or over a big
        snapshot's channel (:class:`~engine.extensible.snapshot.ChannelOwnership`) a read-only mapping of
        the same entries, in the same order, with the leader's own moves and assignments laid over it
        (no copy of every bundle's entry per cycle)."""
        base = self.view.ownership
        lazy = isinstance(base, ChannelOwnership)
        own = base if lazy else self.view.owners()
        moved, released, added = {}, set(), {}
        for b, (src, dst) in list(self._moved.items()):
            if b not in self.recently_unloaded:
                del self._moved[b]
            elif own.get(b) == src:
                if dst is None:
                    released.add(b)
                else:
                    moved[b] = dst
        for b, dst in self._assigned.items():
            if b in released or (b not in moved and b not in own):
                added.setdefault(b, dst)
        if lazy:
            return _ChannelOverlay(base, moved, released, added)
        for b in released:
            own.pop(b, None)
        own.update(moved)
        for b, dst in added.items():
            own.setdefault(b, dst)
        return own

    def state(self) -> dict:
        """Everything the leader remembers between cycles (the display form)."""
        return {"shedding": self.shedding.state(), "placement": self.placement.state(),
                "recently_unloaded": dict(self.recently_unloaded),
                "recently_unloaded_brokers": dict(self.recently_unloaded_brokers),
                "round_robin": self.round_robin.state()}

    # ------------------------------------------------------------------ placement (selectAsync)
    @java_double_math
    def select_broker(self, bundle: str, *, candidates: Sequence[str] | None = None, non_persistent: bool = False,
                      exclude: Sequence[str] = ()) -> PlacementDecision:
        """``selectAsync(bundle, excludeBrokerSet)``: available brokers minus ``exclude`` → filter
        pipeline → none left: no broker → the strategy (round robin for
        ``loadBalancerSheddingExcludedNamespaces``).

        With ``candidates`` only the strategy runs, on exactly those brokers (in the given order).
        ``non_persistent``: the lookup is for a non-persistent topic (``BrokerIsolationPoliciesFilter``
        then keeps, for a namespace without an isolation policy, only brokers with
        ``nonPersistentTopicsEnabled``; otherwise those with ``persistentTopicsEnabled``).
        """
        view, cfg = self.view, self.config
        ns = bundle_namespace(bundle)
        excluded_ns = ns in cfg.excluded_namespaces
        strategy = self.round_robin if excluded_ns else self.placement
        if candidates is not None:
            cand = list(candidates)
            known = set(view.brokers)
            unknown = [b for b in cand if b not in known]
            if unknown:
                raise InputError(f"unknown broker(s): {', '.join(unknown)}", field="--candidates")
            dec = strategy.select(cand, bundle, view, cfg, self.rng)
            dec.filters = [FilterStep("given candidates", cand)]
            return dec
        avail = java_map_order(view.available_brokers, concurrent=True)  # a ConcurrentHashMap copy
        skip = set(exclude)
        base = [b for b in avail if b not in skip]
        steps = [FilterStep("available brokers (broker registry)" + (" minus excluded" if skip else ""), base, avail)]
        fr = FilterContext(view, cfg, self.policies, owners=self.owners).filter(base, bundle, non_persistent)
        steps.extend(fr.steps)
        c = fr.candidates
        if not c:
            dec = PlacementDecision(bundle, strategy.name, cand=[])
            dec.filters = steps
            dec.reason = "no broker left after the filters: no broker is assigned"
            return dec
        dec = strategy.select(c, bundle, view, cfg, self.rng)
        dec.filters = steps
        if excluded_ns:
            dec.reason = f"namespace {ns} is in loadBalancerSheddingExcludedNamespaces: " + dec.reason
        return dec

    @java_double_math
    def select_broker_for_assignment(self, bundle: str, non_persistent: bool = False) -> PlacementDecision:
        """A lookup of an unowned bundle: the current owner if the channel has one, else
        :meth:`select_broker`, recorded as the bundle's owner."""
        owner = self.owners().get(bundle)
        if owner is not None:
            dec = PlacementDecision(bundle, "ownership", broker=owner)
            dec.reason = f"already owned by {owner} (service-unit channel)"
            return dec
        dec = self.select_broker(bundle, non_persistent=non_persistent)
        if dec.broker is not None:
            self._assigned[bundle] = dec.broker
        return dec

    # ------------------------------------------------------------------ shedding (UnloadScheduler)
    @java_double_math
    def do_load_shedding(self, now: int | None = None) -> Cycle:
        """One ``UnloadScheduler.execute`` at ``now`` (the snapshot's time by default)."""
        cfg, view = self.config, self.view
        cyc = open_cycle(self, now)
        if cyc.reason:
            return cyc
        avail = view.available_brokers
        if len(avail) <= 1:
            cyc.reason = f"{len(avail)} available broker(s): no load shedding"
            cyc.skip_code = NO_BROKERS
            return cyc
        self.recently_unloaded = forget_expired(self.recently_unloaded, self.now,
                                                cfg.loadBalancerSheddingGracePeriodMinutes)
        filters = FilterContext(view, cfg, self.policies, owners=self.owners)
        res, _ = self.shedding.run(view, cfg, self.recently_unloaded, self.shedding.state_value(),
                                   recently_unloaded_brokers=self.recently_unloaded_brokers, now_ms=self.now,
                                   filters=filters, owners=self.owners())
        cyc.shedding = res
        sources = set()
        sel = iter(res.selected)
        for d in res.decisions:
            if d.label != SUCCESS:
                continue
            s = next(sel)
            u = Unload(d.broker, d.bundle, d.destination, d.reason, s.msg_rate, s.throughput)
            if d.destination is None:  # released: the next lookup places it
                dec = self.select_broker(d.bundle)
                u.placement = dec
                u.destination = dec.broker
                if dec.broker == d.broker:
                    dec.reason += f" (back on its source {d.broker}: the unload only reconnects its clients)"
            cyc.processed.append(u)
            cyc.unloads.append(u)
            self.recently_unloaded[d.bundle] = self.now
            self.recently_unloaded_brokers[d.broker] = self.now
            self._moved[d.bundle] = (d.broker, u.destination)
            self.unload_bundle_count += 1
            sources.add(d.broker)
        self.unload_broker_count += len(sources)
        cyc.reason = res.reason
        if self.notes:
            res.notes.extend(n for n in self.notes if n not in res.notes)
        return cyc

    def run_cycles(self, n: int) -> list[Cycle]:
        """``n`` shedding cycles on unchanged load data, one shedding interval apart (see Notes)."""
        out = []
        step = self.config.loadBalancerSheddingIntervalMinutes * 60_000
        t0 = self.now
        for i in range(n):
            if i:
                for d in self.view.broker_load_data.values():
                    if d.updated_at:
                        d.updated_at += step
                if self.view.now_ms is not None:
                    self.view.now_ms += step
            out.append(self.do_load_shedding(t0 + i * step))
        return out


class _ChannelOverlay(OwnerMapping):
    """A read-only channel: ``base`` with bundles ``moved`` to another owner (in place), ``released``
    (no owner) and ``added`` (assigned: after the others, in assignment order)."""

    __slots__ = ("_base", "_moved", "_released", "_added")

    def __init__(self, base: Mapping, moved: dict, released: set, added: dict):
        self._base, self._moved, self._released, self._added = base, moved, released, added

    def get(self, bundle, default=None):
        if bundle in self._added:
            return self._added[bundle]
        if bundle in self._released:
            return default
        got = self._moved.get(bundle)
        return got if got is not None else self._base.get(bundle, default)

    def __iter__(self):
        released = self._released
        for b in self._base:
            if b not in released:
                yield b
        yield from self._added

    def __len__(self) -> int:
        return len(self._base) - len(self._released) + len(self._added)

    def __repr__(self) -> str:
        return f"_ChannelOverlay({len(self._moved) + len(self._released) + len(self._added)} changes over {self._base!r})"
