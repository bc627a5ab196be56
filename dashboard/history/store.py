"""The history dataset on disk: long-format metric rows in Parquet, partitioned by day.

Layout
------
::

    DATASET/
      _shedlab.json                      metadata (below); files starting with "_" are ignored by readers
      day=2026-01-05/part-00000.parquet  one or more files per UTC day
      day=2026-01-06/part-00000.parquet
      (results of ``python -m dashboard.history`` go to ``<cache dir>/results/``, see :mod:`.jobs`)

Schema (one row per metric value; rows of a file sorted by ``timestamp, broker, bundle, metric``)

============  ========================  ==========================================================
column        Parquet type              meaning
============  ========================  ==========================================================
timestamp     timestamp[ms, UTC]        the minute the value belongs to (always on a whole minute)
broker        string (dictionary)       broker id, ``host:port`` as in Pulsar's ``brokerId``
metric        string (dictionary)       one of :data:`BROKER_METRICS` or :data:`BUNDLE_METRICS`
value         double                    finite and >= 0 (see units below)
bundle        string (dictionary), null bundle name ``tenant/ns/0x..._0x...`` for ``bundle_*`` metrics, else null
day           partition (``day=``)      the UTC date of ``timestamp``; a directory, not a column in files
============  ========================  ==========================================================

Metrics and units: ``cpu``, ``memory``, ``direct_memory``, ``bandwidth_in``, ``bandwidth_out`` are the
load-report percentages (``pulsar_lb_*_usage``; float32-derived like Pulsar's ``percentUsage()``);
``msg_rate_in/out`` are msg/s and ``msg_throughput_in/out`` bytes/s of the broker's report;
``bundle_msg_rate_in/out`` (msg/s), ``bundle_msg_throughput_in/out`` (bytes/s) and ``bundle_topics``
are per bundle (``pulsar_bundle_*``, only when the cluster exposes them).

Guarantees every writer (ingestion, generator) keeps, so the jobs stay simple: at most one value per
``(timestamp, broker, bundle, metric)``; no NaN, infinite or negative values; timestamps on whole
minutes. A broker is *present* in a minute when it has at least one broker metric there; a missing
resource metric of a present broker counts as 0 % (Pulsar's default ``ResourceUsage(0, 0)``), a
missing rate as 0. Datasets written by other tools that break the first rule are still read: jobs
take the maximum of duplicate values.

Metadata ``_shedlab.json``: ``{"format": "shedlab-history", "version": 1, "name", "created",
"source", "params", "rows", "days", "brokers", "metrics", "has_bundles", "start", "end",
"report"}``; the ``report`` of an ingestion lists what was dropped or filled and why.

Datasets by name (the app's roots, the listing, the shipped sample) are :mod:`.dataset`, which also
re-exports everything here: this module is the format and imports no other module of the package, so
the generator (:mod:`.generate`) and the wide layout (:mod:`.layout`) can write and read it without an
import circle.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.errors import InputError

__all__ = [
    "BROKER_METRICS", "BUNDLE_METRICS", "RESOURCE_METRICS", "RATE_METRICS", "ALL_METRICS", "META_FILE",
    "RESULTS_DIR", "SCHEMA", "MINUTE_MS", "DatasetWriter", "write_long", "read_meta", "fingerprint",
    "read_long", "wide_brokers", "wide_bundles", "day_of", "parse_time", "is_dataset", "ACTIONS_FILE",
    "write_actions", "actual_actions", "to_table", "data_files", "ACTIONS_COLUMNS",
]

RESOURCE_METRICS = ["cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out"]
RATE_METRICS = ["msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"]
BROKER_METRICS = RESOURCE_METRICS + RATE_METRICS
BUNDLE_METRICS = ["bundle_msg_rate_in", "bundle_msg_rate_out", "bundle_msg_throughput_in",
                  "bundle_msg_throughput_out", "bundle_topics"]
ALL_METRICS = BROKER_METRICS + BUNDLE_METRICS
META_FILE = "_shedlab.json"
ACTIONS_FILE = "_actions/actions.parquet"  # the load manager's counters per hour (see dashboard.history.ingest)
ACTIONS_COLUMNS = ["hour", "cluster", "broker", "counter", "result", "reason", "event", "increase"]
RESULTS_DIR = "_results"
MINUTE_MS = 60_000

_DICT = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([
    ("timestamp", pa.timestamp("ms", tz="UTC")),
    ("broker", _DICT),
    ("metric", _DICT),
    ("value", pa.float64()),
    ("bundle", _DICT),
])


# ------------------------------------------------------------------------------------ writing
def day_of(ts_ms: np.ndarray) -> np.ndarray:
    """UTC day number (days since the epoch) of epoch-millisecond timestamps."""
    return np.asarray(ts_ms, dtype=np.int64) // 86_400_000


def _day_name(day: int) -> str:
    return str(np.datetime64(int(day), "D"))


class DatasetWriter:
    """Write a dataset day by day (the generator streams 100 M rows this way).

    ``path`` is created (or emptied with ``overwrite=True``); :meth:`write_day` takes one day's rows as
    a pyarrow table in :data:`SCHEMA`; :meth:`close` writes the metadata.
    """

    def __init__(self, path, *, overwrite: bool = False):
        self.path = Path(path)
        if self.path.exists():
            if not overwrite and any(self.path.iterdir()):
                raise InputError("the output directory exists and is not empty (use --force to replace it)",
                                 source=str(self.path))
            if overwrite:
                if not (self.path / META_FILE).exists() and any(self.path.iterdir()):
                    raise InputError("refusing to replace a directory that is not a Shedlab history dataset",
                                     source=str(self.path))
                shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.rows = 0
        self.days: list[str] = []
        self.brokers: set[str] = set()
        self.metrics: set[str] = set()
        self.has_bundles = False
        self.start_ms: int | None = None
        self.end_ms: int | None = None

    def write_day(self, day: int, table: pa.Table, part: int = 0) -> None:
        if table.num_rows == 0:
            return
        name = _day_name(day)
        d = self.path / f"day={name}"
        d.mkdir(exist_ok=True)
        pq.write_table(table, d / f"part-{part:05d}.parquet", compression="snappy", row_group_size=1 << 20)
        self.rows += table.num_rows
        if name not in self.days:
            self.days.append(name)
        for col, acc in (("broker", self.brokers), ("metric", self.metrics)):
            c = table.column(col)
            c = c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)
            vals = c.dictionary if pa.types.is_dictionary(c.type) else pc.unique(c)
            used = pc.unique(c.indices) if pa.types.is_dictionary(c.type) else None
            if used is not None:
                vals = vals.take(used)
            acc.update(x for x in vals.to_pylist() if x is not None)
        if table.column("bundle").null_count < table.num_rows:
            self.has_bundles = True
        ts = table.column("timestamp").cast(pa.int64())
        lo, hi = pc.min(ts).as_py(), pc.max(ts).as_py()
        self.start_ms = lo if self.start_ms is None else min(self.start_ms, lo)
        self.end_ms = hi if self.end_ms is None else max(self.end_ms, hi)

    def close(self, *, source: str, params: dict | None = None, report: dict | None = None,
              name: str | None = None) -> dict:
        meta = {
            "format": "shedlab-history", "version": 1, "name": name or self.path.name,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "source": source,
            "params": params or {}, "rows": int(self.rows), "days": sorted(self.days),
            "brokers": sorted(self.brokers), "metrics": [m for m in ALL_METRICS if m in self.metrics],
            "has_bundles": bool(self.has_bundles),
            "start": _iso(self.start_ms), "end": _iso(self.end_ms), "report": report or {},
        }
        (self.path / META_FILE).write_text(json.dumps(meta, indent=1))
        return meta


def _iso(ms):
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _dict_array(values) -> pa.Array:
    """Strings (or None) as a dictionary array (cheap to write, dictionary-encoded in Parquet)."""
    arr = pa.array(values, type=pa.string())
    return pc.dictionary_encode(arr)


def to_table(df: pd.DataFrame) -> pa.Table:
    """A long pandas frame (``timestamp`` epoch ms int64, ``broker``, ``metric``, ``value``, ``bundle``)
    as a table in :data:`SCHEMA`."""
    ts = pa.array(df["timestamp"].to_numpy(dtype=np.int64), type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    bundle = df["bundle"] if "bundle" in df else pd.Series([None] * len(df))
    return pa.Table.from_arrays(
        [ts, _dict_array(df["broker"].astype(object).to_numpy()), _dict_array(df["metric"].astype(object).to_numpy()),
         pa.array(df["value"].to_numpy(dtype=np.float64)), _dict_array(bundle.astype(object).where(bundle.notna(), None).to_numpy())],
        schema=SCHEMA)


def write_long(df: pd.DataFrame, path, *, source: str, params: dict | None = None, report: dict | None = None,
               overwrite: bool = False, name: str | None = None) -> dict:
    """Write a clean long frame (``timestamp`` as epoch ms) as a dataset; returns the metadata."""
    w = DatasetWriter(path, overwrite=overwrite)
    if len(df):
        df = df.sort_values(["timestamp", "broker", "bundle", "metric"], kind="stable", na_position="first")
        days = day_of(df["timestamp"].to_numpy())
        bounds = np.flatnonzero(np.diff(days)) + 1
        for part in np.split(np.arange(len(df)), bounds):
            w.write_day(int(days[part[0]]), to_table(df.iloc[part]))
    return w.close(source=source, params=params, report=report, name=name)


# ------------------------------------------------------------------------------------ metadata
def is_dataset(path) -> bool:
    return (Path(path) / META_FILE).is_file()


def read_meta(path) -> dict:
    """The dataset's metadata, or a clear :class:`InputError`."""
    p = Path(path)
    f = p / META_FILE
    if not p.is_dir():
        raise InputError("no such dataset directory", source=str(p))
    if not f.is_file():
        raise InputError(f"not a Shedlab history dataset (no {META_FILE}; create one with "
                         "`python -m dashboard.history ingest` or `generate`)", source=str(p))
    try:
        meta = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable metadata: {exc}", source=str(f)) from None
    if not isinstance(meta, dict) or meta.get("format") != "shedlab-history":
        raise InputError("not a Shedlab history metadata file", source=str(f))
    return meta


def data_files(path) -> list[Path]:
    return sorted(Path(path).glob("day=*/*.parquet"))


def fingerprint(path) -> str:
    """A short hash of the dataset's files (names, sizes, mtimes) and metadata: the cache key part that
    changes whenever the data does. Cheap (``stat`` only), so opening a cached view stays instant."""
    h = hashlib.sha256()
    p = Path(path)
    for f in [p / META_FILE] + data_files(p):
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{f.relative_to(p)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:20]


# ------------------------------------------------------------------------------------ reading (pandas)
_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def parse_time(value, *, end: bool = False) -> pd.Timestamp | None:
    """A user time (ISO date/datetime, epoch s/ms, Timestamp) as a naive UTC ``Timestamp``.

    With ``end=True`` a bare date means the end of that day (inclusive ranges read naturally).
    """
    if value is None or value == "":
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        v = float(value)
        return pd.Timestamp(int(v if v > 1e11 else v * 1000), unit="ms")
    try:
        t = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise InputError(f"not a date or time: {value!r}") from None
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    if end and isinstance(value, str) and len(value.strip()) == 10 and _TIME_RE.match(value.strip()):
        t = t + pd.Timedelta(days=1) - pd.Timedelta(milliseconds=1)
    return t


def read_long(path, start=None, end=None, *, bundles: bool | None = None,
              brokers: Iterable[str] | None = None, categorical: bool = False) -> pd.DataFrame:
    """Read (a time range of) a dataset into pandas: ``timestamp`` (naive UTC), ``broker``, ``metric``,
    ``value``, ``bundle`` (strings, or pandas categoricals with ``categorical=True`` — several times
    less memory for big ranges). ``bundles=False`` keeps broker rows only, ``True`` bundle rows only."""
    import pyarrow.dataset as ds

    p = Path(path)
    read_meta(p)
    t0, t1 = parse_time(start), parse_time(end, end=True)
    files = data_files(p)
    if t0 is not None or t1 is not None:
        d0 = t0.normalize() if t0 is not None else None
        d1 = t1.normalize() if t1 is not None else None
        keep = []
        for f in files:
            d = pd.Timestamp(f.parent.name.split("=", 1)[1])
            if (d0 is None or d >= d0) and (d1 is None or d <= d1):
                keep.append(f)
        files = keep
    if not files:
        return pd.DataFrame({"timestamp": pd.Series(dtype="datetime64[ns]"), "broker": pd.Series(dtype=object),
                             "metric": pd.Series(dtype=object), "value": pd.Series(dtype=float),
                             "bundle": pd.Series(dtype=object)})
    try:
        dset = ds.dataset([str(f) for f in files], format="parquet", schema=SCHEMA)
        flt = None
        if t0 is not None:
            flt = ds.field("timestamp") >= pa.scalar(t0.tz_localize("UTC"), type=pa.timestamp("ms", tz="UTC"))
        if t1 is not None:
            f2 = ds.field("timestamp") <= pa.scalar(t1.tz_localize("UTC"), type=pa.timestamp("ms", tz="UTC"))
            flt = f2 if flt is None else (flt & f2)
        if bundles is False:
            f3 = ds.field("bundle").is_null()
            flt = f3 if flt is None else (flt & f3)
        elif bundles is True:
            f3 = ds.field("bundle").is_valid()
            flt = f3 if flt is None else (flt & f3)
        if brokers is not None:
            f4 = ds.field("broker").isin(list(brokers))
            flt = f4 if flt is None else (flt & f4)
        table = dset.to_table(filter=flt)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"unreadable dataset file: {exc}", source=str(p)) from None
    df = table.to_pandas()
    df["timestamp"] = df["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]")
    if not categorical:
        for c in ("broker", "metric", "bundle"):
            df[c] = df[c].astype(object).where(df[c].notna(), None)
    return df


def _pivot(rows: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """Long rows → one column per metric (max of duplicates, missing 0), keys as plain strings."""
    code = pd.Categorical(rows["metric"].astype(object) if isinstance(rows["metric"].dtype, pd.CategoricalDtype)
                          else rows["metric"], categories=metrics).codes
    g = (rows.assign(_m=code).groupby(keys + ["_m"], observed=True, sort=True)["value"].max().unstack("_m"))
    g = g.reindex(columns=range(len(metrics)))
    g.columns = metrics
    w = g.fillna(0.0).reset_index()
    for k in keys[1:]:
        w[k] = w[k].astype(str) if isinstance(w[k].dtype, pd.CategoricalDtype) else w[k].astype(object)
    w.columns.name = None
    return w.sort_values(keys, kind="stable").reset_index(drop=True)


def wide_brokers(long_df: pd.DataFrame) -> pd.DataFrame:
    """Broker rows pivoted to one row per ``(timestamp, broker)`` with one column per broker metric;
    missing metrics of a present broker become 0 (Pulsar's default), duplicates take the maximum."""
    b = long_df[long_df["bundle"].isna() & long_df["metric"].isin(BROKER_METRICS)]
    if b.empty:
        return pd.DataFrame({c: pd.Series(dtype="datetime64[ns]" if c == "timestamp" else object if c == "broker"
                                          else float) for c in ["timestamp", "broker"] + BROKER_METRICS})
    return _pivot(b, ["timestamp", "broker"], BROKER_METRICS)


def wide_bundles(long_df: pd.DataFrame) -> pd.DataFrame:
    """Bundle rows pivoted to one row per ``(timestamp, broker, bundle)`` (missing values 0)."""
    b = long_df[long_df["bundle"].notna() & long_df["metric"].isin(BUNDLE_METRICS)]
    if b.empty:
        return pd.DataFrame(columns=["timestamp", "broker", "bundle"] + BUNDLE_METRICS)
    return _pivot(b, ["timestamp", "broker", "bundle"], BUNDLE_METRICS)


# ------------------------------------------------------------------------------------ what the cluster did
def write_actions(df: pd.DataFrame, path) -> None:
    """Write the ``actions`` table (``hour`` epoch ms) beside the metrics, ``DATASET/_actions/``."""
    f = Path(path) / ACTIONS_FILE
    if f.exists():
        f.unlink()
    if df is None or df.empty:
        return
    f.parent.mkdir(parents=True, exist_ok=True)
    t = pa.table({"hour": pa.array(df["hour"].astype("int64").to_numpy(), pa.int64()).cast(pa.timestamp("ms", "UTC")),
                  **{c: pa.array(df[c].astype(object).where(df[c].notna(), None).tolist(), pa.string())
                     for c in ("cluster", "broker", "counter", "result", "reason", "event")},
                  "increase": pa.array(df["increase"].astype(float).to_numpy(), pa.float64())})
    pq.write_table(t, f)


def actual_actions(dataset, start=None, end=None) -> pd.DataFrame:
    """What the cluster actually did: the load manager's counter increases per hour (columns ``hour``
    (UTC Timestamp), ``cluster``, ``broker``, ``counter``, ``result``, ``reason``, ``event``, ``increase``), hours in
    ``[start, end]``; empty when the dataset has no counters."""
    f = Path(dataset) / ACTIONS_FILE
    if not f.is_file():
        return pd.DataFrame(columns=ACTIONS_COLUMNS)
    df = pq.read_table(f).to_pandas()
    for c in ACTIONS_COLUMNS:
        if c not in df.columns:  # written before the column existed
            df[c] = None
    df["hour"] = df["hour"].dt.tz_convert("UTC").dt.tz_localize(None)
    s, e = parse_time(start), parse_time(end, end=True)
    if s is not None:
        df = df[df["hour"] >= s]
    if e is not None:
        df = df[df["hour"] <= e]
    return df[ACTIONS_COLUMNS].reset_index(drop=True)
