"""History page, "Recommend a setting" (thin: the form → :mod:`dashboard.history.recommend_page`, the result
→ the figures and words of :mod:`dashboard.figures.recommend` and :mod:`dashboard.recommend_report`).

The study runs in a background callback (its own process, as the History jobs do) with the trials'
progress and a Cancel; the finished trials stay in the study, so a later click continues it.
"""
from __future__ import annotations

from dash import Input, Output, State, callback, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.figures.recommend import importance_figure, pareto_figure
from dashboard.history import recommend_page as R
from dashboard.recommend_report import build_recommend_report, conf_text, side_by_side, simulator_href, tuner_href
from dashboard.web_safety import as_str
from engine.errors import InputError, UsageError
from layouts.history import alert
from layouts.recommend import explanation

__all__ = ["strategy_keys", "run_recommend", "show_recommend", "download_recommend"]


@callback(
    output=dict(options=Output(ids.RECOMMEND_KEYS, "options"), value=Output(ids.RECOMMEND_KEYS, "value")),
    inputs=dict(strategy=Input(ids.HISTORY_STRATEGY, "value")),
)
def strategy_keys(strategy):
    """The backtest's strategy picked: offer its keys, its sweep keys chosen."""
    opts, default = R.key_options(as_str(strategy, limit=100))
    return dict(options=opts, value=default)


@callback(
    output=dict(job=Output(ids.RECOMMEND_JOB, "data")),
    inputs=dict(_n=Input(ids.RECOMMEND_RUN, "n_clicks")),
    state=dict(path=State(ids.HISTORY_DATASET, "value"), start=State(ids.HISTORY_RANGE, "start_date"),
               end=State(ids.HISTORY_RANGE, "end_date"), strategy=State(ids.HISTORY_STRATEGY, "value"),
               overrides=State(ids.HISTORY_OVERRIDES, "value"), bundles=State(ids.HISTORY_BUNDLES_MODE, "value"),
               objective=State(ids.RECOMMEND_OBJECTIVE, "value"), keys=State(ids.RECOMMEND_KEYS, "value"),
               trials=State(ids.RECOMMEND_TRIALS, "value"), holdout=State(ids.RECOMMEND_HOLDOUT, "value")),
    background=True, prevent_initial_call=True, interval=700,
    running=[(Output(ids.RECOMMEND_RUN, "disabled"), True, False),
             (Output(ids.RECOMMEND_CANCEL, "disabled"), False, True)],
    progress=[Output(ids.RECOMMEND_PROGRESS, "value"), Output(ids.RECOMMEND_PROGRESS, "max"),
              Output(ids.RECOMMEND_PROGRESS_TEXT, "children")],
    progress_default=["0", "1", ""],
    cancel=[Input(ids.RECOMMEND_CANCEL, "n_clicks")],
)
def run_recommend(set_progress, _n, path, start, end, strategy, overrides, bundles, objective, keys, trials, holdout):
    """Run (or continue) the study in this background process; the result goes to the cache."""
    if not path:
        raise PreventUpdate
    try:
        params = R.page_params(path=as_str(path, limit=4096), start=as_str(start, limit=40),
                               end=as_str(end, limit=40), strategy=as_str(strategy, limit=100),
                               overrides=as_str(overrides, limit=20_000), bundles=as_str(bundles, limit=20),
                               objective=as_str(objective, limit=1000), keys=keys, trials=trials, holdout=holdout)
    except (InputError, UsageError) as exc:
        return dict(job={"ok": False, "error": str(exc)})

    def progress(done, total, text):
        set_progress((str(int(done)), str(max(int(total), 1)), text))

    progress(0, 1, "recommend: starting")
    out = R.run_page_recommendation(params, progress=progress)
    set_progress(("1", "1", "done" if out["ok"] else "failed"))
    return dict(job=out)


@callback(
    output=dict(alert=Output(ids.RECOMMEND_ALERT, "children"), explain=Output(ids.RECOMMEND_EXPLAIN, "children"),
                actions=Output(ids.RECOMMEND_ACTIONS, "children"), conf=Output(ids.RECOMMEND_CONF, "children"),
                pareto=Output(ids.RECOMMEND_PARETO, "figure"), importance=Output(ids.RECOMMEND_IMPORTANCE, "figure")),
    inputs=dict(job=Input(ids.RECOMMEND_JOB, "data")),
    prevent_initial_call=True,
)
def show_recommend(job):
    """A study finished: the verdict and explanation, the links, the broker.conf lines, the figures."""
    skip = dict(explain=no_update, actions=no_update, conf=no_update, pareto=no_update, importance=no_update)
    if not isinstance(job, dict):
        raise PreventUpdate
    if not job.get("ok"):
        return dict(skip, alert=alert(f"recommend failed: {as_str(job.get('error'), limit=500)}"))
    res = R.page_result(job)
    if res is None:
        return dict(skip, alert=alert("The recommendation is no longer in the cache: run it again."))
    actions = [html.A("Open the current setting in the Tuner", href=tuner_href(res, "current"), className="btn")]
    if res.get("recommended"):
        actions = [html.A("Open the recommendation in the Tuner", href=tuner_href(res), className="btn btn-primary"),
                   html.A("Compare with the current setting in the Simulator", href=simulator_href(res),
                          className="btn")]
    return dict(alert=None, explain=explanation(res, side_by_side(res)), actions=actions, conf=conf_text(res),
                pareto=pareto_figure(res), importance=importance_figure(res))


@callback(
    output=dict(download=Output(ids.RECOMMEND_DOWNLOAD, "data")),
    inputs=dict(_conf=Input(ids.RECOMMEND_CONF_EXPORT, "n_clicks"), _report=Input(ids.RECOMMEND_REPORT, "n_clicks")),
    state=dict(job=State(ids.RECOMMEND_JOB, "data")),
    prevent_initial_call=True,
)
def download_recommend(_conf, _report, job):
    """The broker.conf lines or the self-contained HTML report of the last recommendation."""
    res = R.page_result(job)
    if res is None:
        raise PreventUpdate
    if ctx.triggered_id == ids.RECOMMEND_CONF_EXPORT:
        return dict(download=dcc.send_string(conf_text(res), "broker.conf"))
    html_text = build_recommend_report(res, [pareto_figure(res), importance_figure(res)])
    return dict(download=dcc.send_string(html_text, f"shedlab-recommendation-{res['strategy']}.html"))
