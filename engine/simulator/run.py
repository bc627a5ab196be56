"""The time-stepped cluster simulation (one tick = one minute): the driver that folds the phases over the minutes.

Each minute, in this order (``pulsar-load-balancing.md`` §3), one phase per module:

1. **Events** of the minute (:mod:`.membership`): brokers join or leave (graceful shutdown or crash), CPU spikes,
   config changes (traffic steps are part of the precomputed traffic).
2. **Traffic** (:mod:`.load`): every bundle's msg/s and bytes/s in and out (workload patterns × per-bundle noise),
   served by its current owner; every broker's real CPU, NIC, direct-memory and heap usage.
3. **Load reports** (:mod:`.reports`): a broker writes its report (``LocalBrokerData``) when
   ``needBrokerDataUpdate()`` says so — a change of msg rate, throughput, bundle count or weighted
   usage above ``loadBalancerReportUpdateThresholdPercentage`` since its last *written* report, or
   ``loadBalancerReportUpdateMaxIntervalMinutes`` elapsed. Unwritten changes stay invisible to the
   leader (a broker that just lost a bundle may keep reporting it).
4. **Leader ``updateAll``** (:mod:`.bundle_data`): once per written report, per broker joining or leaving, and per
   ``loadBalancerResourceQuotaUpdateIntervalMinutes`` tick; each call advances every reported
   bundle's short-term (10 samples) and long-term (1000 samples) averages by one sample; bundles no
   report lists are forgotten; preallocations seen in a report are dropped.
5. **Auto split** (:mod:`.split`; only when ``loadBalancerAutoBundleSplitEnabled``): ``BundleSplitterTask`` on the
   written reports and long-term averages, split with the default algorithm, children unloaded when
   ``loadBalancerAutoUnloadSplitBundlesEnabled``.
6. **Lookups** (:mod:`.decisions`): unowned bundles (cluster start, a broker gone, split children) are placed by
   ``selectBrokerForAssignment`` (placement strategy + preallocation).
7. **Shedding** (:mod:`.decisions`) every ``loadBalancerSheddingIntervalMinutes``: ``doLoadShedding``; each unloaded
   bundle is served by its destination from the next minute (after a short unavailability) and sits
   in the grace period.
8. **Metrics** of the minute are recorded (:mod:`.recording`).

A leader with an ``on_reports`` hook (the Extensible Load Manager's,
:mod:`engine.extensible.sim_leader`) also gets, right after step 3, what every running broker
measured that minute (:class:`~engine.simulator.leader.BrokerReports`): its brokers keep their own
load data (an EMA advanced every 5 s report) and publish it when their report is written.

Simplifications (documented in ``docs/scenarios.md``): all report writes of one minute reach the
leader together (Pulsar spreads them over the minute's 5-second ticks); a bundle's four traffic
values share one noise factor per minute; CPU is capped at 100 %.

The cluster's arrays are built once by :mod:`.cluster`; what a phase hands to the next within a
minute is a :class:`~engine.simulator.minute.Minute`. Each phase is a small class whose ``step_*``
method :class:`Simulation` calls in :attr:`Simulation.PHASES` order; a subclass (e.g.
:class:`~engine.simulator.from_snapshot.SnapshotSimulation`) overrides a phase's helpers, not the loop.
"""
from __future__ import annotations

import time as _time
from typing import Callable

import numpy as np

from ..config import LoadBalancerConfig
from ..errors import InputError
from .bundle_data import BundleDataPhase, advance
from .clock import EPOCH_MS, MIB, now_ms
from .cluster import ClusterSetup
from .decisions import DecisionsPhase
from .leader import Leader, make_leader
from .load import LoadPhase
from .membership import EventsPhase
from .metrics import build_tables, json_clean
from .minute import Minute
from .pairing import check_config_events, check_pair, config_with_strategy
from .recording import RecordPhase
from .reports import ReportsPhase
from .result import SimulationResult
from .scenario import Scenario, load_scenario, parse_scenario
from .split import SplitPhase

__all__ = ["simulate", "run_scenario", "SimulationResult", "Simulation", "EPOCH_MS", "MIB"]

#: the name this module had for :func:`engine.simulator.bundle_data.advance`
_advance = advance


class Simulation(ClusterSetup, EventsPhase, LoadPhase, ReportsPhase, BundleDataPhase, SplitPhase, DecisionsPhase,
                 RecordPhase):
    """One run of a scenario. Use :func:`simulate` / :func:`run_scenario`.

    The driver: it seeds the random streams, builds the cluster (:class:`ClusterSetup`), then for every
    minute runs the ``step_*`` methods named in :attr:`PHASES` on one :class:`Minute`.
    """

    #: the phases of a minute, in order (each a ``step_<name>(minute)`` method)
    PHASES = ("events", "load", "reports", "bundle_data", "split", "decisions", "record")

    def __init__(self, scenario: Scenario, config: LoadBalancerConfig, seed: int | None = None,
                 minutes: int | None = None, leader: Leader | Callable | None = None):
        self.sc = scenario
        self.cfg = config
        self.seed = int(scenario.seed if seed is None else seed)
        self.T = int(minutes if minutes is not None else scenario.minutes)
        if self.T < 1:
            raise InputError("must be at least 1", field="minutes")
        check_pair(config, scenario.source)
        check_config_events(config, scenario, self.T)
        ss = np.random.SeedSequence(self.seed)
        c_traffic, c_cpu, c_leader, c_order = ss.spawn(4)
        self.rng_traffic = np.random.default_rng(c_traffic)
        self.rng_cpu = np.random.default_rng(c_cpu)
        self.rng_order = np.random.default_rng(c_order)
        self.layout_rng = np.random.default_rng(np.random.SeedSequence([scenario.seed, 0x5EED]))
        self._leader_rng = np.random.default_rng(c_leader)
        if leader is None:
            self._leader_factory = make_leader
        elif callable(leader) and not hasattr(leader, "observe"):
            self._leader_factory = leader
        else:
            self._leader_factory = None  # a Leader instance: kept across leader elections
        self.leader = self._leader_factory(config, seed=self._leader_rng) if self._leader_factory else leader
        self._give_policies()
        self._build()

    def now_ms(self, t: int) -> int:
        return now_ms(t)

    def run(self, progress: Callable | None = None, cancel=None) -> SimulationResult:
        t0 = _time.perf_counter()
        T = self.T
        every = max(1, T // 100)
        cancelled = False
        done = 0
        steps = [getattr(self, "step_" + name) for name in self.PHASES]
        for t in range(T):
            self._t = t
            if _is_cancelled(cancel):
                cancelled = True
                break
            m = Minute(t)
            for step in steps:
                step(m)
            done = t + 1
            if progress is not None and (done % every == 0 or done == T):
                progress(done, T)
        ev, br, cl, summary = build_tables(self, done)
        summary["cancelled"] = cancelled
        summary["elapsed_s"] = round(_time.perf_counter() - t0, 3)
        return SimulationResult(self.sc, self.cfg, self.seed, done, ev, br, cl, summary,
                                leader_state=_safe_state(self.leader), cancelled=cancelled,
                                elapsed_s=summary["elapsed_s"], strategy_state=_state_values(self.leader))


def _is_cancelled(cancel) -> bool:
    if cancel is None:
        return False
    if hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


def _state_values(leader) -> dict:
    """The leader's strategy state values as ``{name: value.to_json()}`` (none for a leader without
    ``state_values``)."""
    values = getattr(leader, "state_values", None)
    return {} if values is None else {name: v.to_json() for name, v in values().items()}


def _safe_state(leader) -> dict:
    try:
        return json_clean(leader.state())
    except Exception:  # pragma: no cover - a plug-in leader without state
        return {}


# ============================================================================================ API
def simulate(scenario: Scenario, config: LoadBalancerConfig | None = None, *, seed: int | None = None,
             minutes: int | None = None, leader=None, progress: Callable | None = None,
             cancel=None) -> SimulationResult:
    """Run ``scenario`` with ``config`` (default: the scenario's own config).

    Parameters
    ----------
    scenario : Scenario
    config : LoadBalancerConfig, optional
        The full load-balancer config (the scenario's ``preset``/``config`` are *not* applied on top).
    seed : int, optional
        Seed of everything random in the run (traffic noise, CPU noise, placement draws, lookup order);
        default the scenario's ``seed``. The scenario's layout (topic rate skew, diurnal phases) always
        uses the scenario's own seed.
    minutes : int, optional
        Override the scenario's length.
    leader : Leader or callable, optional
        A :class:`engine.simulator.leader.Leader`, or ``factory(config, seed=Generator)``; default
        :func:`engine.simulator.leader.make_leader`.
    progress : callable, optional
        ``progress(done_minutes, total_minutes)``, called about 100 times.
    cancel : callable or threading.Event, optional
        Checked every minute; when true the run stops and the partial result has ``cancelled=True``.

    Returns
    -------
    SimulationResult
    """
    cfg = config if config is not None else scenario.lb_config()
    # a scenario may name its own simulation (engine.simulator.from_snapshot: a snapshot as the start)
    cls = getattr(scenario, "simulation_class", None) or Simulation
    return cls(scenario, cfg, seed=seed, minutes=minutes, leader=leader).run(progress, cancel)


def run_scenario(scenario, *, strategy: str | None = None, placement: str | None = None,
                 set: dict | None = None, preset: str | None = None, config: LoadBalancerConfig | None = None,
                 minutes: int | None = None, seed: int | None = None, leader=None,
                 progress: Callable | None = None, cancel=None) -> SimulationResult:
    """Load (if needed) and run a scenario with optional overrides, as the command line does.

    ``scenario`` is a :class:`Scenario`, a file path, a shipped scenario name or a parsed mapping.
    The config is: ``config`` if given, else ``preset`` (else the scenario's preset, else Pulsar 4.x
    defaults) + the scenario's ``config`` keys; then ``set`` (broker.conf keys), then
    ``strategy``/``placement`` (:func:`engine.simulator.pairing.config_with_strategy`, the registry's
    rules: AvgShedder shedding implies AvgShedder placement unless given, leaving it falls back to
    LeastLongTermMessageRate placement; ``TransferShedder`` also sets ``loadManagerClassName`` to the
    Extensible Load Manager and its placement; a modular strategy on an extensible config sets the
    modular load manager back). Incompatible pairs raise :class:`~engine.errors.InputError` before
    the run starts.

    Examples
    --------
    >>> r = run_scenario("pip364-history-lag")          # doctest: +SKIP
    >>> r.summary["unloads"], r.events.query("kind == 'unload'").head()  # doctest: +SKIP
    """
    from ..config import PRESETS

    if isinstance(scenario, Scenario):
        sc = scenario
    elif isinstance(scenario, dict):
        sc = parse_scenario(scenario)
    else:
        sc = load_scenario(scenario)
    if config is None:
        base = PRESETS[preset] if preset else None
        if preset and preset not in PRESETS:
            raise InputError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}", field="preset")
        cfg = sc.lb_config(base)
    else:
        cfg = config
    if set:
        set = dict(set)
        if set.get("pulsarVersion"):  # another release: its defaults under the keys already changed
            cfg = cfg.on_release(str(set.pop("pulsarVersion")))
        set.pop("pulsarVersion", None)
        if set:
            cfg = cfg.with_values({str(k): (v if not isinstance(v, bool) else str(v).lower()) for k, v in set.items()},
                                  source="--set")
    cfg = config_with_strategy(cfg, strategy, placement)
    return simulate(sc, cfg, seed=seed, minutes=minutes, leader=leader, progress=progress, cancel=cancel)
