"""Simulator callbacks: the A/B form, the background runs (A and B, the sweep), results, sharing.

Flow: ``sync_form`` owns the pickers and the key sliders (page load from a permalink, the tab's
saved form or the defaults; a strategy or base-config change; a new scenario upload; a sweep cell
clicked) and writes ``SIM_FORM``. ``update_state`` follows every control (the URL, the tab's saved
form, the scenario line). "Run" is one background callback (DiskcacheManager) that runs A then B in
a forked process, reports progress and can be cancelled; the tables go to the diskcache
(:mod:`dashboard.simulator`) and the page's store gets only their key; ``show_results``
draws them with the pure builders of :mod:`dashboard.figures.simulator`.

Progress, running and cancel targets are the shell's job strip (``JOB_*``, visible on every page)
*and* the page's own bar and buttons: the renderer drops updates for components that are gone
(``sideUpdate``/``applyProps`` skip missing ids), so navigating away mid-run is harmless — the
strip keeps showing the job and its Cancel button, and the results, cached under this session and
the form's hash, are shown again when the page is opened with the same form.

The bodies are plain functions, unit-tested in ``tests/callbacks/test_simulator.py``.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import replace

from dash import (ALL, MATCH, ClientsideFunction, Input, Output, State, callback, clientside_callback, ctx, dcc,
                  html, no_update)
from dash.exceptions import PreventUpdate

from callbacks.shell import alert
from dashboard.web_safety import as_dict, as_list, as_str, str_list
from dashboard import ids
from dashboard import simulator as S
from dashboard.simulator import findings as SF
from dashboard.export import figures_zip
from dashboard.figures.simulator import sweep_heatmaps
from dashboard.keys import key_spec, value_to_conf
from engine.errors import InputError, ShedlabError
from layouts.simulator import (event_table, finding_table, headline, minutes_placeholder, scenario_line, side_controls,
                               start_options, summary_table)

log = logging.getLogger(__name__)

__all__ = ["form_state", "resolve_form", "sync_form", "update_state", "run_simulation", "run_sweep_job",
           "show_results", "show_finding", "finding_figures", "show_events", "show_sweep", "sweep_options", "export_figures", "export_report",
           "result_figures"]

SIDES = S.SIDES


def _sid(kind, s):
    return ids.sim_side(kind, s)


# ------------------------------------------------------------------------------------------ form
_MAX_EXTRA_CHARS = 1_000_000  # the "other keys" text of a side (a whole broker.conf is ~100 KB)


def form_state(scenario, minutes, seed, sheds: dict, places: dict, presets: dict, key_ids, key_vals,
               extras: dict) -> tuple[S.SimState, list, dict]:
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
        extras[s] = as_str(raw_extras.get(s), limit=_MAX_EXTRA_CHARS)
        if extras[s] is None and raw_extras.get(s) is not None:
            notes[s].append(f"run {s.upper()}: other keys: not text of at most {_MAX_EXTRA_CHARS:,} characters; ignored")
    data = {"scenario": scenario, "minutes": minutes, "seed": seed}
    for s in SIDES:
        values, errs = S.parse_extra((extras or {}).get(s), s)
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
    state, errs = S.coerce_state(data)
    msgs = []
    for e in errs:
        side = "a" if e.startswith("run A") else "b" if e.startswith("run B") else None
        (notes[side] if side else msgs).append(e)
    return state, msgs, notes


def _scenario_label(scenario_id: str) -> str:
    try:
        sc = S.load(scenario_id)
        return sc.title or sc.name
    except InputError:
        return scenario_id


def resolve_form(trigger, *, form, saved, seen, link, uploaded, current: S.SimState | None, click=None,
                 plan: dict | None = None, finding=None, source=None, start=None, src_seen=None):
    """The state the controls should show after ``trigger`` and what else to do (pure).

    Returns ``(state, messages, extra)``; ``extra``: ``seen`` (the uploaded scenario now accounted
    for), ``autorun`` (run at once: a permalink opened), ``load`` (a page load: show cached results),
    ``start`` (the "start from" choice: ``scenario`` / ``snapshot``), ``start_box`` (show it: the
    shell's source is a snapshot), ``start_label``, ``src_seen`` (the source now accounted for).
    Raises :class:`PreventUpdate` when nothing changes.
    """
    state, msgs, extra = _resolve_form(trigger, form=form, saved=saved, seen=seen, link=link, uploaded=uploaded,
                                       current=current, click=click, plan=plan, finding=finding)
    return _start_choice(trigger, state, msgs, extra, source, start, src_seen)


def _start_choice(trigger, state: S.SimState, msgs: list, extra: dict, source, start, src_seen):
    """The "start from: scenario | the current snapshot" choice (issue 13).

    The shell's source (``page_source("simulator")`` data) is the snapshot a run can start from
    (``snapshot:<source id>``, :func:`dashboard.simulator.load`). Choosing it switches the
    scenario to that snapshot and run A to the source's own strategies (an ELM snapshot: TransferShedder
    + the ELM placement) and runs at once; choosing "a scenario" goes back to the default scenario. When
    the source changes while the form starts from a snapshot, the form follows it; a new upload or live
    snapshot (one the page had not seen) is taken as the start at once, so an ELM file dropped on this
    page is simulated here.
    """
    from callbacks.shell import page_source

    info = page_source(source)
    src = as_str(info.get("id"), limit=300) if info else None
    src_seen = as_str(src_seen, limit=300)
    on_snap = S.snapshot_source(state.scenario)
    target = None
    if trigger == ids.SIM_START:
        if start == "snapshot" and src and on_snap != src:
            target = S.snapshot_scenario_id(src)
        elif start == "scenario" and on_snap:
            target = S.DEFAULT_SCENARIO
    elif trigger == ids.page_source("simulator") and src and src_seen and src != src_seen:
        if on_snap or info.get("kind") in ("upload", "live"):
            target = S.snapshot_scenario_id(src)
    if target is not None:
        st2, errs = S.coerce_state({**state.to_json(), "scenario": target, "minutes": None})
        if st2.scenario == target:
            state = st2
            if S.snapshot_source(target):
                state, m = S.source_strategies(state)
                msgs += [f"starting from the current snapshot: {_scenario_label(target)}"] + m + errs
            else:
                msgs += [f"scenario {target} selected"] + errs
            extra["autorun"] = True
        else:
            msgs += errs
    elif trigger == ids.SIM_SCENARIO and on_snap:  # the snapshot picked in the scenario list
        state, m = S.source_strategies(state)
        msgs += m
    elif trigger == ids.SIM_START and (start == "snapshot") == bool(on_snap):
        raise PreventUpdate  # the choice the form already shows (set by this callback)
    extra["start"] = "snapshot" if S.snapshot_source(state.scenario) else "scenario"
    extra["start_box"] = bool(src) or extra["start"] == "snapshot"
    extra["start_label"] = str(info.get("label") or src)[:80] if src else None
    extra["src_seen"] = src or src_seen
    return state, msgs, extra


def _resolve_form(trigger, *, form, saved, seen, link, uploaded, current: S.SimState | None, click=None,
                  plan: dict | None = None, finding=None):
    """:func:`resolve_form` without the "start from" choice."""
    msgs: list = []
    up = uploaded.get("id") if isinstance(uploaded, dict) and isinstance(uploaded.get("id"), str) else None
    extra = {"seen": seen, "autorun": False, "load": form is None}
    if form is None:  # page load: a permalink, else the tab's own form, else the defaults
        has_link = isinstance(link, dict) and (link.get("state") or link.get("errors"))
        if has_link:
            state = S.coerce_state(link["state"])[0] if link.get("state") else S.default_state()
            msgs += list(link.get("errors") or [])
            extra["autorun"] = bool(link.get("state"))
            extra["seen"] = up or seen  # the link wins over an upload made before it was opened
        else:
            state, errs = S.coerce_state(saved) if isinstance(saved, dict) and saved else (S.default_state(), [])
            msgs += errs
            if up and up != seen:
                state, m = _switch_scenario(state, up, uploaded)
                msgs += m
                extra["seen"] = up
        return state, msgs, extra
    state = current or S.default_state()
    if trigger == ids.SIM_FINDING:  # a field finding: its scenario, seed and the article's two strategies, run at once
        st = SF.finding_state(finding)
        if st is None:
            raise PreventUpdate
        f = SF.F.FINDINGS[finding]
        msgs.append(f"{f.article} {f.section}: run A {f.a['label']} vs run B {f.b['label']} on "
                    f"{SF.scenario_id(f)}, seed {f.seed}")
        extra["autorun"] = True
        return st, msgs, extra
    if trigger == ids.sim_uploaded():
        if not up or up == seen:
            raise PreventUpdate
        state, m = _switch_scenario(state, up, uploaded)
        msgs += m
        extra["seen"] = up
    elif isinstance(trigger, dict) and trigger.get("type") == ids.SIM_SHED:
        s = trigger.get("side")
        sp = state.side(s)
        need = S.required_placement(sp.shed)
        if need and sp.place != need:
            state = state.with_side(s, replace(sp, place=need))
            msgs.append(f"run {s.upper()}: placement set to {need} too, as {S.pairing_source(sp.shed, need)} "
                        "(pick another placement to compare)")
        # an incompatible pair left by the switch was fixed (and said) by form_state
    elif isinstance(trigger, dict) and trigger.get("type") == ids.SIM_PRESET:
        s = trigger.get("side")
        sp = state.side(s)
        try:
            base = S.base_config(S.load(state.scenario), sp.preset)
        except InputError as exc:
            msgs.append(str(exc))
            raise PreventUpdate from None
        spec, errs = S.coerce_spec({"shed": base.shedding_strategy, "place": base.placement_strategy,
                                    "preset": sp.preset, "values": {}}, base, s)
        state = state.with_side(s, spec)
        msgs += [f"run {s.upper()}: {S.PRESET_LABELS[sp.preset]} with the scenario's keys; its strategies "
                 f"{spec.label()}"] + errs
    elif trigger == ids.SIM_SWEEP_FIG:
        cell = S.sweep_cell(plan, click)
        if cell is None:
            raise PreventUpdate
        xk, xv, yk, yv = cell
        vals = {**state.a.value_dict, str(xk): str(xv), str(yk): str(yv)}
        st2, errs = S.coerce_state({**state.to_json(), "a": {**state.a.to_json(), "values": vals}})
        state = st2
        msgs += [f"run A: {xk}={xv}, {yk}={yv} from the sweep — press Run to see it against B"] + errs
    return state, msgs, extra


def _switch_scenario(state: S.SimState, up: str, uploaded) -> tuple[S.SimState, list]:
    label = uploaded.get("label", up) if isinstance(uploaded, dict) else up
    st2, errs = S.coerce_state({**state.to_json(), "scenario": up, "minutes": None})
    if st2.scenario != up:  # the upload expired meanwhile
        return state, errs
    return st2, [f"scenario {label} (uploaded) selected: {_scenario_label(up)}"] + errs


_FORM_STATES = (
    State(ids.SIM_SCENARIO, "value"), State(ids.SIM_MINUTES, "value"), State(ids.SIM_SEED, "value"),
    *[State(_sid(ids.SIM_SHED, s), "value") for s in SIDES],
    *[State(_sid(ids.SIM_PLACE, s), "value") for s in SIDES],
    *[State(_sid(ids.SIM_PRESET, s), "value") for s in SIDES],
    State({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "id"),
    State({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "value"),
    *[State(_sid(ids.SIM_EXTRA, s), "value") for s in SIDES],
)


def _form(args) -> tuple[S.SimState, list, dict]:
    """``form_state`` of the 13 values of ``_FORM_STATES``, in that order."""
    scen, minutes, seed, sa, sb, pa, pb, ra, rb, kids, kvals, ea, eb = args
    return form_state(scen, minutes, seed, {"a": sa, "b": sb}, {"a": pa, "b": pb}, {"a": ra, "b": rb}, kids, kvals,
                      {"a": ea, "b": eb})


def _side_outputs(state: S.SimState, s: str) -> tuple:
    sp = state.side(s)
    shown = S.side_keys(sp.shed, sp.place)
    return (sp.shed, S.placement_options(sp.shed), sp.place, sp.preset, side_controls(state, s),
            S.extra_text(sp, shown))


@callback(
    Output(ids.SIM_SCENARIO, "options"), Output(ids.SIM_SCENARIO, "value"), Output(ids.SIM_MINUTES, "value"),
    Output(ids.SIM_SEED, "value"),
    *[Output(_sid(k, s), p) for s in SIDES for k, p in ((ids.SIM_SHED, "value"), (ids.SIM_PLACE, "options"),
                                                         (ids.SIM_PLACE, "value"), (ids.SIM_PRESET, "value"),
                                                         (ids.SIM_CONTROLS, "children"), (ids.SIM_EXTRA, "value"))],
    Output(ids.SIM_FORM, "data"), Output(ids.SIM_SEEN, "data"), Output(ids.SIM_ALERT, "children"),
    Output(ids.SIM_AUTORUN, "data"), Output(ids.SIM_RESULT, "data", allow_duplicate=True),
    Output(ids.SIM_START, "value"), Output(ids.SIM_START, "options"), Output(ids.SIM_START_BOX, "hidden"),
    Output(ids.SIM_START_SEEN, "data"),
    *[Input(_sid(ids.SIM_SHED, s), "value") for s in SIDES],
    *[Input(_sid(ids.SIM_PRESET, s), "value") for s in SIDES],
    Input(ids.SIM_SCENARIO, "value"), Input(ids.SIM_SWEEP_FIG, "clickData"), Input(ids.SIM_LINK, "data"),
    Input(ids.sim_uploaded(), "data"), Input(ids.SIM_FINDING, "value"),
    Input(ids.SIM_START, "value"), Input(ids.page_source("simulator"), "data"),
    State(ids.SIM_FORM, "data"), State(ids.SIM_SAVED, "data"), State(ids.SIM_SEEN, "data"), State(ids.SESSION, "data"),
    State(ids.SIM_SWEEP_RESULT, "data"), State(ids.SIM_START_SEEN, "data"),
    *_FORM_STATES,
    prevent_initial_call="initial_duplicate",
)
def sync_form(_sa, _sb, _ra, _rb, _scen, click, link, uploaded, finding, start, source, form, saved, seen, sid,
              sweep_meta, src_seen, *form_args):
    """Page load, a strategy or base-config change, a new scenario upload, a sweep cell clicked, a field
    finding picked: (re)render both sides' controls. The page never opens blank: on arrival it shows
    the form's A/B from this session's cache, or starts running it in the background at once."""
    form, saved, link, uploaded = as_dict(form), as_dict(saved), as_dict(link), as_dict(uploaded)
    if link is not None:  # a decoded permalink: its state and messages
        link = dict(link, state=as_dict(link.get("state")), errors=str_list(link.get("errors"), limit=2000))
    click, sweep_meta = as_dict(click), as_dict(sweep_meta)
    seen, sid, finding = as_str(seen, limit=300), as_str(sid, limit=100), as_str(finding, limit=300)
    if form is not None and not (isinstance(form.get("n", 0), int) and 0 <= form.get("n", 0) < 2**53):
        form = dict(form, n=0)
    trigger = ctx.triggered_id if form is not None else None
    current = _form(form_args)[0] if form is not None else None
    sweep = _sweep_payload(sweep_meta, sid) if trigger == ids.SIM_SWEEP_FIG else None
    start = start if start in ("scenario", "snapshot") else None
    state, msgs, extra = resolve_form(trigger, form=form, saved=saved, seen=seen, link=link, uploaded=uploaded,
                                      current=current, click=click, plan=(sweep or {}).get("plan"), finding=finding,
                                      source=source, start=start, src_seen=src_seen)
    if form is not None and trigger == ids.SIM_SCENARIO and state.to_json() == form.get("state"):
        raise PreventUpdate
    autorun = no_update
    result = no_update
    if extra["load"] or extra["autorun"]:
        key = S.cached_result(state, sid)
        if key:
            result = {"key": key, "cached": True}
        else:  # arrival (any form) or a finding picked: run it now, in the background
            autorun = {"nonce": uuid.uuid4().hex, "state": state.to_json()}
    opts = S.scenario_options(sid, state.scenario)
    side_out = [x for s in SIDES for x in _side_outputs(state, s)]
    alerts = [alert("error" if m.startswith("error") else ("warning" if "ignored" in m or "unknown" in m else "info"),
                    m) for m in msgs]
    return (opts, state.scenario, state.minutes, state.seed, *side_out,
            {"state": state.to_json(), "n": int((form or {}).get("n", 0)) + 1}, extra["seen"],
            alerts or ([] if extra["load"] else no_update), autorun, result,
            extra["start"], start_options(extra["start_label"]), not extra["start_box"], extra["src_seen"])


@callback(
    Output(ids.SIM_SAVED, "data"), Output(ids.SIM_QS, "data"), Output(ids.SIM_SCENARIO_INFO, "children"),
    Output(ids.SIM_MINUTES, "placeholder"),
    *[Output(_sid(ids.SIM_EXTRA_NOTE, s), "children") for s in SIDES],
    Input(ids.SIM_FORM, "data"),
    Input(ids.SIM_SCENARIO, "value"), Input(ids.SIM_MINUTES, "value"), Input(ids.SIM_SEED, "value"),
    *[Input(_sid(ids.SIM_PLACE, s), "value") for s in SIDES],
    Input({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "value"),
    *[Input(_sid(ids.SIM_EXTRA, s), "value") for s in SIDES],
    *[State(_sid(ids.SIM_SHED, s), "value") for s in SIDES],
    *[State(_sid(ids.SIM_PRESET, s), "value") for s in SIDES],
    State({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "id"),
)
def update_state(form, scenario, minutes, seed, pa, pb, kvals, ea, eb, sa, sb, ra, rb, kids):
    """Any control changed: the permalink, the tab's saved form, the scenario line, notes on bad lines."""
    if not isinstance(form, dict):
        raise PreventUpdate
    state, msgs, notes = form_state(scenario, minutes, seed, {"a": sa, "b": sb}, {"a": pa, "b": pb},
                                    {"a": ra, "b": rb}, kids, kvals, {"a": ea, "b": eb})
    try:
        facts = S.scenario_facts(S.load(state.scenario))
    except InputError:
        facts = None
    info = scenario_line(facts) + [alert("warning", m) for m in msgs]
    placeholder = minutes_placeholder(facts)
    side_notes = [[html.Div(m, className="sim-note") for m in notes[s]] for s in SIDES]
    return (state.to_json(), S.encode(state), info, placeholder, *side_notes)


# ------------------------------------------------------------------------------------------ runs (background)
_RUNNING = [(Output(ids.SIM_RUN, "disabled"), True, False), (Output(ids.SIM_SWEEP_RUN, "disabled"), True, False),
            (Output(ids.SIM_CANCEL, "disabled"), False, True), (Output(ids.JOB_STRIP, "hidden"), False, True)]
_PROGRESS = [Output(ids.JOB_PROGRESS, "value"), Output(ids.JOB_PROGRESS, "max"), Output(ids.JOB_TEXT, "children"),
             Output(ids.SIM_PROGRESS, "value"), Output(ids.SIM_PROGRESS, "max"),
             Output(ids.SIM_PROGRESS_TEXT, "children")]
_CANCEL = [Input(ids.JOB_CANCEL, "n_clicks"), Input(ids.SIM_CANCEL, "n_clicks")]


def _sink(set_progress):
    def progress(done, total, text):
        v, m = str(int(done)), str(max(int(total), 1))
        set_progress((v, m, f"Simulator · {text}", v, m, text))
    return progress


@callback(
    Output(ids.SIM_RESULT, "data"),
    Input(ids.SIM_RUN, "n_clicks"), Input(ids.SIM_AUTORUN, "data"),
    *_FORM_STATES, State(ids.SESSION, "data"), State(ids.SIM_RESULT, "data"),
    background=True, prevent_initial_call=True, interval=400, running=_RUNNING, progress=_PROGRESS,
    progress_default=["0", "1", "", "0", "1", ""], cancel=_CANCEL,
)
def run_simulation(set_progress, n_clicks, autorun, *args):
    """"Run A and B" (or a permalink opened without cached results): both runs in this background job."""
    form_args, sid, previous = args[:-2], args[-2], args[-1]
    prev_key = as_str(previous.get("key"), limit=200) if isinstance(previous, dict) else None
    sid = as_str(sid, limit=100)
    if ctx.triggered_id == ids.SIM_AUTORUN and isinstance(autorun, dict):
        state, msgs = S.coerce_state(autorun.get("state"))
    elif n_clicks:
        state, msgs, notes = _form(form_args)
        msgs += notes["a"] + notes["b"]
        if state.scenario != form_args[0]:  # the picked scenario cannot be loaded (an expired upload): say so
            problem = next((m for m in msgs if "scenario" in m), "the scenario cannot be loaded")
            return {"key": prev_key, "error": f"{problem.split(' — ')[0]} — nothing was run; the previous results stay"}
    else:
        raise PreventUpdate
    progress = _sink(set_progress)
    progress(0, 1, f"starting {state.a.shed} vs {state.b.shed} on {state.scenario}")
    try:
        meta = S.run_pair(state, sid, progress)
    except ShedlabError as exc:
        return {"key": prev_key, "error": f"{exc} — nothing was run; the previous results stay on screen"}
    except Exception as exc:  # noqa: BLE001 - never lose the page over an engine bug: say so
        log.exception("simulation failed")
        return {"key": prev_key, "error": f"internal error ({type(exc).__name__}: {exc}); the previous results stay"}
    return {"key": meta["key"], "cached": meta["cached"], "warnings": msgs[:6]}


@callback(
    Output(ids.SIM_SWEEP_RESULT, "data"),
    Input(ids.SIM_SWEEP_RUN, "n_clicks"),
    State(ids.SIM_SWEEP_X, "value"), State(ids.SIM_SWEEP_X_VALUES, "value"),
    State(ids.SIM_SWEEP_Y, "value"), State(ids.SIM_SWEEP_Y_VALUES, "value"),
    *_FORM_STATES, State(ids.SESSION, "data"), State(ids.SIM_SWEEP_RESULT, "data"),
    background=True, prevent_initial_call=True, interval=400, running=_RUNNING, progress=_PROGRESS,
    progress_default=["0", "1", "", "0", "1", ""], cancel=_CANCEL,
)
def run_sweep_job(set_progress, n_clicks, x_key, x_values, y_key, y_values, *args):
    """"Run sweep": one run of run A's settings per cell of the grid, in this background job."""
    if not n_clicks:
        raise PreventUpdate
    x_key, y_key = as_str(x_key, limit=200), as_str(y_key, limit=200)
    x_values, y_values = as_str(x_values, limit=20_000), as_str(y_values, limit=20_000)
    form_args, sid, previous = args[:-2], args[-2], args[-1]
    prev_key = as_str(previous.get("key"), limit=200) if isinstance(previous, dict) else None
    sid = as_str(sid, limit=100)
    state, _, _ = _form(form_args)
    try:
        plan = S.plan_sweep(state, x_key, x_values, y_key, y_values)
        out = S.run_sweep(state, plan, sid, _sink(set_progress))
    except ShedlabError as exc:
        return {"key": prev_key, "error": f"sweep: {exc}"}
    except Exception as exc:  # noqa: BLE001
        log.exception("sweep failed")
        return {"key": prev_key, "error": f"sweep: internal error ({type(exc).__name__}: {exc})"}
    return {"key": out["key"], "cached": out["cached"]}


# ------------------------------------------------------------------------------------------ results
def _result_meta(meta) -> dict | None:
    """``SIM_RESULT``/``SIM_SWEEP_RESULT`` data as the runs write it (``key``, ``error``, ``warnings`` of the
    right types; a request can carry any JSON there: other values are dropped), None when not a dict."""
    meta = as_dict(meta)
    if meta is None:
        return None
    return dict(meta, key=as_str(meta.get("key"), limit=200), error=as_str(meta.get("error"), limit=4000),
                warnings=str_list(meta.get("warnings"), limit=4000))


def result_figures(payload: dict) -> dict:
    """The page's figures of a result (``{"a", "b", "cluster", "std"}``; ``std`` None without TransferShedder)."""
    figs = S.figures(payload)
    out = {"a": figs["run-a-brokers"][1], "b": figs["run-b-brokers"][1], "cluster": figs["cluster"][1],
           "std": figs["transfershedder-std"][1] if "transfershedder-std" in figs else None}
    rev = payload.get("at", "") + payload["state"]["scenario"]
    for f in out.values():
        if f is not None:
            f.layout.uirevision = rev  # new results: zoom out; the same results: keep the zoom
    return out


@callback(
    Output(ids.SIM_SUMMARY, "children"), Output(ids.SIM_FIG_A, "figure"), Output(ids.SIM_FIG_B, "figure"),
    Output(ids.SIM_FIG_CLUSTER, "figure"), Output(ids.SIM_FIG_STD, "figure"), Output(ids.SIM_STD_CARD, "hidden"),
    Output(ids.SIM_HEADLINE, "children"), Output(ids.SIM_EVENT_KINDS, "options"),
    Output(ids.SIM_ALERT, "children", allow_duplicate=True),
    Input(ids.SIM_RESULT, "data"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
)
def show_results(meta, sid):
    """A run finished (or cached results were found): the summary, every figure, the log's kinds."""
    meta = _result_meta(meta)
    if not isinstance(meta, dict):
        raise PreventUpdate
    if meta.get("error"):
        return (no_update,) * 8 + ([alert("error", meta["error"])],)
    if not meta.get("key"):
        raise PreventUpdate
    try:
        payload = S.load_result(meta["key"], sid)
    except InputError as exc:
        return (no_update,) * 8 + ([alert("warning", str(exc))],)
    runs = payload["runs"]
    figs = result_figures(payload)
    table = summary_table(S.summary_rows(runs), {s: r.label[4:] for s, r in runs.items()})
    std = figs["std"]
    alerts = [alert("warning", w) for w in meta.get("warnings") or []]
    cancelled = [s.upper() for s, r in runs.items() if r.cancelled]
    if cancelled:
        alerts.append(alert("warning", f"run {' and '.join(cancelled)} stopped early: partial results"))
    return (table, figs["a"], figs["b"], figs["cluster"], std if std is not None else no_update, std is None,
            headline(payload, meta), S.event_kinds(runs), alerts)


def finding_figures(meta, sid):
    """``(children, hidden)`` of the article's-figures card for the results ``meta`` points at: the
    figures of the finding whose one-click A/B these results are, else hidden."""
    if not isinstance(meta, dict) or not meta.get("key") or meta.get("error"):
        return no_update, no_update
    try:
        payload = S.load_result(meta["key"], sid)
    except InputError:
        return [], True
    f = SF.finding_for(payload["state"])
    if f is None:
        return [], True
    ran = payload["runs"]["a"].summary.get("minutes")
    full = (payload.get("facts") or {}).get("minutes")
    note = (f"This page runs at most {S.MAX_MINUTES:,} minutes: these values are over {ran:,} of the scenario's "
            f"{full:,} minutes; `python -m engine findings` runs it in full." if ran and full and ran < full else "")
    return finding_table(f, SF.figure_rows(f, payload["runs"]), note), False


@callback(
    Output(ids.SIM_FINDING_FIGURES, "children"), Output(ids.SIM_FINDING_CARD, "hidden"),
    Input(ids.SIM_RESULT, "data"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
)
def show_finding(meta, sid):
    """Results shown: when they are a field finding's A/B, the article's figures beside the run's."""
    return finding_figures(meta, sid)


@callback(
    Output(ids.SIM_EVENTS, "children"),
    Input(ids.SIM_RESULT, "data"), Input(ids.SIM_EVENT_KINDS, "value"), Input(ids.SIM_EVENT_RUN, "value"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
)
def show_events(meta, kinds, which, sid):
    """The event log, filtered by kind and run."""
    if not isinstance(meta, dict) or not meta.get("key"):
        raise PreventUpdate
    try:
        payload = S.load_result(meta["key"], sid)
    except InputError as exc:
        return alert("warning", str(exc))
    rows, total = S.event_rows(payload["runs"], kinds or None, which or "both", limit=200)
    return event_table(rows, total)


@callback(
    Output(ids.SIM_SWEEP_FIG, "figure"), Output(ids.SIM_SWEEP_NOTE, "children"),
    Input(ids.SIM_SWEEP_RESULT, "data"), Input(ids.SIM_SAVED, "data"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
)
def show_sweep(meta, saved, sid):
    """A sweep finished, or run A's setting changed: the two heatmaps (run A's own cell outlined)."""
    meta = _result_meta(meta)
    if not isinstance(meta, dict):
        raise PreventUpdate
    if meta.get("error"):
        return no_update, alert("error", meta["error"])
    try:
        sw = S.load_sweep(meta.get("key"), sid)
    except InputError as exc:
        return no_update, alert("warning", str(exc))
    p = sw["plan"]
    current = S.sweep_current(sw, saved)
    fig = sweep_heatmaps(sw["cells"], p["x_key"], p["x"], p["y_key"], p["y"], current=current, rev=meta["key"])
    n = len(sw["cells"])
    note = (f"{n} runs of {sw['strategy']} on {sw['scenario']} ({p['minutes']} minutes each)"
            + (" · from this session's cache" if meta.get("cached") else "")
            + " · outlined: run A's current setting")
    return fig, note


@callback(
    Output(ids.SIM_SWEEP_X, "options"), Output(ids.SIM_SWEEP_X, "value"), Output(ids.SIM_SWEEP_X_VALUES, "value"),
    Output(ids.SIM_SWEEP_Y, "options"), Output(ids.SIM_SWEEP_Y, "value"), Output(ids.SIM_SWEEP_Y_VALUES, "value"),
    Input(ids.SIM_FORM, "data"),
    State(ids.SIM_SWEEP_X, "value"), State(ids.SIM_SWEEP_Y, "value"),
    prevent_initial_call=True,
)
def sweep_options(form, x_key, y_key):
    """Run A's strategy changed: offer its keys for the sweep (default grids when the keys no longer apply)."""
    st = (form or {}).get("state") if isinstance(form, dict) else None
    x_key, y_key = as_str(x_key, limit=200), as_str(y_key, limit=200)
    if not isinstance(st, dict):
        raise PreventUpdate
    a = as_dict(st.get("a"), {})
    a = {k: as_str(a.get(k), limit=100) for k in ("shed", "place")}
    shed = a.get("shed") or S.default_state().a.shed
    opts = S.sweep_keys(shed, a.get("place"))
    keys = {o["value"] for o in opts}
    if x_key in keys and y_key in keys:
        return opts, no_update, no_update, opts, no_update, no_update
    x0, xv, y0, yv = S.sweep_defaults(shed, a.get("place"))
    return opts, x0, xv, opts, y0, yv


# ------------------------------------------------------------------------------------------ sharing
def _sweep_payload(sweep_meta, sid):
    if isinstance(sweep_meta, dict) and sweep_meta.get("key") and not sweep_meta.get("error"):
        try:
            return S.load_sweep(sweep_meta["key"], sid)
        except InputError:
            return None
    return None


@callback(
    Output(ids.SIM_DOWNLOAD, "data"), Output(ids.SIM_ALERT, "children", allow_duplicate=True),
    Input(ids.SIM_EXPORT_FIGS, "n_clicks"),
    State(ids.SIM_EXPORT_FORMAT, "value"), State(ids.SIM_RESULT, "data"), State(ids.SIM_SWEEP_RESULT, "data"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
    running=[(Output(ids.SIM_EXPORT_FIGS, "disabled"), True, False)],
)
def export_figures(n, fmt, meta, sweep_meta, sid):
    """"Download figures": every figure rendered server-side by Kaleido (system Chromium), zipped."""
    if not n:
        raise PreventUpdate
    if not isinstance(meta, dict) or not meta.get("key"):
        return no_update, [alert("info", "Run a simulation first: there is nothing to export yet")]
    fmt = fmt if fmt in ("png", "svg") else "png"
    try:
        payload = S.load_result(meta["key"], sid)
        data = figures_zip(S.figures(payload, _sweep_payload(sweep_meta, sid)), fmt)
    except InputError as exc:
        return no_update, [alert("warning", str(exc))]
    except Exception as exc:  # Chromium missing, a render timeout, …: say so, keep the page
        log.exception("figure export failed")
        return no_update, [alert("error", f"figure export failed: {type(exc).__name__}: {exc}")]
    name = f"shedlab-simulation-figures-{payload['state']['scenario'][:40].replace(':', '-')}.zip"
    return dcc.send_bytes(data, name), no_update


@callback(
    Output(ids.SIM_REPORT_DOWNLOAD, "data"), Output(ids.SIM_ALERT, "children", allow_duplicate=True),
    Input(ids.SIM_REPORT, "n_clicks"),
    State(ids.SIM_RESULT, "data"), State(ids.SIM_SWEEP_RESULT, "data"), State(ids.SIM_PERMALINK, "value"),
    State(ids.SESSION, "data"),
    prevent_initial_call=True,
    running=[(Output(ids.SIM_REPORT, "disabled"), True, False)],
)
def export_report(n, meta, sweep_meta, link, sid):
    """"Export report": one self-contained HTML file (figures, config diff of A and B, summary, events)."""
    if not n:
        raise PreventUpdate
    if not isinstance(meta, dict) or not meta.get("key"):
        return no_update, [alert("info", "Run a simulation first: there is nothing to report yet")]
    try:
        payload = S.load_result(meta["key"], sid)
        text = S.build_report(payload, permalink=link or None, sweep=_sweep_payload(sweep_meta, sid))
    except InputError as exc:
        return no_update, [alert("warning", str(exc))]
    except Exception as exc:  # noqa: BLE001
        log.exception("simulation report failed")
        return no_update, [alert("error", f"report failed: {type(exc).__name__}: {exc}")]
    return {"content": text, "filename": S.report_filename(payload), "type": "text/html"}, no_update


# ------------------------------------------------------------------------------------------ clientside
# the page sees the shell's SCENARIO store (the last uploaded scenario) through its own mirror
clientside_callback(
    "function(data, idlist) { return (idlist || []).map(function () { return data === undefined ? null : data; }); }",
    Output({"type": ids.SIM_UPLOADED, "page": ALL}, "data"),
    Input(ids.SCENARIO, "data"),
    Input({"type": ids.SIM_UPLOADED, "page": ALL}, "id"),
)

# the value label beside a slider follows the handle while dragging (the Tuner's function)
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="keyLabel"),
    Output({"type": ids.SIM_KEY_VALUE, "side": MATCH, "key": MATCH}, "children"),
    Output({"type": ids.SIM_KEY_VALUE, "side": MATCH, "key": MATCH}, "className"),
    Input({"type": ids.SIM_KEY, "side": MATCH, "key": MATCH}, "drag_value"),
    State({"type": ids.SIM_KEY, "side": MATCH, "key": MATCH}, "id"),
    State(ids.SIM_FMT, "data"),
    prevent_initial_call=True,
)

# the permalink: the address bar (without reloading) and the copy box
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="writeUrl"),
    Output(ids.SIM_PERMALINK, "value"),
    Input(ids.SIM_QS, "data"),
    prevent_initial_call=True,
)

# synchronised zoom: a new x range on one time figure goes to the others (Patch, no server round trip)
_SYNCED = (ids.SIM_FIG_A, ids.SIM_FIG_B, ids.SIM_FIG_CLUSTER, ids.SIM_FIG_STD)
clientside_callback(
    ClientsideFunction(namespace="shedlabSim", function_name="syncZoom"),
    *[Output(g, "figure", allow_duplicate=True) for g in _SYNCED],
    *[Input(g, "relayoutData") for g in _SYNCED],
    *[State(g, "figure") for g in _SYNCED],
    prevent_initial_call=True,
)

