"""AvgShedder (PIP-364): pair hot and cool brokers, count consecutive hits, move load within pairs.

One instance plays both roles, as in Pulsar: shedding plans each bundle's destination (the cool
broker of its pair) and placement returns that plan.

Notes
-----
Pulsar file ``impl/AvgShedder.java`` (``pulsar-load-balancing.md`` §5.4, §5.5). Config keys:
``loadBalancerAvgShedderLowThreshold`` (15), ``loadBalancerAvgShedderHighThreshold`` (40),
``loadBalancerAvgShedderHitCountLowThreshold`` (8), ``loadBalancerAvgShedderHitCountHighThreshold``
(2), ``maxUnloadPercentage`` (0.2; 0.5 recommended and in 5.0), ``minUnloadMessage`` (1000),
``minUnloadMessageThroughput`` (1 MiB) and the four resource weights.

* Score = 100 × weighted max usage, **no** history. Brokers sorted ascending (stable; ties in
  ``HashMap`` order) with a double comparison from 4.0.8 / 4.1.2 / 4.2 / 5.0; earlier releases sort with
  ``(int)(a - b)`` — scores less than 1 apart compare equal, the order follows Java's TimSort over the
  ``HashMap`` order, and from 32 brokers the sort can throw, failing the cycle (the release's
  ``avg_shedder_double_comparator`` behaviour). Paired first with last, second with second to last, ...
* Hit counters are **per broker**: a pair with gap >= low adds a low hit to both brokers (and a
  high hit when gap >= high, else resets their high counters); a pair below low resets both
  brokers; no pair at all clears every counter. A pair sheds when either broker reached
  ``HitCountHigh`` high hits or ``HitCountLow`` low hits; its counters are then reset.
* Amount: ``(rate(hot) − rate(cool)) × maxUnloadPercentage`` if above ``minUnloadMessage``, else the
  same in throughput if above ``minUnloadMessageThroughput``; bundles of the hot broker largest first,
  each taken when ``0 < traffic <= remaining`` (greedy fit). The sole bundle may be unloaded.
* Plans are kept in a map keyed by the bundle's BundleData **value** (Lombok equals/hash), never
  pruned: a bundle whose data changed loses its plan, identical-stats bundles share one.
* Placement without a plan hashes a random int (CRC-32 of its decimal string) onto the candidates
  sorted by name — effectively a uniform draw — and remembers the choice (sticky).

Result codes (Pulsar's modular shedders have none; ours, in ``UnloadDecision``'s vocabulary):
Success/Overloaded (a pair's hot broker moves load); Skip/HitCount (a pair's gap is wide enough but
its hit counters hold the move back — ``HitCount`` is ours here, see :mod:`engine.results`);
Skip/Balanced (no pair's gap reaches the low threshold, or the amount is below the minimum);
Skip/NoBundles (no bundle of the hot broker fits the amount). ``details`` is an
:class:`AvgShedderDetails`; the state an :class:`AvgShedderState`.

Examples
--------
A 3-broker snapshot: b1 at 80 %, b3 at 10 %; the pair (b3, b1) has a gap of 70 points, so it
counts a high hit; with ``HitCountHighThreshold`` 2 the second cycle moves load:

>>> from engine.config import LoadBalancerConfig
>>> from engine.synth import make_snapshot
>>> from engine.view import LoadView
>>> def broker(cpu, rate):
...     return dict(cpu=cpu, bundles={f"t/ns/{cpu}-{k}": dict(rate=rate, throughput=rate * 1000) for k in range(8)})
>>> view = LoadView.from_load_data(make_snapshot({"b1:8080": broker(80, 1000), "b2:8080": broker(45, 500),
...                                               "b3:8080": broker(10, 50)}))
>>> res, state = AvgShedder().run(view, LoadBalancerConfig(), {}, AvgShedderState())
>>> print(res.label, res.reason_code, dict(state.hit_high))
Skip HitCount {'b3:8080': 1, 'b1:8080': 1}
>>> res, state = AvgShedder().run(view, LoadBalancerConfig(), {}, state)
>>> print(res.label, res.reason_code, res.reason, [(s.broker, s.bundle, s.planned_destination) for s in res.selected])
Success Overloaded 1 bundle(s) from 1 broker(s) [('b1:8080', 't/ns/80-6', 'b3:8080')]
"""
from __future__ import annotations

from itertools import repeat
from zlib import crc32
from dataclasses import dataclass, field

import numpy as np

from ..javasort import ContractViolation, java_int_cast, java_sort
from ..placement.base import PlacementStrategy, as_index, new_decision
from ..results import (BALANCED, FAILURE, HIT_COUNT, NO_BUNDLES, UNKNOWN, AvgPair, BrokerVerdict, Details, LazyText,
                       LeanDecision, SelectionRows, SheddingResult, VerdictRows, fmt_bytes, fmt_rate, lazy_reason)
from ..strategies.spec import MODULAR, StrategySpec
from ..strategies.state import StateValue, pairs, pairs_from_json, pairs_json
from .avg_bundles import _fill, _largest_first, _prefill_largest
from .base import SheddingStrategy, finish_result

__all__ = ["SPEC", "AvgShedderDetails", "AvgShedderState", "AvgShedder", "PlannedDecision", "DrawnDecision"]


@dataclass(frozen=True)
class AvgShedderState(StateValue):
    """AvgShedder's memory: the per-broker hit counters and the plans.

    ``hit_low`` / ``hit_high``: ``(broker, count)`` pairs. ``plans``: ``(value key, destination, bundle,
    origin)`` in the map's insertion order, where the value key is the bundle's ``BundleData`` value
    (:meth:`engine.model.BundleData.value_key`, the map's key in Pulsar) and origin is ``"shedding"``
    or ``"placement"``. ``to_json()`` keeps the keys ``hit_low``, ``hit_high`` and ``plans`` (a list of
    ``[value key, destination, bundle, origin]``); ``from_json`` also takes the display form of
    :meth:`AvgShedder.state` (plans as bundle → destination), whose plans cannot be keyed and are
    left out.
    """

    hit_low: tuple = ()
    hit_high: tuple = ()
    plans: tuple = ()

    def to_json(self) -> dict:
        return {"hit_low": pairs_json(self.hit_low), "hit_high": pairs_json(self.hit_high),
                "plans": [[list(k), dest, bundle, kind] for k, dest, bundle, kind in self.plans]}

    @classmethod
    def from_json(cls, data) -> "AvgShedderState":
        data = data or {}
        plans = data.get("plans")
        plans = tuple((tuple(k), str(dest), str(bundle), str(kind)) for k, dest, bundle, kind in plans) \
            if isinstance(plans, list) else ()
        return cls(pairs_from_json(data.get("hit_low"), int), pairs_from_json(data.get("hit_high"), int), plans)

    def shedding_only(self) -> "AvgShedderState":
        """The memory that decides the next shedding cycle: the counters, without the plans (only
        placement reads them)."""
        return AvgShedderState(self.hit_low, self.hit_high) if self.plans else self


@dataclass(frozen=True)
class AvgShedderDetails(Details):
    """The pairs of this round (:class:`~engine.results.AvgPair`: cool and hot broker, scores, gap,
    hit counters, whether and why it triggered, the amount).

    A round's details are built from its pair table (:meth:`of_table`): ``pairs`` is made on first
    read; :meth:`event_fields` reads only the triggered pairs."""

    kind = "pairs"
    pairs: tuple = field(default_factory=tuple)

    @classmethod
    def of_table(cls, table: "_PairTable") -> "AvgShedderDetails":
        d = object.__new__(cls)
        object.__setattr__(d, "_table", table)
        return d

    def __getattr__(self, name):
        table = self.__dict__.get("_table") if name == "pairs" else None
        if table is None:
            raise AttributeError(name)
        got = table.pairs()
        object.__setattr__(self, "pairs", got)
        return got

    def event_fields(self, broker, selections=()):
        table = self.__dict__.get("_table")
        if table is not None and "pairs" not in self.__dict__:
            p = table.fired_by_high().get(broker)
            return {} if p is None else {"partner": p.low, "trigger": p.trigger, "score": p.high_score,
                                          "partner_score": p.low_score, "gap": p.gap, "amount": p.amount}
        for p in self.pairs:
            if p.triggered and p.high == broker:
                return {"partner": p.low, "trigger": p.trigger, "score": p.high_score, "partner_score": p.low_score,
                        "gap": p.gap, "amount": p.amount}
        return {}


_INT64 = np.iinfo(np.int64)


class _HitCounters:
    """AvgShedder's two per-broker hit counter maps (low and high) as arrays over broker slots: a broker
    gets a slot the first time a round sees it (``slot``: name -> slot, ``names``: slot -> name) and keeps
    it; a counter holds its count in ``count`` (0 where absent) and, where present, its place in the map's
    insertion order in ``seq`` (-1 where absent). A round of any size updates them with a few array
    operations instead of a dictionary operation per broker; :meth:`as_dict` gives a map as the dict it
    stands for (absent counters left out, the others in insertion order, as a Python dict kept them).

    A count read from a state outside the 64-bit range is clamped to it (Pulsar's counters are Java
    ``int``\ s; no round count comes near either bound)."""

    __slots__ = ("slot", "names", "count", "seq", "next", "_last")

    def __init__(self):
        self.slot: dict = {}
        self.names: list = []
        self.count = {"low": np.zeros(0, dtype=np.int64), "high": np.zeros(0, dtype=np.int64)}
        self.seq = {"low": np.zeros(0, dtype=np.int64), "high": np.zeros(0, dtype=np.int64)}
        self.next = 0  # the next insertion's sequence number
        self._last = (None, None)  # (a view's broker list, its slots): a view read by several rounds

    def _grow(self, n: int) -> None:
        cap = len(self.count["low"])
        if n > cap:
            new = max(n, 2 * cap, 64)
            for kind in ("low", "high"):
                self.count[kind] = np.concatenate([self.count[kind], np.zeros(new - cap, dtype=np.int64)])
                self.seq[kind] = np.concatenate([self.seq[kind], np.full(new - cap, -1, dtype=np.int64)])

    def slots_of(self, brokers: list) -> np.ndarray:
        """The slots of ``brokers`` (names), new ones given slots at the end."""
        last, got = self._last
        if last is brokers or last == brokers:  # (the same brokers as the last round's view: most minutes)
            return got
        slot = self.slot
        if not slot.keys() >= set(brokers):
            for b in brokers:
                if b not in slot:
                    slot[b] = len(self.names)
                    self.names.append(b)
            self._grow(len(self.names))
        got = np.fromiter(map(slot.__getitem__, brokers), dtype=np.int64, count=len(brokers))
        self._last = (brokers, got)
        return got

    def as_dict(self, kind: str) -> dict:
        n = len(self.names)
        return _counter_dict(self.names, self.count[kind][:n], self.seq[kind][:n])

    def load(self, kind: str, items) -> None:
        """Replace map ``kind`` by ``items`` (``(broker, count)`` pairs, in insertion order)."""
        items = list(dict(items).items())
        self.slots_of([b for b, _ in items])
        count, seq = self.count[kind], self.seq[kind]
        count[:], seq[:] = 0, -1
        for b, c in items:
            i = self.slot[b]
            count[i] = min(max(int(c), _INT64.min), _INT64.max)
            seq[i] = self.next
            self.next += 1

    def drop(self, slots=slice(None), kinds=("low", "high")) -> None:
        """Remove the counters of ``slots`` (every one by default) from the maps ``kinds`` (both by default)."""
        for kind in kinds:
            self.count[kind][slots] = 0
            self.seq[kind][slots] = -1

    def add(self, kind: str, lo, hi, q) -> tuple:
        """One hit for each pair's two brokers (slots ``lo[i]``, ``hi[i]``; pair number ``q[i]``), the cool
        broker first, as one map update after the other, pair after pair: a new counter joins the
        insertion order at its pair's place; a broker paired with itself (the middle one) counts twice.
        Each broker is in one pair. Returns both brokers' counts after the round."""
        count, seq = self.count[kind], self.seq[kind]
        base = self.next
        self.next += 2 * (int(q[-1]) + 1) if len(q) else 0
        new = seq[lo] < 0
        seq[lo[new]] = base + 2 * q[new]
        count[lo] += 1
        new = seq[hi] < 0
        seq[hi[new]] = base + 2 * q[new] + 1
        count[hi] += 1  # (after the cool ones: the middle broker's second hit)
        return count[lo], count[hi]

    def snapshot(self) -> tuple:
        """Both maps as they are now, to be read later (:func:`_counter_dict` of each): the slot names (a
        list that only grows), and copies of the arrays."""
        n = len(self.names)
        return (self.names, self.count["low"][:n].copy(), self.seq["low"][:n].copy(), self.count["high"][:n].copy(),
                self.seq["high"][:n].copy())


class _CounterMap:
    """``AvgShedder.hit_low`` / ``hit_high``: reading gives the counters, broker -> count, in insertion
    order (a new dict each time: changing it changes nothing); assigning a mapping replaces them."""

    def __init__(self, kind: str):
        self.kind = kind

    def __get__(self, obj, owner=None):
        return self if obj is None else obj._hits.as_dict(self.kind)

    def __set__(self, obj, value) -> None:
        obj._touch()
        obj._hits.load(self.kind, dict(value).items())


def _counter_dict(names: list, count, seq) -> dict:
    """A counter map as a dict: the counters present (``seq >= 0``) in insertion order."""
    at = np.flatnonzero(seq >= 0)
    at = at[np.argsort(seq[at], kind="stable")]
    return dict(zip(map(names.__getitem__, at.tolist()), count[at].tolist()))


class _PairTable:
    """One round's pairs as plain lists (pair ``q``: ``lo[q]``/``hi[q]`` broker index, scores, gap);
    which pairs reset (:attr:`reset`: below the low threshold, the middle broker's own pair left out),
    which counted (:attr:`counted`: ``(q, low hits of lo, of hi, high hits of lo, of hi)`` after the
    round's update) and the triggered ones as :class:`AvgPair` (``fired``). The round gives the first two
    as arrays (:meth:`set_counts`); the lists are made when first read. :meth:`pairs` builds every
    :class:`AvgPair` with its reason, in the order of the result."""

    __slots__ = ("brokers", "lo", "hi", "s_lo", "s_hi", "gaps", "th", "_reset", "_counted", "n_counted",
                 "fired_rows", "_fired", "status", "_built", "_by_high")

    def __init__(self, brokers, lo, hi, s_lo, s_hi, gaps, th):
        self.brokers, self.lo, self.hi, self.s_lo, self.s_hi, self.gaps, self.th = brokers, lo, hi, s_lo, s_hi, gaps, th
        self._reset = ()
        self._counted = ()
        self.n_counted = 0
        #: the triggered pairs in pair order, ``(q, x, y, u, v, reason, amount, unit, fits)``: their counts, their
        #: reason (a LazyText), the amount to move and its unit (``None``, "" when too small to move), whether a
        #: bundle fitted it
        self.fired_rows: list = []
        self._fired = None
        self.status: dict = {}  # q -> "over" | "skipped" (triggered); "pending" otherwise
        self._built = None
        self._by_high = None

    def set_counts(self, reset, q, x, y, u, v) -> None:
        """The round's reset pairs (an array of pair numbers) and its counted pairs (arrays: pair numbers
        and the four counts)."""
        self._reset, self._counted, self.n_counted = reset, (q, x, y, u, v), len(q)

    @property
    def reset(self) -> list:
        got = self._reset
        if not isinstance(got, list):
            got = self._reset = np.asarray(got, dtype=np.int64).tolist()
        return got

    @property
    def counted(self) -> list:
        got = self._counted
        if not isinstance(got, list):
            got = self._counted = list(zip(*(np.asarray(a, dtype=np.int64).tolist() for a in got))) if got else []
        return got

    @property
    def fired(self) -> dict:
        """q -> :class:`AvgPair` of each triggered pair, in pair order (made when first read)."""
        got = self._fired
        if got is None:
            got = self._fired = {}
            B, lo, hi, s_lo, s_hi, g = self.brokers, self.lo, self.hi, self.s_lo, self.s_hi, self.gaps
            n_high = self.th[3]
            for q, x, y, u, v, why, amount, unit, fits in self.fired_rows:
                lo_b, hi_b = B[lo[q]], B[hi[q]]
                pair = got[q] = AvgPair(lo_b, hi_b, s_lo[q], s_hi[q], g[q], hit_low={lo_b: x, hi_b: y},
                                        hit_high={lo_b: u, hi_b: v}, triggered=True,
                                        trigger="high" if max(u, v) >= n_high else "low")
                lazy_reason(pair, why if fits else LazyText(_joined, why, "; no bundle fits the amount"))
                if amount is not None:
                    pair.amount, pair.amount_unit = amount, unit
        return got

    def fired_by_high(self) -> dict:
        """The triggered pairs by hot broker (a broker is in one pair only)."""
        got = self._by_high
        if got is None:
            got = self._by_high = {p.high: p for p in self.fired.values()}
        return got

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    @property
    def src(self) -> tuple:
        """What a triggered pair's lazy reason reads: the round's lists, not the table (the table holds the
        pairs, so a reason holding the table would make a reference cycle per pair; a backtest makes
        millions, each then left for the cyclic collector instead of freed when its round is dropped)."""
        return self.brokers, self.lo, self.hi, self.s_lo, self.s_hi, self.gaps, self.th

    def text(self, q, x, y, u, v) -> str:
        """The start of a counted pair's reason: the gap, the threshold it reached, the hit counts."""
        return _pair_head(self.src, q, x, y, u, v)

    def pairs(self) -> tuple:
        got = self._built
        if got is None:
            B, lo, hi, s_lo, s_hi, g = self.brokers, self.lo, self.hi, self.s_lo, self.s_hi, self.gaps
            low = self.th[0]
            out = [AvgPair(B[lo[q]], B[hi[q]], s_lo[q], s_hi[q], g[q],
                           reason=f"gap {g[q]:.2f} < low threshold {low:g}: counters reset") for q in self.reset]
            fired = self.fired
            for q, x, y, u, v in self.counted:
                pair = fired.get(q)
                if pair is None:
                    lo_b, hi_b = B[lo[q]], B[hi[q]]
                    pair = AvgPair(lo_b, hi_b, s_lo[q], s_hi[q], g[q], hit_low={lo_b: x, hi_b: y},
                                   hit_high={lo_b: u, hi_b: v}, reason=f"{self.text(q, x, y, u, v)}, not yet")
                out.append(pair)
            got = self._built = tuple(out)
        return got


def _pairing(view, weights, truncating: bool = False) -> tuple:
    """What a round's pairs depend on, from the view and the weights alone: the scores (%), their mean,
    and pair ``q``'s cool and hot broker index, scores and gap (lists; the gaps also as an array).

    Brokers sorted by score ascending, ties in the order of ``brokerScoreMap`` (a ``HashMap`` filled in
    ``brokerData`` order); pair ``q`` is the ``q``-th lowest with the ``q``-th highest (the middle broker
    with itself when the count is odd). Kept on the view, keyed by the weights' values: one view may serve
    several strategies or settings (a sweep's cells), which read it and never change it.

    ``truncating``: sort as releases before 4.0.8 / 4.1.2 do, ``(int)(a - b)`` over the ``HashMap``'s
    order with Java's TimSort (:func:`engine.javasort.java_sort`); where that sort throws, the pairing is
    the :class:`~engine.javasort.ContractViolation` itself (the caller fails the cycle as Pulsar does).
    """
    w = tuple(float(x) for x in weights)
    cache = view.__dict__.setdefault("_avg_pairing", {})
    got = cache.get((w, truncating))
    if got is None:
        scores = view.usage_with_weight(w) * 100
        n = len(scores)
        mean = float(np.mean(scores)) if n else None
        if truncating:
            srt = np.argsort(view.broker_map_rank, kind="stable").tolist()
            sl = scores.tolist()
            try:
                java_sort(srt, lambda x, y: java_int_cast(sl[x] - sl[y]))
            except ContractViolation as exc:
                cache[(w, truncating)] = exc
                return exc
            srt = np.asarray(srt, dtype=np.int64)
        else:
            srt = np.lexsort((view.broker_map_rank, scores))
        m = (n + 1) // 2
        lo_idx, hi_idx = srt[:m], srt[::-1][:m]
        s_lo, s_hi = scores[lo_idx], scores[hi_idx]
        gaps = s_hi - s_lo
        got = cache[(w, truncating)] = (scores, mean, lo_idx.tolist(), hi_idx.tolist(), s_lo.tolist(),
                                        s_hi.tolist(), gaps.tolist(), gaps, lo_idx, hi_idx)
    return got


def _pair_head(src: tuple, q, x, y, u, v) -> str:
    """The start of a counted pair's reason from a round's lists (:attr:`_PairTable.src`): the gap, the
    threshold it reached, the hit counts."""
    brokers, lo, hi, s_lo, s_hi, gaps, (low, high, n_low, n_high) = src
    d = gaps[q]
    th_txt = f">= high threshold {high:g}" if d >= high else f">= low threshold {low:g}"
    return (f"{brokers[hi[q]]} score {s_hi[q]:.2f} - {brokers[lo[q]]} score {s_lo[q]:.2f} = {d:.2f} {th_txt}: "
            f"high hits {max(u, v)} of {n_high}, low hits {max(x, y)} of {n_low}")


def _fired_text(src, q, counts, mode, r_hi, r_lo, t_hi, t_lo, p, need_rate, need_thr, min_msg, min_thr) -> str:
    """The reason of a triggered pair (see :class:`~engine.results.LazyText`); ``src`` is the round's
    lists (:attr:`_PairTable.src`)."""
    head = _pair_head(src, q, *counts)
    if mode == "small":
        return (f"{head} -> triggered, but the amount to move is too small "
                f"({fmt_rate(need_rate)} <= {min_msg:,} and {fmt_bytes(need_thr)} <= "
                f"{fmt_bytes(min_thr)}); counters reset")
    if mode == "rate":
        amt = f"move ({fmt_rate(r_hi)} - {fmt_rate(r_lo)}) x {p:g} = {fmt_rate(need_rate)}"
    else:
        amt = (f"msg rate difference x {p:g} = {fmt_rate(need_rate)} <= minUnloadMessage "
               f"{min_msg:,}; move throughput ({fmt_bytes(t_hi)} - {fmt_bytes(t_lo)}) x {p:g} = {fmt_bytes(need_thr)}")
    brokers, lo, hi = src[:3]
    return f"{head} -> unload from {brokers[hi[q]]} to {brokers[lo[q]]}; {amt}"


def _joined(a, b) -> str:
    return f"{a}{b}"


def _drawn_hash(r: int, key: tuple) -> int:
    """What a placement without a plan indexes the candidates with: ``Math.abs`` of the CRC-32 of the
    random int's decimal text as a signed int; where that overflows (``Integer.MIN_VALUE``, a negative
    index) Pulsar falls back to the absolute hash code, here of the value key."""
    v = crc32(str(r).encode())  # unsigned: the signed int's absolute value is v, or 2**32 - v from 2**31
    if v < 0x80000000:
        return v
    if v != 0x80000000:
        return 0x100000000 - v
    return abs(hash(key)) & 0x7FFFFFFF


class PlannedDecision(LeanDecision):
    """A placement that follows a plan (the destination planned when shedding, or remembered for an
    identical BundleData value). A cycle makes one per unloaded bundle, so it holds the plan and
    writes its reason when read; ``best`` is the planned broker."""

    from_plan = True

    def __init__(self, bundle, strategy, names, cand, plan, j):
        self.bundle, self.strategy, self.broker = bundle, strategy, plan[0]
        self._names, self._cand, self.filters = names, cand, ()
        self._plan, self._j = plan, j

    def _written(self) -> str:
        dest, bundle, kind = self._plan
        if kind == "shedding" and bundle == self.bundle:
            return f"destination planned when shedding: {dest}"
        return (f"remembered {dest} for an identical BundleData value (planned for {bundle} at {kind}); "
                f"AvgShedder keys its plans by value")


class DrawnDecision(LeanDecision):
    """A placement without a usable plan: the hash of a random int picks among the candidates sorted
    by name (``best``). At 10,000 brokers a cycle makes ~16,000 of them, so it holds what it needs
    and writes its reason when read."""

    def __init__(self, bundle, strategy, names, cand, srt, j, planned: bool):
        self.bundle, self.strategy, self.broker = bundle, strategy, names[j]
        self._names, self._cand, self.filters = names, cand, ()
        self._srt, self._j, self._planned = srt, j, planned
        self.random = len(srt) > 1

    @property
    def _best(self):
        return self._srt

    def _written(self) -> str:
        why = "planned destination not a candidate" if self._planned else "no planned destination"
        return (f"{why}: hash of a random number picks {self.broker} among {len(self._srt)} candidates "
                f"(cluster start or broker removed)")


class AvgShedder(SheddingStrategy, PlacementStrategy):
    """Pairing shedder with hit counts, and its own placement.

    Parameters
    ----------
    hit_low, hit_high : dict, optional
        Initial per-broker counters (to replay a leader's memory).
    """

    name = "AvgShedder"
    state_type = AvgShedderState
    uses_bundle_data = True  # its plans are keyed by the bundle's BundleData value
    config_keys = ("loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
                   "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
                   "maxUnloadPercentage", "minUnloadMessage", "minUnloadMessageThroughput",
                   "loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
                   "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")

    #: a placement without a plan draws one random int (the load manager takes a cycle's draws at once)
    draws_int32 = True
    #: record a destination plan for each selected bundle (placement reads them); a backtest, which runs no
    #: placement, turns it off: the plans would only be dropped after each cycle
    keep_plans = True

    def __init__(self, hit_low: dict | None = None, hit_high: dict | None = None):
        self._hits = _HitCounters()
        self._hits.load("low", (hit_low or {}).items())
        self._hits.load("high", (hit_high or {}).items())
        #: BundleData value key -> (destination broker, bundle name, "shedding" | "placement")
        self.plans: dict[tuple, tuple[str, str, str]] = {}

    hit_low = _CounterMap("low")
    hit_high = _CounterMap("high")

    # ------------------------------------------------------------------ state
    def state(self):
        """The display form: counters and the plans as bundle → destination (the value keys left out;
        :meth:`state_value` keeps them)."""
        return {"hit_low": self.hit_low, "hit_high": self.hit_high,
                "plans": {bundle: dest for dest, bundle, *_ in self.plans.values()}}

    def _memory(self):
        return AvgShedderState(pairs(self.hit_low), pairs(self.hit_high),
                               tuple((k, *v) for k, v in self.plans.items()))

    def _set_memory(self, state):
        self._hits.load("low", state.hit_low)
        self._hits.load("high", state.hit_high)
        self.plans = {k: (dest, bundle, kind) for k, dest, bundle, kind in state.plans}

    def on_active_brokers_change(self, active_brokers):
        pass  # Pulsar's AvgShedder keeps its counters and plans

    # ------------------------------------------------------------------ shedding
    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        self._touch()
        low, high = conf.loadBalancerAvgShedderLowThreshold, conf.loadBalancerAvgShedderHighThreshold
        n_low, n_high = conf.loadBalancerAvgShedderHitCountLowThreshold, conf.loadBalancerAvgShedderHitCountHighThreshold
        p = conf.maxUnloadPercentage
        pairing = _pairing(view, conf.weights, not conf.has("avg_shedder_double_comparator"))
        brokers = view.brokers
        res = SheddingResult(self.name, "Skip", "", score_unit="%",
                             lines={"low threshold (gap)": low, "high threshold (gap)": high})
        if isinstance(pairing, ContractViolation):
            return self._sort_failed(view, conf, res, pairing)
        scores, mean, lo_l, hi_l, s_lo, s_hi, gaps_l = pairing[:7]
        n = view.nb
        if n:
            res.lines["average"] = mean
        m = len(lo_l)
        table = _PairTable(brokers, lo_l, hi_l, s_lo, s_hi, gaps_l, (low, high, n_low, n_high))
        fired = self._count_hits(table, pairing, brokers)
        if fired is None:
            res.reason = f"no pair with a score gap >= low threshold {low:g}: all hit counters cleared"
            res.reason_code = BALANCED
            self._finish_lazy(res, table, scores)
            return res
        rates, thrs = view.msg_rate.tolist(), view.msg_throughput.tolist()
        min_msg, min_thr = conf.minUnloadMessage, conf.minUnloadMessageThroughput
        amounts = []  # per triggered pair: (rate to move, throughput to move, unit of the amount)
        hot = {"rate": [], "throughput": [], "small": []}
        for q, *_ in fired:
            lo, hi = lo_l[q], hi_l[q]
            need_rate, need_thr = (rates[hi] - rates[lo]) * p, (thrs[hi] - thrs[lo]) * p
            mode = "rate" if need_rate > min_msg else "throughput" if need_thr > min_thr else "small"
            amounts.append((need_rate, need_thr, mode))
            hot[mode].append(hi)
        if len(fired) > 1:  # the hot brokers' bundles sorted at once, per amount unit. When a quarter of the
            # pairs or more move by message rate, every broker that can be a pair's hot one (at most four times
            # the work; the pairs are the same at any threshold, so a slider's next move finds them sorted)
            rate_hot = hot["rate"]  # (each one among the pairing's hot side)
            if 4 * len(rate_hot) >= m:
                _prefill_largest(view, "rate", hi_l, whole=True)
            else:
                _prefill_largest(view, "rate", rate_hot)
            _prefill_largest(view, "throughput", hot["throughput"])
        small = no_fit = 0
        recent = recently_unloaded or {}
        planned = []  # the selected bundles' indices, in selection order
        chosen = []  # and what their selections say
        src, rows, status, names = table.src, table.fired_rows, table.status, view.bundles
        for (q, x, y, u, v), (need_rate, need_thr, mode) in zip(fired, amounts):
            lo, hi = lo_l[q], hi_l[q]
            why = LazyText(_fired_text, src, q, (x, y, u, v), mode, rates[hi], rates[lo], thrs[hi], thrs[lo], p,
                           need_rate, need_thr, min_msg, min_thr)
            if mode == "small":
                status[q] = "skipped"
                rows.append((q, x, y, u, v, why, None, "", True))
                small += 1
                continue
            budget, unit = (need_rate, "msg/s") if mode == "rate" else (need_thr, "B/s")
            status[q] = "over"
            hi_b = brokers[hi]
            if len(view.owned[hi]) <= 1:
                res.notes.append(f"{hi_b} has {len(view.owned[hi])} bundle(s); AvgShedder unloads anyway")
            picked = _fill(_largest_first(view, hi, mode), budget, names, recent)
            rows.append((q, x, y, u, v, why, budget, unit, bool(picked)))
            if not picked:
                no_fit += 1
                continue
            lo_b = brokers[lo]
            for k, t in picked:
                planned.append(k)
                chosen.append((hi_b, names[k], t, unit, lo_b, why))
        if planned:  # the selections, pair after pair, as columns (their other traffic figure read at once;
            # each pair's reason formatted when first read)
            res.selected = SelectionRows(chosen, view.short_rate[planned].tolist(),
                                         view.short_throughput[planned].tolist())
        if self.keep_plans and planned:  # the planned destinations, pair after pair (value keys read at once)
            plans = self.plans
            keys = view.bundle_value_keys(planned)
            for key, (_b, name, _t, _u, lo_b, _w) in zip(keys, chosen):
                plans[key] = (lo_b, name, "shedding")
            res._for_placement = (planned, keys)  # what the load manager's placement reads (select_many)
        held = table.n_counted - len(fired)
        if not res.selected:
            res.reason = "; ".join(pair.reason for pair in table.fired.values()) or "no pair reached its hit count"
        self._finish_lazy(res, table, scores)
        finish_result(res, "no pair reached its hit count",
                      skip_code=NO_BUNDLES if no_fit else BALANCED if small or not held else HIT_COUNT)
        return res

    def _sort_failed(self, view, conf, res, exc):
        """The cycle of a release whose broker sort throws: Pulsar's ``findBundlesForUnloading`` ends
        with the exception before any hit counter changes; the leader's shedding task logs "Error during
        the load shedding", unloads nothing and runs again at the next interval."""
        scores = view.usage_with_weight(conf.weights) * 100
        res.label, res.reason_code = FAILURE, UNKNOWN
        res.reason = (f"java.lang.IllegalArgumentException: {exc} — thrown while sorting the brokers by score with "
                      f"(int)(a - b), the comparator of Pulsar {conf.pulsarVersion} (fixed in 4.0.8 / 4.1.2): "
                      f"scores less than 1 apart compare equal and the order is not transitive. The leader logs "
                      f"'Error during the load shedding', unloads nothing this cycle and tries again at the next "
                      f"interval; the hit counters are unchanged")
        res.scores = dict(zip(view.brokers, scores.tolist()))
        res.verdicts = [BrokerVerdict(b, s, None, "", "ok") for b, s in zip(view.brokers, scores.tolist())]
        res.state = self.state()
        res.details = AvgShedderDetails(())
        res.notes.append("the broker sort threw: Comparison method violates its general contract!")
        return res

    def _count_hits(self, table: "_PairTable", pairing: tuple, brokers: list):
        """The round's hit counting, every pair at once (each broker is in one pair): a pair below the low
        threshold resets both brokers' counters; any other adds a low hit to both and a high hit when its
        gap reaches the high threshold (else resets their high counters); the middle broker, paired with
        itself, counts twice on one counter (both its counts are read after both hits). When no pair
        counted, every counter is cleared and this returns ``None``; else the triggered pairs,
        ``(q, x, y, u, v)`` in pair order (low hits of the cool and the hot broker, then high hits), whose
        counters are then reset. The table gets the reset and counted pairs (:meth:`_PairTable.set_counts`)."""
        (low, high, n_low, n_high), hits = table.th, self._hits
        gaps, slots = pairing[7], hits.slots_of(brokers)
        lo_s, hi_s = slots[pairing[8]], slots[pairing[9]]
        below = gaps < low
        reset = np.flatnonzero(below & (lo_s != hi_s))
        if below.all():
            table.set_counts(reset, (), (), (), (), ())
            hits.drop()
            return None
        hits.drop(np.concatenate([lo_s[below], hi_s[below]]))
        c = np.flatnonzero(~below)
        lo_c, hi_c = lo_s[c], hi_s[c]
        x, y = hits.add("low", lo_c, hi_c, c)
        over = ~(gaps[c] < high)  # (a NaN gap counts a high hit, as it is not below the threshold)
        u, v = np.zeros(len(c), dtype=np.int64), np.zeros(len(c), dtype=np.int64)
        if not over.all():
            hits.drop(np.concatenate([lo_c[~over], hi_c[~over]]), ("high",))
        if over.any():
            u[over], v[over] = hits.add("high", lo_c[over], hi_c[over], c[over])
        table.set_counts(reset, c, x, y, u, v)
        f = np.flatnonzero((u >= n_high) | (v >= n_high) | (x >= n_low) | (y >= n_low))
        if not len(f):
            return []
        hits.drop(np.concatenate([lo_c[f], hi_c[f]]))
        return list(zip(c[f].tolist(), x[f].tolist(), y[f].tolist(), u[f].tolist(), v[f].tolist()))

    def _finish_lazy(self, res, table, scores):
        """The explanation of a round — scores, verdicts, every pair with its reason, the state after
        it — built when first read (a backtest or a sweep reads only the triggered pairs): the same
        values as building them here."""
        brokers = table.brokers
        names, lc, ls, hc, hs = self._hits.snapshot()
        plans = self.plans.copy()
        status = table.status

        def verdicts():
            st = {}
            for q, *_ in table.counted:
                s = status.get(q, "pending")
                lo_b, hi_b = brokers[table.lo[q]], brokers[table.hi[q]]
                if s == "over":
                    st[hi_b], st[lo_b] = "over", "under"
                else:
                    st[hi_b] = st[lo_b] = s
            return VerdictRows(brokers, scores.tolist(), list(map(st.get, brokers, repeat("ok"))))

        res.defer(scores=lambda: dict(zip(brokers, scores.tolist())), verdicts=verdicts,
                  pairs=lambda: list(table.pairs()),
                  state=lambda: {"hit_low": _counter_dict(names, lc, ls), "hit_high": _counter_dict(names, hc, hs),
                                 "plans": {bundle: dest for dest, bundle, *_ in plans.values()}})
        res.details = AvgShedderDetails.of_table(table)

    @staticmethod
    def prepare(view, conf) -> None:
        """Sort, once per view, the bundles of every broker that can be a pair's hot one by message rate
        (what a low threshold's round sorts when a quarter of its pairs or more fire): a caller that will
        run more rounds on the view (the Tuner while a slider is still) calls it when it is idle, and the
        rounds find them sorted. It changes no decision: the same bundles, in the same order, as each
        round sorting them."""
        pairing = _pairing(view, conf.weights, not conf.has("avg_shedder_double_comparator"))
        if not isinstance(pairing, ContractViolation):
            _prefill_largest(view, "rate", pairing[3], whole=True)

    # ------------------------------------------------------------------ placement
    def select_broker(self, cand, bundle, data, view, conf, ctx):
        if len(cand) == 0:
            dec = new_decision(self.name, bundle, view, cand)
            dec.reason = "no candidate broker"
            return dec
        key = data.value_key()
        plan = self.plans.get(key)
        if plan is not None:
            j = view.broker_index.get(plan[0])
            if j is not None and ctx.is_candidate(view, cand, j):
                return PlannedDecision(bundle, self.name, view.brokers, cand, plan, j)
        cand = as_index(cand)
        srt = ctx.by_name(view, cand)
        j = int(srt[_drawn_hash(ctx.int32(), key) % len(srt)])
        dec = DrawnDecision(bundle, self.name, view.brokers, cand, srt, j, plan is not None)
        self._touch()
        self.plans[key] = (dec.broker, bundle, "placement")
        return dec

    def select_many(self, bundles, keys, cands, start, stop, view, conf, ctx) -> list:
        """:meth:`select_broker` for ``bundles[start:]`` in turn (``keys``: their ``BundleData`` value keys,
        ``cands``: their candidates), until and with the first choice of a broker ``j`` with ``stop[j]``
        (an overloaded one, whose retry the load manager runs before the next choice): the same
        decisions, draws and plans as one call per bundle."""
        out = []
        if start >= len(bundles):
            return out
        self._touch()
        plans, bidx, names, name = self.plans, view.broker_index, view.brokers, self.name
        int32 = ctx.int32 if ctx.draws is None else ctx.draws.next  # (the cycle's draws: one call less each)
        facts, last, f = {}, None, None  # id(candidates) -> (candidates, as an index, mask, by name, as a list)
        for i in range(start, len(bundles)):
            cand, key, bundle = cands[i], keys[i], bundles[i]
            if cand is not last:
                f = facts.get(id(cand))
                if f is None or f[0] is not cand:
                    if len(cand) == 0:
                        out.append(self.select_broker(cand, bundle, None, view, conf, ctx))
                        continue
                    idx = as_index(cand)
                    srt = ctx.by_name(view, idx)
                    f = facts[id(cand)] = (cand, idx, ctx.mask(view, idx).tolist(), srt, srt.tolist())
                last = cand
            _, idx, mask, srt, srt_l = f
            plan = plans.get(key)
            if plan is not None:
                j = bidx.get(plan[0])
                if j is not None and mask[j]:
                    out.append(PlannedDecision(bundle, name, names, idx, plan, j))
                    if stop[j]:
                        break
                    continue
            r = int32()
            h = crc32(b"%d" % r)  # (_drawn_hash, its common case inline: ~20,000 a cycle at 10,000 brokers)
            j = srt_l[(h if h < 0x80000000 else _drawn_hash(r, key)) % len(srt_l)]
            dec = DrawnDecision(bundle, name, names, idx, srt, j, plan is not None)
            plans[key] = (dec.broker, bundle, "placement")
            out.append(dec)
            if stop[j]:
                break
        return out

SPEC = StrategySpec(
    name="AvgShedder", fqn="org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
    roles=frozenset({"shedding", "placement"}), load_manager=MODULAR, config_keys=AvgShedder.config_keys,
    requires_placement="AvgShedder",  # one instance plays both roles (Pulsar refuses other pairings)
    sweep_grid=(("loadBalancerAvgShedderLowThreshold", (5, 10, 15, 20, 25)),
                ("loadBalancerAvgShedderHitCountLowThreshold", (2, 4, 8, 12))),
    state_type=AvgShedderState, factory=AvgShedder, explains=frozenset({"pairs", "plans"}),
    title="AvgShedder: pair hot and cool brokers, move load within a pair after consecutive hits")
