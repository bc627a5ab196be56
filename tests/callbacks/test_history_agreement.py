"""The History page's predicted-vs-actual card: its callbacks as plain functions (no browser)."""
from __future__ import annotations

import base64
import json

import plotly

from callbacks import history as cb
from engine.io import save_snapshot
from tests.dashboard.test_history_agreement import CONF, _export
from tests.engine.test_agreement import MOVED, SMALL, START, _snap
from tests.engine.test_agreement import CONF as OVERLOAD_CONF


def _url(text: str) -> str:
    return "data:text/plain;base64," + base64.b64encode(text.encode()).decode()


def _form(path, start, end, conf, conf_name, timeline, timeline_name) -> dict:
    return {"path": path, "start": start, "end": end, "conf": conf, "conf_name": conf_name, "timeline": timeline,
            "timeline_name": timeline_name}


def _show_agreement(*form):
    return cb.show_agreement(1, _form(*form))


def _agreement_report(*form):
    return cb.agreement_report(1, _form(*form))


def _j(x) -> str:
    return json.dumps(x, cls=plotly.utils.PlotlyJSONEncoder)


def test_hagreecb001_range_with_counters_and_uploaded_conf(tmp_path, monkeypatch):
    monkeypatch.setenv("SHEDLAB_HISTORY_DIR", str(tmp_path))  # the page names datasets under the history roots
    ds = _export(tmp_path).name
    fig, summary, table = _show_agreement(ds, "2026-01-05", "2026-01-05", _url(CONF), "broker.conf", None, None)
    assert fig.layout.meta["rev"] == "history-agreement" and fig.layout.meta["agreement"] == 1.0
    assert "agreement 100 %" in _j(summary) and "ThresholdShedder" in _j(summary)
    assert "the same number of unloads" in _j(table)
    dl = _agreement_report(ds, "2026-01-05", "2026-01-05", _url(CONF), "broker.conf", None, None)
    assert dl["filename"].endswith(".html") and "id='predicted-vs-actual'" in dl["content"]
    assert "loadBalancerHistoryResourcePercentage=0" in dl["content"]
    # a bad broker.conf is an alert in the page, not a crash
    _fig, alert, _t = _show_agreement(ds, None, None, _url("loadBalancerSheddingIntervalMinutes=soon"),
                                        "mine.conf", None, None)
    assert "mine.conf" in _j(alert) and "alert" in _j(alert)


def test_hagreecb002_uploaded_timeline_shows_the_disagreement(tmp_path):
    other = {**START, SMALL: "c:8080"}
    snaps = [_snap(0, 95, START), _snap(1, 92, other), _snap(2, 92, other)]
    lines = []
    for i, s in enumerate(snaps):
        save_snapshot(s, tmp_path / f"{i}.json")
        lines.append(json.dumps(json.loads((tmp_path / f"{i}.json").read_text())))
    tl = _url("\n".join(lines))
    fig, summary, table = _show_agreement(None, None, None, _url(OVERLOAD_CONF), "broker.conf", tl, "night.jsonl")
    text = _j(table)
    assert "predicted only" in text and "observed only" in text and SMALL in text
    assert "agreement 0 %" in _j(summary) and "OverloadShedder" in _j(summary)
    # a:8080 shed on both sides (another bundle than predicted): the broker row agrees, the bundle table does not
    assert "both" in {t.name for t in fig.data} and list(fig.data[0].y) == [1] and list(fig.data[1].y) == [1]
    assert cb.agreement_files("broker.conf", "night.jsonl").endswith("timeline night.jsonl")
    # the same timeline with the move the engine predicts agrees fully
    good = [_snap(0, 95, START), _snap(1, 50, MOVED), _snap(2, 50, MOVED)]
    tl = _url("\n".join(json.dumps(json.loads(_save(tmp_path, i, s))) for i, s in enumerate(good)))
    fig, summary, _ = _show_agreement(None, None, None, _url(OVERLOAD_CONF), "broker.conf", tl, "ok.jsonl")
    assert fig.layout.meta["agreement"] == 1.0


def _save(tmp_path, i, s) -> str:
    f = tmp_path / f"g{i}.json"
    save_snapshot(s, f)
    return f.read_text()
