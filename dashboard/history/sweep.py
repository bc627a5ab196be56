"""Spark job: the backtest over a grid of two config keys, in one Spark job — counts per cell.

DataFrame in (the long dataset) → DataFrame out, one row per grid cell: ``cell``, ``x``, ``y`` (the two
key values), ``events`` (brokers that would have unloaded, summed over minutes), ``bundles``
(bundles selected), ``minutes`` (minutes with at least one unload), ``days_with_events``.

How: the backtest input is cross-joined with the (broadcast) grid, so every cell carries the whole
history, range-partitioned by cell and sorted by time, then ``mapInPandas`` streams each cell's
history through the engine's driver (:func:`.backtest.stream`, :mod:`engine.backtest`) with that
cell's config — one task per cell, the cells in parallel across the executors, memory bounded by an
Arrow batch. Cost grows with ``cells × history``: sweep days or weeks here, not the whole quarter on
a laptop.

Example: low threshold × low hit count of AvgShedder::

    sweep(df, "AvgShedder", cfg, "loadBalancerAvgShedderLowThreshold", [5, 10, 15, 20],
          "loadBalancerAvgShedderHitCountLowThreshold", [2, 4, 8, 16])
"""
from __future__ import annotations

from engine.backtest import backtest_spec, typed_value
from engine.config import LoadBalancerConfig

from .backtest import DEFAULT_WARMUP_MINUTES, backtest_input, chunk_plan, run_chunks, stream

__all__ = ["sweep", "grid_cells"]


def grid_cells(x_key: str, x_values, y_key: str, y_values) -> list[tuple[int, float, float]]:
    """``[(cell, x, y)]`` in row-major order (x fastest); values checked against the keys' types."""
    xs = [float(typed_value(x_key, v)) for v in x_values]
    ys = [float(typed_value(y_key, v)) for v in y_values]
    if not xs or not ys:
        raise ValueError("the grid needs at least one value per key")
    if x_key == y_key:
        raise ValueError("the two sweep keys must differ")
    return [(i * len(xs) + j, x, y) for i, y in enumerate(ys) for j, x in enumerate(xs)]


def sweep(df, strategy: str, config: LoadBalancerConfig | None, x_key: str, x_values, y_key: str, y_values, *,
          bundles: str = "auto", synthetic_bundles: int = 8, bundle_df=None, chunks: int | None = None,
          warmup_minutes: int = DEFAULT_WARMUP_MINUTES):
    """Counts per grid cell (a Spark DataFrame, one row per cell, cells without events included).

    By default one streaming task per cell (:func:`.backtest.stream`), the cells in parallel across
    the executors; ``chunks`` > 1 also cuts each cell's history in time chunks
    (:func:`.backtest.run_chunks`, checked exact) — for grids smaller than the cores."""
    import math

    from pyspark.sql import functions as F

    strategy = backtest_spec(strategy).name
    cfg = config or LoadBalancerConfig()
    cells = grid_cells(x_key, x_values, y_key, y_values)
    for _c, x, y in cells:  # fail fast (in the driver) on values the config rejects
        cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
    spark = df.sparkSession
    grid = spark.createDataFrame(cells, "cell long, x double, y double")
    base = backtest_input(df, bundles, bundle_df)
    params = dict(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=0,
                  bundles=bundles, keys=(x_key, y_key))
    starts = []
    if chunks is not None and int(chunks) > 1:
        lo, hi = base.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            t0, t1 = int(lo.timestamp() * 1000), int(hi.timestamp() * 1000)
            # the grid's intervals may differ: cut on minutes every interval divides (their lcm)
            ivals = [max(1, int(cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
                                .loadBalancerSheddingIntervalMinutes)) for _c, x, y in cells]
            starts = chunk_plan(t0, t1, int(chunks), math.lcm(*ivals))
    data = base.crossJoin(F.broadcast(grid))
    if len(starts) > 1:
        events, _info = run_chunks(data, params, starts, warmup_minutes, len(cells))
    else:
        events = stream(data, params, len(cells))
    counts = events.groupBy("cell").agg(
        F.count("*").alias("events"), F.sum("n_bundles").alias("bundles"),
        F.countDistinct("timestamp").alias("minutes"),
        F.countDistinct(F.date_format("timestamp", "yyyy-MM-dd")).alias("days_with_events"))
    return (grid.join(counts, "cell", "left").na.fill(0, ["events", "bundles", "minutes", "days_with_events"])
            .orderBy("cell"))
