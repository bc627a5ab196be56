"""Replay a shedding strategy over a history, minute by minute, with the engine's own code.

This is the sequential heart of the backtest and the sweep: pure pandas/numpy + :mod:`engine`,
called inside their Spark pandas UDFs (one cluster history per group), and usable directly on small
data. Each shedding minute builds a :class:`engine.view.LoadView` with
:meth:`~engine.view.LoadView.from_arrays` and calls the real strategy's
``find_bundles_for_unloading`` — the same rules, not a look-alike — carrying its state
(ThresholdShedder history, AvgShedder hit counters) from minute to minute.

The driver around the strategy mirrors ``ModularLoadManager.do_load_shedding`` (§4.3):

* shedding runs on minutes where ``epoch minute % loadBalancerSheddingIntervalMinutes == 0`` and
  only when ``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled``;
* ``onActiveBrokersChange`` is called with each minute's brokers (brokers appear and disappear:
  ThresholdShedder forgets the history of a broker that left, AvgShedder keeps its counters);
* a minute with at most one broker sheds nothing; recently unloaded bundles expire after
  ``loadBalancerSheddingGracePeriodMinutes`` and are skipped by the strategy;
* every selected bundle counts as unloaded at that minute. Placement is **not** replayed (the
  history is observed load, not a simulation): the rare "destination is the current owner" skip
  is not modelled, and the load does not move.

Bundles: with bundle metrics in the history, each minute's bundles are the ones reported (short- and
long-term averages = that minute's values). Without them each broker gets ``synthetic_bundles``
equal bundles (``shedlab-synthetic/<broker>/...``) sharing its traffic: triggers and amounts are
exact, which bundles move is an approximation.

An *event* is one broker (and its partner, for AvgShedder / UniformLoadShedder) that unloaded at
least one bundle in a minute: see :data:`EVENT_COLUMNS`.
"""
from __future__ import annotations

import functools
import json
import re

import numpy as np
import pandas as pd

from engine.config import LoadBalancerConfig
from engine.strategies import make_shedding, shedding_name
from engine.synth import bundle_names
from engine.view import LoadView

from .dataset import BROKER_METRICS, MINUTE_MS

__all__ = ["replay", "EVENT_COLUMNS", "STRATEGIES", "minute_view", "typed_value", "events_frame", "carried_state"]

STRATEGIES = ("AvgShedder", "ThresholdShedder", "UniformLoadShedder")
EVENT_COLUMNS = ["timestamp", "strategy", "broker", "partner", "trigger", "score", "partner_score", "gap",
                 "amount", "moved", "unit", "n_bundles", "bundles", "state"]
MAX_BUNDLE_NAMES = 20
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def typed_value(key: str, value):
    """``value`` converted to the type of config field ``key`` (grid values arrive as floats)."""
    from dataclasses import fields

    f = {x.name: x for x in fields(LoadBalancerConfig)}.get(key)
    if f is None:
        from engine.errors import InputError

        raise InputError(f"unknown load-balancer key {key!r}", field=key)
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    if t == "int":
        return int(round(float(value)))
    if t == "float":
        return float(value)
    if t == "bool":
        return bool(value) if not isinstance(value, str) else value.strip().lower() == "true"
    return value


@functools.lru_cache(maxsize=65536)
def _synthetic_names(broker: str, k: int) -> list[str]:  # cached: the same names every minute
    return bundle_names(f"shedlab-synthetic/{_SAFE.sub('-', broker)}", k)


def minute_view(now_ms: int, bw: pd.DataFrame, kw: pd.DataFrame | None, synthetic_bundles: int) -> LoadView:
    """The LoadView of one minute: ``bw`` = that minute's broker rows (wide), ``kw`` its bundle rows
    (wide, or ``None`` for synthetic bundles)."""
    brokers = bw["broker"].tolist()
    idx = {b: i for i, b in enumerate(brokers)}
    m = {c: bw[c].to_numpy(dtype=np.float64) for c in BROKER_METRICS}
    if kw is not None and len(kw):
        names = kw["bundle"].tolist()
        owner = np.fromiter((idx.get(b, -1) for b in kw["broker"].tolist()), dtype=np.int64, count=len(kw))
        st = np.column_stack([kw["bundle_msg_throughput_in"].to_numpy(), kw["bundle_msg_throughput_out"].to_numpy(),
                              kw["bundle_msg_rate_in"].to_numpy(), kw["bundle_msg_rate_out"].to_numpy()])
        topics = kw["bundle_topics"].to_numpy().astype(np.int64)
    elif kw is not None:
        names, owner, st, topics = [], np.zeros(0, dtype=np.int64), np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    else:
        k = int(synthetic_bundles)
        names = [n for b in brokers for n in _synthetic_names(b, k)]
        owner = np.repeat(np.arange(len(brokers)), k)
        per = np.column_stack([m["msg_throughput_in"], m["msg_throughput_out"], m["msg_rate_in"], m["msg_rate_out"]]) / k
        st = np.repeat(per, k, axis=0)
        topics = np.ones(len(names), dtype=np.int64)
    return LoadView.from_arrays(
        brokers=brokers, bundles=names, owner=owner, cpu=m["cpu"], memory=m["memory"],
        direct_memory=m["direct_memory"], bandwidth_in=m["bandwidth_in"], bandwidth_out=m["bandwidth_out"],
        msg_rate_in=m["msg_rate_in"], msg_rate_out=m["msg_rate_out"], msg_throughput_in=m["msg_throughput_in"],
        msg_throughput_out=m["msg_throughput_out"], st=st, topics=topics, now_ms=now_ms)


def _seed(strategy) -> dict:
    """The part of a strategy's memory that decides the next minute (what the Tuner needs)."""
    if hasattr(strategy, "hit_low"):
        return {"hit_low": dict(strategy.hit_low), "hit_high": dict(strategy.hit_high)}
    if hasattr(strategy, "history"):
        return {"history": dict(strategy.history)}
    return {}


def _events(res, name: str, now_ms: int) -> list[dict]:
    by_broker: dict[str, list] = {}
    for s in res.selected:
        by_broker.setdefault(s.broker, []).append(s)
    out = []
    for broker, sel in by_broker.items():
        ev = {"timestamp": now_ms, "strategy": name, "broker": broker, "partner": None, "trigger": "",
              "score": float(res.scores.get(broker, np.nan)), "partner_score": None, "gap": None, "amount": None,
              "moved": float(sum(s.value for s in sel)), "unit": sel[0].value_unit, "n_bundles": len(sel),
              "bundles": ",".join(s.bundle for s in sel[:MAX_BUNDLE_NAMES]), "state": None}
        if name == "AvgShedder":
            dests = {s.planned_destination for s in sel}
            for p in res.pairs:
                if p.triggered and p.high == broker and p.low in dests:
                    ev.update(partner=p.low, trigger=p.trigger, score=p.high_score, partner_score=p.low_score,
                              gap=p.gap, amount=p.amount)
                    break
        elif name == "ThresholdShedder":
            lower = sel[0].reason.startswith("lower boundary")
            line = res.lines.get("average + threshold")
            ev["trigger"] = "lower boundary" if lower else "threshold"
            ev["gap"] = None if line is None else ev["score"] - float(line)
            for v in res.verdicts:
                if v.broker == broker and v.need is not None:
                    ev["amount"] = float(v.need)
        elif name == "UniformLoadShedder":
            rate_mode = sel[0].value_unit == "msg/s"
            st = res.state or {}
            ev["trigger"] = "msg rate" if rate_mode else "throughput"
            ev["partner"] = st.get("min_rate_broker" if rate_mode else "min_throughput_broker")
            ev["gap"] = st.get("msg_rate_difference_pct" if rate_mode else "throughput_ratio")
            if ev["partner"] is not None:
                ev["partner_score"] = float(res.scores.get(ev["partner"], np.nan))
            for v in res.verdicts:
                if v.broker == broker and v.need is not None:
                    ev["amount"] = float(v.need)
        out.append(ev)
    return out


def replay(broker_wide: pd.DataFrame, bundle_wide: pd.DataFrame | None, strategy: str,
           config: LoadBalancerConfig | None = None, *, synthetic_bundles: int = 8, state_limit: int = 2000,
           progress=None, initial: dict | None = None, emit_from: int | None = None,
           capture: dict | None = None) -> pd.DataFrame:
    """Run ``strategy`` over every shedding minute of a history; returns the events (:data:`EVENT_COLUMNS`).

    ``broker_wide``: one row per ``(timestamp, broker)`` with the broker metrics (:func:`.dataset.wide_brokers`);
    ``bundle_wide``: the bundle rows (:func:`.dataset.wide_bundles`) or ``None``/empty for synthetic
    bundles. ``state`` of an event is the strategy memory and recently-unloaded bundles just *before*
    that minute, as JSON (for the first ``state_limit`` events; ``None`` after, and always ``None``
    with ``state_limit=0``) — enough to open that minute in the Tuner and see the same decision.

    For a history cut in time chunks (:mod:`.backtest` runs chunks in parallel): ``initial``
    (``{"strategy_state": ..., "recently_unloaded": ...}``, what :func:`carried_state` returns)
    starts the strategy from that memory instead of an empty one; events before ``emit_from`` (epoch
    ms) are not returned (a warm-up); ``capture`` (a dict) receives ``"start"``, the carried state
    just before the first shedding minute at or after ``emit_from``, and ``"end"``, the state after
    the last minute.
    """
    cfg = config or LoadBalancerConfig()
    name = shedding_name(strategy)
    if name not in STRATEGIES:
        from engine.errors import UsageError

        raise UsageError(f"backtests support {', '.join(STRATEGIES)}, not {name}")
    strat = make_shedding(name)
    events: list[dict] = []
    recently: dict[str, int] = {}
    if initial:
        _load_seed(strat, initial.get("strategy_state") or {})
        recently.update({str(k): int(v) for k, v in (initial.get("recently_unloaded") or {}).items()})
    if not (cfg.loadBalancerEnabled and cfg.loadBalancerSheddingEnabled) or broker_wide.empty:
        if capture is not None:
            capture["start"] = capture["end"] = carried_state(strat, recently)
        return events_frame(events)
    interval = max(1, int(cfg.loadBalancerSheddingIntervalMinutes))
    grace = int(cfg.loadBalancerSheddingGracePeriodMinutes) * 60_000
    bw = broker_wide.sort_values(["timestamp", "broker"], kind="stable")
    ts = _ms(bw["timestamp"])
    starts = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    ends = np.r_[starts[1:], len(ts)]
    use_bundles = bundle_wide is not None and len(bundle_wide) > 0
    if use_bundles:
        kw_all = bundle_wide.sort_values(["timestamp", "broker", "bundle"], kind="stable")
        kts = _ms(kw_all["timestamp"])
    n_min = len(starts)
    for i, (a, b) in enumerate(zip(starts, ends)):
        now = int(ts[a])
        if progress and i % 500 == 0:
            progress(i, n_min)
        if (now // MINUTE_MS) % interval:
            continue
        if capture is not None and "start" not in capture and (emit_from is None or now >= emit_from):
            capture["start"] = carried_state(strat, recently)
        rows = bw.iloc[a:b]
        if use_bundles:
            lo, hi = np.searchsorted(kts, now, "left"), np.searchsorted(kts, now, "right")
            kw = kw_all.iloc[lo:hi]
        else:
            kw = None
        view = minute_view(now, rows, kw, synthetic_bundles)
        strat.on_active_brokers_change(set(view.brokers))
        if view.nb <= 1:
            continue
        timeout = now - grace
        for x in [x for x, t in recently.items() if t < timeout]:
            del recently[x]
        before = _seed(strat) if len(events) < state_limit and (emit_from is None or now >= emit_from) else None
        recent_before = dict(recently) if before is not None else None
        res = strat.find_bundles_for_unloading(view, cfg, recently)
        if getattr(strat, "plans", None):
            # AvgShedder's placement plans (bundle → planned destination) only serve placement, which a
            # replay does not run; kept, they grow with every unload and the strategy copies them into
            # its result each minute (quadratic: a 31-day replay took over 10 min instead of ~3)
            strat.plans.clear()
        if res.selected and emit_from is not None and now < emit_from:  # warm-up: state only
            for s in res.selected:
                recently[s.bundle] = now
        elif res.selected:
            evs = _events(res, name, now)
            if before is not None:
                state = json.dumps({"strategy": name, "strategy_state": before, "recently_unloaded": recent_before},
                                   sort_keys=True)  # canonical text: a chunked replay gives the same
                for e in evs:
                    e["state"] = state
            events.extend(evs)
            for s in res.selected:
                recently[s.bundle] = now
    if progress:
        progress(n_min, n_min)
    if capture is not None:
        capture.setdefault("start", carried_state(strat, recently))
        capture["end"] = carried_state(strat, recently)
    return events_frame(events)


def carried_state(strategy, recently: dict) -> dict:
    """What one shedding minute hands to the next: the strategy's deciding memory and the recently
    unloaded bundles (copies; JSON-able, compared with ``==`` to check a chunk's warm-up)."""
    return {"strategy_state": _seed(strategy), "recently_unloaded": dict(recently)}


def _load_seed(strategy, seed: dict) -> None:
    if "hit_low" in seed and hasattr(strategy, "hit_low"):
        strategy.hit_low = {str(k): int(v) for k, v in seed["hit_low"].items()}
        strategy.hit_high = {str(k): int(v) for k, v in (seed.get("hit_high") or {}).items()}
    if "history" in seed and hasattr(strategy, "history"):
        strategy.history = {str(k): float(v) for k, v in seed["history"].items()}


def _ms(col: pd.Series) -> np.ndarray:
    if np.issubdtype(col.dtype, np.datetime64):
        return col.to_numpy().astype("datetime64[ms]").astype(np.int64)
    return col.to_numpy(dtype=np.int64)


def events_frame(events: list[dict]) -> pd.DataFrame:
    """Events as a frame with :data:`EVENT_COLUMNS` (``timestamp`` naive UTC datetime)."""
    df = pd.DataFrame(events, columns=EVENT_COLUMNS)
    df["timestamp"] = pd.to_datetime(df["timestamp"].astype("int64"), unit="ms")
    for c in ("score", "partner_score", "gap", "amount", "moved"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    df["n_bundles"] = df["n_bundles"].astype("int64")
    for c in ("strategy", "broker", "partner", "trigger", "unit", "bundles", "state"):
        df[c] = df[c].astype(object)
    return df
