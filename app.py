"""Shedlab's Dash app: creates the app, registers the pages, ``server = app.server``.

``python app.py`` serves on 127.0.0.1:8050 (``HOST``/``PORT`` to change, ``DASH_DEBUG=true`` for
debug mode). ``gunicorn app:server`` works too.
"""
from __future__ import annotations

import importlib
import os

import dash
from dash import Dash, dcc, html

import layouts
from dashboard import ids
from dashboard.cache import background_manager

app = Dash(
    __name__,
    use_pages=True,
    pages_folder="",
    background_callback_manager=background_manager(),
    title="Shedlab",
    update_title=None,
    suppress_callback_exceptions=False,
)
server = app.server

for _name, _path, _title in layouts.PAGES:
    _mod = importlib.import_module(f"layouts.{_name}")
    dash.register_page(_name, path=_path, name=_title, title=f"Shedlab — {_title}", layout=_mod.layout)

import callbacks  # noqa: E402,F401  (registers every page's callbacks)


def _shell():
    return html.Div(
        [
            dcc.Location(id=ids.URL, refresh="callback-nav"),
            dcc.Store(id=ids.SESSION, storage_type="session"),
            dcc.Store(id=ids.SOURCE, storage_type="session"),
            html.Nav(
                [html.Span("Shedlab", className="brand")]
                + [dcc.Link(t, href=p, className="nav-link") for _n, p, t in layouts.PAGES],
                id=ids.NAV,
                className="nav",
            ),
            html.Div(id=ids.ALERT),
            html.Main(dash.page_container, className="main"),
        ]
    )


app.layout = _shell

if __name__ == "__main__":
    app.run(
        host=os.getenv("HOST", "127.0.0.1"),
        port=int(os.getenv("PORT", "8050")),
        debug=os.getenv("DASH_DEBUG", "false").lower() == "true",
    )
