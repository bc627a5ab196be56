"""The backtest driver: a shedding strategy replayed over observed broker minutes, in the engine.

One loop, used by every caller — the History page's pandas path, the Spark job (inside its pandas
UDFs), the sweep and the agreement view: per observed minute it builds the columnar
:class:`engine.view.LoadView`, runs the strategy the registry names and records what it would have
unloaded. It never names a strategy: anything a strategy needs is in its spec and its result.

The driver around the strategy follows ``ModularLoadManagerImpl.doLoadShedding`` (§4.3):

* shedding runs on minutes where ``epoch minute % loadBalancerSheddingIntervalMinutes == 0`` and
  only when ``loadBalancerEnabled`` and ``loadBalancerSheddingEnabled`` (:func:`engine.cadence.shedding_due`);
* each shedding minute tells the strategy which brokers are active (``onActiveBrokersChange``);
* a minute with at most one broker sheds nothing; recently unloaded bundles expire after
  ``loadBalancerSheddingGracePeriodMinutes`` (:func:`engine.cadence.forget_expired`) and are skipped by
  the strategy;
* every selected bundle counts as unloaded at that minute.

Where we depart from Pulsar: placement is **not** replayed (the history is observed load, not a
simulation), so the load does not move and the rare "destination is the current owner" skip is not
modelled; the cadence is the epoch minute (Pulsar's timer starts with the leader).

Bundles: with bundle metrics in the history, each minute's bundles are the ones reported (short- and
long-term averages = that minute's values). Without them each broker gets ``synthetic_bundles``
equal bundles (``shedlab-synthetic/<broker>/...``) sharing its traffic: triggers and amounts are
exact, which bundles move is an approximation.

An *event* is one broker that unloaded at least one bundle in a minute (:data:`EVENT_COLUMNS`); its
partner, trigger, gap and amount come from the result's own explanation (its ``details``, else its
triggered pair or the broker's verdict), never from the strategy's name.

Streaming: :class:`Backtest` takes minutes in time order (:meth:`Backtest.feed` one block of rows at
a time, e.g. one day) and hands events to a sink as they happen, so memory stays bounded by a block.
:class:`BacktestSet` feeds several drivers (a sweep's cells) the same blocks in one pass: each minute
is read once and its view built once for the drivers due that minute.
"""
from __future__ import annotations

import functools
import json
from itertools import pairwise
import re
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from .cadence import forget_expired, grace_timeout, shedding_due
from .config import LoadBalancerConfig
from .errors import UsageError
from .results import column_of
from .view import DEFAULT_LT_SAMPLES, DEFAULT_ST_SAMPLES, LoadView

__all__ = ["Backtest", "BacktestSet", "backtest_frames", "backtest_set_frames", "EVENT_COLUMNS", "BROKER_METRICS", "BUNDLE_COLUMNS", "MINUTE_MS",
           "events_frame", "shedding_strategies", "backtest_spec", "sweep_keys", "DRIVER_KEYS", "typed_value",
           "synthetic_names", "broker_blocks", "BrokerBlock", "BundleBlock"]

MINUTE_MS = 60_000
#: the broker columns of a minute, in this order (the History datasets' names)
BROKER_METRICS = ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out", "msg_rate_in", "msg_rate_out",
                  "msg_throughput_in", "msg_throughput_out")
#: the bundle columns of a minute: short-term throughput in/out, rate in/out, topics
BUNDLE_COLUMNS = ("bundle_msg_throughput_in", "bundle_msg_throughput_out", "bundle_msg_rate_in",
                  "bundle_msg_rate_out", "bundle_topics")
DAY_MS = 86_400_000
EVENT_COLUMNS = ["timestamp", "strategy", "broker", "partner", "trigger", "score", "partner_score", "gap",
                 "amount", "moved", "unit", "n_bundles", "bundles", "state"]
MAX_BUNDLE_NAMES = 20
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_EXPLAINED = ("partner", "trigger", "score", "partner_score", "gap", "amount")


def shedding_strategies() -> list[str]:
    """Short names of the shedding strategies a backtest runs: every registered shedding strategy of the
    modular load manager (plug-ins included), in registration order."""
    from .strategies import registry

    return [s.name for s in registry.specs(role="shedding") if s.runs_in("modular")]


def backtest_spec(strategy: str):
    """The registry spec of a strategy a backtest can run (UsageError naming the ones it can, else)."""
    from .strategies import registry

    spec = registry.spec(strategy)
    if not spec.is_shedding or not spec.runs_in("modular"):
        raise UsageError(f"backtests support the shedding strategies of the modular load manager "
                         f"({', '.join(shedding_strategies())}), not {spec.name}")
    return spec


#: keys the driver itself reads, whatever the strategy (a sweep may vary them too)
DRIVER_KEYS = ("loadBalancerSheddingIntervalMinutes", "loadBalancerSheddingGracePeriodMinutes")


def sweep_keys(spec) -> list[str]:
    """The ``broker.conf`` keys a sweep of ``spec``'s strategy can vary: its default grid's keys first,
    then the other numeric keys it reads, then :data:`DRIVER_KEYS` (never another strategy's keys)."""
    from .config import is_key, key_info

    out = [k for k, _v in spec.sweep_grid]
    out += [k for k in (*spec.config_keys, *DRIVER_KEYS)
            if is_key(k) and key_info(k)["type"] in ("int", "float") and k not in out]
    return out


def typed_value(key: str, value):
    """``value`` converted to the type of config key ``key`` (grid values arrive as floats)."""
    from .config import key_info

    try:
        t = key_info(key)["type"]
    except KeyError:
        from .errors import InputError

        raise InputError(f"unknown load-balancer key {key!r}", field=key) from None
    if t == "int":
        return int(round(float(value)))
    if t == "float":
        return float(value)
    if t == "bool":
        return bool(value) if not isinstance(value, str) else value.strip().lower() == "true"
    return value


@functools.lru_cache(maxsize=65536)
def synthetic_names(broker: str, k: int) -> list[str]:
    """The ``k`` synthetic bundle names of ``broker`` (the same every minute)."""
    from .synth import bundle_names

    return bundle_names(f"shedlab-synthetic/{_SAFE.sub('-', broker)}", k)


# ---------------------------------------------------------------------------------------------- the strategy
def _shedding_only(state):
    """``state.shedding_only()`` when its type has it, else ``state``."""
    only = getattr(state, "shedding_only", None)
    return only() if only is not None else state


class _Runner:
    """One strategy and its memory, driven through the registry's contract: the memory is a
    ``spec.state_type`` value, ``result, new_state = strategy.run(view, conf, recently, state)``.

    The strategy object is the executor (it keeps the working copy of the value it last returned):
    ``onActiveBrokersChange`` runs on it and the value is read back, as the load managers do. After
    each cycle only the memory that decides the next shedding cycle is kept (``state.shedding_only()``,
    when the state type has it): a backtest runs no placement, so what only placement consumes
    (AvgShedder's planned destinations) would grow with every unload. A plug-in object without the
    value interface is driven through ``find_bundles_for_unloading`` and ``state()``/``load_state()``.

    No one else holds the strategy object, so where its ``run`` is the interface's own (the working copy
    restored from the value, ``find_bundles_for_unloading``, the value read back), the working copy stays
    the memory from one cycle to the next and the value is built only when asked for (:meth:`memory`):
    the same cycles, without a copy of every counter each minute (AvgShedder's value is a tuple per
    broker, thirty of them a minute in a 5 × 6 sweep)."""

    def __init__(self, spec, initial: dict | None):
        from .shedding.base import SheddingStrategy

        self.spec = spec
        self.strategy = spec.factory()
        if getattr(self.strategy, "keep_plans", None) is True:
            self.strategy.keep_plans = False  # placement plans: never read here, dropped after each cycle
        self.valued = callable(getattr(self.strategy, "run", None)) and callable(
            getattr(self.strategy, "state_value", None))
        self.lazy = self.valued and getattr(type(self.strategy), "run", None) is SheddingStrategy.run
        if self.valued:
            self.state = spec.state_type.from_json(initial) if initial else spec.state_type()
            self.strategy.restore(self.state)
        elif initial:
            self.strategy.load_state(initial)

    def active(self, brokers) -> None:
        s = self.strategy
        if self.valued and not self.lazy:
            if s.state_value() is not self.state:
                s.restore(self.state)
            s.on_active_brokers_change(brokers)
            self.state = s.state_value()
        else:
            s.on_active_brokers_change(brokers)  # (lazy: on the working copy, which is the memory)

    def run(self, view: LoadView, conf, recently):
        if not self.valued or self.lazy:
            return self.strategy.find_bundles_for_unloading(view, conf, recently)
        res, state = self.strategy.run(view, conf, recently, self.state)
        self.state = _shedding_only(state)
        return res

    def value(self):
        """The memory as a ``state_type`` value (what decides the next cycle)."""
        return _shedding_only(self.strategy.state_value()) if self.lazy else self.state

    def memory(self) -> dict:
        """The memory that decides the next cycle, as JSON (what an event carries to the Tuner)."""
        if self.valued:
            return self.value().to_json()
        return self.strategy.state()


# ---------------------------------------------------------------------------------------------- events
def _event_fields(res, broker: str, sel: list) -> dict:
    """Partner, trigger, scores, gap and amount of one broker's unload, from the result's own explanation."""
    out = {"partner": None, "trigger": "", "score": None, "partner_score": None, "gap": None, "amount": None}
    details = getattr(res, "details", None)
    explain = getattr(details, "event_fields", None)
    if explain is not None:
        got = explain(broker, sel) or {}
        out.update({k: v for k, v in got.items() if k in _EXPLAINED})
        if "score" not in got:  # (the scores map is built only when the explanation lacks the score)
            out["score"] = float(res.scores.get(broker, np.nan))
        if out["partner"] is not None and "partner_score" not in got:  # the partner's score in this cycle
            out["partner_score"] = float(res.scores.get(out["partner"], np.nan))
        return out
    out["score"] = float(res.scores.get(broker, np.nan))
    dests = {s.planned_destination for s in sel}
    for p in res.pairs:
        if p.triggered and p.high == broker and p.low in dests:
            out.update(partner=p.low, trigger=p.trigger, score=p.high_score, partner_score=p.low_score, gap=p.gap,
                       amount=p.amount)
            return out
    for v in res.verdicts:
        if v.broker == broker and v.need is not None:
            out["amount"] = float(v.need)
            out["trigger"] = v.line_name
            if v.line is not None:
                out["gap"] = out["score"] - float(v.line)
    if len(dests) == 1 and None not in dests:
        out["partner"] = next(iter(dests))
        out["partner_score"] = float(res.scores.get(out["partner"], np.nan))
    return out


def _events(res, name: str, now_ms: int) -> list[dict]:
    by_broker: dict[str, list] = {}
    for s in res.selected:
        by_broker.setdefault(s.broker, []).append(s)
    out = []
    for broker, sel in by_broker.items():
        ev = {"timestamp": now_ms, "strategy": name, "broker": broker, **_event_fields(res, broker, sel),
              "moved": float(sum(s.value for s in sel)), "unit": sel[0].value_unit, "n_bundles": len(sel),
              "bundles": ",".join(s.bundle for s in sel[:MAX_BUNDLE_NAMES]), "state": None}
        out.append(ev)
    return out


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


# ---------------------------------------------------------------------------------------------- minutes
@dataclass
class _BrokerSet:
    """What depends only on one minute's broker list (reused while it stays the same)."""

    brokers: list  # in Java ConcurrentHashMap order
    order: np.ndarray  # sorted position -> Java position
    inv: np.ndarray
    names: list | None = None  # synthetic bundle names (one list object: the view caches by identity)
    owner: np.ndarray | None = None
    topics: np.ndarray | None = None
    fixed: dict | None = None  # what every view over the synthetic bundles shares (read-only arrays)
    first: LoadView | None = None  # the first view over the synthetic bundles (LoadView.at_minute: the later ones)


class Backtest:
    """The driver: feed broker minutes in time order, get the events.

    ``strategy``: a shedding strategy's short or fully qualified name (the registry resolves it).
    ``state_limit``: events of the first ``state_limit`` events carry ``state`` — the strategy memory and
    the recently unloaded bundles just *before* that minute, as canonical JSON (enough to open that
    minute in the Tuner and see the same decision); ``0`` never.

    For a history cut in time chunks: ``initial`` (``{"strategy_state": ..., "recently_unloaded": ...}``,
    what :meth:`carried` returns) starts from that memory; events before ``emit_from`` (epoch ms) are
    not recorded (a warm-up); :attr:`start_state` is the carried state just before the first shedding
    minute at or after ``emit_from``.

    ``sink(events)`` receives the events of each shedding minute as they happen (default: kept in
    :attr:`events`), so a long history streams.

    ``tally``: count instead of recording — no event is built; :attr:`tally` holds, per UTC day number
    (epoch ms // 86,400,000) with events, ``[events, bundles, minutes]``: the events (brokers that unload),
    the bundles they select and the minutes with at least one, the counts a sweep reads
    (:meth:`take_tally`).
    """

    def __init__(self, strategy: str, config: LoadBalancerConfig | None = None, *, synthetic_bundles: int = 8,
                 state_limit: int = 2000, initial: dict | None = None, emit_from: int | None = None,
                 sink: Callable[[list], None] | None = None, tally: bool = False):
        self.spec = backtest_spec(strategy)
        self.name = self.spec.name
        self.cfg = config or LoadBalancerConfig()
        self.k = int(synthetic_bundles)
        self.state_limit = int(state_limit)
        self.emit_from = emit_from
        self.events: list[dict] = []
        self.n_events = 0
        self._sink = sink if sink is not None else self.events.extend
        self._runner = _Runner(self.spec, (initial or {}).get("strategy_state") or None)
        self.recently: dict[str, int] = {str(k): int(v) for k, v in ((initial or {}).get("recently_unloaded")
                                                                     or {}).items()}
        self._in_order = _rising(self.recently.values())  # (see _forget)
        self.enabled = bool(self.cfg.loadBalancerEnabled and self.cfg.loadBalancerSheddingEnabled)
        self.interval = max(1, int(self.cfg.loadBalancerSheddingIntervalMinutes))
        self.grace_min = int(self.cfg.loadBalancerSheddingGracePeriodMinutes)
        self.start_state: dict | None = None
        self.minutes = 0
        self.tally: dict[int, list] | None = {} if tally else None
        self._sets: dict[str, _BrokerSet] = {}
        self._last_bundles: list | None = None

    # ------------------------------------------------------------------ state
    def carried(self) -> dict:
        """What one shedding minute hands to the next: the strategy's deciding memory and the recently
        unloaded bundles (copies; JSON-able, compared with ``==`` to check a chunk's warm-up)."""
        return {"strategy_state": self._runner.memory(), "recently_unloaded": dict(self.recently)}

    # ------------------------------------------------------------------ input
    def due(self, now_ms: int) -> bool:
        """Whether the shedding check runs at ``now_ms`` (the cadence of ``doLoadShedding``)."""
        # no leader start in a history: the epoch minute is the timer's phase (engine.cadence)
        return self.enabled and shedding_due(now_ms, None, self.interval)

    def _broker_set(self, names: list) -> _BrokerSet:
        key = "\0".join(names)
        got = self._sets.get(key)
        if got is None:
            from .javacompat import java_map_rank

            order = np.argsort(java_map_rank(names, concurrent=True))
            inv = np.empty(len(names), dtype=np.int64)
            inv[order] = np.arange(len(names))
            got = _BrokerSet([names[i] for i in order], order, inv)
            if len(self._sets) > 4096:
                self._sets.clear()
            self._sets[key] = got
        return got

    def _synthetic(self, bs: _BrokerSet, sorted_names: list) -> None:
        if bs.names is None:
            k = self.k
            bs.names = [n for b in sorted_names for n in synthetic_names(b, k)]
            bs.owner = bs.inv[np.repeat(np.arange(len(sorted_names)), k)]
            bs.topics = np.ones(len(bs.names), dtype=np.int64)
            nk = len(bs.names)
            # the views' per-bundle sample counts and per-broker topic counts, the same every minute (as
            # LoadView.from_arrays fills them by default, each bundle one topic)
            bs.fixed = {"st_samples": np.full(nk, DEFAULT_ST_SAMPLES, dtype=np.int64),
                        "lt_samples": np.full(nk, DEFAULT_LT_SAMPLES, dtype=np.int64),
                        "num_topics": np.bincount(bs.owner, weights=bs.topics, minlength=len(sorted_names))
                        .astype(np.int64)}
            for a in (bs.owner, bs.topics, *bs.fixed.values()):
                a.flags.writeable = False  # shared by the views

    def view(self, now_ms: int, brokers: list, metrics: np.ndarray, bundles=None) -> LoadView:
        """The LoadView of one minute. ``brokers`` sorted by name, ``metrics`` (nb, 9) in
        :data:`BROKER_METRICS` order; ``bundles`` ``(names, owner index into brokers, st (nk, 4), topics)``
        for reported bundles, ``None`` for synthetic ones."""
        bs = self._broker_set(brokers)
        if bundles is None:
            self._synthetic(bs, brokers)
            per = metrics[:, [7, 8, 5, 6]] / self.k  # throughput in/out, rate in/out per bundle
            st = np.repeat(per, self.k, axis=0)
            if bs.first is not None:  # a later minute of this broker list: its first view with this minute's load
                m = metrics.T[:, bs.order]  # (one row per metric)
                return bs.first.at_minute(
                    now_ms=now_ms, cpu=m[0], memory=m[1], direct_memory=m[2], bandwidth_in=m[3], bandwidth_out=m[4],
                    msg_rate_in=m[5], msg_rate_out=m[6], msg_throughput_in=m[7], msg_throughput_out=m[8], st=st, lt=st)
            names, owner, topics = bs.names, bs.owner, bs.topics
            # the long-term values are the short-term ones (one array: a view is read, never written)
            fixed = {"lt": st, **bs.fixed}
            again = True
        else:
            names, owner, st, topics = bundles
            names = list(names)
            again = names == self._last_bundles
            if again:
                names = self._last_bundles  # the same list object: the view's name facts are reused
            self._last_bundles = names
            owner = np.asarray(owner, dtype=np.int64)
            owner = np.where(owner >= 0, bs.inv[np.where(owner >= 0, owner, 0)], -1)
            fixed = {}
        m = metrics[bs.order]
        view = LoadView.from_arrays(
            brokers=bs.brokers, bundles=names, owner=owner, cpu=m[:, 0], memory=m[:, 1], direct_memory=m[:, 2],
            bandwidth_in=m[:, 3], bandwidth_out=m[:, 4], msg_rate_in=m[:, 5], msg_rate_out=m[:, 6],
            msg_throughput_in=m[:, 7], msg_throughput_out=m[:, 8], st=st, topics=topics, now_ms=now_ms,
            java_order=False, **fixed)
        if view.bundles is not names and view.bundles == names:
            # the same names as this list object, kept minute after minute: the view's facts derived from the
            # names alone (Java hashes, namespaces) are cached by the list's identity, and from_arrays copies it
            # (re-hashing every name every minute was ~40 % of a 250-broker minute)
            view.bundles = names
        if again and view.bundles is names and view.known_shed_rank() is None:
            # names that minute after minute share: every name hashed once (~6 ms for 8,000), so that each
            # later minute sorts its bundles with their HashMap rank known (sort_desc_runs: ties at once)
            view.shed_rank  # noqa: B018
        if bundles is None:
            # a broker's synthetic bundles split its load evenly: sorted by load they all tie, so each
            # broker's bundles come in HashMap order, the same order every minute (names, owners and
            # bundleData never change for this broker list)
            view.even_shares = True
            view.owned_in_shed_order  # noqa: B018 (the later minutes' views share these)
            view.first_in_shed_order  # noqa: B018
            bs.first = view
        return view

    # ------------------------------------------------------------------ the loop
    def view_key(self, synthetic: bool) -> tuple:
        """What this driver's view of a minute depends on besides the minute's rows: two drivers with
        the same key build equal views from the same rows (:class:`BacktestSet` shares one)."""
        return ("synthetic", self.k) if synthetic else ("reported",)

    def step(self, now_ms: int, brokers: list, metrics: np.ndarray, bundles=None, *,
             view: LoadView | None = None) -> None:
        """One observed minute (call only for due minutes, see :meth:`due`; others are skipped anyway).

        ``view``: this minute's LoadView when already built from the same rows by a driver with the same
        :meth:`view_key` (a view is never changed once built: strategies only read it)."""
        self.minutes += 1
        if not self.due(now_ms):
            return
        warm = self.emit_from is not None and now_ms < self.emit_from
        if self.start_state is None and not warm:
            self.start_state = self.carried()
        if view is None:
            view = self.view(now_ms, brokers, metrics, bundles)
        self._runner.active(view.broker_set)
        if view.nb <= 1:
            return
        self._forget(now_ms)
        before = None
        if self.n_events < self.state_limit and not warm:
            before = self.carried()
        res = self._runner.run(view, self.cfg, self.recently)
        if not res.selected:
            return
        if not warm and self.tally is not None:
            n = len(set(column_of(res.selected, "broker")))  # one event per broker that unloads
            t = self.tally.get(now_ms // DAY_MS)
            if t is None:
                t = self.tally[now_ms // DAY_MS] = [0, 0, 0]
            t[0] += n
            t[1] += len(res.selected)
            t[2] += 1
            self.n_events += n
        elif not warm:
            evs = _events(res, self.name, now_ms)
            if before is not None:
                state = json.dumps({"strategy": self.name, **before}, sort_keys=True)  # canonical text
                for e in evs:
                    e["state"] = state
            self.n_events += len(evs)
            self._sink(evs)
        self._unloaded(list(column_of(res.selected, "bundle")), now_ms)

    def take_tally(self) -> list[tuple[int, int, int, int]]:
        """The counts since the last call, ``(day number, events, bundles, minutes)`` per day, and start
        again from zero (a stream hands them over batch after batch)."""
        got = sorted((d, *t) for d, t in (self.tally or {}).items())
        if self.tally:
            self.tally = {}
        return got

    def _forget(self, now_ms: int) -> None:
        """:func:`~engine.cadence.forget_expired` on the recently unloaded bundles, in place (the map belongs
        to this backtest). While its times rise in its order (each bundle added once, minute after minute:
        ``_in_order``), the expired ones are its first entries, removed from the front; otherwise it is
        filtered as a whole. Either way the same entries in the same order as ``forget_expired``."""
        recently = self.recently
        if not recently:
            return
        if not self._in_order:
            self.recently = forget_expired(recently, now_ms, self.grace_min)
            self._in_order = _rising(self.recently.values())
            return
        timeout = grace_timeout(now_ms, self.grace_min)
        gone = []
        for b, t in recently.items():
            if t >= timeout:
                break
            gone.append(b)
        for b in gone:
            del recently[b]

    def _unloaded(self, bundles, now_ms: int) -> None:
        """Remember ``bundles`` as unloaded at ``now_ms`` (and whether the map's times still rise in order)."""
        recently = self.recently
        if self._in_order and (recently and next(reversed(recently.values())) > now_ms
                               or not recently.keys().isdisjoint(bundles)):
            self._in_order = False  # (an earlier minute, or a bundle unloaded again: it keeps its place)
        for b in bundles:
            recently[b] = now_ms

    def feed(self, block: "BrokerBlock", bundle_block: "BundleBlock | None" = None, progress=None) -> None:
        """Every minute of one block of broker rows (and its bundle rows, or ``None`` for synthetic bundles)."""
        n = len(block.starts)
        for i in range(n):
            a, b = block.starts[i], block.ends[i]
            now = int(block.ts[a])
            if progress is not None and i % 500 == 0:
                progress(i, n)
            if not self.due(now):
                self.minutes += 1
                continue
            codes = block.codes[a:b]
            names = block.names_of(codes)
            bundles = bundle_block.minute(now, block, codes) if bundle_block is not None else None
            self.step(now, names, block.rows(a, b), bundles)
        if progress is not None:
            progress(n, n)

    def finish(self) -> pd.DataFrame:
        if self.start_state is None:
            self.start_state = self.carried()
        return events_frame(self.events)


class BacktestSet:
    """Several :class:`Backtest` drivers (e.g. the cells of a sweep) fed the same broker minutes in one pass.

    Each minute is read once (its broker names, metrics and reported bundles), and its LoadView is built
    once and shared by every member due that minute whose view has the same inputs
    (:meth:`Backtest.view_key`: the number of synthetic bundles; the cadence and the grace period only
    decide *whether* a member runs and what it skips, never the view). Everything that differs per member
    stays per member: its config, strategy object and memory, recently unloaded bundles, cadence, warm-up
    and events. A view is shared safely because nothing writes to it after it is built: the strategies read
    it, and what the view memoises (weighted usage per weight tuple, namespace counts, value keys, name
    facts) depends on the view's own arrays and the arguments it is asked with, never on who asks. So each
    member's events equal those of the same :class:`Backtest` fed alone (tested).
    """

    def __init__(self, members: Iterable[Backtest]):
        self.members = list(members)
        self._builders: dict[tuple, Backtest] = {}  # one builder per view key: its name lists stay the same objects
        self.views_built = 0

    def _builder(self, bt: Backtest, key: tuple) -> Backtest:
        got = self._builders.get(key)
        if got is None:
            got = self._builders[key] = bt
        return got

    def feed(self, block: "BrokerBlock", bundle_block: "BundleBlock | None" = None, progress=None) -> None:
        """Every minute of one block for every member (see :meth:`Backtest.feed`; disabled members are
        not fed, as :func:`backtest_frames` does not feed them)."""
        live = [bt for bt in self.members if bt.enabled]
        n = len(block.starts)
        synthetic = bundle_block is None
        keys = [bt.view_key(synthetic) for bt in live]
        for i in range(n):
            a, b = block.starts[i], block.ends[i]
            now = int(block.ts[a])
            if progress is not None and i % 500 == 0:
                progress(i, n)
            due = []
            for j, bt in enumerate(live):
                if bt.due(now):
                    due.append(j)
                else:
                    bt.minutes += 1
            if not due:
                continue
            codes = block.codes[a:b]
            names = block.names_of(codes)
            bundles = bundle_block.minute(now, block, codes) if bundle_block is not None else None
            metrics = block.rows(a, b)
            views: dict[tuple, LoadView] = {}
            for j in due:
                bt, key = live[j], keys[j]
                view = views.get(key)
                if view is None:
                    view = views[key] = self._builder(bt, key).view(now, names, metrics, bundles)
                    self.views_built += 1
                bt.step(now, names, metrics, bundles, view=view)
        if progress is not None:
            progress(n, n)

    def finish(self) -> list[pd.DataFrame]:
        """Each member's events (:meth:`Backtest.finish`), in member order."""
        return [bt.finish() for bt in self.members]


# ---------------------------------------------------------------------------------------------- frames in
def _rising(values) -> bool:
    """Whether ``values`` never decrease."""
    return all(a <= b for a, b in pairwise(values))


def _ms(col: pd.Series) -> np.ndarray:
    if isinstance(col.dtype, pd.DatetimeTZDtype):
        col = col.dt.tz_convert("UTC").dt.tz_localize(None)
    if np.issubdtype(col.dtype, np.datetime64):
        return col.to_numpy().astype("datetime64[ms]").astype(np.int64)
    return col.to_numpy(dtype=np.int64)


def _broker_codes(col: pd.Series) -> tuple[np.ndarray, list]:
    """``pd.factorize(col.astype(str), sort=True)`` of a broker column: each row's index into the sorted
    names present. A categorical column of string categories without missing values is read from its codes
    (a few thousand names instead of a million rows hashed); any other goes through ``factorize``."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        raw = col.cat.codes.to_numpy()
        cats = col.cat.categories
        if (len(raw) == 0 or raw.min() >= 0) and all(type(c) is str for c in cats):
            used = np.flatnonzero(np.bincount(raw, minlength=len(cats)))
            names = sorted(cats[used].tolist())
            remap = np.zeros(len(cats), dtype=np.int64)
            remap[cats.get_indexer(names)] = np.arange(len(names))
            return remap[raw], names
        col = col.astype(object)
    codes, uniq = pd.factorize(col.astype(str), sort=True)
    return codes, list(uniq)


class BrokerBlock:
    """Broker rows as arrays, sorted by ``(timestamp, broker)``: ``ts`` (epoch ms), ``codes`` (index into
    ``names``, which is sorted), ``columns`` (one float64 array per metric: a minute's rows by :meth:`rows`), and
    the row range of each minute."""

    def __init__(self, frame: pd.DataFrame):
        codes, uniq = _broker_codes(frame["broker"])
        self._fill(_ms(frame["timestamp"]), codes, list(uniq),
                   [frame[c].to_numpy(dtype=np.float64) for c in BROKER_METRICS])

    @classmethod
    def of_arrays(cls, ts: np.ndarray, codes: np.ndarray, names: list, metrics: list) -> "BrokerBlock":
        """The block of rows given as arrays (what ``BrokerBlock(frame)`` makes of the same rows): ``ts``
        epoch ms, ``codes`` each row's index into ``names`` (sorted, every one used), ``metrics`` one
        float64 array per :data:`BROKER_METRICS` column."""
        block = cls.__new__(cls)
        block._fill(np.asarray(ts, dtype=np.int64), np.asarray(codes), list(names), metrics)
        return block

    def _fill(self, ts: np.ndarray, codes: np.ndarray, names: list, metrics: list) -> None:
        # rows already in (timestamp, broker) order, as a day file is written, are kept as they are (the
        # order a stable sort gives them)
        dt, dc = np.diff(ts), np.diff(codes)
        if ((dt > 0) | ((dt == 0) & (dc >= 0))).all():
            self.ts, self.codes = ts, codes.astype(np.int64, copy=False)
            cols = metrics
        else:
            order = np.lexsort((codes, ts))
            self.ts = ts[order]
            self.codes = codes[order].astype(np.int64)
            cols = [c[order] for c in metrics]
        self.names = names
        # one array per metric, as read: a minute's rows are gathered when fed (rows); one (rows, metrics)
        # copy of a 1,000-broker day is ~100 MB of fresh memory, page faults and all, every day of every task
        self.columns = [np.asarray(c, dtype=np.float64) for c in cols] if len(ts) else \
            [np.zeros(0) for _ in BROKER_METRICS]
        if len(self.ts):
            self.starts = np.flatnonzero(np.r_[True, self.ts[1:] != self.ts[:-1]])
            self.ends = np.r_[self.starts[1:], len(self.ts)]
        else:
            self.starts = self.ends = np.zeros(0, dtype=np.int64)
        self._lists: dict[bytes, list] = {}

    def rows(self, a: int, b: int) -> np.ndarray:
        """The metrics of rows ``[a, b)`` (a minute), ``(b - a, 9)`` in :data:`BROKER_METRICS` order."""
        return np.stack([c[a:b] for c in self.columns], axis=1)

    @property
    def metrics(self) -> np.ndarray:
        """Every row's metrics, ``(rows, 9)`` (a new array each time: the feeds read :meth:`rows`)."""
        return np.stack(self.columns, axis=1)

    def names_of(self, codes: np.ndarray) -> list:
        key = codes.tobytes()
        got = self._lists.get(key)
        if got is None:
            got = [self.names[c] for c in codes.tolist()]
            if len(self._lists) > 4096:
                self._lists.clear()
            self._lists[key] = got
        return got


class BundleBlock:
    """Bundle rows (``timestamp``, ``broker``, ``bundle`` and :data:`BUNDLE_COLUMNS`) as arrays sorted by
    ``(timestamp, broker, bundle)``."""

    def __init__(self, frame: pd.DataFrame):
        f = frame.sort_values(["timestamp", "broker", "bundle"], kind="stable")
        self.ts = _ms(f["timestamp"])
        self.broker = f["broker"].astype(str).to_numpy(dtype=object)
        self.bundle = f["bundle"].astype(str).to_numpy(dtype=object)
        self.st = np.column_stack([f[c].to_numpy(dtype=np.float64) for c in BUNDLE_COLUMNS[:4]]) \
            if len(f) else np.zeros((0, 4))
        self.topics = f["bundle_topics"].to_numpy().astype(np.int64) if len(f) else np.zeros(0, dtype=np.int64)

    def minute(self, now: int, block: BrokerBlock, codes: np.ndarray):
        lo, hi = np.searchsorted(self.ts, now, "left"), np.searchsorted(self.ts, now, "right")
        names = block.names_of(codes)
        idx = {b: i for i, b in enumerate(names)}
        owner = np.fromiter((idx.get(b, -1) for b in self.broker[lo:hi].tolist()), dtype=np.int64, count=hi - lo)
        return self.bundle[lo:hi].tolist(), owner, self.st[lo:hi], self.topics[lo:hi]


def broker_blocks(frames: Iterable[pd.DataFrame]) -> Iterable[BrokerBlock]:
    """Blocks of broker rows (e.g. one per day) as :class:`BrokerBlock`; blocks must follow in time."""
    for f in frames:
        if len(f):
            yield BrokerBlock(f)


def backtest_frames(broker_wide: pd.DataFrame | Iterable[pd.DataFrame], bundle_wide: pd.DataFrame | None,
                    strategy: str, config: LoadBalancerConfig | None = None, *, synthetic_bundles: int = 8,
                    state_limit: int = 2000, progress=None, initial: dict | None = None,
                    emit_from: int | None = None, capture: dict | None = None, sink=None) -> pd.DataFrame:
    """Run ``strategy`` over every shedding minute of a history; returns the events (:data:`EVENT_COLUMNS`).

    ``broker_wide``: one row per ``(timestamp, broker)`` with :data:`BROKER_METRICS` (or an iterable of
    such frames in time order, e.g. one per day: only one is held at a time); ``bundle_wide``: the
    bundle rows (``timestamp``, ``broker``, ``bundle``, :data:`BUNDLE_COLUMNS`), an empty frame (brokers
    own no bundles) or ``None`` (synthetic bundles). ``capture`` (a dict) receives ``"start"`` and
    ``"end"``, the carried states (see :class:`Backtest`). With ``sink`` the events go there and the
    returned frame is empty.
    """
    bt = Backtest(strategy, config, synthetic_bundles=synthetic_bundles, state_limit=state_limit, initial=initial,
                  emit_from=emit_from, sink=sink)
    frames = [broker_wide] if isinstance(broker_wide, pd.DataFrame) else broker_wide
    kb = BundleBlock(bundle_wide) if bundle_wide is not None else None
    if bt.enabled:
        for block in broker_blocks(frames):
            bt.feed(block, kb, progress)
    out = bt.finish()
    if capture is not None:
        capture["start"] = bt.start_state
        capture["end"] = bt.carried()
    return out


def backtest_set_frames(broker_wide: pd.DataFrame | Iterable[pd.DataFrame], bundle_wide: pd.DataFrame | None,
                        strategy: str, configs: Iterable[LoadBalancerConfig], *, synthetic_bundles: int = 8,
                        state_limit: int = 0, progress=None) -> list[pd.DataFrame]:
    """:func:`backtest_frames` for several configs of one strategy in one pass over the history (a
    :class:`BacktestSet`: each minute read and its view built once): the events of each config, in order,
    equal to one :func:`backtest_frames` per config."""
    bts = BacktestSet(Backtest(strategy, c, synthetic_bundles=synthetic_bundles, state_limit=state_limit)
                      for c in configs)
    frames = [broker_wide] if isinstance(broker_wide, pd.DataFrame) else broker_wide
    kb = BundleBlock(bundle_wide) if bundle_wide is not None else None
    if any(bt.enabled for bt in bts.members):
        for block in broker_blocks(frames):
            bts.feed(block, kb, progress)
    return bts.finish()
