"""The Simulator's form: the state its controls show, and what a control change does to it.

:func:`form_state` reads the controls (sliders on top of a side's "other keys" ``broker.conf`` lines);
:func:`resolve_form` decides the state after a trigger (page load from a permalink, the tab's saved form
or the defaults; a strategy or base-config change; a scenario upload; a sweep cell clicked; a field
finding picked; "start from" the current snapshot). Pure functions: the callbacks parse the request,
call these and draw; :class:`NoChange` tells them nothing changes.
"""
from __future__ import annotations

from dataclasses import replace

from engine.errors import InputError
from engine.simulator import findings as F

from .. import ids
from ..keys import format_value, key_spec, value_to_conf
from ..web_safety import as_dict, as_list, as_str
from .strategies import pairing_source, required_placement
from .findings import finding_state
from .findings import scenario_id as finding_scenario_id
from .link import encode
from .scenarios import DEFAULT_SCENARIO, PRESET_LABELS, base_config, load, scenario_facts
from .snapshot import snapshot_scenario_id, snapshot_source
from .state import CONTROLLED_KEYS, SIDES, RunSpec, SimState, coerce_spec, coerce_state, default_state, source_strategies
from .sweep import sweep_cell

__all__ = ["NoChange", "MAX_EXTRA_CHARS", "parse_extra", "extra_text", "key_value_text", "form_state",
           "resolve_form", "scenario_label", "form_echo"]


class NoChange(Exception):
    """A control change that leaves the form as it is (the callback answers "no update")."""


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


def key_value_text(key: str, text: str) -> str:
    """``"loadBalancerAvgShedderLowThreshold"``, ``"15.0"`` → ``"15 pts"`` (the slider's label rule)."""
    spec = key_spec(key)
    try:
        return format_value(spec.to_value(text), spec.fmt)
    except (TypeError, ValueError):
        return text


MAX_EXTRA_CHARS = 1_000_000  # the "other keys" text of a side (a whole broker.conf is ~100 KB)


def form_state(scenario, minutes, seed, sheds: dict, places: dict, presets: dict, key_ids, key_vals,
               extras: dict) -> tuple[SimState, list, dict]:
    """The state the controls show: ``(state, messages, {side: [messages]})`` (pure; never raises).

    A side's values are its "other keys" lines with its sliders on top; values equal to the side's
    base config (scenario + preset) are dropped by :func:`dashboard.simulator.coerce_state`.
    """
    # request values may be any JSON: a value of the wrong type is treated as missing
    scenario = as_str(scenario, limit=300)
    sheds, places, presets = ({s: as_str((as_dict(d) or {}).get(s), limit=100) for s in SIDES}
                              for d in (sheds, places, presets))
    key_ids, key_vals = as_list(key_ids, []), as_list(key_vals, [])
    notes = {s: [] for s in SIDES}
    raw_extras, extras = as_dict(extras) or {}, {}
    for s in SIDES:
        extras[s] = as_str(raw_extras.get(s), limit=MAX_EXTRA_CHARS)
        if extras[s] is None and raw_extras.get(s) is not None:
            notes[s].append(f"run {s.upper()}: other keys: not text of at most {MAX_EXTRA_CHARS:,} characters; ignored")
    data = {"scenario": scenario, "minutes": minutes, "seed": seed}
    for s in SIDES:
        values, errs = parse_extra((extras or {}).get(s), s)
        notes[s] += errs
        sliders = {}
        for i, v in zip(key_ids or [], key_vals or []):
            if not isinstance(i, dict) or i.get("side") != s or not isinstance(i.get("key"), str) or not i["key"]:
                continue
            try:
                sliders[i["key"]] = value_to_conf(key_spec(i["key"]), v)
            except (KeyError, TypeError, ValueError):
                continue
        dup = sorted(set(values) & set(sliders))
        if dup:
            notes[s].append(f"run {s.upper()}: {', '.join(dup)} has a slider above; the slider's value is used")
        values.update(sliders)
        data[s] = {"shed": (sheds or {}).get(s), "place": (places or {}).get(s), "preset": (presets or {}).get(s) or "",
                   "values": values}
    state, errs = coerce_state(data)
    msgs = []
    for e in errs:
        side = "a" if e.startswith("run A") else "b" if e.startswith("run B") else None
        (notes[side] if side else msgs).append(e)
    return state, msgs, notes


def scenario_label(scenario_id: str) -> str:
    try:
        sc = load(scenario_id)
        return sc.title or sc.name
    except InputError:
        return scenario_id


def resolve_form(trigger, *, form, saved, seen, link, uploaded, current: SimState | None, click=None,
                 plan: dict | None = None, finding=None, source=None, start=None, src_seen=None):
    """The state the controls should show after ``trigger`` and what else to do (pure).

    Returns ``(state, messages, extra)``; ``extra``: ``seen`` (the uploaded scenario now accounted
    for), ``autorun`` (run at once: a permalink opened), ``load`` (a page load: show cached results),
    ``start`` (the "start from" choice: ``scenario`` / ``snapshot``), ``start_box`` (show it: the
    shell's source is a snapshot), ``start_label``, ``src_seen`` (the source now accounted for).
    ``source`` is the shell's source info, already checked (``callbacks.shell.page_source``), or None.
    Raises :class:`NoChange` when nothing changes.
    """
    state, msgs, extra = resolve_form_inputs(trigger, form=form, saved=saved, seen=seen, link=link, uploaded=uploaded,
                                       current=current, click=click, plan=plan, finding=finding)
    return start_choice(trigger, state, msgs, extra, source, start, src_seen)


def start_choice(trigger, state: SimState, msgs: list, extra: dict, source, start, src_seen):
    """The "start from: scenario | the current snapshot" choice.

    The shell's source (the page's ``page_source("simulator")`` store, checked) is the snapshot a run can start from
    (``snapshot:<source id>``, :func:`dashboard.simulator.load`). Choosing it switches the
    scenario to that snapshot and run A to the source's own strategies (an ELM snapshot: TransferShedder
    + the ELM placement) and runs at once; choosing "a scenario" goes back to the default scenario. When
    the source changes while the form starts from a snapshot, the form follows it; a new upload or live
    snapshot (one the page had not seen) is taken as the start at once, so an ELM file dropped on this
    page is simulated here.
    """
    info = source
    src = as_str(info.get("id"), limit=300) if info else None
    src_seen = as_str(src_seen, limit=300)
    on_snap = snapshot_source(state.scenario)
    target = None
    if trigger == ids.SIM_START:
        if start == "snapshot" and src and on_snap != src:
            target = snapshot_scenario_id(src)
        elif start == "scenario" and on_snap:
            target = DEFAULT_SCENARIO
    elif trigger == ids.page_source("simulator") and src and src_seen and src != src_seen:
        if on_snap or info.get("kind") in ("upload", "live"):
            target = snapshot_scenario_id(src)
    if target is not None:
        st2, errs = coerce_state({**state.to_json(), "scenario": target, "minutes": None})
        if st2.scenario == target:
            state = st2
            if snapshot_source(target):
                state, m = source_strategies(state)
                msgs += [f"starting from the current snapshot: {scenario_label(target)}"] + m + errs
            else:
                msgs += [f"scenario {target} selected"] + errs
            extra["autorun"] = True
        else:
            msgs += errs
    elif trigger == ids.SIM_SCENARIO and on_snap:  # the snapshot picked in the scenario list
        state, m = source_strategies(state)
        msgs += m
    elif trigger == ids.SIM_START and (start == "snapshot") == bool(on_snap):
        raise NoChange  # the choice the form already shows (set by this callback)
    extra["start"] = "snapshot" if snapshot_source(state.scenario) else "scenario"
    extra["start_box"] = bool(src) or extra["start"] == "snapshot"
    extra["start_label"] = str(info.get("label") or src)[:80] if src else None
    extra["src_seen"] = src or src_seen
    return state, msgs, extra


def resolve_form_inputs(trigger, *, form, saved, seen, link, uploaded, current: SimState | None, click=None,
                  plan: dict | None = None, finding=None):
    """:func:`resolve_form` without the "start from" choice."""
    msgs: list = []
    up = uploaded.get("id") if isinstance(uploaded, dict) and isinstance(uploaded.get("id"), str) else None
    extra = {"seen": seen, "autorun": False, "load": form is None}
    if form is None:  # page load: a permalink, else the tab's own form, else the defaults
        has_link = isinstance(link, dict) and (link.get("state") or link.get("errors"))
        if has_link:
            state = coerce_state(link["state"])[0] if link.get("state") else default_state()
            msgs += list(link.get("errors") or [])
            extra["autorun"] = bool(link.get("state"))
            extra["seen"] = up or seen  # the link wins over an upload made before it was opened
        else:
            state, errs = coerce_state(saved) if isinstance(saved, dict) and saved else (default_state(), [])
            msgs += errs
            if up and up != seen:
                state, m = switch_scenario(state, up, uploaded)
                msgs += m
                extra["seen"] = up
        return state, msgs, extra
    state = current or default_state()
    if trigger == ids.SIM_FINDING:  # a field finding: its scenario, seed and the article's two strategies, run at once
        st = finding_state(finding)
        if st is None:
            raise NoChange
        f = F.FINDINGS[finding]
        msgs.append(f"{f.article} {f.section}: run A {f.a['label']} vs run B {f.b['label']} on "
                    f"{finding_scenario_id(f)}, seed {f.seed}")
        extra["autorun"] = True
        return st, msgs, extra
    if trigger == ids.sim_uploaded():
        if not up or up == seen:
            raise NoChange
        state, m = switch_scenario(state, up, uploaded)
        msgs += m
        extra["seen"] = up
    elif isinstance(trigger, dict) and trigger.get("type") == ids.SIM_SHED:
        s = trigger.get("side")
        sp = state.side(s)
        need = required_placement(sp.shed)
        if need and sp.place != need:
            state = state.with_side(s, replace(sp, place=need))
            msgs.append(f"run {s.upper()}: placement set to {need} too, as {pairing_source(sp.shed, need)} "
                        "(pick another placement to compare)")
        # an incompatible pair left by the switch was fixed (and said) by form_state
    elif isinstance(trigger, dict) and trigger.get("type") == ids.SIM_PRESET:
        s = trigger.get("side")
        sp = state.side(s)
        try:
            base = base_config(load(state.scenario), sp.preset)
        except InputError as exc:
            msgs.append(str(exc))
            raise NoChange from None
        spec, errs = coerce_spec({"shed": base.shedding_strategy, "place": base.placement_strategy,
                                    "preset": sp.preset, "values": {}}, base, s)
        state = state.with_side(s, spec)
        msgs += [f"run {s.upper()}: {PRESET_LABELS[sp.preset]} with the scenario's keys; its strategies "
                 f"{spec.label()}"] + errs
    elif trigger == ids.SIM_SWEEP_FIG:
        cell = sweep_cell(plan, click)
        if cell is None:
            raise NoChange
        xk, xv, yk, yv = cell
        vals = {**state.a.value_dict, str(xk): str(xv), str(yk): str(yv)}
        st2, errs = coerce_state({**state.to_json(), "a": {**state.a.to_json(), "values": vals}})
        state = st2
        msgs += [f"run A: {xk}={xv}, {yk}={yv} from the sweep — press Run to see it against B"] + errs
    return state, msgs, extra


def switch_scenario(state: SimState, up: str, uploaded) -> tuple[SimState, list]:
    label = uploaded.get("label", up) if isinstance(uploaded, dict) else up
    st2, errs = coerce_state({**state.to_json(), "scenario": up, "minutes": None})
    if st2.scenario != up:  # the upload expired meanwhile
        return state, errs
    return st2, [f"scenario {label} (uploaded) selected: {scenario_label(up)}"] + errs


def form_echo(*controls) -> tuple[SimState, list, dict, dict | None, str]:
    """What the page echoes for its controls (:func:`form_state`'s arguments): ``(state, messages, {side:
    [messages]}, the scenario's facts or None when it cannot be loaded, the permalink's query string)``."""
    state, msgs, notes = form_state(*controls)
    try:
        facts = scenario_facts(load(state.scenario))
    except InputError:
        facts = None
    return state, msgs, notes, facts, encode(state)
