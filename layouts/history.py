"""History page: months of broker metrics — aggregates, backtests and sweeps of a setting (Spark)."""
from __future__ import annotations

import pandas as pd
from dash import dcc, html

from dashboard.tuner.release_diff import release_options
from engine.releases import DEFAULT_VERSION
from dashboard import ids
from dashboard.figures.theme import empty_figure, graph_config
from dashboard.history.jobs import DEFAULT_STRATEGY

__all__ = ["layout", "alert", "pairs_table", "agreement_summary", "agreement_table"]


def alert(text: str, kind: str = "error"):
    return html.Div(text, className=f"alert alert-{kind}", role="alert")


def pairs_table(per_pair, limit: int = 15):
    """The broker pairs that fired most, with the first and last time."""
    if per_pair is None or len(per_pair) == 0:
        return html.Div()
    t = per_pair.sort_values(["events", "broker"], ascending=[False, True]).head(limit)
    head = html.Tr([html.Th(x) for x in ("broker", "partner", "unloads", "bundles", "first", "last")])
    rows = [html.Tr([html.Td(r.broker), html.Td(r.partner if isinstance(r.partner, str) else "—"),
                     html.Td(f"{int(r.events):,}"), html.Td(f"{int(r.bundles):,}"),
                     html.Td(str(r.first)[:16]), html.Td(str(r.last)[:16])]) for r in t.itertuples()]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="history-table")


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


def agreement_summary(ag):
    """The agreement figures in words, with their definitions and the notes (nothing hidden)."""
    m = ag.metrics
    items = [html.Li([html.B(f"agreement {_pct(m['agreement'])}"),
                      f" — Jaccard index of the {m['basis']}: |predicted ∩ observed| / |predicted ∪ observed|"]),
             html.Li(f"unloads: the cluster {m['observed_unloads']:g}, the engine ({ag.strategy}) "
                     f"{m['predicted_unloads']:g}; count agreement {_pct(m['count_agreement'])} (Σ min / Σ max per hour)"),
             html.Li(f"shedding brokers per hour: precision {_pct(m['broker_precision'])}, "
                     f"recall {_pct(m['broker_recall'])}")]
    if m.get("bundle_precision") is not None or m.get("bundle_recall") is not None:
        items.append(html.Li(f"bundles: precision {_pct(m['bundle_precision'])}, recall {_pct(m['bundle_recall'])}"))
    items += [html.Li(n, className="muted") for n in ag.notes]
    return html.Div([html.Div(ag.source, className="muted small"), html.Ul(items)])


def agreement_table(ag, limit: int = 30):
    """Unloads side by side (timeline: every disagreeing one first), else the hours that differ."""
    if ag.moves is not None and len(ag.moves):
        t = ag.moves.assign(order=(ag.moves["status"] == "both").astype(int)).sort_values(["order", "time"],
                                                                                          kind="stable").head(limit)
        head = html.Tr([html.Th(x) for x in ("interval from (UTC)", "bundle", "from", "predicted to", "observed to",
                                             "status")])
        rows = [html.Tr([html.Td(str(pd.Timestamp(int(r.time), unit="ms"))[:16]), html.Td(html.Code(r.bundle)),
                         html.Td(r.broker), html.Td(r.predicted_destination if isinstance(r.predicted_destination, str)
                                                    else "—"),
                         html.Td(r.observed_destination if isinstance(r.observed_destination, str) else "—"),
                         html.Td(html.B(r.status))]) for r in t.itertuples()]
        return html.Table([html.Thead(head), html.Tbody(rows)], className="history-table")
    h = ag.hours[ag.hours["predicted"] != ag.hours["observed"]].head(limit)
    if h.empty:
        return html.Div("Every hour: the same number of unloads.", className="muted small")
    head = html.Tr([html.Th(x) for x in ("hour (UTC)", "predicted", "observed", "brokers predicted", "brokers observed")])
    rows = [html.Tr([html.Td(f"{r.hour:%Y-%m-%d %H:00}"), html.Td(f"{r.predicted:g}"), html.Td(f"{r.observed:g}"),
                     html.Td(", ".join(r.predicted_brokers) or "—"),
                     html.Td("not known" if r.observed_brokers is None else ", ".join(r.observed_brokers) or "—")])
            for r in h.itertuples()]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="history-table")


def _agreement_card():
    return html.Section([
        html.Div([html.H3("Predicted vs actual"),
                  html.P("What the cluster did — the load manager's unload counters per hour (and, with bundle "
                         "metrics, which brokers shed), or the ownership changes between the snapshots of an "
                         "uploaded timeline — beside what the engine, run with the cluster's own broker.conf, "
                         "predicts for the same data.", className="muted small")], className="card-head"),
        html.Div([
            dcc.Upload(id=ids.HISTORY_AGREE_CONF, children=html.Div("broker.conf: drop or click"),
                       className="btn btn-ghost upload-btn", max_size=512 * 1024, accept=".conf,.properties,.txt"),
            dcc.Upload(id=ids.HISTORY_AGREE_TIMELINE,
                       children=html.Div("timeline of snapshots (optional, instead of the range): JSON list or "
                                         "JSON lines"), className="btn btn-ghost upload-btn", accept=".json,.jsonl,.ndjson"),
        ], className="history-controls"),
        html.Div(id=ids.HISTORY_AGREE_FILES, className="muted small"),
        html.Div([html.Button("Compare", id=ids.HISTORY_AGREE_RUN, className="btn btn-primary"),
                  html.Button("Download report", id=ids.HISTORY_AGREE_REPORT, className="btn btn-ghost"),
                  dcc.Download(id=ids.HISTORY_AGREE_DOWNLOAD)], className="btn-row"),
        html.Div(id=ids.HISTORY_AGREE_SUMMARY),
        dcc.Loading(dcc.Graph(id=ids.HISTORY_AGREE_GRAPH, figure=empty_figure("Compare to see both sides",
                                                                              rev="history-empty"),
                              config=graph_config("history-predicted-vs-actual")), type="dot"),
        html.Div(id=ids.HISTORY_AGREE_TABLE),
    ], className="card")


def _controls(options, value):
    return html.Div([
        html.Div([html.Label("Dataset", htmlFor=ids.HISTORY_DATASET),
                  dcc.Dropdown(id=ids.HISTORY_DATASET, options=options, value=value, clearable=False)],
                 className="history-field history-field-wide"),
        html.Div([html.Label("Time range (UTC)"),
                  dcc.DatePickerRange(id=ids.HISTORY_RANGE, display_format="YYYY-MM-DD", minimum_nights=0,
                                      clearable=False)], className="history-field"),
        html.Div([html.Label("Resolution"),
                  dcc.RadioItems(id=ids.HISTORY_RESOLUTION, value="hour", inline=True,
                                 options=[{"label": x, "value": x} for x in ("minute", "hour", "day")])],
                 className="history-field"),
        html.Div([html.Label("Weights cpu, directMemory, bwIn, bwOut", htmlFor=ids.HISTORY_WEIGHTS),
                  dcc.Input(id=ids.HISTORY_WEIGHTS, value="1, 0, 1, 1", debounce=True, className="text-input")],
                 className="history-field"),
    ], className="history-controls")


def _strategy_options() -> list[dict]:
    """Every shedding strategy a backtest runs (the registry's, plug-ins included), titled by its spec."""
    from engine.backtest import shedding_strategies
    from engine.strategies import registry

    return [{"label": n, "value": n, "title": registry.spec(n).title} for n in shedding_strategies()]


def _backtest_card():
    return html.Section([
        html.Div([html.H3("Backtest and sweep"),
                  html.P("Replays the engine's own strategy minute by minute over the range (Spark, in the "
                         "background): how often it would have unloaded, per day and per broker pair. A sweep "
                         "runs the backtest for every cell of a grid of two keys in one Spark job.",
                         className="muted small")], className="card-head"),
        html.Div([
            html.Div([html.Label("Strategy", htmlFor=ids.HISTORY_STRATEGY),
                      dcc.Dropdown(id=ids.HISTORY_STRATEGY, value=DEFAULT_STRATEGY, clearable=False,
                                   options=_strategy_options())], className="history-field"),
            html.Div([html.Label("Pulsar release", htmlFor=ids.HISTORY_RELEASE),
                      dcc.Dropdown(id=ids.HISTORY_RELEASE, value="", clearable=False,
                                   options=release_options(f"default ({DEFAULT_VERSION})"))],
                     className="history-field"),
            html.Div([html.Label("broker.conf overrides (KEY=VALUE lines)", htmlFor=ids.HISTORY_OVERRIDES),
                      dcc.Textarea(id=ids.HISTORY_OVERRIDES, value="", className="history-textarea",
                                   placeholder="loadBalancerAvgShedderLowThreshold=15\nmaxUnloadPercentage=0.5")],
                     className="history-field history-field-wide"),
            html.Div([html.Label("Bundles"),
                      dcc.RadioItems(id=ids.HISTORY_BUNDLES_MODE, value="auto", inline=False,
                                     options=[{"label": "from the data when present", "value": "auto"},
                                              {"label": "8 synthetic per broker", "value": "synthetic"}])],
                     className="history-field"),
        ], className="history-controls"),
        html.Div([
            html.Div([html.Label("Sweep x", htmlFor=ids.HISTORY_X_KEY),
                      dcc.Dropdown(id=ids.HISTORY_X_KEY, clearable=False),
                      dcc.Input(id=ids.HISTORY_X_VALUES, className="text-input", debounce=True)],
                     className="history-field history-field-wide"),
            html.Div([html.Label("Sweep y", htmlFor=ids.HISTORY_Y_KEY),
                      dcc.Dropdown(id=ids.HISTORY_Y_KEY, clearable=False),
                      dcc.Input(id=ids.HISTORY_Y_VALUES, className="text-input", debounce=True)],
                     className="history-field history-field-wide"),
        ], className="history-controls"),
        html.Div([
            html.Button("Run backtest", id=ids.HISTORY_RUN_BACKTEST, className="btn btn-primary"),
            html.Button("Run sweep", id=ids.HISTORY_RUN_SWEEP, className="btn"),
            html.Button("Compute aggregates with Spark", id=ids.HISTORY_RUN_AGG, className="btn btn-ghost"),
            html.Button("Cancel", id=ids.HISTORY_CANCEL, className="btn btn-ghost", disabled=True),
            html.Progress(id=ids.HISTORY_PROGRESS, value="0", max="1", className="history-progress"),
            html.Span(id=ids.HISTORY_PROGRESS_TEXT, className="muted small"),
        ], className="btn-row history-run"),
        html.Div(id=ids.HISTORY_ALERT),
        dcc.Loading(dcc.Graph(id=ids.HISTORY_BACKTEST_GRAPH, figure=empty_figure("Run a backtest", rev="history-empty"),
                              config=graph_config("history-backtest")), type="dot"),
        html.Div(id=ids.HISTORY_TUNER_LINK, className="small"),
        html.Div(id=ids.HISTORY_PAIRS),
        dcc.Graph(id=ids.HISTORY_SWEEP_GRAPH, figure=empty_figure("Run a sweep", rev="history-empty"),
                  config=graph_config("history-sweep")),
    ], className="card")


def layout(**kwargs):
    from dashboard.history.service import dataset_options
    from layouts.recommend import card as recommend_card

    try:
        options = dataset_options()
    except Exception as exc:  # noqa: BLE001 - a broken datasets dir must not break the page
        options = []
        problem = alert(f"Datasets not available: {exc}")
    else:
        problem = None
    value = options[0]["value"] if options else None
    return html.Div([
        dcc.Location(id=ids.HISTORY_GOTO, refresh="callback-nav"),
        dcc.Store(id=ids.HISTORY_JOB),
        html.Div([html.H2("History"),
                  html.P(["Per-minute broker metrics over days or months: how uneven the cluster was, which brokers "
                          "stay hottest, and how often a shedding setting would have fired. Big datasets are "
                          "aggregated with Spark (", html.Code("python -m dashboard.history"), ")."],
                         className="muted")], className="page-head"),
        problem,
        _controls(options, value),
        html.Div(id=ids.HISTORY_INFO, className="muted small history-info"),
        html.Section([
            html.Div([html.H3("Cluster aggregates"), html.Div(id=ids.HISTORY_AGG_NOTE, className="muted small")],
                     className="card-head"),
            dcc.Loading(dcc.Graph(id=ids.HISTORY_AGG_GRAPH, figure=empty_figure("Loading…", rev="history-empty"),
                                  config=graph_config("history-aggregates")), type="dot"),
            dcc.Graph(id=ids.HISTORY_HOT_GRAPH, figure=empty_figure("", rev="history-empty"),
                      config=graph_config("history-hottest")),
        ], className="card"),
        _backtest_card(),
        recommend_card(),
        _agreement_card(),
        html.Section([
            html.Div([html.H3("Bundles over time"), html.Div(id=ids.HISTORY_BUNDLE_NOTE, className="muted small")],
                     className="card-head"),
            dcc.Graph(id=ids.HISTORY_BUNDLE_GRAPH, figure=empty_figure("", rev="history-empty"),
                      config=graph_config("history-bundles")),
        ], className="card"),
    ], className="page history-page")
