"""Every history Spark job equals a pandas reference on the same data; backtests equal the engine's
strategy run minute by minute. One session-scoped ``local[2]`` session, small data."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from dashboard.history.dataset import read_long, wide_brokers, wide_bundles, write_long
from dashboard.history.generate import generate
from dashboard.history.reference import bundle_distribution_pd, cluster_aggregates_pd, count_events_pd
from dashboard.history.replay import replay
from engine.config import LoadBalancerConfig
from engine.strategies import make_shedding
from engine.view import LoadView

pytestmark = pytest.mark.spark

T0 = 1_767_571_200_000  # 2026-01-05T00:00Z


@pytest.fixture(scope="module")
def gen_ds(tmp_path_factory):
    """6 brokers × 1 day with bundle metrics and both incidents (broker loss, hot bundle)."""
    p = tmp_path_factory.mktemp("hist") / "gen"
    generate(p, brokers=6, days=1, seed=3, start="2026-01-05", bundles_per_broker=3)
    return p


@pytest.fixture(scope="module")
def messy_ds(tmp_path_factory):
    """Hand-made bad data, already through the writer: a metric missing altogether (direct memory), a
    broker appearing late, one disappearing early, one missing CPU in some minutes, duplicate rows."""
    rng = np.random.default_rng(5)
    rows = []
    for m in range(180):
        ts = T0 + m * 60_000
        for j, b in enumerate(["a:8080", "b:8080", "c:8080", "d:8080"]):
            if b == "c:8080" and m < 40:
                continue  # appears at minute 40
            if b == "d:8080" and m >= 120:
                continue  # gone after minute 120
            base = 20 + 15 * j + 10 * np.sin(m / 20 + j)
            vals = {"cpu": base + rng.normal(0, 2), "memory": 50.0, "bandwidth_in": base / 3,
                    "bandwidth_out": base / 2, "msg_rate_in": 1000 * (j + 1) + 100 * m % 7,
                    "msg_rate_out": 1500.0 * (j + 1), "msg_throughput_in": 2e6 * (j + 1), "msg_throughput_out": 3e6}
            if b == "a:8080" and m % 17 == 0:
                del vals["cpu"]  # a present broker without CPU this minute: counts as 0 %
            for k, v in vals.items():
                rows.append((ts, b, k, float(v), None))
    df = pd.DataFrame(rows, columns=["timestamp", "broker", "metric", "value", "bundle"])
    dup = df.iloc[::50].copy()
    dup["value"] = dup["value"] + 1.0  # duplicates: jobs take the max
    p = tmp_path_factory.mktemp("hist") / "messy"
    write_long(pd.concat([df, dup]), p, source="test")
    return p


def _cmp(a: pd.DataFrame, b: pd.DataFrame, key):
    a = a.sort_values(key).reset_index(drop=True)[list(b.columns)]
    b = b.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=1e-9, atol=1e-9)


_KEYS = {"minute": "timestamp", "hour": "timestamp", "day": "timestamp", "brokers": "broker", "top": "rank"}


@pytest.mark.parametrize("which", ["gen", "messy", "gen-wide", "messy-wide"])
def test_spark001_aggregates_equal_pandas(spark, gen_ds, messy_ds, which, tmp_path):
    """From the long layout (pivoted in Spark) and from the wide layout (read as stored)."""
    import shutil

    from dashboard.history.aggregates import cluster_aggregates
    from dashboard.history.layout import has_wide, write_wide
    from dashboard.history.sparkio import read_broker_minutes, read_history, to_pandas

    ds = gen_ds if which.startswith("gen") else messy_ds
    weights = (1.0, 0.0, 1.0, 1.0) if which.startswith("gen") else (1.0, 0.5, 2.0, 0.5)
    if which == "messy-wide":  # a dataset written without the wide layout gets one afterwards
        shutil.copytree(messy_ds, tmp_path / "m")
        ds = tmp_path / "m"
        assert not has_wide(ds)
        write_wide(ds)
    if which.endswith("wide"):
        assert has_wide(ds)
        src = read_broker_minutes(spark, ds)
        assert "metric" not in src.columns and "wide" in src.inputFiles()[0]  # the stored layout, not a pivot
    else:
        src = read_history(spark, ds)
    r = cluster_aggregates(src, weights, top_n=3)
    ref = cluster_aggregates_pd(read_long(ds), weights, top_n=3)
    for k, key in _KEYS.items():
        _cmp(to_pandas(r[k]), ref[k], key)
    if which == "messy":
        m = ref["minute"].set_index("timestamp")["brokers"]
        assert m.iloc[0] == 3 and m.iloc[50] == 4 and m.iloc[150] == 3  # c appears, d disappears


def test_spark002_aggregates_time_range(spark, gen_ds):
    from dashboard.history.aggregates import cluster_aggregates
    from dashboard.history.sparkio import read_history, to_pandas

    r = cluster_aggregates(read_history(spark, gen_ds, "2026-01-05T06:00", "2026-01-05T08:59"))
    ref = cluster_aggregates_pd(read_long(gen_ds, "2026-01-05T06:00", "2026-01-05T08:59"))
    assert len(ref["minute"]) == 180
    _cmp(to_pandas(r["hour"]), ref["hour"], "timestamp")
    _cmp(to_pandas(r["brokers"]), ref["brokers"], "broker")


def test_spark003_bundle_distribution_equals_pandas(spark, gen_ds):
    from dashboard.history.bundles import bundle_distribution
    from dashboard.history.sparkio import read_history, to_pandas

    r = bundle_distribution(read_history(spark, gen_ds), top_n=5)
    ref = bundle_distribution_pd(read_long(gen_ds), top_n=5)
    _cmp(to_pandas(r["hour"]), ref["hour"], "timestamp")
    _cmp(to_pandas(r["top"]), ref["top"], "rank")
    assert len(ref["hour"]) == 24


def _engine_minute_by_minute(long: pd.DataFrame, strategy: str, cfg: LoadBalancerConfig) -> list[tuple]:
    """The reference: the engine's strategy called minute by minute on views of the real bundles,
    with ModularLoadManager's driver rules (≤1 broker: skip; grace period; selected = unloaded)."""
    bw, kw = wide_brokers(long), wide_bundles(long)
    strat = make_shedding(strategy)
    recently: dict[str, int] = {}
    out = []
    for ts, g in bw.groupby("timestamp", sort=True):
        now = int(pd.Timestamp(ts).value // 1_000_000)
        k = kw[kw["timestamp"] == ts]
        brokers = g["broker"].tolist()
        owner = np.array([brokers.index(b) if b in brokers else -1 for b in k["broker"]], dtype=np.int64)
        st = k[["bundle_msg_throughput_in", "bundle_msg_throughput_out", "bundle_msg_rate_in",
                "bundle_msg_rate_out"]].to_numpy()
        view = LoadView.from_arrays(
            brokers=brokers, bundles=k["bundle"].tolist(), owner=owner, cpu=g["cpu"], memory=g["memory"],
            direct_memory=g["direct_memory"], bandwidth_in=g["bandwidth_in"], bandwidth_out=g["bandwidth_out"],
            msg_rate_in=g["msg_rate_in"], msg_rate_out=g["msg_rate_out"], msg_throughput_in=g["msg_throughput_in"],
            msg_throughput_out=g["msg_throughput_out"], st=st, topics=k["bundle_topics"].astype(int), now_ms=now)
        strat.on_active_brokers_change(set(brokers))
        if view.nb <= 1:
            continue
        for b in [b for b, t in recently.items() if t < now - cfg.loadBalancerSheddingGracePeriodMinutes * 60_000]:
            del recently[b]
        res = strat.find_bundles_for_unloading(view, cfg, recently)
        for s in res.selected:
            out.append((pd.Timestamp(ts), s.broker, s.bundle))
            recently[s.bundle] = now
    return sorted(out)


@pytest.mark.parametrize("strategy,values", [
    ("AvgShedder", {"loadBalancerAvgShedderHitCountLowThreshold": "4"}),
    ("ThresholdShedder", {"loadBalancerBrokerThresholdShedderPercentage": "5",
                          "loadBalancerBundleUnloadMinThroughputThreshold": "1"}),
    ("UniformLoadShedder", {"loadBalancerMsgRateDifferenceShedderThreshold": "80"}),
])
def test_spark004_backtest_equals_engine_minute_by_minute(spark, gen_ds, strategy, values):
    from dashboard.history.backtest import backtest
    from dashboard.history.sparkio import read_history, to_pandas

    cfg = LoadBalancerConfig().with_values(values)
    r = backtest(read_history(spark, gen_ds), strategy, cfg)
    ev = to_pandas(r["events"], ["timestamp", "broker"])
    got = sorted((pd.Timestamp(e.timestamp), e.broker, b) for e in ev.itertuples() for b in e.bundles.split(","))
    want = _engine_minute_by_minute(read_long(gen_ds), strategy, cfg)
    assert len(want) > 0, "the test data should make the strategy fire"
    assert got == want
    # counts per day and per pair equal pandas on the same events
    ref = count_events_pd(ev)
    _cmp(to_pandas(r["per_day"]), ref["per_day"], "day")
    pp = to_pandas(r["per_pair"])
    pp["timestamps"] = pp["timestamps"].map(lambda a: [pd.Timestamp(x) for x in a])
    ref_pp = ref["per_pair"].copy()
    ref_pp["timestamps"] = ref_pp["timestamps"].map(lambda a: [pd.Timestamp(x) for x in a])
    key = ["broker", "partner"]
    a = pp.assign(p=pp["partner"].fillna("")).sort_values(["broker", "p"]).drop(columns="p").reset_index(drop=True)
    b = ref_pp.assign(p=ref_pp["partner"].fillna("")).sort_values(["broker", "p"]).drop(columns="p").reset_index(drop=True)
    assert a[key].fillna("").values.tolist() == b[key].fillna("").values.tolist()
    assert a["events"].tolist() == b["events"].tolist() and a["timestamps"].tolist() == b["timestamps"].tolist()


def test_spark005_backtest_synthetic_bundles_and_state(spark, gen_ds, messy_ds):
    """Without bundle metrics (synthetic bundles) Spark equals the pandas replay, state JSON included."""
    from dashboard.history.backtest import backtest
    from dashboard.history.sparkio import read_history, to_pandas

    for ds in (gen_ds, messy_ds):
        ev = to_pandas(backtest(read_history(spark, ds), "AvgShedder", bundles="synthetic")["events"],
                       ["timestamp", "broker"])
        ref = replay(wide_brokers(read_long(ds)), None, "AvgShedder").sort_values(["timestamp", "broker"])
        assert len(ref) > 0
        pd.testing.assert_frame_equal(ev.drop(columns="cell").reset_index(drop=True), ref.reset_index(drop=True),
                                      check_dtype=False)
        st = json.loads(ev["state"].iloc[0])
        assert st["strategy"] == "AvgShedder" and "hit_low" in st["strategy_state"]


@pytest.mark.parametrize("chunks", [1, 3])
def test_spark006_sweep_equals_backtest_per_cell(spark, gen_ds, chunks):
    """One task per cell, or per cell × time chunk: the same counts as one replay per cell."""
    from dashboard.history.sparkio import read_bundle_rows, read_broker_minutes, to_pandas
    from dashboard.history.sweep import sweep

    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHitCountLowThreshold"
    cells = to_pandas(sweep(read_broker_minutes(spark, gen_ds), "AvgShedder", None, xk, [10, 20], yk, [2, 8],
                            bundle_df=read_bundle_rows(spark, gen_ds), chunks=chunks, warmup_minutes=60), ["cell"])
    assert cells[["x", "y"]].values.tolist() == [[10, 2], [20, 2], [10, 8], [20, 8]]
    bw, kw = wide_brokers(read_long(gen_ds)), wide_bundles(read_long(gen_ds))
    for c in cells.itertuples():
        cfg = LoadBalancerConfig().with_values({xk: str(c.x), yk: str(int(c.y))})
        ev = replay(bw, kw, "AvgShedder", cfg, state_limit=0)
        assert (c.events, c.bundles, c.minutes) == (len(ev), ev["n_bundles"].sum(), ev["timestamp"].nunique())
    assert cells["events"].iloc[0] >= cells["events"].iloc[1]  # a higher low threshold never fires more here


def test_spark007_run_job_spark_equals_pandas_and_caches(spark, gen_ds):
    """The runner: Spark and pandas engines agree; the second open is a cache hit."""
    import time

    from dashboard.history.jobs import load_cached, run_job

    seen = []
    a = run_job("aggregate", gen_ds, {"top_n": 4}, engine="spark", use_cache=False,
                progress=lambda d, t, txt: seen.append((d, t)))
    b = run_job("aggregate", gen_ds, {"top_n": 4}, engine="pandas", use_cache=False)
    _cmp(a["minute"], b["minute"], "timestamp")
    _cmp(a["top"], b["top"], "rank")
    t = time.perf_counter()
    got = load_cached(gen_ds, "aggregate", {"top_n": 4})
    assert got is not None and time.perf_counter() - t < 5
    assert a["_meta"]["engine"] == "spark" and seen


def test_spark008_stage_progress_reports_tasks(spark, gen_ds):
    from dashboard.spark import StageProgress

    seen = []
    with StageProgress(spark, lambda d, t, txt: seen.append((d, t, txt)), interval=0.05):
        spark.range(0, 3_000_000, numPartitions=8).selectExpr("sum(id * id)").collect()
    assert all(t >= d >= 0 for d, t, _ in seen)
    with StageProgress(spark, None, interval=0.05) as quiet:  # nobody listens: no thread polls the JVM
        spark.range(0, 1000, numPartitions=2).selectExpr("sum(id)").collect()
    assert quiet._thread is None


def _child_job(q):
    from dashboard.spark import get_spark, stop_spark

    s = get_spark()
    q.put((os.getpid(), s.sparkContext.applicationId, s.range(0, 1000).selectExpr("sum(id)").collect()[0][0]))
    stop_spark()


def test_spark009_a_forked_child_gets_its_own_session(spark):
    """A Dash background job is a fork: even if the parent had a session, the child starts its own JVM
    and never talks to the parent's gateway; the parent's session still works afterwards."""
    import multiprocess

    ctx = multiprocess.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_job, args=(q,))
    p.start()
    pid, app_id, total = q.get(timeout=180)
    p.join(timeout=60)
    assert p.exitcode == 0 and pid != os.getpid() and total == 499500
    assert app_id != spark.sparkContext.applicationId
    assert spark.range(0, 10).count() == 10


@pytest.mark.parametrize("warmup", [0, 60])
def test_spark010_chunked_backtest_equals_one_sequential_replay(spark, messy_ds, warmup):
    """The history cut in 5 time chunks replayed in parallel gives exactly the sequential replay's
    events (state JSON included). With no warm-up the chunks start from an empty memory that is
    not the carried one: the check catches it and the rest is replayed from the true state."""
    from dashboard.history.backtest import backtest
    from dashboard.history.sparkio import read_history, to_pandas

    cfg = LoadBalancerConfig().with_values({"loadBalancerAvgShedderHitCountLowThreshold": "6",
                                            "loadBalancerAvgShedderLowThreshold": "5"})
    r = backtest(read_history(spark, messy_ds), "AvgShedder", cfg, bundles="synthetic", chunks=5,
                 warmup_minutes=warmup, state_limit=10)
    ev = to_pandas(r["events"], ["timestamp", "broker"])
    ref = replay(wide_brokers(read_long(messy_ds)), None, "AvgShedder", cfg, state_limit=10)
    ref = ref.sort_values(["timestamp", "broker"], kind="stable").reset_index(drop=True)
    assert len(ref) > 10 and r["_info"]["chunks"] == 5
    pd.testing.assert_frame_equal(ev.drop(columns="cell").reset_index(drop=True), ref, check_dtype=False)
    if warmup == 0:
        assert r["_info"]["rounds"] == 2 and r["_info"]["redone_chunks"] > 0


def test_spark011_cancel_stops_the_job_group(spark):
    """Cancel (the page's button ends in :func:`cancel_jobs`) stops a running Spark job at once."""
    import threading
    import time

    from dashboard.spark import cancel_jobs, job_group

    errors = []

    def slow():
        try:
            with job_group(spark, "slow"):
                spark.range(0, 64, numPartitions=4).rdd.map(lambda x: time.sleep(3) or x).count()
        except Exception as exc:  # noqa: BLE001 - the cancelled job raises
            errors.append(exc)

    th = threading.Thread(target=slow)
    t = time.perf_counter()
    th.start()
    time.sleep(4)
    assert cancel_jobs() == 1
    th.join(timeout=60)
    assert not th.is_alive() and errors and "cancel" in str(errors[0]).lower()
    assert time.perf_counter() - t < 40  # 64 × 3 s on 2 cores would take 96 s
    assert spark.range(0, 10).count() == 10  # the session is still usable


def test_spark012_uri_dataset_and_results(spark, gen_ds, tmp_path, monkeypatch):
    """A dataset named by a Hadoop URI runs through Spark's FileSystem (metadata, listing, results):
    the same answer as the local path; results land where --results says; a missing one is a clear
    InputError naming the file."""
    from dashboard.history.jobs import run_job
    from engine.errors import InputError

    monkeypatch.setenv("SHEDLAB_CACHE_DIR", str(tmp_path / "cache"))
    uri = gen_ds.resolve().as_uri()
    out = (tmp_path / "res").as_uri()
    a = run_job("aggregate", uri, {"top_n": 3}, engine="spark", use_cache=False, write=True, results=out)
    b = run_job("aggregate", gen_ds, {"top_n": 3}, engine="pandas", use_cache=False)
    _cmp(a["minute"], b["minute"], "timestamp")
    _cmp(a["brokers"], b["brokers"], "broker")
    assert a["_meta"]["results"] == out and (tmp_path / "res" / "minute").is_dir()
    back = spark.read.parquet(f"{out}/brokers").toPandas()
    assert sorted(back["broker"]) == sorted(b["brokers"]["broker"])
    with pytest.raises(InputError, match="_shedlab.json"):
        run_job("aggregate", (tmp_path / "nope").as_uri(), {}, engine="spark", use_cache=False)


def test_broker_minutes_of_a_range_list_only_its_days(spark, tmp_path_factory):
    """A local wide layout is read for a range by listing only that range's day directories (the schema
    from one file's footer): the same rows and types as reading the whole layout and filtering, and the
    files Spark reads are the range's days only."""
    from pyspark.sql import functions as F

    from dashboard.history.layout import wide_path
    from dashboard.history.sparkio import read_broker_minutes, to_pandas

    p = tmp_path_factory.mktemp("hist") / "days3"
    generate(p, brokers=3, days=3, seed=2, start="2026-02-01")
    got = read_broker_minutes(spark, p, "2026-02-02T06:00:00Z", "2026-02-02T18:00:00Z")
    ref = (spark.read.parquet(str(wide_path(p))).where(F.col("day") == "2026-02-02")
           .where((F.col("timestamp") >= "2026-02-02 06:00:00") & (F.col("timestamp") <= "2026-02-02 18:00:00"))
           .select(*got.columns))
    assert got.schema == ref.schema
    files = got.inputFiles()
    assert files and all("day=2026-02-02" in f for f in files)
    a, b = to_pandas(got, ["timestamp", "broker"]), to_pandas(ref, ["timestamp", "broker"])
    assert len(a) > 3 * 600  # 12 hours of 3 brokers (the generator leaves some minutes out)
    pd.testing.assert_frame_equal(a, b)
    # an empty range: no rows, the same columns
    none = read_broker_minutes(spark, p, "2027-01-01", "2027-01-02")
    assert none.columns == got.columns and none.count() == 0
