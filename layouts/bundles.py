"""Bundles page: how a namespace's topics hash into its bundles, what a split would do, the vivo case."""
from __future__ import annotations

import json

from dash import dcc, html

from dashboard import ids
from dashboard import bundles as S
from dashboard.figures.bundles import occupancy_comparison
from dashboard.figures.theme import empty_figure, graph_config
from engine.bundles import RANGE_EQUALLY_DIVIDE, SPLIT_ALGORITHMS, format_bound

__all__ = ["layout", "alert", "headline", "metrics_table", "auto_split_panel", "split_table", "comparison_view",
           "source_info", "threshold_label", "LADDER_JS"]

_SOURCE_HELP = ("pulsar-admin topics list / topics list-partitioned-topics text, broker-stats topics JSON, "
                "or a LoadData snapshot JSON with bundleTopics")
#: ladders and units of the threshold sliders, for the clientside value labels
LADDER_JS = json.dumps({s["key"]: {"ladder": list(s["ladder"]), "unit": s["unit"]} for s in S.threshold_specs()})


def _field(label, control, *, htmlfor=None, help_text=None, cls=""):
    kids = [html.Label(label, htmlFor=htmlfor)] if label else []
    kids.append(control)
    if help_text:
        kids.append(html.Small(help_text, className="bundles-help"))
    return html.Div(kids, className=f"bundles-field {cls}".strip())


def threshold_label(spec: dict, index: int | None = None) -> str:
    """``= 1,000 topics``: the value a threshold slider stands on."""
    ladder = spec["ladder"]
    i = spec["index"] if index is None else index
    return f"= {ladder[i]:,} {spec['unit']}"


def _short(v: int) -> str:
    """``200000`` → ``200k`` (slider end marks)."""
    return f"{v // 1000:,}k" if v >= 10_000 and v % 1000 == 0 else f"{v:,}"


def _threshold_slider(spec: dict):
    n = len(spec["ladder"])
    marks = {0: _short(spec["ladder"][0]), n - 1: _short(spec["ladder"][-1])}
    return html.Div(
        [
            html.Div([html.Code(spec["key"], className="bundles-key"), " ",
                      html.Span(threshold_label(spec), id=ids.bundles_threshold_value(spec["key"]),
                                className="bundles-threshold-value")]),
            html.Small(f"{spec['unit']} · default {spec['default']:,} · {spec['doc']}", className="bundles-help"),
            dcc.Slider(id=ids.bundles_threshold(spec["key"]), min=0, max=n - 1, step=1, value=spec["index"],
                       marks=marks, allow_direct_input=False, updatemode="mouseup", included=False),
        ],
        className="bundles-threshold",
    )


def layout(**kwargs):
    specs = S.threshold_specs()
    plo, phi = S.PARTITIONS_RANGE
    blo, bhi = S.BUNDLES_RANGE
    mb = S.MAX_UPLOAD_BYTES / S.MB
    sidebar = html.Aside(
        [
            html.H3("Topics"),
            _field("Topic source", dcc.Dropdown(id=ids.BUNDLES_SOURCE, value=S.GEN, clearable=False,
                                                options=S.source_options()), htmlfor=ids.BUNDLES_SOURCE),
            html.Div(
                [dcc.Upload(id=ids.BUNDLES_UPLOAD, max_size=S.MAX_UPLOAD_BYTES, accept=".txt,.list,.out,.json,.log",
                            children=html.Div(["Drop a topic list or ", html.A("choose a file")]),
                            className="bundles-upload", className_reject="bundles-upload-reject"),
                 html.Small(f"At most {mb:g} MB: {_SOURCE_HELP}", className="bundles-limit")],
                className="bundles-field"),
            html.Div(
                [
                    _field("Topic", dcc.Input(id=ids.BUNDLES_GEN_TOPIC, value=S.DEFAULT_TOPIC, type="text",
                                              debounce=True, className="bundles-input"), htmlfor=ids.BUNDLES_GEN_TOPIC),
                    _field("in namespace", dcc.Input(id=ids.BUNDLES_GEN_NAMESPACE, value=S.DEFAULT_NAMESPACE,
                                                     type="text", debounce=True, className="bundles-input"),
                           htmlfor=ids.BUNDLES_GEN_NAMESPACE),
                    html.Div(
                        [_field("msg/s per partition", dcc.Input(id=ids.BUNDLES_GEN_RATE, type="number", min=0,
                                                                 placeholder="none", debounce=True,
                                                                 className="bundles-input"),
                                htmlfor=ids.BUNDLES_GEN_RATE),
                         _field("KB/s per partition", dcc.Input(id=ids.BUNDLES_GEN_THROUGHPUT, type="number", min=0,
                                                                placeholder="none", debounce=True,
                                                                className="bundles-input"),
                                htmlfor=ids.BUNDLES_GEN_THROUGHPUT)],
                        className="bundles-pair"),
                ],
                id=ids.BUNDLES_GEN, className="bundles-gen",
            ),
            html.Div(
                [
                    _field("Namespace", dcc.Dropdown(id=ids.BUNDLES_NAMESPACE, options=[], value=None,
                                                     clearable=False), htmlfor=ids.BUNDLES_NAMESPACE),
                    dcc.Checklist(id=ids.BUNDLES_OPTIONS, value=[S.OPT_INPUT_LAYOUT], className="bundles-check",
                                  options=[{"label": "use the bundles the input names (owners, long-term traffic)",
                                            "value": S.OPT_INPUT_LAYOUT},
                                           {"label": "expand names that are not partitions into K partitions "
                                                     "(list-partitioned-topics output)", "value": S.OPT_EXPAND}]),
                ],
                id=ids.BUNDLES_SOURCE_BOX, className="bundles-hidden",
            ),
            html.Div(
                [html.Label(["Partitions K ", html.Span(f"{S.VIVO_PARTITIONS[0]}", id=ids.BUNDLES_PARTITIONS_LABEL,
                                                        className="bundles-slider-value")],
                            htmlFor=ids.BUNDLES_PARTITIONS),
                 dcc.Slider(id=ids.BUNDLES_PARTITIONS, min=plo, max=phi, step=1, value=S.VIVO_PARTITIONS[0],
                            marks={30: "30", 120: "120", 256: "256", 512: "512"},
                            allow_direct_input=False, updatemode="mouseup", included=True)],
                className="bundles-field bundles-slider"),
            html.Div(
                [html.Label(["Bundles ", html.Span(f"{S.VIVO_BUNDLES}", id=ids.BUNDLES_BUNDLES_LABEL,
                                                   className="bundles-slider-value")],
                            htmlFor=ids.BUNDLES_BUNDLES),
                 html.Small("initial bundles of the namespace (defaultNumberOfNamespaceBundles or "
                            "namespaces create --bundles)", className="bundles-help"),
                 dcc.Slider(id=ids.BUNDLES_BUNDLES, min=blo, max=bhi, step=1, value=S.VIVO_BUNDLES,
                            marks={4: "4", 180: "180", 512: "512", 1024: "1024"},
                            allow_direct_input=False, updatemode="mouseup", included=True)],
                className="bundles-field bundles-slider"),
            html.Button("vivo: 30 vs 120 partitions on 180 bundles", id=ids.BUNDLES_VIVO, n_clicks=0,
                        className="bundles-button"),
            html.H3("Split keys"),
            _field("defaultNamespaceBundleSplitAlgorithm",
                   dcc.Dropdown(id=ids.BUNDLES_ALGORITHM, value=RANGE_EQUALLY_DIVIDE, clearable=False,
                                options=[{"label": a, "value": a} for a in SPLIT_ALGORITHMS]),
                   htmlfor=ids.BUNDLES_ALGORITHM, help_text="name · default range_equally_divide",
                   cls="bundles-keyfield"),
            dcc.Checklist(id=ids.BUNDLES_AUTO_ENABLED, value=["on"], className="bundles-check",
                          options=[{"label": "loadBalancerAutoBundleSplitEnabled (default true)", "value": "on"}]),
            html.Div([_threshold_slider(s) for s in specs], className="bundles-thresholds"),
        ],
        className="bundles-sidebar",
    )
    main = html.Div(
        [
            html.Div(id=ids.BUNDLES_ALERT),
            html.Div(id=ids.BUNDLES_SOURCE_INFO, className="bundles-source-info"),
            html.Div(id=ids.BUNDLES_MAXMEAN, className="bundles-headline"),
            html.Div(id=ids.BUNDLES_COMPARE),
            html.Div(dcc.Graph(id=ids.BUNDLES_LAYOUT_GRAPH, figure=empty_figure("Loading…"),
                               config=graph_config("bundles-layout")), className="bundles-card"),
            html.Div(
                [html.Div([html.H4("Distribution"), html.Div(id=ids.BUNDLES_METRICS)], className="bundles-card"),
                 html.Div([html.H4("Auto split (BundleSplitterTask)"), html.Div(id=ids.BUNDLES_AUTO)],
                          className="bundles-card")],
                className="bundles-two"),
            html.Div(
                [
                    html.H4("Split preview"),
                    html.Div(
                        [_field("Bundle", dcc.Dropdown(id=ids.BUNDLES_SPLIT_BUNDLE, options=[], value=None,
                                                       clearable=False), htmlfor=ids.BUNDLES_SPLIT_BUNDLE,
                                cls="bundles-grow"),
                         _field("specified_positions_divide positions",
                                dcc.Input(id=ids.BUNDLES_SPLIT_POSITIONS, type="text", debounce=True,
                                          placeholder="0x10000000, 0x20000000", className="bundles-input"),
                                htmlfor=ids.BUNDLES_SPLIT_POSITIONS),
                         dcc.Checklist(id=ids.BUNDLES_SPLIT_FORCE, value=[], className="bundles-check",
                                       options=[{"label": "force (split even with ≤ 1 topic)", "value": "force"}])],
                        className="bundles-row"),
                    dcc.Graph(id=ids.BUNDLES_SPLIT_GRAPH, figure=empty_figure("Pick a bundle"),
                              config=graph_config("bundles-split")),
                    html.Div(id=ids.BUNDLES_SPLIT_TABLE),
                ],
                className="bundles-card"),
        ],
        className="bundles-main",
    )
    return html.Div(
        [
            html.H2("Bundles"),
            html.P(["Load moves bundle by bundle, and a bundle is only as even as the topics hashed into it: "
                    "Pulsar puts each topic, and each partition separately, in the bundle holding the CRC-32 "
                    "of its full name. vivo saw one topic with 30 partitions on 180 bundles put 4 partitions "
                    "into two bundles (about 200 rebalances a day); 120 partitions flattened it."],
                   className="bundles-intro"),
            html.Div([sidebar, main], className="bundles-grid"),
        ],
        className="page bundles-page",
    )


# ------------------------------------------------------------------------------------------ views
def alert(message: str | None):
    """The alert shown for a bad input (``None``: nothing)."""
    if not message:
        return None
    return html.Div(message, role="alert", className="bundles-alert")


def _f(x, nd: int = 2) -> str:
    if x is None or x != x:
        return "n/a"
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.{nd}f}"


def _r(x) -> str:
    """A ratio, always with two decimals (max/mean, quantiles)."""
    return "n/a" if x is None or x != x else f"{x:,.2f}"


_VERDICT = {"unlucky": "unlucky: fuller than 95 % of random layouts",
            "lucky": "lucky: flatter than 95 % of random layouts",
            "typical": "typical for random hashing"}


def headline(summary: S.Summary, quantity: str = "topics"):
    """The big max/mean line: the layout's number and what random names would give."""
    d, e = summary.topics, summary.expected
    verdict = e.verdict
    return html.Div(
        [
            html.Span([html.Span("max/mean "), html.Strong(_r(d.max_over_mean))], className="bundles-ratio"),
            html.Span(f" {_f(d.max)} {quantity} in the fullest bundle, mean {_f(d.mean)}; "
                      f"random names give a median of {_r(e.p50)} (90 % within {_r(e.p05)}–{_r(e.p95)}, "
                      f"{e.model} model) → ",
                      className="bundles-ratio-text"),
            html.Span(_VERDICT.get(verdict, verdict), className=f"bundles-verdict bundles-{verdict}"),
        ]
    )


def metrics_table(summary: S.Summary):
    """max, mean, max/mean, Gini, empty bundles of each known quantity."""
    head = ["per bundle", "max", "mean", "max/mean", "Gini", "empty bundles"]
    rows = []
    for name, d in (("topics", summary.topics), ("msg/s", summary.msg_rate), ("bytes/s", summary.throughput)):
        if d is None:
            continue
        rows.append(html.Tr([html.Td(name), html.Td(_f(d.max)), html.Td(_f(d.mean)), html.Td(_r(d.max_over_mean)),
                             html.Td(_f(d.gini, 3)), html.Td(f"{d.empty:,} of {d.bundles:,}")]))
    e = summary.expected
    kids = [html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
                       className="bundles-table")]
    prob = (f"P(max ≤ {e.observed_max}) = {e.p_at_most_observed:.1%}" if e.verdict == "lucky"
            else f"P(max ≥ {e.observed_max}) = {e.p_at_least_observed:.1%}")
    kids.append(html.P(f"Random layouts of {e.topics:,} topics over {e.bundles:,} bundles ({e.trials:,} trials, "
                       f"seed {e.seed}, {e.model} model): max/mean median {_r(e.p50)}, 5–95 % "
                       f"{_r(e.p05)}–{_r(e.p95)}; {prob}.", className="bundles-note"))
    if summary.unassignable:
        kids.append(html.P(f"{summary.unassignable} topic(s) hash to exactly 0xffffffff: Pulsar's lookup fails "
                           "for them; they are left out.", className="bundles-warning"))
    return kids


def auto_split_panel(result, cfg, limit: int = 12):
    """How many bundles the auto-split check picks under the current keys, and why."""
    chosen = [d for d in result.decisions if d.label == "Split"]
    capped = [d for d in result.decisions if d.label != "Split" and d.hits]
    n = len(result.decisions)
    line = (f"{len(chosen)} of {n:,} bundles would split (topics > {cfg.loadBalancerNamespaceBundleMaxTopics:,}, "
            f"sessions > {cfg.loadBalancerNamespaceBundleMaxSessions:,}, msg/s > "
            f"{cfg.loadBalancerNamespaceBundleMaxMsgRate:,}, MB/s > "
            f"{cfg.loadBalancerNamespaceBundleMaxBandwidthMbytes:,}; at most "
            f"{cfg.loadBalancerNamespaceMaximumBundles:,} bundles per namespace).")
    kids = [html.P(line)]
    if not result.enabled:
        kids.append(html.P("loadBalancerAutoBundleSplitEnabled is false: nothing splits.", className="bundles-warning"))
    items = [html.Li([html.Span(d.label, className=f"bundles-label bundles-{d.label.lower()}"), " ",
                      html.Code(d.bundle.rsplit("/", 1)[-1]), f" ({d.topics:,} topics): {d.reason}"])
             for d in (chosen + capped)[:limit]]
    more = len(chosen) + len(capped) - limit
    if more > 0:
        items.append(html.Li(f"… {more} more"))
    if items:
        kids.append(html.Ul(items, className="bundles-list"))
    elif n:
        kids.append(html.P("No bundle exceeds a threshold (bundles with fewer than 2 topics never split).",
                           className="bundles-note"))
    return kids


def split_table(results):
    """One row per algorithm: result, boundaries, children, Pulsar's reason (or refusal)."""
    head = ["algorithm", "result", "boundaries", "children", "reason"]
    rows = []
    for r in results:
        rows.append(html.Tr([
            html.Td(html.Code(r.algorithm)),
            html.Td(html.Span(r.label, className=f"bundles-label bundles-{r.label.lower()}")),
            html.Td(", ".join(format_bound(b) for b in r.boundaries) or "—"),
            html.Td(html.Div([html.Div(f"{format_bound(lo)}_{format_bound(up)}") for lo, up in r.children])
                    if r.children else "—"),
            html.Td(r.reason, className="bundles-reason"),
        ]))
    return html.Table([html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(rows)],
                      className="bundles-table bundles-split-table")


def comparison_view(comp: S.Comparison):
    """The vivo comparison: each partition count's max/mean against random layouts, side by side."""
    cards = []
    for r in comp.rows:
        d, e = r.distribution, r.expected
        cards.append(html.Div(
            [
                html.Div(f"{r.partitions} partitions on {r.bundles} bundles", className="bundles-compare-title"),
                html.Div([html.Span("max/mean "), html.Strong(_r(d.max_over_mean))], className="bundles-ratio"),
                html.Div(f"max {_f(d.max)}, mean {_f(d.mean)}, Gini {_f(d.gini, 3)}, {d.empty} empty"),
                html.Div(f"random names: median {_r(e.p50)}, 90 % within {_r(e.p05)}–{_r(e.p95)}"),
                html.Div(_VERDICT.get(e.verdict, e.verdict), className=f"bundles-verdict bundles-{e.verdict}"),
            ],
            className="bundles-compare-card"))
    rep = comp.reported
    a, b = comp.rows[0], comp.rows[-1]
    summary = (f"{a.partitions} → {b.partitions} partitions: max/mean {_r(a.distribution.max_over_mean)} → "
               f"{_r(b.distribution.max_over_mean)} (× {comp.ratio_change:.2f}) for {comp.topic}. ")
    vivo = (f"vivo's own layout (two bundles with {rep.observed_max} of {rep.topics} partitions: max/mean "
            f"{_r(rep.observed_max_over_mean)}) happens in {rep.p_at_least_observed:.1%} of random layouts → "
            f"{_VERDICT.get(rep.verdict, rep.verdict)}.")
    return html.Div(
        [
            html.H4("vivo: the same topic with 30 and 120 partitions on 180 bundles (field findings §4)"),
            html.Div(cards, className="bundles-compare-cards"),
            html.P([summary, vivo], className="bundles-note"),
            dcc.Graph(figure=occupancy_comparison(comp.rows), config=graph_config("bundles-vivo")),
        ],
        className="bundles-card bundles-compare",
    )


def source_info(view: S.BundlesView, src_text: str | None = None):
    """What is shown (first line), the source and where its traffic comes from, then notes."""
    kids = [html.Div(view.label, className="bundles-source-label")]
    more = [t for t in (f"Source {src_text}" if src_text else "", view.traffic_note) if t]
    if more:
        kids.append(html.Div(" · ".join(more)))
    for n in view.notes:
        kids.append(html.Div(n, className="bundles-warning"))
    return kids
