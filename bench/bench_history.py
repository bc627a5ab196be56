"""History aggregation at scale: the cluster-aggregate job on 100 M metric rows, Spark vs DuckDB vs pandas.

Generates (once; reused from ``SHEDLAB_BENCH_DIR``, default ``/tmp/shedlab-bench``) a history of
250 brokers × 31 days at one-minute resolution: 9 broker metrics per broker-minute ≈ 100.4 M long
rows in Parquet, partitioned by day. Then, in one run, prints side by side:

* **Spark (cold)**: a new SparkSession (JVM start) + :func:`dashboard.history.aggregates.cluster_aggregates`
  collected to pandas — the time a cron job or a first History view pays (budget ≤ 120 s);
* **DuckDB**: the same aggregates as SQL over the same files (in-process, all cores);
* **pandas**: :mod:`dashboard.history.reference` on a subset that fits in memory (3 days ≈ 9.7 M
  rows; the whole 100 M would need tens of GB as a long frame), with its rows/s;
* **cached re-open**: fetching the stored result again (:func:`dashboard.history.jobs.load_cached`:
  fingerprint + diskcache read; budget ≤ 200 ms).

Each engine runs in a fresh Python process (so Spark is really cold and memory is not shared);
peak memory is sampled every 50 ms as the RSS of that process plus its children (the Spark JVM). The machine's load average is printed too: other work on the machine slows Spark down.
``BENCH_HISTORY_DAYS`` / ``BENCH_HISTORY_BROKERS`` shrink the dataset for a quick run.
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

BROKERS = int(os.getenv("BENCH_HISTORY_BROKERS", "250"))
DAYS = int(os.getenv("BENCH_HISTORY_DAYS", "31"))
PANDAS_DAYS = int(os.getenv("BENCH_HISTORY_PANDAS_DAYS", "3"))
BENCH_DIR = Path(os.getenv("SHEDLAB_BENCH_DIR", "/tmp/shedlab-bench"))


class PeakRSS:
    """Sample the RSS of this process and its children every 50 ms; ``peak`` in bytes."""

    def __init__(self):
        self.peak = 0
        self.start = psutil.Process().memory_info().rss
        self._stop = threading.Event()

    def _sample(self):
        me = psutil.Process()
        while not self._stop.is_set():
            try:
                rss = me.memory_info().rss + sum(c.memory_info().rss for c in me.children(recursive=True))
                self.peak = max(self.peak, rss)
            except psutil.Error:
                pass
            self._stop.wait(0.05)

    def __enter__(self):
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()


def dataset() -> tuple[Path, dict, float]:
    from dashboard.history.dataset import is_dataset, read_meta
    from dashboard.history.generate import GENERATOR_VERSION, generate

    p = BENCH_DIR / f"history-{BROKERS}x{DAYS}"
    want = dict(brokers=BROKERS, days=DAYS, seed=1, start="2026-01-01", bundles_per_broker=4, bundle_metrics=False,
                generator_version=GENERATOR_VERSION)
    if is_dataset(p):
        meta = read_meta(p)
        if all(meta.get("params", {}).get(k) == v for k, v in want.items()):
            return p, meta, 0.0
    t = time.perf_counter()
    meta = generate(p, overwrite=True, **{k: v for k, v in want.items() if k != "generator_version"})
    return p, meta, time.perf_counter() - t


DUCK_SQL = """
WITH wide AS (
  SELECT timestamp, broker,
    coalesce(max(value) FILTER (WHERE metric = 'cpu'), 0) AS cpu,
    coalesce(max(value) FILTER (WHERE metric = 'direct_memory'), 0) AS direct_memory,
    coalesce(max(value) FILTER (WHERE metric = 'bandwidth_in'), 0) AS bandwidth_in,
    coalesce(max(value) FILTER (WHERE metric = 'bandwidth_out'), 0) AS bandwidth_out,
    coalesce(max(value) FILTER (WHERE metric = 'msg_rate_in'), 0) + coalesce(max(value) FILTER (WHERE metric = 'msg_rate_out'), 0) AS rate,
    coalesce(max(value) FILTER (WHERE metric = 'msg_throughput_in'), 0) + coalesce(max(value) FILTER (WHERE metric = 'msg_throughput_out'), 0) AS thr
  FROM read_parquet('{glob}', hive_partitioning = true)
  WHERE bundle IS NULL AND metric IN ('cpu','memory','direct_memory','bandwidth_in','bandwidth_out','msg_rate_in','msg_rate_out','msg_throughput_in','msg_throughput_out')
  GROUP BY timestamp, broker
), u AS (
  SELECT *, greatest(cpu * {wc}, direct_memory * {wd}, bandwidth_in * {wi}, bandwidth_out * {wo}) AS usage FROM wide
)
SELECT * FROM u
"""


def duckdb_aggregates(path: Path, weights=(1.0, 0.0, 1.0, 1.0)) -> dict:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads TO {os.cpu_count() or 2}")
    con.execute("CREATE TEMP TABLE u AS " + DUCK_SQL.format(glob=str(path / "day=*" / "*.parquet"),
                                                           wc=weights[0], wd=weights[1], wi=weights[2], wo=weights[3]))
    minute = con.execute("""
      WITH g AS (SELECT timestamp, count(*) AS brokers, max(rate) AS rate_max, min(rate) AS rate_min,
                        max(thr) AS thr_max, min(thr) AS thr_min, max(cpu) AS cpu_max, min(cpu) AS cpu_min,
                        avg(usage) AS usage_mean, stddev_pop(usage) AS usage_std, max(usage) AS usage_max,
                        min(usage) AS usage_min FROM u GROUP BY timestamp),
           h AS (SELECT u.timestamp, min(broker) AS hottest FROM u JOIN g USING (timestamp)
                 WHERE u.usage = g.usage_max GROUP BY u.timestamp)
      SELECT g.*, rate_max / CASE WHEN abs(rate_min) <= 1e-6 THEN 1.0 ELSE rate_min END AS rate_ratio,
             thr_max / CASE WHEN abs(thr_min) <= 1e-6 THEN 1.0 ELSE thr_min END AS thr_ratio,
             cpu_max - cpu_min AS cpu_range, usage_max - usage_min AS usage_gap, h.hottest
      FROM g JOIN h USING (timestamp) ORDER BY timestamp""").df()
    con.register("minute", minute)
    out = {"minute": minute}
    for unit in ("hour", "day"):
        out[unit] = con.execute(f"""
          SELECT date_trunc('{unit}', timestamp) AS timestamp, count(*) AS minutes, min(brokers) AS brokers_min,
                 max(brokers) AS brokers_max, avg(usage_mean) AS usage_mean,
                 avg(rate_ratio) AS rate_ratio_mean, max(rate_ratio) AS rate_ratio_max,
                 avg(thr_ratio) AS thr_ratio_mean, max(thr_ratio) AS thr_ratio_max,
                 avg(cpu_range) AS cpu_range_mean, max(cpu_range) AS cpu_range_max,
                 avg(usage_std) AS usage_std_mean, max(usage_std) AS usage_std_max,
                 avg(usage_gap) AS usage_gap_mean, max(usage_gap) AS usage_gap_max
          FROM minute GROUP BY 1 ORDER BY 1""").df()
    brokers = con.execute("""
      SELECT broker, count(*) AS minutes, avg(usage) AS usage_mean, quantile_cont(usage, 0.5) AS usage_p50,
             quantile_cont(usage, 0.9) AS usage_p90, quantile_cont(usage, 0.99) AS usage_p99, max(usage) AS usage_max,
             avg(cpu) AS cpu_mean, quantile_cont(cpu, 0.9) AS cpu_p90, max(cpu) AS cpu_max, avg(rate) AS rate_mean,
             avg(thr) AS thr_mean
      FROM u GROUP BY broker ORDER BY broker""").df()
    hot = minute.groupby("hottest").size()
    brokers["hottest_minutes"] = brokers["broker"].map(hot).fillna(0).astype("int64")
    out["brokers"] = brokers
    out["top"] = brokers.sort_values(["usage_mean", "broker"], ascending=[False, True]).head(10).assign(
        rank=range(1, 11)).reset_index(drop=True)
    con.close()
    return out


def spark_cold(path: Path) -> tuple[dict, float, float]:
    from dashboard.spark import get_spark
    from dashboard.history.aggregates import cluster_aggregates
    from dashboard.history.sparkio import read_history, to_pandas

    t0 = time.perf_counter()
    spark = get_spark()
    t1 = time.perf_counter()
    r = cluster_aggregates(read_history(spark, path))
    out = {k: to_pandas(v, [{"minute": "timestamp", "hour": "timestamp", "day": "timestamp", "brokers": "broker",
                              "top": "rank"}[k]]) for k, v in r.items() if not k.startswith("_")}
    for x in r["_cached"]:
        x.unpersist()
    return out, t1 - t0, time.perf_counter() - t1


def _one(engine: str, path: Path, out: Path) -> dict:
    """Run one engine in this (fresh) process; its frames are pickled to ``out``."""
    import pickle

    from dashboard.history.dataset import read_long, read_meta
    from dashboard.history.reference import cluster_aggregates_pd

    with PeakRSS() as m:
        t = time.perf_counter()
        info = {"rows": read_meta(path)["rows"]}
        if engine == "spark":
            res, start_s, job_s = spark_cold(path)
            info.update(start_s=start_s, job_s=job_s)
        elif engine == "duckdb":
            res = duckdb_aggregates(path)
        else:
            days = read_meta(path)["days"][:PANDAS_DAYS]
            long = read_long(path, days[0], days[-1], categorical=True)
            info.update(rows=len(long), days=len(days))
            res = cluster_aggregates_pd(long)
            del long
        info["seconds"] = time.perf_counter() - t
    info.update(peak=m.peak, start=m.start)
    with open(out, "wb") as f:
        pickle.dump(res, f)
    return info


def _run_one(engine: str, path: Path) -> tuple[dict, dict]:
    import json
    import pickle
    import subprocess

    out = BENCH_DIR / f"_bench-{engine}.pkl"
    p = subprocess.run([sys.executable, __file__, "--one", engine, str(path), str(out)], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if p.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{p.stderr[-3000:]}")
    info = json.loads(p.stdout.strip().splitlines()[-1])
    with open(out, "rb") as f:
        res = pickle.load(f)
    out.unlink()
    return info, res


def main() -> int:
    import json

    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(_one(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))))
        return 0
    os.environ.setdefault("SHEDLAB_CACHE_DIR", str(BENCH_DIR / "cache"))
    load0 = os.getloadavg()
    path, meta, gen_s = dataset()
    rows = meta["rows"]
    print(f"dataset: {path} — {rows:,} rows ({BROKERS} brokers × {DAYS} days × 1440 min × 9 metrics, "
          f"{sum(f.stat().st_size for f in path.glob('day=*/*.parquet')) / 2**20:,.0f} MiB Parquet) — "
          + (f"generated in {gen_s:.1f} s" if gen_s else "reused"))
    print(f"machine: {os.cpu_count()} cores, load average before the run {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}; "
          "each engine runs in a fresh process")
    spi, sp = _run_one("spark", path)
    dki, dk = _run_one("duckdb", path)
    pdi, _pd_res = _run_one("pandas", path)
    results = [("Spark local[*] (cold: JVM start + job)", spi,
                f"JVM start {spi['start_s']:.1f} s + job {spi['job_s']:.1f} s"),
               ("DuckDB (in-process, all cores)", dki, "same definitions in SQL"),
               (f"pandas ({pdi['days']} of {DAYS} days only)", pdi,
                f"the full {rows / 1e6:.0f} M rows would need ~{rows / pdi['rows'] * (pdi['peak'] - pdi['start']) / 2**30:.0f} GiB")]

    # cached re-open: the stored Spark result, fetched as the History page does
    from dashboard.cache import get_cache
    from dashboard.history.jobs import cache_key, load_cached, normalise_params

    params = normalise_params("aggregate", {})
    sp["_meta"] = {"engine": "spark", "job_s": round(spi["job_s"], 2)}
    get_cache().set(cache_key(path, "aggregate", params), sp)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        got = load_cached(path, "aggregate", {})
        times.append(time.perf_counter() - t)
        assert got is not None and len(got["minute"]) == len(sp["minute"])

    # the engines agree (Spark vs DuckDB)
    a = sp["minute"].sort_values("timestamp").reset_index(drop=True)
    b = dk["minute"].sort_values("timestamp").reset_index(drop=True)
    diff = max(float((a[c] - b[c]).abs().max()) for c in ("rate_ratio", "cpu_range", "usage_std", "usage_mean"))
    same_hot = bool((a["hottest"] == b["hottest"]).all())
    pb = dk["brokers"].sort_values("broker").reset_index(drop=True)
    sb = sp["brokers"].sort_values("broker").reset_index(drop=True)
    pdiff = float((pb["usage_p99"] - sb["usage_p99"]).abs().max())

    print()
    print(f"{'engine':<42} {'rows':>13} {'time':>9} {'rows/s':>12} {'peak RSS':>10}  note")
    for name, i, note in results:
        print(f"{name:<42} {i['rows']:>13,} {i['seconds']:>8.1f}s {i['rows'] / i['seconds']:>12,.0f} "
              f"{i['peak'] / 2**20:>8,.0f}MB  {note}")
    print(f"{'cached re-open (fingerprint + diskcache)':<42} {'':>13} {statistics.median(times) * 1000:>7.1f}ms "
          f"{'':>12} {'':>10}  median of 7, max {max(times) * 1000:.1f} ms")
    spark_total, duck_s = spi["seconds"], dki["seconds"]
    print()
    print(f"Spark / DuckDB time ratio: {spark_total / duck_s:.1f}x (Spark job alone, without JVM start: "
          f"{spi['job_s'] / duck_s:.1f}x)")
    ok_s, ok_c = spark_total <= 120, statistics.median(times) <= 0.2
    print(f"budgets: Spark cold {spark_total:.1f} s {'<=' if ok_s else '>'} 120 s {'OK' if ok_s else 'OVER'}; "
          f"cached {statistics.median(times) * 1000:.1f} ms {'<=' if ok_c else '>'} 200 ms {'OK' if ok_c else 'OVER'}")
    print(f"agreement Spark vs DuckDB: minute aggregates max |diff| {diff:.2e}, hottest broker "
          f"{'identical' if same_hot else 'DIFFERS'}, per-broker p99 max |diff| {pdiff:.2e}")
    load1 = os.getloadavg()
    print(f"load average after the run {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} (other work on the machine "
          "slows Spark most: it needs both cores for the whole run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
