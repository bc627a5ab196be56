"""History page, "Recommend a setting", as plain functions: the form runs a real study on the sample
(pandas engine, in-process), the result comes back as words, links, broker.conf lines and figures."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import plotly
import pytest
from dash.exceptions import PreventUpdate

from callbacks import recommend as cb
from dashboard import ids
from dashboard.history import recommend_page as R
from dashboard.history.dataset import sample_dataset
from tests.callbacks.conftest import run_with_trigger


def _j(x) -> str:
    return json.dumps(x, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture(scope="module")
def sample():
    return str(sample_dataset())


@pytest.fixture
def cache(sample, tmp_path, monkeypatch):
    """A fresh cache (so every study starts new), the sample's datasets directory kept."""
    from pathlib import Path

    monkeypatch.setenv("SHEDLAB_HISTORY_DIR", str(Path(sample).parent))
    monkeypatch.setenv("SHEDLAB_CACHE_DIR", str(tmp_path / "cache"))


def _form(sample, **kw):
    f = dict(_n=1, path=sample, start=None, end=None, strategy="AvgShedder",
             overrides="loadBalancerAvgShedderLowThreshold=5", bundles="auto",
             objective="min unloads_per_day; hot_unanswered(20) <= 60",
             keys=["loadBalancerAvgShedderLowThreshold"], trials=8, holdout=1)
    f.update(kw)
    return f


def test_recommend001_keys_follow_the_strategy():
    out = cb.strategy_keys("ThresholdShedder")
    assert out["value"][0] == "loadBalancerBrokerThresholdShedderPercentage"
    assert "loadBalancerBrokerThresholdShedderPercentage" in [o["value"] for o in out["options"]]
    assert "loadBalancerAvgShedderLowThreshold" not in [o["value"] for o in out["options"]]


def test_recommend002_bad_objective_is_an_alert_and_runs_nothing(sample, cache):
    seen = []
    out = cb.run_recommend(seen.append, **_form(sample, objective="min fewer_moves"))
    assert out["job"]["ok"] is False and "unknown measure 'fewer_moves'" in out["job"]["error"]
    assert seen == []  # nothing started
    shown = cb.show_recommend(out["job"])
    assert "unknown measure" in _j(shown["alert"])
    with pytest.raises(PreventUpdate):
        cb.show_recommend("not a dict")


def test_recommend003_study_then_words_links_conf_and_figures(sample, cache):
    seen = []
    out = cb.run_recommend(seen.append, **_form(sample))
    job = out["job"]
    assert job["ok"] is True and set(job) == {"ok", "key"}  # the browser gets a key, never a path
    assert seen[-1] == ("1", "1", "done") and any("trials" in s[2] for s in seen)
    shown = cb.show_recommend(job)
    text = _j(shown["explain"])
    assert "beats the current setting" in text and "unloads_per_day" in text
    conf = shown["conf"]
    assert conf.startswith("# Shedlab recommendation for AvgShedder") and "loadBalancerAvgShedderLowThreshold=" in conf
    new = conf.strip().splitlines()[-1].split("=", 1)[1]
    hrefs = [a["props"]["href"] for a in json.loads(_j(shown["actions"]))]
    tuner = parse_qs(urlparse(hrefs[0]).query)
    assert hrefs[0].startswith("/tuner?") and tuner["loadBalancerAvgShedderLowThreshold"] == [new]
    sim = parse_qs(urlparse(hrefs[1]).query)
    assert sim["a.loadBalancerAvgShedderLowThreshold"] == ["5.0"] and sim["b.loadBalancerAvgShedderLowThreshold"] == [new]
    names = [t.name for t in shown["pareto"].data]
    assert "current setting" in names and "recommended" in names
    assert shown["importance"].data  # one key: all of it
    got = run_with_trigger(lambda: cb.download_recommend(1, None, job), ids.RECOMMEND_CONF_EXPORT, prop="n_clicks")
    assert got["download"]["content"] == conf and got["download"]["filename"] == "broker.conf"
    rep = run_with_trigger(lambda: cb.download_recommend(None, 1, job), ids.RECOMMEND_REPORT, prop="n_clicks")
    assert rep["download"]["filename"].endswith(".html") and "recommended setting" in rep["download"]["content"]


def test_recommend004_forged_or_expired_key_is_a_message(cache):
    shown = cb.show_recommend({"ok": True, "key": "../../etc/passwd"})
    assert "no longer in the cache" in _j(shown["alert"])
    shown = cb.show_recommend({"ok": True, "key": "recommend:" + "0" * 32})
    assert "no longer in the cache" in _j(shown["alert"])


def test_recommend005_named_outputs_pass_the_request_checks():
    """The hardened app (dashboard.web_safety) takes a request for a callback with named (dict) outputs:
    the renderer sends them as a list, like several positional outputs."""
    from app import app

    body = {"output": f"..{ids.RECOMMEND_KEYS}.options...{ids.RECOMMEND_KEYS}.value..",
            "outputs": [{"id": ids.RECOMMEND_KEYS, "property": "options"}, {"id": ids.RECOMMEND_KEYS, "property": "value"}],
            "inputs": [{"id": ids.HISTORY_STRATEGY, "property": "value", "value": "ThresholdShedder"}],
            "changedPropIds": [f"{ids.HISTORY_STRATEGY}.value"], "state": []}
    r = app.server.test_client().post("/_dash-update-component", json=body)
    assert r.status_code == 200, r.data
    assert r.get_json()["response"][ids.RECOMMEND_KEYS]["value"] == R.key_options("ThresholdShedder")[1]
    body["outputs"] = body["outputs"][:1]  # a request that does not name every output is still refused
    assert app.server.test_client().post("/_dash-update-component", json=body).status_code == 400
