"""History at scale: months of per-minute broker metrics, aggregated, backtested and swept with Spark.

Modules (one concept each; none imports pyspark at import time, and only the ``*_job`` functions
and :mod:`dashboard.spark` ever touch Spark):

* :mod:`.dataset`   — the Parquet dataset layout and schema, metadata, fingerprint, reading (the format
  itself in :mod:`.store`);
* :mod:`.generate`  — a vectorised generator of realistic histories (same layout);
* :mod:`.ingest`    — Prometheus ``query_range`` JSON, long CSV/Parquet and LoadData timelines → dataset;
  :mod:`.ingest_spark` runs the same rules on Spark above a size threshold;
* :mod:`.aggregates` — Spark job: cluster aggregates per minute/hour/day, per-broker percentiles, hottest;
* :mod:`.backtest`  — Spark job: a shedding strategy over the minutes, streamed through the engine's one
  backtest driver (:mod:`engine.backtest`);
* :mod:`.sweep`     — Spark job: the backtest over a grid of two config keys, counts per cell;
* :mod:`.bundles`   — Spark job: per-bundle distribution (topics and traffic) over time;
* :mod:`.replay`    — the former per-minute runner's names, kept as aliases of :mod:`engine.backtest`;
* :mod:`.reference` — the same computations in pandas (small data, tests, benchmark);
* :mod:`.results`   — result caching (diskcache) and the small result Parquet files the app reads;
* :mod:`.snapshot`  — one minute of a dataset as a LoadData snapshot (opened in the Tuner);
* ``python -m dashboard.history ...`` — the command line (:mod:`.cli`).
"""
