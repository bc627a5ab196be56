"""Spark job: the backtest over a grid of two config keys, in one Spark job — counts per cell.

DataFrame in (the long dataset) → DataFrame out, one row per grid cell: ``cell``, ``x``, ``y`` (the two
key values), ``events`` (brokers that would have unloaded, summed over minutes), ``bundles``
(bundles selected), ``minutes`` (minutes with at least one unload), ``days_with_events``.

How: the backtest input is cross-joined with the (broadcast) grid, so every cell carries the whole
history, then ``groupBy("cell", "chunk").applyInPandas`` replays each cell's config, one time chunk
per task (checked exact, see :func:`.backtest.run_chunks`), independently and in parallel across the
executors. Cost grows with ``cells × history``: sweep days or weeks here, not the whole quarter on
a laptop.

Example: low threshold × low hit count of AvgShedder::

    sweep(df, "AvgShedder", cfg, "loadBalancerAvgShedderLowThreshold", [5, 10, 15, 20],
          "loadBalancerAvgShedderHitCountLowThreshold", [2, 4, 8, 16])
"""
from __future__ import annotations

from engine.config import LoadBalancerConfig

from engine.strategies import shedding_name

from .backtest import DEFAULT_WARMUP_MINUTES, EVENT_SCHEMA, auto_chunks, backtest_input, chunk_plan, group_udf, run_chunks
from .replay import typed_value

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

    The tasks are ``cells × time chunks`` (:func:`.backtest.run_chunks`; ThresholdShedder: cells
    only), so even a 2 × 2 grid keeps every core busy; ``chunks=1`` gives one task per cell."""
    from pyspark.sql import functions as F

    cfg = config or LoadBalancerConfig()
    cells = grid_cells(x_key, x_values, y_key, y_values)
    for _c, x, y in cells:  # fail fast (in the driver) on values the config rejects
        cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
    spark = df.sparkSession
    grid = spark.createDataFrame(cells, "cell long, x double, y double")
    base = backtest_input(df, bundles, bundle_df)
    params = dict(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=0,
                  bundles=bundles, keys=(x_key, y_key))
    k = 1 if shedding_name(strategy) == "ThresholdShedder" else chunks
    starts = []
    if k != 1:
        lo, hi = base.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            t0, t1 = int(lo.timestamp() * 1000), int(hi.timestamp() * 1000)
            if k is None:
                k = max(1, auto_chunks(spark, (t1 - t0) // 60_000, warmup_minutes) // len(cells))
            # the grid's intervals may differ: cut on minutes every interval divides (their product's lcm)
            import math

            ivals = [max(1, int(cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
                                .loadBalancerSheddingIntervalMinutes)) for _c, x, y in cells]
            starts = chunk_plan(t0, t1, k, math.lcm(*ivals))
    data = base.crossJoin(F.broadcast(grid))
    if len(starts) > 1:
        events, _info = run_chunks(data, params, starts, warmup_minutes, len(cells))
    else:
        events = data.repartitionByRange(len(cells), "cell").groupBy("cell").applyInPandas(group_udf(**params),
                                                                                           schema=EVENT_SCHEMA)
    counts = events.groupBy("cell").agg(
        F.count("*").alias("events"), F.sum("n_bundles").alias("bundles"),
        F.countDistinct("timestamp").alias("minutes"),
        F.countDistinct(F.date_format("timestamp", "yyyy-MM-dd")).alias("days_with_events"))
    return (grid.join(counts, "cell", "left").na.fill(0, ["events", "bundles", "minutes", "days_with_events"])
            .orderBy("cell"))
