"""Simulator page: run a scenario minute by minute with strategy (or settings) A and B, side by side.

``layout(**kwargs)`` takes a permalink's query parameters (see :mod:`dashboard.simulator`);
with none it renders the default comparison and the callbacks restore the tab's own form. The small
builders below (side controls, summary table, event log) are pure functions shared by the callbacks.
"""
from __future__ import annotations

from dash import dcc, html

from dashboard.tuner.release_diff import check_release, release_options
from dashboard import ids
from dashboard import simulator as S
from dashboard.simulator.findings import finding_options
from dashboard.figures.simulator import RUN_COLORS
from dashboard.figures.theme import empty_figure, graph_config
from dashboard.keys import conf_to_value, fmt_conf_value, format_value, key_spec, spaced_marks
from layouts.recommend import card as recommend_card
from layouts.tuner import fmt_store, key_label, page_actions

__all__ = ["layout", "start_options", "side_controls", "side_panel", "summary_table", "event_table", "headline", "scenario_line",
           "preset_options", "minutes_placeholder", "finding_table"]


# ------------------------------------------------------------------------------------------ controls
def preset_options() -> list[dict]:
    return [{"label": f"Base: {v}", "value": k} for k, v in S.PRESET_LABELS.items()]


def _key_row(side: str, key: str, text: str, base_text: str) -> html.Div:
    spec = key_spec(key)
    value = conf_to_value(spec, text)
    changed = text != base_text
    lo, hi = spec.range_for(value)
    meta = [html.Span(f"default {format_value(spec.default, spec.fmt)}", className="tk-default")]
    if spec.default5 != spec.default:
        meta.append(html.Span(f"5.0: {format_value(spec.default5, spec.fmt)}", className="tk-default5"))
    if base_text != fmt_conf_value(spec.default):
        meta.append(html.Span(f"base {format_value(conf_to_value(spec, base_text), spec.fmt)}", className="sim-base"))
    return html.Div([
        html.Div([html.Code(key_label(key), className="tk-key", title=f"{spec.doc} ({spec.unit})"),
                  html.Span(format_value(value, spec.fmt), id=ids.sim_key_value(side, key),
                            className="tk-value" + (" tk-value-changed" if changed else ""))], className="tk-head"),
        dcc.Slider(id=ids.sim_key(side, key), min=lo, max=hi, step=spec.step, value=value,
                   marks=spaced_marks(spec.marks(value), lo, hi),
                   allow_direct_input=False, updatemode="mouseup", included=False, className="tk-slider"),
        html.Div(meta, className="tk-meta"),
    ], className="tk-row sim-key-row" + (" tk-changed" if changed else ""), **{"data-key": key, "data-side": side})


def start_options(label: str | None) -> list[dict]:
    """The "start from" choice: a scenario file, or the snapshot the shell's source picker shows
    (:mod:`engine.simulator.from_snapshot`: its brokers, bundles and traffic, held steady)."""
    snap = f"the current snapshot ({label})" if label else "the current snapshot"
    return [{"label": "a scenario", "value": "scenario"}, {"label": snap, "value": "snapshot"}]


def side_controls(state: S.SimState, side: str) -> list:
    """The sliders of one side: its shedding strategy's few numeric keys at base + changed values."""
    sp = state.side(side)
    try:
        base = S.base_config(S.load(state.scenario), sp.preset)
    except Exception:  # noqa: BLE001 - an expired upload: show Pulsar's defaults, the callbacks say why
        from engine.config import LoadBalancerConfig

        base = LoadBalancerConfig()
    values = sp.value_dict
    rows = []
    for k in S.side_keys(sp.shed, sp.place):
        base_text = fmt_conf_value(getattr(base, k))
        rows.append(_key_row(side, k, values.get(k, base_text), base_text))
    if not rows:
        rows.append(html.P("This strategy reads no numeric keys.", className="muted small"))
    return rows


def side_panel(state: S.SimState, side: str) -> html.Section:
    """The card of run A or B: strategies, base config, key sliders, other keys."""
    sp = state.side(side)
    shown = S.side_keys(sp.shed, sp.place)
    return html.Section([
        html.Div([html.H3([html.Span(className="sim-dot", style={"background": RUN_COLORS[side]}),
                           f"Run {side.upper()}"]),
                  html.Span("strategies and broker.conf keys", className="card-sub")], className="card-head"),
        html.Label("Shedding", className="field-label"),
        dcc.Dropdown(id=ids.sim_side(ids.SIM_SHED, side), options=S.shedding_options(), value=sp.shed,
                     clearable=False, className="tuner-dd"),
        html.Label("Placement", className="field-label"),
        dcc.Dropdown(id=ids.sim_side(ids.SIM_PLACE, side), options=S.placement_options(sp.shed),
                     value=sp.place, clearable=False, className="tuner-dd"),
        html.Label("Base config (the scenario's keys apply on top)", className="field-label"),
        dcc.Dropdown(id=ids.sim_side(ids.SIM_PRESET, side), options=preset_options(), value=sp.preset,
                     clearable=False, className="tuner-dd"),
        html.Label("Pulsar release (one per side: an upgrade's A/B)", className="field-label"),
        dcc.Dropdown(id=ids.sim_side(ids.SIM_RELEASE, side), options=release_options("the scenario's release"),
                     value=check_release(dict(sp.values).get("pulsarVersion", "")), clearable=False,
                     className="tuner-dd"),
        html.Div(side_controls(state, side), id=ids.sim_side(ids.SIM_CONTROLS, side), className="sim-controls"),
        html.Label("Other keys (broker.conf lines)", className="field-label"),
        dcc.Textarea(id=ids.sim_side(ids.SIM_EXTRA, side), value=S.extra_text(sp, shown), className="sim-extra",
                     placeholder="maxUnloadPercentage=0.5\nloadBalancerSheddingGracePeriodMinutes=10", rows=2),
        html.Div(id=ids.sim_side(ids.SIM_EXTRA_NOTE, side), className="sim-extra-note"),
    ], className=f"card card-tight sim-side-card sim-side-{side}")


def minutes_placeholder(facts: dict | None) -> str:
    """The Minutes box when empty: the scenario's own length (short enough for the box)."""
    return f"{facts['minutes']} min" if facts else ""


# ------------------------------------------------------------------------------------------ results
def scenario_line(facts: dict | None) -> list:
    if not facts:
        return []
    return [html.Div(facts.get("title", ""), className="sim-scen-title"),
            html.Div(f"{facts['brokers']} brokers ({facts['started']} at start) · {facts['namespaces']} namespaces · "
                     f"{facts['workloads']} load jobs · {facts['events']} events · {facts['minutes']} minutes",
                     className="muted small"),
            html.Div(facts.get("description", ""), className="sim-scen-desc")]


def headline(payload: dict, meta: dict | None = None) -> list:
    """"bigo-homogeneous-start · 60 min · seed 0   A AvgShedder  vs  B ThresholdShedder + …"."""
    st = payload["state"]
    runs = payload["runs"]
    facts = payload.get("facts", {})
    mins = runs["a"].summary.get("minutes")
    parts = [html.Span(facts.get("name", st["scenario"]), className="pill"),
             html.Span(f"{mins} minutes · seed {st['seed']}", className="src-counts")]
    for s in ("a", "b"):
        r = runs[s]
        parts.append(html.Span([html.B(s.upper()), " ", r.label[4:]], className=f"sim-run-pill sim-run-{s}"))
    how = "from this session's cache" if (meta or {}).get("cached") else f"ran in {payload.get('elapsed_s', 0):.1f} s"
    parts.append(html.Span(how, className="src-counts"))
    return parts


def summary_table(rows: list, labels: dict) -> html.Table:
    """Summary rows (:func:`dashboard.simulator.summary_rows`) as a table, the better value marked."""
    head = html.Tr([html.Th("")] + [html.Th([html.Span(s.upper(), className=f"sim-tag sim-tag-{s}"), " ",
                                             labels[s]], className="num") for s in ("a", "b")])
    body = []
    for r in rows:
        cells = [html.Td(r["label"], className="sim-metric")]
        for s in ("a", "b"):
            best = r["best"] == s
            cells.append(html.Td([r["values"][s]] + ([html.Span(" ✓", className="sim-best-mark")] if best else []),
                                 className="num" + (" sim-best" if best else "")))
        body.append(html.Tr(cells, className="sim-row-strategy" if r["key"] in ("strategy", "placement") else None))
    return html.Table([html.Thead(head), html.Tbody(body)], className="data-table sim-summary-table")


def finding_table(finding, rows: list, note: str = "") -> list:
    """The article's figures beside the run's (:func:`dashboard.simulator.findings.figure_rows`)."""
    n_ok = sum(r["ok"] for r in rows)
    head = html.Tr([html.Th("run"), html.Th("figure"), html.Th("article", className="num"),
                    html.Th("this run", className="num"), html.Th("tolerance", className="num"), html.Th("")])
    body = [html.Tr([html.Td(html.Span(r["run"], className=f"sim-tag sim-tag-{r['run'].lower()}"), title=r["strategy"]),
                     html.Td(r["figure"]), html.Td(r["article"], className="num sim-fig-article"),
                     html.Td(r["value"], className="num sim-fig-value"), html.Td(r["tolerance"], className="num"),
                     html.Td("✓ within" if r["ok"] else "✗ outside", className="sim-fig-ok" if r["ok"] else "sim-fig-out")])
            for r in rows]
    return [html.Div([html.B(f"{finding.article} {finding.section}"), f" — {finding.title}. ",
                      f"{n_ok} of {len(rows)} figures within tolerance."], className="sim-finding-head"),
            *([html.Div(note, className="muted small")] if note else []),
            html.Table([html.Thead(head), html.Tbody(body)], className="data-table sim-finding-table")]


def event_table(rows: list, total: int) -> html.Div:
    if not rows:
        return html.Div("No events of these kinds.", className="empty-note")
    head = html.Tr([html.Th("run"), html.Th("min", className="num"), html.Th("kind"), html.Th("broker → destination"),
                    html.Th("bundle"), html.Th("reason")])
    body = []
    for r in rows:
        who = r["broker"] + (f" → {r['destination']}" if r["destination"] else "")
        reason = ([html.Code(r["code"], className=f"sim-code sim-code-{(r.get('label') or 'none').lower()}",
                             title=f"Pulsar's UnloadDecision: {r.get('label') or '?'} / {r['code']}"), " "]
                  if r.get("code") else []) + [r["reason"]]
        if r["placement"]:
            reason.append(html.Div(f"placement: {r['placement']}" + (" (random draw)" if r["random"] else "")
                                   + (" · destination above average" if r["bad"] else ""), className="cell-note"))
        body.append(html.Tr([html.Td(html.Span(r["run"], className=f"sim-tag sim-tag-{r['run'].lower()}")),
                             html.Td(str(r["minute"]), className="num"), html.Td(r["kind"], className="sim-kind"),
                             html.Td(who, className="mono"), html.Td(r["bundle"], className="mono"),
                             html.Td(reason, className="sim-reason")]))
    more = [html.Div(f"… {total - len(rows):,} more: narrow the kinds, or Export report for every event",
                     className="table-more")] if total > len(rows) else []
    return html.Div([html.Table([html.Thead(head), html.Tbody(body)], className="data-table")] + more,
                    className="table-wrap sim-events-wrap")


# ------------------------------------------------------------------------------------------ page
def _card(title, body, *, sub=None, cls="", card_id=None, hidden=False, actions=None):
    head = [html.H3(title)] + ([html.Span(sub, className="card-sub")] if sub else [])
    kw = {"id": card_id} if card_id else {}
    return html.Section([html.Div([html.Div(head, className="card-titles")] + ([actions] if actions else []),
                                  className="card-head"), body], className=f"card {cls}".strip(), hidden=hidden, **kw)


def _graph(gid, name, height, message="Running A and B: the results appear here"):
    return dcc.Graph(id=gid, figure=empty_figure(message, height=height), config=graph_config(name),
                     className="sim-graph")


def layout(**kwargs):
    """The Simulator page (``kwargs``: a permalink's query parameters)."""
    link, errors = S.decode(kwargs)
    init = link or S.default_state()
    link_data = {"state": link.to_json() if link else None, "errors": errors} if (link or errors) else None
    try:
        facts = S.scenario_facts(S.load(init.scenario))
    except Exception:  # noqa: BLE001 - an expired upload; the callbacks explain
        facts = None
    scen = _card("Scenario", html.Div([
        html.Label("Field findings: the article's two strategies on its scenario, in one click",
                   htmlFor=ids.SIM_FINDING, className="field-label"),
        dcc.Dropdown(id=ids.SIM_FINDING, options=finding_options(), value=None, clearable=True, searchable=True,
                     placeholder="Reproduce an article's figures…", className="tuner-dd sim-finding-dd",
                     optionHeight=44),
        html.Div([html.Span("Start from", className="field-label"),
                  dcc.RadioItems(id=ids.SIM_START, value="snapshot" if S.snapshot_source(init.scenario) else "scenario",
                                 inline=True, className="fmt-radio sim-start-radio", options=start_options(None))],
                 id=ids.SIM_START_BOX, hidden=not S.snapshot_source(init.scenario), className="sim-start"),
        dcc.Dropdown(id=ids.SIM_SCENARIO, options=S.scenario_options(None, init.scenario), value=init.scenario,
                     clearable=False, searchable=True, className="tuner-dd sim-scenario-dd", optionHeight=44),
        html.Div(scenario_line(facts), id=ids.SIM_SCENARIO_INFO, className="sim-scen-info"),
        html.Div([
            html.Div([html.Label(["Minutes ", html.Span("empty: the scenario's", className="field-hint")],
                                 htmlFor=ids.SIM_MINUTES, className="field-label"),
                      dcc.Input(id=ids.SIM_MINUTES, type="number", min=1, max=S.MAX_MINUTES, step=1,
                                value=init.minutes, debounce=True, className="text-input",
                                placeholder=minutes_placeholder(facts))]),
            html.Div([html.Label("Seed", htmlFor=ids.SIM_SEED, className="field-label"),
                      dcc.Input(id=ids.SIM_SEED, type="number", min=0, step=1, value=init.seed, debounce=True,
                                className="text-input")]),
        ], className="sim-inputs"),
        html.Div([html.Button("Run A and B", id=ids.SIM_RUN, className="btn btn-primary btn-large sim-run-btn"),
                  html.Button("Cancel", id=ids.SIM_CANCEL, className="btn btn-ghost", disabled=True)],
                 className="btn-row sim-run-row"),
        html.Div([html.Progress(id=ids.SIM_PROGRESS, value="0", max="1", className="sim-progress"),
                  html.Span(id=ids.SIM_PROGRESS_TEXT, className="muted small sim-progress-text")],
                 className="sim-progress-row"),
        html.Div(["Upload your own scenario with ", html.B("+ Add data"), " (YAML/JSON, format in ",
                  html.Code("docs/scenarios.md"), ")."], className="muted small sim-upload-hint"),
    ]), cls="card-tight sim-scenario-card")
    side = html.Aside([scen, side_panel(init, "a"), side_panel(init, "b")], className="sim-side")

    event_filters = html.Div([
        dcc.Dropdown(id=ids.SIM_EVENT_KINDS, options=[{"label": k, "value": k} for k in S.DEFAULT_KINDS],
                     value=list(S.DEFAULT_KINDS[:2]), multi=True, className="sim-kinds-dd",
                     placeholder="event kinds"),
        dcc.RadioItems(id=ids.SIM_EVENT_RUN, value="both", inline=True, className="fmt-radio sim-run-radio",
                       options=[{"label": "A and B", "value": "both"}, {"label": "A", "value": "a"},
                                {"label": "B", "value": "b"}]),
    ], className="sim-event-filters")
    x0, xv0, y0, yv0 = S.sweep_defaults(init.a.shed, init.a.place)
    sweep_opts = S.sweep_keys(init.a.shed, init.a.place)
    sweep = html.Div([
        html.Div([
            html.Div([html.Label("x key", className="field-label"),
                      dcc.Dropdown(id=ids.SIM_SWEEP_X, options=sweep_opts, value=x0, clearable=False,
                                   className="tuner-dd"),
                      dcc.Input(id=ids.SIM_SWEEP_X_VALUES, value=xv0, className="text-input", debounce=True)],
                     className="sim-sweep-axis"),
            html.Div([html.Label("y key", className="field-label"),
                      dcc.Dropdown(id=ids.SIM_SWEEP_Y, options=sweep_opts, value=y0, clearable=False,
                                   className="tuner-dd"),
                      dcc.Input(id=ids.SIM_SWEEP_Y_VALUES, value=yv0, className="text-input", debounce=True)],
                     className="sim-sweep-axis"),
            html.Div([html.Button("Run sweep", id=ids.SIM_SWEEP_RUN, className="btn btn-primary"),
                      html.Div(f"at most {S.MAX_AXIS} values per axis", className="muted small")],
                     className="sim-sweep-go"),
        ], className="sim-sweep-controls"),
        html.Div(id=ids.SIM_SWEEP_NOTE, className="muted small sim-sweep-note"),
        _graph(ids.SIM_SWEEP_FIG, "sweep", 400, "Run a sweep: one run of A's settings per cell"),
    ])
    main = html.Div([
        _card("The article's figures", html.Div(id=ids.SIM_FINDING_FIGURES), card_id=ids.SIM_FINDING_CARD,
              sub="each figure the article reports for this A/B, beside this run's value and the tolerance "
                  "(python -m engine findings; docs/findings.md)", cls="sim-finding-card", hidden=True),
        _card("Summary", html.Div(html.Div("Running A and B on the selected scenario…", className="empty-note"),
                                  id=ids.SIM_SUMMARY), sub="bold ✓: the better of the two where lower is better",
              cls="sim-summary-card"),
        _card("Per broker, A above B", html.Div([_graph(ids.SIM_FIG_A, "run-a-brokers", 360),
                                                 _graph(ids.SIM_FIG_B, "run-b-brokers", 360)],
                                                className="sim-stack"),
              sub="solid: real usage · dotted: the score the strategy saw · ▼ unload (hover: why) · ▲ destination · "
                  "zoom one figure and every time axis on the page follows"),
        _card("Cluster, A and B", _graph(ids.SIM_FIG_CLUSTER, "cluster", 560),
              sub="max/min ratios of msg rate (solid) and throughput (dashed), CPU range, unloads so far"),
        _card("TransferShedder: load std vs target", _graph(ids.SIM_FIG_STD, "transfershedder-std", 460),
              sub="the std of broker load it compares (its EMA of each broker's weighted max usage) against "
                  "loadBalancerBrokerLoadTargetStd, its hit count (bars) and, below, the decision code of every "
                  "check (hover: the reason)",
              card_id=ids.SIM_STD_CARD, hidden=not (S.runs_extensible(init.a.shed) or S.runs_extensible(init.b.shed))),
        _card("Event log", html.Div([event_filters, html.Div(id=ids.SIM_EVENTS)]),
              sub="every decision with the engine's reason"),
        _card("Parameter sweep on run A", sweep,
              sub="two keys × a few values each, on A's strategies and scenario · click a cell to load it into run A"),
        recommend_card("scenario", init.a.shed),
    ], className="sim-main")

    header = html.Div([
        html.Div([html.H1("Simulator")], className="page-titles page-titles-row"),
        page_actions(ids.SIM_PERMALINK, ids.SIM_PERMALINK_COPY, ids.SIM_EXPORT_FORMAT, ids.SIM_EXPORT_FIGS,
                     ids.SIM_REPORT, "one self-contained HTML file: figures, config diff, summary, event log"),
    ], className="page-header")

    return html.Div([
        dcc.Store(id=ids.sim_uploaded()),
        dcc.Store(id=ids.page_source("simulator")),
        dcc.Store(id=ids.SIM_START_SEEN, storage_type="session"),
        dcc.Store(id=ids.SIM_LINK, data=link_data),
        dcc.Store(id=ids.SIM_FORM, data=None),
        dcc.Store(id=ids.SIM_SAVED, storage_type="session"),
        dcc.Store(id=ids.SIM_SEEN, storage_type="session"),
        dcc.Store(id=ids.SIM_AUTORUN, data=None),
        dcc.Store(id=ids.SIM_RESULT, data=None),
        dcc.Store(id=ids.SIM_SWEEP_RESULT, data=None),
        dcc.Store(id=ids.SIM_QS, data=None),
        dcc.Store(id=ids.SIM_FMT, data=fmt_store()),
        dcc.Download(id=ids.SIM_DOWNLOAD),
        dcc.Download(id=ids.SIM_REPORT_DOWNLOAD),
        header,
        html.Div(id=ids.SIM_HEADLINE, className="src-line sim-headline"),
        html.Div(id=ids.SIM_ALERT),
        html.Div([side, main], className="sim-grid"),
    ], className="page page-simulator")

