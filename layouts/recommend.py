"""The "Recommend a setting" card — an objective in the operator's words, a search over the strategy's keys,
the answer checked on held-out data: on the History page (backtests on the page's range, held-out days)
and on the Simulator (simulations of the page's scenario with run A as the current setting, held-out
seeds). One builder, two sets of component ids (:data:`IDS`)."""
from __future__ import annotations

from dash import dcc, html

from dashboard import ids
from dashboard.figures.theme import empty_figure, graph_config
from dashboard.history.objective import MEASURES
from dashboard.history.recommend_page import (DEFAULT_OBJECTIVE, DEFAULT_SCENARIO_OBJECTIVE, PAGE_MAX_SCENARIO_TRIALS,
                                               PAGE_MAX_TRIALS, key_options, scenario_key_options)

__all__ = ["card", "explanation", "measures_table", "IDS", "ROLES"]

ROLES = ("CARD", "OBJECTIVE", "KEYS", "TRIALS", "RUN", "CANCEL", "PROGRESS", "PROGRESS_TEXT", "JOB", "ALERT", "EXPLAIN",
         "PARETO", "IMPORTANCE", "ACTIONS", "CONF", "CONF_EXPORT", "REPORT", "DOWNLOAD")
#: the card's component ids per page: ``IDS["history"]["RUN"]`` is ``ids.RECOMMEND_RUN``
IDS = {"history": {r: getattr(ids, f"RECOMMEND_{r}") for r in ROLES},
       "scenario": {r: getattr(ids, f"SIM_RECOMMEND_{r}") for r in ROLES}}


def _measure_help(kind: str = "history"):
    items = []
    for m in MEASURES.values():
        if kind not in m.where:
            continue
        arg = "(POINTS)" if m.arg == "points" else "(PERCENTILE)" if m.arg == "percentile" else ""
        items.append(html.Li([html.Code(m.name + arg), " — ", m.words.replace("{arg}", "POINTS")]))
    where = ("A backtest does not move load, so the measures here are about the unloads and how they answer "
             "the observed load; the Simulator's card adds the load spread." if kind == "history" else
             "Each trial simulates the scenario with run A's setting changed; a measure is the mean over the fit "
             "seeds.")
    return html.Details([html.Summary("Measures and how to write an objective"),
                         html.P(["One part per line or separated by ", html.Code(";"), ": ", html.Code("min MEASURE"),
                                 " or ", html.Code("max MEASURE"), " (two goals: a Pareto front), and constraints ",
                                 html.Code("MEASURE <= NUMBER"), ". ", where], className="small"),
                         html.Ul(items, className="small")], className="muted")


def card(kind: str = "history", shed: str | None = None):
    """The card on the History page (``kind`` ``"history"``) or the Simulator (``"scenario"``, ``shed``: run
    A's strategy)."""
    i = IDS[kind]
    if kind == "history":
        opts, default = key_options(None)
        head = ("Say what you want in the measures below; the search tries settings of the strategy's keys on the "
                "range above (the backtest's strategy and broker.conf overrides are the current setting), fits on the "
                "first days and checks the answer on the last days it never saw. The study is kept: run again to "
                "continue it.")
        objective, max_trials, trials = DEFAULT_OBJECTIVE, PAGE_MAX_TRIALS, 30
        extra = [html.Div([html.Label("Held-out days (end of range)", htmlFor=ids.RECOMMEND_HOLDOUT),
                           dcc.Input(id=ids.RECOMMEND_HOLDOUT, type="number", min=0, step=1, className="text-input",
                                     placeholder="a quarter")], className="history-field")]
    else:
        opts, default = scenario_key_options(shed)
        head = ("Run A is the current setting: the search tries settings of its strategy's keys (or any strategy) "
                "on the scenario above, each trial simulated on two seeds, and checks the answer on seeds it never "
                "saw. Hopeless trials stop after the first seed. The study is kept: run again to continue it.")
        objective, max_trials, trials = DEFAULT_SCENARIO_OBJECTIVE, PAGE_MAX_SCENARIO_TRIALS, 12
        extra = [html.Div([html.Label("Held-out seeds", htmlFor=ids.SIM_RECOMMEND_SEEDS),
                           dcc.Input(id=ids.SIM_RECOMMEND_SEEDS, type="number", min=0, max=20, step=1, value=2,
                                     className="text-input")], className="history-field"),
                 html.Div([html.Label("Strategy", htmlFor=ids.SIM_RECOMMEND_SEARCH),
                           dcc.RadioItems(id=ids.SIM_RECOMMEND_SEARCH, value="a", inline=True,
                                          options=[{"label": "run A's", "value": "a"},
                                                   {"label": "any (searched too)", "value": "any"}])],
                          className="history-field")]
    return html.Section([
        html.Div([html.H3("Recommend a setting"), html.P(head, className="muted small")], className="card-head"),
        html.Div([
            html.Div([html.Label("Objective", htmlFor=i["OBJECTIVE"]),
                      dcc.Textarea(id=i["OBJECTIVE"], value=objective, className="history-textarea",
                                   maxLength=500)], className="history-field history-field-wide"),
            html.Div([html.Label("Keys to search", htmlFor=i["KEYS"]),
                      dcc.Dropdown(id=i["KEYS"], options=opts, value=default, multi=True)],
                     className="history-field history-field-wide"),
            html.Div([html.Label("Trials", htmlFor=i["TRIALS"]),
                      dcc.Input(id=i["TRIALS"], type="number", value=trials, min=1, max=max_trials,
                                step=1, className="text-input")], className="history-field"),
            *extra,
        ], className="history-controls"),
        _measure_help(kind),
        html.Div([
            html.Button("Recommend", id=i["RUN"], className="btn btn-primary"),
            html.Button("Cancel", id=i["CANCEL"], className="btn btn-ghost", disabled=True),
            html.Progress(id=i["PROGRESS"], value="0", max="1", className="history-progress"),
            html.Span(id=i["PROGRESS_TEXT"], className="muted small"),
        ], className="btn-row history-run"),
        dcc.Store(id=i["JOB"]),
        html.Div(id=i["ALERT"]),
        html.Div(id=i["EXPLAIN"]),
        html.Div(id=i["ACTIONS"], className="btn-row"),
        html.Pre(id=i["CONF"], className="small"),
        html.Div([html.Button("Download broker.conf lines", id=i["CONF_EXPORT"], className="btn btn-ghost"),
                  html.Button("Download report", id=i["REPORT"], className="btn btn-ghost"),
                  dcc.Download(id=i["DOWNLOAD"])], className="btn-row"),
        dcc.Graph(id=i["PARETO"], figure=empty_figure("Run a recommendation", rev="recommend-empty"),
                  config=graph_config(f"{i['PARETO']}")),
        dcc.Graph(id=i["IMPORTANCE"], figure=empty_figure("", rev="recommend-empty"),
                  config=graph_config(f"{i['IMPORTANCE']}")),
    ], className="card", id=i["CARD"])


def measures_table(rows: list[dict]):
    head = html.Tr([html.Th(x) for x in ("measure", "data", "current", "recommended")])
    body = [html.Tr([html.Td(html.Code(r["measure"])), html.Td(r["data"]), html.Td(f"{r['current']:,.3g}"),
                     html.Td("—" if r["recommended"] is None else f"{r['recommended']:,.3g}")]) for r in rows]
    return html.Table([html.Thead(head), html.Tbody(body)], className="history-table")


def explanation(res: dict, rows: list[dict]):
    """The verdict, the explanation sentences and the measures side by side."""
    verdict = res.get("verdict")
    kind = {"beats-current": "info"}.get(verdict, "warning")
    head = {"beats-current": "Recommended: it beats the current setting on the held-out data.",
            "does-not-beat-current": "The best setting found does NOT beat the current one on the held-out data.",
            "no-better-setting": "Keep the current setting: nothing tried does better on the fit data.",
            "no-feasible-setting": "No setting tried meets the constraints.",
            "no-holdout": "Recommended (no held-out days: measured on the fit data only)."}.get(verdict, "")
    st = res.get("study") or {}
    return html.Div([
        html.Div([html.B(head), html.Span(f"  study: {st.get('trials', 0)} trials "
                                          f"({st.get('new_trials', 0)} new{', continued' if st.get('resumed') else ''}"
                                          f"{'; %d more stopped early' % st['pruned'] if st.get('pruned') else ''})",
                                          className="muted small")],
                 className=f"alert alert-{kind}", role="status"),
        html.P(res["objective"]["words"], className="muted small"),
        html.Ul([html.Li(s) for s in res.get("explanation") or []]),
        measures_table(rows),
    ])
