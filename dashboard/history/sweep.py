"""Spark job: the backtest over a grid of two config keys, in one Spark job — counts per cell.

DataFrame in (the long dataset) → DataFrame out, one row per grid cell: ``cell``, ``x``, ``y`` (the two
key values), ``events`` (brokers that would have unloaded, summed over minutes), ``bundles``
(bundles selected), ``minutes`` (minutes with at least one unload), ``days_with_events``.

How: the cells are dealt into ``groups`` groups (default: the session's default parallelism — its
executor cores — capped by the number of cells; cells balanced by their shedding minutes). The backtest
input is cross-joined with the G groups only (not with the cells), range-partitioned by group and sorted
by time, then ``mapInPandas`` streams each group's copy of the history once through the engine's
multi-config driver (:class:`engine.backtest.BacktestSet`): each minute is read once and its LoadView
built once for every cell of the group due that minute, and each cell keeps its own config, strategy
memory and counts — the same counts as one backtest per cell. A task hands over counts per cell and day,
never the events themselves (no event is built: a month of a 5 × 6 grid is millions). The groups run in
parallel across the executors (one task each), memory bounded by an Arrow batch. ``groups`` = the number of cells gives the
old one-task-per-cell plan. Cost grows with ``groups × history`` read plus ``cells × shedding minutes``.

Why cells and not time: a task per time chunk (every cell, a warm-up before the chunk, its start state checked
against the previous chunk's end) would share each minute's view among all cells, but its start state must
equal the sequential replay's, and with synthetic bundles it never does. A history does not react to a
replay's unloads, so a broker that stays out of balance fires again as soon as its bundles leave the grace
period; the phase of those firings (the recently unloaded bundles and their times) is set by where the replay
began, never forgotten. Measured on 1,000 brokers, AvgShedder with BIGO's settings: after a warm-up of 15 to
180 minutes, all 30 cells of the 5 × 6 grid still differ from the sequential state, so every chunk would be
replayed again. Splitting by cells costs little in exchange: each minute's view is built once per group, and
a group of half the cells replays in about half the time of all of them.

Example: low threshold × low hit count of AvgShedder::

    sweep(df, "AvgShedder", cfg, "loadBalancerAvgShedderLowThreshold", [5, 10, 15, 20],
          "loadBalancerAvgShedderHitCountLowThreshold", [2, 4, 8, 16])
"""
from __future__ import annotations

from engine.backtest import backtest_spec, typed_value
from engine.config import LoadBalancerConfig

from .backtest import (DEFAULT_WARMUP_MINUTES, _uses_bundles, backtest_input, chunk_plan, feed_rows,
                       key_runs, run_chunks, whole_minutes)

__all__ = ["sweep", "sweep_files", "grid_cells", "cell_groups", "cell_intervals", "stream_groups", "default_groups"]

GROUP_SCHEMA = "grp long"


def grid_cells(x_key: str, x_values, y_key: str, y_values) -> list[tuple[int, float, float]]:
    """``[(cell, x, y)]`` in row-major order (x fastest); values checked against the keys' types."""
    xs = [float(typed_value(x_key, v)) for v in x_values]
    ys = [float(typed_value(y_key, v)) for v in y_values]
    if not xs or not ys:
        raise ValueError("the grid needs at least one value per key")
    if x_key == y_key:
        raise ValueError("the two sweep keys must differ")
    return [(i * len(xs) + j, x, y) for i, y in enumerate(ys) for j, x in enumerate(xs)]


def default_groups(spark, n_cells: int) -> int:
    """The session's default parallelism (its executor cores), capped by the number of cells."""
    try:
        cores = int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect: no sparkContext
        cores = 2
    return max(1, min(int(n_cells), cores))


def cell_groups(cells: list, intervals: list[int], groups: int) -> list[list]:
    """``cells`` dealt into ``groups`` groups of about equal work: a cell's work is its number of shedding
    minutes (∝ 1 / its interval); the heaviest cells first, each to the lightest group so far (ties: the
    lower group). Cells keep their order inside a group; empty groups are dropped."""
    g = max(1, min(int(groups), len(cells)))
    load = [0.0] * g
    out: list[list] = [[] for _ in range(g)]
    for i in sorted(range(len(cells)), key=lambda i: (intervals[i], i)):
        k = min(range(g), key=lambda j: (load[j], j))
        out[k].append(i)
        load[k] += 1.0 / max(1, intervals[i])
    return [[cells[i] for i in sorted(grp)] for grp in out if grp]


def cell_intervals(cfg: LoadBalancerConfig, keys: tuple, cells: list) -> list[int]:
    """Each cell's shedding interval in minutes (at least 1), from ``cfg`` with the cell's two key values."""
    x_key, y_key = keys
    return [max(1, int(cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
                       .loadBalancerSheddingIntervalMinutes)) for _c, x, y in cells]


def stream_groups(batches, strategy: str, config: LoadBalancerConfig, synthetic_bundles: int, bundles: str,
                  use_bundles: bool, keys: tuple, members: dict, initial: dict | None = None, on_end=None):
    """The ``mapInPandas`` body of the sweep: this partition's rows, sorted by ``(grp, timestamp)``, arrive
    as Arrow batches; each group is one :class:`engine.backtest.BacktestSet` of its cells
    (``members[grp]`` = ``[(cell, x, y)]``) fed minute by minute, and the counts of each batch leave at
    once (:data:`TALLY_SCHEMA` rows, ``kind`` "tally": per cell and UTC day, the events, bundles and
    minutes with events; no event is built). A minute cut by a batch boundary waits for the next batch,
    so memory is bounded by a batch, never by the history.

    ``initial`` (``{cell: carried state}``): where each cell starts (a time segment of a longer history);
    ``on_end(cell, carried)`` receives each cell's carried state after its group's last minute."""
    from engine.backtest import Backtest, BacktestSet

    from .backtest import _cell_config

    state: dict = {"grp": None, "set": None, "cells": None}
    initial = initial or {}

    def end():
        if on_end is not None and state["set"] is not None:
            for c, bt in zip(state["cells"], state["set"].members):
                on_end(c, bt.carried())

    def run(pdf) -> list:
        out: list = []
        for g, part in key_runs(pdf, "grp"):
            if state["grp"] != g:
                end()
                cells = members[g]
                state.update(grp=g, cells=[c for c, _x, _y in cells], set=BacktestSet(
                    Backtest(strategy, _cell_config(config, keys, x, y), synthetic_bundles=synthetic_bundles,
                             state_limit=0, initial=initial.get(c), tally=True) for c, x, y in cells))
            bts = state["set"]
            feed_rows(bts, part, use_bundles)
            out.extend(_tallies(state["cells"], bts))  # the counts leave now: memory stays bounded
        return out

    for part in whole_minutes(batches, "grp"):
        rows = run(part)
        if rows:
            yield _tally_frame(rows)
    end()


#: what a grouped sweep's tasks hand over: per cell and UTC day (epoch days), the events (brokers that
#: unload), the bundles they select and the minutes with events — a handful of rows where the events of a
#: month of a 5 × 6 grid are millions; ``kind`` "end" rows carry a cell's state after a time segment (JSON)
TALLY_SCHEMA = "cell long, day long, events long, bundles long, minutes long, kind string, state string"


def _tallies(cells: list, bts) -> list:
    """Each member's counts since the last call, as ``(cell, day, events, bundles, minutes)``."""
    return [(c, *t) for c, bt in zip(cells, bts.members) for t in bt.take_tally()]


def _tally_frame(rows: list, kind: str = "tally", states: list | None = None):
    import pandas as pd

    cols = list(zip(*rows)) if rows else [()] * 5
    return pd.DataFrame({"cell": pd.array(cols[0], dtype="int64"), "day": pd.array(cols[1], dtype="int64"),
                         "events": pd.array(cols[2], dtype="int64"), "bundles": pd.array(cols[3], dtype="int64"),
                         "minutes": pd.array(cols[4], dtype="int64"), "kind": [kind] * len(rows),
                         "state": states if states is not None else [None] * len(rows)})


def _day_blocks(source: dict, lo_ms: int | None, hi_ms: int | None):
    """The broker rows of a local wide layout's day files (``source``: what
    :func:`.sparkio.read_broker_minutes` records on its DataFrame) as :class:`engine.backtest.BrokerBlock`
    of whole minutes in time order, read here with pyarrow a row group at a time (:func:`_read_day`): the
    rows of ``[t0, t1]`` (the job's range, as Spark filters them) and of ``[lo_ms, hi_ms)`` (a time
    segment; ``None`` = open). Fed one after the other, the same minutes as one block per day from a
    pandas frame of the rows.

    A task holds a day's times and broker codes (~23 MB at 1,000 brokers) and the metrics of a row group or
    two (~65 minutes, ~6 MB each), not the day's metrics (~100 MB of arrays, paged in by every task): the
    generator lets go of a block once it is handed over (a caller that drops its own before asking for the
    next holds one)."""
    from pathlib import Path

    import pandas as pd

    def us(x):
        return None if x is None else int(pd.Timestamp(x).value // 1000)

    t0, t1 = us(source.get("t0")), us(source.get("t1"))
    lo = None if lo_ms is None else int(lo_ms) * 1000
    hi = None if hi_ms is None else int(hi_ms) * 1000
    by_day: dict[str, list] = {}
    for f in source["files"]:
        by_day.setdefault(Path(f).parent.name.split("=", 1)[-1], []).append(f)
    for day in sorted(by_day):
        d0 = int(pd.Timestamp(day, tz="UTC").value // 1000)
        if (lo is not None and d0 + 86_400_000_000 <= lo) or (hi is not None and d0 >= hi):
            continue  # the day lies outside the segment
        yield from _read_day(by_day[day], (t0, t1, lo, hi))


def _read_day(files: list, bounds: tuple):
    """One day's files as blocks of whole minutes (none when no row is in ``bounds`` = ``(t0, t1, lo, hi)``
    in epoch µs: ``t0 <= t <= t1``, ``lo <= t < hi``, ``None`` = open).

    Two passes over the row groups. The first reads the times and broker names (names from each row
    group's dictionary: a name per entry, not per row) and checks that the day's rows are in
    ``(timestamp, broker)`` order, as the layout writes them. The second reads the metrics a row group at a
    time and hands over the whole minutes read so far as one block (a minute cut by a row group waits for
    the next). A day whose rows are out of order, or with a row missing its broker name, is read as one
    table and sorted, as a pandas frame of it would be (:func:`_read_day_table`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .dataset import BROKER_METRICS

    pfs = [pq.ParquetFile(f, read_dictionary=["broker"]) for f in files]
    groups = [(pf, i) for pf in pfs for i in range(pf.num_row_groups)]
    seen: dict[str, int] = {}  # the day's names, in order of appearance
    ms_parts, raw_parts, keeps = [], [], []
    for pf, i in groups:
        rg = pf.read_row_group(i, columns=["timestamp", "broker"])
        ts = rg.column("timestamp").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
        keep = _in_bounds(ts, bounds)
        codes = []
        for chunk in rg.column("broker").chunks:
            if chunk.null_count or chunk.dictionary.null_count:
                yield from _read_day_table(files, bounds)
                return
            ids = np.fromiter((seen.setdefault(s, len(seen)) for s in chunk.dictionary.to_pylist()),
                              dtype=np.int64, count=len(chunk.dictionary))
            codes.append(ids[chunk.indices.to_numpy(zero_copy_only=False)])
        raw = np.concatenate(codes) if len(codes) != 1 else codes[0]
        keeps.append(keep)
        ms_parts.append((ts if keep is None else ts[keep]) // 1000)
        raw_parts.append(raw if keep is None else raw[keep])
    ms = np.concatenate(ms_parts) if ms_parts else np.zeros(0, dtype=np.int64)
    sizes = [len(part) for part in ms_parts]
    del ms_parts
    if not len(ms):
        return
    names = sorted(seen)
    rank = np.empty(len(seen), dtype=np.int64)
    rank[[seen[s] for s in names]] = np.arange(len(names))
    codes = rank[np.concatenate(raw_parts)]  # index into the day's sorted names
    dt, dc = np.diff(ms), np.diff(codes)
    if not ((dt > 0) | ((dt == 0) & (dc >= 0))).all():
        yield from _read_day_table(files, bounds)
        return
    del dt, dc, raw_parts
    starts = np.flatnonzero(np.r_[True, ms[1:] != ms[:-1]])
    a = n = 0  # rows handed over / read
    pending: list = []  # the metrics of rows [a, n), one list of arrays per row group read
    for (pf, i), keep, size in zip(groups, keeps, sizes):
        if not size:
            continue
        rg = pf.read_row_group(i, columns=list(BROKER_METRICS))
        pending.append([rg.column(m).to_numpy() if keep is None else rg.column(m).to_numpy()[keep]
                        for m in BROKER_METRICS])
        del rg
        n += size
        cut = n if n == len(ms) else int(starts[np.searchsorted(starts, n, "right") - 1])
        if cut > a:
            cols = [np.concatenate([p[j] for p in pending]) if len(pending) > 1 else pending[0][j]
                    for j in range(len(BROKER_METRICS))]
            yield _minutes_block(ms[a:cut], codes[a:cut], names, [c[:cut - a] for c in cols])
            pending = [[c[cut - a:] for c in cols]] if cut < n else []
            a = cut


def _in_bounds(ts, bounds: tuple):
    """Which of the times ``ts`` (epoch µs, numpy) are in ``bounds`` (see :func:`_read_day`): a boolean mask,
    or ``None`` when all are (nothing to copy)."""
    import numpy as np

    keep = None
    for bound, op in zip(bounds, (np.greater_equal, np.less_equal, np.greater_equal, np.less)):
        if bound is not None:
            k = op(ts, bound)
            keep = k if keep is None else keep & k
    return None if keep is None or keep.all() else keep


def fed_by_day(bts, blocks):
    """Feed ``blocks`` (in time order) to ``bts`` (a :class:`engine.backtest.BacktestSet`), pausing (with
    the UTC day number of the last minute fed) before a block that starts on a later day, and after the
    last: where a task hands over what its drivers counted — a frame a day, not one per block (each frame
    costs the task and the JVM an Arrow batch). With blocks that keep to one day (:func:`_day_blocks`),
    each pause follows a day's last block. A block is let go of once fed."""
    from engine.backtest import DAY_MS

    day = None
    for block in blocks:
        if day is not None and int(block.ts[0]) // DAY_MS > day:
            yield day
        bts.feed(block)
        day = int(block.ts[-1]) // DAY_MS
        del block
    if day is not None:
        yield day


def _minutes_block(ms, codes, names: list, metrics: list):
    """A :class:`engine.backtest.BrokerBlock` of rows whose ``codes`` index the day's sorted ``names``:
    its own names are those its rows use (sorted)."""
    import numpy as np

    from engine.backtest import BrokerBlock

    used = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    remap = np.zeros(len(names), dtype=np.int64)
    remap[used] = np.arange(len(used))
    return BrokerBlock.of_arrays(ms, remap[codes], [names[j] for j in used.tolist()], metrics)


def _read_day_table(files: list, bounds: tuple):
    """:func:`_read_day` as one block: one Arrow table of the day, its broker names a pandas categorical
    (a row missing its name among them), its rows sorted by ``(timestamp, broker)``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from engine.backtest import BrokerBlock, _broker_codes

    from .dataset import BROKER_METRICS

    t = pa.concat_tables([pq.read_table(f, columns=["timestamp", "broker", *BROKER_METRICS]) for f in files])
    ts = t.column("timestamp").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy()
    keep = _in_bounds(ts, bounds)
    if keep is not None:
        t, ts = t.filter(pa.array(keep)), ts[keep]
    if not t.num_rows:
        return
    codes, names = _broker_codes(pc.dictionary_encode(t.column("broker").cast(pa.string())).to_pandas())
    yield BrokerBlock.of_arrays(ts // 1000, codes, names,
                                 [t.column(m).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
                                  for m in BROKER_METRICS])


def _end_marks(ends: list):
    """One row per cell (``kind`` "end") carrying its state after a segment (JSON in ``state``)."""
    import json

    return _tally_frame([(int(c), 0, 0, 0, 0) for c, _st in ends], "end", [json.dumps(st) for _c, st in ends])


def _files_udf(source: dict, lo_ms, hi_ms, initial: dict | None, marks: bool, strategy: str,
               config: LoadBalancerConfig, synthetic_bundles: int, keys: tuple, members: dict, **_ignored):
    """``mapInPandas`` over one row per group (``id``): each task reads the day files itself
    (:func:`_day_blocks`) and feeds its group's :class:`engine.backtest.BacktestSet` day by day — the rows
    never pass through the JVM (no cross-join, shuffle, sort or Arrow hand-over). Counts as
    :func:`stream_groups` gives them; with ``marks`` (a time segment) also the cells' end states."""
    from engine.backtest import Backtest, BacktestSet

    from .backtest import _cell_config

    initial = initial or {}

    def fn(batches):
        for b in batches:
            for g in b["id"].tolist():
                cells = members[int(g)]
                ids = [c for c, _x, _y in cells]
                bts = BacktestSet(Backtest(strategy, _cell_config(config, keys, x, y),
                                           synthetic_bundles=synthetic_bundles, state_limit=0,
                                           initial=initial.get(c), tally=True) for c, x, y in cells)
                for _day in fed_by_day(bts, _day_blocks(source, lo_ms, hi_ms)):
                    rows = _tallies(ids, bts)
                    if rows:
                        yield _tally_frame(rows)
                if marks:
                    yield _end_marks([(c, bt.carried()) for c, bt in zip(ids, bts.members)])

    return fn


def _segment_udf(initial: dict, **params):
    """One time segment of the grouped sweep, for ``mapInPandas`` with :data:`TALLY_SCHEMA`: its counts
    (``kind`` "tally"), then one row per cell (``kind`` "end") carrying its state after the segment (JSON)."""

    def fn(batches):
        ends = []
        yield from stream_groups(batches, **params, initial=initial, on_end=lambda c, st: ends.append((c, st)))
        if ends:
            yield _end_marks(ends)

    return fn


def _groups_udf(**params):
    def fn(batches):
        yield from stream_groups(batches, **params)

    return fn


def sweep(df, strategy: str, config: LoadBalancerConfig | None, x_key: str, x_values, y_key: str, y_values, *,
          bundles: str = "auto", synthetic_bundles: int = 8, bundle_df=None, chunks: int | None = None,
          warmup_minutes: int = DEFAULT_WARMUP_MINUTES, groups: int | None = None, segments: int | None = None,
          progress=None):
    """Counts per grid cell (a Spark DataFrame, one row per cell, cells without events included).

    By default the cells are dealt into ``groups`` groups (:func:`default_groups`: the executor cores,
    at most the number of cells), each group one streaming task reading the history once for all its
    cells (:func:`stream_groups`), the groups in parallel across the executors; ``chunks`` > 1 instead
    runs one task per cell × time chunk (:func:`.backtest.run_chunks`, checked exact) — for grids
    smaller than the cores. ``segments`` > 1 runs the grouped stream as that many consecutive Spark jobs
    over time segments, each cell's state carried across (same counts), reporting ``progress(done,
    total, text)`` between them (the page's progress bar)."""
    import math

    from pyspark.sql import functions as F

    cfg, cells, params = _plan(strategy, config, x_key, x_values, y_key, y_values, bundles, synthetic_bundles)
    spark = df.sparkSession
    base = backtest_input(df, bundles, bundle_df)
    starts = []
    if chunks is not None and int(chunks) > 1:
        lo, hi = base.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            t0, t1 = int(lo.timestamp() * 1000), int(hi.timestamp() * 1000)
            # the grid's intervals may differ: cut on minutes every interval divides (their lcm)
            starts = chunk_plan(t0, t1, int(chunks), math.lcm(*cell_intervals(cfg, (x_key, y_key), cells)))
    if len(starts) > 1:
        grid = spark.createDataFrame(cells, "cell long, x double, y double")
        events, _info = run_chunks(base.crossJoin(F.broadcast(grid)), params, starts, warmup_minutes, len(cells))
        counts = events.groupBy("cell").agg(
            F.count("*").alias("events"), F.sum("n_bundles").alias("bundles"),
            F.countDistinct("timestamp").alias("minutes"),
            F.countDistinct(F.date_format("timestamp", "yyyy-MM-dd")).alias("days_with_events"))
    else:  # the tasks' counts per cell and day (a day's minutes never overlap between its rows)
        tally = _grouped(spark, base, params, cfg, cells, groups, segments, progress,
                         _file_source(df, bundles, bundle_df))
        return _cell_counts(spark, cells, tally.toPandas())
    return (grid.join(counts, "cell", "left").na.fill(0, ["events", "bundles", "minutes", "days_with_events"])
            .orderBy("cell"))


def sweep_files(spark, source: dict, strategy: str, config: LoadBalancerConfig | None, x_key: str, x_values,
                y_key: str, y_values, *, synthetic_bundles: int = 8, groups: int | None = None,
                segments: int | None = None, progress=None):
    """:func:`sweep` over a local wide layout's day files with synthetic bundles (``source``:
    :func:`.sparkio.wide_files`): the same counts, each group's task reading the files itself, without a
    DataFrame of them (nothing for Spark to plan but one row per task)."""
    cfg, cells, params = _plan(strategy, config, x_key, x_values, y_key, y_values, "synthetic", synthetic_bundles)
    tally = _grouped(spark, None, params, cfg, cells, groups, segments, progress, source)
    return _cell_counts(spark, cells, tally.toPandas())


def _plan(strategy: str, config, x_key: str, x_values, y_key: str, y_values, bundles: str,
          synthetic_bundles: int) -> tuple:
    """``(config, cells, task params)`` of a sweep, its values checked in the driver first (fail fast on
    values the config rejects)."""
    strategy = backtest_spec(strategy).name
    cfg = config or LoadBalancerConfig()
    cells = grid_cells(x_key, x_values, y_key, y_values)
    for _c, x, y in cells:
        cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
    return cfg, cells, dict(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=0,
                            bundles=bundles, keys=(x_key, y_key))


#: the columns of a sweep's result, one row per grid cell: ``cell`` and the counts are Spark longs,
#: ``x`` and ``y`` doubles
CELL_COUNT_COLUMNS = ("cell", "x", "y", "events", "bundles", "minutes", "days_with_events")


def _cell_counts(spark, cells: list, tally):
    """The grouped sweep's result from its tasks' counts per cell and day (a few rows per cell and day,
    collected as they are — a projection first would only give the JVM code to compile): summed per cell
    on the driver, every cell listed (zeros where nothing fired), in cell order —
    the same rows as a Spark group-by, join and sort, without their three shuffles and extra jobs (~3 s of
    every sweep, whatever its size). A Spark DataFrame that keeps the rows (:func:`.sparkio.to_pandas`
    returns them without a second job)."""
    import pandas as pd
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    from .sparkio import collected_frame

    cols = ["events", "bundles", "minutes"]
    got = tally.groupby("cell").agg(**{c: (c, "sum") for c in cols}, days_with_events=("day", "nunique"))
    pdf = pd.DataFrame(cells, columns=["cell", "x", "y"]).astype({"cell": "int64", "x": "float64", "y": "float64"})
    pdf = pdf.join(got, on="cell").fillna({c: 0 for c in [*cols, "days_with_events"]})
    pdf = pdf.astype({c: "int64" for c in [*cols, "days_with_events"]}).sort_values("cell").reset_index(drop=True)
    schema = StructType([StructField(c, DoubleType() if c in ("x", "y") else LongType(), c not in ("cell", "x", "y"))
                         for c in CELL_COUNT_COLUMNS])
    return collected_frame(spark, pdf, schema)


def _file_source(df, bundles: str, bundle_df) -> dict | None:
    """The local wide layout's day files ``df`` reads (recorded by :func:`.sparkio.read_broker_minutes`),
    when the sweep needs broker rows only (synthetic bundles); else ``None`` (Spark hands the rows over)."""
    from .sparkio import WIDE_SOURCE_ATTR

    if "metric" in df.columns or (bundles != "synthetic" and bundle_df is not None):
        return None
    got = getattr(df, "__dict__", {}).get(WIDE_SOURCE_ATTR)
    if not got or not got.get("files"):
        return None
    from .dataset import BROKER_METRICS

    if not set(BROKER_METRICS) <= set(got.get("columns") or ()):
        return None
    return got


def _grouped(spark, base, params: dict, cfg: LoadBalancerConfig, cells: list, groups: int | None,
             segments: int | None = None, progress=None, source: dict | None = None):
    """The counts of every cell, G groups of cells each streamed through one BacktestSet (one task per group).

    ``segments`` > 1: the same as that many consecutive Spark jobs over consecutive time segments, each
    cell's state carried from one to the next (same events), with ``progress(done, total, text)`` between
    them — what the page shows while a long sweep runs (its Cancel stops the job group in between too).

    ``source``: the day files of a local wide layout (broker rows only): then each group's task reads
    them itself (:func:`_files_udf`) instead of receiving its copy of the history from the JVM.

    Returns the counts (:data:`TALLY_SCHEMA` rows of ``kind`` "tally"), not the events."""
    import json

    import pandas as pd
    from pyspark.sql import functions as F

    g = int(groups) if groups else default_groups(spark, len(cells))
    if g < 1:
        raise ValueError("groups must be at least 1")
    ivals = cell_intervals(cfg, params["keys"], cells)
    dealt = cell_groups(cells, ivals, g)
    members = {k: grp for k, grp in enumerate(dealt)}
    use_b = False if source is not None else _uses_bundles(base, params)
    fn_params = dict(strategy=params["strategy"], config=params["config"],
                     synthetic_bundles=params["synthetic_bundles"], bundles=params["bundles"], use_bundles=use_b,
                     keys=params["keys"], members=members)

    def files_job(lo, hi, initial, marks):
        ids = spark.range(0, len(dealt), 1, len(dealt))  # one row per task: the group it streams
        fn = _files_udf(source, lo, hi, initial, marks, **fn_params)
        return ids.mapInPandas(fn, schema=TALLY_SCHEMA)

    def grouped(frame):
        if len(dealt) > 1:
            ids = spark.createDataFrame([(k,) for k in range(len(dealt))], GROUP_SCHEMA)
            part = frame.crossJoin(F.broadcast(ids)).repartitionByRange(len(dealt), "grp")
        else:
            part = frame.withColumn("grp", F.lit(0).cast("long")).repartition(1)
        return part.sortWithinPartitions("grp", "timestamp")

    starts = []
    if segments is not None and int(segments) > 1:
        import math

        if source is not None:  # the range's first and last minute, from the day files and the range
            days = sorted({f.rsplit("/", 2)[-2].split("=", 1)[-1] for f in source["files"]})
            lo = pd.Timestamp(days[0], tz="UTC")
            hi = pd.Timestamp(days[-1], tz="UTC") + pd.Timedelta(days=1, minutes=-1)
            if source.get("t0") is not None:
                lo = max(lo, pd.Timestamp(source["t0"]).tz_convert("UTC") if pd.Timestamp(source["t0"]).tzinfo
                         else pd.Timestamp(source["t0"], tz="UTC"))
            if source.get("t1") is not None:
                hi = min(hi, pd.Timestamp(source["t1"]).tz_convert("UTC") if pd.Timestamp(source["t1"]).tzinfo
                         else pd.Timestamp(source["t1"], tz="UTC"))
        else:
            lo, hi = base.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            starts = chunk_plan(int(lo.timestamp() * 1000), int(hi.timestamp() * 1000), int(segments),
                                math.lcm(*ivals))
    if len(starts) <= 1:
        if source is not None:
            return files_job(None, None, None, False)
        return grouped(base).mapInPandas(_groups_udf(**fn_params), schema=TALLY_SCHEMA)
    ms = F.col("timestamp").cast("long") * 1000
    carried: dict = {}
    parts = []
    bounds = list(zip(starts, starts[1:] + [None]))
    for k, (a, b) in enumerate(bounds):
        if progress is not None:
            day = pd.Timestamp(a, unit="ms").strftime("%Y-%m-%d %H:%M")
            progress(k, len(bounds), f"sweep: segment {k + 1} of {len(bounds)} (from {day} UTC), "
                                     f"{len(cells)} cells in {len(dealt)} task(s)")
        cond = ms >= F.lit(a) if k else F.lit(True)
        if b is not None:
            cond = cond & (ms < F.lit(b))
        if source is not None:
            out = files_job(a if k else None, b, dict(carried), True).cache()
        else:
            out = (grouped(base.where(cond)).mapInPandas(_segment_udf(dict(carried), **fn_params),
                                                         schema=TALLY_SCHEMA).cache())
        parts.append(out)
        for r in out.where(F.col("kind") == "end").select("cell", "state").collect():
            carried[int(r["cell"])] = json.loads(r["state"])
    if progress is not None:
        progress(len(bounds), len(bounds), "sweep: done")
    events = parts[0]
    for x in parts[1:]:
        events = events.unionByName(x)  # (the counts of every segment)
    return events.where(F.col("kind") == "tally")
