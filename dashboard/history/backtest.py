"""Spark job: backtest a shedding strategy over a history — how often would it have fired?

DataFrame in (the broker-minute table of the wide layout, or the long dataset) → DataFrames out:

``events``  one row per broker that would have unloaded in a minute (:data:`engine.backtest.EVENT_COLUMNS`
            plus ``cell``): timestamp, strategy, broker, and what the strategy's result explains
            (partner, trigger, scores, gap, amount to move), amount selected, bundles, and the
            strategy state just before (JSON, to open that minute in the Tuner).
``per_day`` events, brokers and bundles per UTC day (``day`` as ``YYYY-MM-DD``).
``per_pair`` events per ``(broker, partner)`` with the first and last time and every timestamp.

The replay is sequential (strategy state carries from minute to minute) and is the engine's one
driver, :class:`engine.backtest.Backtest` — the same loop the pandas path runs, by construction
(there is no second shedding loop here). By default each backtest is one task that
streams its history: the rows, sorted by time in the cell's own partition, reach the Python worker as
Arrow batches and go through the driver minute by minute (``mapInPandas``, :func:`stream`); the events
leave with each batch, so memory is bounded by a batch however long the history. On request
(``chunks``) one long history is cut into time chunks replayed in parallel
(``groupBy("cell", "chunk").applyInPandas``), each after a warm-up, and every chunk is checked to start
from exactly the memory a sequential replay would carry in; a chunk that does not is replayed again
from the true state (:func:`run_chunks`), so the result is always the sequential one. The sweep
(:mod:`.sweep`) runs its cells in groups, each group one task streaming the history once through the
multi-config driver (:class:`engine.backtest.BacktestSet`), the groups in parallel.
"""
from __future__ import annotations

import contextlib
import json

import numpy as np
import pandas as pd

from engine.backtest import EVENT_COLUMNS, BrokerBlock, BundleBlock, backtest_spec, events_frame, typed_value
from engine.backtest import backtest_frames as replay
from engine.config import LoadBalancerConfig

from .dataset import BROKER_METRICS, BUNDLE_METRICS
from .sparkio import broker_minutes, bundle_minutes

__all__ = ["backtest", "backtest_input", "EVENT_SCHEMA", "count_events", "run_group", "group_udf", "chunk_plan",
           "run_chunks", "DEFAULT_WARMUP_MINUTES", "stream", "stream_cells", "stream_udf", "stream_batches", "run_segments",
           "STREAM_BATCH_ROWS", "whole_minutes", "key_runs", "feed_rows"]

EVENT_SCHEMA = ("cell long, timestamp timestamp, strategy string, broker string, partner string, trigger string, "
                "score double, partner_score double, gap double, amount double, moved double, unit string, "
                "n_bundles long, bundles string, state string")
#: what a chunk task returns: events (``kind`` = "event") and its two carried states (``kind`` =
#: "start"/"end", the JSON in ``state``)
CHUNK_SCHEMA = EVENT_SCHEMA + ", chunk long, kind string"
#: minutes replayed before a chunk's first minute to rebuild the strategy's memory (checked, see :func:`run_chunks`)
DEFAULT_WARMUP_MINUTES = 180
MINUTE_MS = 60_000


def backtest_input(df, bundles: str = "auto", bundle_df=None):
    """The rows one replay needs: broker minutes (``bundle`` null) and, with ``bundles`` ``"auto"``
    or ``"real"``, bundle minutes, in one frame (columns: timestamp, broker, bundle, the nine broker
    and five bundle metrics). ``"synthetic"`` ignores bundle metrics even when present; then, and
    when there are no bundle rows to read, the frame has the broker columns only.

    ``df`` is the long dataset (both parts come from it) or the broker-minute table of the wide
    layout (then the bundle rows come from ``bundle_df``, long rows of bundle metrics, if given)."""
    from pyspark.sql import functions as F

    long = "metric" in df.columns
    bw = broker_minutes(df) if long else df
    if bundles == "synthetic" or (not long and bundle_df is None):
        # broker rows only: no null bundle columns to carry into the Python workers (a 31-day history
        # in one group is ~40 % smaller this way)
        return bw.select("timestamp", "broker", *BROKER_METRICS)
    bw = bw.withColumn("bundle", F.lit(None).cast("string"))
    for m in BUNDLE_METRICS:
        bw = bw.withColumn(m, F.lit(None).cast("double"))
    cols = ["timestamp", "broker", "bundle"] + BROKER_METRICS + BUNDLE_METRICS
    kw = bundle_minutes(df if long else bundle_df)
    for m in BROKER_METRICS:
        kw = kw.withColumn(m, F.lit(None).cast("double"))
    return bw.select(*cols).unionByName(kw.select(*cols))


def run_group(pdf: pd.DataFrame, strategy: str, config: LoadBalancerConfig, synthetic_bundles: int,
              state_limit: int, bundles: str, keys: tuple | None = None, chunks: dict | None = None) -> pd.DataFrame:
    """The pandas UDF body: one cluster history (one sweep cell), or one time chunk of it → its events.

    With ``chunks`` (``{"starts": [epoch ms of each chunk's first minute], "initial": {(cell,
    chunk): carried state}}``) the group is one chunk: minutes before its start are its warm-up,
    and two more rows carry the states captured at its start and end (``kind``)."""
    cell = int(pdf["cell"].iloc[0]) if "cell" in pdf and len(pdf) else 0
    chunk = int(pdf["chunk"].iloc[0]) if "chunk" in pdf and len(pdf) else 0
    cfg = config
    if keys and len(pdf):
        cfg = cfg.with_values({keys[0]: typed_value(keys[0], pdf["x"].iloc[0]),
                               keys[1]: typed_value(keys[1], pdf["y"].iloc[0])})
    if "bundle" in pdf:
        is_b = pdf["bundle"].isna()
        bw = pdf.loc[is_b, ["timestamp", "broker"] + BROKER_METRICS]
        kw = pdf.loc[~is_b, ["timestamp", "broker", "bundle"] + BUNDLE_METRICS]
    else:  # broker rows only (synthetic bundles, or a dataset without bundle metrics)
        bw, kw = pdf[["timestamp", "broker"] + BROKER_METRICS], pdf.iloc[:0].assign(bundle=None)
    if kw.empty and bundles != "real":  # "real" without bundle rows: brokers own nothing, nothing moves
        kw = None
    elif kw.empty:
        kw = pd.DataFrame(columns=["timestamp", "broker", "bundle"] + BUNDLE_METRICS)
    cap, emit_from, initial = None, None, None
    if chunks is not None:
        cap = {}
        emit_from = chunks["starts"][chunk] if chunk > 0 else None
        initial = (chunks.get("initial") or {}).get(f"{cell}:{chunk}")
    ev = replay(bw, kw, strategy, cfg, synthetic_bundles=synthetic_bundles, state_limit=state_limit,
                initial=initial, emit_from=emit_from, capture=cap)
    ev.insert(0, "cell", cell)
    ev = ev[["cell"] + EVENT_COLUMNS]
    if chunks is None:
        return ev
    ev["chunk"] = chunk
    ev["kind"] = "event"
    marks = events_frame([{"timestamp": int(chunks["starts"][chunk]), "strategy": strategy, "broker": "",
                           "n_bundles": 0, "state": json.dumps(cap[k])} for k in ("start", "end")])
    marks.insert(0, "cell", cell)
    marks = marks[["cell"] + EVENT_COLUMNS]
    marks["chunk"] = chunk
    marks["kind"] = ["start", "end"]
    return pd.concat([ev, marks], ignore_index=True)


def _cell_config(config: LoadBalancerConfig, keys, x, y) -> LoadBalancerConfig:
    if not keys:
        return config
    return config.with_values({keys[0]: typed_value(keys[0], x), keys[1]: typed_value(keys[1], y)})


def stream_cells(batches, strategy: str, config: LoadBalancerConfig, synthetic_bundles: int, state_limit: int,
                 bundles: str, use_bundles: bool, keys: tuple | None = None, initial: dict | None = None,
                 on_end=None):
    """The ``mapInPandas`` body of the streaming backtest: this partition's rows, sorted by ``(cell,
    timestamp)``, arrive as Arrow batches; each cell is one :class:`engine.backtest.Backtest` fed minute
    by minute, and the events of each batch leave at once. Memory is bounded by a batch (a minute cut by
    a batch boundary waits for the next batch), never by the history.

    ``use_bundles``: the rows carry bundle rows (``bundle`` not null) — each minute's bundles are the
    ones reported (none when a minute has none); else every broker gets synthetic bundles.
    ``initial``: the carried state each cell starts from (a time segment of a longer history);
    ``on_end(cell, carried)`` receives each cell's carried state after its last minute."""
    from engine.backtest import Backtest

    state = {"cell": None, "bt": None}

    def end():
        if on_end is not None and state["bt"] is not None:
            on_end(state["cell"], state["bt"].carried())

    def run(pdf: pd.DataFrame) -> list:
        out: list = []
        for c, part in key_runs(pdf, "cell"):
            if state["cell"] != c:
                end()
                cfg = _cell_config(config, keys, part["x"].iloc[0] if keys else None,
                                   part["y"].iloc[0] if keys else None)
                state["cell"] = c
                state["bt"] = Backtest(strategy, cfg, synthetic_bundles=synthetic_bundles, state_limit=state_limit,
                                       initial=initial)
            bt = state["bt"]
            if not bt.enabled:
                continue
            feed_rows(bt, part, use_bundles)
            out.extend(dict(e, cell=c) for e in bt.events)  # the events leave now: memory stays bounded
            bt.events.clear()
        return out

    def frame(evs: list) -> pd.DataFrame:
        ev = events_frame(evs)
        ev.insert(0, "cell", pd.Series([e["cell"] for e in evs], dtype="int64"))
        return ev[["cell"] + EVENT_COLUMNS]

    for part in whole_minutes(batches, "cell"):
        evs = run(part)
        if evs:
            yield frame(evs)
    end()


def key_runs(pdf: pd.DataFrame, key: str):
    """``(value, rows)`` for each run of equal ``key`` values (an integer column) in ``pdf``."""
    vals = pdf[key].to_numpy()
    cuts = np.flatnonzero(np.r_[True, vals[1:] != vals[:-1]])
    for a, b in zip(cuts, np.r_[cuts[1:], len(pdf)]):
        yield int(vals[a]), pdf.iloc[a:b]


def feed_rows(driver, part: pd.DataFrame, use_bundles: bool) -> None:
    """Feed one run of rows to a :class:`engine.backtest.Backtest` or ``BacktestSet``: its broker rows
    and, with ``use_bundles``, its bundle rows (``bundle`` not null)."""
    broker_cols = ["timestamp", "broker"] + BROKER_METRICS
    if use_bundles:
        is_b = part["bundle"].isna().to_numpy()
        driver.feed(BrokerBlock(part.loc[is_b, broker_cols]),
                    BundleBlock(part.loc[~is_b, ["timestamp", "broker", "bundle"] + BUNDLE_METRICS]))
    else:
        driver.feed(BrokerBlock(part[broker_cols]))


def whole_minutes(batches, key: str):
    """Arrow batches (pandas frames sorted by ``key`` then time) regrouped so that no ``(key, minute)``
    is split between two: the last ``(key, minute)`` of a batch may go on in the next one, so it waits."""
    carry = None
    for pdf in batches:
        if carry is not None:
            pdf = pd.concat([carry, pdf], ignore_index=True)
        if pdf.empty:
            continue
        k, t = pdf[key].to_numpy(), pdf["timestamp"].to_numpy()
        tail = (k == k[-1]) & (t == t[-1])
        carry = pdf[tail]
        if (~tail).any():
            yield pdf[~tail].reset_index(drop=True)
    if carry is not None and len(carry):
        yield carry.reset_index(drop=True)


def stream_udf(**params):
    """:func:`stream_cells` bound to ``params``, for ``mapInPandas``."""

    def fn(batches):
        yield from stream_cells(batches, **params)

    return fn


#: Arrow rows per batch of a streamed backtest (Spark's default is 10,000): ~400 minutes of 250 brokers,
#: a few MB; fewer batches cut fewer minutes (measured ~10 % faster than the default on the bench data)
STREAM_BATCH_ROWS = 100_000


@contextlib.contextmanager
def stream_batches(spark, rows: int = STREAM_BATCH_ROWS):
    """Run the jobs inside with ``rows`` Arrow rows per batch; the session's setting is put back after."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    try:
        old = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - a session that does not answer: leave it alone
        yield
        return
    spark.conf.set(key, str(int(rows)))
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def segment_udf(initial: dict | None, **params):
    """One time segment of a single backtest, for ``mapInPandas`` with :data:`CHUNK_SCHEMA`: its events
    (``kind`` "event"), then one row ``kind`` "end" carrying the state after its last minute (JSON)."""

    def fn(batches):
        ends = []
        for ev in stream_cells(batches, **params, initial=initial, on_end=lambda c, st: ends.append(st)):
            yield ev.assign(chunk=0, kind="event")
        for st in ends:
            mark = events_frame([{"timestamp": 0, "strategy": params["strategy"], "broker": "", "n_bundles": 0,
                                  "state": json.dumps(st)}])
            mark.insert(0, "cell", 0)
            yield mark[["cell"] + EVENT_COLUMNS].assign(chunk=0, kind="end")

    return fn


def run_segments(data, params: dict, starts: list[int], state_limit: int, progress=None):
    """One backtest as consecutive Spark jobs, one per time segment (``starts``: each segment's first
    minute), each streaming from the state the previous one ended with: the same events as one stream,
    with progress between segments (the page's progress bar; Cancel stops the job group in between
    too). Returns the events DataFrame and the cached parts."""
    from pyspark.sql import functions as F

    use_b = _uses_bundles(data, params)
    ms = F.col("timestamp").cast("long") * 1000
    carried, emitted, parts = None, 0, []
    bounds = list(zip(starts, starts[1:] + [None]))
    for k, (a, b) in enumerate(bounds):
        if progress is not None:
            day = pd.Timestamp(a, unit="ms").strftime("%Y-%m-%d %H:%M")
            progress(k, len(bounds), f"backtest: segment {k + 1} of {len(bounds)} (from {day} UTC)")
        cond = ms >= F.lit(a) if k else F.lit(True)
        if b is not None:
            cond = cond & (ms < F.lit(b))
        fn = segment_udf(carried, **{**params, "state_limit": max(0, state_limit - emitted)}, use_bundles=use_b)
        out = (data.where(cond).repartition(1).sortWithinPartitions("cell", "timestamp")
               .mapInPandas(fn, schema=CHUNK_SCHEMA).cache())
        parts.append(out)
        emitted += out.where(F.col("kind") == "event").count()
        end = out.where(F.col("kind") == "end").select("state").collect()
        if end:
            carried = json.loads(end[0]["state"])
    if progress is not None:
        progress(len(bounds), len(bounds), "backtest: done")
    events = parts[0]
    for x in parts[1:]:
        events = events.unionByName(x)
    return events.where(F.col("kind") == "event").drop("chunk", "kind"), parts


def _uses_bundles(data, params: dict) -> bool:
    from pyspark.sql import functions as F

    return "bundle" in data.columns and (params["bundles"] == "real"
                                         or data.where(F.col("bundle").isNotNull()).limit(1).count() > 0)


def stream(data, params: dict, n_cells: int):
    """Every cell's backtest as one streaming task (:func:`stream_cells`); cells in parallel (one
    range partition per cell). Returns the events DataFrame (``cell`` + :data:`EVENT_COLUMNS`)."""
    use_b = _uses_bundles(data, params)
    part = data.repartitionByRange(n_cells, "cell") if n_cells > 1 else data.repartition(1)
    part = part.sortWithinPartitions("cell", "timestamp")
    return part.mapInPandas(stream_udf(**params, use_bundles=use_b), schema=EVENT_SCHEMA)


def group_udf(**params):
    """:func:`run_group` bound to ``params``, as a typed function for ``applyInPandas``."""

    def fn(pdf: pd.DataFrame) -> pd.DataFrame:
        return run_group(pdf, **params)

    return fn


def chunk_plan(t0_ms: int, t1_ms: int, chunks: int, interval_min: int = 1) -> list[int]:
    """Start (epoch ms) of each of ``chunks`` equal time chunks of ``[t0, t1]``, on shedding minutes."""
    step = interval_min * MINUTE_MS
    span = max(0, t1_ms - t0_ms) // step + 1
    k = max(1, min(int(chunks), span))
    first = -(-t0_ms // step) * step
    return [first + (span * i // k) * step for i in range(k)]


def _with_chunks(data, starts: list[int], warmup_ms: int):
    """Each row tagged with its ``chunk`` (``own`` true), and copied (``own`` false) to the next
    chunk when it lies in that chunk's warm-up window."""
    from pyspark.sql import functions as F

    ms = F.col("timestamp").cast("long") * 1000
    own = F.lit(0)
    for i, s0 in enumerate(starts[1:], 1):
        own = F.when(ms >= F.lit(s0), F.lit(i)).otherwise(own)
    tags = [F.struct(own.alias("chunk"), F.lit(True).alias("own"))]
    for i, s0 in enumerate(starts[1:], 1):  # rows in [start_i - warm-up, start_i) also go to chunk i
        tags.append(F.when((ms >= F.lit(s0 - warmup_ms)) & (ms < F.lit(s0)),
                           F.struct(F.lit(i).alias("chunk"), F.lit(False).alias("own"))))
    return (data.withColumn("_t", F.explode(F.array_compact(F.array(*tags))))
            .withColumn("chunk", F.col("_t.chunk").cast("long")).withColumn("own", F.col("_t.own")).drop("_t"))


def run_chunks(data, fn_params: dict, starts: list[int], warmup_minutes: int, n_cells: int):
    """Replay every ``(cell, chunk)`` group in parallel, then make the result exact.

    A chunk other than the first starts from an empty strategy memory ``warmup_minutes`` before its
    first minute. Its captured start state is compared with the end state of the chunk before: equal
    means the warm-up rebuilt exactly the memory a sequential replay carries in (same state, same
    input → same decisions), so its events are the sequential replay's. From the first chunk of a
    cell where they differ (a hit counter still counting across the cut), the rest of that cell is
    replayed again in one task, from the true carried state (a second round). So the events always
    equal one sequential replay's; the parallel speed-up holds when the memory is rebuilt within the
    warm-up (AvgShedder's hit counters reset on every trigger and on every small gap).
    Returns the events DataFrame (``cell`` + :data:`.replay.EVENT_COLUMNS`) and ``{"chunks",
    "rounds", "redone_chunks", "_persisted"}``.
    """
    from pyspark.sql import functions as F

    warmup_ms = int(warmup_minutes) * MINUTE_MS
    tagged = _with_chunks(data, starts, warmup_ms).persist()
    fn = group_udf(**fn_params, chunks={"starts": starts, "initial": {}})
    # one partition per (cell, chunk) group, in order (a hash would put some groups together and
    # leave cores idle): range partitioning on the grouping keys also satisfies the group-by
    groups = n_cells * len(starts)
    out = (tagged.drop("own").repartitionByRange(groups, "cell", "chunk").groupBy("cell", "chunk")
           .applyInPandas(fn, schema=CHUNK_SCHEMA).cache())
    # compared as content (dict order never decides anything; the events' state JSON has sorted keys)
    st = {(r["cell"], r["chunk"], r["kind"]): json.loads(r["state"])
          for r in out.where(F.col("kind") != "event").select("cell", "chunk", "kind", "state").collect()}
    cells = sorted({c for c, _k, _x in st})
    bad: dict[int, int] = {}
    for c in cells:
        prev = None  # the last chunk with rows (an empty chunk carries the state through unchanged)
        for k in range(len(starts)):
            if (c, k, "start") not in st:
                continue
            if prev is not None and st[(c, k, "start")] != st[prev]:
                bad[c] = k
                break
            prev = (c, k, "end")
    first = out.where(F.col("kind") == "event")
    for c, k in bad.items():
        first = first.where(~((F.col("cell") == c) & (F.col("chunk") >= k)))
    events, rounds, persisted = first, 1, [tagged, out]
    if bad:
        rounds = 2
        initial = {f"{c}:{k}": next(st[(c, j, "end")] for j in range(k - 1, -1, -1) if (c, j, "end") in st)
                   for c, k in bad.items()}
        cond = F.lit(False)
        for c, k in bad.items():
            cond = cond | ((F.col("cell") == c) & (F.col("chunk") >= k))
        rest = tagged.where(cond & F.col("own")).drop("own")
        relabel = F.lit(None).cast("long")
        for c, k in bad.items():
            relabel = F.when(F.col("cell") == c, F.lit(k)).otherwise(relabel)
        rest = rest.withColumn("chunk", relabel.cast("long"))
        fn2 = group_udf(**fn_params, chunks={"starts": starts, "initial": initial})
        again = rest.groupBy("cell", "chunk").applyInPandas(fn2, schema=CHUNK_SCHEMA)
        events = events.unionByName(again.where(F.col("kind") == "event"))
    redone = sum(len(starts) - k for k in bad.values())
    return events.drop("chunk", "kind"), {"chunks": len(starts), "rounds": rounds, "redone_chunks": redone,
                                          "_persisted": persisted}


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


def limit_states(events, state_limit: int):
    """Keep ``state`` on the events of the minutes before the ``state_limit``-th event (per cell),
    as one sequential replay does; chunks each computed theirs."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("cell").orderBy(F.col("timestamp").cast("long")).rangeBetween(Window.unboundedPreceding, -1)
    before = F.coalesce(F.count(F.lit(1)).over(w), F.lit(0))
    return events.withColumn("state", F.when(before < int(state_limit), F.col("state")))


def backtest(df, strategy: str, config: LoadBalancerConfig | None = None, *, bundles: str = "auto",
             synthetic_bundles: int = 8, state_limit: int = 2000, bundle_df=None, chunks: int | None = None,
             warmup_minutes: int = DEFAULT_WARMUP_MINUTES, segments: int | None = None, progress=None) -> dict:
    """The whole job: ``{"events", "per_day", "per_pair", "_info"}`` for one strategy and config.

    ``df``: the long dataset or the broker-minute table (with ``bundle_df`` for real bundles).
    By default the history is replayed as one streaming task (:func:`stream`: memory bounded by an
    Arrow batch, whatever the length of the history). ``chunks`` > 1 cuts it in time chunks replayed
    in parallel and checked to equal one sequential replay (:func:`run_chunks`): faster on many
    executors when the strategy's memory is rebuilt within ``warmup_minutes`` (AvgShedder's hit
    counters with real bundles), slower otherwise (every chunk after a mismatch is replayed again).
    ``segments`` > 1 runs the one stream as that many consecutive Spark jobs over consecutive time
    segments, the state carried from one to the next (:func:`run_segments`: same events), reporting
    ``progress(done, total, text)`` between them — what the page shows while a long backtest runs.
    """
    from pyspark.sql import functions as F

    if bundles not in ("auto", "real", "synthetic"):
        raise ValueError(f"bundles must be auto, real or synthetic, got {bundles!r}")
    strategy = backtest_spec(strategy).name  # fails here, in the driver, for a strategy a backtest cannot run
    cfg = config or LoadBalancerConfig()
    data = backtest_input(df, bundles, bundle_df).withColumn("cell", F.lit(0).cast("long"))
    params = dict(strategy=strategy, config=cfg, synthetic_bundles=synthetic_bundles, state_limit=state_limit,
                  bundles=bundles)
    interval = max(1, int(cfg.loadBalancerSheddingIntervalMinutes))
    info = {"chunks": 1, "rounds": 1, "redone_chunks": 0}
    if chunks is not None and int(chunks) > 1:
        lo, hi = data.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            t0, t1 = int(lo.timestamp() * 1000), int(hi.timestamp() * 1000)
            starts = chunk_plan(t0, t1, int(chunks), interval)
            if len(starts) > 1:
                events, info = run_chunks(data, params, starts, warmup_minutes, 1)
                events = limit_states(events, state_limit).cache()
                return {"events": events, **count_events(events), "_info": info}
    if segments is not None and int(segments) > 1:
        lo, hi = data.agg(F.min("timestamp").alias("a"), F.max("timestamp").alias("b")).first()
        if lo is not None:
            t0, t1 = int(lo.timestamp() * 1000), int(hi.timestamp() * 1000)
            starts = chunk_plan(t0, t1, int(segments), interval)
            if len(starts) > 1:
                events, parts = run_segments(data, params, starts, state_limit, progress)
                events = events.cache()
                info = {**info, "segments": len(starts), "_persisted": parts}
                return {"events": events, **count_events(events), "_info": info}
    events = stream(data, params, 1).cache()
    return {"events": events, **count_events(events), "_info": info}
