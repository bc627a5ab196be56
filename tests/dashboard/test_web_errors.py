"""Who is at fault, as the web app answers it: a malformed callback request is the client's (400), an
exception raised once the request's shape was checked is the server's (500, one line, logged).

A small Dash app with two callbacks, hardened by ``dashboard.web_safety.harden`` exactly as ``app.py``
hardens Shedlab's, driven through Flask's test client.
"""
from __future__ import annotations

import logging

import pytest
from dash import Dash, Input, Output, html

from dashboard.web_safety import harden

TRACE_MARKERS = ("Traceback", 'File "/', "ZeroDivisionError", "site-packages", "secret-detail")


@pytest.fixture(scope="module")
def client():
    app = Dash(__name__)
    app.layout = html.Div([html.Button(id="go"), html.Div(id="out"), html.Div(id="fine")])

    @app.callback(Output("out", "children"), Input("go", "n_clicks"))
    def broken(n):
        raise ZeroDivisionError(f"secret-detail {n}")  # a bug in a callback, after the request was checked

    @app.callback(Output("fine", "children"), Input("go", "n_clicks"))
    def fine(n):
        return f"clicked {n}"

    harden(app)
    c = app.server.test_client()
    c.get("/")
    return c


def _body(output: str, value=1) -> dict:
    return {"output": output, "outputs": {"id": output.split(".")[0], "property": "children"},
            "inputs": [{"id": "go", "property": "n_clicks", "value": value}], "changedPropIds": ["go.n_clicks"]}


def test_a_callback_that_raises_after_the_check_is_a_logged_500_without_traceback(client, caplog):
    with caplog.at_level(logging.INFO, logger="dashboard.web_safety"):
        r = client.post("/_dash-update-component", json=_body("out.children"))
    text = r.get_data(as_text=True)
    assert r.status_code == 500
    assert text.strip() == "internal error: the server could not handle this request"
    assert not any(m in text for m in TRACE_MARKERS)
    failed = [rec for rec in caplog.records if rec.getMessage().startswith("callback request failed")]
    assert len(failed) == 1 and failed[0].levelno == logging.ERROR
    assert "out.children" in failed[0].getMessage() and "ZeroDivisionError" in failed[0].getMessage()
    assert failed[0].exc_info and failed[0].exc_info[0] is ZeroDivisionError  # the traceback goes to the log
    # the same request to a callback that works is answered normally
    ok = client.post("/_dash-update-component", json=_body("fine.children", 3))
    assert ok.status_code == 200 and "clicked 3" in ok.get_data(as_text=True)


@pytest.mark.parametrize("body, problem", [
    ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    ('{"output": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    ("{not json", "must be a JSON object"),
    ('{"output": "nope.children", "outputs": {}, "inputs": []}', "unknown callback output"),
])
def test_malformed_callback_requests_stay_400(client, caplog, body, problem):
    with caplog.at_level(logging.INFO, logger="dashboard.web_safety"):
        r = client.post("/_dash-update-component", data=body, content_type="application/json")
    text = r.get_data(as_text=True)
    assert r.status_code == 400, text[:200]
    assert problem in text and not any(m in text for m in TRACE_MARKERS)
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
