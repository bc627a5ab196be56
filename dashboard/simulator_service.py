"""The Simulator page's services: its state (and permalink), A/B runs, the parameter sweep, the report.

The page compares two runs of one scenario: run A and run B, each a shedding and a placement strategy
on a base config (the scenario file's, or a preset under the scenario's keys) plus the ``broker.conf``
keys the user changed. That state is one small value (:class:`SimState`) that the browser keeps,
the URL carries and every function here is called with; building it from untrusted input never
raises (a bad key or value is dropped with one message naming it).

Runs are the engine's (:func:`engine.simulator.run_scenario`); their tables are kept server-side in
the app's diskcache under ``simres:<session>:<params hash>`` (and the sweep under ``simsweep:…``), so
the browser's stores hold only keys, and the same form opened again in the same session (after
navigating away, or from a permalink) shows the cached results instead of running again.

Permalink
---------
``/simulator?scenario=bigo-homogeneous-start&minutes=30&seed=0&a.shed=AvgShedder&a.place=AvgShedder
&a.preset=bigo-avgshedder&a.loadBalancerAvgShedderLowThreshold=10&b.shed=ThresholdShedder
&b.place=LeastResourceUsageWithWeight`` — the same conventions as the Tuner's (:mod:`dashboard.permalink`):
every changed key under its own ``broker.conf`` name, here prefixed by the side it belongs to.
"""
from __future__ import annotations

import hashlib
import html as _html
import json
import math
import re
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import lru_cache
from typing import Callable, Mapping
from urllib.parse import urlencode

import pandas as pd

from engine.config import PRESETS, PULSAR_4_DEFAULTS, LoadBalancerConfig, key_info
from engine.errors import InputError

from .cache import get_cache
from .memo import Memo
from .permalink import flat_params
from .state import clamp_int
from .keys import (allowed_placements, canon_conf_value, coerce_values, default_placement, fmt_conf_value,
                   format_value, groups_for, key_spec, placement_names, shedding_names)

__all__ = ["DEFAULT_SCENARIO", "PRESET_LABELS", "SIDES", "MAX_MINUTES", "MAX_AXIS", "SWEEP_BUDGET", "RunSpec",
           "SimState", "default_state", "coerce_spec", "coerce_state", "encode", "decode", "scenario_options",
           "load", "scenario_facts", "base_config", "side_keys", "run_kwargs", "result_key",
           "run_pair", "load_result", "sweep_cell", "sweep_current", "RunData", "summary_rows", "config_diff", "event_rows", "event_kinds",
           "check_codes", "sweep_keys", "sweep_defaults", "parse_axis", "plan_sweep", "run_sweep", "load_sweep",
           "figures", "build_report", "report_filename", "parse_extra", "extra_text", "CONTROLLED_KEYS",
    "SNAPSHOT_PREFIX", "snapshot_source", "snapshot_scenario_id", "source_strategies"]

DEFAULT_SCENARIO = "bigo-homogeneous-start"
SIDES = ("a", "b")
#: base config of a side: "" = the scenario file's (its preset, else Pulsar 4.x) + its keys
PRESET_LABELS = {"": "scenario file", "pulsar-4": "Pulsar 4.x defaults", "pulsar-5": "Pulsar 5.0 defaults",
                 "bigo-avgshedder": "BIGO AvgShedder"}
#: keys a side sets through its strategy pickers, never as values
CONTROLLED_KEYS = ("loadBalancerLoadSheddingStrategy", "loadBalancerLoadPlacementStrategy", "loadManagerClassName")
#: longest run the page accepts (two simulated days; the CLI has no limit)
MAX_MINUTES = 2880
#: values per sweep axis, and the simulated broker-minutes a sweep may cost in total
MAX_AXIS = 6
SWEEP_BUDGET = 1_500_000
_TTL = 6 * 3600
_SHIPPED = re.compile(r"^(findings/)?[a-z0-9][a-z0-9-]{0,80}$")  # findings/: calibrated scenarios
_UPLOADED = re.compile(r"^scenario:[0-9a-f]{20}$")
#: the current snapshot source as the start state (engine.simulator.from_snapshot): "snapshot:<source id>"
SNAPSHOT_PREFIX = "snapshot:"
#: length of a run started from a snapshot when the form leaves minutes empty
SNAPSHOT_MINUTES = 60
_SESSION = re.compile(r"^[0-9a-f]{32}$")
_KEY = re.compile(r"^sim(res|sweep):(anon|[0-9a-f]{32}):[0-9a-f]{24}$")


# ============================================================================================ state
@dataclass(frozen=True)
class RunSpec:
    """One side: strategies (short names), base config (a preset name, "" = the scenario's) and the
    ``broker.conf`` keys changed from that base (as text, sorted)."""

    shed: str = "AvgShedder"
    place: str = "AvgShedder"
    preset: str = ""
    values: tuple = ()

    @property
    def value_dict(self) -> dict:
        return dict(self.values)

    def with_values(self, values: Mapping[str, str]) -> "RunSpec":
        return replace(self, values=tuple(sorted(values.items())))

    def label(self) -> str:
        """``"AvgShedder"`` (one instance plays both roles) or ``"ThresholdShedder + LeastResourceUsageWithWeight"``."""
        return self.shed if self.place == self.shed else f"{self.shed} + {self.place}"

    def to_json(self) -> dict:
        return {"shed": self.shed, "place": self.place, "preset": self.preset, "values": dict(self.values)}


@dataclass(frozen=True)
class SimState:
    """The whole page: scenario, minutes (None = the scenario's), seed, and the two sides."""

    scenario: str = DEFAULT_SCENARIO
    minutes: int | None = None
    seed: int = 0
    a: RunSpec = field(default_factory=lambda: RunSpec("AvgShedder", "AvgShedder", "bigo-avgshedder"))
    b: RunSpec = field(default_factory=lambda: RunSpec("ThresholdShedder", "LeastResourceUsageWithWeight", ""))

    def side(self, s: str) -> RunSpec:
        return self.a if s == "a" else self.b

    def with_side(self, s: str, spec: RunSpec) -> "SimState":
        return replace(self, **{s: spec})

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "minutes": self.minutes, "seed": self.seed, "a": self.a.to_json(),
                "b": self.b.to_json()}

    def digest(self) -> str:
        """A stable hash of what a run depends on (the cache key's last part)."""
        return hashlib.blake2s(json.dumps(self.to_json(), sort_keys=True).encode(), digest_size=12).hexdigest()


def default_state() -> SimState:
    """What a new user sees: BIGO's homogeneous start, BIGO's AvgShedder vs ThresholdShedder + LRUWW."""
    return SimState()


_int = clamp_int


_canon = canon_conf_value


def coerce_spec(data, base: LoadBalancerConfig | None = None, side: str = "") -> tuple[RunSpec, list[str]]:
    """A :class:`RunSpec` from untrusted JSON, and one message per thing dropped or changed.

    ``base`` is the side's base config (scenario + preset); values equal to it are dropped. Pairs
    Pulsar refuses (AvgShedder placement without AvgShedder shedding, a modular placement with the
    extensible TransferShedder, ...) are fixed the way the Tuner fixes them, with a message.
    """
    who = f"run {side.upper()}: " if side else ""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        data = {}
    shed = data.get("shed") if isinstance(data.get("shed"), str) else None
    place = data.get("place") if isinstance(data.get("place"), str) else None
    if shed not in shedding_names():
        if shed:
            errors.append(f"{who}unknown shedding strategy {shed!r}; using AvgShedder")
        shed = "AvgShedder"
    if place not in placement_names():
        if place:
            errors.append(f"{who}unknown placement strategy {place!r}")
        place = default_placement(shed)
    if place == "AvgShedder" and shed != "AvgShedder":
        errors.append(f"{who}AvgShedder placement needs AvgShedder shedding; placement set to {default_placement(shed)}")
        place = default_placement(shed)
    elif place not in allowed_placements(shed):
        alt = default_placement(shed)
        errors.append(f"{who}{place} does not run with {shed}'s load manager; placement set to {alt}")
        place = alt
    preset = data.get("preset") if isinstance(data.get("preset"), str) else ""
    if preset not in PRESET_LABELS:
        errors.append(f"{who}unknown preset {preset[:40]!r}; using the scenario file's config")
        preset = ""
    raw = data.get("values") if isinstance(data.get("values"), Mapping) else {}
    values, bad = coerce_values(raw, skip=CONTROLLED_KEYS, base=base, who=who)
    errors += bad
    return RunSpec(shed, place, preset, tuple(sorted(values.items()))), errors


def coerce_state(data) -> tuple[SimState, list[str]]:
    """A :class:`SimState` from untrusted JSON (the browser's stores, a decoded link); never raises."""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        return default_state(), errors
    d = default_state()
    scen = data.get("scenario") if isinstance(data.get("scenario"), str) else d.scenario
    sc = None
    try:
        sc = load(scen)
    except InputError as exc:
        errors.append(f"{exc} — showing {DEFAULT_SCENARIO}")
        scen = DEFAULT_SCENARIO
        sc = load(scen)
    minutes = _int(data.get("minutes"), None, 1)
    if minutes is not None and minutes > MAX_MINUTES:
        errors.append(f"minutes: at most {MAX_MINUTES} on this page; using {MAX_MINUTES}")
        minutes = MAX_MINUTES
    seed = _int(data.get("seed"), 0, 0, 2**31 - 1)
    sides = {}
    for s in SIDES:
        raw = data.get(s)
        preset = raw.get("preset") if isinstance(raw, Mapping) and isinstance(raw.get("preset"), str) else ""
        base = base_config(sc, preset if preset in PRESET_LABELS else "")
        sides[s], errs = coerce_spec(raw if isinstance(raw, Mapping) else d.side(s).to_json(), base, s)
        errors += errs
    return SimState(scen, minutes, seed, sides["a"], sides["b"]), errors


# ------------------------------------------------------------------------------------------ permalink
def encode(state: SimState) -> str:
    """The query string (without ``?``) of a state, in a stable order."""
    items = [("scenario", state.scenario)]
    if state.minutes is not None:
        items.append(("minutes", str(state.minutes)))
    items.append(("seed", str(state.seed)))
    for s in SIDES:
        sp = state.side(s)
        items += [(f"{s}.shed", sp.shed), (f"{s}.place", sp.place)]
        if sp.preset:
            items.append((f"{s}.preset", sp.preset))
        items += [(f"{s}.{k}", v) for k, v in sorted(sp.values)]
    return urlencode(items, safe=":/,")


def decode(params: Mapping) -> tuple[SimState | None, list[str]]:
    """A state from query parameters (``layout(**kwargs)``); ``(None, [])`` when they carry none."""
    if not params:
        return None, []
    flat = flat_params(params)
    if not any(k in ("scenario", "minutes") or k[:2] in ("a.", "b.") for k in flat):
        return None, []
    errors = []
    data: dict = {"scenario": flat.get("scenario", DEFAULT_SCENARIO), "minutes": flat.get("minutes"),
                  "seed": flat.get("seed", "0")}
    for k in ("minutes", "seed"):
        if flat.get(k) not in (None, "") and not re.fullmatch(r"\d{1,10}", flat[k]):
            errors.append(f"link: {k}={flat[k][:20]!r} is not a whole number; ignored")
            data[k] = None if k == "minutes" else 0
    for s in SIDES:
        spec = {"values": {}}
        for k, v in flat.items():
            if not k.startswith(f"{s}."):
                continue
            name = k[2:]
            if name in ("shed", "place", "preset"):
                spec[name] = v
            else:
                spec["values"][name] = v
        data[s] = spec
    unknown = [k for k in flat if k not in ("scenario", "minutes", "seed") and k[:2] not in ("a.", "b.")]
    errors += [f"link: unknown parameter {k[:60]!r} ignored" for k in unknown]
    state, more = coerce_state(data)
    return state, errors + [m if m.startswith("link") else f"link: {m}" for m in more]


# ============================================================================================ scenarios
@lru_cache(maxsize=1)
def _shipped() -> tuple:
    from engine.simulator import list_scenarios, load_scenario
    from engine.simulator.findings import FINDINGS_DIR

    # the calibrated scenarios of the field findings (samples/scenarios/findings/), as "findings/NAME"
    found = [{"name": f"findings/{p.stem}", "title": sc.title, "description": sc.description, "path": str(p)}
             for p in sorted(FINDINGS_DIR.glob("*.yaml")) for sc in [load_scenario(p)]]
    return tuple(list_scenarios()) + tuple(found)


def scenario_options(sid=None, extra: str | None = None) -> list[dict]:
    """Options of the scenario picker: shipped scenarios, then this session's uploads."""
    from .sources import list_scenarios as session_scenarios

    opts = [{"label": f"{s['name']} — {s['title']}", "value": s["name"], "title": s["description"]}
            for s in _shipped()]
    for x in session_scenarios(sid) if sid else []:
        title = x.get("title") or x.get("name") or ""
        opts.append({"label": f"Uploaded · {x['label']}" + (f" — {title}" if title else ""), "value": x["id"]})
    if extra and extra not in {o["value"] for o in opts}:
        try:
            sc = load(extra)
            what = "The current snapshot" if snapshot_source(extra) else "Uploaded"
            opts.append({"label": f"{what} · {sc.title or sc.name}", "value": extra})
        except InputError:
            pass
    return opts


def snapshot_source(scenario_id) -> str | None:
    """The source id of a ``snapshot:<source id>`` picker value (None for any other value)."""
    if isinstance(scenario_id, str) and scenario_id.startswith(SNAPSHOT_PREFIX):
        return scenario_id[len(SNAPSHOT_PREFIX):]
    return None


def snapshot_scenario_id(source_id: str) -> str:
    """The picker value that starts the simulation from ``source_id``'s snapshot."""
    return SNAPSHOT_PREFIX + source_id


def _snapshot_scenario(source_id: str):
    """The :class:`~engine.simulator.from_snapshot.SnapshotScenario` of a source (its last step): the
    source's own broker.conf values (a sample's, a History minute's backtest, an ELM upload's
    TransferShedder + the ELM placement) are the scenario's config."""
    from engine.simulator.from_snapshot import scenario_from_snapshot

    from .sources import get_snapshot, parse_source_id, sample_state, source_info

    parse_source_id(source_id)  # a malformed id raises InputError before anything is read
    info = source_info(source_id)
    snap = get_snapshot(source_id)
    values = (sample_state(source_id) or {}).get("values") or {}
    label = str(info.get("label") or source_id)[:120]
    kind = "ELM snapshot" if info.get("elm") else "snapshot"
    step = f" (step {snap.step + 1} of {snap.steps})" if snap.steps > 1 else ""
    return scenario_from_snapshot(snap.ld, minutes=SNAPSHOT_MINUTES, config=values, name=f"{kind}: {label}",
                                  title=f"{label}{step}, traffic held steady")


def source_strategies(state: "SimState") -> tuple["SimState", list[str]]:
    """Run A on the strategies of the snapshot's source when the picker switches to a snapshot: an ELM
    snapshot runs TransferShedder + the ELM placement, a sample its own strategies. Unchanged for a
    scenario file or a source that names none."""
    from engine.strategies import placement_name, shedding_name

    from .sources import sample_state

    src = snapshot_source(state.scenario)
    vals = ((sample_state(src) or {}).get("values") or {}) if src else {}
    raw = vals.get("loadBalancerLoadSheddingStrategy")
    if not raw:
        return state, []
    try:
        shed = shedding_name(raw)
        place = placement_name(vals["loadBalancerLoadPlacementStrategy"]) if vals.get(
            "loadBalancerLoadPlacementStrategy") else default_placement(shed)
        base = base_config(load(state.scenario))
    except Exception:  # noqa: BLE001 - a name this build does not know: keep the form as it is
        return state, []
    if (state.a.shed, state.a.place, state.a.preset, state.a.values) == (shed, place, "", ()):
        return state, []
    a, errs = coerce_spec({"shed": shed, "place": place, "preset": "", "values": {}}, base, "a")
    return state.with_side("a", a), [f"run A: {a.label()}, the strategies of the snapshot's source"] + errs


@lru_cache(maxsize=32)
def _load_cached(scenario_id: str):
    from engine.simulator import load_scenario, parse_scenario

    if _UPLOADED.match(scenario_id):
        from .sources import get_scenario

        got = get_scenario(scenario_id)
        return parse_scenario(got["data"], source=got["info"].get("label", "upload"))
    if snapshot_source(scenario_id) is not None:
        return _snapshot_scenario(snapshot_source(scenario_id))
    return load_scenario(scenario_id)


def load(scenario_id):
    """The validated :class:`~engine.simulator.Scenario` of a picker value (a shipped name, an
    uploaded ``scenario:<hash>``, or ``snapshot:<source id>``: the snapshot of a sample, upload, live or
    History source as the start state, :mod:`engine.simulator.from_snapshot`). Anything else raises
    :class:`InputError` — a browser value is never used as a path."""
    if not isinstance(scenario_id, str) or not scenario_id:
        raise InputError("no scenario chosen", field="scenario")
    if _UPLOADED.match(scenario_id) or (snapshot_source(scenario_id) is not None and len(scenario_id) <= 200):
        return _load_cached(scenario_id)
    if not _SHIPPED.match(scenario_id) or scenario_id not in {s["name"] for s in _shipped()}:
        raise InputError(f"unknown scenario {scenario_id[:60]!r}", field="scenario")
    return _load_cached(scenario_id)


def scenario_facts(sc) -> dict:
    """Small facts shown beside the picker."""
    started = sum(1 for b in sc.brokers if b.join == 0)
    return {"name": sc.name, "title": sc.title or sc.name, "description": sc.description, "minutes": sc.minutes,
            "brokers": len(sc.brokers), "started": started, "namespaces": len(sc.namespaces),
            "bundles": sum((n.bundles or 0) for n in sc.namespaces), "events": len(sc.events),
            "workloads": len(sc.workloads)}


def base_config(sc, preset: str = "") -> LoadBalancerConfig:
    """A side's base: ``preset`` (or the scenario's own) + the scenario's ``config`` keys."""
    return sc.lb_config(PRESETS[preset] if preset else None)


def side_keys(shed: str, place: str | None = None) -> list[str]:
    """The few keys a side shows as sliders: the shedding strategy's numeric keys (at most five)."""
    groups = groups_for(shed, place or default_placement(shed))
    keys = []
    for g in groups[:1]:
        for k in g.keys:
            try:
                if key_spec(k).kind == "slider":
                    keys.append(k)
            except KeyError:
                continue
    return keys[:5]


def parse_extra(text: str | None, side: str = "") -> tuple[dict, list[str]]:
    """``KEY=VALUE`` lines (``#`` comments, blank lines) → ``{key: text}`` and one message per bad line."""
    who = f"run {side.upper()}: " if side else ""
    out, errors = {}, []
    for i, line in enumerate((text or "").splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", "!")):
            continue
        k, sep, v = s.partition("=")
        if not sep:
            k, sep, v = s.partition(":")
        k = k.strip()
        if not sep or not k:
            errors.append(f"{who}line {i} {s[:40]!r}: expected KEY=VALUE; ignored")
            continue
        if k in CONTROLLED_KEYS:
            errors.append(f"{who}line {i}: {k} is set by the strategy pickers; ignored")
            continue
        out[k] = v.strip()
    return out, errors


def extra_text(spec: RunSpec, shown: list[str]) -> str:
    """The textarea of a side: its changed keys that have no slider, as ``broker.conf`` lines."""
    return "\n".join(f"{k}={v}" for k, v in spec.values if k not in shown)


# ============================================================================================ runs
def run_kwargs(state: SimState, side: str) -> dict:
    """Keyword arguments of :func:`engine.simulator.run_scenario` for one side."""
    sp = state.side(side)
    kw = {"strategy": sp.shed, "placement": sp.place, "seed": state.seed, "minutes": _minutes(state)}
    if sp.preset:
        kw["preset"] = sp.preset
    if sp.values:
        kw["set"] = dict(sp.values)
    return kw


def _minutes(state: SimState) -> int:
    sc = load(state.scenario)
    return min(state.minutes or sc.minutes, MAX_MINUTES)


def _session(sid) -> str:
    return sid if isinstance(sid, str) and _SESSION.match(sid) else "anon"


def result_key(sid, state: SimState, kind: str = "res") -> str:
    """``simres:<session>:<hash>`` — per session, per params."""
    return f"sim{kind}:{_session(sid)}:{state.digest()}"


_mem = Memo(4)  # the last results read, as live objects


@dataclass
class RunData:
    """One finished run, as the page keeps it."""

    side: str
    label: str
    spec: dict
    summary: dict
    events: pd.DataFrame
    brokers: pd.DataFrame
    cluster: pd.DataFrame
    config: LoadBalancerConfig
    cancelled: bool = False
    elapsed_s: float = 0.0

    @property
    def extensible(self) -> bool:
        return "load_std" in self.cluster


def _progress_sink(progress: Callable | None, base: int, total: int, text: str):
    if progress is None:
        return None
    last = [-1]

    def cb(done, _total):
        pct = int(100 * (base + done) / max(total, 1))
        if pct != last[0]:
            last[0] = pct
            progress(base + done, total, f"{text} · minute {done} of {_total}")
    return cb


def run_pair(state: SimState, sid, progress: Callable | None = None) -> dict:
    """Run A and B (or take them from the cache); ``{"key", "cached", "elapsed_s"}``.

    ``progress(done, total, text)`` is called about a hundred times per run. Engine problems
    (an incompatible pair, a bad config event) raise :class:`InputError` naming them.
    """
    from engine.simulator import run_scenario

    key = result_key(sid, state)
    cache = get_cache()
    if key in cache:
        return {"key": key, "cached": True, "elapsed_s": 0.0}
    sc = load(state.scenario)
    n = _minutes(state)
    t0 = time.perf_counter()
    runs = {}
    for i, s in enumerate(SIDES):
        sp = state.side(s)
        text = f"run {s.upper()} · {sp.shed} on {sc.name}"
        cb = _progress_sink(progress, i * n, 2 * n, text)
        r = run_scenario(sc, progress=cb, **run_kwargs(state, s))
        runs[s] = RunData(s, f"{s.upper()} · {sp.label()}", sp.to_json(), r.summary, r.events, r.brokers, r.cluster,
                          r.config, r.cancelled, r.elapsed_s)
    elapsed = time.perf_counter() - t0
    payload = {"state": state.to_json(), "runs": runs, "facts": scenario_facts(sc), "elapsed_s": elapsed,
               "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    cache.set(key, payload, expire=_TTL)
    _mem.put(key, payload)
    if progress is not None:
        progress(2 * n, 2 * n, "done")
    return {"key": key, "cached": False, "elapsed_s": round(elapsed, 3)}


def _check_key(key, sid, kind: str):
    m = _KEY.match(key or "") if isinstance(key, str) else None
    if not m or m.group(1) != kind or m.group(2) != _session(sid):
        raise InputError("these results belong to another session or are malformed: run again")


def load_result(key: str, sid) -> dict:
    """The payload of :func:`run_pair` (``{"state", "runs": {"a": RunData, "b": RunData}, …}``)."""
    _check_key(key, sid, "res")
    got = _mem.get(key)
    if got is None:
        got = get_cache().get(key)
        if got is None:
            raise InputError("the results are no longer on the server (expired or cleared): press Run again")
        _mem.put(key, got)
    return got


def cached_result(state: SimState, sid) -> str | None:
    """The key of this state's results when this session already has them."""
    key = result_key(sid, state)
    return key if key in get_cache() else None


__all__.append("cached_result")


# ============================================================================================ tables
#: summary rows: (label, summary key, "lower" = lower is better / "" = neutral, format)
SUMMARY_ROWS = [
    ("unloads", "unloads", "lower", "int"),
    ("unload rounds", "unload_rounds", "lower", "int"),
    ("bad placements (destination above average)", "bad_placements", "lower", "int"),
    ("random placements", "random_placements", "lower", "int"),
    ("first unload (minute)", "first_unload_minute", "", "minute"),
    ("settled (minute)", "settled_minute", "lower", "minute"),
    ("msg-rate max/min at the end", "msg_rate_ratio", "lower", "ratio"),
    ("throughput max/min at the end", "throughput_ratio", "lower", "ratio"),
    ("CPU range at the end (points)", "cpu_range", "lower", "pts"),
    ("usage std at the end (points)", "usage_std", "lower", "pts"),
    ("oscillation (swings per broker-hour)", "oscillation", "lower", "float"),
    ("unavailable seconds (unloads, lookups)", "unavailable_seconds", "lower", "int"),
    ("TransferShedder load std at the end (%)", "load_std", "", "pts"),
    ("TransferShedder target std (%)", "target_std", "", "pts"),
    ("std ≤ target from (minute)", "target_met_minute", "lower", "minute"),
]


_EXTENSIBLE_ROWS = ("load_std", "target_std", "target_met_minute")


def _fmt_summary(v, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "never" if fmt == "minute" else "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    if fmt == "int":
        return f"{int(v):,}"
    if fmt == "minute":
        return str(int(v))
    if fmt == "ratio":
        return f"{float(v):,.2f}×"
    if fmt == "pts":
        return f"{float(v):,.1f}"
    return f"{float(v):,.2f}"


def _rank(v, fmt):
    """Comparable value for "lower is better" (None minutes = never = worst)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return math.inf if fmt == "minute" else None
    return float(v)


def summary_rows(runs: Mapping[str, RunData]) -> list[dict]:
    """The summary table: ``{"label", "key", "values": {side: text}, "best": side | None}`` per row
    (TransferShedder rows only when a run is TransferShedder; the check outcomes of those runs too)."""
    out = [{"label": "strategy", "key": "strategy", "values": {s: r.spec["shed"] for s, r in runs.items()},
            "best": None},
           {"label": "placement", "key": "placement",
            "values": {s: r.summary.get("placement") or r.spec["place"] for s, r in runs.items()}, "best": None}]
    any_ext = any(r.extensible for r in runs.values())
    for label, key, better, fmt in SUMMARY_ROWS:
        ext_only = key in _EXTENSIBLE_ROWS
        if ext_only and not any_ext:
            continue
        # a TransferShedder-only metric means nothing for the other strategy: "—", never a "best"
        applies = {s: (r.extensible or not ext_only) for s, r in runs.items()}
        vals = {s: r.summary.get(key) for s, r in runs.items()}
        best = None
        if better == "lower" and len(vals) == 2 and all(applies.values()):
            ranks = {s: _rank(v, fmt) for s, v in vals.items()}
            if all(x is not None for x in ranks.values()) and len(set(ranks.values())) == 2:
                best = min(ranks, key=ranks.get)
        out.append({"label": label, "key": key,
                    "values": {s: _fmt_summary(v, fmt) if applies[s] else "—" for s, v in vals.items()},
                    "best": best})
    if any_ext:
        out.append({"label": "TransferShedder checks", "key": "checks",
                    "values": {s: (" · ".join(f"{c} {n}" for c, n in check_codes(r.events).items()) or "—")
                               if r.extensible else "—" for s, r in runs.items()}, "best": None})
    return out


_CODE = re.compile(r"^([A-Z][A-Za-z]+):")
_HIT = re.compile(r"hit (\d+) time\(s\)")


def check_codes(events: pd.DataFrame) -> dict:
    """TransferShedder's decision codes over the run's checks (``{"HitCount": 40, "CoolDown": 15, …}``)."""
    c = events[events["kind"] == "check"]
    codes = c["reason"].astype(str).str.extract(_CODE)[0].dropna()
    return {k: int(v) for k, v in codes.value_counts().items()}


def checks_frame(events: pd.DataFrame) -> pd.DataFrame:
    """One row per check: ``minute, code, hit, reason`` (``hit``: TransferShedder's hit count, NaN when
    the reason does not count hits)."""
    c = events.loc[events["kind"] == "check", ["minute", "reason"]].copy()
    c["reason"] = c["reason"].astype(str)
    c["code"] = c["reason"].str.extract(_CODE)[0]
    hit = c["reason"].str.extract(_HIT)[0].astype(float)
    hit[c["reason"].str.contains("hit count reset to 0", regex=False)] = 0.0
    c["hit"] = hit
    return c.reset_index(drop=True)


__all__.append("checks_frame")


def config_diff(cfg_a: LoadBalancerConfig, cfg_b: LoadBalancerConfig) -> list[dict]:
    """Every key where A or B differs from Pulsar 4.x, or A from B: ``{"key", "default", "a", "b", "unit", "doc"}``."""
    from engine.config import changed_keys

    keys = list(changed_keys(cfg_a)) + [k for k in changed_keys(cfg_b) if k not in changed_keys(cfg_a)]
    rows = []
    for k in keys:
        info = key_info(k)
        rows.append({"key": k, "default": fmt_conf_value(getattr(PULSAR_4_DEFAULTS, k)),
                     "a": fmt_conf_value(getattr(cfg_a, k)), "b": fmt_conf_value(getattr(cfg_b, k)),
                     "unit": info.get("unit", ""), "doc": info.get("doc", ""),
                     "differs": getattr(cfg_a, k) != getattr(cfg_b, k)})
    rows.sort(key=lambda r: (not r["differs"], r["key"]))
    return rows


#: event kinds shown by default in the log (checks and lookups are many; they are one click away)
DEFAULT_KINDS = ["unload", "unload-skipped", "broker-added", "broker-removed", "leader-change", "config-change",
                 "cpu", "split"]
__all__.append("DEFAULT_KINDS")


def event_kinds(runs: Mapping[str, RunData]) -> list[dict]:
    """Dropdown options of the kinds present, with their counts per run."""
    counts: dict = {}
    for s, r in runs.items():
        for k, n in r.events["kind"].value_counts().items():
            counts.setdefault(k, {})[s] = int(n)
    order = DEFAULT_KINDS + ["check", "assign"]
    kinds = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return [{"label": f"{k} (" + " / ".join(f"{s.upper()} {counts[k].get(s, 0)}" for s in runs) + ")", "value": k}
            for k in kinds]


def event_rows(runs: Mapping[str, RunData], kinds=None, which: str = "both", limit: int | None = 200) -> tuple[list, int]:
    """Rows of the event log (``run, minute, kind, broker, destination, bundle, reason``) and the total
    before ``limit``; ordered by minute, A before B within a minute."""
    frames = []
    for s, r in runs.items():
        if which in ("a", "b") and s != which:
            continue
        ev = r.events
        if kinds:
            ev = ev[ev["kind"].isin(list(kinds))]
        if ev.empty:
            continue
        f = ev[["minute", "kind", "broker", "destination", "bundle", "reason", "placement", "random",
                "bad_placement"]].copy()
        f.insert(0, "run", s.upper())
        frames.append(f)
    if not frames:
        return [], 0
    df = pd.concat(frames, ignore_index=True).sort_values(["minute", "run"], kind="stable")
    total = len(df)
    if limit is not None:
        df = df.head(limit)
    rows = []
    for r in df.itertuples(index=False):
        rows.append({"run": r.run, "minute": int(r.minute), "kind": r.kind, "broker": _s(r.broker),
                     "destination": _s(r.destination), "bundle": _s(r.bundle), "reason": _s(r.reason),
                     "placement": _s(r.placement), "random": bool(r.random), "bad": bool(r.bad_placement)})
    return rows, total


def _s(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)


# ============================================================================================ sweep
#: default grids per shedding strategy (x key, x values, y key, y values): 5 × 5
_SWEEP_DEFAULTS = {
    "AvgShedder": ("loadBalancerAvgShedderLowThreshold", "5, 10, 15, 20, 25",
                   "loadBalancerAvgShedderHitCountLowThreshold", "2, 4, 8, 12, 16"),
    "ThresholdShedder": ("loadBalancerBrokerThresholdShedderPercentage", "5, 10, 15, 20, 25",
                         "loadBalancerHistoryResourcePercentage", "0.5, 0.6, 0.7, 0.8, 0.9"),
    "TransferShedder": ("loadBalancerBrokerLoadTargetStd", "0.05, 0.1, 0.15, 0.2, 0.25",
                        "loadBalancerSheddingConditionHitCountThreshold", "1, 2, 3, 5, 8"),
    "UniformLoadShedder": ("loadBalancerMsgRateDifferenceShedderThreshold", "10, 30, 50, 70, 90",
                           "maxUnloadPercentage", "0.1, 0.2, 0.3, 0.5, 0.8"),
    "OverloadShedder": ("loadBalancerBrokerOverloadedThresholdPercentage", "60, 70, 80, 85, 90",
                        "loadBalancerSheddingGracePeriodMinutes", "1, 5, 10, 30, 60"),
}


def sweep_keys(shed: str, place: str | None = None) -> list[dict]:
    """Dropdown options: every numeric key the side's strategies (and its load manager) read."""
    out, seen = [], set()
    for g in groups_for(shed, place or default_placement(shed)):
        for k in g.keys:
            try:
                spec = key_spec(k)
            except KeyError:
                continue
            if spec.kind == "slider" and k not in seen:
                seen.add(k)
                out.append({"label": k, "value": k, "title": spec.doc})
    return out


def _axis_default(key: str) -> str:
    spec = key_spec(key)
    lo, hi, d = spec.lo, spec.hi, float(spec.default)
    span = (hi - lo) / 4.0
    vals = sorted({min(hi, max(lo, d + i * span / 2.0)) for i in (-2, -1, 0, 1, 2)})
    return ", ".join(fmt_conf_value(int(round(v)) if spec.type == "int" else round(v, 4)) for v in vals)


def sweep_defaults(shed: str, place: str | None = None) -> tuple:
    """(x key, x values, y key, y values) to start from for a strategy."""
    if shed in _SWEEP_DEFAULTS:
        return _SWEEP_DEFAULTS[shed]
    keys = [o["value"] for o in sweep_keys(shed, place)]
    if not keys:
        return None, "", None, ""
    x = keys[0]
    y = keys[1] if len(keys) > 1 else keys[0]
    return x, _axis_default(x), y, _axis_default(y)


def parse_axis(key, text) -> list[str]:
    """``"5, 10, 15"`` → canonical ``broker.conf`` texts of ``key`` (unique, in order); raises
    :class:`InputError` naming the key or the value."""
    if not isinstance(key, str) or not key:
        raise InputError("pick a key", field="sweep")
    try:
        key_info(key)
    except KeyError:
        raise InputError(f"unknown load-balancer key {key[:60]!r}", field="sweep") from None
    out = []
    for tok in re.split(r"[,\s;]+", str(text or "").strip()):
        if not tok:
            continue
        c = _canon(key, tok)
        if c not in out:
            out.append(c)
    if not out:
        raise InputError(f"no values for {key}", field="sweep")
    if len(out) > MAX_AXIS:
        raise InputError(f"{len(out)} values for {key}: at most {MAX_AXIS} per axis on this page "
                         f"(the history page's Spark sweep takes bigger grids)", field="sweep")
    return out


def plan_sweep(state: SimState, x_key, x_text, y_key, y_text) -> dict:
    """The grid a sweep runs on run A's settings (validated and capped; raises :class:`InputError`)."""
    xs, ys = parse_axis(x_key, x_text), parse_axis(y_key, y_text)
    if x_key == y_key:
        raise InputError("pick two different keys", field="sweep")
    sc = load(state.scenario)
    n = _minutes(state)
    cost = len(xs) * len(ys) * n * max(1, len(sc.brokers))
    if cost > SWEEP_BUDGET:
        raise InputError(f"{len(xs)}×{len(ys)} runs of {n} minutes on {len(sc.brokers)} brokers is too big for the "
                         f"page (budget {SWEEP_BUDGET:,} broker-minutes): fewer values or fewer minutes",
                         field="sweep")
    return {"x_key": x_key, "x": xs, "y_key": y_key, "y": ys, "minutes": n}


def run_sweep(state: SimState, plan: dict, sid, progress: Callable | None = None) -> dict:
    """Run the grid on run A (one run per cell); ``{"key", "cached"}``. Cells hold the summary numbers."""
    from engine.simulator import run_scenario

    tag = replace(state, b=RunSpec("sweep", json.dumps(plan, sort_keys=True)))
    key = f"simsweep:{_session(sid)}:{tag.digest()}"
    cache = get_cache()
    if key in cache:
        return {"key": key, "cached": True}
    sc = load(state.scenario)
    total = len(plan["x"]) * len(plan["y"])
    cells = []
    base_kw = run_kwargs(state, "a")
    i = 0
    for yv in plan["y"]:
        for xv in plan["x"]:
            kw = dict(base_kw)
            kw["set"] = {**(kw.get("set") or {}), plan["x_key"]: xv, plan["y_key"]: yv}
            if progress is not None:
                progress(i, total, f"sweep · cell {i + 1} of {total}: {plan['x_key']}={xv}, {plan['y_key']}={yv}")
            r = run_scenario(sc, **kw)
            s = r.summary
            cells.append({"x": xv, "y": yv, "unloads": s.get("unloads"), "settled_minute": s.get("settled_minute"),
                          "first_unload_minute": s.get("first_unload_minute"),
                          "bad_placements": s.get("bad_placements"), "usage_std": s.get("usage_std"),
                          "target_met_minute": s.get("target_met_minute")})
            i += 1
    payload = {"plan": plan, "state": state.to_json(), "cells": cells, "strategy": state.a.shed,
               "scenario": sc.name}
    cache.set(key, payload, expire=_TTL)
    if progress is not None:
        progress(total, total, "sweep done")
    return {"key": key, "cached": False}


def sweep_cell(plan: dict | None, click) -> tuple | None:
    """``(x_key, x, y_key, y)`` of the heatmap cell a ``clickData`` points at, or None.

    Plotly reports a heatmap click's category ``x`` and ``y`` (``dcc.Graph`` drops a heatmap's
    2-D ``customdata``), so the keys come from the plan of the sweep on screen, and a value that is
    not on that plan's grid is refused."""
    if not isinstance(plan, Mapping) or not isinstance(click, Mapping):
        return None
    pts = click.get("points")
    pt = pts[0] if isinstance(pts, list) and pts and isinstance(pts[0], Mapping) else None
    if pt is None:
        return None
    x, y = str(pt.get("x")), str(pt.get("y"))
    if x not in plan.get("x", []) or y not in plan.get("y", []):
        return None
    return plan["x_key"], x, plan["y_key"], y


def sweep_current(sweep: dict, saved) -> dict | None:
    """Run A's current values of the sweep's two keys (``{key: text}``), to outline its cell; None when
    run A no longer runs the swept strategy on the swept scenario."""
    if not isinstance(saved, Mapping):
        return None
    try:
        st = coerce_state(saved)[0]
    except Exception:  # noqa: BLE001 - a browser value: no outline rather than an error
        return None
    if st.scenario != sweep["state"]["scenario"] or st.a.shed != sweep["strategy"]:
        return None
    try:
        base = base_config(load(st.scenario), st.a.preset)
    except InputError:
        return None
    p = sweep["plan"]
    vals = st.a.value_dict
    return {k: vals.get(k, fmt_conf_value(getattr(base, k))) for k in (p["x_key"], p["y_key"])}


def load_sweep(key: str, sid) -> dict:
    _check_key(key, sid, "sweep")
    got = get_cache().get(key)
    if got is None:
        raise InputError("the sweep is no longer on the server: run it again")
    return got


# ============================================================================================ figures / report
def figures(payload: dict, sweep: dict | None = None) -> dict:
    """``{name: (title, figure)}`` of everything the page shows for a result, in page order."""
    from .figures.simulator import broker_series, cluster_figure, std_figure, sweep_heatmaps, RUN_COLORS

    runs = payload["runs"]
    rev = payload.get("at", "")
    out = {}
    for s, r in runs.items():
        out[f"run-{s}-brokers"] = (f"Run {r.label}: score seen vs real usage per broker, unloads",
                                   broker_series(r.brokers, r.events, label=r.label, color=RUN_COLORS[s], rev=rev))
    out["cluster"] = ("Cluster: max/min ratios, CPU range, cumulative unloads",
                      cluster_figure({r.label: r.cluster for r in runs.values()},
                                     {r.label: RUN_COLORS[s] for s, r in runs.items()}, rev=rev))
    ext = {r.label: (r.cluster, checks_frame(r.events)) for r in runs.values() if r.extensible}
    if ext:
        out["transfershedder-std"] = ("TransferShedder: load std vs target, hit count, decision codes",
                                      std_figure(ext, {r.label: r.cluster for r in runs.values()},
                                                 {r.label: RUN_COLORS[s] for s, r in runs.items()}, rev=rev))
    if sweep:
        p = sweep["plan"]
        out["sweep"] = (f"Sweep on run A ({sweep['strategy']}): {p['x_key']} × {p['y_key']}",
                        sweep_heatmaps(sweep["cells"], p["x_key"], p["x"], p["y_key"], p["y"], rev=rev))
    return out


def report_filename(payload: dict) -> str:
    t = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    st = payload["state"]
    return f"shedlab-simulation-{st['scenario'][:40].replace(':', '-')}-{t}.html"


def _e(x) -> str:
    return _html.escape(str(x), quote=True)


def build_report(payload: dict, *, permalink: str | None = None, sweep: dict | None = None,
                 event_limit: int = 1500) -> str:
    """One self-contained HTML file (plotly.js inlined): the scenario, A and B, the config diff, the
    summary side by side, every figure and the event log with its reasons."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    from .export import _CSS  # the Tuner report's look: both reports read the same in an incident review

    runs = payload["runs"]
    facts = payload.get("facts", {})
    st = payload["state"]
    a, b = runs["a"], runs["b"]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    css = _CSS + (".best{font-weight:700;color:#155d3f}.differs td{background:#fff8e6}"
                  "td.reason{max-width:620px;overflow-wrap:anywhere}.ra{color:#1f6feb;font-weight:700}"
                  ".rb{color:#e36209;font-weight:700}")
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Shedlab simulation — {_e(facts.get('name', st['scenario']))}</title>",
             f"<style>{css}</style><script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
             "<header class='r'><h1>Shedlab simulation report</h1>",
             f"<div class='sub'>{_e(facts.get('title', st['scenario']))} · A: {_e(a.label[4:])} vs B: "
             f"{_e(b.label[4:])} · generated {now}</div></header><main>"]
    # --- scenario
    parts.append("<section><h2>Scenario</h2><div class='kv'>")
    rows = [("scenario", f"{facts.get('name', st['scenario'])} — {facts.get('title', '')}"),
            ("scenario id", st["scenario"]),
            ("cluster", f"{facts.get('brokers', '?')} brokers ({facts.get('started', '?')} at start), "
                        f"{facts.get('namespaces', '?')} namespaces, {facts.get('events', 0)} events"),
            ("minutes", str(a.summary.get("minutes"))), ("seed", str(st["seed"])),
            ("run A", f"{a.spec['shed']} + {a.spec['place']} on {PRESET_LABELS.get(a.spec['preset'], '')}"),
            ("run B", f"{b.spec['shed']} + {b.spec['place']} on {PRESET_LABELS.get(b.spec['preset'], '')}")]
    if permalink:
        rows.append(("permalink", f"<a href='{_e(permalink)}'>{_e(permalink)}</a>"))
    for k, v in rows:
        parts.append(f"<div>{_e(k)}</div><div>{v if k == 'permalink' else _e(v)}</div>")
    parts.append("</div>")
    if facts.get("description"):
        parts.append(f"<p class='muted'>{_e(facts['description'])}</p>")
    for r in (a, b):
        if r.cancelled:
            parts.append(f"<p class='muted'>⚠ run {r.side.upper()} was cancelled: partial results</p>")
    parts.append("</section>")
    # --- summary
    parts.append("<section><h2>Summary, side by side</h2><table><tr><th>metric</th>"
                 f"<th class='num'><span class='ra'>A</span> · {_e(a.label[4:])}</th>"
                 f"<th class='num'><span class='rb'>B</span> · {_e(b.label[4:])}</th></tr>")
    for row in summary_rows(runs):
        cells = "".join(f"<td class='num{' best' if row['best'] == s else ''}'>{_e(row['values'][s])}</td>"
                        for s in ("a", "b"))
        parts.append(f"<tr><td>{_e(row['label'])}</td>{cells}</tr>")
    parts.append("</table><p class='muted'>bold: the better of the two where lower is better; "
                 "“never”: the run did not settle (no unload and usage range within the scenario's bound "
                 "for a whole window)</p></section>")
    # --- config diff
    diff = config_diff(a.config, b.config)
    parts.append("<section><h2>Configuration of A and B (keys changed from Pulsar 4.x, or different between "
                 "A and B)</h2>")
    if diff:
        parts.append("<table class='conf'><tr><th>broker.conf key</th><th>Pulsar 4.x default</th>"
                     "<th>A</th><th>B</th><th>unit</th></tr>")
        for d in diff:
            parts.append(f"<tr class='{'differs' if d['differs'] else ''}'><td><code>{_e(d['key'])}</code></td>"
                         f"<td>{_e(d['default'])}</td><td><b>{_e(d['a'])}</b></td><td><b>{_e(d['b'])}</b></td>"
                         f"<td>{_e(d['unit'])}</td></tr>")
        parts.append("</table><p class='muted'>highlighted: A and B differ</p>")
    else:
        parts.append("<p>A and B both run Pulsar 4.x defaults.</p>")
    parts.append("</section>")
    # --- figures
    for name, (title, fig) in figures(payload, sweep).items():
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{name}",
                          config={"displaylogo": False, "responsive": True,
                                  "toImageButtonOptions": {"format": "svg", "filename": name, "scale": 2}})
        parts.append(f"<section><h2>{_e(title)}</h2>{div}</section>")
    # --- events
    kinds = [k for k in DEFAULT_KINDS] + (["check"] if any(r.extensible for r in runs.values()) else [])
    rows_, total = event_rows(runs, kinds, "both", limit=event_limit)
    parts.append("<section><h2>Event log with reasons</h2><p class='muted'>"
                 f"kinds: {_e(', '.join(kinds))} · {total:,} events"
                 + (f" (first {event_limit:,} shown)" if total > event_limit else "") + "</p>"
                 "<table><tr><th>run</th><th class='num'>minute</th><th>kind</th><th>broker → destination</th>"
                 "<th>bundle</th><th>reason</th></tr>")
    for r in rows_:
        dest = f" → {r['destination']}" if r["destination"] else ""
        extra = f" · placement: {r['placement']}" if r["placement"] else ""
        parts.append(f"<tr><td class='{'ra' if r['run'] == 'A' else 'rb'}'>{r['run']}</td>"
                     f"<td class='num'>{r['minute']}</td><td>{_e(r['kind'])}</td>"
                     f"<td><code>{_e(r['broker'])}{_e(dest)}</code></td><td><code>{_e(r['bundle'])}</code></td>"
                     f"<td class='reason'>{_e(r['reason'])}{_e(extra)}</td></tr>")
    parts.append("</table></section>")
    parts.append("<p class='muted'>Made with Shedlab: the runs are the engine's time-stepped reproduction of "
                 "Pulsar's load manager on this scenario (docs/scenarios.md lists what it models and "
                 "simplifies).</p></main></body></html>")
    return "".join(parts)


# ------------------------------------------------------------------------------------------ small helpers
def key_value_text(key: str, text: str) -> str:
    """``"loadBalancerAvgShedderLowThreshold"``, ``"15.0"`` → ``"15 pts"`` (the slider's label rule)."""
    spec = key_spec(key)
    try:
        return format_value(spec.to_value(text), spec.fmt)
    except (TypeError, ValueError):
        return text


__all__.append("key_value_text")
