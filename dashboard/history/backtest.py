"""Spark job: backtest a shedding strategy over a history — how often would it have fired?

DataFrame in (the long dataset) → DataFrames out:

``events``  one row per broker that would have unloaded in a minute (:data:`.replay.EVENT_COLUMNS`
            plus ``cell``): timestamp, strategy, broker, partner (AvgShedder: the cool broker of the
            pair; UniformLoadShedder: the least loaded broker), trigger (AvgShedder ``high``/``low``
            hit count; ThresholdShedder ``threshold``/``lower boundary``; UniformLoadShedder
            ``msg rate``/``throughput``), scores, gap, amount to move, amount selected, bundles, and
            the strategy state just before (JSON, to open that minute in the Tuner).
``per_day`` events, brokers and bundles per UTC day (``day`` as ``YYYY-MM-DD``).
``per_pair`` events per ``(broker, partner)`` with the first and last time and every timestamp.

The replay is sequential (strategy state carries from minute to minute), so a cluster's whole history
is one group of a ``groupBy().applyInPandas``: the pandas UDF calls :func:`.replay.replay`, i.e. the
engine's strategy on per-minute views — the same rules as the engine, by construction. Spark does the
reading, pivoting and counting in parallel; the sweep (:mod:`.sweep`) runs many such groups at once.
"""
from __future__ import annotations

import pandas as pd

from engine.config import LoadBalancerConfig

from .dataset import BROKER_METRICS, BUNDLE_METRICS
from .replay import EVENT_COLUMNS, replay, typed_value
from .sparkio import broker_minutes, bundle_minutes

__all__ = ["backtest", "backtest_input", "EVENT_SCHEMA", "count_events", "run_group", "group_udf"]

EVENT_SCHEMA = ("cell long, timestamp timestamp, strategy string, broker string, partner string, trigger string, "
                "score double, partner_score double, gap double, amount double, moved double, unit string, "
                "n_bundles long, bundles string, state string")


def backtest_input(df, bundles: str = "auto"):
    """The rows one replay needs: broker minutes (``bundle`` null) and, with ``bundles`` ``"auto"``
    or ``"real"``, bundle minutes, in one frame (columns: timestamp, broker, bundle, the nine broker
    and five bundle metrics). ``"synthetic"`` ignores bundle metrics even when present."""
    from pyspark.sql import functions as F

    bw = broker_minutes(df).withColumn("bundle", F.lit(None).cast("string"))
    for m in BUNDLE_METRICS:
        bw = bw.withColumn(m, F.lit(None).cast("double"))
    cols = ["timestamp", "broker", "bundle"] + BROKER_METRICS + BUNDLE_METRICS
    if bundles == "synthetic":
        return bw.select(*cols)
    kw = bundle_minutes(df)
    for m in BROKER_METRICS:
        kw = kw.withColumn(m, F.lit(None).cast("double"))
    return bw.select(*cols).unionByName(kw.select(*cols))


def run_group(pdf: pd.DataFrame, strategy: str, config: LoadBalancerConfig, synthetic_bundles: int,
              state_limit: int, bundles: str, keys: tuple | None = None) -> pd.DataFrame:
    """The pandas UDF body: one cluster history (one sweep cell) → its events."""
    cell = int(pdf["cell"].iloc[0]) if "cell" in pdf and len(pdf) else 0
    cfg = config
    if keys and len(pdf):
        cfg = cfg.with_values({keys[0]: typed_value(keys[0], pdf["x"].iloc[0]),
                               keys[1]: typed_value(keys[1], pdf["y"].iloc[0])})
    is_b = pdf["bundle"].isna()
    bw = pdf.loc[is_b, ["timestamp", "broker"] + BROKER_METRICS]
    kw = pdf.loc[~is_b, ["timestamp", "broker", "bundle"] + BUNDLE_METRICS]
    if kw.empty and bundles != "real":  # "real" without bundle rows: brokers own nothing, nothing moves
        kw = None
    ev = replay(bw, kw, strategy, cfg, synthetic_bundles=synthetic_bundles, state_limit=state_limit)
    ev.insert(0, "cell", cell)
    return ev[["cell"] + EVENT_COLUMNS]


def group_udf(**params):
    """:func:`run_group` bound to ``params``, as a typed function for ``applyInPandas``."""

    def fn(pdf: pd.DataFrame) -> pd.DataFrame:
        return run_group(pdf, **params)

    return fn


def count_events(events) -> dict:
    """``per_day`` and ``per_pair`` counts of an events DataFrame."""
    from pyspark.sql import functions as F

    per_day = events.groupBy(F.date_format("timestamp", "yyyy-MM-dd").alias("day")).agg(
        F.count("*").alias("events"), F.countDistinct("broker").alias("brokers"),
        F.sum("n_bundles").alias("bundles"))
    per_pair = events.groupBy("broker", "partner").agg(
        F.count("*").alias("events"), F.sum("n_bundles").alias("bundles"), F.min("timestamp").alias("first"),
        F.max("timestamp").alias("last"), F.array_sort(F.collect_list("timestamp")).alias("timestamps"))
    return {"per_day": per_day, "per_pair": per_pair}


def backtest(df, strategy: str, config: LoadBalancerConfig | None = None, *, bundles: str = "auto",
             synthetic_bundles: int = 8, state_limit: int = 2000) -> dict:
    """The whole job: ``{"events", "per_day", "per_pair"}`` DataFrames for one strategy and config."""
    from pyspark.sql import functions as F

    if bundles not in ("auto", "real", "synthetic"):
        raise ValueError(f"bundles must be auto, real or synthetic, got {bundles!r}")
    cfg = config or LoadBalancerConfig()
    data = backtest_input(df, bundles).withColumn("cell", F.lit(0).cast("long"))
    fn = group_udf(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=state_limit,
                   bundles=bundles)
    events = data.groupBy("cell").applyInPandas(fn, schema=EVENT_SCHEMA).cache()
    return {"events": events, **count_events(events)}
