"""Run a history job with caching: the one entry point of the CLI and the History page.

``run_job(job, dataset, params)`` returns small pandas frames. Results are cached twice:

* in the app's diskcache (:func:`dashboard.cache.get_cache`) under
  ``history:<dataset fingerprint>:<job>:<params hash>`` — opening the same view again is a cache
  read (milliseconds), across processes and restarts;
* as small Parquet files under ``<cache dir>/results/<dataset hash>-<job>-<params hash>/`` (with
  ``meta.json`` naming the fingerprint), written by the command line for cron and big datasets; the app
  reads them when the fingerprint still matches. They live in the app's own cache directory (``0700``,
  never beside the dataset, which may be read-only or shared), capped at ``SHEDLAB_RESULTS_MAX_MB``
  (default 1024) with the least recently used result folders evicted first (:func:`evict_results`).
  Folders under ``DATASET/_results/`` that older versions wrote are still read.

The fingerprint (:func:`.dataset.fingerprint`) changes whenever a data file does, so stale results
are never served. Jobs: ``aggregate``, ``backtest``, ``sweep``, ``bundles``. Engines: ``spark``
(always possible), ``pandas`` (in-process; the reference implementation), ``auto`` (pandas when the
range holds at most :data:`PANDAS_MAX_ROWS` rows, else Spark).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from engine.config import LoadBalancerConfig, release_defaults, to_broker_conf
from engine.errors import InputError, UsageError

from .dataset import RATE_METRICS, RESULTS_DIR, fingerprint, read_long, read_meta, wide_brokers, wide_bundles

__all__ = ["run_job", "normalise_params", "cache_key", "load_cached", "JOBS", "PANDAS_MAX_ROWS", "config_from_params",
           "estimate_rows", "DEFAULT_STRATEGY"]

JOBS = ("aggregate", "backtest", "sweep", "bundles")
#: the strategy a backtest or sweep runs when none is named (data: the History page's and the command
#: line's default choice, the strategy the shipped samples tune; nothing else depends on which it is)
DEFAULT_STRATEGY = "AvgShedder"
PANDAS_MAX_ROWS = 3_000_000
#: at most this many Spark jobs (time segments) for one backtest run with a progress bar (the page)
SEGMENTS_MAX = 8
CACHE_EXPIRE = 30 * 86400


def config_from_params(params: dict) -> LoadBalancerConfig:
    """The config of a job: the defaults of the release it decides as (``params["set"]["pulsarVersion"]``,
    else the default release) plus the other keys of ``params["set"]`` (``broker.conf`` key → value)."""
    values = {k: str(v) for k, v in (params.get("set") or {}).items()}
    base = release_defaults(values.pop("pulsarVersion", None) or None)
    return base.with_values(values) if values else base


def normalise_params(job: str, params: dict | None) -> dict:
    """Validated params with defaults filled in (so equal requests hash equally)."""
    if job not in JOBS:
        raise UsageError(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    p = dict(params or {})
    out = {"start": p.get("start") or None, "end": p.get("end") or None}
    if job == "aggregate":
        w = p.get("weights")
        out["weights"] = [float(x) for x in (w if w is not None else LoadBalancerConfig().weights)]
        if len(out["weights"]) != 4:
            raise UsageError("weights are four numbers: cpu, directMemory, bandwidthIn, bandwidthOut")
        out["quantiles"] = [float(q) for q in p.get("quantiles") or (0.5, 0.9, 0.99)]
        out["top_n"] = int(p.get("top_n") or 10)
    elif job == "bundles":
        out["top_n"] = int(p.get("top_n") or 20)
    else:
        from engine.backtest import backtest_spec

        out["strategy"] = backtest_spec(p.get("strategy") or DEFAULT_STRATEGY).name
        cfg = config_from_params(p)
        # the changed keys only, in broker.conf form: stable and readable
        out["set"] = dict(line.split("=", 1) for line in to_broker_conf(cfg).splitlines() if "=" in line)
        if cfg.pulsarVersion != LoadBalancerConfig().pulsarVersion:  # the release is no broker.conf line
            out["set"]["pulsarVersion"] = cfg.pulsarVersion
        out["bundles"] = p.get("bundles") or "auto"
        out["synthetic_bundles"] = int(p.get("synthetic_bundles") or 8)
        if int(p.get("chunks") or 1) > 1:  # Spark only: time chunks in parallel (same events; see backtest.run_chunks)
            out["chunks"] = int(p["chunks"])
        if job == "sweep":
            from .sweep import grid_cells

            for k in ("x_key", "y_key"):
                if not p.get(k):
                    raise UsageError(f"a sweep needs {k} (a broker.conf key)")
            if int(p.get("groups") or 0) > 0:  # Spark: cell groups, one task each (default: the executor cores)
                out["groups"] = int(p["groups"])
            out["x_key"], out["y_key"] = p["x_key"], p["y_key"]
            out["x_values"] = [float(v) for v in p.get("x_values") or []]
            out["y_values"] = [float(v) for v in p.get("y_values") or []]
            try:
                grid_cells(out["x_key"], out["x_values"], out["y_key"], out["y_values"])
            except ValueError as exc:
                raise UsageError(str(exc)) from None
    return out


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cache_key(dataset, job: str, params: dict) -> str:
    return f"history:{fingerprint(dataset)}:{job}:{_hash(params)}"


#: size cap of the result folders (bytes)
RESULTS_MAX_BYTES = int(float(os.getenv("SHEDLAB_RESULTS_MAX_MB", "1024")) * 1024 * 1024)


def results_root() -> Path:
    """``<cache dir>/results`` (created ``0700``; refused when others may write it)."""
    from dashboard.cache import cache_dir, private_dir

    return private_dir(cache_dir() / "results")


def _results_path(dataset, job, params) -> Path:
    ds = hashlib.sha256(str(Path(dataset).resolve()).encode()).hexdigest()[:16]
    return results_root() / f"{ds}-{job}-{_hash(params)}"


def _legacy_results_path(dataset, job, params) -> Path:
    return Path(dataset) / RESULTS_DIR / f"{job}-{_hash(params)}"


def _dir_bytes(d: Path) -> int:
    n = 0
    for f in d.rglob("*"):
        try:
            n += f.lstat().st_size
        except OSError:
            pass
    return n


def evict_results(keep: Path | None = None, limit: int | None = None) -> int:
    """Delete the least recently used result folders (by mtime; a read touches it) until they take at
    most ``limit`` bytes (default :data:`RESULTS_MAX_BYTES`); ``keep`` is never deleted. Returns how many
    folders went."""
    limit = RESULTS_MAX_BYTES if limit is None else limit
    root = results_root()
    dirs = []
    for d in root.iterdir():
        try:
            if d.is_dir() and not d.is_symlink():
                dirs.append((d.stat().st_mtime, d, _dir_bytes(d)))
        except OSError:
            continue
    total = sum(b for _, _, b in dirs)
    gone = 0
    for _, d, b in sorted(dirs, key=lambda x: x[0]):
        if total <= limit:
            break
        if keep is not None and d == keep:
            continue
        shutil.rmtree(d, ignore_errors=True)
        total -= b
        gone += 1
    return gone


def load_cached(dataset, job: str, params: dict):
    """The cached result of a job (diskcache, then the result files), or ``None``. Cheap."""
    from dashboard.cache import get_cache

    params = normalise_params(job, params)
    key = cache_key(dataset, job, params)
    got = get_cache().get(key)
    if got is not None:
        return got
    d = _results_path(dataset, job, params)
    if not (d / "meta.json").is_file():
        d = _legacy_results_path(dataset, job, params)
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("fingerprint") != fingerprint(dataset):
        return None
    try:
        res = {f.stem: pd.read_parquet(f) for f in sorted(d.glob("*.parquet"))}
    except (OSError, ValueError):
        return None
    res["_meta"] = meta.get("info", {})
    try:
        os.utime(d)  # least recently used goes first (evict_results)
    except OSError:
        pass
    get_cache().set(key, res, expire=CACHE_EXPIRE)
    return res


def write_results(dataset, job: str, params: dict, res: dict) -> Path:
    """Write a result as small Parquet files the app reads (the command line does this), under the
    app's cache directory; older result folders are evicted beyond the size cap."""
    d = _results_path(dataset, job, params)
    d.mkdir(mode=0o700, exist_ok=True)
    for name, frame in res.items():
        if not name.startswith("_") and isinstance(frame, pd.DataFrame):
            frame.to_parquet(d / f"{name}.parquet", index=False)
    (d / "meta.json").write_text(json.dumps({"fingerprint": fingerprint(dataset), "job": job, "params": params,
                                            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                            "info": res.get("_meta", {})}, indent=1, default=str))
    os.utime(d)
    evict_results(keep=d)
    return d


def days_in_range(meta: dict, start=None, end=None) -> list:
    """The dataset's days (``YYYY-MM-DD``, from the metadata) that ``[start, end]`` touches."""
    from .dataset import parse_time

    t0, t1 = parse_time(start), parse_time(end, end=True)
    return [d for d in meta.get("days") or [] if (t0 is None or pd.Timestamp(d) >= t0.normalize())
            and (t1 is None or pd.Timestamp(d) <= t1.normalize())]


def estimate_rows(dataset, start=None, end=None, meta: dict | None = None) -> int:
    """Rows in the time range, from the metadata (whole days; cheap)."""
    meta = meta if meta is not None else read_meta(dataset)
    days = meta.get("days") or []
    if not days:
        return 0
    return int(meta.get("rows", 0) * len(days_in_range(meta, start, end)) / len(days))


def _pandas(job, dataset, p, progress):
    from . import reference

    from .layout import has_wide, read_wide

    if job == "bundles":
        return reference.bundle_distribution_pd(read_long(dataset, p["start"], p["end"], categorical=True), p["top_n"])
    if has_wide(dataset):  # the broker-minute table as stored; long rows only for bundle metrics
        bw = read_wide(dataset, p["start"], p["end"])
        long = (read_long(dataset, p["start"], p["end"], bundles=True, categorical=True)
                if job != "aggregate" and p["bundles"] != "synthetic" and read_meta(dataset).get("has_bundles")
                else None)
    else:
        long = read_long(dataset, p["start"], p["end"], categorical=True)
        bw = wide_brokers(long)
    if job == "aggregate":
        return reference.cluster_aggregates_pd(long, p["weights"], p["quantiles"], p["top_n"], wide=bw)
    from engine.backtest import backtest_frames as replay, typed_value

    cfg = config_from_params(p)
    no_rows = pd.DataFrame({"bundle": pd.Series(dtype=object), "metric": pd.Series(dtype=object)})
    kw = None if p["bundles"] == "synthetic" else wide_bundles(long if long is not None else no_rows)
    if kw is not None and kw.empty and p["bundles"] != "real":
        kw = None
    if job == "backtest":
        ev = replay(bw, kw, p["strategy"], cfg, synthetic_bundles=p["synthetic_bundles"],
                    progress=(lambda i, n: progress(i, n, f"minute {i}/{n}")) if progress else None)
        ev.insert(0, "cell", 0)
        return {"events": ev, **reference.count_events_pd(ev)}
    from engine.backtest import backtest_set_frames

    from .sweep import grid_cells

    # every cell in one pass over the history (each minute's view built once for the cells due then)
    cells = grid_cells(p["x_key"], p["x_values"], p["y_key"], p["y_values"])
    cfgs = [cfg.with_values({p["x_key"]: typed_value(p["x_key"], x), p["y_key"]: typed_value(p["y_key"], y)})
            for _c, x, y in cells]
    evs = backtest_set_frames(bw, kw, p["strategy"], cfgs, synthetic_bundles=p["synthetic_bundles"], state_limit=0,
                              progress=(lambda i, n: progress(i, n, f"{len(cells)} cells: minute {i}/{n}"))
                              if progress else None)
    rows = [{"cell": c, "x": x, "y": y, "events": len(ev), "bundles": int(ev["n_bundles"].sum()),
             "minutes": int(ev["timestamp"].nunique()),
             "days_with_events": int(ev["timestamp"].dt.strftime("%Y-%m-%d").nunique())}
            for (c, x, y), ev in zip(cells, evs)]
    return {"cells": pd.DataFrame(rows)}


def _spark(job, dataset, p, progress, meta: dict | None = None):
    """A job on the process's (reused) session: the broker-minute table from the wide layout when the
    dataset has one (only the range's days and the needed columns are read), the long rows only for
    bundle metrics; per-job SQL settings from the data size (:func:`dashboard.spark.tune_for`); every
    Spark job of it in one job group (the page's Cancel stops them, :func:`dashboard.spark.cancel_jobs`)."""
    from dashboard.spark import StageProgress, job_group, timed_start, tune_for

    from .sparkio import read_broker_minutes, read_bundle_rows, read_history, to_pandas, wide_files

    spark, start_s = timed_start(progress)
    rows = estimate_rows(dataset, p["start"], p["end"], meta=meta)
    groups = None
    if job in ("backtest", "sweep"):  # Python groups: chunks, cells × chunks (see backtest.run_chunks)
        from .sweep import grid_cells

        n = len(grid_cells(p["x_key"], p["x_values"], p["y_key"], p["y_values"])) if job == "sweep" else 1
        try:
            cores = int(spark.sparkContext.defaultParallelism)
        except Exception:  # noqa: BLE001 - Spark Connect: no sparkContext
            cores = 2
        groups = max(n, 4 * cores)
    tuned = tune_for(spark, rows // 9 if job != "bundles" else rows, groups=groups)
    report = (lambda d, t, txt: progress(d, t, txt)) if progress else (lambda *a: None)
    t = time.perf_counter()
    has_b = bool((meta or read_meta(dataset)).get("has_bundles"))
    info = {}
    with job_group(spark, job, f"shedlab {job} {str(dataset).rstrip('/').rsplit('/', 1)[-1]}"), \
            StageProgress(spark, report if progress else None):
        if job == "aggregate":
            from . import reference
            from .aggregates import cluster_aggregates

            wide = read_broker_minutes(spark, dataset, p["start"], p["end"],
                                       ["cpu", "direct_memory", "bandwidth_in", "bandwidth_out"] + list(RATE_METRICS))
            r = cluster_aggregates(wide, p["weights"], p["quantiles"], p["top_n"])
            # the two tables Spark reduces the history to; the roll-ups of the (small) minute table and
            # the top-N of the broker table are the reference's own functions on them (no extra Spark jobs)
            minute = to_pandas(r["minute"], ["timestamp"])
            brokers = to_pandas(r["brokers"], ["broker"])
            out = {"minute": minute, "hour": reference.rollup_pd(minute, "hour"),
                   "day": reference.rollup_pd(minute, "day"), "brokers": brokers,
                   "top": reference.top_hottest_pd(brokers, p["top_n"])}
        elif job == "bundles":
            from .bundles import bundle_distribution

            r = bundle_distribution(read_history(spark, dataset, p["start"], p["end"]), p["top_n"])
            out = {"hour": to_pandas(r["hour"], ["timestamp"]), "top": to_pandas(r["top"], ["rank"])}
        else:
            from .backtest import stream_batches

            real_b = has_b and p["bundles"] != "synthetic"
            # a sweep over a local wide layout with synthetic bundles: its tasks read the day files themselves
            files = (wide_files(dataset, p["start"], p["end"])
                     if job == "sweep" and not real_b and int(p.get("chunks") or 0) <= 1 else None)
            with stream_batches(spark):  # the streamed backtests read bigger Arrow batches (fewer cuts)
                if files is None:
                    wide = read_broker_minutes(spark, dataset, p["start"], p["end"])
                    bdf = read_bundle_rows(spark, dataset, p["start"], p["end"]) if real_b else None
                if job == "backtest":
                    from .backtest import backtest

                    # with a progress bar to feed (the page), the stream runs as one job per few days
                    days = len(days_in_range(meta or read_meta(dataset), p["start"], p["end"]))
                    seg = min(SEGMENTS_MAX, days) if progress is not None and days > 1 else None
                    r = backtest(wide, p["strategy"], config_from_params(p), bundles=p["bundles"],
                                 synthetic_bundles=p["synthetic_bundles"], bundle_df=bdf, chunks=p.get("chunks"),
                                 segments=seg, progress=report if seg else None)
                    info = {k: v for k, v in r.get("_info", {}).items() if not k.startswith("_")}
                    r["_persisted"] = r.pop("_info", {}).get("_persisted", [])
                    out = {"events": to_pandas(r["events"], ["timestamp", "broker"]),
                           "per_day": to_pandas(r["per_day"], ["day"]),
                           "per_pair": to_pandas(r["per_pair"], ["broker", "partner"])}
                else:
                    from .sweep import sweep, sweep_files

                    # with a progress bar to feed (the page), the grouped stream runs as one job per few days
                    days = len(days_in_range(meta or read_meta(dataset), p["start"], p["end"]))
                    seg = min(SEGMENTS_MAX, days) if progress is not None and days > 1 else None
                    grid = (p["strategy"], config_from_params(p), p["x_key"], p["x_values"], p["y_key"], p["y_values"])
                    if files is not None:
                        cells = sweep_files(spark, files, *grid, synthetic_bundles=p["synthetic_bundles"],
                                            groups=p.get("groups"), segments=seg, progress=report if seg else None)
                    else:
                        cells = sweep(wide, *grid, bundles=p["bundles"], synthetic_bundles=p["synthetic_bundles"],
                                      bundle_df=bdf, chunks=p.get("chunks"), groups=p.get("groups"), segments=seg,
                                      progress=report if seg else None)
                    r = {"cells": cells}
                    out = {"cells": to_pandas(r["cells"], ["cell"])}
    for v in list(r.values()):
        for x in (v if isinstance(v, list) else [v]):
            if hasattr(x, "unpersist"):
                x.unpersist()
    spark.catalog.clearCache()  # what the job cached (pivots, chunk results) is not needed by the next job
    out["_meta"] = {"engine": "spark", "spark_start_s": round(start_s, 2), "job_s": round(time.perf_counter() - t, 2),
                    "spark": {k: v for k, v in tuned.items()}, **info}
    return out


def run_job(job: str, dataset, params: dict | None = None, *, engine: str = "auto", progress=None,
            use_cache: bool = True, write: bool = False, results: str | None = None) -> dict:
    """Run (or fetch from the cache) one job on a dataset; returns ``{name: pandas.DataFrame, "_meta": {...}}``.

    ``progress(done, total, text)`` is called while it runs. ``write=True`` also writes the result
    files under the dataset (the command line does).

    ``dataset`` may be a Hadoop-compatible URI (``file://``, ``hdfs://``, ``s3a://``; command line
    and operator-configured roots only): the job runs on Spark, the cache key's fingerprint comes
    from a listing through Spark, and with ``write`` the result goes to ``results`` (a URI; default
    ``DATASET/_results/<job>-<hash>``) as Parquet directories written by Spark (:mod:`.uri`).
    """
    from dashboard.cache import get_cache

    from .uri import is_uri, local_path

    if is_uri(dataset):
        if local_path(dataset) is not None and engine == "pandas":
            dataset = local_path(dataset)
        elif engine == "pandas":
            raise UsageError("the pandas engine reads local datasets only; use --engine spark for a URI")
        else:
            return _run_uri(job, str(dataset), params, progress=progress, use_cache=use_cache, write=write,
                            results=results)
    dataset = Path(dataset)
    read_meta(dataset)
    p = normalise_params(job, params)
    if use_cache:
        got = load_cached(dataset, job, p)
        if got is not None:
            if write:
                write_results(dataset, job, p, got)
            return got
    if engine not in ("auto", "spark", "pandas"):
        raise UsageError(f"engine must be auto, spark or pandas, got {engine!r}")
    if engine == "auto":
        engine = "pandas" if estimate_rows(dataset, p["start"], p["end"]) <= PANDAS_MAX_ROWS else "spark"
    t = time.perf_counter()
    if engine == "pandas":
        res = _pandas(job, dataset, p, progress)
        res["_meta"] = {"engine": "pandas", "job_s": round(time.perf_counter() - t, 2)}
    else:
        res = _spark(job, dataset, p, progress)
    res["_meta"].update({"job": job, "params": p, "fingerprint": fingerprint(dataset)})
    get_cache().set(cache_key(dataset, job, p), res, expire=CACHE_EXPIRE)
    if write:
        write_results(dataset, job, p, res)
    return res


def _run_uri(job, uri, params, *, progress, use_cache, write, results):
    from dashboard.cache import get_cache
    from dashboard.spark import timed_start

    from .uri import fingerprint_uri, join, read_meta_uri, write_results_uri

    spark, _s = timed_start(progress)
    meta = read_meta_uri(spark, uri)
    p = normalise_params(job, params)
    fp = fingerprint_uri(spark, uri)
    key = f"history:{fp}:{job}:{_hash(p)}"
    res = get_cache().get(key) if use_cache else None
    if res is None:
        res = _spark(job, uri, p, progress, meta=meta)
        res["_meta"].update({"job": job, "params": p, "fingerprint": fp, "dataset": uri})
        get_cache().set(key, res, expire=CACHE_EXPIRE)
    if write:
        out = results or join(uri, RESULTS_DIR, f"{job}-{_hash(p)}")
        write_results_uri(spark, out, res, {"fingerprint": fp, "job": job, "params": p,
                                            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                                            "info": res.get("_meta", {})})
        res["_meta"]["results"] = out
    return res


def describe_error(exc: Exception) -> str:
    """One line for the UI / CLI from any job failure (never a traceback)."""
    if isinstance(exc, (InputError, UsageError)):
        return str(exc)
    from dashboard.spark import SparkUnavailable

    if isinstance(exc, SparkUnavailable):
        return str(exc)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{type(exc).__name__}: {first[:300]}"
