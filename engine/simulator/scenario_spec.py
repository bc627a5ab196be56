"""What a scenario is: the frozen specs of its brokers, namespaces, workloads, events and models.

:mod:`engine.simulator.scenario` reads and validates scenario files into these values; the loop
(:mod:`engine.simulator.run`) only reads them. :func:`expand_events` turns the file's events into
the primitive timeline the loop plays (joins, removals, restarts as remove + add pairs).

>>> [e.kind for e in expand_events((), (BrokerSpec("a:8080", join=0), BrokerSpec("b:8080", join=5)))]
['add_broker', 'add_broker']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import PRESETS, LoadBalancerConfig
from ..errors import InputError
from ..limits import MAX_SIMULATION_MINUTES, check_run_memory, check_run_steps, simulation_bytes, simulation_steps

__all__ = ["Scenario", "BrokerSpec", "NamespaceSpec", "WorkloadSpec", "PatternSpec", "EventSpec", "CostModel",
           "NoiseModel", "TimingModel", "MetricsSpec", "scenario_memory", "check_scenario_size", "expand_events",
           "SCENARIOS_DIR", "EVENT_KINDS", "PATTERN_KINDS", "OWNER_MODES"]

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "samples" / "scenarios"

PATTERN_KINDS = ("constant", "ramp", "diurnal", "on_off", "steps")
EVENT_KINDS = ("add_broker", "remove_broker", "crash_broker", "restart_broker", "rolling_restart", "traffic",
               "cpu", "config")
OWNER_MODES = ("placement", "round_robin", "random")


# ------------------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class BrokerSpec:
    """One broker's hardware and idle load.

    ``cores`` (CPU limit = 100 × cores, Pulsar's "percent of one core" unit), ``nic_gbps`` (bandwidth
    limit), ``heap_mb`` / ``direct_memory_mb`` (JVM limits), ``background_cpu`` (percent of this
    broker's CPU used with no traffic: JVM, GC, bookie clients, other processes), ``heap_used``
    (percent), ``join`` (minute it starts; ``None``: only an ``add_broker`` event starts it).
    """

    id: str
    cores: float = 8.0
    nic_gbps: float = 10.0
    heap_mb: float = 8192.0
    direct_memory_mb: float = 4096.0
    background_cpu: float = 5.0
    heap_used: float = 30.0
    join: int | None = 0


@dataclass(frozen=True)
class NamespaceSpec:
    """A namespace: ``bundles`` initial bundles (Pulsar's equal ranges) and who owns them at start.

    ``owners``: ``"placement"`` (the leader places each bundle at minute 0, as a cluster start does),
    ``"round_robin"``, ``"random"`` (seeded uniform), or a mapping ``broker -> [bundle indices]``
    (bundles not listed are placed by the leader).
    """

    name: str
    bundles: int | None = None
    owners: Any = "placement"


@dataclass(frozen=True)
class PatternSpec:
    """A traffic multiplier over time (minutes); see ``docs/scenarios.md``."""

    kind: str
    params: tuple = ()

    def get(self, key, default=None):
        return dict(self.params).get(key, default)


@dataclass(frozen=True)
class WorkloadSpec:
    """A load job: topics (or one partitioned topic) in a namespace, producers and consumers.

    ``rate`` is the total produced msg/s at pattern level 1 (split over topics, evenly or with a
    lognormal ``skew``); each of ``subscriptions`` consumes everything produced, scaled by the
    ``consumers`` pattern (an ``on_off`` consumer is the article's "runs 1 minute, pauses 1 minute").
    """

    name: str
    namespace: str
    topic: str
    topics: int = 1
    partitions: int = 0
    rate: float = 0.0
    msg_size: float = 1024.0
    subscriptions: int = 1
    skew: float = 0.0
    start: int = 0
    stop: int | None = None
    producers: tuple = ()  # PatternSpec, multiplied
    consumers: tuple = ()
    producers_per_topic: int = 1
    consumers_per_subscription: int = 1

    @property
    def n_topics(self) -> int:
        return self.partitions if self.partitions else self.topics


@dataclass(frozen=True)
class EventSpec:
    """Something that happens at minute ``at``: ``kind`` in :data:`EVENT_KINDS`, kind-specific ``params``."""

    at: int
    kind: str
    params: tuple = ()
    index: int = 0  # position in the file (for messages)

    def get(self, key, default=None):
        return dict(self.params).get(key, default)


@dataclass(frozen=True)
class CostModel:
    """How traffic turns into resource usage.

    CPU cores used = ``cpu_per_msg_in`` × msg/s in + ``cpu_per_msg_out`` × msg/s out + ``cpu_per_mib``
    × MiB/s (in + out). NIC in = bytes in; NIC out = bytes out + ``replication`` × bytes in (writes to
    bookies). Direct memory (MiB) = ``direct_memory_base_mb`` + ``direct_memory_per_mib`` × MiB/s.
    """

    cpu_per_msg_in: float = 2.0e-5
    cpu_per_msg_out: float = 1.0e-5
    cpu_per_mib: float = 0.01
    replication: float = 2.0
    direct_memory_base_mb: float = 256.0
    direct_memory_per_mib: float = 4.0


@dataclass(frozen=True)
class NoiseModel:
    """Per-minute noise: ``traffic`` (relative σ per bundle), ``cpu`` and ``heap`` (σ in points per broker)."""

    traffic: float = 0.02
    cpu: float = 0.5
    heap: float = 1.0


@dataclass(frozen=True)
class TimingModel:
    """Unavailability of a bundle while it moves (seconds): after an unload or a graceful
    shutdown, and after a crash (until the metadata-store session of the dead broker expires)."""

    unload_unavailable_seconds: float = 2.0
    crash_unavailable_seconds: float = 30.0


@dataclass(frozen=True)
class MetricsSpec:
    """How the run is judged: "settled" = no unload for ``settle_window`` minutes while the usage
    range (max − min, points) stays at or under ``settle_range``, searched from ``settle_from``;
    oscillation counts direction changes of each broker's usage larger than
    ``oscillation_threshold`` points."""

    settle_window: int = 15
    settle_range: float = 20.0
    settle_from: int = 0
    oscillation_threshold: float = 5.0


@dataclass(frozen=True)
class Scenario:
    """A validated scenario (see :func:`load_scenario`)."""

    name: str
    minutes: int
    brokers: tuple
    namespaces: tuple
    workloads: tuple = ()
    events: tuple = ()
    title: str = ""
    description: str = ""
    seed: int = 0
    preset: str | None = None
    config: tuple = ()  # (key, value) pairs, broker.conf keys
    leader: str | None = None
    cost: CostModel = field(default_factory=CostModel)
    noise: NoiseModel = field(default_factory=NoiseModel)
    timing: TimingModel = field(default_factory=TimingModel)
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    expect: Any = None  # free-form notes: what the article observed (not used by the simulator)
    source: str | None = None
    #: the cluster's isolation / anti-affinity / failure-domain policies (engine.policies.ClusterPolicies)
    policies: Any = None

    @property
    def config_values(self) -> dict:
        return dict(self.config)

    def lb_config(self, base: LoadBalancerConfig | None = None) -> LoadBalancerConfig:
        """The scenario's load-balancer config: ``base`` (or its preset, or Pulsar 4.x) + its keys."""
        cfg = base if base is not None else (PRESETS[self.preset] if self.preset else LoadBalancerConfig())
        if self.config:
            cfg = cfg.with_values(dict(self.config), source=self.source)
        return cfg

    def broker(self, broker_id: str) -> BrokerSpec:
        for b in self.brokers:
            if b.id == broker_id:
                return b
        raise KeyError(broker_id)



def scenario_memory(sc: "Scenario", minutes: int | None = None) -> float:
    """Bytes a run of ``sc`` (for ``minutes``, default its own) is estimated to need
    (:func:`engine.limits.simulation_bytes`: brokers × minutes, workloads × minutes, bundles, topics)."""
    from ..config import LoadBalancerConfig

    default_bundles = LoadBalancerConfig().defaultNumberOfNamespaceBundles
    bundles = sum(n.bundles or default_bundles for n in sc.namespaces)
    topics = sum((w.partitions or w.topics or 1) for w in sc.workloads)
    return simulation_bytes(len(sc.brokers), int(minutes or sc.minutes), bundles, topics, len(sc.workloads))


def scenario_placements(sc: "Scenario") -> int:
    """Bundles the leader places by lookup at the start: those of ``owners: placement`` namespaces (and
    the ones an owners mapping leaves out), at most as many per namespace as it has topics (a bundle is
    looked up when one of its topics is)."""
    default_bundles = LoadBalancerConfig().defaultNumberOfNamespaceBundles
    topics: dict = {}
    for w in sc.workloads:
        topics[w.namespace] = topics.get(w.namespace, 0) + (w.partitions or w.topics or 1)
    total = 0
    for n in sc.namespaces:
        nb = n.bundles or default_bundles
        if n.owners == "placement":
            placed = nb
        elif isinstance(n.owners, str):  # round_robin, random: owned from the start
            placed = 0
        else:
            placed = max(nb - sum(len(ks) for _b, ks in n.owners), 0)  # ((broker, bundle indices), ...)
        total += min(placed, topics.get(n.name, 0))
    return total


def check_scenario_size(sc: "Scenario", minutes: int | None = None, field: str = "minutes") -> None:
    """Refuse, before it starts, a run longer than a year of minutes, estimated to need more memory
    than ``SHEDLAB_MAX_RUN_MB`` or to take more steps than ``SHEDLAB_MAX_SIM_STEPS`` (the message names
    the estimate, the limit and the variable)."""
    m = int(minutes or sc.minutes)
    if m > MAX_SIMULATION_MINUTES:
        raise InputError(f"must be at most {MAX_SIMULATION_MINUTES} (one year of minutes), got {m}",
                         source=sc.source, field=field)
    what = f"simulating {len(sc.brokers):,} brokers for {m:,} minutes ({len(sc.workloads):,} workloads)"
    check_run_memory(scenario_memory(sc, m), what, source=sc.source)
    placed = scenario_placements(sc)
    check_run_steps(simulation_steps(len(sc.brokers), m, placed),
                    what + (f" and placing {placed:,} bundles" if placed else ""), source=sc.source)



def expand_events(events, brokers) -> list:
    """Primitive timeline: joins at ``join`` and the file's events, restarts expanded into
    remove + add pairs; sorted by minute (stable: joins first, then file order)."""
    prim = [EventSpec(b.join, "add_broker", (("broker", b.id), ("initial", True)), -1)
            for b in brokers if b.join is not None]
    for e in events:
        if e.kind == "restart_broker":
            b, down = e.get("broker"), e.get("down")
            prim.append(EventSpec(e.at, "remove_broker", (("broker", b), ("mode", "graceful"), ("restart", True)),
                                  e.index))
            prim.append(EventSpec(e.at + down, "add_broker", (("broker", b), ("restart", True)), e.index))
        elif e.kind == "rolling_restart":
            for j, b in enumerate(e.get("brokers")):
                t0 = e.at + j * e.get("every")
                prim.append(EventSpec(t0, "remove_broker", (("broker", b), ("mode", "graceful"), ("restart", True)),
                                      e.index))
                prim.append(EventSpec(t0 + e.get("down"), "add_broker", (("broker", b), ("restart", True)), e.index))
        elif e.kind == "crash_broker":
            prim.append(EventSpec(e.at, "remove_broker", (("broker", e.get("broker")), ("mode", "crash")), e.index))
        else:
            prim.append(e)
    return sorted(prim, key=lambda e: (e.at, e.index))

