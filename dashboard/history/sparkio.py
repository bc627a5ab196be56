"""Spark-side reading of a dataset and the long → wide pivots every job starts from.

All functions take and return Spark DataFrames; pyspark is imported inside them, never at import.
"""
from __future__ import annotations

from .dataset import BROKER_METRICS, BUNDLE_METRICS, parse_time, read_meta

__all__ = ["read_history", "broker_minutes", "bundle_minutes", "to_pandas"]


def read_history(spark, path, start=None, end=None):
    """The dataset at ``path`` (a time range of it) as a Spark DataFrame; partition pruning on ``day``."""
    from pyspark.sql import functions as F

    read_meta(path)  # clear error for a non-dataset
    df = spark.read.parquet(str(path))
    t0, t1 = parse_time(start), parse_time(end, end=True)
    if t0 is not None:
        df = df.where((F.col("day") >= t0.strftime("%Y-%m-%d")) & (F.col("timestamp") >= F.lit(t0.to_pydatetime())))
    if t1 is not None:
        df = df.where((F.col("day") <= t1.strftime("%Y-%m-%d")) & (F.col("timestamp") <= F.lit(t1.to_pydatetime())))
    return df.select("timestamp", "broker", "metric", "value", "bundle")


def broker_minutes(df):
    """One row per ``(timestamp, broker)`` with the nine broker metrics as columns (conditional
    aggregation: a single hash aggregate, so the partial map-side step shrinks the data ~9×).
    Missing metrics become 0 (Pulsar's default), duplicates take the maximum."""
    from pyspark.sql import functions as F

    b = df.where(F.col("bundle").isNull() & F.col("metric").isin(BROKER_METRICS))
    aggs = [F.max(F.when(F.col("metric") == m, F.col("value"))).alias(m) for m in BROKER_METRICS]
    return b.groupBy("timestamp", "broker").agg(*aggs).na.fill(0.0, BROKER_METRICS)


def bundle_minutes(df):
    """One row per ``(timestamp, broker, bundle)`` with the five bundle metrics (missing → 0)."""
    from pyspark.sql import functions as F

    b = df.where(F.col("bundle").isNotNull() & F.col("metric").isin(BUNDLE_METRICS))
    aggs = [F.max(F.when(F.col("metric") == m, F.col("value"))).alias(m) for m in BUNDLE_METRICS]
    return b.groupBy("timestamp", "broker", "bundle").agg(*aggs).na.fill(0.0, BUNDLE_METRICS)


def to_pandas(sdf, sort=None):
    """Collect a (small) result: timestamps stay naive UTC (the session time zone is UTC)."""
    pdf = sdf.toPandas()
    if sort:
        pdf = pdf.sort_values(sort, kind="stable").reset_index(drop=True)
    return pdf
