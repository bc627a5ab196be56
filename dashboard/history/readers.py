"""The history inputs' readers: each format (Prometheus range queries, VictoriaMetrics exports, promtool
dumps, scraped ``/metrics`` directories, long CSV/Parquet, LoadData timelines) as raw rows of
``_RAW_COLUMNS``, and :func:`read_input`, which picks the format. What the rows mean, the formats and the
labels Pulsar emits are described in :mod:`.ingest`; :mod:`.identity` names each row's broker.
"""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from engine.bounded import loads_json
from engine.errors import InputError

from .dataset import ALL_METRICS

__all__ = ["read_input", "parse_prometheus", "read_long_file", "read_timeline", "read_vm_export",
           "read_promtool_dump", "read_exposition_dir", "METRIC_ALIASES", "COUNTER_ALIASES", "ID_LABELS",
           "DIRECT_SHAPE", "FORMATS"]

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
_COLUMNS = ["timestamp", "broker", "metric", "value", "bundle"]


# ------------------------------------------------------------------------------------ readers
def _read_bytes(path: Path) -> bytes:
    """At most ``SHEDLAB_MAX_INPUT_MB`` (+1 byte) of a file, device or stream (engine.bounded)."""
    from engine.bounded import read_bytes_bounded

    return read_bytes_bounded(path)


COUNTER_ALIASES = {
    "pulsar_lb_unload_broker_count": "unload_broker",
    "pulsar_lb_unload_broker_total": "unload_broker",
    "pulsar_lb_unload_bundle_count": "unload_bundle",
    "pulsar_lb_unload_bundle_total": "unload_bundle",
    "pulsar_lb_bundles_split_count": "bundles_split",
    "pulsar_lb_bundles_split_total": "bundles_split",
    "pulsar_lb_unload_broker_breakdown_total": "unload_broker_breakdown",
    "pulsar_lb_bundles_split_breakdown_total": "bundles_split_breakdown",
    "pulsar_lb_assign_broker_breakdown_total": "assign_broker_breakdown",
    "pulsar_sunit_state_chn_event_publish_ops_total": "channel_event_publish",
}
ID_LABELS = ("broker", "pod", "kubernetes_pod_name", "instance")  # auto order: first present wins
DIRECT_SHAPE = "broker column"  # the identity shape of rows naming their broker in a column (CSV, timelines)
_LBL = {k: f"l_{k}" for k in ID_LABELS}
_EXTRA = ("cluster", "result", "reason", "event")
_RAW_COLUMNS = _COLUMNS + list(_LBL.values()) + ["l_custom", *_EXTRA]


class _Acc:
    """Column lists of raw rows from labelled series (every Prometheus-like reader)."""

    def __init__(self, broker_label: str | None = None):
        self.cols = {c: [] for c in _RAW_COLUMNS}
        self.custom = broker_label if broker_label and broker_label not in ID_LABELS else None

    def add(self, labels: dict, name, ts: list, vs: list) -> None:
        n = len(ts)
        bundle = labels.get("bundle")
        if bundle and labels.get("namespace") and "/" not in str(bundle).split("0x")[0].rstrip("/"):
            bundle = f"{labels['namespace']}/{bundle}"
        c = self.cols
        c["timestamp"] += ts
        c["value"] += vs
        for col, v in (("broker", None), ("metric", name), ("bundle", bundle),
                       ("l_custom", labels.get(self.custom) if self.custom else None)):
            c[col] += [v] * n
        for k, col in _LBL.items():
            c[col] += [labels.get(k)] * n
        for k in _EXTRA:
            c[k] += [labels.get(k)] * n

    def frame(self) -> pd.DataFrame:
        c = dict(self.cols)
        c["timestamp"] = _to_ms(pd.Series(c["timestamp"], dtype=object))
        c["value"] = pd.Series(c["value"], dtype=object)
        return pd.DataFrame(c, columns=_RAW_COLUMNS)


def parse_prometheus(obj, source: str, metric: str | None = None, broker_label: str | None = None) -> pd.DataFrame:
    """Rows (``timestamp`` epoch ms, ``metric`` raw name, ``value`` raw, ``bundle``, identity and
    ``cluster`` labels) of one or more ``query_range`` responses."""
    responses = obj if isinstance(obj, list) else [obj]
    acc = _Acc(broker_label)
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
                ok = isinstance(v, (list, tuple)) and len(v) == 2
                ts.append(v[0] if ok else None)
                vs.append(v[1] if ok else None)
            acc.add(labels, name, ts, vs)
    return acc.frame()


def read_vm_export(path: Path, metric: str | None = None, broker_label: str | None = None) -> pd.DataFrame:
    """VictoriaMetrics ``/api/v1/export`` JSON lines → raw rows."""
    acc = _Acc(broker_label)
    text = _read_bytes(path).decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line, str(path))  # nesting limit (engine.limits)
        except InputError as exc:
            raise InputError(f"line {n}: {exc.message}", source=str(path)) from None
        labels = obj.get("metric") if isinstance(obj, dict) else None
        vs, ts = (obj.get("values"), obj.get("timestamps")) if isinstance(obj, dict) else (None, None)
        if not isinstance(labels, dict) or not isinstance(vs, list) or not isinstance(ts, list) or len(vs) != len(ts):
            raise InputError(f"line {n}: expected {{\"metric\": {{...}}, \"values\": [...], \"timestamps\": [...]}} "
                             "with as many values as timestamps", source=str(path), field=f"line {n}")
        name = labels.get("__name__") or metric
        if not name:
            raise InputError(f"line {n}: series without __name__ (pass --metric)", source=str(path), field="metric")
        acc.add(labels, name, ts, vs)
    return acc.frame()


_PROMTOOL_LINE = re.compile(r"^\{(.*)\}\s+(\S+)\s+(-?\d+)\s*$")
_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _unescape(v: str) -> str:
    return v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def read_promtool_dump(path: Path, metric: str | None = None, broker_label: str | None = None) -> pd.DataFrame:
    """``promtool tsdb dump`` text (``{labels} value timestamp_ms`` per line) → raw rows."""
    acc = _Acc(broker_label)
    text = _read_bytes(path).decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _PROMTOOL_LINE.match(line.strip())
        if not m:
            raise InputError(f"line {n} is not `{{labels}} value timestamp` (promtool tsdb dump)", source=str(path),
                             field=f"line {n}")
        labels = {k: _unescape(v) for k, v in _LABEL_PAIR.findall(m.group(1))}
        name = labels.get("__name__") or metric
        if not name:
            raise InputError(f"line {n}: sample without __name__", source=str(path), field=f"line {n}")
        acc.add(labels, name, [int(m.group(3))], [m.group(2)])
    return acc.frame()


def _scrape_files(root: Path) -> list[Path]:
    out = []
    for f in sorted(root.iterdir()):
        if f.name.startswith((".", "_")):
            continue
        if f.is_dir():
            out += [g for g in sorted(f.iterdir()) if g.is_file() and not g.name.startswith((".", "_"))]
        elif f.is_file():
            out.append(f)
    return out


def read_exposition_dir(root: Path, broker_label: str | None = None) -> pd.DataFrame:
    """A directory of scraped ``/metrics`` text (``DIR/<instance>/<epoch>.prom`` or ``DIR/<epoch>.prom``)
    → raw rows, parsed with ``prometheus_client``'s text parser."""
    from prometheus_client.parser import text_string_to_metric_families

    acc = _Acc(broker_label)
    files = _scrape_files(root)
    if not files:
        raise InputError("no scraped /metrics files in the directory", source=str(root))
    for f in files:
        stem_ts = _to_ms(pd.Series([f.stem.split(".")[0]], dtype=object)).iloc[0]
        instance = f.parent.name if f.parent != root else None
        try:
            for fam in text_string_to_metric_families(_read_bytes(f).decode("utf-8", "replace")):
                for smp in fam.samples:
                    ts = smp.timestamp if smp.timestamp is not None else stem_ts
                    if ts is None or (isinstance(ts, float) and np.isnan(ts)):
                        raise InputError("no sample timestamp and the file name is not epoch seconds "
                                         "(name scrapes $(date +%s).prom)", source=str(f))
                    labels = dict(smp.labels)
                    if instance and "instance" not in labels:
                        labels["instance"] = instance
                    acc.add(labels, smp.name, [float(ts)], [smp.value])
        except ValueError as exc:
            raise InputError(f"not Prometheus text exposition: {exc}", source=str(f)) from None
    return acc.frame()


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
    # a device or a pipe (/dev/zero, a FIFO) is read with the input limit; regular files stream
    source = path if Path(path).is_file() else io.BytesIO(_read_bytes(Path(path)))
    try:
        if fmt == "parquet":
            df = pd.read_parquet(source)
        else:
            df = pd.read_csv(source, dtype=str, keep_default_na=False, na_values=[""])
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
        files = _scrape_files(path)
        if files and not any(f.suffix.lower() in (".json", ".jsonl", ".ndjson") for f in files):
            return "exposition"
        return "timeline"
    suf = path.suffix.lower()
    if suf in (".parquet", ".pq"):
        return "parquet"
    if suf in (".csv", ".tsv"):
        return "csv"
    raw = _read_bytes(path)[:4096]
    if raw[:4] == b"PAR1":
        return "parquet"
    head = raw.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if re.match(r'\{[a-zA-Z_][a-zA-Z0-9_]*="', head):
        return "promtool"
    if head.startswith("{"):
        try:
            first = json.loads(head.splitlines()[0])
        except ValueError:
            first = None
        if isinstance(first, dict) and "timestamps" in first and "metric" in first:
            return "vmexport"
        return "json"
    if head.startswith("["):
        return "json"
    return "csv"


FORMATS = ("auto", "prometheus", "vmexport", "promtool", "exposition", "csv", "parquet", "timeline")


def read_input(path, fmt: str = "auto", metric: str | None = None,
               broker_label: str | None = None) -> tuple[pd.DataFrame, str]:
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
        return parse_prometheus(obj, str(p), name, broker_label), f
    if f == "vmexport":
        return read_vm_export(p, metric, broker_label), f
    if f == "promtool":
        return read_promtool_dump(p, metric, broker_label), f
    if f == "exposition":
        if not p.is_dir():
            raise InputError("the exposition format is a directory of scraped /metrics files", source=str(p))
        return read_exposition_dir(p, broker_label), f
    if f in ("csv", "parquet"):
        return read_long_file(p, f), f
    if f == "timeline":
        return read_timeline(p), f
    raise InputError(f"unknown input format {fmt!r} ({', '.join(FORMATS)})", source=str(p))
