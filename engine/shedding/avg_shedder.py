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
  ``HashMap`` order, the comparator of master since #24954 — the older truncating comparator is not
  emulated), paired first with last, second with second to last, ...
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

from dataclasses import dataclass

import numpy as np

from ..javacompat import INT_MIN, guava_crc32_as_int, java_abs_int, java_map_rank
from ..placement.base import PlacementStrategy, new_decision
from ..results import (BALANCED, HIT_COUNT, NO_BUNDLES, AvgPair, BrokerVerdict, Details, Selection, SheddingResult,
                       fmt_bytes, fmt_rate)
from ..strategies.spec import MODULAR, StrategySpec
from ..strategies.state import StateValue, pairs, pairs_from_json, pairs_json
from .base import SheddingStrategy, candidate_bundles, finish_result, sort_desc

__all__ = ["SPEC", "AvgShedderDetails", "AvgShedderState", "AvgShedder"]


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
    hit counters, whether and why it triggered, the amount)."""

    kind = "pairs"
    pairs: tuple = ()

    def event_fields(self, broker, selections=()):
        for p in self.pairs:
            if p.triggered and p.high == broker:
                return {"partner": p.low, "trigger": p.trigger, "score": p.high_score, "partner_score": p.low_score,
                        "gap": p.gap, "amount": p.amount}
        return {}


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

    def __init__(self, hit_low: dict | None = None, hit_high: dict | None = None):
        self.hit_low: dict[str, int] = dict(hit_low or {})
        self.hit_high: dict[str, int] = dict(hit_high or {})
        #: BundleData value key -> (destination broker, bundle name, "shedding" | "placement")
        self.plans: dict[tuple, tuple[str, str, str]] = {}

    # ------------------------------------------------------------------ state
    def state(self):
        """The display form: counters and the plans as bundle → destination (the value keys left out;
        :meth:`state_value` keeps them)."""
        return {"hit_low": dict(self.hit_low), "hit_high": dict(self.hit_high),
                "plans": {bundle: dest for dest, bundle, *_ in self.plans.values()}}

    def _memory(self):
        return AvgShedderState(pairs(self.hit_low), pairs(self.hit_high),
                               tuple((k, *v) for k, v in self.plans.items()))

    def _set_memory(self, state):
        self.hit_low = dict(state.hit_low)
        self.hit_high = dict(state.hit_high)
        self.plans = {k: (dest, bundle, kind) for k, dest, bundle, kind in state.plans}

    def on_active_brokers_change(self, active_brokers):
        pass  # Pulsar's AvgShedder keeps its counters and plans

    # ------------------------------------------------------------------ shedding
    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        self._touch()
        low, high = conf.loadBalancerAvgShedderLowThreshold, conf.loadBalancerAvgShedderHighThreshold
        n_low, n_high = conf.loadBalancerAvgShedderHitCountLowThreshold, conf.loadBalancerAvgShedderHitCountHighThreshold
        p = conf.maxUnloadPercentage
        scores = view.usage_with_weight(conf.weights) * 100
        res = SheddingResult(self.name, "Skip", "", score_unit="%",
                             lines={"low threshold (gap)": low, "high threshold (gap)": high})
        res.scores = {b: float(scores[j]) for j, b in enumerate(view.brokers)}
        n = view.nb
        if n:
            res.lines["average"] = float(np.mean(scores))
        # brokerScoreMap is a HashMap filled in brokerData order: ties keep its iteration order
        tie = java_map_rank(view.brokers)
        srt = np.lexsort((tie, scores)).tolist()
        pairs = []
        i, j = 0, n - 1
        while i <= j:
            lo, hi = srt[i], srt[j]
            lo_b, hi_b = view.brokers[lo], view.brokers[hi]
            d = float(scores[hi] - scores[lo])
            if d < low:
                for b in (lo_b, hi_b):
                    self.hit_high.pop(b, None)
                    self.hit_low.pop(b, None)
                if lo != hi:
                    res.pairs.append(AvgPair(lo_b, hi_b, float(scores[lo]), float(scores[hi]), d,
                                             reason=f"gap {d:.2f} < low threshold {low:g}: counters reset"))
            else:
                pairs.append((lo, hi, d))
                for b in (lo_b, hi_b):
                    self.hit_low[b] = self.hit_low.get(b, 0) + 1
                if d < high:
                    for b in (lo_b, hi_b):
                        self.hit_high.pop(b, None)
                else:
                    for b in (lo_b, hi_b):
                        self.hit_high[b] = self.hit_high.get(b, 0) + 1
            i += 1
            j -= 1
        if not pairs:
            self.hit_high.clear()
            self.hit_low.clear()
            res.reason = f"no pair with a score gap >= low threshold {low:g}: all hit counters cleared"
            res.reason_code = BALANCED
            for k, b in enumerate(view.brokers):
                res.verdicts.append(BrokerVerdict(b, float(scores[k]), None, "", "ok"))
            res.details = AvgShedderDetails(tuple(res.pairs))
            res.state = self.state()
            return res
        recent = view.recent_mask(recently_unloaded)
        rates, thrs = view.msg_rate, view.msg_throughput
        status = {}
        held = small = no_fit = 0
        for lo, hi, d in pairs:
            lo_b, hi_b = view.brokers[lo], view.brokers[hi]
            hl = {lo_b: self.hit_low.get(lo_b, 0), hi_b: self.hit_low.get(hi_b, 0)}
            hh = {lo_b: self.hit_high.get(lo_b, 0), hi_b: self.hit_high.get(hi_b, 0)}
            pair = AvgPair(lo_b, hi_b, float(scores[lo]), float(scores[hi]), d, hit_low=hl, hit_high=hh)
            res.pairs.append(pair)
            hit_h = max(hh.values()) >= n_high
            hit_l = max(hl.values()) >= n_low
            gap_txt = (f"{hi_b} score {scores[hi]:.2f} - {lo_b} score {scores[lo]:.2f} = {d:.2f}")
            kind = "high" if d >= high else "low"
            th_txt = f"{'>=' } {'high' if kind == 'high' else 'low'} threshold {high if kind == 'high' else low:g}"
            counts = (f"high hits {max(hh.values())} of {n_high}, low hits {max(hl.values())} of {n_low}")
            if not (hit_h or hit_l):
                pair.reason = f"{gap_txt} {th_txt}: {counts}, not yet"
                status[hi_b] = status[lo_b] = "pending"
                held += 1
                continue
            pair.triggered = True
            pair.trigger = "high" if hit_h else "low"
            for b in (lo_b, hi_b):
                self.hit_high.pop(b, None)
                self.hit_low.pop(b, None)
            need_rate = (float(rates[hi]) - float(rates[lo])) * p
            need_thr = (float(thrs[hi]) - float(thrs[lo])) * p
            if need_rate > conf.minUnloadMessage:
                mode, budget, vals, unit = "rate", need_rate, view.short_rate, "msg/s"
                amt_txt = f"move ({fmt_rate(rates[hi])} - {fmt_rate(rates[lo])}) x {p:g} = {fmt_rate(need_rate)}"
            elif need_thr > conf.minUnloadMessageThroughput:
                mode, budget, vals, unit = "throughput", need_thr, view.short_throughput, "B/s"
                amt_txt = (f"msg rate difference x {p:g} = {fmt_rate(need_rate)} <= minUnloadMessage "
                           f"{conf.minUnloadMessage:,}; move throughput ({fmt_bytes(thrs[hi])} - {fmt_bytes(thrs[lo])})"
                           f" x {p:g} = {fmt_bytes(need_thr)}")
            else:
                pair.reason = (f"{gap_txt} {th_txt}: {counts} -> triggered, but the amount to move is too small "
                               f"({fmt_rate(need_rate)} <= {conf.minUnloadMessage:,} and {fmt_bytes(need_thr)} <= "
                               f"{fmt_bytes(conf.minUnloadMessageThroughput)}); counters reset")
                status[hi_b] = status[lo_b] = "skipped"
                small += 1
                continue
            pair.amount, pair.amount_unit = budget, unit
            pair.reason = f"{gap_txt} {th_txt}: {counts} -> unload from {hi_b} to {lo_b}; {amt_txt}"
            status[hi_b], status[lo_b] = "over", "under"
            if view.num_bundles[hi] <= 1:
                res.notes.append(f"{hi_b} has {int(view.num_bundles[hi])} bundle(s); AvgShedder unloads anyway")
            idx = sort_desc(view, candidate_bundles(view, hi, recent), vals)
            picked = 0
            for k, t in zip(idx.tolist(), vals[idx].tolist()):
                if budget <= 0:
                    break  # no value fits any more (the same picks as looking at every bundle)
                if 0 < t <= budget:
                    self.plans[view.bundle_value_key(k)] = (lo_b, view.bundles[k], "shedding")
                    budget -= t
                    picked += 1
                    res.selected.append(Selection(hi_b, view.bundles[k], t, unit, float(view.short_rate[k]),
                                                  float(view.short_throughput[k]), planned_destination=lo_b,
                                                  reason=pair.reason))
            if not picked:
                pair.reason += "; no bundle fits the amount"
                no_fit += 1
        for k, b in enumerate(view.brokers):
            res.verdicts.append(BrokerVerdict(b, float(scores[k]), None, "", status.get(b, "ok")))
        if not res.selected:
            fired = [p.reason for p in res.pairs if p.triggered]
            if fired:
                res.reason = "; ".join(fired)
        res.details = AvgShedderDetails(tuple(res.pairs))
        finish_result(res, "no pair reached its hit count",
                      skip_code=NO_BUNDLES if no_fit else BALANCED if small or not held else HIT_COUNT)
        res.state = self.state()
        return res

    # ------------------------------------------------------------------ placement
    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        if len(cand) == 0:
            dec.reason = "no candidate broker"
            return dec
        key = data.value_key()
        plan = self.plans.get(key)
        if plan is not None:
            j = view.broker_index.get(plan[0])
            if j is not None and ctx.is_candidate(view, cand, j):
                dec.broker, dec.from_plan = plan[0], True
                if plan[2] == "shedding" and plan[1] == bundle:
                    dec.reason = f"destination planned when shedding: {plan[0]}"
                else:
                    dec.reason = (f"remembered {plan[0]} for an identical BundleData value (planned for "
                                  f"{plan[1]} at {plan[2]}); AvgShedder keys its plans by value")
                dec.set_best([j])
                return dec
        srt = ctx.by_name(view, cand)
        r = int(ctx.rng.integers(-2**31, 2**31))
        h = java_abs_int(guava_crc32_as_int(str(r)))
        if h == INT_MIN:  # Math.abs overflow -> negative index -> Pulsar's fallback abs(hashCode) % n
            h = abs(hash(key)) & 0x7FFFFFFF
        broker = view.brokers[int(srt[h % len(srt)])]
        self._touch()
        self.plans[key] = (broker, bundle, "placement")
        dec.broker, dec.random = broker, len(srt) > 1
        dec.set_best(srt)
        why = "planned destination not a candidate" if plan is not None else "no planned destination"
        dec.reason = (f"{why}: hash of a random number picks {broker} among {len(srt)} candidates "
                      f"(cluster start or broker removed)")
        return dec

SPEC = StrategySpec(
    name="AvgShedder", fqn="org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
    roles=frozenset({"shedding", "placement"}), load_manager=MODULAR, config_keys=AvgShedder.config_keys,
    requires_placement="AvgShedder",  # one instance plays both roles (Pulsar refuses other pairings)
    sweep_grid=(("loadBalancerAvgShedderLowThreshold", (5, 10, 15, 20, 25)),
                ("loadBalancerAvgShedderHitCountLowThreshold", (2, 4, 8, 12))),
    state_type=AvgShedderState, factory=AvgShedder, explains=frozenset({"pairs", "plans"}),
    title="AvgShedder: pair hot and cool brokers, move load within a pair after consecutive hits")
