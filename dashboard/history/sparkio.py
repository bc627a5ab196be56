"""Spark-side reading of a dataset and the long → wide pivots every job starts from.

All functions take and return Spark DataFrames; pyspark is imported inside them, never at import.
"""
from __future__ import annotations

from .dataset import BROKER_METRICS, BUNDLE_METRICS, parse_time, read_meta

__all__ = ["read_history", "broker_minutes", "bundle_minutes", "to_pandas", "read_broker_minutes", "wide_files",
           "read_bundle_rows",
           "collected_frame", "COLLECTED_ATTR", "WIDE_SOURCE_ATTR"]

#: the attribute under which a DataFrame built from collected rows keeps them (pandas;
#: :func:`.aggregates.cluster_aggregates` sets it, :func:`to_pandas` reads it)
COLLECTED_ATTR = "_shedlab_collected"
#: the attribute under which :func:`read_broker_minutes` records the local wide files it read
#: (:func:`.aggregates.one_pass_files` reads them)
WIDE_SOURCE_ATTR = "_shedlab_wide_source"


def read_history(spark, path, start=None, end=None):
    """The dataset at ``path`` (a time range of it) as a Spark DataFrame; partition pruning on ``day``."""
    from pyspark.sql import functions as F

    _meta(spark, path)  # clear error for a non-dataset
    df = spark.read.parquet(str(path))  # Spark skips the "_"-prefixed layout, results and actions dirs
    t0, t1 = parse_time(start), parse_time(end, end=True)
    if t0 is not None:
        df = df.where((F.col("day") >= t0.strftime("%Y-%m-%d")) & (F.col("timestamp") >= F.lit(t0.to_pydatetime())))
    if t1 is not None:
        df = df.where((F.col("day") <= t1.strftime("%Y-%m-%d")) & (F.col("timestamp") <= F.lit(t1.to_pydatetime())))
    return df.select("timestamp", "broker", "metric", "value", "bundle")


def _meta(spark, path) -> dict:
    """The metadata of a local dataset or of one at a Hadoop URI (:mod:`.uri`)."""
    from .uri import is_uri, read_meta_uri

    return read_meta_uri(spark, str(path)) if is_uri(path) else read_meta(path)


def _time_filter(df, start, end):
    from pyspark.sql import functions as F

    t0, t1 = parse_time(start), parse_time(end, end=True)
    if t0 is not None:
        df = df.where((F.col("day") >= t0.strftime("%Y-%m-%d")) & (F.col("timestamp") >= F.lit(t0.to_pydatetime())))
    if t1 is not None:
        df = df.where((F.col("day") <= t1.strftime("%Y-%m-%d")) & (F.col("timestamp") <= F.lit(t1.to_pydatetime())))
    return df


def read_broker_minutes(spark, path, start=None, end=None, columns=None):
    """One row per ``(timestamp, broker)`` with the broker metrics as columns, for ``[start, end]``.

    From the wide layout (:mod:`.layout`) when the dataset has an up-to-date one: only the days of
    the range are listed (partition pruning on ``day``) and only ``columns`` (default: every broker
    metric) are read. Otherwise the long layout pivoted by :func:`broker_minutes` (same rows, same
    values). ``columns`` never drops ``timestamp`` and ``broker``.
    """
    from .layout import WIDE_DIR, has_wide, wide_path
    from .uri import is_uri, join

    meta = _meta(spark, path)
    cols = ["timestamp", "broker"] + [m for m in (columns or BROKER_METRICS) if m in BROKER_METRICS]
    if is_uri(path):  # trusted from the metadata (see dashboard.history.uri)
        info = (meta.get("layouts") or {}).get("wide")
        where = join(str(path), info.get("dir", WIDE_DIR)) if info else None
    else:
        where = str(wide_path(path)) if has_wide(path, meta) else None
    if where and is_uri(path):
        return _time_filter(spark.read.parquet(where), start, end).select(*cols)
    if where:
        days, files = _local_days(where, start, end)
        df = _time_filter(_read_local_days(spark, where, days, files), start, end).select(*cols)
        _remember_files(df, files, start, end, cols)  # the aggregate job may read them itself (.aggregates)
        return df
    return broker_minutes(read_history(spark, path, start, end)).select(*cols)


def wide_files(path, start=None, end=None) -> dict | None:
    """The day files of ``[start, end]`` of a local dataset's up-to-date wide layout, as
    :func:`read_broker_minutes` records them on its DataFrame (``files``, ``t0``, ``t1``, ``columns``: every
    broker metric), found without Spark — for jobs whose tasks read the files themselves, so that no
    DataFrame of them is planned (on a session's first job ~0.3 s of the driver and as much of the JVM's
    compilers, beside the tasks). ``None`` when there is none (a URI, no wide layout, nothing in range)."""
    from .layout import has_wide, wide_path
    from .uri import is_uri

    if is_uri(path) or not has_wide(path, read_meta(path)):
        return None
    _days, files = _local_days(str(wide_path(path)), start, end)
    return _source(files, start, end, ["timestamp", "broker", *BROKER_METRICS]) if files else None


def _local_days(where, start, end) -> tuple[list[str], list[str]]:
    """The ``day=`` directories of a local wide layout that ``[start, end]`` covers, and their files."""
    from pathlib import Path

    t0, t1 = parse_time(start), parse_time(end, end=True)
    d0 = None if t0 is None else t0.strftime("%Y-%m-%d")
    d1 = None if t1 is None else t1.strftime("%Y-%m-%d")
    days, files = [], []
    for d in sorted(Path(where).glob("day=*")):
        day = d.name.split("=", 1)[1]
        if (d0 is None or day >= d0) and (d1 is None or day <= d1):
            days.append(str(d))
            files += [str(f) for f in sorted(d.glob("*.parquet"))]
    return days, files


def _read_local_days(spark, where, days: list[str], files: list[str]):
    """The local wide layout, only the range's day directories listed, its schema read from one file's
    footer (the layout writes one schema; ``day`` is a string, as partition type inference is off).

    The same rows and columns as ``spark.read.parquet(where)`` with the day filter — without Spark
    listing every day of the dataset and inferring the schema: on a 90-day dataset that costs ~3 s of
    every job (~0.1 s for the two days a short job reads). An empty range reads the whole directory (the
    filter then leaves no row)."""
    if not files:
        return spark.read.parquet(where)
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    arrow = pq.read_schema(files[0])
    try:
        fields = list(from_arrow_schema(arrow).fields)
    except (TypeError, ValueError):  # a type Spark reads its own way: let it infer
        return spark.read.option("basePath", where).parquet(*days)
    schema = StructType([f for f in fields if f.name != "day"] + [StructField("day", StringType(), True)])
    return spark.read.schema(schema).option("basePath", where).parquet(*days)


def _remember_files(df, files: list[str], start, end, cols) -> None:
    """Record on ``df`` the wide files of ``[start, end]`` it reads (whole days; rows filtered again)."""
    try:
        df.__dict__[WIDE_SOURCE_ATTR] = _source(files, start, end, cols)
    except (AttributeError, TypeError):  # a DataFrame class without an instance dict: Spark reads them
        pass


def _source(files: list[str], start, end, cols) -> dict:
    t0, t1 = parse_time(start), parse_time(end, end=True)
    return {"files": files, "t0": t0, "t1": t1, "columns": list(cols)}


def read_bundle_rows(spark, path, start=None, end=None):
    """The long rows of the bundle metrics only (``bundle`` not null) of ``[start, end]``."""
    from pyspark.sql import functions as F

    return read_history(spark, path, start, end).where(F.col("bundle").isNotNull())


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


def collected_frame(spark, pdf, schema):
    """A Spark DataFrame over rows a job already collected (``pdf``); it keeps them, so
    :func:`to_pandas` gives them back without a second round trip."""
    sdf = spark.createDataFrame(pdf, schema=schema)
    try:
        sdf.__dict__[COLLECTED_ATTR] = pdf
    except (AttributeError, TypeError):  # a DataFrame class without an instance dict: collected again
        pass
    return sdf


def to_pandas(sdf, sort=None):
    """Collect a (small) result: timestamps stay naive UTC (the session time zone is UTC). A result the
    job built from rows it had already collected (:func:`.aggregates.cluster_aggregates`) gives back a
    copy of those rows instead of a second round trip."""
    kept = getattr(sdf, "__dict__", {}).get(COLLECTED_ATTR)
    pdf = kept.copy() if kept is not None else sdf.toPandas()
    if sort:
        pdf = pdf.sort_values(sort, kind="stable").reset_index(drop=True)
    return pdf
