"""History page callbacks as plain functions (no browser, no Spark: jobs run with the pandas engine)."""
from __future__ import annotations

import functools
import json

import pytest
from dash import no_update
from dash.exceptions import PreventUpdate

from callbacks import history as cb
from dashboard import ids
from dashboard.history import service as S
from dashboard.history.dataset import sample_dataset
from tests.callbacks.conftest import run_with_trigger


def _j(x) -> str:
    """Any component tree (or list of them) as JSON text, to look for words in it."""
    import plotly

    return json.dumps(x, cls=plotly.utils.PlotlyJSONEncoder)


@pytest.fixture(scope="module")
def sample():
    return str(sample_dataset())


@pytest.fixture
def pandas_jobs(monkeypatch):
    """Background jobs run the real runner with the pandas engine (Spark is covered by the spark tests)."""
    from dashboard.history.jobs import run_job

    def run_page_job(job, path, params, progress=None):
        res = run_job(job, path, params, engine="pandas", progress=progress)
        return {"job": job, "dataset": str(path), "params": params, "ok": True, "error": None,
                "meta": {"engine": res["_meta"]["engine"]}}

    monkeypatch.setattr(S, "run_page_job", run_page_job)


def _weights(cpu, direct_memory, bw_in, bw_out) -> dict:
    """The weight controls as the page sends them: their ids (broker.conf keys) and values."""
    keys = S.WEIGHT_KEYS
    return {"ids": [ids.history_weight(k) for k in keys], "values": [cpu, direct_memory, bw_in, bw_out]}


def _aggregates(path, start, end, resolution, weights):
    return cb.show_aggregates(path=path, start=start, end=end, resolution=resolution, weights=weights, job=None)


def test_history001_dataset_changed_bounds_the_range(sample):
    lo, hi, start, end, month, info = cb.dataset_changed(sample)
    assert (lo, hi, start, end, month) == ("2026-01-05", "2026-01-06", "2026-01-05", "2026-01-06", "2026-01-05")
    text = _j(info)
    assert "metric rows" in text and "10 brokers" in text and "broker loss" in text
    out = cb.dataset_changed("/nonexistent/dataset")  # names only: a path outside the roots is unknown
    assert "unknown dataset" in _j(out[-1])
    assert cb.dataset_changed(None)[0] is None


@pytest.mark.parametrize("resolution,n_traces", [("minute", 5), ("hour", 8), ("day", 8)])
def test_history002_aggregates_figure_per_resolution(sample, resolution, n_traces):
    fig, hot, note = _aggregates(sample, "2026-01-05", "2026-01-06", resolution, _weights(1, 0, 1, 1)).values()
    assert len(fig.data) == n_traces and fig.layout.meta["resolution"] == resolution
    n = {"minute": 2880, "hour": 48, "day": 2}[resolution]
    assert len(fig.data[0].x) == n
    assert hot.layout.meta["rev"] == "history-hottest" and len(hot.data[0].y) == 10
    assert "pandas" in note or "cached" in note
    # opening it again comes from the cache
    note2 = _aggregates(sample, "2026-01-05", "2026-01-06", resolution, _weights(1, 0, 1, 1))["note"]
    assert note2.startswith("cached result")


def test_history003_aggregates_range_weights_and_errors(sample):
    fig = _aggregates(sample, "2026-01-06", "2026-01-06", "minute", _weights(1, 1, 1, 1))["aggregates"]
    assert len(fig.data[0].x) == 1440
    out = _aggregates(sample, "2026-01-05", "2026-01-06", "hour", _weights(1, -1, 1, 1))
    assert out["aggregates"] is no_update
    assert "loadBalancerDirectMemoryResourceWeight: a weight is a non-negative number, got -1" in _j(out["note"])
    # a control left empty is at Pulsar's default: the same aggregates as the defaults
    same = _aggregates(sample, "2026-01-06", "2026-01-06", "minute", _weights(1, None, "", 1))["aggregates"]
    default = _aggregates(sample, "2026-01-06", "2026-01-06", "minute", _weights(1, 0, 1, 1))["aggregates"]
    assert json.loads(same.to_json())["data"] == json.loads(default.to_json())["data"]
    with pytest.raises(PreventUpdate):
        _aggregates(sample, None, None, "hour", _weights(1, 0, 1, 1))


def test_history004_strategy_changed_offers_its_keys():
    opts, xk, xv, opts2, yk, yv = cb.strategy_changed("ThresholdShedder")
    assert xk == "loadBalancerBrokerThresholdShedderPercentage" and opts == opts2 and xv and yv and xk != yk
    assert cb.strategy_changed(None)[1] == "loadBalancerAvgShedderLowThreshold"


def _run(trigger, sample, **kw):
    args = dict(path=sample, start="2026-01-05", end="2026-01-06", weights=_weights(1, 0, 1, 1), strategy="AvgShedder",
                overrides="", bundles="auto", x_key="loadBalancerAvgShedderLowThreshold", x_values="10, 20",
                y_key="loadBalancerAvgShedderHitCountLowThreshold", y_values="4, 8")
    args.update(kw)
    seen = []
    out = run_with_trigger(functools.partial(cb.run_history_job, **args), trigger, seen.append, prop="n_clicks")
    return out, seen


def test_history005_backtest_job_then_show_and_open_in_tuner(sample, pandas_jobs):
    out, seen = _run(ids.HISTORY_RUN_BACKTEST, sample, overrides="loadBalancerAvgShedderHitCountLowThreshold=4")
    assert out["ok"] and out["job"] == "backtest" and seen[0][2].startswith("backtest") and seen[-1][2] == "done"
    fig, pairs, sweep, note = cb.show_job(out)
    assert fig.layout.meta["rev"] == "history-backtest" and fig.layout.meta["events"] > 0
    assert sweep is no_update and "backtest done" in _j(note)
    assert "unloads" in _j(pairs)
    # click the first unload: a snapshot of that minute goes to the cache, the page goes to the Tuner
    point = next(t for t in fig.data if t.type == "scattergl")
    click = {"points": [{"customdata": list(point.customdata[0])}]}
    href, link = cb.open_in_tuner(click, out)
    assert href.startswith("/tuner?snapshot=history-snapshot:")
    from dashboard.cache import get_cache
    from engine.io import load_data_from_json

    obj = get_cache().get(href.split("=", 1)[1])
    ld = load_data_from_json(obj, "test")
    assert len(ld.brokers) >= 2 and ld.strategy_state and obj["shedlabHistory"]["strategy"] == "AvgShedder"
    assert obj["shedlabHistory"]["config"] == {"loadBalancerAvgShedderHitCountLowThreshold": "4"}
    with pytest.raises(PreventUpdate):
        cb.open_in_tuner({"points": [{"x": "2026-01-05"}]}, out)  # a per-day bar


def test_history006_sweep_job_heatmap(sample, pandas_jobs):
    out, _ = _run(ids.HISTORY_RUN_SWEEP, sample)
    assert out["ok"]
    fig, pairs, heat, note = cb.show_job(out)
    assert fig is no_update and heat.layout.meta["rev"] == "history-sweep"
    assert heat.data[0].z.shape == (2, 2)


def test_history007_bad_input_never_runs_a_job(sample, pandas_jobs):
    out, seen = _run(ids.HISTORY_RUN_BACKTEST, sample, overrides="noSuchKey=1")
    assert not out["ok"] and "noSuchKey" in out["error"] and not seen
    out, _ = _run(ids.HISTORY_RUN_SWEEP, sample, x_values="a, b")
    assert not out["ok"] and "numbers" in out["error"]
    shown = cb.show_job(out)
    assert "sweep failed" in _j(shown[3])
    with pytest.raises(PreventUpdate):
        _run(None, sample)


def test_history008_failed_spark_job_is_a_message(sample, monkeypatch):
    """A Spark failure inside the background job comes back as a message, not a traceback."""
    import dashboard.spark as sp

    monkeypatch.setattr(sp, "_spark", None)
    monkeypatch.setattr(sp, "_pid", None)
    monkeypatch.setattr(sp, "java_available", lambda: (False, "no Java runtime found"))
    monkeypatch.delenv("LB_SPARK_REMOTE", raising=False)
    out = S.run_page_job("backtest", sample, S.job_params("backtest", strategy="UniformLoadShedder",
                                                          overrides="minUnloadMessage=123"))
    assert not out["ok"] and "Java" in out["error"]
    assert "backtest failed" in _j(cb.show_job(out)[3])


def test_history009_bundles_figure(sample):
    fig, note = cb.show_bundles(sample, "2026-01-05", "2026-01-06")
    assert fig.layout.meta["rev"] == "history-bundles" and len(fig.data[0].x) == 48
    with pytest.raises(PreventUpdate):
        cb.show_bundles(None, None, None)


def test_history010_layout_ids_and_page_registered():
    from layouts import PAGES
    from layouts.history import layout

    assert ("history", "/history", "History") in PAGES
    text = _j(layout())
    for name, value in vars(ids).items():
        if name.startswith("HISTORY_"):
            assert f'"{value}"' in text, name
