"""History page callbacks (thin: parse the controls, call :mod:`dashboard.history.service`, draw).

The Spark jobs run in a background callback (a separate process the web process forks; the
SparkSession is created there, never in the web process) with Spark stage progress and a cancel
button. Clicking an unload in the backtest timeline saves that minute as a LoadData snapshot in the
diskcache and opens ``/tuner?snapshot=<key>`` (contract: :mod:`dashboard.history.snapshot`).
"""
from __future__ import annotations

from dash import ALL, Input, Output, State, callback, ctx, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.figures.history import aggregates_figure, backtest_figure, bundle_figure, hottest_figure, sweep_heatmap
from dashboard.history import service as S
from dashboard.web_safety import as_str
from engine.errors import InputError, UsageError
from layouts.history import alert, pairs_table

__all__ = ["dataset_changed", "show_aggregates", "strategy_changed", "run_history_job", "show_job", "open_in_tuner",
           "show_bundles", "agreement_files", "show_agreement", "agreement_report"]


@callback(
    Output(ids.HISTORY_RANGE, "min_date_allowed"), Output(ids.HISTORY_RANGE, "max_date_allowed"),
    Output(ids.HISTORY_RANGE, "start_date"), Output(ids.HISTORY_RANGE, "end_date"),
    Output(ids.HISTORY_RANGE, "initial_visible_month"), Output(ids.HISTORY_INFO, "children"),
    Input(ids.HISTORY_DATASET, "value"),
)
def dataset_changed(path):
    """A dataset picked: bound the date picker to its days (whole range selected) and describe it."""
    if not path:
        return None, None, None, None, None, "No dataset: generate one with `python -m dashboard.history generate`."
    try:
        info = S.dataset_info(path)
    except InputError as exc:
        return None, None, None, None, None, alert(str(exc))
    text = [info["text"]]
    if info["incidents"]:
        text.append(html.Br())
        text.append("Incidents: " + "; ".join(f"{i['kind']} {i.get('broker', '')} {i['from'][5:16]}–{i['to'][11:16]}"
                                               for i in info["incidents"]))
    return info["start"], info["end"], info["start"], info["end"], info["start"], text


def _weights(dep) -> dict:
    """The resource weights' controls: their ids (``broker.conf`` keys) and values."""
    pattern = {"type": ids.HISTORY_WEIGHT, "key": ALL}
    return {"ids": State(pattern, "id"), "values": dep(pattern, "value")}


def weight_values(weights) -> dict:
    """``{broker.conf key: value}`` of the weight controls (what :func:`dashboard.history.service.parse_weights`
    reads; a request may carry anything: ids that are not ``{"key": str}`` are dropped)."""
    w = weights if isinstance(weights, dict) else {}
    keys, values = w.get("ids"), w.get("values")
    if not isinstance(keys, list) or not isinstance(values, list):
        return {}
    return {i["key"]: v for i, v in zip(keys[:16], values[:16]) if isinstance(i, dict) and isinstance(i.get("key"), str)}


@callback(
    output={"aggregates": Output(ids.HISTORY_AGG_GRAPH, "figure"), "hottest": Output(ids.HISTORY_HOT_GRAPH, "figure"),
            "note": Output(ids.HISTORY_AGG_NOTE, "children")},
    inputs={"path": Input(ids.HISTORY_DATASET, "value"), "start": Input(ids.HISTORY_RANGE, "start_date"),
            "end": Input(ids.HISTORY_RANGE, "end_date"), "resolution": Input(ids.HISTORY_RESOLUTION, "value"),
            "weights": _weights(Input), "job": Input(ids.HISTORY_JOB, "data")},
)
def show_aggregates(path, start, end, resolution, weights, job=None):
    """Dataset, range, resolution or weights changed (or a Spark aggregate finished): draw the aggregates."""
    if not path or not start or not end:
        raise PreventUpdate
    try:
        res, note = S.aggregates_for_view(path, start, end, weight_values(weights))
    except (InputError, UsageError) as exc:
        return {"aggregates": no_update, "hottest": no_update, "note": alert(str(exc))}
    return {"aggregates": aggregates_figure(res, resolution or "hour"), "hottest": hottest_figure(res), "note": note}


@callback(
    Output(ids.HISTORY_X_KEY, "options"), Output(ids.HISTORY_X_KEY, "value"), Output(ids.HISTORY_X_VALUES, "value"),
    Output(ids.HISTORY_Y_KEY, "options"), Output(ids.HISTORY_Y_KEY, "value"), Output(ids.HISTORY_Y_VALUES, "value"),
    Input(ids.HISTORY_STRATEGY, "value"),
)
def strategy_changed(strategy):
    """Strategy picked: offer its keys for the sweep, with default grids."""
    strategy = as_str(strategy, limit=100)  # a request may carry any JSON: anything else is the default
    opts, xk, xv, yk, yv = S.sweep_defaults(strategy)
    return opts, xk, xv, opts, yk, yv


@callback(
    output=Output(ids.HISTORY_JOB, "data"),
    inputs={"clicks": {"aggregate": Input(ids.HISTORY_RUN_AGG, "n_clicks"),
                       "backtest": Input(ids.HISTORY_RUN_BACKTEST, "n_clicks"),
                       "sweep": Input(ids.HISTORY_RUN_SWEEP, "n_clicks")},
            "path": State(ids.HISTORY_DATASET, "value"), "start": State(ids.HISTORY_RANGE, "start_date"),
            "end": State(ids.HISTORY_RANGE, "end_date"), "weights": _weights(State),
            "strategy": State(ids.HISTORY_STRATEGY, "value"), "overrides": State(ids.HISTORY_OVERRIDES, "value"),
            "bundles": State(ids.HISTORY_BUNDLES_MODE, "value"), "x_key": State(ids.HISTORY_X_KEY, "value"),
            "x_values": State(ids.HISTORY_X_VALUES, "value"), "y_key": State(ids.HISTORY_Y_KEY, "value"),
            "y_values": State(ids.HISTORY_Y_VALUES, "value")},
    background=True, prevent_initial_call=True, interval=700,
    running=[(Output(ids.HISTORY_RUN_BACKTEST, "disabled"), True, False),
             (Output(ids.HISTORY_RUN_SWEEP, "disabled"), True, False),
             (Output(ids.HISTORY_RUN_AGG, "disabled"), True, False),
             (Output(ids.HISTORY_CANCEL, "disabled"), False, True)],
    progress=[Output(ids.HISTORY_PROGRESS, "value"), Output(ids.HISTORY_PROGRESS, "max"),
              Output(ids.HISTORY_PROGRESS_TEXT, "children")],
    progress_default=["0", "1", ""],
    cancel=[Input(ids.HISTORY_CANCEL, "n_clicks")],
)
def run_history_job(set_progress, *, clicks=None, path, start, end, weights, strategy, overrides, bundles, x_key,
                    x_values, y_key, y_values):
    """Run backtest / sweep / aggregates with Spark in this background process; the frames go to the
    cache and the page gets a small summary."""
    trig = ctx.triggered_id
    job = {ids.HISTORY_RUN_AGG: "aggregate", ids.HISTORY_RUN_BACKTEST: "backtest",
           ids.HISTORY_RUN_SWEEP: "sweep"}.get(trig)
    if job is None or not path:
        raise PreventUpdate
    try:
        params = S.job_params(job, start=start, end=end, weights=weight_values(weights), strategy=strategy,
                              overrides=overrides,
                              bundles=bundles, x_key=x_key, x_values=x_values, y_key=y_key, y_values=y_values)
    except (InputError, UsageError) as exc:
        return {"job": job, "ok": False, "error": str(exc)}

    def progress(done, total, text):
        set_progress((str(int(done)), str(max(int(total), 1)), text))

    progress(0, 1, f"{job}: starting")
    try:
        out = S.run_page_job(job, path, params, progress=progress)
    except (InputError, UsageError) as exc:  # an unknown dataset name (a request can name anything)
        return {"job": job, "ok": False, "error": str(exc)}
    set_progress(("1", "1", "done" if out["ok"] else "failed"))
    return out


@callback(
    Output(ids.HISTORY_BACKTEST_GRAPH, "figure"), Output(ids.HISTORY_PAIRS, "children"),
    Output(ids.HISTORY_SWEEP_GRAPH, "figure"), Output(ids.HISTORY_ALERT, "children"),
    Input(ids.HISTORY_JOB, "data"),
    prevent_initial_call=True,
)
def show_job(summary):
    """A background job finished: draw its result (or say why it failed)."""
    if not summary or not isinstance(summary, dict):  # the store comes back from the browser: any JSON
        raise PreventUpdate
    if not summary.get("ok"):
        return no_update, no_update, no_update, alert(f"{summary.get('job', 'job')} failed: {summary.get('error')}")
    res = S.job_result(summary)
    if res is None:
        return no_update, no_update, no_update, alert("The result is no longer in the cache: run it again.")
    meta = summary.get("meta") or {}
    note = alert(f"{summary['job']} done ({meta.get('engine', 'cache')}"
                 + (f", Spark start {meta['spark_start_s']} s, job {meta['job_s']} s" if "spark_start_s" in meta else "")
                 + ")", kind="info")
    p = summary["params"]
    if summary["job"] == "backtest":
        return (backtest_figure(res["events"], res["per_day"], p.get("strategy", "")), pairs_table(res["per_pair"]),
                no_update, note)
    if summary["job"] == "sweep":
        return no_update, no_update, sweep_heatmap(res["cells"], p["x_key"], p["y_key"], p.get("strategy", "")), note
    return no_update, no_update, no_update, note


@callback(
    Output(ids.HISTORY_GOTO, "href"), Output(ids.HISTORY_TUNER_LINK, "children"),
    Input(ids.HISTORY_BACKTEST_GRAPH, "clickData"),
    State(ids.HISTORY_JOB, "data"),
    prevent_initial_call=True,
)
def open_in_tuner(click, summary):
    """An unload clicked: save that minute (with the strategy state just before it) and open it in the Tuner."""
    if not isinstance(click, dict) or not isinstance(summary, dict) or not isinstance(click.get("points"), list) \
            or not click["points"] or summary.get("job") != "backtest":
        raise PreventUpdate
    pt = click["points"][0]
    cd = pt.get("customdata") if isinstance(pt, dict) else None
    if not isinstance(cd, list) or not cd or not isinstance(cd[0], (int, float)):
        raise PreventUpdate  # a per-day bar, not an unload (or not a point this page drew)
    res = S.job_result(summary)
    if res is None:
        return no_update, alert("The backtest result is no longer in the cache: run it again.")
    ev = S.event_at(res["events"], int(cd[0]))
    if ev is None:
        raise PreventUpdate
    from dashboard.history.snapshot import save_minute_snapshot

    p = summary["params"]
    try:
        key = save_minute_snapshot(S.dataset_path(summary.get("dataset")), ev["timestamp"], state=ev.get("state"),
                                   strategy=p.get("strategy"), config=p.get("set"),
                                   event={k: ev[k] for k in ("broker", "partner", "trigger", "gap", "bundles")},
                                   synthetic_bundles=p.get("synthetic_bundles", 8), bundles=p.get("bundles", "auto"))
    except (InputError, OSError) as exc:
        return no_update, alert(f"Could not open that minute: {exc}")
    href = f"/tuner?snapshot={key}"
    return href, html.Span(["Opened ", html.A(f"{ev['timestamp'][:16]} {ev['broker']}", href=href), " in the Tuner."])


@callback(
    Output(ids.HISTORY_BUNDLE_GRAPH, "figure"), Output(ids.HISTORY_BUNDLE_NOTE, "children"),
    Input(ids.HISTORY_DATASET, "value"), Input(ids.HISTORY_RANGE, "start_date"), Input(ids.HISTORY_RANGE, "end_date"),
)
def show_bundles(path, start, end):
    """Dataset or range changed: per-bundle distribution over time (when the data has bundle metrics)."""
    if not path or not start or not end:
        raise PreventUpdate
    try:
        res, note = S.bundles_for_view(path, start, end)
    except (InputError, UsageError) as exc:
        return no_update, alert(str(exc))
    return bundle_figure(res), note


def _agree_form() -> dict:
    """The comparison's form, by name (the dataset and range, the uploaded broker.conf and timeline)."""
    return {"path": State(ids.HISTORY_DATASET, "value"), "start": State(ids.HISTORY_RANGE, "start_date"),
            "end": State(ids.HISTORY_RANGE, "end_date"), "conf": State(ids.HISTORY_AGREE_CONF, "contents"),
            "conf_name": State(ids.HISTORY_AGREE_CONF, "filename"),
            "timeline": State(ids.HISTORY_AGREE_TIMELINE, "contents"),
            "timeline_name": State(ids.HISTORY_AGREE_TIMELINE, "filename")}


@callback(Output(ids.HISTORY_AGREE_FILES, "children"),
          Input(ids.HISTORY_AGREE_CONF, "filename"), Input(ids.HISTORY_AGREE_TIMELINE, "filename"))
def agreement_files(conf_name, timeline_name):
    """Say which files the comparison will use."""
    conf_name, timeline_name = as_str(conf_name, limit=255), as_str(timeline_name, limit=255)  # file names only
    return (f"broker.conf: {conf_name or 'none (Pulsar defaults)'} · "
            f"compares: {'timeline ' + timeline_name if timeline_name else 'the dataset range (counters)'}")


def _agreement(path=None, start=None, end=None, conf=None, conf_name=None, timeline=None, timeline_name=None):
    """The comparison for the page's form values (uploads as data URLs, file names bounded)."""
    from dashboard.history.predicted import page_agreement

    conf, timeline = as_str(conf, limit=1 << 40), as_str(timeline, limit=1 << 40)  # data URLs
    conf_name, timeline_name = as_str(conf_name, limit=255), as_str(timeline_name, limit=255)
    return page_agreement(path, start, end, conf, conf_name, timeline, timeline_name)


@callback(
    Output(ids.HISTORY_AGREE_GRAPH, "figure"), Output(ids.HISTORY_AGREE_SUMMARY, "children"),
    Output(ids.HISTORY_AGREE_TABLE, "children"),
    inputs={"n": Input(ids.HISTORY_AGREE_RUN, "n_clicks"), "form": _agree_form()},
    prevent_initial_call=True,
)
def show_agreement(n, form):
    """Compare: what the cluster did beside what the engine predicts, with the agreement figure."""
    from dashboard.figures.history import agreement_figure
    from layouts.history import agreement_summary, agreement_table

    try:
        ag, _conf = _agreement(**form)
    except (InputError, UsageError) as exc:
        return no_update, alert(str(exc)), ""
    return agreement_figure(ag), agreement_summary(ag), agreement_table(ag)


@callback(
    output=Output(ids.HISTORY_AGREE_DOWNLOAD, "data"),
    inputs={"n": Input(ids.HISTORY_AGREE_REPORT, "n_clicks"), "form": _agree_form()},
    prevent_initial_call=True,
)
def agreement_report(n, form):
    """Download the predicted-vs-actual report (self-contained HTML)."""
    from dashboard.export import build_agreement_report
    from dashboard.figures.history import agreement_figure

    try:
        ag, conf_text = _agreement(**form)
    except (InputError, UsageError):
        raise PreventUpdate from None
    return dict(content=build_agreement_report(ag, agreement_figure(ag), conf=conf_text),
                filename="shedlab-predicted-vs-actual.html", type="text/html")
