"""Shell callbacks: the source picker (remembered per tab), uploads and the live-cluster form.

Each callback parses its inputs, calls one service of :mod:`dashboard.sources` /
:mod:`dashboard.collect` and returns small values; heavy data stays server-side. Problems become an
alert naming the file and what is wrong, and the previous source stays selected.
"""
from __future__ import annotations

import logging
import uuid

from dash import ALL, Input, Output, State, callback, clientside_callback, ClientsideFunction, ctx, html, no_update

from dashboard import ids, permalink, sources
from dashboard.collect import CollectError, collect_enabled, form_collector, redact
from dashboard.collect.web import OFF_MESSAGE
from dashboard.web_safety import as_dict, as_list, as_number, as_str
from engine.errors import InputError, ShedlabError

log = logging.getLogger(__name__)

__all__ = ["alert", "only", "choose_source", "on_source", "on_upload", "on_collect", "summary", "upload_outcome"]


def alert(kind: str, text: str) -> html.Div:
    """One dismissable alert (``kind``: error, warning, info, success)."""
    icon = {"error": "✖", "warning": "⚠", "info": "ℹ", "success": "✔"}.get(kind, "ℹ")
    return html.Div([html.Span(icon, className="alert-icon"), html.Span(text, className="alert-text"),
                     html.Button("×", className="alert-close", title="dismiss", **{"aria-label": "dismiss"})],
                    className=f"alert alert-{kind}", role="alert")


def only(outputs: dict, **values) -> dict:
    """A callback's named outputs (its ``output=`` dict) with ``values`` set and every other output left as
    the page shows it (``no_update``): an error path names what it changes, nothing shifts by position."""
    unknown = set(values) - set(outputs)
    if unknown:
        raise KeyError(f"not an output of this callback: {', '.join(sorted(unknown))}")
    return {name: values.get(name, no_update) for name in outputs}


def page_source(info) -> dict | None:
    """A page's source store (``SOURCE`` / ``page_source(page)`` data, written by :func:`on_source`) when it
    has that shape — ``id`` a short string, ``steps`` (if any) a positive int — else None. A request can
    carry any JSON there; callbacks check it with this first and treat anything else as "no source"."""
    info = as_dict(info)
    if info is None or not as_str(info.get("id"), limit=300):
        return None
    if as_number(info.get("steps", 1), lo=1, hi=10**9) is None or not isinstance(info.get("steps", 1), int):
        return None
    return info


def summary(info: dict | None) -> list:
    """The shell's line under the header: shown only when the picked source has warnings (the
    picker itself names the source; pages show its size)."""
    if not info or not info.get("warnings"):
        return []
    kind = {"sample": "Sample", "upload": "Upload", "live": "Live"}.get(info.get("kind"), "Source")
    out = [html.Span(kind, className=f"src-kind src-{info.get('kind', 'x')}"),
           html.Span(info.get("label", ""), className="src-label"),
           html.Span(f"{info.get('brokers', 0)} brokers · {info.get('bundles', 0)} bundles"
                     + (f" · timeline of {info['steps']} snapshots" if info.get("steps", 1) > 1 else ""),
                     className="src-counts")]
    if info.get("warnings"):
        out.append(html.Span(f"⚠ {len(info['warnings'])} warning(s)", className="src-warn",
                             title="\n".join(info["warnings"])))
    return out


def choose_source(trigger, picked, search, current, sid):
    """(source id, sample-config import or None, alerts) for a picker change, a URL, or page load."""
    alerts = []
    cur_id = current.get("id") if isinstance(current, dict) else None
    hist_key = _snapshot_param(search) if trigger != ids.SOURCE_PICKER else None
    if trigger == ids.SOURCE_PICKER and picked:
        want, why = picked, "picker"
    elif hist_key is not None:  # /tuner?snapshot=<key>: a minute the History page saved (dashboard.history.snapshot)
        try:
            info = sources.open_history(sid, hist_key)
            return info["id"], info, None, []
        except Exception as exc:  # noqa: BLE001 - unknown, expired or malformed: say so, keep the page usable
            if not isinstance(exc, ShedlabError):
                log.exception("history snapshot %r unreadable", hist_key[:80])
            keep = cur_id or sources.DEFAULT_SOURCE
            alerts.append(alert("error", f"Cannot open the History minute: {exc} — showing {keep}"))
            want, why = keep, "keep"
    else:
        link, _ = permalink.decode_query(search)
        if link is not None and link.src:
            want, why = link.src, "link"
        else:
            want, why = cur_id or sources.DEFAULT_SOURCE, "keep"
    try:
        info = sources.source_info(want)
    except Exception as exc:  # noqa: BLE001 - a bad link or an expired / unreadable upload
        if not isinstance(exc, ShedlabError):
            log.exception("source %s unreadable", want)
        alerts.append(alert("error", f"{exc} — keeping {cur_id or sources.DEFAULT_SOURCE}"))
        want = cur_id or sources.DEFAULT_SOURCE
        try:
            info = sources.source_info(want)
        except ShedlabError:
            want = sources.DEFAULT_SOURCE
            info = sources.source_info(want)
    imp = None
    if why == "picker" and want != cur_id:
        st = sources.sample_state(want)
        if st is not None:
            what = "the backtest's settings of" if info.get("kind") == "history" else "the settings of sample"
            if info.get("elm"):  # an Extensible Load Manager upload: TransferShedder + the ELM's placement
                what = "the Extensible Load Manager's strategies for"
            imp = {"values": st["values"], "mode": "replace", "label": f"{what} “{info['label']}”",
                   "nonce": uuid.uuid4().hex}
    for w in info.get("warnings", [])[:2] if why != "keep" else []:
        alerts.append(alert("warning", w))
    return want, info, imp, alerts


def _snapshot_param(search) -> str | None:
    """The ``snapshot`` query parameter (the History → Tuner hand-off), None without one."""
    if not isinstance(search, str) or "snapshot=" not in search:
        return None
    from urllib.parse import parse_qsl

    vals = [v for k, v in parse_qsl(search.lstrip("?"), keep_blank_values=True) if k == "snapshot"]
    return vals[-1] if vals else None


@callback(
    output={"info": Output(ids.SOURCE, "data"), "pick": Output(ids.SOURCE_PICKER, "value"),
            "options": Output(ids.SOURCE_PICKER, "options"), "summary": Output(ids.SOURCE_SUMMARY, "children"),
            "alerts": Output(ids.ALERT, "children"), "conf": Output(ids.CONF_IMPORT, "data")},
    inputs={"picked": Input(ids.SOURCE_PICKER, "value"), "search": Input(ids.URL, "search"),
            "current": State(ids.SOURCE, "data"), "sid": State(ids.SESSION, "data")},
)
def on_source(picked, search, current, sid):
    """Picking a source, opening a permalink with ``src=``, or loading a page (restore the tab's source)."""
    trigger = ctx.triggered_id
    picked, search, sid = as_str(picked, limit=300), as_str(search, ""), as_str(sid, limit=100)
    current = page_source(current)
    want, info, imp, alerts = choose_source(trigger, picked, search, current, sid)
    same = isinstance(current, dict) and current.get("id") == want and trigger is not None
    opts = sources.source_options(sid)
    if want not in {o["value"] for o in opts}:
        opts.append({"label": info.get("label", want), "value": want})
    return {"info": no_update if same else info, "pick": want, "options": opts, "summary": summary(info),
            "alerts": alerts or no_update, "conf": imp if imp is not None else no_update}


def upload_outcome(got: sources.Ingested) -> dict:
    """Alerts and store updates for what an upload produced (pure; unit-tested)."""
    alerts = [alert("error", e) for e in got.errors]
    out = {"alerts": alerts, "pick": None, "conf": None, "scenario": None, "close": False}
    for info in got.sources:
        what = f"timeline of {info['steps']} snapshots" if info.get("steps", 1) > 1 else "snapshot"
        alerts.append(alert("success", f"Loaded {info['label']}: {what}, {info['brokers']} brokers, "
                                       f"{info['bundles']} bundles"))
        for w in info.get("warnings", [])[:2]:
            alerts.append(alert("warning", w))
        out["pick"] = info["id"]
        out["close"] = True
    for sc in got.scenarios:
        what = (f"“{sc['title']}”, {sc['brokers']} brokers, {sc['minutes']} minutes" if sc.get("minutes")
                else f"{sc['bytes']:,} bytes")
        alerts.append(alert("info", f"Scenario {sc['label']} ({what}) saved for the Simulator"))
        out["scenario"] = {"id": sc["id"], "label": sc["label"]}
        out["close"] = True
    if got.conf:
        n = len(got.conf["values"])
        ign = got.conf.get("ignored", 0)
        alerts.append(alert("info", f"{got.conf['label']}: {n} load-balancer key(s) applied on the Tuner"
                                    + (f" ({ign} other keys ignored)" if ign else "")))
        out["conf"] = {"values": got.conf["values"], "mode": "merge", "label": got.conf["label"],
                       "nonce": uuid.uuid4().hex}
        out["close"] = True
    return out


_UPLOAD_OUTPUTS = {
    "pick": Output(ids.SOURCE_PICKER, "value", allow_duplicate=True),
    "options": Output(ids.SOURCE_PICKER, "options", allow_duplicate=True),
    "alerts": Output(ids.ALERT, "children", allow_duplicate=True),
    "conf": Output(ids.CONF_IMPORT, "data", allow_duplicate=True), "scenario": Output(ids.SCENARIO, "data"),
    "drawer": Output(ids.DRAWER_CLOSE, "data", allow_duplicate=True), "upload": Output(ids.UPLOAD, "contents"),
}


@callback(
    output=_UPLOAD_OUTPUTS,
    inputs={"contents": Input(ids.UPLOAD, "contents"), "names": State(ids.UPLOAD, "filename"),
            "sid": State(ids.SESSION, "data")},
    prevent_initial_call=True,
)
def on_upload(contents, names, sid):
    """Files dropped on the shell's upload zone."""
    if isinstance(contents, list):  # multiple=True: data URLs and file names, one each
        contents = [c if isinstance(c, str) else "" for c in contents[:1000]]
        names = [n if isinstance(n, str) and len(n) <= 1000 else None for n in as_list(names, [])[:1000]]
    else:
        contents, names = as_str(contents, limit=1 << 40), as_str(names, limit=1000)
    if not contents:
        return only(_UPLOAD_OUTPUTS, upload=None)
    sid = as_str(sid, limit=100)
    try:
        got = sources.ingest_files(sid, contents, names)
    except Exception as exc:  # never lose the page over an upload
        log.exception("upload failed")
        got = sources.Ingested(errors=[f"upload: unexpected error ({type(exc).__name__}); nothing changed"])
    o = upload_outcome(got)
    return {"pick": o["pick"] or no_update, "options": sources.source_options(sid) if o["pick"] else no_update,
            "alerts": o["alerts"], "conf": o["conf"] or no_update, "scenario": o["scenario"] or no_update,
            "drawer": _closed() if o["close"] else no_update, "upload": None}


_COLLECT_OUTPUTS = {
    "pick": Output(ids.SOURCE_PICKER, "value", allow_duplicate=True),
    "options": Output(ids.SOURCE_PICKER, "options", allow_duplicate=True),
    "alerts": Output(ids.ALERT, "children", allow_duplicate=True), "status": Output(ids.COLLECT_STATUS, "children"),
    "drawer": Output(ids.DRAWER_CLOSE, "data", allow_duplicate=True),
}


@callback(
    output=_COLLECT_OUTPUTS,
    inputs={"n": Input(ids.COLLECT_BUTTON, "n_clicks"), "url": State(ids.COLLECT_URL, "value"),
            "token": State(ids.COLLECT_TOKEN, "value"), "cluster": State(ids.COLLECT_CLUSTER, "value"),
            "sid": State(ids.SESSION, "data")},
    prevent_initial_call=True,
    running=[(Output(ids.COLLECT_BUTTON, "disabled"), True, False)],
)
def on_collect(n, url, token, cluster, sid):
    """The live-cluster form: one snapshot through the admin REST API, stored as a new source.

    Off unless the operator sets ``SHEDLAB_COLLECT=1``; then only towards ``SHEDLAB_COLLECT_ALLOW``
    (:mod:`dashboard.collect.web`). Errors say "not allowed" / "no answer" / an HTTP status, nothing more."""
    def refused(text, status=""):
        return only(_COLLECT_OUTPUTS, alerts=[alert("error", text)], status=status)

    if not n:
        return only(_COLLECT_OUTPUTS)
    if not collect_enabled():
        return refused(OFF_MESSAGE)
    if not url:
        return refused("live cluster: enter the admin URL (http://host:8080)")
    if len(str(url)) > 2048 or len(str(token or "")) > 16384 or len(str(cluster or "")) > 256:
        return refused("live cluster: input too long")
    try:
        with form_collector(url, token) as col:
            snap = col.snapshot(cluster or None)
            name = col.base.split("://", 1)[-1]
            requests = col.requests
        info = sources.store_load_data(sid, snap, label=f"{name} · {snap['shedlabCollected']['cluster']} · "
                                                        f"{snap['shedlabCollected']['at'][11:16]} UTC", kind="live")
    except (CollectError, InputError) as exc:
        msg = redact(exc)[:600]
        return refused(f"live cluster: {msg}", f"failed: {msg}")
    except Exception as exc:  # noqa: BLE001
        log.error("collector failed (%s)", type(exc).__name__)
        return refused(f"live cluster: failed ({type(exc).__name__})", "failed")
    status = f"{info['brokers']} brokers, {info['bundles']} bundles in {requests} requests"
    missing = snap.get("shedlabMissingBrokers") or {}
    alerts = [alert("success", f"Live snapshot {info['label']}: {status}")]
    if missing:
        status += f"; {len(missing)} missing: {', '.join(missing)}"
        alerts.append(alert("warning", f"live cluster: {len(missing)} broker(s) did not answer and are missing from "
                                       f"the snapshot: {', '.join(missing)}"))
    return {"pick": info["id"], "options": sources.source_options(sid), "alerts": alerts, "status": status,
            "drawer": _closed()}


def _closed() -> str:
    """The ``DRAWER_CLOSE`` value that closes the "+ Add data" panel (a new one each time data is added)."""
    return uuid.uuid4().hex


# pages see the shell's stores through their own mirrors (a callback mixing shell and page Inputs
# raises in the browser whenever the shell store changes while another page is shown)
for _store, _type in ((ids.SOURCE, ids.PAGE_SOURCE), (ids.CONF_IMPORT, ids.PAGE_IMPORT)):
    clientside_callback(
        "function(data, idlist) { return (idlist || []).map(function () { return data === undefined ? null : data; }); }",
        Output({"type": _type, "page": ALL}, "data"),
        Input(_store, "data"),
        Input({"type": _type, "page": ALL}, "id"),
    )

# data added: the "+ Add data" panel closes over the page that now shows it
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="closeDrawer"),
    Output(ids.SOURCE_DRAWER, "open"),
    Input(ids.DRAWER_CLOSE, "data"),
    State(ids.SOURCE_DRAWER, "id"),
    prevent_initial_call=True,
)

# the nav link of the current page is highlighted
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="navActive"),
    Output({"type": ids.NAV_LINK, "path": ALL}, "className"),
    Input(ids.URL, "pathname"),
    State({"type": ids.NAV_LINK, "path": ALL}, "id"),
)
