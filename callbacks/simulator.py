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

from dash import (ALL, MATCH, ClientsideFunction, Input, Output, State, callback, clientside_callback, ctx,
                  html, no_update)
from dash.exceptions import PreventUpdate

from callbacks.shell import alert, only, page_source
from dashboard.web_safety import as_dict, as_str, str_list
from dashboard import downloads, ids
from dashboard import simulator as S
from dashboard.figures.simulator import sweep_heatmaps
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
form_state = S.form_state  # the state the controls show (dashboard.simulator.form)


def resolve_form(trigger, *, form, saved, seen, link, uploaded, current: S.SimState | None, click=None,
                 plan: dict | None = None, finding=None, source=None, start=None, src_seen=None):
    """:func:`dashboard.simulator.resolve_form` on the request's values: the shell's source store is checked
    here (:func:`callbacks.shell.page_source`); "nothing changes" is Dash's :class:`PreventUpdate`."""
    try:
        return S.resolve_form(trigger, form=form, saved=saved, seen=seen, link=link, uploaded=uploaded,
                              current=current, click=click, plan=plan, finding=finding, source=page_source(source),
                              start=start, src_seen=src_seen)
    except S.NoChange:
        raise PreventUpdate from None


def _form_states() -> dict:
    """The form's controls, by name (a fresh grouping per callback: Dash merges into the dicts it is given)."""
    def sides(kind):
        return {s: State(_sid(kind, s), "value") for s in SIDES}
    return {"scenario": State(ids.SIM_SCENARIO, "value"), "minutes": State(ids.SIM_MINUTES, "value"),
            "seed": State(ids.SIM_SEED, "value"), "shed": sides(ids.SIM_SHED), "place": sides(ids.SIM_PLACE),
            "preset": sides(ids.SIM_PRESET), "key_ids": State({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "id"),
            "key_values": State({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "value"),
            "extra": sides(ids.SIM_EXTRA)}


def _form(f: dict) -> tuple[S.SimState, list, dict]:
    """``form_state`` of the form's controls (the values of :func:`_form_states`)."""
    return form_state(f["scenario"], f["minutes"], f["seed"], f["shed"], f["place"], f["preset"], f["key_ids"],
                      f["key_values"], f["extra"])


def _side_outputs(state: S.SimState, s: str) -> dict:
    sp = state.side(s)
    shown = S.side_keys(sp.shed, sp.place)
    return {"shed": sp.shed, "place_options": S.placement_options(sp.shed), "place": sp.place, "preset": sp.preset,
            "controls": side_controls(state, s), "extra": S.extra_text(sp, shown)}


_SIDE_OUTPUTS = {"shed": (ids.SIM_SHED, "value"), "place_options": (ids.SIM_PLACE, "options"),
                 "place": (ids.SIM_PLACE, "value"), "preset": (ids.SIM_PRESET, "value"),
                 "controls": (ids.SIM_CONTROLS, "children"), "extra": (ids.SIM_EXTRA, "value")}


@callback(
    output={
        "options": Output(ids.SIM_SCENARIO, "options"), "scenario": Output(ids.SIM_SCENARIO, "value"),
        "minutes": Output(ids.SIM_MINUTES, "value"), "seed": Output(ids.SIM_SEED, "value"),
        "sides": {s: {name: Output(_sid(k, s), p) for name, (k, p) in _SIDE_OUTPUTS.items()} for s in SIDES},
        "form": Output(ids.SIM_FORM, "data"), "seen": Output(ids.SIM_SEEN, "data"),
        "alerts": Output(ids.SIM_ALERT, "children"), "autorun": Output(ids.SIM_AUTORUN, "data"),
        "result": Output(ids.SIM_RESULT, "data", allow_duplicate=True),
        "start": Output(ids.SIM_START, "value"), "start_options": Output(ids.SIM_START, "options"),
        "start_hidden": Output(ids.SIM_START_BOX, "hidden"), "start_seen": Output(ids.SIM_START_SEEN, "data"),
    },
    inputs={
        "sheds": {s: Input(_sid(ids.SIM_SHED, s), "value") for s in SIDES},
        "presets": {s: Input(_sid(ids.SIM_PRESET, s), "value") for s in SIDES},
        "scenario": Input(ids.SIM_SCENARIO, "value"), "click": Input(ids.SIM_SWEEP_FIG, "clickData"),
        "link": Input(ids.SIM_LINK, "data"), "uploaded": Input(ids.sim_uploaded(), "data"),
        "finding": Input(ids.SIM_FINDING, "value"), "start": Input(ids.SIM_START, "value"),
        "source": Input(ids.page_source("simulator"), "data"),
        "form": State(ids.SIM_FORM, "data"), "saved": State(ids.SIM_SAVED, "data"), "seen": State(ids.SIM_SEEN, "data"),
        "sid": State(ids.SESSION, "data"), "sweep_meta": State(ids.SIM_SWEEP_RESULT, "data"),
        "src_seen": State(ids.SIM_START_SEEN, "data"), "controls": _form_states(),
    },
    prevent_initial_call="initial_duplicate",
)
def sync_form(*, click, link, uploaded, finding, start, source, form, saved, seen, sid, sweep_meta, src_seen,
              controls, **_triggers):
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
    current = _form(controls)[0] if form is not None else None
    sweep = S.sweep_or_none(sweep_meta, sid) if trigger == ids.SIM_SWEEP_FIG else None
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
    alerts = [alert("error" if m.startswith("error") else ("warning" if "ignored" in m or "unknown" in m else "info"),
                    m) for m in msgs]
    return {"options": S.scenario_options(sid, state.scenario), "scenario": state.scenario,
            "minutes": state.minutes, "seed": state.seed, "sides": {s: _side_outputs(state, s) for s in SIDES},
            "form": {"state": state.to_json(), "n": int((form or {}).get("n", 0)) + 1}, "seen": extra["seen"],
            "alerts": alerts or ([] if extra["load"] else no_update), "autorun": autorun, "result": result,
            "start": extra["start"], "start_options": start_options(extra["start_label"]),
            "start_hidden": not extra["start_box"], "start_seen": extra["src_seen"]}


@callback(
    output={"saved": Output(ids.SIM_SAVED, "data"), "qs": Output(ids.SIM_QS, "data"),
            "info": Output(ids.SIM_SCENARIO_INFO, "children"), "placeholder": Output(ids.SIM_MINUTES, "placeholder"),
            "notes": {s: Output(_sid(ids.SIM_EXTRA_NOTE, s), "children") for s in SIDES}},
    inputs={"form": Input(ids.SIM_FORM, "data"),
            "controls": dict(_form_states(), scenario=Input(ids.SIM_SCENARIO, "value"),
                             minutes=Input(ids.SIM_MINUTES, "value"), seed=Input(ids.SIM_SEED, "value"),
                             place={s: Input(_sid(ids.SIM_PLACE, s), "value") for s in SIDES},
                             key_values=Input({"type": ids.SIM_KEY, "side": ALL, "key": ALL}, "value"),
                             extra={s: Input(_sid(ids.SIM_EXTRA, s), "value") for s in SIDES})},
)
def update_state(form, controls):
    """Any control changed: the permalink, the tab's saved form, the scenario line, notes on bad lines."""
    if not isinstance(form, dict):
        raise PreventUpdate
    c = controls
    state, msgs, notes, facts, qs = S.form_echo(c["scenario"], c["minutes"], c["seed"], c["shed"], c["place"],
                                                c["preset"], c["key_ids"], c["key_values"], c["extra"])
    return {"saved": state.to_json(), "qs": qs, "info": scenario_line(facts) + [alert("warning", m) for m in msgs],
            "placeholder": minutes_placeholder(facts),
            "notes": {s: [html.Div(m, className="sim-note") for m in notes[s]] for s in SIDES}}


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
    output=Output(ids.SIM_RESULT, "data"),
    inputs={"n_clicks": Input(ids.SIM_RUN, "n_clicks"), "autorun": Input(ids.SIM_AUTORUN, "data"),
            "controls": _form_states(), "sid": State(ids.SESSION, "data"), "previous": State(ids.SIM_RESULT, "data")},
    background=True, prevent_initial_call=True, interval=400, running=_RUNNING, progress=_PROGRESS,
    progress_default=["0", "1", "", "0", "1", ""], cancel=_CANCEL,
)
def run_simulation(set_progress, *, n_clicks, autorun, controls, sid, previous):
    """"Run A and B" (or a permalink opened without cached results): both runs in this background job."""
    prev_key = as_str(previous.get("key"), limit=200) if isinstance(previous, dict) else None
    sid = as_str(sid, limit=100)
    if ctx.triggered_id == ids.SIM_AUTORUN and isinstance(autorun, dict):
        state, msgs = S.coerce_state(autorun.get("state"))
    elif n_clicks:
        state, msgs, notes = _form(controls)
        msgs += notes["a"] + notes["b"]
        if state.scenario != controls["scenario"]:  # the picked scenario cannot be loaded (an expired upload): say so
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
    output=Output(ids.SIM_SWEEP_RESULT, "data"),
    inputs={"n_clicks": Input(ids.SIM_SWEEP_RUN, "n_clicks"),
            "x_key": State(ids.SIM_SWEEP_X, "value"), "x_values": State(ids.SIM_SWEEP_X_VALUES, "value"),
            "y_key": State(ids.SIM_SWEEP_Y, "value"), "y_values": State(ids.SIM_SWEEP_Y_VALUES, "value"),
            "controls": _form_states(), "sid": State(ids.SESSION, "data"),
            "previous": State(ids.SIM_SWEEP_RESULT, "data")},
    background=True, prevent_initial_call=True, interval=400, running=_RUNNING, progress=_PROGRESS,
    progress_default=["0", "1", "", "0", "1", ""], cancel=_CANCEL,
)
def run_sweep_job(set_progress, *, n_clicks, x_key, x_values, y_key, y_values, controls, sid, previous):
    """"Run sweep": one run of run A's settings per cell of the grid, in this background job."""
    if not n_clicks:
        raise PreventUpdate
    x_key, y_key = as_str(x_key, limit=200), as_str(y_key, limit=200)
    x_values, y_values = as_str(x_values, limit=20_000), as_str(y_values, limit=20_000)
    prev_key = as_str(previous.get("key"), limit=200) if isinstance(previous, dict) else None
    sid = as_str(sid, limit=100)
    state, _, _ = _form(controls)
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


result_figures = S.page_figures  # the page's figures of a result (dashboard.simulator.results)


_RESULT_OUTPUTS = {
    "summary": Output(ids.SIM_SUMMARY, "children"), "a": Output(ids.SIM_FIG_A, "figure"),
    "b": Output(ids.SIM_FIG_B, "figure"), "cluster": Output(ids.SIM_FIG_CLUSTER, "figure"),
    "std": Output(ids.SIM_FIG_STD, "figure"), "std_hidden": Output(ids.SIM_STD_CARD, "hidden"),
    "headline": Output(ids.SIM_HEADLINE, "children"), "kinds": Output(ids.SIM_EVENT_KINDS, "options"),
    "alerts": Output(ids.SIM_ALERT, "children", allow_duplicate=True),
}


@callback(
    output=_RESULT_OUTPUTS,
    inputs={"meta": Input(ids.SIM_RESULT, "data"), "sid": State(ids.SESSION, "data")},
    prevent_initial_call=True,
)
def show_results(meta, sid):
    """A run finished (or cached results were found): the summary, every figure, the log's kinds."""
    meta = _result_meta(meta)
    if not isinstance(meta, dict):
        raise PreventUpdate
    if meta.get("error"):
        return only(_RESULT_OUTPUTS, alerts=[alert("error", meta["error"])])
    if not meta.get("key"):
        raise PreventUpdate
    try:
        v = S.result_view(meta["key"], sid)
    except InputError as exc:
        return only(_RESULT_OUTPUTS, alerts=[alert("warning", str(exc))])
    std = v.figures["std"]
    alerts = [alert("warning", w) for w in meta.get("warnings") or []]
    if v.cancelled:
        alerts.append(alert("warning", f"run {' and '.join(v.cancelled)} stopped early: partial results"))
    return {"summary": summary_table(v.summary, v.labels), "a": v.figures["a"], "b": v.figures["b"],
            "cluster": v.figures["cluster"], "std": std if std is not None else no_update, "std_hidden": std is None,
            "headline": headline(v.payload, meta), "kinds": v.kinds, "alerts": alerts}


def finding_figures(meta, sid):
    """``(children, hidden)`` of the article's-figures card for the results ``meta`` points at: the
    figures of the finding whose one-click A/B these results are, else hidden."""
    if not isinstance(meta, dict) or not meta.get("key") or meta.get("error"):
        return no_update, no_update
    try:
        found = S.finding_view(meta["key"], sid)
    except InputError:
        return [], True
    if found is None:
        return [], True
    f, rows, note = found
    return finding_table(f, rows, note), False


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
        rows, total = S.event_view(meta["key"], sid, kinds or None, which or "both", limit=200)
    except InputError as exc:
        return alert("warning", str(exc))
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
        sw, current, note = S.sweep_view(meta.get("key"), sid, saved, cached=bool(meta.get("cached")))
    except InputError as exc:
        return no_update, alert("warning", str(exc))
    p = sw["plan"]
    fig = sweep_heatmaps(sw["cells"], p["x_key"], p["x"], p["y_key"], p["y"], current=current, rev=meta["key"])
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
    opts, grid = S.sweep_choice(as_str(a.get("shed"), limit=100), as_str(a.get("place"), limit=100), x_key, y_key)
    if grid is None:
        return opts, no_update, no_update, opts, no_update, no_update
    x0, xv, y0, yv = grid
    return opts, x0, xv, opts, y0, yv


# ------------------------------------------------------------------------------------------ sharing
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

    def build():
        figs, stem = S.figures_export(meta["key"], sid, sweep_meta)
        return downloads.figures(figs, fmt, stem)
    return downloads.respond(build, "figure export", alert, logger=log)


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
    return downloads.respond(lambda: downloads.text(*S.report_export(meta["key"], sid, sweep_meta, link or None)),
                             "report", alert, logger=log)


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

