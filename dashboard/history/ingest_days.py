"""Spark ingest's clean-and-write step on numpy arrays (:mod:`.ingest_spark`, stage 3): one task's rows of
a day as integer series codes (``sid``) with their minute and value, de-duplicated and gap-filled by the
rules of :func:`.ingest.dedupe_minutes` and :func:`.ingest._fill_gaps`, and written as the day's long file
(:func:`.store.to_table`'s table) and wide file (:func:`.layout.wide_table`'s table), built from the codes
without a Python object per row."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .store import BROKER_METRICS, SCHEMA
from .store import _day_name as day_name

DAY_MS = 86_400_000
MINUTE_MS = 60_000


def _take(cols: dict, idx) -> dict:
    return {k: v[idx] for k, v in cols.items()}


def _cat(parts: list) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _dedupe_fill_day(cols: dict, carry: dict | None, max_gap: int, rep: dict):
    """:func:`.ingest.dedupe_minutes` and :func:`.ingest._fill_gaps` on one day's rows (``seq``,
    ``timestamp``, ``value``, ``sid``), the series' last rows of earlier days (``carry``) in front:
    (rows of the day and the filled rows, new carry). The same rules and counts."""
    orig = cols["timestamp"]
    minute = (orig.astype(np.int64) // MINUTE_MS) * MINUTE_MS
    sid = cols["sid"]
    span = int((minute.max() - minute.min()) // MINUTE_MS) + 1 if len(minute) else 1
    key = sid * span + (minute - (minute.min() if len(minute) else 0)) // MINUTE_MS  # (series, minute)
    order = np.argsort(key, kind="stable")  # rows arrive in runs sorted by it
    k_s = key[order]
    if len(k_s) > 1 and (k_s[1:] == k_s[:-1]).any():  # several samples in a minute: the latest, then the last read
        order = np.lexsort((cols["seq"], orig, key))
        k_s = key[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = k_s[1:] != k_s[:-1]
    keep = order[last]
    rep["duplicates_removed"] = int(rep.get("duplicates_removed", 0)) + int(len(order) - len(keep))
    day = {"timestamp": minute[keep], "value": cols["value"][keep], "sid": sid[keep]}  # sorted by (sid, minute)
    rep.setdefault("gaps_filled", 0)
    rep.setdefault("gaps_left", 0)
    if max_gap <= 0 or not len(keep):
        return day, None
    if carry is None:
        both, o = day, np.arange(len(keep))
    else:  # a carried row is earlier than the day's rows of its series: a stable sort by series is enough
        both = _cat([carry, day])
        o = np.argsort(both["sid"], kind="stable")
    ts_s, k_s = both["timestamp"][o], both["sid"][o]
    same = np.zeros(len(o), dtype=bool)
    same[1:] = k_s[1:] == k_s[:-1]
    step = np.zeros(len(o), dtype=np.int64)
    step[1:] = (ts_s[1:] - ts_s[:-1]) // MINUTE_MS
    missing = np.where(same, step - 1, 0)
    fill = (missing >= 1) & (missing <= max_gap)
    rep["gaps_left"] = int(rep["gaps_left"]) + int(((missing > max_gap) & same).sum())
    counts = missing[fill]
    rep["gaps_filled"] = int(rep["gaps_filled"]) + int(counts.sum())
    end = np.ones(len(o), dtype=bool)
    end[:-1] = k_s[1:] != k_s[:-1]
    new_carry = _take(both, o[end])
    if not len(counts):
        return day, new_carry
    src = o[np.repeat(np.flatnonzero(fill) - 1, counts)]
    offs = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + 1
    extra = _take(both, src)
    extra["timestamp"] = both["timestamp"][src] + offs * MINUTE_MS
    return _cat([day, extra]), new_carry


def _dict_column(codes: np.ndarray, names: np.ndarray):
    """Codes into ``names`` (-1: missing) as :func:`.store.to_table`'s dictionary (first appearance order)."""
    import pyarrow as pa

    valid = codes >= 0
    used = pd.unique(codes[valid])  # in order of appearance
    remap = np.zeros(max(len(names), 1), dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    idx = remap[np.where(valid, codes, 0)]
    return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32(), mask=None if valid.all() else ~valid),
                                          pa.array(names[used].tolist(), pa.string()))


def _present(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct codes (0 <= code < size), ascending (the name lists are sorted: in name order)."""
    return np.flatnonzero(np.bincount(codes, minlength=size))


def _write_day(day: int, c: dict, cols: dict, out_dir: str, part: int) -> dict:
    """One day's rows of a task (``timestamp`` minute, ``value``, ``sid``) as its long file (sorted as
    :func:`.store.write_long`) and wide file (:func:`.layout.wide_table`'s table); the day's summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .layout import ROW_GROUP, WIDE_DIR, WIDE_SCHEMA

    ts, sid = c["timestamp"], c["sid"]
    t0 = int(ts.min())
    nsid = max(1, len(cols["rank"]))
    o = np.argsort((ts - t0) // MINUTE_MS * nsid + cols["rank"][sid], kind="stable")  # (timestamp, broker, bundle, metric)
    ts, sid, value = ts[o], sid[o], c["value"][o]
    b, u, m = cols["b"][sid], cols["u"][sid], cols["m"][sid]
    stamp = pa.array(ts, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    table = pa.Table.from_arrays([stamp, _dict_column(b, cols["bro"]), _dict_column(m, cols["met"]),
                                  pa.array(value, pa.float64()), _dict_column(u, cols["bun"])], schema=SCHEMA)
    name = day_name(day)
    d = Path(out_dir) / f"day={name}"
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, d / f"part-{part:05d}.parquet", compression="snappy", row_group_size=1 << 20)  # as DatasetWriter
    # wide: the broker metrics' rows (no bundle), already in (timestamp, broker) order; one per metric
    w = cols["w"][sid]
    sel = w >= 0
    wide_rows = 0
    if sel.any():
        wts, wb, wm, wv = ts[sel], b[sel], w[sel], value[sel]
        present = _present(wb, len(cols["bro"]))
        rank = np.zeros(len(cols["bro"]), dtype=np.int64)
        rank[present] = np.arange(len(present))
        br = rank[wb]
        new = np.ones(len(wts), dtype=bool)
        new[1:] = (wts[1:] != wts[:-1]) | (br[1:] != br[:-1])
        row = np.cumsum(new) - 1
        vals = np.full((int(row[-1]) + 1, len(BROKER_METRICS)), -np.inf)
        np.maximum.at(vals, (row, wm), wv)
        vals[np.isneginf(vals)] = 0.0
        first = np.flatnonzero(new)
        wcols = [pa.array(wts[first], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
                 pa.DictionaryArray.from_arrays(pa.array(br[first].astype(np.int32)),
                                                pa.array(cols["bro"][present].tolist(), pa.string()))]
        wcols += [pa.array(vals[:, i]) for i in range(len(BROKER_METRICS))]
        wt = pa.Table.from_arrays(wcols, schema=WIDE_SCHEMA)
        wide_rows = wt.num_rows
        wd = Path(out_dir) / WIDE_DIR / f"day={name}"
        wd.mkdir(parents=True, exist_ok=True)
        pq.write_table(wt, wd / f"part-{part:05d}.parquet", compression="snappy", row_group_size=ROW_GROUP)
    return {"kind": "day", "day": name, "rows": int(len(ts)), "wide_rows": int(wide_rows),
            "brokers": cols["bro"][_present(b, len(cols["bro"]))].tolist(),
            "metrics": cols["met"][_present(m, len(cols["met"]))].tolist(),
            "has_bundles": bool((u >= 0).any()), "start": int(ts[0]), "end": int(ts[-1])}
