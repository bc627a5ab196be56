"""History page and Simulator, "Recommend a setting" (thin: the form → :mod:`dashboard.history.recommend_page`,
the result → the figures and words of :mod:`dashboard.figures.recommend` and :mod:`dashboard.recommend_report`).
The two cards share everything after the run (:func:`_show`, :func:`_download`), each with its own ids
(:data:`layouts.recommend.IDS`).

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
from layouts.recommend import IDS, explanation

__all__ = ["strategy_keys", "run_recommend", "show_recommend", "download_recommend", "scenario_strategy_keys",
           "run_scenario_recommend", "show_scenario_recommend", "download_scenario_recommend"]


def _study(params, set_progress) -> dict:
    """Run the study of ``params`` in the background job, reporting its trials to the progress bar."""
    def progress(done, total, text):
        set_progress((str(int(done)), str(max(int(total), 1)), text))

    progress(0, 1, "recommend: starting")
    out = R.run_page_recommendation(params, progress=progress)
    set_progress(("1", "1", "done" if out["ok"] else "failed"))
    return out


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
    return dict(job=_study(params, set_progress))


@callback(
    output=dict(alert=Output(ids.RECOMMEND_ALERT, "children"), explain=Output(ids.RECOMMEND_EXPLAIN, "children"),
                actions=Output(ids.RECOMMEND_ACTIONS, "children"), conf=Output(ids.RECOMMEND_CONF, "children"),
                pareto=Output(ids.RECOMMEND_PARETO, "figure"), importance=Output(ids.RECOMMEND_IMPORTANCE, "figure")),
    inputs=dict(job=Input(ids.RECOMMEND_JOB, "data")),
    prevent_initial_call=True,
)
def show_recommend(job):
    """A study finished: the verdict and explanation, the links, the broker.conf lines, the figures."""
    return _show(job)


def _show(job):
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
    return _download(job, ctx.triggered_id == ids.RECOMMEND_CONF_EXPORT)


def _download(job, conf: bool):
    res = R.page_result(job)
    if res is None:
        raise PreventUpdate
    if conf:
        return dict(download=dcc.send_string(conf_text(res), "broker.conf"))
    html_text = build_recommend_report(res, [pareto_figure(res), importance_figure(res)])
    return dict(download=dcc.send_string(html_text, f"shedlab-recommendation-{res['strategy']}.html"))


# ------------------------------------------------------------------------------------------ the Simulator's card
SIM = IDS["scenario"]


@callback(
    output=dict(options=Output(ids.SIM_RECOMMEND_KEYS, "options"), value=Output(ids.SIM_RECOMMEND_KEYS, "value"),
                disabled=Output(ids.SIM_RECOMMEND_KEYS, "disabled")),
    inputs=dict(shed=Input(ids.sim_side(ids.SIM_SHED, "a"), "value"), search=Input(ids.SIM_RECOMMEND_SEARCH, "value")),
)
def scenario_strategy_keys(shed, search):
    """Run A's strategy picked: offer its keys, its sweep keys chosen (any strategy: each one's sweep keys)."""
    opts, default = R.scenario_key_options(as_str(shed, limit=100))
    if search == "any":
        return dict(options=opts, value=[], disabled=True)
    return dict(options=opts, value=default, disabled=False)


def _sim_form_states() -> dict:
    from callbacks.simulator import _form_states

    return _form_states()


@callback(
    output=dict(job=Output(ids.SIM_RECOMMEND_JOB, "data")),
    inputs=dict(_n=Input(ids.SIM_RECOMMEND_RUN, "n_clicks")),
    state=dict(controls=_sim_form_states(), objective=State(ids.SIM_RECOMMEND_OBJECTIVE, "value"),
               keys=State(ids.SIM_RECOMMEND_KEYS, "value"), trials=State(ids.SIM_RECOMMEND_TRIALS, "value"),
               seeds=State(ids.SIM_RECOMMEND_SEEDS, "value"), search=State(ids.SIM_RECOMMEND_SEARCH, "value")),
    background=True, prevent_initial_call=True, interval=700,
    running=[(Output(ids.SIM_RECOMMEND_RUN, "disabled"), True, False),
             (Output(ids.SIM_RECOMMEND_CANCEL, "disabled"), False, True)],
    progress=[Output(ids.SIM_RECOMMEND_PROGRESS, "value"), Output(ids.SIM_RECOMMEND_PROGRESS, "max"),
              Output(ids.SIM_RECOMMEND_PROGRESS_TEXT, "children")],
    progress_default=["0", "1", ""],
    cancel=[Input(ids.SIM_RECOMMEND_CANCEL, "n_clicks")],
)
def run_scenario_recommend(set_progress, _n, controls, objective, keys, trials, seeds, search):
    """Run (or continue) the study on the page's scenario, run A the current setting (background process)."""
    from callbacks.simulator import _form

    if not _n:
        raise PreventUpdate
    try:
        state, _msgs, _notes = _form(controls)
        params = R.scenario_page_params(state, objective=as_str(objective, limit=1000), keys=keys, trials=trials,
                                        seeds=seeds, search="any" if search == "any" else "a")
    except (InputError, UsageError) as exc:
        return dict(job={"ok": False, "error": str(exc)})
    return dict(job=_study(params, set_progress))


@callback(
    output=dict(alert=Output(SIM["ALERT"], "children"), explain=Output(SIM["EXPLAIN"], "children"),
                actions=Output(SIM["ACTIONS"], "children"), conf=Output(SIM["CONF"], "children"),
                pareto=Output(SIM["PARETO"], "figure"), importance=Output(SIM["IMPORTANCE"], "figure")),
    inputs=dict(job=Input(SIM["JOB"], "data")),
    prevent_initial_call=True,
)
def show_scenario_recommend(job):
    """The Simulator's study finished: as the History card shows it."""
    return _show(job)


@callback(
    output=dict(download=Output(SIM["DOWNLOAD"], "data")),
    inputs=dict(_conf=Input(SIM["CONF_EXPORT"], "n_clicks"), _report=Input(SIM["REPORT"], "n_clicks")),
    state=dict(job=State(SIM["JOB"], "data")),
    prevent_initial_call=True,
)
def download_scenario_recommend(_conf, _report, job):
    """The broker.conf lines or the HTML report of the Simulator's last recommendation."""
    return _download(job, ctx.triggered_id == SIM["CONF_EXPORT"])
