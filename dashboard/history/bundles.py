"""Spark job: per-bundle distribution (topics and traffic per bundle) over time.

Only meaningful when the dataset has ``bundle_*`` metrics (clusters with
``exposeBundlesMetricsInPrometheus=true``, or LoadData timelines). DataFrame in → DataFrames out:

``hour``  one row per hour: ``bundles`` seen; ``topics`` (sum over bundles of each bundle's max topic
          count that hour), ``topics_max``; ``rate_total``, ``rate_max``, ``thr_total``, ``thr_max`` of
          the bundles' hourly mean msg rate / throughput (in+out); quantiles ``rate_p50``/``p90``,
          ``thr_p50``/``p90``, ``topics_p50``/``p90`` across bundles (exact, linear interpolation);
          ``rate_top_share`` = the largest bundle's share of the hour's traffic (concentration).
``top``   the ``top_n`` bundles by mean msg rate over the range: ``rate_mean``, ``rate_max``,
          ``thr_mean``, ``topics_max``, ``minutes`` seen, ``brokers`` that owned it, ``last_broker``.
"""
from __future__ import annotations

from .aggregates import _qname
from .sparkio import bundle_minutes

__all__ = ["bundle_distribution"]


def bundle_distribution(df, top_n: int = 20, quantiles=(0.5, 0.9)) -> dict:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    b = (bundle_minutes(df)
         .withColumn("rate", F.col("bundle_msg_rate_in") + F.col("bundle_msg_rate_out"))
         .withColumn("thr", F.col("bundle_msg_throughput_in") + F.col("bundle_msg_throughput_out"))
         .cache())
    per = b.groupBy(F.date_trunc("hour", "timestamp").alias("timestamp"), "bundle").agg(
        F.avg("rate").alias("rate"), F.avg("thr").alias("thr"), F.max("bundle_topics").alias("topics"))
    qs = [float(q) for q in quantiles]
    qarr = F.array(*[F.lit(q) for q in qs])
    hour = per.groupBy("timestamp").agg(
        F.count("*").alias("bundles"), F.sum("topics").alias("topics"), F.sum("rate").alias("rate_total"),
        F.max("rate").alias("rate_max"), F.sum("thr").alias("thr_total"), F.max("thr").alias("thr_max"),
        F.max("topics").alias("topics_max"), F.percentile("rate", qarr).alias("_rq"),
        F.percentile("thr", qarr).alias("_tq"), F.percentile("topics", qarr).alias("_pq"))
    cols = ["timestamp", "bundles", "topics", "rate_total", "rate_max", "thr_total", "thr_max", "topics_max"]
    for i, q in enumerate(qs):
        n = _qname(q)
        hour = (hour.withColumn(f"rate_p{n}", F.col("_rq")[i]).withColumn(f"thr_p{n}", F.col("_tq")[i])
                .withColumn(f"topics_p{n}", F.col("_pq")[i]))
        cols += [f"rate_p{n}", f"thr_p{n}", f"topics_p{n}"]
    hour = hour.withColumn("rate_top_share", F.col("rate_max") / F.when(F.col("rate_total") > 0, F.col("rate_total"))
                           .otherwise(F.lit(1.0)))
    hour = hour.select(*cols, "rate_top_share")
    last = b.groupBy("bundle").agg(F.max(F.struct("timestamp", "broker")).alias("_last"))
    top = (b.groupBy("bundle").agg(F.avg("rate").alias("rate_mean"), F.max("rate").alias("rate_max"),
                                   F.avg("thr").alias("thr_mean"), F.max("bundle_topics").alias("topics_max"),
                                   F.count("*").alias("minutes"), F.countDistinct("broker").alias("brokers"))
           .join(last, "bundle").withColumn("last_broker", F.col("_last.broker")).drop("_last"))
    w = Window.orderBy(F.col("rate_mean").desc(), F.col("bundle").asc())
    top = top.withColumn("rank", F.row_number().over(w)).where(F.col("rank") <= int(top_n))
    return {"hour": hour, "top": top, "_bundles": b}
