"""Spark job: cluster aggregates per minute / hour / day, per-broker percentiles, hottest brokers.

DataFrame in (the broker-minute table of the wide layout, :func:`.sparkio.read_broker_minutes`, or
the long dataset, :func:`.sparkio.read_history`) → DataFrames out:

``minute``  one row per minute: ``brokers`` present; ``rate_max``, ``rate_min``, ``rate_ratio`` (msg
            rate in+out, max/min); ``thr_max``, ``thr_min``, ``thr_ratio`` (throughput in+out);
            ``cpu_max``, ``cpu_min``, ``cpu_range``; ``usage_mean``, ``usage_std`` (population),
            ``usage_max``, ``usage_min``, ``usage_gap`` of the *weighted usage*; ``hottest`` broker.
``hour``, ``day``  the minutes rolled up: ``minutes``, ``brokers_min/max``, ``*_mean`` and ``*_max``
            of ``rate_ratio``, ``thr_ratio``, ``cpu_range``, ``usage_std``, ``usage_gap`` and the mean of
            ``usage_mean``.
``brokers`` one row per broker: ``minutes`` present, ``usage_mean``, ``usage_p50/p90/p99`` (exact,
            linear interpolation like numpy), ``usage_max``, ``cpu_mean``, ``cpu_p90``, ``cpu_max``,
            ``rate_mean``, ``thr_mean``, ``hottest_minutes`` (minutes it was the hottest broker).
``top``     the ``top_n`` brokers by ``usage_mean`` (ties by name) with their ``rank``.

Definitions (the same as the engine's):

* weighted usage (percent) = ``max(cpu·wCpu, directMemory·wDirectMemory, bandwidthIn·wIn,
  bandwidthOut·wOut)`` — Pulsar's ``getMaxResourceUsageWithWeight`` × 100 (memory excluded). The
  default weights are the config's: 1, 0, 1, 1.
* ratios divide by the minimum, replaced by 1.0 when it is within 1e-6 of zero — what
  UniformLoadShedder does, so ``rate_ratio`` is the number it compares (as a multiple).
* the hottest broker of a minute is the one with the highest weighted usage, ties to the smallest id.
"""
from __future__ import annotations

from engine.config import LoadBalancerConfig

# the DataFrame attribute names live in sparkio, which reads them back: it never imports this module
from .sparkio import WIDE_SOURCE_ATTR, broker_minutes, collected_frame

__all__ = ["cluster_aggregates", "one_pass_tables", "one_pass_files", "rollup", "top_hottest", "DEFAULT_QUANTILES", "ROLLUP_COLUMNS"]

DEFAULT_QUANTILES = (0.5, 0.9, 0.99)
ROLLUP_COLUMNS = ["rate_ratio", "thr_ratio", "cpu_range", "usage_std", "usage_gap"]
EPS = 1e-6


def _weights(weights):
    return tuple(float(x) for x in (weights if weights is not None else LoadBalancerConfig().weights))


def with_usage(wide, weights=None):
    """Add ``usage`` (weighted, percent), ``rate`` and ``thr`` to the broker-minute table."""
    from pyspark.sql import functions as F

    wc, wd, wi, wo = _weights(weights)
    return (wide.withColumn("usage", F.greatest(F.col("cpu") * wc, F.col("direct_memory") * wd,
                                                F.col("bandwidth_in") * wi, F.col("bandwidth_out") * wo))
            .withColumn("rate", F.col("msg_rate_in") + F.col("msg_rate_out"))
            .withColumn("thr", F.col("msg_throughput_in") + F.col("msg_throughput_out")))


def rollup(minute, unit: str):
    """Roll the minute table up to ``unit`` = ``"hour"`` or ``"day"`` (UTC)."""
    from pyspark.sql import functions as F

    if unit not in ("hour", "day"):
        raise ValueError(f"unit must be hour or day, got {unit!r}")
    aggs = [F.count("*").alias("minutes"), F.min("brokers").alias("brokers_min"),
            F.max("brokers").alias("brokers_max"), F.avg("usage_mean").alias("usage_mean")]
    for c in ROLLUP_COLUMNS:
        aggs += [F.avg(c).alias(f"{c}_mean"), F.max(c).alias(f"{c}_max")]
    return minute.groupBy(F.date_trunc(unit, "timestamp").alias("timestamp")).agg(*aggs)


def _qname(q: float) -> str:
    s = f"{q * 100:g}"
    return s.replace(".", "_")


def top_hottest(brokers, n: int = 10):
    """The ``n`` brokers with the highest mean weighted usage (ties by broker id), ranked from 1."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.orderBy(F.col("usage_mean").desc(), F.col("broker").asc())
    return brokers.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= int(n))


def cluster_aggregates(df, weights=None, quantiles=DEFAULT_QUANTILES, top_n: int = 10) -> dict:
    """The whole job: a DataFrame → ``{"minute", "hour", "day", "brokers", "top"}`` DataFrames.

    ``df`` is either the broker-minute table (the wide layout, :func:`.sparkio.read_broker_minutes`:
    read as it is) or the long dataset (:func:`.sparkio.read_history`: pivoted first).

    It runs :func:`one_pass_tables` (or :func:`one_pass_files` on a local dataset's wide files): one
    scan of the table and one shuffle give the minute and broker tables, collected (they are small: a
    row per minute, a row per broker) and handed back as DataFrames over the collected rows
    (:func:`.sparkio.to_pandas` returns those rows without a second round trip); hour, day and top are
    computed from them. The percentiles are exact (numpy's linear interpolation); Spark's
    ``percentile_approx`` is not offered: on the same data it took 15–20× as long as this exact pass.
    ``result["_cached"]`` lists what to ``unpersist()`` when done (nothing here; the runner does).
    """
    wide = broker_minutes(df) if "metric" in df.columns else df
    spark = wide.sparkSession
    source = getattr(df, "__dict__", {}).get(WIDE_SOURCE_ATTR)
    if source is not None and set(_WIDE_NEEDED) <= set(source["columns"]) and _local_master(spark):
        minute_pd, brokers_pd = one_pass_files(spark, source, weights, quantiles)
    else:
        minute_pd, brokers_pd = one_pass_tables(with_usage(wide, weights), quantiles)
    minute = _from_pandas(spark, minute_pd, _minute_columns())
    brokers = _from_pandas(spark, brokers_pd, _broker_columns(quantiles))
    cached = []
    return {"minute": minute, "hour": rollup(minute, "hour"), "day": rollup(minute, "day"),
            "brokers": brokers, "top": top_hottest(brokers, top_n), "_cached": cached}


def _from_pandas(spark, pdf, cols):
    """A DataFrame over collected rows; it keeps them for :func:`.sparkio.to_pandas`."""
    return collected_frame(spark, pdf[cols], _ddl(cols))


# ============================================================================================ one pass
# The exact job in one scan: each input partition is reduced in Python (numpy) to partials — per
# minute the counts, extremes, mean, sum of squared deviations and hottest broker; per broker the
# counts, sums, maxima and its raw usage and CPU values — and one shuffle brings each broker's values
# (and each day's minute partials) to one task, which computes the exact percentiles (numpy, linear
# interpolation like pandas) and merges the minutes. No pivot or table is written between passes.
# A local dataset's wide files skip the shuffle (:func:`one_pass_files`): each task reads every file and
# keeps one share of the brokers, so it holds their values whole and merges them itself.

# Numbers travel as raw little-endian bytes (one binary value a row: ts int64, v/u/c float64): Spark
# copies a binary value whole, where an array<double> is converted element by element.
_PARTIAL_SCHEMA = "key string, ts binary, names array<string>, v binary, u binary, c binary"
#: per-minute partial stats, in the order they are packed into ``v``
_MINUTE_PARTS = ("n", "rate_max", "rate_min", "thr_max", "thr_min", "cpu_max", "cpu_min", "usage_mean", "usage_m2",
                 "usage_max", "usage_min")
_DAY_US = 86_400_000_000


def _arrow_schema():
    import pyarrow as pa

    return pa.schema([("key", pa.string()), ("ts", pa.binary()), ("names", pa.list_(pa.string())),
                      ("v", pa.binary()), ("u", pa.binary()), ("c", pa.binary())])


def _bin(arrays, dtype):
    """A binary Arrow array, one value per numpy array (its raw bytes), built without a copy per value."""
    import numpy as np
    import pyarrow as pa

    arrays = [np.ascontiguousarray(a, dtype=dtype) for a in arrays]
    data = np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)
    offsets = np.zeros(len(arrays) + 1, dtype=np.int32)
    np.cumsum([a.nbytes for a in arrays], out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), len(arrays), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _unbin(col, dtype):
    """The numpy arrays of a binary column (one per row)."""
    import numpy as np

    return [np.frombuffer(x, dtype=dtype) for x in col.to_pylist()]


def _rows(keys, ts, names, v, u, c):
    """A record batch of the partial schema from lists (one entry per row) of numpy arrays / name lists."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array(keys, pa.string()), _bin(ts, "<i8"), pa.array(names, pa.list_(
        pa.string())), _bin(v, "<f8"), _bin(u, "<f8"), _bin(c, "<f8")], schema=_arrow_schema())


def _segments(sorted_keys):
    """Start index of each run of equal values in a sorted array, and the run lengths."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return starts, np.diff(np.r_[starts, sorted_keys.size])


def _min_rank(seg_of_row, rank, nseg):
    """Per segment, the smallest ``rank`` of its rows (-1 for a segment without rows)."""
    import numpy as np

    top = np.iinfo(np.int64).max
    best = np.full(nseg, top, dtype=np.int64)
    np.minimum.at(best, seg_of_row, rank)
    best[best == top] = -1
    return best


def _partials(batches):
    """mapInArrow: one input partition (timestamp, broker, usage, cpu, rate, thr) → partial rows.

    Rows sorted by timestamp (the wide layout's files are) are used as they come; others are sorted
    first. Per minute: a row per day holding that day's minutes; per broker: a row holding its
    count, sums and maxima and, as lists, its usage and CPU values.
    """
    import pyarrow as pa

    batches = [b for b in batches if b.num_rows]
    if batches:
        yield _partials_of(pa.Table.from_batches(batches))


def _read_wide(path, weights, t0_us, t1_us, part: int = 0, nparts: int = 1):
    """One wide-layout file as numpy arrays ``(ts µs, broker codes, broker names, usage, cpu, rate,
    thr)``: the rows of ``[t0_us, t1_us]`` and, when ``nparts > 1``, only the brokers of share ``part``
    (:func:`_share`); usage weighted like :func:`.reference.with_usage_pd`. ``None`` when no row is left."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    wc, wd, wi, wo = weights
    t = pq.read_table(path, columns=["timestamp", "broker"] + list(_WIDE_NEEDED), memory_map=True)
    ts = t.column("timestamp").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    col = t.column("broker")
    col = col.unify_dictionaries() if pa.types.is_dictionary(col.type) else col
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    names = np.asarray(col.dictionary.cast(pa.string()).to_pylist(), dtype=object)
    code = col.indices.to_numpy(zero_copy_only=False)
    keep = None
    if t0_us is not None:
        keep = ts >= t0_us
    if t1_us is not None:
        keep = (ts <= t1_us) if keep is None else keep & (ts <= t1_us)
    if nparts > 1:
        mine = _share(names, part, nparts)[code]
        keep = mine if keep is None else keep & mine
    rows = None if keep is None else np.flatnonzero(keep)
    if rows is not None and not rows.size or not ts.size:
        return None

    def get(x):
        return x if rows is None else x[rows]

    c = {k: get(t.column(k).to_numpy()) for k in _WIDE_NEEDED}
    usage = np.maximum(np.maximum(c["cpu"] * wc, c["direct_memory"] * wd),
                       np.maximum(c["bandwidth_in"] * wi, c["bandwidth_out"] * wo))
    return (get(ts), get(code), names, usage, c["cpu"], c["msg_rate_in"] + c["msg_rate_out"],
            c["msg_throughput_in"] + c["msg_throughput_out"])


def _share(names, part: int, nparts: int):
    """Per broker id, whether it belongs to share ``part`` of ``nparts``: CRC-32 of the id modulo
    ``nparts`` (the same in every file and every process)."""
    import zlib

    import numpy as np

    return np.fromiter((zlib.crc32(str(n).encode()) % nparts == part for n in names), dtype=bool, count=len(names))


def _share_partials(weights, t0_us, t1_us, files, quantiles, nparts, batches):
    """mapInArrow over rows of share numbers: a task reads every file of the range, keeps the rows
    of its share of the brokers (:func:`_read_wide`, :func:`_reduce`) and merges them itself: whole
    brokers (their exact percentiles, final: :func:`_broker_row`) and, per day, the minutes of its
    brokers (partials the driver merges across shares). No shuffle: what leaves the task is a row
    per broker and per day."""
    import numpy as np
    import pyarrow as pa

    for b in batches:
        for part in b.column(0).to_pylist():
            mk, mts, mnames, mv = [], [], [], []
            per = {}  # broker -> ([7-value partials], [usage arrays], [cpu arrays]), in file order
            for f in files:
                got = _read_wide(f, weights, t0_us, t1_us, int(part), nparts)
                if got is None:
                    continue
                keys, tsl, nml, vl, bnames, bv, ul, cl = _reduce(*got)
                mk += keys
                mts += tsl
                mnames += nml
                mv += vl
                for name, v, u, c in zip(bnames, bv, ul, cl):
                    acc = per.setdefault(str(name), ([], [], []))
                    acc[0].append(v)
                    acc[1].append(u)
                    acc[2].append(c)
            if not mk and not per:
                continue
            empty = np.empty(0)
            minutes = _merge_by_key(quantiles, pa.Table.from_batches(
                [_rows(mk, mts, mnames, mv, [empty] * len(mk), [empty] * len(mk))], schema=_arrow_schema()))
            yield from minutes.to_batches()
            names = sorted(per)
            rows = [_broker_row(quantiles, np.stack(per[n][0]), np.concatenate(per[n][1]), np.concatenate(per[n][2]))
                    for n in names]
            yield _rows(["b" + n for n in names], [empty] * len(names), [[]] * len(names), rows,
                        [empty] * len(names), [empty] * len(names))


def _merge_by_key(quantiles, table):
    """:func:`_merge` of the rows of each key of ``table`` (partial rows in, one merged row per key out)."""
    import numpy as np
    import pyarrow as pa

    keys = np.asarray(table.column("key").to_pylist(), dtype=object)
    if not keys.size:
        return table
    table = table.combine_chunks()  # a take from many chunks would concatenate them on every call
    o = np.argsort(keys, kind="stable")
    st, n = _segments(keys[o])
    parts = [_merge(quantiles, table.take(pa.array(o[a:a + k]))) for a, k in zip(st.tolist(), n.tolist())]
    return pa.concat_tables(parts)


#: the wide-layout columns the aggregate job reads
_WIDE_NEEDED = ("cpu", "direct_memory", "bandwidth_in", "bandwidth_out", "msg_rate_in", "msg_rate_out",
                "msg_throughput_in", "msg_throughput_out")


def _partials_of(t):
    """The partial rows (a record batch) of one table of (timestamp, broker, usage, cpu, rate, thr)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = t.column("timestamp")
    ts = (ts if pa.types.is_integer(ts.type) else ts.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())).to_numpy()
    enc = pc.dictionary_encode(t.column("broker")).combine_chunks()
    names = np.asarray(enc.dictionary.to_pylist(), dtype=object)
    code = enc.indices.to_numpy(zero_copy_only=False)
    u, cpu, rate, thr = (t.column(k).to_numpy() for k in ("usage", "cpu", "rate", "thr"))
    del t, enc
    keys, tsl, nml, vl, bnames, bv, ul, cl = _reduce(ts, code, names, u, cpu, rate, thr)
    empty = np.empty(0)
    keys += ["b" + str(x) for x in bnames]
    return _rows(keys, tsl + [empty] * len(bnames), nml + [[]] * len(bnames), vl + bv, [empty] * len(vl) + ul,
                 [empty] * len(vl) + cl)


def _reduce(ts, code, names, u, cpu, rate, thr):
    """The numpy core of :func:`_partials_of`: rows (int64 µs timestamps, broker codes into ``names``,
    usage, cpu, rate, thr) → per day ``(keys, ts, hottest names, packed stats)`` lists and per broker
    present ``(names, [n, usage sum, usage max, cpu sum, cpu max, rate sum, thr sum], usage values,
    cpu values)`` lists."""
    import numpy as np

    names = np.asarray(names, dtype=object)
    code = np.asarray(code).astype(np.int32 if len(names) > 65535 else np.uint16)
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(names.astype(str), kind="stable")] = np.arange(len(names))  # string order of the ids

    # ---- per minute
    if ts.size > 1 and not bool(np.all(ts[1:] >= ts[:-1])):
        o = np.argsort(ts, kind="stable")
        tso, uo, co, ro, tho, codeo = ts[o], u[o], cpu[o], rate[o], thr[o], code[o]
    else:
        tso, uo, co, ro, tho, codeo = ts, u, cpu, rate, thr, code
    st, n = _segments(tso)
    umax = np.maximum.reduceat(uo, st)
    mean = np.add.reduceat(uo, st) / n
    dev = uo - np.repeat(mean, n)
    m2 = np.add.reduceat(dev * dev, st)
    is_max = uo == np.repeat(umax, n)
    rows = np.flatnonzero(is_max)
    seg_of = np.repeat(np.arange(st.size), n)
    hot = _min_rank(seg_of[rows], rank[codeo[rows]], st.size)
    if (hot < 0).any():  # a minute whose maximum is NaN: the smallest id among all its brokers
        hot = np.where(hot < 0, _min_rank(seg_of, rank[codeo], st.size), hot)
    by_rank = names[np.argsort(rank)]
    stats = np.stack([n.astype(float), np.maximum.reduceat(ro, st), np.minimum.reduceat(ro, st),
                      np.maximum.reduceat(tho, st), np.minimum.reduceat(tho, st),
                      np.maximum.reduceat(co, st), np.minimum.reduceat(co, st), mean, m2, umax,
                      np.minimum.reduceat(uo, st)])
    mts = tso[st]
    del tso, uo, co, ro, tho, codeo, dev, is_max, seg_of
    day = mts // _DAY_US
    keys, tsl, nml, vl = [], [], [], []
    dst, dn = _segments(day)
    for a, k in zip(dst.tolist(), dn.tolist()):
        keys.append(f"m{int(day[a])}")
        tsl.append(mts[a:a + k])
        nml.append(by_rank[hot[a:a + k]].tolist())
        vl.append(stats[:, a:a + k].ravel())
    # ---- per broker
    nb = len(names)
    bn = np.bincount(code, minlength=nb)
    ob = np.argsort(code, kind="stable")
    ub, cpb = u[ob], cpu[ob]
    off = np.concatenate(([0], np.cumsum(bn)))
    sums = [np.bincount(code, weights=x, minlength=nb) for x in (u, cpu, rate, thr)]
    present = np.flatnonzero(bn)
    starts = off[present]
    bmax_u = np.maximum.reduceat(ub, starts) if present.size else np.empty(0)
    bmax_c = np.maximum.reduceat(cpb, starts) if present.size else np.empty(0)
    bnames, bv = [], []
    for i, b in enumerate(present.tolist()):
        bnames.append(names[b])
        bv.append(np.array([bn[b], sums[0][b], bmax_u[i], sums[1][b], bmax_c[i], sums[2][b], sums[3][b]]))
    ends = off[present + 1]
    ul = [ub[a:e] for a, e in zip(starts.tolist(), ends.tolist())]
    cl = [cpb[a:e] for a, e in zip(starts.tolist(), ends.tolist())]
    return keys, tsl, nml, vl, bnames, bv, ul, cl


def _merge(quantiles, table):
    """applyInArrow per key: a broker's exact percentiles and means, or a day's minutes merged."""
    import numpy as np
    import pyarrow.compute as pc

    key = table.column("key")[0].as_py()
    if key.startswith("b"):
        out = _broker_row(quantiles, np.stack(_unbin(table.column("v"), "<f8")),
                          np.concatenate(_unbin(table.column("u"), "<f8")), np.concatenate(_unbin(table.column("c"), "<f8")))
        return _table_of([key], [np.empty(0)], [[]], [out])
    ts = np.concatenate(_unbin(table.column("ts"), "<i8"))
    names = np.asarray(pc.list_flatten(table.column("names")).to_pylist(), dtype=object)
    k = len(_MINUTE_PARTS)
    stats = np.concatenate([x.reshape(k, -1) for x in _unbin(table.column("v"), "<f8")], axis=1)
    o = np.argsort(ts, kind="stable")
    ts, names, stats = ts[o], names[o], stats[:, o]
    st, cnt = _segments(ts)
    if st.size != ts.size:  # a minute split over input partitions: merge its partials (Chan et al.)
        P = dict(zip(_MINUTE_PARTS, stats))
        seg = np.repeat(np.arange(st.size), cnt)
        n = np.add.reduceat(P["n"], st)
        mean = np.add.reduceat(P["n"] * P["usage_mean"], st) / n
        m2 = np.add.reduceat(P["usage_m2"] + P["n"] * (P["usage_mean"] - mean[seg]) ** 2, st)
        umax = np.maximum.reduceat(P["usage_max"], st)
        hot = np.empty(st.size, dtype=object)
        for j in np.flatnonzero(P["usage_max"] == umax[seg]).tolist():
            i = seg[j]
            hot[i] = names[j] if hot[i] is None else min(hot[i], names[j])
        for i in [i for i, h in enumerate(hot) if h is None]:  # a NaN maximum: the smallest id
            hot[i] = min(names[st[i]:st[i] + cnt[i]])
        merged = {"n": n, "usage_mean": mean, "usage_m2": m2, "usage_max": umax}
        for p in ("rate_max", "thr_max", "cpu_max"):
            merged[p] = np.maximum.reduceat(P[p], st)
        for p in ("rate_min", "thr_min", "cpu_min", "usage_min"):
            merged[p] = np.minimum.reduceat(P[p], st)
        stats = np.stack([merged[p] for p in _MINUTE_PARTS])
        ts, names = ts[st], hot
    return _table_of([key], [ts], [list(names)], [stats.ravel()])


def _broker_row(quantiles, v, u, c):
    """A broker's final values from its partials (``v``: one 7-value row per partial, see :func:`_reduce`)
    and all its usage and CPU values: minutes, means, exact percentiles, maxima."""
    import numpy as np

    n, su, mu, sc, mc, sr, sth = v.sum(axis=0)[0], *v[:, 1:].T
    n = float(n)
    uq = np.quantile(u, quantiles) if len(quantiles) else np.empty(0)
    out = [n, su.sum() / n, *uq, mu.max(), sc.sum() / n, float(np.quantile(c, 0.9)), mc.max(), sr.sum() / n,
           sth.sum() / n]
    return np.asarray(out, dtype=float)


def _table_of(keys, ts, names, v):
    import pyarrow as pa

    import numpy as np

    empty = [np.empty(0)] * len(keys)
    return pa.Table.from_batches([_rows(keys, ts, names, v, empty, empty)])


def _minute_columns():
    return ["timestamp", "brokers", "rate_max", "rate_min", "thr_max", "thr_min", "cpu_max", "cpu_min", "usage_mean",
            "usage_std", "usage_max", "usage_min", "rate_ratio", "thr_ratio", "cpu_range", "usage_gap", "hottest"]


def _broker_columns(quantiles):
    return (["broker", "minutes", "usage_mean", "usage_max", "cpu_mean", "cpu_p90", "cpu_max", "rate_mean", "thr_mean"]
            + [f"usage_p{_qname(float(q))}" for q in quantiles] + ["hottest_minutes"])


def _ddl(cols):
    types = {"timestamp": "timestamp", "brokers": "bigint", "minutes": "bigint", "hottest_minutes": "bigint",
             "hottest": "string", "broker": "string"}
    return ", ".join(f"{c} {types.get(c, 'double')}" for c in cols)


def one_pass_tables(wide_u, quantiles=DEFAULT_QUANTILES):
    """The ``minute`` and ``brokers`` tables (pandas) of a broker-minute table with ``usage``, ``rate``,
    ``thr``: one scan, one shuffle, exact percentiles (see the comment above :func:`_partials`)."""
    from functools import partial

    qs = tuple(float(q) for q in quantiles)
    parts = wide_u.select("timestamp", "broker", "usage", "cpu", "rate", "thr").mapInArrow(_partials, _PARTIAL_SCHEMA)
    return _assemble(parts.groupBy("key").applyInArrow(partial(_merge, qs), _PARTIAL_SCHEMA).toArrow(), qs)


def _local_master(spark) -> bool:
    """Whether every task runs on this machine (a ``local[...]`` master). Only then does
    :func:`one_pass_files` read each file once per share: on one machine the copies come from the page
    cache and cost less than a shuffle; on a cluster the files are read once, by Spark
    (:func:`one_pass_tables`), however many executors there are."""
    try:
        return str(spark.conf.get("spark.master", "")).startswith("local")
    except Exception:  # noqa: BLE001 - a session that cannot say: take the plan that scales
        return False


def one_pass_files(spark, source: dict, weights=None, quantiles=DEFAULT_QUANTILES):
    """:func:`one_pass_tables` of a local dataset's wide layout, read by the Python tasks themselves.

    ``source`` (what :func:`.sparkio.read_broker_minutes` records on the DataFrame it returns for a
    local dataset): the day files of the range and the range. The brokers are dealt into shares, one
    per core (:func:`_share`, at most one per file); each task reads every file with pyarrow, keeps
    its share's rows and merges them itself (:func:`_share_partials`): its brokers' exact percentiles
    and, per day, its brokers' minute partials, which the driver merges across the shares. So the
    rows never pass through the JVM's row format, and nothing is shuffled — on 2 cores the hand-over
    and the shuffle of every broker's values (~90 MB) cost more than reading each file once per
    share. Used with a local master only (:func:`_local_master`); on a cluster, and for a dataset at
    a URI, Spark reads the files (:func:`one_pass_tables`).
    """
    from functools import partial

    import pandas as pd

    qs = tuple(float(q) for q in quantiles)
    files = list(source["files"])

    def us(x):
        return None if x is None else int(pd.Timestamp(x).value // 1000)

    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect: no sparkContext
        import os

        cores = os.cpu_count() or 2
    nparts = max(1, min(len(files), cores))
    shares = spark.range(0, nparts, 1, nparts)  # one share number per task
    got = shares.mapInArrow(partial(_share_partials, _weights(weights), us(source.get("t0")), us(source.get("t1")),
                                    files, qs, nparts), _PARTIAL_SCHEMA).toArrow()
    return _assemble(_merge_minutes(qs, got), qs)


def _merge_minutes(quantiles, got):
    """The shares' rows with each day's minute partials merged (brokers are final: each in one share)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_minute = pc.starts_with(got.column("key"), "m")
    minutes = got.filter(is_minute)
    return pa.concat_tables([got.filter(pc.invert(is_minute)), _merge_by_key(quantiles, minutes)])


def _assemble(got, qs):
    """The pandas ``minute`` and ``brokers`` tables from the merged rows (an Arrow table)."""
    import numpy as np
    import pandas as pd

    keys = got.column("key").to_pylist()
    vs = _unbin(got.column("v"), "<f8")
    tss = _unbin(got.column("ts"), "<i8")
    k = len(_MINUTE_PARTS)
    m_ts, m_names, m_stats, b_names, b_vals = [], [], [], [], []
    for i, key in enumerate(keys):
        if key.startswith("m"):
            m_ts.append(tss[i])
            m_names += got.column("names")[i].as_py()
            m_stats.append(vs[i].reshape(k, -1))
        else:
            b_names.append(key[1:])
            b_vals.append(vs[i])
    ts = np.concatenate(m_ts) if m_ts else np.empty(0, dtype=np.int64)
    st = np.concatenate(m_stats, axis=1) if m_stats else np.empty((k, 0))
    P = dict(zip(_MINUTE_PARTS, st))
    minute = pd.DataFrame({"timestamp": pd.to_datetime(ts, unit="us"), "brokers": P["n"].astype(np.int64)})
    for c in ("rate_max", "rate_min", "thr_max", "thr_min", "cpu_max", "cpu_min", "usage_mean"):
        minute[c] = P[c]
    with np.errstate(invalid="ignore", divide="ignore"):
        minute["usage_std"] = np.sqrt(P["usage_m2"] / P["n"])
    minute["usage_max"], minute["usage_min"] = P["usage_max"], P["usage_min"]
    minute["rate_ratio"] = _ratio_np(P["rate_max"], P["rate_min"])
    minute["thr_ratio"] = _ratio_np(P["thr_max"], P["thr_min"])
    minute["cpu_range"] = P["cpu_max"] - P["cpu_min"]
    minute["usage_gap"] = P["usage_max"] - P["usage_min"]
    minute["hottest"] = pd.Series(m_names, dtype=object)
    minute = minute.sort_values("timestamp", kind="stable").reset_index(drop=True)
    bv = np.asarray(b_vals, dtype=float).reshape(len(b_names), 8 + len(qs))
    nq = len(qs)
    brokers = pd.DataFrame({"broker": pd.Series(b_names, dtype=object), "minutes": bv[:, 0].astype(np.int64),
                            "usage_mean": bv[:, 1], "usage_max": bv[:, 2 + nq], "cpu_mean": bv[:, 3 + nq],
                            "cpu_p90": bv[:, 4 + nq], "cpu_max": bv[:, 5 + nq], "rate_mean": bv[:, 6 + nq],
                            "thr_mean": bv[:, 7 + nq]})
    for i, q in enumerate(qs):
        brokers[f"usage_p{_qname(q)}"] = bv[:, 2 + i]
    hot = minute["hottest"].value_counts()
    brokers["hottest_minutes"] = brokers["broker"].map(hot).fillna(0).astype(np.int64)
    brokers = brokers.sort_values("broker", kind="stable").reset_index(drop=True)
    return minute, brokers


def _ratio_np(mx, mn):
    import numpy as np

    return mx / np.where(np.abs(mn) <= EPS, 1.0, mn)
