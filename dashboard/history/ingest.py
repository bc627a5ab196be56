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

The readers are in :mod:`.readers` (one per format, and :func:`~.readers.read_input` picking it), the
broker identity rules in :mod:`.identity`; this module holds the cleaning rules and writes the dataset
(:func:`ingest`), in one pandas pass; for big inputs :mod:`.ingest_spark` runs the very same readers and
rules on Spark executors (same dataset, same report).

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

import json
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.limits import MAX_EPOCH_MS

from .dataset import ALL_METRICS, BUNDLE_METRICS, MINUTE_MS, write_actions, write_long
from .identity import _clean_id, load_broker_map, resolve_brokers
from .readers import _COLUMNS, COUNTER_ALIASES, METRIC_ALIASES, read_input

__all__ = ["ingest", "normalise", "validate_rows", "label_rule", "value_numbers", "dedupe_minutes",
           "NORMALISE_REPORT_KEYS", "counter_increases", "MAX_GAP_MINUTES"]

_PLAIN_TO_BUNDLE = {"msg_rate_in": "bundle_msg_rate_in", "msg_rate_out": "bundle_msg_rate_out",
                    "msg_throughput_in": "bundle_msg_throughput_in",
                    "msg_throughput_out": "bundle_msg_throughput_out", "topics": "bundle_topics"}
MAX_GAP_MINUTES = 5


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
