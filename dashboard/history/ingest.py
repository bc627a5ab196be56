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
* **VictoriaMetrics** ``/api/v1/export`` JSON lines: ``{"metric": {labels}, "values": [...],
  "timestamps": [ms, ...]}`` one series per line (``vmexport``).
* **promtool tsdb dump** text: ``{__name__="...", label="v", ...} VALUE TIMESTAMP_MS`` one sample per
  line (``promtool``; the layout printed by ``cmd/promtool/tsdb.go``).
* **A directory of scraped ``/metrics`` text** (``exposition``): ``DIR/<instance>/<epoch>.prom`` or
  ``DIR/<epoch>.prom``; parsed with ``prometheus_client.parser.text_string_to_metric_families``. A
  sample's own timestamp wins, else the epoch seconds (or ms) in the file name; the sub-directory name
  becomes the ``instance`` label, as Prometheus adds it when it scrapes.
* **LoadData timelines** (:func:`engine.io.load_timeline`: a directory of snapshots, a JSON list or
  JSON lines): every snapshot is one minute; percentages are computed with Pulsar's float32 rule.

These readers and the cleaning rules below run in one pandas pass here; for big inputs
:mod:`.ingest_spark` runs the very same readers and rules on Spark executors (same dataset, same
report).

Labels Pulsar really emits (apache/pulsar, and what Prometheus adds)
-------------------------------------------------------------------
* ``pulsar_lb_*_usage`` (``LoadManagerReport`` metrics of the modular load manager): ``cluster``,
  ``broker`` = the broker's advertised address (host, **no port**), ``metric="loadBalancing"``.
* ``pulsar_broker_rate_in/out``, ``pulsar_broker_throughput_in/out`` (``BrokerOperabilityMetrics`` /
  ``PrometheusMetricsGenerator``): ``cluster`` only; the scrape adds ``instance=<ip:port>`` (and
  ``pod`` / ``kubernetes_pod_name`` with Kubernetes service discovery relabelling).
* ``pulsar_lb_unload_broker_count``, ``pulsar_lb_unload_bundle_count`` (``metric="bundleUnloading"``),
  ``pulsar_lb_bundles_split_count`` (``metric="bundlesSplit"``): ``cluster``; newer brokers write them
  as ``*_total``. The Extensible Load Manager (``UnloadCounter#toMetrics``) writes
  ``pulsar_lb_unload_broker_total``, ``pulsar_lb_unload_bundle_total`` with ``broker`` = advertised
  address, and ``pulsar_lb_unload_broker_breakdown_total`` with ``result`` and ``reason`` (a transfer
  is an unload decision there: ``result="Success"`` with its reason); splits (``SplitCounter``,
  ``metric="bundlesSplit"``) ``pulsar_lb_bundles_split_total`` / ``..._breakdown_total`` with ``result``,
  ``reason``; assignments (``AssignCounter``, ``metric="assign"``) ``pulsar_lb_assign_broker_breakdown_total``
  with ``result`` only. ``ExtensibleLoadManagerImpl#getMetrics`` puts ``broker`` on all of them.
  Transfers and unloads as the ELM's service-unit state channel publishes them
  (``ServiceUnitStateChannelImpl#getMetrics``): ``pulsar_sunit_state_chn_event_publish_ops_total`` with
  ``metric="sunitStateChn"``, ``broker`` = advertised address, ``event`` (``Assign``, ``Split``,
  ``Unload`` — a transfer is an ``Unload`` event with a destination —, ``Override``) and ``result``
  (``Total``, which includes the failures, or ``Failure``).

Broker identity (one broker id per broker, never a phantom)
-----------------------------------------------------------
Each broker series gets its id from one label: ``--broker-label LABEL`` when given, else the first
present of ``broker``, ``pod``, ``kubernetes_pod_name``, ``instance`` (this label is the series'
*identity shape*). The value is cleaned (``http://``/``https://``/``pulsar://`` scheme and trailing
``/`` removed) and, with ``--broker-map FILE`` (a YAML/JSON object ``{label value: broker id}``; a
value is looked up as written, cleaned, and by its host), replaced by the mapped id. Rows that name
their broker in a column (long CSV/Parquet, LoadData timelines) are one more shape, ``broker column``,
so a CSV beside a Prometheus export cannot add brokers either. When the series of one cluster carry
several shapes, they must *line up*: every id of one shape matches exactly one id
of the other by host, or else by the first DNS label (``broker=10.0.0.1`` ↔ ``instance=10.0.0.1:8080``;
``pod=pulsar-broker-0`` ↔ ``broker=pulsar-broker-0.pulsar-broker.ns.svc``); the merged id is the one
carrying a port (Pulsar's ``host:port`` broker id), else the ``broker`` label's. The counters' ids
(``broker`` on the ELM's, the scrape's ``instance`` on the modular leader's) take the brokers' ids the
same way when they line up, else as :mod:`.counter_ids` says (never a broker the dataset lacks). Otherwise ingest
refuses with an :class:`~engine.errors.InputError` naming both shapes and ``--broker-map`` /
``--broker-label`` (exit 2): Shedlab never invents a broker.

Clusters: the ``cluster`` label. ``cluster=`` (``--cluster``) keeps that cluster's series (series
without the label are kept and counted, ``rows_without_cluster``); an export holding several clusters
with none chosen is refused with the list of clusters.

What the cluster actually did (counters)
----------------------------------------
The load manager's counters above are not metrics of the dataset; they are turned into per-hour
increases (reset-aware: a drop is a restart, the new value is the increase; the first sample of a
series only sets the baseline) and written beside the metrics as ``DATASET/_actions/actions.parquet``
(files under ``_`` are ignored by the metric readers). Table ``actions``, columns:

=========  ===================  =================================================================
column     type                 meaning
=========  ===================  =================================================================
hour       timestamp[ms, UTC]   start of the hour the increase happened in
cluster    string, null         the ``cluster`` label
broker     string, null         the id of the broker whose series it is (the ELM's ``broker`` label,
                                else the scrape's ``instance``: the modular counters carry none)
counter    string               ``unload_broker``, ``unload_bundle``, ``bundles_split``,
                                ``unload_broker_breakdown``, ``bundles_split_breakdown``,
                                ``assign_broker_breakdown``, ``channel_event_publish``
                                (:data:`COUNTER_ALIASES`)
result     string, null         the ELM's ``result`` label (``Success``, ``Skip``, ``Failure``;
                                ``Total``/``Failure`` on ``channel_event_publish``)
reason     string, null         the ELM's ``reason`` label (``Overloaded``, ``Underloaded``, …)
event      string, null         the state channel's ``event`` label (``Unload``, ``Assign``, …)
increase   double               how much the counter grew in that hour (>= 0)
=========  ===================  =================================================================

Read it back with :func:`dashboard.history.dataset.actual_actions` ``(dataset, start, end)``.

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

import io
import json
import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from engine.bounded import loads_json
from engine.errors import InputError
from engine.limits import MAX_EPOCH_MS

from .counter_ids import counters_to_known_brokers
from .dataset import ALL_METRICS, BUNDLE_METRICS, MINUTE_MS, write_actions, write_long

__all__ = ["ingest", "read_input", "normalise", "validate_rows", "label_rule", "value_numbers", "dedupe_minutes", "NORMALISE_REPORT_KEYS", "METRIC_ALIASES", "COUNTER_ALIASES", "parse_prometheus",
           "read_long_file", "read_timeline", "read_vm_export", "read_promtool_dump", "read_exposition_dir",
           "resolve_brokers", "counter_increases", "load_broker_map"]

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


# ------------------------------------------------------------------------------------ identity
def _clean_id(v) -> str | None:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    s = str(v).strip()
    for scheme in ("http://", "https://", "pulsar://", "pulsar+ssl://"):
        if s.lower().startswith(scheme):
            s = s[len(scheme):]
    s = s.rstrip("/")
    return s or None


def _clean_col(col: pd.Series) -> pd.Series:
    """:func:`_clean_id` over a column, computed once per distinct value (exports repeat labels a lot)."""
    m = {v: _clean_id(v) for v in pd.unique(col.dropna())}
    return col.map(m).astype(object).where(lambda x: x.notna(), None)


def _host(v: str) -> str:
    h = v.rsplit(":", 1)[0] if v.count(":") == 1 else v
    return h.lower()


def _short(v: str) -> str:
    return _host(v).split(".")[0]


def load_broker_map(path) -> dict:
    """A ``--broker-map`` file: a YAML (or JSON) object ``{label value: broker id}``."""
    from engine.bounded import loads_yaml

    p = Path(path)
    obj = loads_yaml(_read_bytes(p), str(p))  # safe loader, nesting / alias / size limits
    if not isinstance(obj, dict) or not obj:
        raise InputError("expected an object {label value: broker id}", source=str(p))
    return {str(k).strip(): str(v).strip() for k, v in obj.items()}


def _line_up(target: set, other: set):
    """``{other id: target id}`` when every id of the smaller set matches exactly one of the other by
    host or by first DNS label, else None."""
    for key in (_host, _short):
        tk = {key(v): v for v in target}
        ok = {key(v): v for v in other}
        if len(tk) != len(target) or len(ok) != len(other):
            continue
        if set(ok) <= set(tk) or set(tk) <= set(ok):
            return {v: tk[k] for k, v in ok.items() if k in tk}
    return None


def resolve_brokers(raw: pd.DataFrame, *, broker_label: str | None = None, broker_map: dict | None = None,
                    cluster: str | None = None, report: dict | None = None) -> pd.DataFrame:
    """Cluster filter and one broker id per row (module docstring: "Broker identity")."""
    rep = report if report is not None else {}
    df = raw.copy()
    for c in _RAW_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df.reset_index(drop=True)
    cl = _clean_col(df["cluster"])
    clusters = sorted(set(cl.dropna()))
    if cluster is not None:
        if clusters and cluster not in clusters:
            raise InputError(f"cluster {cluster!r} is not in the input; its clusters: {', '.join(clusters)}",
                             field="cluster")
        keep = cl.isna() | (cl == cluster)
        rep["rows_without_cluster"] = int(cl.isna().sum())
        rep["rows_other_clusters"] = int((~keep).sum())
        df, cl = df[keep].reset_index(drop=True), cl[keep].reset_index(drop=True)
    elif len(clusters) > 1:
        raise InputError(f"the input mixes {len(clusters)} clusters ({', '.join(clusters)}); choose one with "
                         "--cluster NAME", field="cluster")
    df["cluster"] = cl
    # identity shape and value of every labelled row
    shape = pd.Series([None] * len(df), dtype=object)
    value = pd.Series([None] * len(df), dtype=object)
    direct = _clean_col(df["broker"]).notna()
    if broker_label:
        col = _LBL.get(broker_label, "l_custom")
        v = _clean_col(df[col])
        shape[v.notna()] = broker_label
        value = value.where(v.isna(), v)
    else:
        for lbl in reversed(ID_LABELS):  # the first present label wins: fill in reverse order
            v = _clean_col(df[_LBL[lbl]])
            shape = shape.where(v.isna(), lbl)
            value = value.where(v.isna(), v)
    # rows that name their broker in a column (long CSV/Parquet, LoadData timelines) are one more shape
    shape[direct] = DIRECT_SHAPE
    value[direct] = _clean_col(df["broker"])[direct]
    bmap = broker_map or {}
    if bmap:
        value = value.map(lambda x: None if x is None else bmap.get(x, bmap.get(_host(x), x)))
    is_counter = df["metric"].astype(str).str.strip().isin(COUNTER_ALIASES.keys())
    merged = value.copy()
    # after the cluster filter the rows are one cluster (rows without the label count as the chosen one)
    c = cluster or (clusters[0] if clusters else "(no cluster label)")
    in_c = shape.notna()
    sets = {s: set(value[in_c & ~is_counter & (shape == s)]) for s in
            shape[in_c & ~is_counter].dropna().unique()}
    if sets:
        with_port = [s for s in sets if all(":" in v for v in sets[s])]
        target = with_port[0] if with_port else ("broker" if "broker" in sets else next(iter(sets)))
        # counters of another shape (the ELM's broker=<host> beside brokers known by instance) take the
        # brokers' ids when they line up; they are never refused: a counter does not make a broker
        for s in shape[in_c & is_counter].dropna().unique():
            sel = in_c & is_counter & (shape == s)
            if s in sets or set(value[sel]) <= sets[target]:
                continue
            m = _line_up(sets[target], set(value[sel]))
            if m:
                merged[sel] = value[sel].map(lambda x, m=m: m.get(x, x))
        for s, ids in sets.items():
            if s == target or ids == sets[target]:
                continue
            m = _line_up(sets[target], ids)
            if m is None:
                def ex(x):
                    return ", ".join(sorted(x)[:3]) + (", …" if len(x) > 3 else "")

                def mets(lbl):
                    return ", ".join(sorted(set(df["metric"][in_c & (shape == lbl)].astype(str)))[:3])

                raise InputError(
                    f"cluster {c!r}: broker series carry two identity shapes that do not line up — "
                    f"{s}=<{ex(ids)}> on {mets(s)} and {target}=<{ex(sets[target])}> on {mets(target)}; "
                    f"that would make {len(ids | sets[target])} brokers instead of {max(len(ids), len(sets[target]))}."
                    " Give --broker-map FILE (YAML {label value: broker id}) or choose one label with "
                    "--broker-label LABEL", field=s)
            sel = in_c & (shape == s)
            merged[sel] = value[sel].map(lambda x, m=m: m.get(x, x))
    if sets:  # counters with an id no broker series has: the broker the series pair it with, else none
        counters_to_known_brokers({k: _clean_col(df[v]) for k, v in _LBL.items()}, merged, in_c & is_counter, in_c & ~is_counter, rep)
    df["broker"] = merged.where(merged.notna(), None)
    rep["broker_identity"] = sorted(set(shape.dropna()))
    return df


def counter_increases(rows: pd.DataFrame, report: dict | None = None) -> pd.DataFrame:
    """The load manager's counters → per-hour increases (reset-aware), the ``actions`` table."""
    rep = report if report is not None else {}
    cols = ["hour", "cluster", "broker", "counter", "result", "reason", "event", "increase"]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame({"ts": pd.to_numeric(rows["timestamp"], errors="coerce"),
                       "v": pd.to_numeric(rows["value"], errors="coerce"),
                       "counter": rows["metric"].astype(str).str.strip().map(COUNTER_ALIASES)})
    key = ["cluster", "broker", "result", "reason", "event"]
    for k in key:
        df[k] = rows[k].map(_clean_id).fillna("").to_numpy()
    key = ["counter"] + key
    df = df[df["ts"].notna() & df["v"].notna() & np.isfinite(df["v"]) & (df["v"] >= 0)]
    df = df.sort_values(key + ["ts"], kind="stable").drop_duplicates(key + ["ts"], keep="last")
    prev = df.groupby(key, sort=False)["v"].shift(1)
    diff = df["v"] - prev
    resets = prev.notna() & (diff < 0)
    df["increase"] = np.where(prev.isna(), np.nan, np.where(resets, df["v"], diff))
    rep["counter_resets"] = int(rep.get("counter_resets", 0)) + int(resets.sum())
    df = df[df["increase"].notna()]
    df["hour"] = (df["ts"].astype("int64") // 3_600_000) * 3_600_000
    out = df.groupby(["hour"] + key, sort=True, as_index=False)["increase"].sum()
    for k in ("cluster", "broker", "result", "reason", "event"):
        out[k] = out[k].where(out[k] != "", None)
    return out[cols].reset_index(drop=True)


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


# ------------------------------------------------------------------------------------ cleaning
#: the keys :func:`normalise` adds to the report, in the order it adds them (a report merged from parts,
#: as the Spark ingest does, lists them in this order too)
NORMALISE_REPORT_KEYS = ("rows_read", "unknown_metrics", "dropped_unknown_metric", "dropped_bundle_metric_without_bundle",
                         "dropped_no_broker", "dropped_bad_timestamp", "dropped_non_numeric", "dropped_not_finite",
                         "dropped_negative", "duplicates_removed", "gaps_filled", "gaps_left", "rows_written")


def normalise(raw: pd.DataFrame, max_gap: int = MAX_GAP_MINUTES, report: dict | None = None) -> pd.DataFrame:
    """Raw rows → clean rows of the dataset (see the module docstring for every rule)."""
    rep = report if report is not None else {}
    df = validate_rows(raw, rep)
    df = dedupe_minutes(df, rep)
    df = _fill_gaps(df, max_gap, rep)
    rep["rows_written"] = int(rep.get("rows_written", 0)) + len(df)
    return df[_COLUMNS].reset_index(drop=True)


_SPECIAL_TEXT = ["nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"]  # not finite, not "non-numeric"


def _map_values(col: pd.Series, fn) -> pd.Series:
    """``col.map(fn)``, computed once per distinct value when the values are text or missing (labels,
    names and ids repeat a lot: a month of exports has a few thousand distinct ones in 100 M rows)."""
    if len(col) < 4096 or pd.api.types.infer_dtype(col, skipna=True) not in ("string", "empty"):
        return col.map(fn)
    arr = col.to_numpy(dtype=object)
    codes, uniq = pd.factorize(arr)  # missing values (None, NaN) get -1
    out = np.empty(len(uniq) + 1, dtype=object)
    out[:-1] = [fn(u) for u in uniq]
    res = out[codes]
    na = np.flatnonzero(codes < 0)
    if len(na):
        vals = arr[na]
        none = vals == None  # noqa: E711 - elementwise on an object array
        res[na[none]] = fn(None)
        for i in na[~none]:  # NaN and other missing markers, each as map would see it
            res[i] = fn(arr[i])
    return pd.Series(res, index=col.index, dtype=object)


def value_numbers(raw_v: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The value rule of :func:`validate_rows`: ``(number or NaN, is a NaN/Inf spelling)`` of a raw
    ``value`` column (numbers, or text in an object column)."""
    if raw_v.dtype == object and len(raw_v) >= 4096 and pd.api.types.infer_dtype(raw_v, skipna=False) == "string":
        # all text (Prometheus' values): the same answers, the text rule applied only where a number
        # did not come out finite (a special spelling can only be one of those)
        num = pd.to_numeric(raw_v, errors="coerce").astype(float)
        cand = ~np.isfinite(num.to_numpy())
        special = pd.Series(False, index=raw_v.index)
        if cand.any():
            special[cand] = raw_v[cand].str.strip().str.lower().isin(_SPECIAL_TEXT).to_numpy()
            num = num.where(~special, np.nan)
    elif raw_v.dtype == object:
        text = raw_v.astype(str).str.strip().str.lower()
        special = text.isin(_SPECIAL_TEXT)
        num = pd.to_numeric(raw_v.where(~special, None), errors="coerce").astype(float)
    else:
        special = pd.Series(False, index=raw_v.index)
        num = raw_v.astype(float)
    return num, special


def _bundle_text(x) -> str | None:
    return None if x is None or str(x).strip() in ("", "nan", "None") else str(x).strip()


def _broker_text(x) -> str | None:
    return (None if x is None or (isinstance(x, float) and np.isnan(x)) or str(x).strip() in ("", "nan", "None")
            else str(x).strip())


def label_rule(metric, bundle, broker) -> tuple:
    """:func:`validate_rows`' label rules for one row (Spark's ingest applies them once per distinct
    combination): ``(drop, name, metric, bundle, broker)`` — the report key of the first rule refusing
    the row (``None``: kept), the metric name as read, then metric, bundle and broker as kept."""
    name = str(metric).strip()
    mapped = METRIC_ALIASES.get(name, name)
    present = not (bundle is None or bool(pd.isna(bundle)))
    if present and str(bundle).strip() != "" and mapped in _PLAIN_TO_BUNDLE:
        mapped = _PLAIN_TO_BUNDLE[mapped]
    if mapped not in ALL_METRICS:
        return "dropped_unknown_metric", name, mapped, None, None
    b = _bundle_text(bundle if present else None)
    if mapped not in BUNDLE_METRICS:
        b = None
    elif b is None:
        return "dropped_bundle_metric_without_bundle", name, mapped, None, None
    br = _broker_text(broker)
    if br is None:
        return "dropped_no_broker", name, mapped, b, None
    return None, name, mapped, b, br


def validate_rows(raw: pd.DataFrame, report: dict) -> pd.DataFrame:
    """The row-by-row rules of :func:`normalise` (metric names, bundle, broker, timestamp, value): the
    rows kept, ``timestamp`` still the sample's own epoch ms; other columns of ``raw`` pass through."""
    rep = report

    def add(key, n):
        rep[key] = int(rep.get(key, 0)) + int(n)

    df = raw.copy()
    add("rows_read", len(df))
    # metric names
    name = _map_values(df["metric"], lambda x: str(x).strip())
    mapped = _map_values(name, lambda x: METRIC_ALIASES.get(x, x))
    has_bundle = df["bundle"].notna() & _map_values(df["bundle"], lambda x: str(x).strip() != "").astype(bool)
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
    b = _map_values(b, _bundle_text)
    no_bundle = is_bm & b.isna()
    if no_bundle.any():
        add("dropped_bundle_metric_without_bundle", no_bundle.sum())
    df = df.assign(bundle=np.where(is_bm, b, None))[~no_bundle]
    # broker
    br = _map_values(df["broker"], _broker_text)
    add("dropped_no_broker", br.isna().sum())
    df = df.assign(broker=br)[br.notna()]
    # timestamp
    ts = pd.to_numeric(df["timestamp"], errors="coerce")
    bad_ts = ts.isna() | (ts < 0) | (ts > MAX_EPOCH_MS)  # after year 9999: not a time (engine.limits)
    add("dropped_bad_timestamp", bad_ts.sum())
    df = df.assign(timestamp=ts)[~bad_ts]
    # value: numbers (or numeric text); NaN/Inf text is "not finite", anything else "non-numeric"
    num, special = value_numbers(df["value"])
    not_num = num.isna() & ~special
    not_finite = special | (~num.isna() & ~np.isfinite(num.fillna(0.0)))
    neg = ~not_num & ~not_finite & (num < 0)
    add("dropped_non_numeric", not_num.sum())
    add("dropped_not_finite", not_finite.sum())
    add("dropped_negative", neg.sum())
    return df.assign(value=num)[~(not_num | not_finite | neg)]


def dedupe_minutes(df: pd.DataFrame, report: dict, order=None) -> pd.DataFrame:
    """Timestamps floored to the minute; of several samples of one ``(minute, broker, bundle, metric)``
    the latest wins, ties the last one read (``order``: the reading order, default the row order)."""
    df = df.assign(orig=df["timestamp"], order=np.arange(len(df)) if order is None else order)
    df["timestamp"] = (df["timestamp"].astype("int64") // MINUTE_MS) * MINUTE_MS
    df = df.sort_values(["orig", "order"], kind="stable")
    key = ["timestamp", "broker", "bundle", "metric"]
    before = len(df)
    df = df.drop_duplicates(key, keep="last")
    report["duplicates_removed"] = int(report.get("duplicates_removed", 0)) + before - len(df)
    return df.drop(columns=["orig", "order"])


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
           overwrite: bool = False, name: str | None = None, cluster: str | None = None,
           broker_label: str | None = None, broker_map=None) -> dict:
    """Read every input, resolve clusters and broker ids, clean the rows together and write the dataset
    and its ``_actions`` table; returns its metadata (with the ``report`` of what was dropped or filled)."""
    frames, report, formats = [], {}, []
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise InputError("no input files")
    bmap = load_broker_map(broker_map) if isinstance(broker_map, (str, Path)) else broker_map
    for p in inputs:
        raw, used = read_input(p, fmt, metric, broker_label)
        formats.append({"file": str(p), "format": used, "rows": int(len(raw))})
        frames.append(raw)
    raw = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=_COLUMNS)
    raw = resolve_brokers(raw, broker_label=broker_label, broker_map=bmap, cluster=cluster, report=report)
    is_counter = raw["metric"].astype(str).str.strip().isin(COUNTER_ALIASES.keys())
    actions = counter_increases(raw[is_counter], report)
    clean = normalise(raw.loc[~is_counter, _COLUMNS], max_gap=max_gap, report=report)
    if clean.empty:
        raise InputError("no usable rows after cleaning: " + json.dumps(report), source=", ".join(map(str, inputs)))
    report["inputs"] = formats
    report["actions"] = {"rows": int(len(actions)), "counters": sorted(set(actions["counter"]))}
    meta = write_long(clean, out, source="ingest", params={"max_gap_minutes": max_gap, "format": fmt,
                                                          "cluster": cluster, "broker_label": broker_label},
                      report=report, overwrite=overwrite, name=name)
    write_actions(actions, out)
    from .layout import write_wide  # the jobs' wide layout, written once here (dashboard.history.layout)

    meta.setdefault("layouts", {})["wide"] = write_wide(out)
    return meta
