"""The simulator's leader broker: a small interface, and the modular load manager behind it.

The simulator only talks to a :class:`Leader`:

``observe(view)``
    the leader's ``updateAll`` has run: ``view`` is the :class:`engine.view.LoadView` built from the
    brokers' *written* load reports and the leader's bundle averages;
``shed(now_ms) -> Cycle``
    one ``doLoadShedding`` (unloads with their destinations, or why nothing moved);
``assign(bundle) -> PlacementDecision``
    a lookup of an unowned bundle (cluster start, broker gone, split child): place it and
    preallocate it;
``reconfigure(config)``
    a dynamic config change;
``state() -> dict``
    what it remembers between cycles, in display form (for the result and the UI);
``state_values() -> dict``
    its strategies' memories as the registry's state values (``{strategy name: value}``, one entry
    when one object plays both roles): frozen, lossless through ``to_json()`` / ``from_json()``, what
    the result carries as ``strategy_state`` and a snapshot's ``strategy_state`` restores. Optional
    (a plug-in leader without it carries none); a newly elected leader starts from empty values.

:class:`ModularLeader` adapts :class:`engine.load_manager.ModularLoadManager` (one manager kept for
the whole run, so ThresholdShedder history, AvgShedder hit counts and plans, the
LeastResourceUsageWithWeight history carry over). :func:`make_leader` picks the implementation
from the registry: the shedding strategy's ``load_manager`` (its
:class:`~engine.strategies.spec.StrategySpec`) — ``"modular"`` → :class:`ModularLeader`,
``"extensible"`` → :class:`engine.extensible.sim_leader.ExtensibleLeader` (the Extensible Load
Manager with its own cadence). A strategy registered from a plug-in module runs in its load manager
with no edit here.

Optional hooks (duck-typed; a leader without them sees only the modular view):

``on_reports(reports: BrokerReports)``
    called every minute right after the brokers' load reports, with what every *running* broker
    measured that minute (usage, rates, bundle stats) and whether it writes its report; a leader
    whose brokers publish their own load data (the Extensible Load Manager's ``BrokerLoadData``,
    advanced at every 5 s generation) keeps that broker-side state itself;
``take_over(previous)``
    called on a newly elected leader with the previous one, to carry over what is not leader
    memory (e.g. the brokers' published load data, which lives in system topics);
``extensible``
    a true attribute makes the tables add ``load_std`` / ``target_std`` (see
    :mod:`engine.simulator.metrics`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from ..config import LoadBalancerConfig
from ..load_manager import ModularLoadManager, as_rng
from ..results import Cycle, PlacementDecision
from ..strategies.spec import EXTENSIBLE
from ..view import LoadView

__all__ = ["Leader", "ModularLeader", "BrokerReports", "make_leader", "strategy_states"]


@dataclass
class BrokerReports:
    """What the running brokers measured in one simulated minute (the ``on_reports`` hook).

    Arrays are aligned with :attr:`brokers` (running brokers, scenario order), except the ``bundle_*``
    arrays (one row per bundle with loaded topics served by a running broker).

    Attributes
    ----------
    minute, now_ms : int
        The minute and its time (the leader's check of this minute runs at ``now_ms``).
    brokers : list of str
    usage, limit : ndarray (n, 5)
        Raw usage and limit of cpu (``cores × 100``), memory (heap MB), direct memory (MB),
        bandwidth in and out (Kbit/s): ``ResourceUsage(usage, limit)``; the minute's values.
    percent : ndarray (n, 5)
        Their float32 ``percentUsage()`` (what the modular report carries).
    rates : ndarray (n, 4)
        msgRateIn, msgRateOut, msgThroughputIn, msgThroughputOut (broker totals).
    bundle_count, topics : ndarray (n,)
    writes_report : ndarray (n,) of bool
        The broker writes its load report this minute (``needBrokerDataUpdate()``, §3.1).
    bundle_broker : ndarray (m,)
        Position in :attr:`brokers` of the bundle's owner.
    bundle_names : list of str
    bundle_stats : ndarray (m, 4)
        msgRateIn, msgThroughputIn, msgRateOut, msgThroughputOut of the minute.
    bundle_topics, bundle_sessions : ndarray (m,)
        Loaded topics; producers + consumers.
    channel : callable
        ``channel() -> {bundle: broker}``: the *current* owners (read when called, so it also
        reflects later lookups and unloads).
    """

    minute: int
    now_ms: int
    brokers: list
    usage: np.ndarray
    limit: np.ndarray
    percent: np.ndarray
    rates: np.ndarray
    bundle_count: np.ndarray
    topics: np.ndarray
    writes_report: np.ndarray
    bundle_broker: np.ndarray
    bundle_names: list
    bundle_stats: np.ndarray
    bundle_topics: np.ndarray
    bundle_sessions: np.ndarray
    channel: Callable


@runtime_checkable
class Leader(Protocol):
    """What the simulator needs from a leader broker's load manager."""

    name: str
    config: LoadBalancerConfig

    def observe(self, view: LoadView) -> None: ...

    def shed(self, now_ms: int) -> Cycle: ...

    def assign(self, bundle: str) -> PlacementDecision: ...

    def reconfigure(self, config: LoadBalancerConfig) -> None: ...

    def state(self) -> dict: ...


def strategy_states(manager) -> dict:
    """``{strategy name: state value}`` of a load manager's shedding and placement strategies (one
    entry when one object plays both roles, as AvgShedder does)."""
    if manager is None:
        return {}
    out = {manager.shedding.name: manager.shedding_state}
    if manager.placement is not manager.shedding:
        out[manager.placement.name] = manager.placement_state
    return out


class ModularLeader:
    """:class:`Leader` over :class:`ModularLoadManager` (Pulsar's ``ModularLoadManagerImpl``).

    Parameters
    ----------
    config : LoadBalancerConfig
    seed : int or numpy.random.Generator
        Randomness of placement draws (one stream for the whole run).
    manager_factory : callable, optional
        ``factory(view, config, seed=Generator)``; default :class:`ModularLoadManager`.

    Notes
    -----
    Preallocations are pruned when the leader observes a report that lists the bundle (any broker),
    which is Pulsar's "now in the broker's bundles and in bundleData" rule; Pulsar's other rule ("no
    longer owned locally") has no separate signal here. A change of the shedding or placement
    strategy builds a fresh manager (strategy memory lost, as after Pulsar reloads the strategy);
    the grace-period map and the preallocations are carried over.
    """

    def __init__(self, config: LoadBalancerConfig, seed=None, *, manager_factory: Callable | None = None):
        self.config = config
        self.rng = as_rng(seed)
        self.factory = manager_factory or ModularLoadManager
        self.manager = None
        self._pending_config = None
        #: the scenario's cluster policies (``engine.policies.ClusterPolicies``), set by the simulation
        self.policies = None

    @property
    def name(self) -> str:
        if self.manager is None:
            return f"{self.config.shedding_strategy} + {self.config.placement_strategy}"
        sh, pl = self.manager.shedding, self.manager.placement
        return sh.name if pl is sh else f"{sh.name} + {pl.name}"

    def observe(self, view: LoadView) -> None:
        m = self.manager
        if m is None or self._pending_config is not None:
            old = m
            if self.policies is not None and self.factory is ModularLoadManager:
                from ..policies import ModularPolicies

                self.manager = self.factory(view, self.config, seed=self.rng, policies=ModularPolicies(self.policies))
            else:
                self.manager = self.factory(view, self.config, seed=self.rng)
            self._pending_config = None
            if old is not None:
                self.manager.recently_unloaded.update(old.recently_unloaded)
                for b, pre in old.preallocated.items():
                    self.manager.preallocated.setdefault(b, {}).update(pre)
                self.manager.preallocated_to_broker.update(old.preallocated_to_broker)
                self.manager.cycles = old.cycles
                self.manager.update(view)  # re-prune preallocations of brokers that left
        else:
            m.update(view)
        self._prune(view)

    def _prune(self, view: LoadView) -> None:
        prune = getattr(self.manager, "prune_preallocations", None)
        if prune is not None:
            prune(view)

    def shed(self, now_ms: int) -> Cycle:
        return self.manager.do_load_shedding(now_ms)

    def assign(self, bundle: str) -> PlacementDecision:
        return self.manager.select_broker_for_assignment(bundle)

    def reconfigure(self, config: LoadBalancerConfig) -> None:
        old = self.config
        self.config = config
        if self.manager is None:
            return
        if (old.shedding_strategy, old.placement_strategy) != (config.shedding_strategy, config.placement_strategy):
            self._pending_config = config
        else:
            self.manager.config = config

    def state(self) -> dict:
        return self.manager.state() if self.manager is not None else {}

    def state_values(self) -> dict:
        return strategy_states(self.manager)


def make_leader(config: LoadBalancerConfig, seed=None) -> Leader:
    """The leader for ``config``: the load manager its shedding strategy's spec names (module docs)."""
    from .pairing import load_manager_of

    if load_manager_of(config) == EXTENSIBLE:
        from ..extensible.sim_leader import ExtensibleLeader

        return ExtensibleLeader(config, seed=seed)
    return ModularLeader(config, seed)
