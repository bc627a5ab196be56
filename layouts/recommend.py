"""History page: the "Recommend a setting" card — an objective in the operator's words, a search over the
strategy's keys on the page's range, the answer checked on held-out days."""
from __future__ import annotations

from dash import dcc, html

from dashboard import ids
from dashboard.figures.theme import empty_figure, graph_config
from dashboard.history.objective import MEASURES
from dashboard.history.recommend_page import DEFAULT_OBJECTIVE, PAGE_MAX_TRIALS, key_options

__all__ = ["card", "explanation", "measures_table"]


def _measure_help():
    items = []
    for m in MEASURES.values():
        if "history" not in m.where:
            continue
        arg = "(POINTS)" if m.arg == "points" else "(PERCENTILE)" if m.arg == "percentile" else ""
        items.append(html.Li([html.Code(m.name + arg), " — ", m.words.replace("{arg}", "POINTS")]))
    return html.Details([html.Summary("Measures and how to write an objective"),
                         html.P(["One part per line or separated by ", html.Code(";"), ": ", html.Code("min MEASURE"),
                                 " or ", html.Code("max MEASURE"), " (two goals: a Pareto front), and constraints ",
                                 html.Code("MEASURE <= NUMBER"), ". A backtest does not move load, so the measures "
                                 "here are about the unloads and how they answer the observed load; the Simulator's "
                                 "scenarios (command line: ", html.Code("recommend --scenario"), ") add the load "
                                 "spread."], className="small"),
                         html.Ul(items, className="small")], className="muted")


def card():
    opts, default = key_options(None)
    return html.Section([
        html.Div([html.H3("Recommend a setting"),
                  html.P("Say what you want in the measures below; the search tries settings of the strategy's "
                         "keys on the range above (the backtest's strategy and broker.conf overrides are the current "
                         "setting), fits on the first days and checks the answer on the last days it never saw. "
                         "The study is kept: run again to continue it.", className="muted small")],
                 className="card-head"),
        html.Div([
            html.Div([html.Label("Objective", htmlFor=ids.RECOMMEND_OBJECTIVE),
                      dcc.Textarea(id=ids.RECOMMEND_OBJECTIVE, value=DEFAULT_OBJECTIVE, className="history-textarea",
                                   maxLength=500)], className="history-field history-field-wide"),
            html.Div([html.Label("Keys to search", htmlFor=ids.RECOMMEND_KEYS),
                      dcc.Dropdown(id=ids.RECOMMEND_KEYS, options=opts, value=default, multi=True)],
                     className="history-field history-field-wide"),
            html.Div([html.Label("Trials", htmlFor=ids.RECOMMEND_TRIALS),
                      dcc.Input(id=ids.RECOMMEND_TRIALS, type="number", value=30, min=1, max=PAGE_MAX_TRIALS,
                                step=1, className="text-input")], className="history-field"),
            html.Div([html.Label("Held-out days (end of range)", htmlFor=ids.RECOMMEND_HOLDOUT),
                      dcc.Input(id=ids.RECOMMEND_HOLDOUT, type="number", min=0, step=1, className="text-input",
                                placeholder="a quarter")], className="history-field"),
        ], className="history-controls"),
        _measure_help(),
        html.Div([
            html.Button("Recommend", id=ids.RECOMMEND_RUN, className="btn btn-primary"),
            html.Button("Cancel", id=ids.RECOMMEND_CANCEL, className="btn btn-ghost", disabled=True),
            html.Progress(id=ids.RECOMMEND_PROGRESS, value="0", max="1", className="history-progress"),
            html.Span(id=ids.RECOMMEND_PROGRESS_TEXT, className="muted small"),
        ], className="btn-row history-run"),
        dcc.Store(id=ids.RECOMMEND_JOB),
        html.Div(id=ids.RECOMMEND_ALERT),
        html.Div(id=ids.RECOMMEND_EXPLAIN),
        html.Div(id=ids.RECOMMEND_ACTIONS, className="btn-row"),
        html.Pre(id=ids.RECOMMEND_CONF, className="small"),
        html.Div([html.Button("Download broker.conf lines", id=ids.RECOMMEND_CONF_EXPORT, className="btn btn-ghost"),
                  html.Button("Download report", id=ids.RECOMMEND_REPORT, className="btn btn-ghost"),
                  dcc.Download(id=ids.RECOMMEND_DOWNLOAD)], className="btn-row"),
        dcc.Graph(id=ids.RECOMMEND_PARETO, figure=empty_figure("Run a recommendation", rev="recommend-empty"),
                  config=graph_config("recommend-pareto")),
        dcc.Graph(id=ids.RECOMMEND_IMPORTANCE, figure=empty_figure("", rev="recommend-empty"),
                  config=graph_config("recommend-importance")),
    ], className="card")


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
                                          f"({st.get('new_trials', 0)} new{', continued' if st.get('resumed') else ''})",
                                          className="muted small")],
                 className=f"alert alert-{kind}", role="status"),
        html.P(res["objective"]["words"], className="muted small"),
        html.Ul([html.Li(s) for s in res.get("explanation") or []]),
        measures_table(rows),
    ])
