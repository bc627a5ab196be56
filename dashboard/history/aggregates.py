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

from .sparkio import broker_minutes

__all__ = ["cluster_aggregates", "minute_aggregates", "rollup", "broker_percentiles", "top_hottest",
           "DEFAULT_QUANTILES", "ROLLUP_COLUMNS"]

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


def _ratio(mx, mn):
    from pyspark.sql import functions as F

    return mx / F.when(F.abs(mn) <= EPS, F.lit(1.0)).otherwise(mn)


def minute_aggregates(wide_u):
    """Per-minute cluster aggregates of a broker-minute table that has ``usage``, ``rate``, ``thr``.

    The hottest broker is found with a second, tiny step (rows whose usage equals the minute's max,
    then the smallest id): an arg-max over a struct or a string would force Spark into a sort-based
    aggregation of every broker-minute row.
    """
    from pyspark.sql import functions as F

    g = wide_u.groupBy("timestamp").agg(
        F.count("*").alias("brokers"),
        F.max("rate").alias("rate_max"), F.min("rate").alias("rate_min"),
        F.max("thr").alias("thr_max"), F.min("thr").alias("thr_min"),
        F.max("cpu").alias("cpu_max"), F.min("cpu").alias("cpu_min"),
        F.avg("usage").alias("usage_mean"), F.stddev_pop("usage").alias("usage_std"),
        F.max("usage").alias("usage_max"), F.min("usage").alias("usage_min"),
    )
    hot = (wide_u.join(F.broadcast(g.select("timestamp", F.col("usage_max").alias("_umax"))), "timestamp")
           .where(F.col("usage") == F.col("_umax")).groupBy("timestamp").agg(F.min("broker").alias("hottest")))
    return (g.withColumn("rate_ratio", _ratio(F.col("rate_max"), F.col("rate_min")))
            .withColumn("thr_ratio", _ratio(F.col("thr_max"), F.col("thr_min")))
            .withColumn("cpu_range", F.col("cpu_max") - F.col("cpu_min"))
            .withColumn("usage_gap", F.col("usage_max") - F.col("usage_min"))
            .join(hot, "timestamp", "left"))


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


def broker_percentiles(wide_u, minute, quantiles=DEFAULT_QUANTILES, method: str = "exact"):
    """Per-broker distribution of weighted usage and CPU over the range, and minutes as the hottest.

    ``method="exact"`` (the default): Spark's exact ``percentile`` (linear interpolation between the
    closest ranks, what numpy and pandas do). ``"approx"`` (opt-in): ``percentile_approx`` with
    accuracy 10 000 — a value whose rank is within 1/10 000 of the wanted one, not interpolated;
    :func:`approx_error` measures how far that is from the exact answer on a given result.
    """
    from pyspark.sql import functions as F

    qs = [float(q) for q in quantiles]
    qarr = F.array(*[F.lit(q) for q in qs])
    if method == "approx":
        uq = F.percentile_approx(F.col("usage"), qarr, 10_000)
        c90 = F.percentile_approx(F.col("cpu"), F.lit(0.9), 10_000).cast("double")
    elif method == "exact":
        uq, c90 = F.percentile(F.col("usage"), qarr), F.percentile(F.col("cpu"), F.lit(0.9))
    else:
        raise ValueError(f"method must be exact or approx, got {method!r}")
    per = wide_u.groupBy("broker").agg(
        F.count("*").alias("minutes"), F.avg("usage").alias("usage_mean"),
        uq.alias("_uq"), F.max("usage").alias("usage_max"),
        F.avg("cpu").alias("cpu_mean"), c90.alias("cpu_p90"),
        F.max("cpu").alias("cpu_max"), F.avg("rate").alias("rate_mean"), F.avg("thr").alias("thr_mean"))
    for i, q in enumerate(qs):
        per = per.withColumn(f"usage_p{_qname(q)}", F.col("_uq")[i].cast("double"))
    hot = minute.groupBy(F.col("hottest").alias("broker")).agg(F.count("*").alias("hottest_minutes"))
    return (per.drop("_uq").join(hot, "broker", "left").na.fill(0, ["hottest_minutes"])
            .withColumn("hottest_minutes", F.col("hottest_minutes").cast("long")))


def approx_error(approx_brokers, exact_brokers, quantiles=DEFAULT_QUANTILES) -> dict:
    """``{column: max |approx - exact|}`` of two ``brokers`` results (pandas), for printing."""
    cols = [f"usage_p{_qname(float(q))}" for q in quantiles] + ["cpu_p90"]
    a = approx_brokers.set_index("broker").sort_index()
    e = exact_brokers.set_index("broker").sort_index()
    return {c: float((a[c] - e[c]).abs().max()) for c in cols}


def _qname(q: float) -> str:
    s = f"{q * 100:g}"
    return s.replace(".", "_")


def top_hottest(brokers, n: int = 10):
    """The ``n`` brokers with the highest mean weighted usage (ties by broker id), ranked from 1."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.orderBy(F.col("usage_mean").desc(), F.col("broker").asc())
    return brokers.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= int(n))


def cluster_aggregates(df, weights=None, quantiles=DEFAULT_QUANTILES, top_n: int = 10,
                       percentiles: str = "exact") -> dict:
    """The whole job: a DataFrame → ``{"minute", "hour", "day", "brokers", "top"}`` DataFrames.

    ``df`` is either the broker-minute table (the wide layout, :func:`.sparkio.read_broker_minutes`:
    read as it is) or the long dataset (:func:`.sparkio.read_history`: pivoted first). The
    broker-minute table with usage is cached for the two passes over it (minute aggregates and
    per-broker percentiles); the small minute and broker tables too. ``result["_cached"]`` lists
    what to ``unpersist()`` when done (the runner does). ``percentiles``: ``"exact"`` or the opt-in
    ``"approx"`` (see :func:`broker_percentiles`).
    """
    from pyspark import StorageLevel

    wide = broker_minutes(df) if "metric" in df.columns else df
    wide_u = with_usage(wide, weights).persist(StorageLevel(_TUNING["wide_disk"], _TUNING["wide_mem"], False,
                                                            False))
    minute = minute_aggregates(wide_u).cache()
    brokers = broker_percentiles(wide_u, minute, quantiles, percentiles).cache()
    return {"minute": minute, "hour": rollup(minute, "hour"), "day": rollup(minute, "day"),
            "brokers": brokers, "top": top_hottest(brokers, top_n), "_cached": [minute, brokers, wide_u]}


#: how the broker-minute table is kept between the two passes (measured, see bench/bench_history.py)
_TUNING = {"wide_disk": True, "wide_mem": False}
