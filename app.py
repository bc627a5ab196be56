"""Shedlab's Dash app: creates the app, registers the pages, ``server = app.server``.

``python app.py`` serves on 127.0.0.1:8050 (``HOST``/``PORT`` to change, ``DASH_DEBUG=true`` for
debug mode); it first starts itself again with glibc's allocator asked for transparent huge pages
(:mod:`dashboard.hugepages`; ``SHEDLAB_HUGE_PAGES=0`` to keep it as it is). ``gunicorn app:server`` works
too (every worker must share ``SHEDLAB_CACHE_DIR``; ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` in its
environment for the huge pages).

The shell (``app.layout``) holds what every page shares: navigation, the data-source picker with
its "Add data" panel (uploads, live cluster), the alerts, the per-tab stores and a progress strip
for background jobs. Pages come from ``layouts.PAGES`` (explicit registration, no folder scan);
their callbacks from the ``callbacks`` package.
"""
from __future__ import annotations

if __name__ == "__main__":  # first: the server starts again with glibc asked for huge pages (dashboard/hugepages.py)
    from dashboard.hugepages import reexec_with_huge_pages

    reexec_with_huge_pages()

import importlib
import os
import secrets

import dash
from dash import Dash, dcc, html

import layouts
from dashboard import ids
from dashboard.cache import UnsafeDirectory, background_manager
from dashboard.collect.web import OFF_MESSAGE as COLLECT_OFF_MESSAGE, collect_enabled
from dashboard.sources import MAX_UPLOAD_BYTES, source_options
from dashboard.web_safety import harden

try:
    _MANAGER = background_manager()  # creates the cache directory 0700; refuses one others may write
except UnsafeDirectory as _exc:
    raise SystemExit(f"shedlab: {_exc}") from None

app = Dash(
    __name__,
    use_pages=True,
    pages_folder="",
    background_callback_manager=_MANAGER,
    title="Shedlab",
    update_title=None,
    suppress_callback_exceptions=False,
    meta_tags=[{"name": "viewport", "content": "width=device-width, initial-scale=1"}],
)
server = app.server
harden(app)  # short 4xx for malformed requests, bounded logs, optional login (dashboard/web_safety.py)

for _order, (_name, _path, _title) in enumerate(layouts.PAGES):
    _mod = importlib.import_module(f"layouts.{_name}")
    dash.register_page(_name, path=_path, name=_title, title=f"Shedlab — {_title}", layout=_mod.layout, order=_order,
                       description=(_mod.__doc__ or "").strip().split("\n")[0])

import callbacks  # noqa: E402,F401  (registers every page's callbacks and the shell's)

_LOGO = html.Span([html.Span(className="logo-bar b1"), html.Span(className="logo-bar b2"),
                   html.Span(className="logo-bar b3")], className="logo", **{"aria-hidden": "true"})


def _drawer() -> html.Details:
    mb = MAX_UPLOAD_BYTES / 1048576
    upload = html.Div([
        html.H4("Upload"),
        dcc.Upload(
            html.Div([html.Div("Drop files here or click to choose", className="upload-main"),
                      html.Div("LoadData JSON · several load reports at once · zipped ZooKeeper /loadbalance dump · "
                               "timeline (JSON list, JSON lines or zip of snapshots) · Extensible Load Manager data "
                               "(pulsar-client consume output of its two load-data topics, key/value JSON lines, a "
                               "BrokerLoadData or TopBundlesLoadData JSON, or a zip of them) · the cluster's policy "
                               "files, dropped with a snapshot (namespace isolation policies, anti-affinity groups, "
                               "failure domains) · scenario (YAML/JSON) · broker.conf", className="upload-kinds")]),
            id=ids.UPLOAD, multiple=True, max_size=MAX_UPLOAD_BYTES, className="shell-upload",
            className_reject="shell-upload-reject", className_active="shell-upload-active"),
        html.Div(f"Max {mb:.0f} MB per file (checked again on the server; SHEDLAB_MAX_UPLOAD_MB raises it). Files "
                 "are read in memory and kept in this server's cache for your session.", className="upload-limit"),
    ], className="drawer-col")
    off = not collect_enabled()  # the form is off unless the operator sets SHEDLAB_COLLECT=1 (docs/security.md)
    live = html.Div([
        html.H4("Live cluster"),
        html.P("Asks the admin REST API for the active brokers, each broker's load report and its topics per bundle.",
               className="muted small"),
        html.P(COLLECT_OFF_MESSAGE, className="muted small collect-off") if off else None,
        dcc.Input(id=ids.COLLECT_URL, type="url", placeholder="admin URL, e.g. http://broker-1:8080",
                  className="text-input", debounce=False, disabled=off),
        html.Div([dcc.Input(id=ids.COLLECT_CLUSTER, placeholder="cluster (if several)", className="text-input",
                            disabled=off),
                  dcc.Input(id=ids.COLLECT_TOKEN, type="password", placeholder="token (not stored)",
                            className="text-input", autoComplete="off", disabled=off)], className="input-pair"),
        html.Button("Take snapshot", id=ids.COLLECT_BUTTON, className="btn btn-primary", disabled=off),
        html.Div(id=ids.COLLECT_STATUS, className="collect-status muted small"),
        html.Div(["For an incident timeline: ",
                  html.Code("python -m dashboard.collect --admin-url URL --every 60s --count 30 --out incident/"),
                  " then upload a zip of the folder."], className="muted small"),
    ], className="drawer-col")
    return html.Details([html.Summary("+ Add data", className="btn btn-ghost drawer-toggle"),
                         html.Div([upload, live], className="drawer-body")],
                        id=ids.SOURCE_DRAWER, className="shell-drawer", open=False)


def _shell():
    """The app-wide layout around ``dash.page_container`` (called on every page load)."""
    return html.Div([
        dcc.Location(id=ids.URL, refresh="callback-nav"),
        # a server-made, unguessable id per browser tab (the tab's stored value wins on reload); the server
        # checks its format (dashboard.sources.session_key) and scopes uploads to it
        dcc.Store(id=ids.SESSION, storage_type="session", data=secrets.token_hex(16)),
        dcc.Store(id=ids.SOURCE, storage_type="session"),
        dcc.Store(id=ids.CONFIG, storage_type="session"),
        dcc.Store(id=ids.CONF_IMPORT, storage_type="session"),
        dcc.Store(id=ids.SCENARIO, storage_type="session"),
        dcc.Store(id=ids.DRAWER_CLOSE),
        html.Header([
            dcc.Link([_LOGO, html.Span("Shedlab", className="brand-name")], href="/", className="brand"),
            html.Nav([dcc.Link(t, href=p, id=ids.nav_link(p), className="shell-nav-link")
                      for _n, p, t in layouts.PAGES], id=ids.NAV, className="shell-nav"),
            html.Div([
                html.Span("Data", className="source-label"),
                dcc.Dropdown(id=ids.SOURCE_PICKER, options=source_options(None), clearable=False,
                             searchable=True, className="source-picker", optionHeight=38),
                _drawer(),
            ], className="shell-source"),
        ], className="shell-header"),
        html.Div(id=ids.SOURCE_SUMMARY, className="shell-context"),
        html.Div([html.Span(id=ids.JOB_TEXT, className="job-text"),
                  html.Progress(id=ids.JOB_PROGRESS, value="0", max="1"),
                  html.Button("Cancel", id=ids.JOB_CANCEL, className="btn btn-ghost btn-small")],
                 id=ids.JOB_STRIP, className="shell-job", hidden=True),
        html.Div(id=ids.ALERT, className="shell-alerts", **{"aria-live": "polite"}),
        html.Main(dash.page_container, className="shell-main"),
    ], className="shell")


app.layout = _shell

if __name__ == "__main__":
    _host = os.getenv("HOST", "127.0.0.1")
    if _host not in ("127.0.0.1", "localhost", "::1") and not (os.getenv("SHEDLAB_BASIC_AUTH_FILE")
                                                             or os.getenv("SHEDLAB_TRUSTED_USER_HEADER")):
        print(f"shedlab: serving on {_host} without a login: anyone who reaches it can use it "
              "(see docs/security.md, 'Running it for a team')")
    app.run(
        host=_host,
        port=int(os.getenv("PORT", "8050")),
        debug=os.getenv("DASH_DEBUG", "false").lower() == "true",
    )
