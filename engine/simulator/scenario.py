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

from pathlib import Path
from typing import Any

from ..config import PRESETS, LoadBalancerConfig
from ..errors import InputError
from ..io import read_input_text
from ..limits import check_run_memory, check_run_steps, simulation_bytes, simulation_steps
from .scenario_check import _V, _expand, _j
from .scenario_spec import (
    EVENT_KINDS,
    OWNER_MODES,
    PATTERN_KINDS,
    SCENARIOS_DIR,
    BrokerSpec,
    CostModel,
    EventSpec,
    MetricsSpec,
    NamespaceSpec,
    NoiseModel,
    PatternSpec,
    Scenario,
    TimingModel,
    WorkloadSpec,
    check_scenario_size,
    expand_events,
    scenario_memory,
)

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




_TOP = {"name", "title", "description", "minutes", "seed", "preset", "config", "leader", "brokers", "namespaces",
        "workloads", "events", "cost", "noise", "timing", "metrics", "expect", "notes", "policies"}


def parse_scenario(data: Any, source: str | None = None) -> Scenario:
    """Validate a parsed scenario document and return a :class:`Scenario` (see module docs)."""
    v = _V(source)
    d = v.obj(data, "")
    v.keys(d, _TOP, "")
    name = v.string(d, "name", "", required=True)
    minutes = v.num(d, "minutes", "", required=True, lo=1, hi=525_600, integer=True)
    _check_counted_size(d.get("brokers"), minutes, source)
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


def _check_counted_size(brokers_raw, minutes: int, source) -> None:
    """The run-size limits on the brokers the ``brokers:`` entries will expand to (their ``count:``
    summed) × minutes, before any entry is expanded and checked one by one: a scenario of 100,000
    brokers is refused at once, not after its brokers are built (:func:`check_scenario_size` repeats
    the check on the parsed scenario, with bundles, topics and placements)."""
    if not isinstance(brokers_raw, list):
        return
    n = 0
    for b in brokers_raw:
        c = b.get("count") if isinstance(b, dict) else None
        n += c if isinstance(c, int) and not isinstance(c, bool) and 1 <= c <= 100_000 else 1
    what = f"simulating {n:,} brokers for {minutes:,} minutes"
    check_run_memory(simulation_bytes(n, minutes, 0, 0, 0), what, source=source)
    check_run_steps(simulation_steps(n, minutes), what, source=source)


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
