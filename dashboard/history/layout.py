"""The jobs' storage layout: broker-minute rows with the nine broker metrics as columns ("wide").

The long layout (one row per metric value, :mod:`.dataset`) is what ingestion produces and stays an
accepted input. Every job starts by pivoting it to one row per ``(timestamp, broker)`` — the most
expensive step of a Spark job on 100 M long rows (9 values per output row, a shuffle on two keys).
So the pivot is done once, when a dataset is written (``ingest``, ``generate``, or ``python -m
dashboard.history layout DATASET`` for an older one), and stored beside the long files::

    DATASET/_wide/day=2026-01-05/part-00000.parquet

============  ====================  ==============================================================
column        Parquet type          meaning
============  ====================  ==============================================================
timestamp     timestamp[ms, UTC]    the minute
broker        string (dictionary)   broker id
cpu ... msg_throughput_out  double  :data:`.dataset.BROKER_METRICS`, missing → 0, duplicates → max
day           partition (``day=``)  the UTC date (a directory): a time range reads only its days
============  ====================  ==============================================================

Rows of a file are sorted by ``(timestamp, broker)`` — the order of the minute aggregates and of the
replay — in row groups of 64 k rows, so a time filter also skips row groups by their statistics.
It is exactly :func:`.dataset.wide_brokers` of the day's long rows (the tests check it).

The directory starts with ``_`` so long-layout readers (Spark's, pyarrow's) ignore it; the metadata
records it as ``"layouts": {"wide": {"dir": "_wide", "rows": N, "fingerprint": ...}}``, and a
reader uses it only when that fingerprint still matches the long files (a dataset changed by another
tool falls back to the long layout). Bundle metrics stay in the long layout only (the per-bundle job
and real-bundle backtests read them there).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .store import BROKER_METRICS, META_FILE, data_files, read_long, read_meta

__all__ = ["WIDE_DIR", "WIDE_SCHEMA", "write_wide", "wide_path", "has_wide", "read_wide", "wide_table"]

WIDE_DIR = "_wide"
ROW_GROUP = 1 << 16
WIDE_SCHEMA = pa.schema([("timestamp", pa.timestamp("ms", tz="UTC")),
                         ("broker", pa.dictionary(pa.int32(), pa.string()))]
                        + [(m, pa.float64()) for m in BROKER_METRICS])


def _long_fingerprint(path) -> str:
    """The fingerprint of the long files only (the wide layout must not change it)."""
    import hashlib

    h = hashlib.sha256()
    p = Path(path)
    for f in data_files(p):
        st = f.stat()
        h.update(f"{f.relative_to(p)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:20]


def wide_table(long_day) -> pa.Table:
    """One day's long rows (pandas, from :func:`.dataset.read_long`) → the wide table: the same rows
    and values as :func:`.dataset.wide_brokers` (max of duplicates, missing 0), pivoted with numpy
    (one sort of an integer key, several times faster than a pandas group-by for 3 M rows a day)."""
    import pandas as pd

    b = long_day[long_day["bundle"].isna() & long_day["metric"].isin(BROKER_METRICS)]
    mcode = pd.Categorical(np.asarray(b["metric"].astype(object)), categories=BROKER_METRICS).codes.astype(np.int64)
    brk = pd.Categorical(np.asarray(b["broker"].astype(object)))
    names = np.asarray(brk.categories, dtype=object)
    order = np.argsort(names.astype(str), kind="stable")  # broker codes in name order: rows sort like the pandas pivot
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    bcode = rank[brk.codes.astype(np.int64)]
    ts = b["timestamp"].to_numpy().astype("datetime64[ms]").astype(np.int64)
    key = (ts - (ts.min() if len(ts) else 0)) * max(1, len(names)) + bcode
    uniq, inv = np.unique(key, return_inverse=True)
    vals = np.full((len(uniq), len(BROKER_METRICS)), -np.inf)
    np.maximum.at(vals, (inv, mcode), b["value"].to_numpy(dtype=np.float64))
    vals[np.isneginf(vals)] = 0.0
    first = np.zeros(len(uniq), dtype=np.int64)
    first[inv[::-1]] = np.arange(len(inv))[::-1]  # one source row of each output row
    sorted_names = names[order]
    cols = [pa.array(ts[first], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            pa.DictionaryArray.from_arrays(pa.array(bcode[first].astype(np.int32)),
                                           pa.array(sorted_names.astype(str).tolist(), pa.string()))]
    cols += [pa.array(vals[:, i]) for i in range(len(BROKER_METRICS))]
    return pa.Table.from_arrays(cols, schema=WIDE_SCHEMA)


def write_wide(path, progress=None) -> dict:
    """Write (or rewrite) the wide layout of the dataset at ``path`` day by day; returns its info and
    records it in the metadata. ``progress(done_days, days)`` after each day."""
    import shutil

    p = Path(path)
    meta = read_meta(p)
    out = p / WIDE_DIR
    if out.exists():
        shutil.rmtree(out)
    days = meta.get("days") or []
    rows = 0
    for i, day in enumerate(days):
        long_day = read_long(p, day, day, bundles=False, categorical=True)
        t = wide_table(long_day)
        if t.num_rows:
            d = out / f"day={day}"
            d.mkdir(parents=True, exist_ok=True)
            pq.write_table(t, d / "part-00000.parquet", compression="snappy", row_group_size=ROW_GROUP)
            rows += t.num_rows
        if progress:
            progress(i + 1, len(days))
    info = {"dir": WIDE_DIR, "rows": int(rows), "fingerprint": _long_fingerprint(p)}
    meta.setdefault("layouts", {})["wide"] = info
    (p / META_FILE).write_text(json.dumps(meta, indent=1))
    return info


def has_wide(path, meta: dict | None = None) -> bool:
    """The dataset has an up-to-date wide layout (local datasets; a URI dataset reports it in its
    metadata and is trusted, see :func:`.sparkio.read_broker_minutes`)."""
    p = Path(path)
    meta = meta if meta is not None else read_meta(p)
    info = (meta.get("layouts") or {}).get("wide")
    if not info or not (p / info.get("dir", WIDE_DIR)).is_dir():
        return False
    return info.get("fingerprint") == _long_fingerprint(p)


def wide_path(path) -> Path:
    return Path(path) / WIDE_DIR


def read_wide(path, start=None, end=None):
    """The wide rows of ``[start, end]`` as pandas (``timestamp`` naive UTC, ``broker`` str), sorted
    by ``(timestamp, broker)``: what :func:`.dataset.wide_brokers` of the long rows gives."""
    import pandas as pd
    import pyarrow.dataset as ds

    from .store import parse_time

    t0, t1 = parse_time(start), parse_time(end, end=True)
    files = []
    for f in sorted(wide_path(path).glob("day=*/*.parquet")):  # prune whole days by the directory name
        d = pd.Timestamp(f.parent.name.split("=", 1)[1])
        if (t0 is None or d >= t0.normalize()) and (t1 is None or d <= t1.normalize()):
            files.append(str(f))
    dset = ds.dataset(files, format="parquet", schema=WIDE_SCHEMA)
    flt = None
    if t0 is not None:
        flt = ds.field("timestamp") >= pa.scalar(t0.tz_localize("UTC"), type=pa.timestamp("ms", tz="UTC"))
    if t1 is not None:
        f2 = ds.field("timestamp") <= pa.scalar(t1.tz_localize("UTC"), type=pa.timestamp("ms", tz="UTC"))
        flt = f2 if flt is None else flt & f2
    t = dset.to_table(columns=["timestamp", "broker"] + BROKER_METRICS, filter=flt)
    df = t.to_pandas()
    df["timestamp"] = df["timestamp"].dt.tz_convert("UTC").dt.tz_localize(None).astype("datetime64[ns]")
    df["broker"] = df["broker"].astype(str).astype(object)
    return df.sort_values(["timestamp", "broker"], kind="stable").reset_index(drop=True)
