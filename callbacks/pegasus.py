"""Pegasus page callbacks (thin: parse inputs, call the service, hand over to figure builders)."""
from __future__ import annotations

import dash
from dash import Input, Output, State, callback, no_update

from callbacks.shell import only
from dashboard import downloads, ids
from dashboard.pegasus import PageOptions, plan_file, plan_view, source_from_sample, source_from_upload, step_view
from dashboard.pegasus.figures import node_counts_figure, skew_figure
from dashboard.web_safety import as_number, as_str, str_list
from engine.errors import InputError
from layouts.pegasus import alert, health_table, proposal_table, step_label, summary_view

__all__ = ["choose_source", "compute_plan", "show_step", "download_plan"]


def _options(options, seed) -> PageOptions:
    """The toggles and seed as the page sends them; a request can carry any JSON, so the toggles are
    its strings and a seed that is not a number or a short text is refused naming the field."""
    if not (seed is None or as_str(seed, limit=40) is not None or as_number(seed) is not None):
        raise InputError("not a number", field="seed")
    return PageOptions.from_inputs(str_list(options, limit=100), seed)


@callback(
    Output(ids.PEGASUS_SOURCE, "data"),
    Output(ids.PEGASUS_ALERT, "children", allow_duplicate=True),
    Output(ids.PEGASUS_UPLOAD, "contents"),
    Input(ids.PEGASUS_SAMPLE, "value"),
    Input(ids.PEGASUS_UPLOAD, "contents"),
    State(ids.PEGASUS_UPLOAD, "filename"),
    prevent_initial_call=True,
)
def choose_source(sample, contents, filename):
    """A sample picked or a file dropped: load it; a bad file keeps the previous cluster."""
    trigger = dash.ctx.triggered_id
    sample, filename = as_str(sample, limit=300), as_str(filename, limit=1000)
    contents = as_str(contents, limit=1 << 40)
    try:
        if trigger == ids.PEGASUS_UPLOAD:
            if not contents:
                return no_update, no_update, no_update
            return source_from_upload(contents, filename), None, None
        return source_from_sample(sample), None, no_update
    except InputError as exc:
        return no_update, alert(f"Not loaded: {exc}"), None


_PLAN_OUTPUTS = {
    "summary": Output(ids.PEGASUS_SUMMARY, "children"), "health": Output(ids.PEGASUS_HEALTH, "children"),
    "table_options": Output(ids.PEGASUS_TABLE, "options"), "table": Output(ids.PEGASUS_TABLE, "value"),
    "step_max": Output(ids.PEGASUS_STEP, "max"), "step": Output(ids.PEGASUS_STEP, "value"),
    "alert": Output(ids.PEGASUS_ALERT, "children"),
}


@callback(
    output=_PLAN_OUTPUTS,
    inputs={"source": Input(ids.PEGASUS_SOURCE, "data"), "options": Input(ids.PEGASUS_OPTIONS, "value"),
            "seed": Input(ids.PEGASUS_SEED, "value"), "table": State(ids.PEGASUS_TABLE, "value")},
)
def compute_plan(source, options, seed, table):
    """Cluster or toggles changed: run the plan, reset the slider to the end of the plan."""
    table = as_str(table, "", limit=1000)
    try:
        v = plan_view(source, _options(options, seed))
    except InputError as exc:
        return only(_PLAN_OUTPUTS, alert=alert(f"Cannot plan: {exc}"))
    return {"summary": summary_view(v.plan, v.warnings), "health": health_table(v.health),
            "table_options": v.table_options, "table": table if table in v.tables else "", "step_max": v.steps,
            "step": v.steps, "alert": None}


@callback(
    Output(ids.PEGASUS_COUNTS, "figure"),
    Output(ids.PEGASUS_SKEW, "figure"),
    Output(ids.PEGASUS_PROPOSALS, "children"),
    Output(ids.PEGASUS_STEP_LABEL, "children"),
    Input(ids.PEGASUS_STEP, "value"),
    Input(ids.PEGASUS_TABLE, "value"),
    State(ids.PEGASUS_SOURCE, "data"),
    State(ids.PEGASUS_OPTIONS, "value"),
    State(ids.PEGASUS_SEED, "value"),
)
def show_step(step, table, source, options, seed):
    """Slider moved or table picked: counts at that step, skew line, proposal list window."""
    step, table = as_number(step, 0, lo=0, hi=10**9), as_str(table, limit=1000)
    try:
        v = step_view(source, _options(options, seed), step, table or None)
    except InputError:
        return no_update, no_update, no_update, no_update
    return (node_counts_figure(v.rows, v.title, v.step, v.steps), skew_figure(v.skew, v.step, v.title),
            proposal_table(v.plan.proposals, v.step), step_label(v.plan, v.step))


@callback(
    Output(ids.PEGASUS_DOWNLOAD, "data"),
    Output(ids.PEGASUS_ALERT, "children", allow_duplicate=True),
    Input(ids.PEGASUS_DOWNLOAD_CSV, "n_clicks"),
    Input(ids.PEGASUS_DOWNLOAD_JSON, "n_clicks"),
    State(ids.PEGASUS_SOURCE, "data"),
    State(ids.PEGASUS_OPTIONS, "value"),
    State(ids.PEGASUS_SEED, "value"),
    prevent_initial_call=True,
)
def download_plan(_csv, _json, source, options, seed):
    """Export the plan as CSV (proposal list) or JSON (the CLI's contract); a plan that cannot be made is said."""
    fmt = "json" if dash.ctx.triggered_id == ids.PEGASUS_DOWNLOAD_JSON else "csv"
    return downloads.respond(lambda: downloads.text(*plan_file(source, _options(options, seed), fmt)),
                             "plan download", lambda _kind, text: alert(text))
