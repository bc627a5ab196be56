"""Spark job: the backtest over a grid of two config keys, in one Spark job — counts per cell.

DataFrame in (the long dataset) → DataFrame out, one row per grid cell: ``cell``, ``x``, ``y`` (the two
key values), ``events`` (brokers that would have unloaded, summed over minutes), ``bundles``
(bundles selected), ``minutes`` (minutes with at least one unload), ``days_with_events``.

How: the backtest input is cross-joined with the (broadcast) grid, so every cell carries the whole
history, then ``groupBy("cell").applyInPandas`` replays each cell's config independently and in
parallel (one Python worker per task). Cost grows with ``cells × history``: sweep days or weeks
here, not the whole quarter on a laptop.

Example: low threshold × low hit count of AvgShedder::

    sweep(df, "AvgShedder", cfg, "loadBalancerAvgShedderLowThreshold", [5, 10, 15, 20],
          "loadBalancerAvgShedderHitCountLowThreshold", [2, 4, 8, 16])
"""
from __future__ import annotations

from engine.config import LoadBalancerConfig

from .backtest import EVENT_SCHEMA, backtest_input, group_udf
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
          bundles: str = "auto", synthetic_bundles: int = 8):
    """Counts per grid cell (a Spark DataFrame, one row per cell, cells without events included)."""
    from pyspark.sql import functions as F

    cfg = config or LoadBalancerConfig()
    cells = grid_cells(x_key, x_values, y_key, y_values)
    for _c, x, y in cells:  # fail fast (in the driver) on values the config rejects
        cfg.with_values({x_key: typed_value(x_key, x), y_key: typed_value(y_key, y)})
    spark = df.sparkSession
    grid = spark.createDataFrame(cells, "cell long, x double, y double")
    data = backtest_input(df, bundles).crossJoin(F.broadcast(grid)).repartition(len(cells), "cell")
    fn = group_udf(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=0,
                   bundles=bundles, keys=(x_key, y_key))
    events = data.groupBy("cell").applyInPandas(fn, schema=EVENT_SCHEMA)
    counts = events.groupBy("cell").agg(
        F.count("*").alias("events"), F.sum("n_bundles").alias("bundles"),
        F.countDistinct("timestamp").alias("minutes"),
        F.countDistinct(F.date_format("timestamp", "yyyy-MM-dd")).alias("days_with_events"))
    return (grid.join(counts, "cell", "left").na.fill(0, ["events", "bundles", "minutes", "days_with_events"])
            .orderBy("cell"))
