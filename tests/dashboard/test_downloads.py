"""The shared download helper: file dicts for dcc.Download, and failures said in an alert."""
import base64
import logging

from dash import no_update

from dashboard import downloads
from engine.errors import InputError


def _alert(kind, text):
    return (kind, text)


def test_downloads001_files_carry_name_type_and_content():
    t = downloads.text("a=1\n", "broker.conf")
    assert t == {"content": "a=1\n", "filename": "broker.conf", "type": "text/plain"}
    assert downloads.text("<p>", "r.html")["type"] == "text/html"
    d = downloads.data(b"\x00PK\xff", "figs.zip")
    assert d["base64"] is True and d["type"] == "application/zip"
    assert base64.b64decode(d["content"]) == b"\x00PK\xff"
    c = downloads.csv([{"broker": "b1", "n": 2}, {"broker": "b2", "n": 3}], "plan.csv")
    assert c["type"] == "text/csv" and c["content"].splitlines() == ["broker,n", "b1,2", "b2,3"]


def test_downloads002_respond_says_why_and_keeps_the_page(caplog):
    ok = downloads.respond(lambda: downloads.text("x", "x.txt"), "export", _alert)
    assert ok == ({"content": "x", "filename": "x.txt", "type": "text/plain"}, no_update)

    def bad_input():
        raise InputError("the upload expired")
    data, alerts = downloads.respond(bad_input, "report", _alert)
    assert data is no_update and alerts == [("warning", "report: the upload expired")]

    def broken():
        raise RuntimeError("no Chromium")
    with caplog.at_level(logging.ERROR):
        data, alerts = downloads.respond(broken, "figure export", _alert)
    assert data is no_update and alerts == [("error", "figure export failed: RuntimeError: no Chromium")]
    assert "figure export failed" in caplog.text
