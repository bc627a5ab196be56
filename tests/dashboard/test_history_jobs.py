"""History jobs without Spark: the replay driver rules, caching, result files, the Tuner snapshot, the
Spark settings' error messages."""
from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from dashboard.history.dataset import read_long, wide_brokers, wide_bundles
from dashboard.history.generate import generate
from dashboard.history.jobs import load_cached, normalise_params, run_job
from dashboard.history.replay import replay
from engine.config import LoadBalancerConfig
from engine.errors import InputError, UsageError


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    p = tmp_path_factory.mktemp("hist") / "ds"
    generate(p, brokers=5, days=1, seed=4, bundles_per_broker=3)
    return p


def _wide(rows):
    cols = ["timestamp", "broker", "cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out", "msg_rate_in",
            "msg_rate_out", "msg_throughput_in", "msg_throughput_out"]
    return pd.DataFrame(rows, columns=cols)


def _minute(m, broker, cpu, rate=None, thr=None):
    rate = cpu * 200.0 if rate is None else rate  # hot brokers carry more traffic
    thr = rate * 1e4 if thr is None else thr
    return (pd.Timestamp("2026-01-05") + pd.Timedelta(minutes=m), broker, cpu, 0.0, 0.0, 0.0, 0.0, rate / 2, rate / 2,
            thr / 2, thr / 2)


def test_hist030_avgshedder_fires_after_the_low_hit_count():
    rows = [_minute(m, b, c) for m in range(12) for b, c in (("a:8080", 80.0), ("b:8080", 20.0))]
    ev = replay(_wide(rows), None, "AvgShedder", LoadBalancerConfig())  # gap 60 >= high 40: 2 high hits
    assert ev["timestamp"].tolist()[0] == pd.Timestamp("2026-01-05 00:01")
    assert ev.iloc[0][["broker", "partner", "trigger"]].tolist() == ["a:8080", "b:8080", "high"]
    st = json.loads(ev["state"].iloc[0])["strategy_state"]
    assert st["hit_high"] == {"a:8080": 1, "b:8080": 1}  # the memory *before* the firing minute


def test_hist031_driver_rules_interval_disabled_single_broker():
    rows = [_minute(m, b, c) for m in range(10) for b, c in (("a:8080", 80.0), ("b:8080", 20.0))]
    rows += [_minute(m, "a:8080", 80.0) for m in range(10, 20)]  # b gone: one broker, nothing to balance
    w = _wide(rows)
    cfg = LoadBalancerConfig()
    ev = replay(w, None, "AvgShedder", cfg)
    assert ev["timestamp"].max() < pd.Timestamp("2026-01-05 00:10")
    ev2 = replay(w, None, "AvgShedder", cfg.with_values({"loadBalancerSheddingIntervalMinutes": "3"}))
    assert set(ev2["timestamp"].dt.minute % 3) == {0}
    assert replay(w, None, "AvgShedder", cfg.with_values({"loadBalancerSheddingEnabled": "false"})).empty
    with pytest.raises(UsageError):  # the extensible load manager's strategy: not a modular backtest
        replay(w, None, "TransferShedder", cfg)


def test_hist032_grace_period_and_threshold_history_of_a_leaving_broker():
    rows = [_minute(m, b, c) for m in range(40) for b, c in (("a:8080", 90.0), ("b:8080", 10.0), ("c:8080", 10.0))]
    w = _wide(rows)
    cfg = LoadBalancerConfig().with_values({"loadBalancerBundleUnloadMinThroughputThreshold": "1"})
    ev = replay(w, None, "ThresholdShedder", cfg, synthetic_bundles=4)
    # a stays hot: with 4 bundles and a 30-minute grace period it cannot shed every minute
    assert 0 < len(ev) < 40 and (ev["broker"] == "a:8080").all()
    used = [b for s in ev["bundles"] for b in s.split(",")]
    assert len(used) == len(set(used)) or ev["timestamp"].max() - ev["timestamp"].min() >= pd.Timedelta(minutes=30)


def test_hist033_run_job_pandas_caches_and_writes_results(ds):
    p = {"strategy": "AvgShedder", "set": {"loadBalancerAvgShedderHitCountLowThreshold": "4"}}
    a = run_job("backtest", ds, p, engine="pandas", use_cache=False, write=True)
    t = time.perf_counter()
    b = run_job("backtest", ds, p, engine="spark")  # a cache hit never starts Spark
    assert time.perf_counter() - t < 5 and len(b["events"]) == len(a["events"])
    assert a["_meta"]["engine"] == "pandas"
    n = normalise_params("backtest", p)
    from dashboard.history.jobs import _results_path

    res_dir = [_results_path(ds, "backtest", n)]  # under the app's cache dir, not beside the dataset
    assert not (ds / "_results").exists()
    assert res_dir and (res_dir[0] / "events.parquet").exists()
    assert json.loads((res_dir[0] / "meta.json").read_text())["params"] == json.loads(json.dumps(n))
    # the result files alone serve the view (cache entry gone)
    from dashboard.cache import get_cache
    from dashboard.history.jobs import cache_key

    get_cache().delete(cache_key(ds, "backtest", n))
    got = load_cached(ds, "backtest", p)
    assert got is not None and len(got["events"]) == len(a["events"])


def test_hist034_params_are_validated():
    with pytest.raises(UsageError):
        normalise_params("nope", {})
    with pytest.raises(UsageError, match="backtests support"):
        normalise_params("backtest", {"strategy": "TransferShedder"})
    with pytest.raises(InputError):
        normalise_params("backtest", {"set": {"loadBalancerAvgShedderLowThreshold": "-1"}})
    with pytest.raises(UsageError, match="x_key"):
        normalise_params("sweep", {"y_key": "maxUnloadPercentage", "y_values": [0.2]})
    with pytest.raises(UsageError, match="differ"):
        normalise_params("sweep", {"x_key": "maxUnloadPercentage", "x_values": [0.2], "y_key": "maxUnloadPercentage",
                                   "y_values": [0.5]})
    a = normalise_params("backtest", {"strategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"})
    assert a["strategy"] == "AvgShedder" and a == normalise_params("backtest", {})


def test_hist035_sweep_with_pandas_counts_per_cell(ds):
    r = run_job("sweep", ds, {"x_key": "loadBalancerAvgShedderLowThreshold", "x_values": [10, 30],
                              "y_key": "loadBalancerAvgShedderHitCountLowThreshold", "y_values": [2, 8]},
                engine="pandas", use_cache=False)
    c = r["cells"]
    assert c[["x", "y"]].values.tolist() == [[10, 2], [30, 2], [10, 8], [30, 8]]
    assert c["events"].iloc[0] >= c["events"].iloc[1] and c["events"].iloc[0] >= c["events"].iloc[2]


@pytest.mark.parametrize("strategy,values,bundles", [
    ("AvgShedder", {}, "auto"), ("AvgShedder", {}, "synthetic"),
    ("ThresholdShedder", {"loadBalancerBrokerThresholdShedderPercentage": "5"}, "synthetic"),
    ("UniformLoadShedder", {}, "auto")])
def test_hist036_tuner_snapshot_reproduces_the_backtest_decision(ds, strategy, values, bundles):
    """The minute opened in the Tuner, through JSON, gives the same selection with the engine."""
    from dashboard.history.snapshot import save_minute_snapshot
    from dashboard.cache import get_cache
    from engine.io import load_data_from_json
    from engine.strategies import make_shedding
    from engine.view import LoadView

    cfg = LoadBalancerConfig().with_values(values)
    long = read_long(ds)
    ev = replay(wide_brokers(long), None if bundles == "synthetic" else wide_bundles(long), strategy, cfg)
    assert len(ev) > 0
    for e in ev.head(6).itertuples():
        key = save_minute_snapshot(ds, e.timestamp, state=e.state, strategy=strategy, config=values,
                                   event={"broker": e.broker}, bundles=bundles)
        obj = get_cache().get(key)
        assert key.startswith("history-snapshot:") and obj["shedlabHistory"]["strategy"] == strategy
        ld = load_data_from_json(json.loads(json.dumps(obj)), key)
        s = make_shedding(strategy)
        s.load_state(ld.strategy_state.get(strategy, {}))
        v = LoadView.from_load_data(ld)
        s.on_active_brokers_change(set(v.brokers))
        res = s.find_bundles_for_unloading(v, cfg, ld.recently_unloaded)
        assert ",".join(x.bundle for x in res.selected if x.broker == e.broker) == e.bundles


def test_hist037_exact_usage_round_trips_float32_percentages():
    from dashboard.history.snapshot import exact_usage
    from engine.javacompat import percent_usage

    from engine.javacompat import percent_usage_array

    rng = np.random.default_rng(0)
    limits = rng.choice([800.0, 1600.0, 1e6, 8192.0, 4096.0], 3000)
    pcts = percent_usage_array(rng.uniform(0, 1.2, 3000) * limits, limits)  # what brokers report
    assert all(percent_usage(*exact_usage(p)) == p for p in pcts)
    arbitrary = rng.uniform(0, 100, 300).astype(np.float32).astype(np.float64)
    assert sum(percent_usage(*exact_usage(p)) == p for p in arbitrary) >= 240  # best effort
    assert exact_usage(0.0) == (0.0, 100.0)


def test_hist038_spark_errors_are_clear(monkeypatch):
    import dashboard.spark as sp

    monkeypatch.setattr(sp, "_spark", None)
    monkeypatch.setattr(sp, "_pid", None)
    monkeypatch.setattr(sp, "java_available", lambda: (False, "no Java runtime found"))
    monkeypatch.delenv("LB_SPARK_REMOTE", raising=False)
    with pytest.raises(sp.SparkUnavailable, match="Spark needs Java 17 or 21: no Java runtime found.*apt-get"):
        sp.get_spark()
    monkeypatch.setenv("LB_SPARK_REMOTE", "sc://127.0.0.1:1")
    try:
        import grpc  # noqa: F401
    except ImportError:
        with pytest.raises(sp.SparkUnavailable, match=r'pyspark\[connect\]'):
            sp.get_spark()
    assert sp.spark_settings()["remote"] == "sc://127.0.0.1:1"
    monkeypatch.delenv("LB_SPARK_REMOTE")
    assert sp.spark_settings()["master"] in ("local[*]", "local[2]") or sp.spark_settings()["master"]


def test_hist039_no_spark_at_import():
    """Importing the page, the services and the jobs never starts a JVM (the web process forks jobs)."""
    import subprocess
    import sys

    code = ("import app, dashboard.history.jobs, dashboard.history.backtest, dashboard.history.aggregates, "
            "dashboard.spark as s; import sys; assert s._spark is None; "
            "assert 'pyspark.sql.session' not in sys.modules or s._spark is None; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_hist036_sweep_groups_from_the_command_line():
    """``history sweep --groups N`` reaches the job's parameters (one Spark task per group); 0 leaves the default."""
    from dashboard.history.cli import _job_params, _parser

    base = ["sweep", "sample", "--x", "loadBalancerAvgShedderLowThreshold=10,20",
            "--y", "loadBalancerAvgShedderHitCountLowThreshold=2,4"]
    got = normalise_params("sweep", _job_params(_parser().parse_args(base + ["--groups", "3"])))
    assert got["groups"] == 3
    assert "groups" not in normalise_params("sweep", _job_params(_parser().parse_args(base)))
