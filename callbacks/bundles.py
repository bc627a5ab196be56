"""Bundles page callbacks (thin: parse the controls, call :mod:`dashboard.bundles`, draw)."""
from __future__ import annotations

from dash import ALL, MATCH, Input, Output, State, callback, clientside_callback, no_update

from callbacks.shell import only
from dashboard import bundles as S
from dashboard import ids
from dashboard.web_safety import as_str, str_list
from dashboard.figures.bundles import namespace_layout, split_preview
from engine.errors import InputError
from layouts.bundles import (LADDER_JS, alert, auto_split_panel, comparison_view, headline, metrics_table,
                             source_info, split_table)

__all__ = ["upload_topics", "vivo_compare", "source_changed", "slider_state", "show_layout", "show_split",
           "pick_bundle"]

def _page_controls(dep) -> dict:
    """The page's view and config controls, by name (``dep``: Input to follow them, State to read them)."""
    view = {"source": (ids.BUNDLES_SOURCE, "value"), "namespace": (ids.BUNDLES_NAMESPACE, "value"),
            "topic": (ids.BUNDLES_GEN_TOPIC, "value"), "gen_ns": (ids.BUNDLES_GEN_NAMESPACE, "value"),
            "rate": (ids.BUNDLES_GEN_RATE, "value"), "kbps": (ids.BUNDLES_GEN_THROUGHPUT, "value"),
            "partitions": (ids.BUNDLES_PARTITIONS, "value"), "bundles": (ids.BUNDLES_BUNDLES, "value"),
            "options": (ids.BUNDLES_OPTIONS, "value")}
    config = {"algorithm": dep(ids.BUNDLES_ALGORITHM, "value"), "auto_enabled": dep(ids.BUNDLES_AUTO_ENABLED, "value"),
              "th_values": dep(ids.bundles_threshold(ALL), "value"), "th_ids": State(ids.bundles_threshold(ALL), "id")}
    return {"view": {name: dep(i, p) for name, (i, p) in view.items()}, "config": config}


def _view_kw(source, namespace, topic, gen_ns, rate, kbps, partitions, bundles, options) -> tuple[str, dict]:
    """The source id and :func:`dashboard.bundles.build_view` keywords of the controls."""
    # a request may carry any JSON: names are short strings (else missing), the options the list's strings
    source, namespace, topic, gen_ns = (as_str(v, limit=1000) for v in (source, namespace, topic, gen_ns))
    options = str_list(options, limit=100)
    return source or S.GEN, {"namespace": namespace, "topic": topic, "gen_namespace": gen_ns,
                             "partitions": partitions, "bundles": bundles, "options": options or (), "rate": rate,
                             "kbps": kbps}


def _config_kw(algorithm, auto_enabled, th_values, th_ids) -> dict:
    """:func:`dashboard.bundles.config_from_inputs` keywords of the threshold sliders and switches."""
    th_ids, th_values = (v if isinstance(v, list) else [] for v in (th_ids, th_values))
    values = {i["key"]: v for i, v in zip(th_ids, th_values) if isinstance(i, dict) and isinstance(i.get("key"), str)}
    return {"values": values, "algorithm": as_str(algorithm, limit=100),
            "auto_enabled": "on" in str_list(auto_enabled, limit=100)}


@callback(
    Output(ids.BUNDLES_SOURCE, "options"),
    Output(ids.BUNDLES_SOURCE, "value", allow_duplicate=True),
    Output(ids.BUNDLES_ALERT, "children", allow_duplicate=True),
    Output(ids.BUNDLES_UPLOAD, "contents"),
    Input(ids.BUNDLES_UPLOAD, "contents"),
    State(ids.BUNDLES_UPLOAD, "filename"),
    State(ids.BUNDLES_SOURCE, "options"),
    prevent_initial_call=True,
)
def upload_topics(contents, filename, options):
    """A file dropped: parse it and select it; a bad file shows an alert and keeps the current source."""
    if not contents:
        return no_update, no_update, no_update, no_update
    try:
        source_id, label = S.ingest_upload(contents, filename)
    except InputError as exc:
        return no_update, no_update, alert(f"Not loaded: {exc}"), None
    uploads = [o for o in (options or []) if str(o.get("value", "")).startswith("upload:") and o["value"] != source_id]
    uploads.append({"label": f"Uploaded: {label}", "value": source_id})
    return S.source_options(uploads), source_id, None, None


@callback(
    Output(ids.BUNDLES_PARTITIONS, "value"),
    Output(ids.BUNDLES_BUNDLES, "value"),
    Output(ids.BUNDLES_SOURCE, "value", allow_duplicate=True),
    Output(ids.BUNDLES_COMPARE, "children"),
    Output(ids.BUNDLES_ALERT, "children", allow_duplicate=True),
    Input(ids.BUNDLES_VIVO, "n_clicks"),
    State(ids.BUNDLES_GEN_TOPIC, "value"),
    State(ids.BUNDLES_GEN_NAMESPACE, "value"),
    prevent_initial_call=True,
)
def vivo_compare(_n, topic, namespace):
    """The vivo button: 30 partitions on 180 bundles, and 30 vs 120 side by side."""
    try:
        comp = S.vivo_comparison(str(topic or S.DEFAULT_TOPIC), str(namespace or S.DEFAULT_NAMESPACE))
    except InputError as exc:
        return no_update, no_update, no_update, no_update, alert(f"Cannot compare: {exc}")
    return S.VIVO_PARTITIONS[0], S.VIVO_BUNDLES, S.GEN, comparison_view(comp), no_update


@callback(
    Output(ids.BUNDLES_GEN, "className"),
    Output(ids.BUNDLES_SOURCE_BOX, "className"),
    Output(ids.BUNDLES_NAMESPACE, "options"),
    Output(ids.BUNDLES_NAMESPACE, "value"),
    Input(ids.BUNDLES_SOURCE, "value"),
    State(ids.BUNDLES_NAMESPACE, "value"),
)
def source_changed(source, namespace):
    """Source picked: show the generated fields or the namespace picker of a file/sample."""
    if not source or source == S.GEN:
        return "bundles-gen", "bundles-hidden", [], None
    try:
        nss = S.namespaces_of(source)
    except InputError:
        nss = []  # show_layout reports the problem
    value = namespace if namespace in nss else (nss[0] if nss else None)
    return "bundles-hidden", "bundles-source-box", [{"label": n, "value": n} for n in nss], value


@callback(
    Output(ids.BUNDLES_PARTITIONS, "disabled"),
    Output(ids.BUNDLES_BUNDLES, "disabled"),
    Input(ids.BUNDLES_SOURCE, "value"),
    Input(ids.BUNDLES_NAMESPACE, "value"),
    Input(ids.BUNDLES_OPTIONS, "value"),
)
def slider_state(source, namespace, options):
    """Grey out a slider the current source ignores (bundles named by a snapshot, fixed topic lists)."""
    source, namespace = as_str(source, limit=300), as_str(namespace, limit=1000)  # a request may carry any JSON
    return S.slider_state(source, namespace, str_list(options, limit=100))


_LAYOUT_OUTPUTS = {
    "figure": Output(ids.BUNDLES_LAYOUT_GRAPH, "figure"), "headline": Output(ids.BUNDLES_MAXMEAN, "children"),
    "metrics": Output(ids.BUNDLES_METRICS, "children"), "auto": Output(ids.BUNDLES_AUTO, "children"),
    "info": Output(ids.BUNDLES_SOURCE_INFO, "children"), "split_options": Output(ids.BUNDLES_SPLIT_BUNDLE, "options"),
    "split_bundle": Output(ids.BUNDLES_SPLIT_BUNDLE, "value"), "alert": Output(ids.BUNDLES_ALERT, "children"),
}


@callback(output=_LAYOUT_OUTPUTS,
          inputs=dict(_page_controls(Input), split_bundle=State(ids.BUNDLES_SPLIT_BUNDLE, "value")))
def show_layout(view, config, split_bundle):
    """Any control moved: the layout, its metrics, the auto-split picks; keep the previewed bundle."""
    try:
        src, view_kw = _view_kw(**view)
        a = S.analyse_layout(src, view_kw, _config_kw(**config), split_bundle)
    except InputError as exc:
        return only(_LAYOUT_OUTPUTS, alert=alert(f"Cannot show the layout: {exc}"))
    v, cfg = a.view, a.config
    fig = namespace_layout(
        v.layout.counts, a.ranges, owners=v.owners, msg_rate=v.msg_rate, status=a.status, reasons=a.reasons,
        quantity=a.quantity, rate_limit=cfg.loadBalancerNamespaceBundleMaxMsgRate,
        topic_limit=cfg.loadBalancerNamespaceBundleMaxTopics, title=v.label)
    return {"figure": fig, "headline": headline(a.summary, a.quantity), "metrics": metrics_table(a.summary),
            "auto": auto_split_panel(a.auto, cfg), "info": source_info(v, a.source_text),
            "split_options": a.bundle_options, "split_bundle": a.split_bundle, "alert": None}


@callback(
    output={"figure": Output(ids.BUNDLES_SPLIT_GRAPH, "figure"), "table": Output(ids.BUNDLES_SPLIT_TABLE, "children")},
    inputs=dict(_page_controls(State), bundle=Input(ids.BUNDLES_SPLIT_BUNDLE, "value"),
                options=Input(ids.BUNDLES_SPLIT_BUNDLE, "options"),
                positions=Input(ids.BUNDLES_SPLIT_POSITIONS, "value"), force=Input(ids.BUNDLES_SPLIT_FORCE, "value")),
    prevent_initial_call=True,
)
def show_split(bundle, positions, force, view, config, options=None):
    """Bundle picked (or the layout changed): split it with each algorithm, show the boundaries."""
    try:
        src, view_kw = _view_kw(**view)
        sp = S.analyse_split(src, view_kw, _config_kw(**config), bundle, positions,
                             "force" in str_list(force, limit=100))
    except InputError as exc:
        return {"figure": no_update, "table": alert(f"Cannot preview the split: {exc}")}
    return {"figure": split_preview(sp.lower, sp.upper, sp.hashes, sp.results), "table": split_table(sp.results)}


@callback(
    Output(ids.BUNDLES_SPLIT_BUNDLE, "value", allow_duplicate=True),
    Input(ids.BUNDLES_LAYOUT_GRAPH, "clickData"),
    prevent_initial_call=True,
)
def pick_bundle(click):
    """A bar clicked: preview that bundle's split."""
    try:
        x = click["points"][0]["x"]
        i = int(x)
    except (TypeError, KeyError, IndexError, ValueError):
        return no_update
    return i if i >= 0 else no_update


# slider labels follow the handle while it is dragged (no server round trip)
clientside_callback(
    "function(d, v){ var x = (d === undefined || d === null) ? v : d; return String(x); }",
    Output(ids.BUNDLES_PARTITIONS_LABEL, "children"),
    Input(ids.BUNDLES_PARTITIONS, "drag_value"),
    Input(ids.BUNDLES_PARTITIONS, "value"),
)
clientside_callback(
    "function(d, v){ var x = (d === undefined || d === null) ? v : d; return String(x); }",
    Output(ids.BUNDLES_BUNDLES_LABEL, "children"),
    Input(ids.BUNDLES_BUNDLES, "drag_value"),
    Input(ids.BUNDLES_BUNDLES, "value"),
)
clientside_callback(
    "function(d, v, id){ var L = " + LADDER_JS + "; var s = L[id.key];"
    " var i = (d === undefined || d === null) ? v : d; var x = s.ladder[i];"
    " if (x === undefined) { return window.dash_clientside.no_update; }"
    " return '= ' + x.toLocaleString('en-US') + ' ' + s.unit; }",
    Output(ids.bundles_threshold_value(MATCH), "children"),
    Input(ids.bundles_threshold(MATCH), "drag_value"),
    Input(ids.bundles_threshold(MATCH), "value"),
    State(ids.bundles_threshold(MATCH), "id"),
)
