"""Ingestion: Prometheus range queries, long CSV/Parquet and LoadData timelines → a history dataset.

Inputs (format picked from the content, or forced with ``fmt``):

* **Prometheus** ``/api/v1/query_range`` responses (JSON): ``{"status": "success", "data":
  {"resultType": "matrix", "result": [{"metric": {labels}, "values": [[t, "v"], ...]}]}}``
  (``"vector"`` results with ``"value"`` are read too; a file may hold a list of responses). The
  metric name is the ``__name__`` label; aggregated queries drop it, so pass ``metric=`` or name the
  file after the metric (``pulsar_lb_cpu_usage.json``). The broker is the ``broker`` label, else
  ``instance``; the bundle is the ``bundle`` label (prefixed with ``namespace`` when that is separate).
* **Long CSV / Parquet** with columns ``timestamp, broker, metric, value`` and optional ``bundle``;
  ``timestamp`` is ISO-8601 text or epoch seconds / milliseconds (numbers above 1e11 are ms).
* **LoadData timelines** (:func:`engine.io.load_timeline`: a directory of snapshots, a JSON list or
  JSON lines): every snapshot is one minute; percentages are computed with Pulsar's float32 rule.

Metric names are mapped to the dataset's (:data:`METRIC_ALIASES`): ``pulsar_lb_cpu_usage`` → ``cpu``,
``pulsar_lb_memory_usage`` → ``memory``, ``pulsar_lb_directMemory_usage`` → ``direct_memory``,
``pulsar_lb_bandwidth_in/out_usage`` → ``bandwidth_in/out``, ``pulsar_broker_rate_in/out`` (or
``pulsar_rate_in/out``) → ``msg_rate_in/out``, ``pulsar_broker_throughput_in/out`` (or
``pulsar_throughput_in/out``) → ``msg_throughput_in/out``, ``pulsar_bundle_msg_rate_in`` … →
``bundle_msg_rate_in`` …, ``pulsar_bundle_topics_count`` → ``bundle_topics``; the dataset's own names
are accepted as they are, and a long row with a ``bundle`` and a plain rate name gets the ``bundle_``
prefix.

Bad data — handled, counted in the dataset's ``report``, never a crash:

===============================  ===================================================================
problem                          handling
===============================  ===================================================================
non-numeric value ("abc", "")    row dropped (``dropped_non_numeric``)
NaN / ±Inf                       row dropped (``dropped_not_finite``; Prometheus writes "NaN")
negative value                   row dropped (``dropped_negative``: no metric here can be negative)
unknown metric name              rows dropped, names listed (``unknown_metrics``)
missing broker / bad timestamp   row dropped (``dropped_no_broker`` / ``dropped_bad_timestamp``)
several samples in one minute    timestamps are floored to the minute; the latest sample wins
(duplicate timestamps)           (same timestamp: the last one read) — ``duplicates_removed``
short gaps (≤ ``max_gap`` min)   the last value is carried forward (``gaps_filled``), like
                                 Prometheus' 5-minute look-back
longer gaps, brokers that        left as they are: the broker is absent in those minutes, as a
appear / disappear               broker without a load report is absent from Pulsar's LoadData
a metric missing altogether      left out; jobs count a missing resource as 0 % (Pulsar's default)
unreadable file                  :class:`~engine.errors.InputError` naming the file and the problem
===============================  ===================================================================
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from engine.errors import InputError

from .dataset import ALL_METRICS, BUNDLE_METRICS, MINUTE_MS, write_long

__all__ = ["ingest", "read_input", "normalise", "METRIC_ALIASES", "parse_prometheus", "read_long_file",
           "read_timeline"]

METRIC_ALIASES = {
    "pulsar_lb_cpu_usage": "cpu",
    "pulsar_lb_memory_usage": "memory",
    "pulsar_lb_directMemory_usage": "direct_memory",
    "pulsar_lb_directmemory_usage": "direct_memory",
    "pulsar_lb_bandwidth_in_usage": "bandwidth_in",
    "pulsar_lb_bandwidth_out_usage": "bandwidth_out",
    "pulsar_broker_rate_in": "msg_rate_in",
    "pulsar_broker_rate_out": "msg_rate_out",
    "pulsar_broker_throughput_in": "msg_throughput_in",
    "pulsar_broker_throughput_out": "msg_throughput_out",
    "pulsar_rate_in": "msg_rate_in",
    "pulsar_rate_out": "msg_rate_out",
    "pulsar_throughput_in": "msg_throughput_in",
    "pulsar_throughput_out": "msg_throughput_out",
    "pulsar_bundle_msg_rate_in": "bundle_msg_rate_in",
    "pulsar_bundle_msg_rate_out": "bundle_msg_rate_out",
    "pulsar_bundle_msg_throughput_in": "bundle_msg_throughput_in",
    "pulsar_bundle_msg_throughput_out": "bundle_msg_throughput_out",
    "pulsar_bundle_topics_count": "bundle_topics",
    "pulsar_bundle_topics": "bundle_topics",
}
_PLAIN_TO_BUNDLE = {"msg_rate_in": "bundle_msg_rate_in", "msg_rate_out": "bundle_msg_rate_out",
                    "msg_throughput_in": "bundle_msg_throughput_in",
                    "msg_throughput_out": "bundle_msg_throughput_out", "topics": "bundle_topics"}
MAX_GAP_MINUTES = 5
_COLUMNS = ["timestamp", "broker", "metric", "value", "bundle"]


# ------------------------------------------------------------------------------------ readers
def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None


def parse_prometheus(obj, source: str, metric: str | None = None) -> pd.DataFrame:
    """Rows (``timestamp`` epoch ms, ``broker``, ``metric`` raw name, ``value`` raw, ``bundle``) of one
    or more ``query_range`` responses."""
    responses = obj if isinstance(obj, list) else [obj]
    frames = []
    for i, resp in enumerate(responses):
        where = source if len(responses) == 1 else f"{source}[{i}]"
        if not isinstance(resp, dict) or "data" not in resp and "status" not in resp:
            raise InputError("not a Prometheus query_range response (expected {\"status\", \"data\"})", source=where)
        if resp.get("status") not in (None, "success"):
            raise InputError(f"Prometheus returned an error: {resp.get('errorType', '')} {resp.get('error', '')}".strip(),
                             source=where)
        data = resp.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise InputError("missing data.result (a list of series)", source=where, field="data.result")
        for j, series in enumerate(data["result"]):
            if not isinstance(series, dict):
                raise InputError("a series is not an object", source=where, field=f"data.result[{j}]")
            labels = series.get("metric") or {}
            if not isinstance(labels, dict):
                raise InputError("labels are not an object", source=where, field=f"data.result[{j}].metric")
            name = labels.get("__name__") or metric
            if not name:
                raise InputError("series without a metric name (__name__); aggregated queries drop it — name the "
                                 "file after the metric (e.g. pulsar_broker_rate_in.json) or pass --metric",
                                 source=where, field=f"data.result[{j}].metric")
            broker = labels.get("broker") or labels.get("instance")
            bundle = labels.get("bundle")
            if bundle and labels.get("namespace") and "/" not in str(bundle).split("0x")[0].rstrip("/"):
                bundle = f"{labels['namespace']}/{bundle}"
            if "values" in series:
                values = series["values"]
            elif "value" in series:
                values = [series["value"]]
            else:
                values = []
            if not isinstance(values, list):
                raise InputError("values is not a list", source=where, field=f"data.result[{j}].values")
            ts, vs = [], []
            for v in values:
                if isinstance(v, (list, tuple)) and len(v) == 2:
                    ts.append(v[0])
                    vs.append(v[1])
                else:
                    ts.append(None)
                    vs.append(None)
            frames.append(pd.DataFrame({"timestamp": _to_ms(pd.Series(ts, dtype=object)), "broker": broker,
                                        "metric": name, "value": pd.Series(vs, dtype=object), "bundle": bundle}))
    if not frames:
        return pd.DataFrame(columns=_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _to_ms(ts: pd.Series) -> pd.Series:
    """Timestamps (epoch s / ms numbers, numeric strings or ISO text) → epoch ms (float, NaN if bad)."""
    num = pd.to_numeric(ts, errors="coerce")
    out = np.where(num.abs() > 1e11, num, num * 1000.0)
    out = pd.Series(out, index=ts.index, dtype="float64")
    bad = out.isna() & ts.notna()
    if bad.any():
        parsed = pd.to_datetime(ts[bad].astype(str), errors="coerce", utc=True, format="mixed")
        ok = parsed.notna()
        out.loc[parsed.index[ok]] = parsed[ok].astype("int64") / 1e6
    return out


def read_long_file(path: Path, fmt: str) -> pd.DataFrame:
    """A long CSV or Parquet file → raw rows."""
    src = str(path)
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        kind = "Parquet" if fmt == "parquet" else "CSV"
        raise InputError(f"cannot read as {kind}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         source=src) from None
    except Exception as exc:  # pyarrow raises its own exception types for corrupt files
        raise InputError(f"cannot read as {fmt}: {str(exc).splitlines()[0]}", source=src) from None
    df.columns = [str(c).strip().lower() for c in df.columns]
    missing = [c for c in ("timestamp", "broker", "metric", "value") if c not in df.columns]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; expected timestamp, broker, metric, value "
                         f"[, bundle], got {', '.join(map(str, df.columns)) or 'none'}", source=src)
    out = pd.DataFrame({"timestamp": _ts_column(df["timestamp"]), "broker": df["broker"], "metric": df["metric"],
                        "value": df["value"],
                        "bundle": df["bundle"] if "bundle" in df.columns else None})
    return out


def _ts_column(col: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(col):
        c = col.dt.tz_convert("UTC").dt.tz_localize(None) if getattr(col.dt, "tz", None) is not None else col
        return pd.Series(c.to_numpy().astype("datetime64[ms]").astype("int64").astype("float64"), index=col.index)
    return _to_ms(col.astype(object))


def read_timeline(path: Path) -> pd.DataFrame:
    """LoadData snapshots → raw rows (one minute per snapshot; float32 percentages like Pulsar)."""
    from engine.io import load_timeline

    snaps = load_timeline(path)
    rows: list[tuple] = []
    for ld in snaps:
        now = ld.now
        for bid, bd in ld.brokers.items():
            L = bd.local
            for name, ru in (("cpu", L.cpu), ("memory", L.memory), ("direct_memory", L.direct_memory),
                             ("bandwidth_in", L.bandwidth_in), ("bandwidth_out", L.bandwidth_out)):
                rows.append((now, bid, name, ru.percent_usage(), None))
            rows += [(now, bid, "msg_rate_in", L.msg_rate_in, None), (now, bid, "msg_rate_out", L.msg_rate_out, None),
                     (now, bid, "msg_throughput_in", L.msg_throughput_in, None),
                     (now, bid, "msg_throughput_out", L.msg_throughput_out, None)]
            for b, st in L.last_stats.items():
                rows += [(now, bid, "bundle_msg_rate_in", st.msg_rate_in, b),
                         (now, bid, "bundle_msg_rate_out", st.msg_rate_out, b),
                         (now, bid, "bundle_msg_throughput_in", st.msg_throughput_in, b),
                         (now, bid, "bundle_msg_throughput_out", st.msg_throughput_out, b),
                         (now, bid, "bundle_topics", float(st.topics), b)]
    return pd.DataFrame(rows, columns=_COLUMNS)


def _sniff(path: Path) -> str:
    if path.is_dir():
        return "timeline"
    suf = path.suffix.lower()
    if suf in (".parquet", ".pq"):
        return "parquet"
    if suf in (".csv", ".tsv", ".txt"):
        return "csv"
    raw = _read_bytes(path)[:4096]
    if raw[:4] == b"PAR1":
        return "parquet"
    head = raw.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if head.startswith("{") or head.startswith("["):
        return "json"
    return "csv"


def read_input(path, fmt: str = "auto", metric: str | None = None) -> tuple[pd.DataFrame, str]:
    """One input file or directory → ``(raw rows, format used)``; raises a clear InputError."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", source=str(p))
    f = _sniff(p) if fmt == "auto" else fmt
    if f == "json":
        raw = _read_bytes(p)
        from engine.io import read_json_bytes

        obj = read_json_bytes(raw, str(p))
        first = obj[0] if isinstance(obj, list) and obj else obj
        if isinstance(first, dict) and ("data" in first or "status" in first):
            f = "prometheus"
        else:
            f = "timeline"
    if f == "prometheus":
        if fmt == "prometheus":
            from engine.io import read_json_bytes

            obj = read_json_bytes(_read_bytes(p), str(p))
        stem = p.stem
        name = metric or (stem if (stem in METRIC_ALIASES or stem in ALL_METRICS) else None)
        return parse_prometheus(obj, str(p), name), f
    if f in ("csv", "parquet"):
        return read_long_file(p, f), f
    if f == "timeline":
        return read_timeline(p), f
    raise InputError(f"unknown input format {fmt!r} (auto, prometheus, csv, parquet, timeline)", source=str(p))


# ------------------------------------------------------------------------------------ cleaning
def normalise(raw: pd.DataFrame, max_gap: int = MAX_GAP_MINUTES, report: dict | None = None) -> pd.DataFrame:
    """Raw rows → clean rows of the dataset (see the module docstring for every rule)."""
    rep = report if report is not None else {}

    def add(key, n):
        rep[key] = int(rep.get(key, 0)) + int(n)

    df = raw.copy()
    add("rows_read", len(df))
    # metric names
    name = df["metric"].astype(str).str.strip()
    mapped = name.map(lambda x: METRIC_ALIASES.get(x, x))
    has_bundle = df["bundle"].notna() & (df["bundle"].astype(str).str.strip() != "")
    mapped = np.where(has_bundle & mapped.isin(_PLAIN_TO_BUNDLE.keys()), mapped.map(_PLAIN_TO_BUNDLE), mapped)
    mapped = pd.Series(mapped, index=df.index)
    known = mapped.isin(ALL_METRICS)
    if (~known).any():
        unknown = sorted(set(name[~known].tolist()))
        rep["unknown_metrics"] = sorted(set(rep.get("unknown_metrics", [])) | set(unknown))[:50]
        add("dropped_unknown_metric", (~known).sum())
    df["metric"] = mapped
    df = df[known]
    # bundle only on bundle metrics
    is_bm = df["metric"].isin(BUNDLE_METRICS)
    b = df["bundle"].where(df["bundle"].notna(), None)
    b = b.map(lambda x: None if x is None or str(x).strip() in ("", "nan", "None") else str(x).strip())
    no_bundle = is_bm & b.isna()
    if no_bundle.any():
        add("dropped_bundle_metric_without_bundle", no_bundle.sum())
    df = df.assign(bundle=np.where(is_bm, b, None))[~no_bundle]
    # broker
    br = df["broker"].map(lambda x: None if x is None or (isinstance(x, float) and np.isnan(x))
                          or str(x).strip() in ("", "nan", "None") else str(x).strip())
    add("dropped_no_broker", br.isna().sum())
    df = df.assign(broker=br)[br.notna()]
    # timestamp
    ts = pd.to_numeric(df["timestamp"], errors="coerce")
    bad_ts = ts.isna() | (ts < 0)
    add("dropped_bad_timestamp", bad_ts.sum())
    df = df.assign(timestamp=ts)[~bad_ts]
    # value: numbers (or numeric text); NaN/Inf text is "not finite", anything else "non-numeric"
    raw_v = df["value"]
    if raw_v.dtype == object:
        text = raw_v.astype(str).str.strip().str.lower()
        special = text.isin(["nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"])
        num = pd.to_numeric(raw_v.where(~special, None), errors="coerce").astype(float)
    else:
        special = pd.Series(False, index=df.index)
        num = raw_v.astype(float)
    not_num = num.isna() & ~special
    not_finite = special | (~num.isna() & ~np.isfinite(num.fillna(0.0)))
    neg = ~not_num & ~not_finite & (num < 0)
    add("dropped_non_numeric", not_num.sum())
    add("dropped_not_finite", not_finite.sum())
    add("dropped_negative", neg.sum())
    df = df.assign(value=num)[~(not_num | not_finite | neg)]
    # minutes and duplicates: the latest sample of a minute wins (ties: the last one read)
    df = df.assign(orig=df["timestamp"], order=np.arange(len(df)))
    df["timestamp"] = (df["timestamp"].astype("int64") // MINUTE_MS) * MINUTE_MS
    df = df.sort_values(["orig", "order"], kind="stable")
    key = ["timestamp", "broker", "bundle", "metric"]
    before = len(df)
    df = df.drop_duplicates(key, keep="last")
    add("duplicates_removed", before - len(df))
    df = df.drop(columns=["orig", "order"])
    df = _fill_gaps(df, max_gap, rep)
    add("rows_written", len(df))
    return df[_COLUMNS].reset_index(drop=True)


def _fill_gaps(df: pd.DataFrame, max_gap: int, rep: dict) -> pd.DataFrame:
    """Carry a series' last value over interior gaps of at most ``max_gap`` missing minutes."""
    rep.setdefault("gaps_filled", 0)
    rep.setdefault("gaps_left", 0)
    if df.empty or max_gap <= 0:
        return df
    key = ["broker", "bundle", "metric"]
    df = df.sort_values(key + ["timestamp"], kind="stable", na_position="first").reset_index(drop=True)
    same = np.ones(len(df), dtype=bool)
    for k in key:
        col = df[k].astype(object).where(df[k].notna(), "<null>").to_numpy()
        same[1:] &= col[1:] == col[:-1]
    same[0] = False
    ts = df["timestamp"].to_numpy(dtype=np.int64)
    step = np.zeros(len(df), dtype=np.int64)
    step[1:] = (ts[1:] - ts[:-1]) // MINUTE_MS
    missing = np.where(same, step - 1, 0)  # missing minutes before row i
    fill = (missing >= 1) & (missing <= max_gap)
    rep["gaps_left"] = int(rep["gaps_left"]) + int(((missing > max_gap) & same).sum())
    if not fill.any():
        return df
    prev = np.flatnonzero(fill) - 1
    counts = missing[fill]
    rep["gaps_filled"] = int(rep["gaps_filled"]) + int(counts.sum())
    src = np.repeat(prev, counts)
    offs = np.concatenate([np.arange(1, c + 1) for c in counts])
    extra = df.iloc[src].copy()
    extra["timestamp"] = extra["timestamp"].to_numpy(dtype=np.int64) + offs * MINUTE_MS
    return pd.concat([df, extra], ignore_index=True)


def ingest(inputs: Iterable, out, *, fmt: str = "auto", metric: str | None = None, max_gap: int = MAX_GAP_MINUTES,
           overwrite: bool = False, name: str | None = None) -> dict:
    """Read every input, clean the rows together and write the dataset; returns its metadata
    (with the ``report`` of what was dropped or filled)."""
    frames, report, formats = [], {}, []
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise InputError("no input files")
    for p in inputs:
        raw, used = read_input(p, fmt, metric)
        formats.append({"file": str(p), "format": used, "rows": int(len(raw))})
        frames.append(raw)
    raw = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=_COLUMNS)
    clean = normalise(raw, max_gap=max_gap, report=report)
    if clean.empty:
        raise InputError("no usable rows after cleaning: " + json.dumps(report), source=", ".join(map(str, inputs)))
    report["inputs"] = formats
    return write_long(clean, out, source="ingest", params={"max_gap_minutes": max_gap, "format": fmt},
                      report=report, overwrite=overwrite, name=name)
