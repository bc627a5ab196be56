"""The ingest measure of ``bench/bench_history.py``: a month of Prometheus ``query_range`` JSON for the
bench's brokers, ingested on Spark.

The JSON is made once from the bench's generated dataset (its wide layout) into
``<bench dir>/prometheus-<brokers>x<days>/``, the way a user exports it: one file per metric per day
(``pulsar_lb_cpu_usage-2026-01-01.json``), each exactly what Prometheus serves for
``/api/v1/query_range?query=<metric>&start=<day>&end=<day + 1 d - 1 min>&step=60``:
``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {labels}, "values":
[[t, "v"], ...]}]}}``. Labels as Pulsar exports them and Prometheus adds them when it scrapes: the
load-report percentages (``pulsar_lb_*_usage``, ``LoadManagerReport``) carry ``cluster``,
``broker`` = the advertised host without port and ``metric="loadBalancing"``; the rates and
throughputs (``pulsar_broker_*``) carry ``cluster`` only; both get ``job`` and ``instance`` =
``host:port`` from the scrape. Ingest lines the two shapes up by host, so the broker ids are the
generated ``host:port`` ones and the ingested rows equal the generated dataset's (checked here).

Run alone: ``python bench/history_ingest.py [--dataset DIR]`` (default: the bench dataset made by
``bench/bench_history.py``; ``--brokers 250 --days 2`` makes and takes a smaller one, for profiling), or
through ``bench/bench_history.py`` (its ``ingest`` row). Prints one JSON line: wall and CPU seconds, and
per stage the wall seconds and CPU seconds by process kind (driver, Spark JVM, Python workers).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: dataset metric → the metric Pulsar exports (dashboard.history.ingest.METRIC_ALIASES, inverted)
PROM_NAMES = {"cpu": "pulsar_lb_cpu_usage", "memory": "pulsar_lb_memory_usage",
              "direct_memory": "pulsar_lb_directMemory_usage", "bandwidth_in": "pulsar_lb_bandwidth_in_usage",
              "bandwidth_out": "pulsar_lb_bandwidth_out_usage", "msg_rate_in": "pulsar_broker_rate_in",
              "msg_rate_out": "pulsar_broker_rate_out", "msg_throughput_in": "pulsar_broker_throughput_in",
              "msg_throughput_out": "pulsar_broker_throughput_out"}
CLUSTER = "bench"


def _labels(metric: str, broker: str) -> dict:
    host = broker.rsplit(":", 1)[0]
    lab = {"__name__": PROM_NAMES[metric], "cluster": CLUSTER}
    if metric in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out"):
        lab.update(broker=host, metric="loadBalancing")
    lab.update(instance=broker, job="broker")
    return lab


def _go_float(v: float) -> str:
    """Prometheus writes sample values with Go's strconv.FormatFloat(v, 'f', -1, 64) for ordinary
    magnitudes; Python's shortest repr reads back to the same float64."""
    return repr(float(v))


def export_day(dataset: Path, day: str, out_dir: Path) -> int:
    """The query_range files of one day (one per metric); returns the number of values written."""
    import numpy as np
    import orjson

    from dashboard.history.dataset import BROKER_METRICS
    from dashboard.history.layout import read_wide

    w = read_wide(dataset, day, day)
    ts = (w["timestamp"].to_numpy().astype("datetime64[s]").astype(np.int64))
    brokers = w["broker"].to_numpy(dtype=object)
    order = np.argsort(brokers.astype(str), kind="stable")
    b_sorted = brokers[order]
    cut = np.flatnonzero(b_sorted[1:] != b_sorted[:-1]) + 1
    groups = np.split(order, cut)
    n = 0
    for m in BROKER_METRICS:
        vals = w[m].to_numpy()
        result = []
        for g in groups:
            t, v = ts[g].tolist(), [_go_float(x) for x in vals[g].tolist()]
            result.append({"metric": _labels(m, str(brokers[g[0]])), "values": [list(p) for p in zip(t, v)]})
            n += len(g)
        body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        (out_dir / f"{PROM_NAMES[m]}-{day}.json").write_bytes(orjson.dumps(body))
    return n


def prometheus_export(dataset: Path, out_dir: Path, n_days: int = 0) -> tuple[list[Path], int, float]:
    """Make (once) the query_range files of ``dataset`` (of its first ``n_days`` days when given);
    returns (files, values, seconds spent)."""
    from dashboard.history.dataset import read_meta

    days = read_meta(dataset)["days"]
    days = days[:n_days] if n_days > 0 else days
    done = out_dir / "_complete"
    t = time.perf_counter()
    if not done.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        n = sum(export_day(dataset, d, out_dir) for d in days)
        done.write_text(str(n))
    files = sorted(out_dir.glob("pulsar_*.json"))
    return files, int(done.read_text()), time.perf_counter() - t


def _tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and its children (the Spark JVM, its Python workers):
    with the machine's load, the share of the time that was this job's own work."""
    return sum(_tree_cpu_split().values())


def _tree_cpu_split() -> dict:
    """:func:`_tree_cpu_seconds` by kind of process: ``driver`` (this one), ``jvm`` (Spark's JVM: reading,
    joins, shuffles, Arrow batches) and ``python`` (the executors' Python workers, including the
    workers that already exited, counted by the daemon that forked them)."""
    import psutil

    me = psutil.Process()
    c = me.cpu_times()
    got = {"driver": c.user + c.system, "jvm": 0.0, "python": 0.0}
    for p in me.children(recursive=True):
        try:
            c, name = p.cpu_times(), p.name()
        except psutil.Error:
            continue
        kind = "jvm" if "java" in name else "python"
        got[kind] += c.user + c.system + (c.children_user + c.children_system if kind == "python" else 0.0)
    return got


def ingest_measure(dataset: Path, bench_dir: Path, n_days: int = 0) -> dict:
    """Ingest the Prometheus JSON of ``dataset`` (of its first ``n_days`` days when given: the JSON is
    about twice the dataset's size, and 90 days of 1,000 brokers do not fit beside it on a 64 GB disk)
    on Spark (a fresh process: JVM start included); check the result against the generated dataset;
    the numbers for the bench's row."""
    import shutil

    import numpy as np

    from dashboard.history.ingest_spark import ingest_spark
    from dashboard.history.layout import read_wide

    from dashboard.history.dataset import read_meta

    days = read_meta(dataset)["days"]
    days = days[:n_days] if 0 < n_days < len(days) else days
    part = f"-first{len(days)}" if len(days) < len(read_meta(dataset)["days"]) else ""
    name = dataset.name.replace("history-", "prometheus-") + part
    files, values, export_s = prometheus_export(dataset, bench_dir / name, len(days))
    size = sum(f.stat().st_size for f in files)
    out = bench_dir / f"ingested-{dataset.name.replace('history-', '')}{part}"
    if out.exists():
        shutil.rmtree(out)
    stages, stage_cpu = [], []
    t0 = time.perf_counter()
    last = [t0, _tree_cpu_split()]

    def progress(done, total, text):
        if str(text).startswith("stage"):
            now, cpu = time.perf_counter(), _tree_cpu_split()
            stages.append((round(now - t0, 1), text))
            # wall and CPU seconds spent since the previous stage line, by kind of process
            stage_cpu.append({"until": text, "wall_s": round(now - last[0], 1),
                              **{k: round(cpu[k] - last[1][k], 1) for k in cpu}})
            last[:] = [now, cpu]

    meta = ingest_spark(files, out, progress=progress)
    secs = time.perf_counter() - t0
    cpu_s = _tree_cpu_seconds()
    # the ingested broker-minute rows equal the generated ones (first and last day: a full check costs minutes)
    # (pandas reads decimal text to within an ulp, not always to the nearest double: hence the tolerance)
    same, err = True, 0.0
    for d in sorted({days[0], days[-1]}):
        a, b = read_wide(dataset, d, d), read_wide(out, d, d)
        same &= a.shape == b.shape and bool((a["broker"].to_numpy() == b["broker"].to_numpy()).all()) and bool(
            (a["timestamp"].to_numpy() == b["timestamp"].to_numpy()).all())
        if same:
            for c in a.columns[2:]:
                x, y = a[c].to_numpy(), b[c].to_numpy()
                err = max(err, float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-300), initial=0.0)))
    return {"seconds": secs, "cpu_s": cpu_s, "days": len(days), "values": values, "values_per_s": round(values / secs), "rows": meta["rows"], "files": len(files), "bytes": size,
            "export_s": export_s, "stages": stages, "stage_cpu": stage_cpu, "same_as_generated": same and err <= 1e-15, "max_rel_err": err,
            "report": {
                k: v for k, v in meta["report"].items() if k not in ("inputs", "unknown_metrics")}}


def main() -> int:
    import argparse
    import json

    from bench_history import BENCH_DIR, BROKERS, DAYS, PeakRSS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", help="the generated dataset (default: the bench's, BROKERS x DAYS)")
    ap.add_argument("--brokers", type=int, help="instead of --dataset: the bench's generated dataset of this many "
                    "brokers (made once, as bench_history.py makes it), e.g. --brokers 250 --days 2 for a quick profile")
    ap.add_argument("--days", type=int, help="with --brokers: its number of days (default: the bench's)")
    ap.add_argument("--ingest-days", type=int, default=0, help="export and ingest only the first N days (default: all)")
    a = ap.parse_args()
    os.environ.setdefault("LB_SPARK_MASTER", "local[*]")
    if a.brokers:
        import bench_history

        bench_history.BROKERS, bench_history.DAYS = a.brokers, a.days or DAYS
        ds = bench_history.dataset()[0]
    else:
        ds = Path(a.dataset) if a.dataset else BENCH_DIR / f"history-{BROKERS}x{DAYS}"
    with PeakRSS() as m:
        got = ingest_measure(ds, ds.parent, a.ingest_days)
    got["peak"] = m.peak
    print(json.dumps(got, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
