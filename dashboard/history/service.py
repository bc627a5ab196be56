"""What the History page needs, as plain functions (the callbacks stay thin and are unit-tested).

No Dash imports here. Nothing here starts Spark: :func:`run_page_job` is only called inside a
background-callback process (a fork of the web process that never started a JVM), and stops its
session when done.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from engine.config import LoadBalancerConfig, key_info
from engine.errors import InputError, UsageError

from .dataset import SAMPLE_NAME, dataset_by_name, list_datasets, read_meta, sample_dataset
from .jobs import DEFAULT_STRATEGY, PANDAS_MAX_ROWS, describe_error, estimate_rows, load_cached, normalise_params, run_job

__all__ = ["dataset_options", "dataset_info", "parse_weights", "parse_overrides", "parse_values", "job_params",
           "aggregates_for_view", "run_page_job", "sweep_defaults", "sweep_keys", "bundles_for_view",
           "event_at", "job_result", "DEFAULT_WEIGHTS", "dataset_path", "WEIGHT_KEYS"]

#: the page names datasets, never paths: every value from the browser goes through this
#: (:func:`.dataset.dataset_by_name`: a name under SHEDLAB_HISTORY_ROOTS, checked; "unknown dataset" else)
dataset_path = dataset_by_name

DEFAULT_WEIGHTS = "1, 0, 1, 1"
def dataset_options() -> list[dict]:
    """Dropdown options: the sample (created on first use) and every dataset under the history roots,
    valued by name (the directory name; the browser never sees or sends a server path)."""
    sample_dataset()
    out = []
    for d in list_datasets():
        label = f"{d['name']} — {d['rows']:,} rows, {(d['start'] or '')[:10]} … {(d['end'] or '')[:10]}"
        out.append({"label": label, "value": d["id"]})
    out.sort(key=lambda o: (o["value"] != SAMPLE_NAME, o["label"]))
    return out


def dataset_info(path) -> dict:
    """``{"start", "end", "rows", "brokers", "has_bundles", "text", "incidents"}`` for the page header."""
    meta = read_meta(dataset_by_name(path))
    start, end = (meta.get("start") or "")[:10], (meta.get("end") or "")[:10]
    rep = meta.get("report") or {}
    dropped = {k: v for k, v in rep.items() if k.startswith("dropped") and v}
    parts = [f"{meta.get('rows', 0):,} metric rows", f"{len(meta.get('brokers', []))} brokers",
             f"{start} … {end} (UTC)", "bundle metrics" if meta.get("has_bundles") else "no bundle metrics"]
    if dropped:
        parts.append("ingestion dropped " + ", ".join(f"{v:,} {k.replace('dropped_', '').replace('_', ' ')}"
                                                      for k, v in dropped.items()))
    if rep.get("gaps_filled"):
        parts.append(f"{rep['gaps_filled']:,} gap minutes filled")
    inc = (meta.get("params") or {}).get("incident_list") or []
    return {"start": start, "end": end, "rows": meta.get("rows", 0), "brokers": meta.get("brokers", []),
            "has_bundles": bool(meta.get("has_bundles")), "text": " · ".join(parts), "incidents": inc}


#: the modular load manager's resource weights, in the order of ``LoadBalancerConfig.weights`` (PIP-357 spelling)
WEIGHT_KEYS = ("loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
               "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")


def parse_weights(text) -> list[float]:
    """The four resource weights (cpu, directMemory, bandwidthIn, bandwidthOut) of ``{broker.conf key: value}``
    (the page's named controls; a key left empty or out is at Pulsar's default) or of text ``"1, 0, 1, 1"``
    (the command line)."""
    if isinstance(text, Mapping):
        return [_weight(k, text.get(k)) for k in WEIGHT_KEYS]
    if text is None or str(text).strip() == "":
        return [float(x) for x in LoadBalancerConfig().weights]
    try:
        w = [float(x) for x in str(text).replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"weights are four numbers (cpu, directMemory, bandwidthIn, bandwidthOut), got {text!r}") from None
    if len(w) != 4 or any(x < 0 for x in w):
        raise UsageError(f"weights are four non-negative numbers (cpu, directMemory, bandwidthIn, bandwidthOut), got {text!r}")
    return w


def _weight(key: str, value) -> float:
    if value is None or (isinstance(value, str) and not value.strip()):
        return float(key_info(key)["default"])
    try:
        w = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        w = math.nan
    if not (math.isfinite(w) and w >= 0):
        raise UsageError(f"{key}: a weight is a non-negative number, got {value!r}")
    return w


def parse_overrides(text) -> dict:
    """``KEY=VALUE`` lines (``broker.conf`` style, ``#`` comments) → validated ``{key: value}``."""
    out = {}
    for i, line in enumerate(str(text or "").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            raise UsageError(f"line {i}: expected KEY=VALUE, got {line!r}")
        k, v = (x.strip() for x in line.split("=", 1))
        out[k] = v
    LoadBalancerConfig().with_values(out)  # raises InputError naming a bad key or value
    return out


def parse_values(text) -> list[float]:
    try:
        vals = [float(x) for x in str(text or "").replace(";", ",").split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"grid values are numbers separated by commas, got {text!r}") from None
    if not vals:
        raise UsageError("a grid needs at least one value per key")
    if len(vals) > 12:
        raise UsageError("at most 12 values per key (the sweep runs one backtest per cell)")
    return vals


def sweep_keys(strategy: str) -> list[str]:
    """The keys a sweep of ``strategy`` offers: its spec's default grid keys first, then the other
    numeric ``broker.conf`` keys it reads, then the driver's (shedding interval, grace period)."""
    from engine.backtest import backtest_spec, sweep_keys as keys_of

    return keys_of(backtest_spec(strategy))


def sweep_defaults(strategy: str | None) -> tuple[list[dict], str, str, str, str]:
    """Key options and default (x key, x values, y key, y values) for a strategy: the grid of its spec
    (``spec.sweep_grid``; an unknown or unsupported name gets the default strategy's)."""
    from engine.backtest import backtest_spec

    try:
        spec = backtest_spec(strategy or DEFAULT_STRATEGY)
    except (UsageError, InputError):
        spec = backtest_spec(DEFAULT_STRATEGY)
    from engine.backtest import sweep_keys as keys_of

    opts = [{"label": k, "value": k} for k in keys_of(spec)]
    (xk, xv), (yk, yv) = spec.sweep_grid_text()[:2]
    return opts, xk, xv, yk, yv


def job_params(job: str, *, start=None, end=None, weights=None, strategy=None, overrides=None, bundles=None,
               x_key=None, x_values=None, y_key=None, y_values=None) -> dict:
    """The page's controls → validated job params (raises InputError/UsageError with a clear message)."""
    p = {"start": start or None, "end": end or None}
    if job == "aggregate":
        p["weights"] = parse_weights(weights)
    elif job in ("backtest", "sweep"):
        p.update(strategy=strategy or DEFAULT_STRATEGY, set=parse_overrides(overrides), bundles=bundles or "auto")
        if job == "sweep":
            p.update(x_key=x_key, x_values=parse_values(x_values), y_key=y_key, y_values=parse_values(y_values))
    return normalise_params(job, p)


def aggregates_for_view(path, start=None, end=None, weights=None) -> tuple[dict | None, str]:
    """The aggregates of a dataset range for display: ``(result or None, note)``.

    Cached results come back at once; small ranges (≤ :data:`PANDAS_MAX_ROWS` rows) are computed
    in-process with pandas and cached; bigger ones wait for "Compute with Spark" (or the CLI).
    """
    ds = dataset_by_name(path)
    p = job_params("aggregate", start=start, end=end, weights=weights)
    got = load_cached(ds, "aggregate", p)
    if got is not None:
        m = got.get("_meta", {})
        return got, f"cached result ({m.get('engine', '?')}, computed in {m.get('job_s', '?')} s)"
    rows = estimate_rows(ds, p["start"], p["end"])
    if rows > PANDAS_MAX_ROWS:
        return None, (f"{rows:,} rows in this range: too many to aggregate in the web process. Press "
                      "\"Compute with Spark\" (a background job) or run "
                      f"`python -m dashboard.history aggregate {ds}`.")
    res = run_job("aggregate", ds, p, engine="pandas")
    return res, f"computed now with pandas in {res['_meta'].get('job_s')} s ({rows:,} rows) and cached"


def bundles_for_view(path, start=None, end=None) -> tuple[dict | None, str]:
    """The per-bundle distribution for display (same rules as :func:`aggregates_for_view`)."""
    ds = dataset_by_name(path)
    if not read_meta(ds).get("has_bundles"):
        return None, "no bundle metrics in this dataset (pulsar_bundle_* needs exposeBundlesMetricsInPrometheus=true)"
    p = job_params("bundles", start=start, end=end)
    got = load_cached(ds, "bundles", p)
    if got is not None:
        return got, "cached result"
    rows = estimate_rows(ds, p["start"], p["end"])
    if rows > PANDAS_MAX_ROWS:
        return None, f"{rows:,} rows: run `python -m dashboard.history bundles {ds}` (Spark)"
    res = run_job("bundles", ds, p, engine="pandas")
    return res, f"computed with pandas in {res['_meta'].get('job_s')} s"


def run_page_job(job: str, path, params: dict, progress=None) -> dict:
    """Run a job for the page inside a background process; returns a small JSON-able summary
    ``{"job", "dataset", "params", "ok", "error", "meta"}`` (the frames stay in the cache)."""
    from dashboard.spark import cancel_on_sigterm, stop_spark

    cancel_on_sigterm()  # the page's Cancel terminates this process: its Spark job group is cancelled first
    ds = dataset_by_name(path)
    name = ds.name  # the summary goes to the browser: the name, never the server path
    try:
        res = run_job(job, str(ds), params, engine="spark", progress=progress)
        meta = {k: v for k, v in res.get("_meta", {}).items() if k in ("engine", "job_s", "spark_start_s")}
        return {"job": job, "dataset": name, "params": params, "ok": True, "error": None, "meta": meta}
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message on the page
        return {"job": job, "dataset": name, "params": params, "ok": False, "error": describe_error(exc), "meta": {}}
    finally:
        stop_spark()


def job_result(summary: dict | None):
    """The cached frames of a finished page job (``None`` when missing or failed)."""
    if not isinstance(summary, dict) or not summary.get("ok"):
        return None
    try:
        return load_cached(dataset_by_name(summary.get("dataset")), summary["job"], summary["params"])
    except (InputError, UsageError, OSError, KeyError, TypeError, ValueError):  # a browser value: never raise
        return None


def event_at(events: pd.DataFrame, index: int) -> dict | None:
    """The event row ``index`` as a plain dict (timestamps as ISO text), or ``None``."""
    if events is None or index is None or not 0 <= int(index) < len(events):
        return None
    row = events.iloc[int(index)]
    out = {}
    for k, v in row.items():
        if isinstance(v, pd.Timestamp):
            v = v.isoformat()
        elif hasattr(v, "item"):
            v = v.item()
        out[k] = None if (isinstance(v, float) and v != v) else v
    return out

