"""The aggregate job's one-pass plan (partials per input partition, one merge per broker and per day)
equals the pandas reference however the rows are cut into partitions: sorted or shuffled, a minute
split over several partitions, a broker missing from some, ties for the hottest broker."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dashboard.history import aggregates as A
from dashboard.history.reference import broker_percentiles_pd, minute_aggregates_pd

QS = (0.5, 0.9, 0.99)


@pytest.fixture
def spark(monkeypatch):
    """The process's session (``local[2]`` unless a master is set), for the tests marked spark."""
    from dashboard.spark import get_spark, java_available

    ok, why = java_available()
    if not ok:
        pytest.skip(f"Spark needs Java: {why}")
    if not os.getenv("LB_SPARK_MASTER"):
        monkeypatch.setenv("LB_SPARK_MASTER", "local[2]")
    return get_spark()


def _wide_u(seed=0, brokers=7, minutes=2 * 1440 + 37):
    """Broker-minute rows with usage, rate and thr over two days and a bit; a broker joins late, one
    leaves early, usages are rounded so that the hottest broker is often tied."""
    rng = np.random.default_rng(seed)
    names = [f"10.0.0.{i}:8080" for i in (3, 12, 1, 250, 7, 70, 9)][:brokers]
    rows = []
    t0 = pd.Timestamp("2026-01-05")
    for m in range(minutes):
        for j, b in enumerate(names):
            if (j == 1 and m < 100) or (j == 2 and m > minutes - 300):
                continue
            rows.append((t0 + pd.Timedelta(minutes=m), b, float(np.round(rng.uniform(0, 100), 0)),
                         float(rng.uniform(0, 100)), float(rng.lognormal(8, 1)), float(rng.lognormal(15, 1))))
    w = pd.DataFrame(rows, columns=["timestamp", "broker", "usage", "cpu", "rate", "thr"])
    return w


def _arrow(w: pd.DataFrame) -> pa.Table:
    return pa.table({"timestamp": pa.array(w["timestamp"].to_numpy().astype("datetime64[us]"),
                                           pa.timestamp("us", tz="UTC")),
                     "broker": pa.array(w["broker"].tolist(), pa.string()),
                     **{c: pa.array(w[c].to_numpy()) for c in ("usage", "cpu", "rate", "thr")}})


def _one_pass(parts: list[pa.Table]):
    """What Spark does with the plan: partials per partition, grouped by key, merged, assembled."""
    out = []
    for p in parts:
        out += list(A._partials(iter(p.to_batches(max_chunksize=997))))
    partials = pa.Table.from_batches(out, schema=A._arrow_schema())
    merged = [A._merge(QS, partials.filter(pc.equal(partials["key"], k)))
              for k in sorted(set(partials["key"].to_pylist()))]
    return A._assemble(pa.concat_tables(merged), QS)


def _reference(w):
    minute = minute_aggregates_pd(w)
    return minute, broker_percentiles_pd(w, minute, QS)


def _cmp(got, ref, key):
    got = got.sort_values(key).reset_index(drop=True)[list(ref.columns)]
    ref = ref.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, ref, check_dtype=False, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cut", ["one", "sorted-chunks", "shuffled", "minute-split"])
def test_onepass001_equals_the_reference_however_partitioned(cut):
    w = _wide_u()
    t = _arrow(w)
    n = t.num_rows
    if cut == "one":
        parts = [t]
    elif cut == "sorted-chunks":  # Spark's splits of the sorted wide files: minutes cut at the edges
        parts = [t.slice(a, 1234) for a in range(0, n, 1234)]
    elif cut == "shuffled":
        perm = np.random.default_rng(1).permutation(n)
        parts = [t.take(perm[a:a + 2500]) for a in range(0, n, 2500)]
    else:  # every minute spread over three partitions, each broker in several
        k = np.arange(n) % 3
        parts = [t.filter(pa.array(k == i)) for i in range(3)]
    minute, brokers = _one_pass(parts)
    ref_minute, ref_brokers = _reference(w)
    _cmp(minute, ref_minute, "timestamp")
    _cmp(brokers, ref_brokers, "broker")
    # ties are real here (whole-number usages): the smallest broker id wins, as in the reference
    top = w.merge(ref_minute[["timestamp", "usage_max"]], on="timestamp")
    assert (top[top["usage"] == top["usage_max"]].groupby("timestamp").size() > 1).sum() > 50
    m = minute.sort_values("timestamp").reset_index(drop=True)
    assert (m["hottest"] == ref_minute.sort_values("timestamp").reset_index(drop=True)["hottest"]).all()


def test_onepass002_percentiles_exact_not_approximate():
    """Interpolated between two neighbours like numpy/pandas: a broker with values 0..9 has p90 = 8.1."""
    w = pd.DataFrame({"timestamp": pd.date_range("2026-01-05", periods=10, freq="min"), "broker": "b:1",
                      "usage": np.arange(10.0)[::-1], "cpu": np.arange(10.0), "rate": 1.0, "thr": 2.0})
    _, brokers = _one_pass([_arrow(w).slice(0, 4), _arrow(w).slice(4)])
    row = brokers.iloc[0]
    assert row["usage_p90"] == pytest.approx(8.1, abs=1e-12) and row["usage_p50"] == pytest.approx(4.5, abs=1e-12)
    assert row["cpu_p90"] == pytest.approx(8.1, abs=1e-12) and row["minutes"] == 10


def test_onepass003_no_rows_gives_empty_tables():
    assert list(A._partials(iter([]))) == []
    minute, brokers = A._assemble(pa.Table.from_batches([], schema=A._arrow_schema()), QS)
    assert len(minute) == 0 and len(brokers) == 0
    assert "hottest" in minute.columns and "usage_p99" in brokers.columns


@pytest.mark.spark
def test_onepass004_spark_job_on_shuffled_partitions_equals_the_reference(spark):
    """The whole job on Spark with the rows scattered over partitions (minutes and brokers split)."""
    from dashboard.history.sparkio import to_pandas

    w = _wide_u(seed=4, minutes=300)
    src = spark.createDataFrame(w.assign(direct_memory=0.0, bandwidth_in=0.0, bandwidth_out=0.0,
                                         msg_rate_in=w["rate"], msg_rate_out=0.0, msg_throughput_in=w["thr"],
                                         msg_throughput_out=0.0).drop(columns=["usage", "rate", "thr"])
                                .assign(cpu=w["usage"])).repartition(5)
    r = A.cluster_aggregates(src, weights=(1.0, 0.0, 0.0, 0.0))
    ref_minute, ref_brokers = _reference(w.assign(cpu=w["usage"]))
    _cmp(to_pandas(r["minute"]), ref_minute, "timestamp")
    _cmp(to_pandas(r["brokers"]), ref_brokers, "broker")
    _cmp(r["minute"].toPandas(), ref_minute, "timestamp")  # the DataFrame itself holds the same rows


@pytest.mark.spark
@pytest.mark.parametrize("rng", [(None, None), ("2026-01-05T06:00", "2026-01-05T08:59"), ("2026-01-06", None)])
def test_onepass005_local_wide_files_read_by_the_tasks_equal_the_reference(spark, tmp_path, rng):
    """A local dataset's wide files are read by the Python tasks themselves (no JVM row hand-over),
    for the whole range or a part of it, and give the reference's tables."""
    from dashboard.history.dataset import read_long
    from dashboard.history.generate import generate
    from dashboard.history.layout import has_wide
    from dashboard.history.reference import cluster_aggregates_pd
    from dashboard.history.sparkio import read_broker_minutes, to_pandas, wide_files

    p = tmp_path / "gen"
    generate(p, brokers=5, days=2, seed=7, start="2026-01-05", bundles_per_broker=2)
    assert has_wide(p)
    src = read_broker_minutes(spark, p, *rng)
    source = src.__dict__[A.WIDE_SOURCE_ATTR]
    assert len(source["files"]) == (1 if rng[1] else (2 if rng[0] is None else 1))
    assert wide_files(p, *rng) == source  # (found without Spark: what a sweep's tasks read)
    assert A._local_master(spark)  # on a cluster master Spark reads the files (the standalone test covers it)
    weights = (1.0, 0.5, 2.0, 0.5)
    r = A.cluster_aggregates(src, weights, top_n=3)
    ref = cluster_aggregates_pd(read_long(p, *rng), weights, top_n=3)
    for k, key in (("minute", "timestamp"), ("brokers", "broker"), ("hour", "timestamp"), ("top", "rank")):
        _cmp(to_pandas(r[k]), ref[k], key)


@pytest.mark.parametrize("nparts", [1, 2, 3, 7])
def test_onepass006_broker_shares_of_the_wide_files_equal_the_reference(tmp_path, nparts):
    """Each task reads every day file and keeps its share of the brokers: every broker lands in exactly
    one share, the minutes merged across shares give the reference's tables (a share may be empty)."""
    import pyarrow as pa

    from dashboard.history.dataset import read_long
    from dashboard.history.generate import generate
    from dashboard.history.layout import wide_path
    from dashboard.history.reference import cluster_aggregates_pd

    p = tmp_path / "gen"
    generate(p, brokers=5, days=2, seed=11, start="2026-01-05", bundles_per_broker=2)
    files = sorted(str(f) for f in wide_path(p).glob("day=*/*.parquet"))
    weights = (1.0, 0.5, 2.0, 0.5)
    rows = [b for part in range(nparts) for b in A._share_partials(
        weights, None, None, files, QS, nparts, [pa.record_batch([pa.array([part])], names=["id"])])]
    got = pa.Table.from_batches(rows, schema=A._arrow_schema())
    brokers_keys = [k for k in got.column("key").to_pylist() if k.startswith("b")]
    assert len(brokers_keys) == len(set(brokers_keys)) == 5
    minute, brokers = A._assemble(A._merge_minutes(QS, got), QS)
    ref = cluster_aggregates_pd(read_long(p), weights)
    _cmp(minute, ref["minute"], "timestamp")
    _cmp(brokers, ref["brokers"], "broker")


@pytest.mark.spark
def test_onepass007_a_range_without_day_files_gives_empty_tables(spark, tmp_path):
    from dashboard.history.generate import generate
    from dashboard.history.sparkio import read_broker_minutes, to_pandas

    p = tmp_path / "gen"
    generate(p, brokers=3, days=1, seed=3, start="2026-01-05", bundles_per_broker=1)
    r = A.cluster_aggregates(read_broker_minutes(spark, p, "2027-01-01", "2027-01-02"))
    assert len(to_pandas(r["minute"])) == 0 and len(to_pandas(r["brokers"])) == 0


def test_onepass008_wide_files_only_for_an_up_to_date_local_wide_layout(tmp_path):
    """The day files a sweep's tasks read are found without Spark only where the wide layout is up to date
    with the long files and the range holds a day; otherwise none (the job plans a DataFrame instead)."""
    import os

    from dashboard.history.dataset import data_files
    from dashboard.history.generate import generate
    from dashboard.history.sparkio import wide_files

    p = tmp_path / "gen"
    generate(p, brokers=3, days=2, seed=3, start="2026-01-05", bundles_per_broker=1)
    got = wide_files(p, "2026-01-06", None)
    assert [f.split("/")[-2] for f in got["files"]] == ["day=2026-01-06"] and got["t1"] is None
    assert wide_files(p, "2027-01-01", None) is None
    f = data_files(p)[0]
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))  # the long files changed since
    assert wide_files(p) is None
