"""Scenario files for the cluster simulator: the cluster, its traffic, and what happens when.

A scenario is a YAML or JSON document (format in ``docs/scenarios.md``). :func:`load_scenario`
reads and validates one; every problem raises :class:`engine.errors.InputError` naming the file and
the field (``brokers[2].cores``, ``events[0].broker``, ``config.maxUnloadPercentage``...).
:func:`parse_scenario` does the same for an already-parsed mapping (the dashboard's uploads).

Examples
--------
>>> s = parse_scenario({"name": "tiny", "minutes": 5,
...                     "brokers": [{"id": "b{i}:8080", "count": 2}],
...                     "namespaces": [{"name": "t/ns", "bundles": 4, "owners": "round_robin"}],
...                     "workloads": [{"name": "w", "namespace": "t/ns", "topics": 8, "rate": 1000}]})
>>> [b.id for b in s.brokers], s.namespaces[0].bundles, s.workloads[0].topics
(['b0:8080', 'b1:8080'], 4, 8)
>>> parse_scenario({"name": "x", "minutes": 0, "brokers": [], "namespaces": []})
Traceback (most recent call last):
...
engine.errors.InputError: field minutes: must be at least 1, got 0
"""
from __future__ import annotations

import json
import math
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import PRESETS, LoadBalancerConfig
from ..errors import InputError
from ..io import read_input_text
from ..limits import MAX_QUANTITY, MAX_SIMULATION_MINUTES, check_run_memory, simulation_bytes

__all__ = [
    "Scenario",
    "BrokerSpec",
    "NamespaceSpec",
    "WorkloadSpec",
    "PatternSpec",
    "EventSpec",
    "CostModel",
    "NoiseModel",
    "TimingModel",
    "MetricsSpec",
    "load_scenario",
    "parse_scenario",
    "scenario_memory",
    "check_scenario_size",
    "parse_scenario_text",
    "expand_events",
    "list_scenarios",
    "scenario_path",
    "SCENARIOS_DIR",
    "EVENT_KINDS",
    "PATTERN_KINDS",
]

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


# ------------------------------------------------------------------------------------------- reading
def scenario_path(name: str) -> Path:
    """Path of a shipped scenario by name (``samples/scenarios/NAME.yaml``) or a file path."""
    p = Path(name)
    if p.exists():
        return p
    for ext in (".yaml", ".yml", ".json"):
        q = SCENARIOS_DIR / f"{name}{ext}"
        if q.exists():
            return q
    raise InputError("no such scenario file (nor a shipped scenario of that name)", source=str(name))


def list_scenarios() -> list[dict]:
    """Shipped scenarios: ``[{"name", "title", "description", "path"}]`` sorted by name."""
    out = []
    for p in sorted(SCENARIOS_DIR.glob("*.y*ml")) + sorted(SCENARIOS_DIR.glob("*.json")):
        s = load_scenario(p)
        out.append({"name": s.name, "title": s.title, "description": s.description, "path": str(p)})
    return sorted(out, key=lambda d: d["name"])


def load_scenario(path) -> Scenario:
    """Read and validate a scenario file (YAML or JSON), or a shipped scenario by name."""
    p = scenario_path(str(path)) if not isinstance(path, Path) or not path.exists() else path
    src = str(p)
    text = read_input_text(p)
    return parse_scenario_text(text, source=src, json_only=p.suffix.lower() == ".json")


def parse_scenario_text(text: str, source: str | None = None, json_only: bool = False) -> Scenario:
    """Parse YAML (a superset of JSON) or JSON text into a validated :class:`Scenario`."""
    from ..bounded import loads_json, loads_yaml

    # within the input limits (engine.limits): nesting, YAML nodes after aliases, size
    data = loads_json(text, source, "the scenario") if json_only else loads_yaml(text, source)
    return parse_scenario(data, source=source)


# ------------------------------------------------------------------------------------------- validation
class _V:
    """Typed getters raising :class:`InputError` with the file and the field path."""

    def __init__(self, source):
        self.source = source

    def err(self, path, msg):
        return InputError(msg, source=self.source, field=path or None)

    def obj(self, x, path) -> dict:
        if not isinstance(x, dict):
            raise self.err(path, f"expected a mapping, got {_tname(x)}")
        return x

    def lst(self, x, path) -> list:
        if not isinstance(x, list):
            raise self.err(path, f"expected a list, got {_tname(x)}")
        return x

    def keys(self, d, allowed, path):
        bad = [k for k in d if k not in allowed]
        if bad:
            hint = ""
            if isinstance(bad[0], bool):
                hint = " (YAML reads an unquoted on/off/yes/no key as a boolean: quote it)"
            raise self.err(_j(path, str(bad[0])), f"unknown key{hint}; expected one of: {', '.join(sorted(allowed))}")

    def num(self, d, key, path, default=None, *, lo=None, hi=None, integer=False, required=False,
            allow_none=False, lo_open=False):
        f = _j(path, key)
        if key not in d or d[key] is None:
            if required:
                raise self.err(f, "required")
            if d.get(key, 0) is None and allow_none:
                return None
            return default
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    raise self.err(f, f"expected a number, got {v!r}") from None
            else:
                raise self.err(f, f"expected a number, got {_tname(v)}")
        v = float(v)
        if not math.isfinite(v):
            raise self.err(f, f"expected a finite number, got {v}")
        if hi is None and abs(v) > MAX_QUANTITY:  # every number has a range (engine.limits)
            raise self.err(f, f"out of range: {v:g} is larger than {MAX_QUANTITY:g}")
        if integer:
            if not v.is_integer():
                raise self.err(f, f"expected an integer, got {v:g}")
            v = int(v)
        if lo is not None and (v <= lo if lo_open else v < lo):
            raise self.err(f, f"must be {'greater than' if lo_open else 'at least'} {lo:g}, got {v:g}")
        if hi is not None and v > hi:
            raise self.err(f, f"must be at most {hi:g}, got {v:g}")
        return v

    def string(self, d, key, path, default=None, required=False):
        f = _j(path, key)
        if key not in d or d[key] is None:
            if required:
                raise self.err(f, "required")
            return default
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.err(f, f"expected a string, got {_tname(v)}")
        v = str(v).strip()
        if required and not v:
            raise self.err(f, "must not be empty")
        return v


def _tname(x) -> str:
    return "null" if x is None else {dict: "mapping", list: "list", str: "string", bool: "boolean"}.get(
        type(x), type(x).__name__)


def _j(path, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _expand(v: _V, items, path):
    """Entries with ``count: N`` expand into N copies whose string fields get ``{i}`` formatted."""
    out = []
    for i, raw in enumerate(v.lst(items, path)):
        p = _j(path, i)
        d = v.obj(raw, p)
        n = v.num(d, "count", p, None, lo=1, hi=100_000, integer=True)
        if n is None:
            out.append((p, d))
            continue
        start = v.num(d, "first", p, 0, lo=0, integer=True)
        for j in range(start, start + n):
            e = {}
            for k, x in d.items():
                if k in ("count", "first"):
                    continue
                if isinstance(x, str) and "{" in x:
                    _check_template(v, x, _j(p, k))
                    try:
                        x = x.format(i=j)
                    except (KeyError, IndexError, ValueError) as exc:
                        raise v.err(_j(p, k), f"bad template {x!r}: {exc}") from None
                e[k] = x
            out.append((f"{p}#{j}", e))
    return out


_TEMPLATE_SPEC = re.compile(r"[<>^=]?0?\d{0,2}[dxXob]?")


def _check_template(v: _V, x: str, path: str) -> None:
    """Templates name only ``{i}``, with at most a short format (``{i:03d}``): no attribute or index
    look-ups (``{i.__class__}``), no 1 GB padding (``{i:>999999999}``)."""
    try:
        parts = list(string.Formatter().parse(x))
    except ValueError as exc:
        raise v.err(path, f"bad template {x[:80]!r}: {exc}") from None
    for _lit, fname, spec, conv in parts:
        if fname is None:
            continue
        if fname != "i" or conv or not _TEMPLATE_SPEC.fullmatch(spec or ""):
            raise v.err(path, f"bad template {x[:80]!r}: only {{i}} or {{i:FORMAT}} with a width under 100 "
                              "are allowed")


def scenario_memory(sc: "Scenario", minutes: int | None = None) -> float:
    """Bytes a run of ``sc`` (for ``minutes``, default its own) is estimated to need
    (:func:`engine.limits.simulation_bytes`: brokers × minutes, workloads × minutes, bundles, topics)."""
    from ..config import LoadBalancerConfig

    default_bundles = LoadBalancerConfig().defaultNumberOfNamespaceBundles
    bundles = sum(n.bundles or default_bundles for n in sc.namespaces)
    topics = sum((w.partitions or w.topics or 1) for w in sc.workloads)
    return simulation_bytes(len(sc.brokers), int(minutes or sc.minutes), bundles, topics, len(sc.workloads))


def check_scenario_size(sc: "Scenario", minutes: int | None = None, field: str = "minutes") -> None:
    """Refuse, before it starts, a run longer than a year of minutes or estimated to need more memory
    than ``SHEDLAB_MAX_RUN_MB`` (the message names the estimate, the limit and the variable)."""
    m = int(minutes or sc.minutes)
    if m > MAX_SIMULATION_MINUTES:
        raise InputError(f"must be at most {MAX_SIMULATION_MINUTES} (one year of minutes), got {m}",
                         source=sc.source, field=field)
    check_run_memory(scenario_memory(sc, m),
                     f"simulating {len(sc.brokers):,} brokers for {m:,} minutes "
                     f"({len(sc.workloads):,} workloads)", source=sc.source)


_TOP = {"name", "title", "description", "minutes", "seed", "preset", "config", "leader", "brokers", "namespaces",
        "workloads", "events", "cost", "noise", "timing", "metrics", "expect", "notes", "policies"}


def parse_scenario(data: Any, source: str | None = None) -> Scenario:
    """Validate a parsed scenario document and return a :class:`Scenario` (see module docs)."""
    v = _V(source)
    d = v.obj(data, "")
    v.keys(d, _TOP, "")
    name = v.string(d, "name", "", required=True)
    minutes = v.num(d, "minutes", "", required=True, lo=1, hi=525_600, integer=True)
    seed = v.num(d, "seed", "", 0, lo=0, integer=True)
    preset = v.string(d, "preset", "")
    if preset is not None and preset not in PRESETS:
        raise v.err("preset", f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
    # config: validated by building it
    cfg_raw = d.get("config") or {}
    v.obj(cfg_raw, "config")
    config = tuple((str(k), (_conf_str(x))) for k, x in cfg_raw.items())
    try:
        base = PRESETS[preset] if preset else LoadBalancerConfig()
        cfg = base.with_values(dict(config), source=source) if config else base
    except InputError as exc:
        raise InputError(exc.message, source=source, field=f"config.{exc.field}" if exc.field else "config") from None

    brokers = []
    seen = {}
    for p, b in _expand(v, d.get("brokers"), "brokers"):
        v.keys(b, {"id", "cores", "nic_gbps", "heap_mb", "direct_memory_mb", "background_cpu", "heap_used", "join"}, p)
        bid = v.string(b, "id", p, required=True)
        if bid in seen:
            raise v.err(_j(p, "id"), f"duplicate broker id {bid!r} (also {seen[bid]})")
        seen[bid] = p
        join_raw = b.get("join", 0)
        join = None if join_raw is None else v.num(b, "join", p, 0, lo=0, integer=True)
        brokers.append(BrokerSpec(
            id=bid, cores=v.num(b, "cores", p, 8.0, lo=0, lo_open=True, hi=10_000),
            nic_gbps=v.num(b, "nic_gbps", p, 10.0, lo=0, lo_open=True, hi=100_000),
            heap_mb=v.num(b, "heap_mb", p, 8192.0, lo=0, lo_open=True),
            direct_memory_mb=v.num(b, "direct_memory_mb", p, 4096.0, lo=0, lo_open=True),
            background_cpu=v.num(b, "background_cpu", p, 5.0, lo=0, hi=100),
            heap_used=v.num(b, "heap_used", p, 30.0, lo=0, hi=100), join=join))
    if not brokers:
        raise v.err("brokers", "at least one broker is required")
    if not any(b.join == 0 for b in brokers):
        raise v.err("brokers", "no broker starts at minute 0 (join: 0)")
    ids = {b.id for b in brokers}

    namespaces = []
    ns_seen = {}
    for p, n in _expand(v, d.get("namespaces"), "namespaces"):
        v.keys(n, {"name", "bundles", "owners"}, p)
        nm = v.string(n, "name", p, required=True)
        parts = nm.split("/")
        if len(parts) != 2 or not all(parts):
            raise v.err(_j(p, "name"), f"expected 'tenant/namespace', got {nm!r}")
        if nm in ns_seen:
            raise v.err(_j(p, "name"), f"duplicate namespace {nm!r} (also {ns_seen[nm]})")
        ns_seen[nm] = p
        nb = v.num(n, "bundles", p, None, lo=1, hi=65_536, integer=True)
        owners = _owners(v, n.get("owners", "placement"), _j(p, "owners"), ids, nb or cfg.defaultNumberOfNamespaceBundles,
                         brokers)
        namespaces.append(NamespaceSpec(nm, nb, owners))
    if not namespaces:
        raise v.err("namespaces", "at least one namespace is required")

    workloads = []
    w_seen = {}
    for p, w in _expand(v, d.get("workloads") or [], "workloads"):
        v.keys(w, {"name", "namespace", "topic", "topics", "partitions", "rate", "rate_per_topic", "msg_size",
                   "subscriptions", "skew", "start", "stop", "producers", "consumers", "producers_per_topic",
                   "consumers_per_subscription"}, p)
        wn = v.string(w, "name", p, required=True)
        if wn in w_seen:
            raise v.err(_j(p, "name"), f"duplicate workload {wn!r} (also {w_seen[wn]})")
        w_seen[wn] = p
        ns = v.string(w, "namespace", p, required=True)
        if ns not in ns_seen:
            raise v.err(_j(p, "namespace"), f"unknown namespace {ns!r}; defined: {', '.join(ns_seen)}")
        topics = v.num(w, "topics", p, None, lo=1, hi=5_000_000, integer=True)
        parts = v.num(w, "partitions", p, None, lo=1, hi=100_000, integer=True)
        if topics is not None and parts is not None:
            raise v.err(_j(p, "partitions"), "give either topics or partitions, not both")
        n_topics = parts or topics or 1
        rate = v.num(w, "rate", p, None, lo=0)
        rpt = v.num(w, "rate_per_topic", p, None, lo=0)
        if rate is not None and rpt is not None:
            raise v.err(_j(p, "rate_per_topic"), "give either rate or rate_per_topic, not both")
        total = rate if rate is not None else (rpt or 0.0) * n_topics
        start = v.num(w, "start", p, 0, lo=0, integer=True)
        stop = v.num(w, "stop", p, None, lo=0, integer=True)
        if stop is not None and stop <= start:
            raise v.err(_j(p, "stop"), f"must be after start ({start}), got {stop}")
        workloads.append(WorkloadSpec(
            name=wn, namespace=ns, topic=v.string(w, "topic", p, wn) or wn, topics=topics or (0 if parts else 1),
            partitions=parts or 0, rate=total, msg_size=v.num(w, "msg_size", p, 1024.0, lo=0, lo_open=True),
            subscriptions=v.num(w, "subscriptions", p, 1, lo=0, hi=10_000, integer=True),
            skew=v.num(w, "skew", p, 0.0, lo=0, hi=5), start=start, stop=stop,
            producers=_patterns(v, w.get("producers"), _j(p, "producers")),
            consumers=_patterns(v, w.get("consumers"), _j(p, "consumers")),
            producers_per_topic=v.num(w, "producers_per_topic", p, 1, lo=0, integer=True),
            consumers_per_subscription=v.num(w, "consumers_per_subscription", p, 1, lo=0, integer=True)))
    wl_names = set(w_seen)

    events = _events(v, d.get("events") or [], minutes, brokers, wl_names, cfg, source)

    leader = v.string(d, "leader", "")
    if leader is not None and leader not in ids:
        raise v.err("leader", f"unknown broker {leader!r}")

    cost = _section(v, d, "cost", CostModel, {"cpu_per_msg_in": (0, None), "cpu_per_msg_out": (0, None),
                                              "cpu_per_mib": (0, None), "replication": (0, 10),
                                              "direct_memory_base_mb": (0, None), "direct_memory_per_mib": (0, None)})
    noise = _section(v, d, "noise", NoiseModel, {"traffic": (0, 1), "cpu": (0, 50), "heap": (0, 50)})
    timing = _section(v, d, "timing", TimingModel, {"unload_unavailable_seconds": (0, 60),
                                                    "crash_unavailable_seconds": (0, 3600)})
    metrics = _section(v, d, "metrics", MetricsSpec, {"settle_window": (1, None, True), "settle_range": (0, 100),
                                                      "settle_from": (0, None, True),
                                                      "oscillation_threshold": (0, 100)})
    sc = Scenario(name=name, minutes=minutes, brokers=tuple(brokers), namespaces=tuple(namespaces),
                  workloads=tuple(workloads), events=tuple(events), title=v.string(d, "title", "", "") or "",
                  description=v.string(d, "description", "", "") or "", seed=seed, preset=preset,
                  config=config, leader=leader, cost=cost, noise=noise, timing=timing, metrics=metrics,
                  expect=d.get("expect"), source=source, policies=_policies(d, source))
    check_scenario_size(sc)
    return sc


def _policies(d, source):
    """``policies:`` — the bundle shape of :mod:`engine.policies` (``namespaceIsolationPolicies`` as
    ``ns-isolation-policy list`` prints it, ``antiAffinityGroups`` {namespace: group}, ``failureDomains``
    as ``clusters list-failure-domains`` prints it); the simulated leader applies them."""
    if d.get("policies") is None:
        return None
    from ..policies import read_policies_json

    obj = d["policies"]
    if not isinstance(obj, dict):
        raise InputError("expected namespaceIsolationPolicies / antiAffinityGroups / failureDomains", source=source,
                         field="policies")
    unknown = sorted(set(obj) - {"namespaceIsolationPolicies", "antiAffinityGroups", "failureDomains"})
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}; expected namespaceIsolationPolicies, antiAffinityGroups or "
                         "failureDomains", source=source, field="policies")
    try:
        return read_policies_json(obj, source or "<scenario>", "bundle")
    except InputError as exc:
        raise InputError(exc.message, source=source, field=f"policies.{exc.field}" if exc.field else "policies") from None


def _conf_str(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (list, tuple)):
        return ",".join(str(i) for i in x)
    return str(x) if not isinstance(x, str) else x


def _section(v: _V, d, key, cls, spec):
    raw = d.get(key)
    if raw is None:
        return cls()
    o = v.obj(raw, key)
    v.keys(o, set(spec), key)
    kw = {}
    for k, rng in spec.items():
        lo, hi = rng[0], rng[1]
        integer = len(rng) > 2 and rng[2]
        x = v.num(o, k, key, None, lo=lo, hi=hi, integer=integer)
        if x is not None:
            kw[k] = x
    return cls(**kw)


def _owners(v: _V, raw, path, ids, n_bundles, brokers):
    if isinstance(raw, str):
        if raw not in OWNER_MODES:
            raise v.err(path, f"expected one of {', '.join(OWNER_MODES)} or a mapping broker -> [bundle indices], "
                              f"got {raw!r}")
        return raw
    o = v.obj(raw, path)
    start_ids = {b.id for b in brokers if b.join == 0}
    taken = {}
    out = []
    for b, idx in o.items():
        bp = _j(path, str(b))
        if b not in ids:
            raise v.err(bp, f"unknown broker {b!r}")
        if b not in start_ids:
            raise v.err(bp, f"broker {b!r} does not run at minute 0 (join is not 0)")
        lst = v.lst(idx, bp)
        for i, x in enumerate(lst):
            if isinstance(x, bool) or not isinstance(x, int):
                raise v.err(_j(bp, i), f"expected a bundle index (integer), got {x!r}")
            if not 0 <= x < n_bundles:
                raise v.err(_j(bp, i), f"bundle index {x} out of range 0..{n_bundles - 1}")
            if x in taken:
                raise v.err(_j(bp, i), f"bundle {x} is also given to {taken[x]}")
            taken[x] = b
        out.append((str(b), tuple(int(x) for x in lst)))
    return tuple(out)


def _patterns(v: _V, raw, path) -> tuple:
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for i, it in enumerate(items):
        p = _j(path, i) if isinstance(raw, list) else path
        o = v.obj(it, p)
        kind = v.string(o, "kind", p, required=True)
        if kind not in PATTERN_KINDS:
            raise v.err(_j(p, "kind"), f"unknown pattern {kind!r}; known: {', '.join(PATTERN_KINDS)}")
        allowed = {"constant": {"level"}, "ramp": {"from", "to", "start", "end"},
                   "diurnal": {"base", "amplitude", "period", "peak", "jitter"},
                   "on_off": {"on_minutes", "off_minutes", "start", "high", "low"}, "steps": {"steps", "initial"}}[kind]
        v.keys(o, allowed | {"kind"}, p)
        params = {}
        if kind == "constant":
            params["level"] = v.num(o, "level", p, 1.0, lo=0)
        elif kind == "ramp":
            params["from"] = v.num(o, "from", p, 0.0, lo=0)
            params["to"] = v.num(o, "to", p, 1.0, lo=0)
            params["start"] = v.num(o, "start", p, 0, lo=0, integer=True)
            params["end"] = v.num(o, "end", p, required=True, lo=0, integer=True)
            if params["end"] <= params["start"]:
                raise v.err(_j(p, "end"), f"must be after start ({params['start']})")
        elif kind == "diurnal":
            params["base"] = v.num(o, "base", p, 1.0, lo=0)
            params["amplitude"] = v.num(o, "amplitude", p, 0.5, lo=0)
            if params["amplitude"] > params["base"]:
                raise v.err(_j(p, "amplitude"), "must not exceed base (traffic cannot go negative)")
            params["period"] = v.num(o, "period", p, 1440, lo=1, integer=True)
            params["peak"] = v.num(o, "peak", p, 840, lo=0)
            params["jitter"] = v.num(o, "jitter", p, 0.0, lo=0)
        elif kind == "on_off":
            params["on"] = v.num(o, "on_minutes", p, required=True, lo=1, integer=True)
            params["off"] = v.num(o, "off_minutes", p, required=True, lo=1, integer=True)
            params["start"] = v.num(o, "start", p, 0, lo=0, integer=True)
            params["high"] = v.num(o, "high", p, 1.0, lo=0)
            params["low"] = v.num(o, "low", p, 0.0, lo=0)
        else:
            steps = v.lst(o.get("steps"), _j(p, "steps"))
            if not steps:
                raise v.err(_j(p, "steps"), "at least one [minute, level] step is required")
            parsed = []
            for j, s in enumerate(steps):
                sp = _j(_j(p, "steps"), j)
                if not (isinstance(s, list) and len(s) == 2):
                    raise v.err(sp, f"expected [minute, level], got {s!r}")
                m = v.num({"m": s[0]}, "m", sp, lo=0, integer=True, required=True)
                lv = v.num({"l": s[1]}, "l", sp, lo=0, required=True)
                if parsed and m <= parsed[-1][0]:
                    raise v.err(sp, "steps must be in increasing minute order")
                parsed.append((m, lv))
            params["steps"] = tuple(parsed)
            params["initial"] = v.num(o, "initial", p, 1.0, lo=0)
        out.append(PatternSpec(kind, tuple(params.items())))
    return tuple(out)


_EVENT_KEYS = {
    "add_broker": {"broker"},
    "remove_broker": {"broker", "mode"},
    "crash_broker": {"broker"},
    "restart_broker": {"broker", "down"},
    "rolling_restart": {"brokers", "down", "every"},
    "traffic": {"workload", "factor", "rate"},
    "cpu": {"broker", "cpu", "add", "minutes"},
    "config": {"set"},
}


def _events(v: _V, raw, minutes, brokers, workloads, cfg, source) -> list:
    ids = [b.id for b in brokers]
    out = []
    for i, e in enumerate(v.lst(raw, "events")):
        p = _j("events", i)
        o = v.obj(e, p)
        kind = v.string(o, "kind", p, required=True)
        if kind not in _EVENT_KEYS:
            raise v.err(_j(p, "kind"), f"unknown event kind {kind!r}; known: {', '.join(EVENT_KINDS)}")
        v.keys(o, _EVENT_KEYS[kind] | {"kind", "at"}, p)
        at = v.num(o, "at", p, required=True, lo=0, integer=True)
        if at >= minutes:
            raise v.err(_j(p, "at"), f"minute {at} is not inside the run (0..{minutes - 1})")
        params = {}
        if kind in ("add_broker", "remove_broker", "crash_broker", "restart_broker", "cpu"):
            b = v.string(o, "broker", p, required=True)
            if b not in ids:
                raise v.err(_j(p, "broker"), f"unknown broker {b!r}")
            params["broker"] = b
        if kind == "remove_broker":
            mode = v.string(o, "mode", p, "graceful")
            if mode not in ("graceful", "crash"):
                raise v.err(_j(p, "mode"), f"expected graceful or crash, got {mode!r}")
            params["mode"] = mode
        elif kind == "restart_broker":
            params["down"] = v.num(o, "down", p, 1, lo=1, integer=True)
        elif kind == "rolling_restart":
            bl = o.get("brokers", "all")
            if bl == "all":
                bl = [b.id for b in brokers if b.join is not None]
            bl = v.lst(bl, _j(p, "brokers"))
            for j, b in enumerate(bl):
                if b not in ids:
                    raise v.err(_j(_j(p, "brokers"), j), f"unknown broker {b!r}")
            params["brokers"] = tuple(bl)
            params["down"] = v.num(o, "down", p, 1, lo=1, integer=True)
            params["every"] = v.num(o, "every", p, 2, lo=1, integer=True)
        elif kind == "traffic":
            w = v.string(o, "workload", p, required=True)
            if w not in workloads:
                raise v.err(_j(p, "workload"), f"unknown workload {w!r}")
            params["workload"] = w
            f = v.num(o, "factor", p, None, lo=0)
            r = v.num(o, "rate", p, None, lo=0)
            if (f is None) == (r is None):
                raise v.err(p, "give exactly one of factor or rate")
            params["factor" if f is not None else "rate"] = f if f is not None else r
        elif kind == "cpu":
            c = v.num(o, "cpu", p, None, lo=0, hi=100)
            a = v.num(o, "add", p, None, lo=-100, hi=100)
            if (c is None) == (a is None):
                raise v.err(p, "give exactly one of cpu (absolute %) or add (points)")
            params["cpu" if c is not None else "add"] = c if c is not None else a
            params["minutes"] = v.num(o, "minutes", p, 1, lo=1, integer=True)
        elif kind == "config":
            s = v.obj(o.get("set"), _j(p, "set"))
            vals = {str(k): _conf_str(x) for k, x in s.items()}
            try:
                cfg.with_values(vals, source=source)
            except InputError as exc:
                raise InputError(exc.message, source=source,
                                 field=f"{p}.set.{exc.field}" if exc.field else f"{p}.set") from None
            params["set"] = tuple(vals.items())
        out.append(EventSpec(at, kind, tuple(params.items()), i))
    _check_timeline(v, out, brokers, minutes)
    return out


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


def _check_timeline(v: _V, events, brokers, minutes):
    """Brokers are added only when down and removed only when up (in minute, file order)."""
    alive = set()
    for e in expand_events(events, brokers):
        if e.at >= minutes and e.kind in ("add_broker",):
            continue  # a restart's re-add after the end of the run is harmless
        b = e.get("broker")
        where = f"events[{e.index}]" if e.index >= 0 else "brokers"
        if e.kind == "add_broker":
            if b in alive:
                raise v.err(where, f"broker {b!r} is already running at minute {e.at}")
            alive.add(b)
        elif e.kind == "remove_broker":
            if b not in alive:
                raise v.err(where, f"broker {b!r} is not running at minute {e.at}")
            alive.discard(b)
            if not alive:
                raise v.err(where, f"removing {b!r} at minute {e.at} leaves no broker running")
        elif e.kind == "cpu" and b not in alive:
            raise v.err(where, f"broker {b!r} is not running at minute {e.at}")
