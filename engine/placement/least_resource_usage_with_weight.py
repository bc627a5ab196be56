"""LeastResourceUsageWithWeight: place on a broker well below the average (history-smoothed) usage.

Notes
-----
Pulsar file ``impl/LeastResourceUsageWithWeight.java`` (``pulsar-load-balancing.md`` §6.2). Config
keys: ``loadBalancerHistoryResourcePercentage`` (0.9),
``loadBalancerAverageResourceUsageDifferenceThresholdPercentage`` (10) and the four weights.

* State: ``history[broker]``; **every** call updates it for every candidate (so its time constant
  depends on how often bundles are placed), reset when the broker has no bundles or no traffic.
* Candidates with ``history + 10 % <= average`` pass; one is drawn at random. When none passes,
  Pulsar "assigns randomly as all brokers are overloaded": a draw among all candidates, even hot ones
  (the over-loading BIGO observed).

The state is a :class:`LeastResourceUsageWithWeightState` (the history).

Examples
--------
Three brokers at 80, 45 and 10 % CPU; only b3 is 10 points below the average (45 %):

>>> import numpy as np
>>> from engine.config import LoadBalancerConfig
>>> from engine.placement.base import PlacementContext
>>> from engine.synth import make_snapshot
>>> from engine.view import LoadView
>>> def broker(cpu, rate):
...     return dict(cpu=cpu, bundles={f"t/ns/{cpu}-{k}": dict(rate=rate, throughput=rate * 1000) for k in range(2)})
>>> view = LoadView.from_load_data(make_snapshot({"b1:8080": broker(80, 900), "b2:8080": broker(45, 300),
...                                               "b3:8080": broker(10, 100)}))
>>> cand = np.arange(view.nb)  # every broker is a candidate
>>> dec, state = LeastResourceUsageWithWeight().place(cand, "new/ns/0x00000000_0xffffffff", None, view,
...                                                   LoadBalancerConfig(), PlacementContext(), None)
>>> print(dec.label, dec.broker, dec.reason)
Success b3:8080 1 broker(s) at least 10 % below the average 45.00 %
>>> state.to_json()
{'history': {'b1:8080': 0.8, 'b2:8080': 0.45, 'b3:8080': 0.1}}
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..javacompat import seq_sum
from ..strategies.spec import MODULAR, StrategySpec
from ..strategies.state import StateValue, pairs, pairs_from_json, pairs_json
from .base import PlacementStrategy, draw, new_decision

__all__ = ["SPEC", "LeastResourceUsageWithWeightState", "LeastResourceUsageWithWeight"]


@dataclass(frozen=True)
class LeastResourceUsageWithWeightState(StateValue):
    """The strategy's memory: each broker's history-smoothed weighted usage (fraction), as
    ``(broker, usage)`` pairs in the map's insertion order."""

    history: tuple = ()

    def to_json(self) -> dict:
        return {"history": pairs_json(self.history)}

    @classmethod
    def from_json(cls, data) -> "LeastResourceUsageWithWeightState":
        return cls(pairs_from_json((data or {}).get("history")))


class LeastResourceUsageWithWeight(PlacementStrategy):
    """Placement by history-smoothed weighted usage against the candidates' average."""

    name = "LeastResourceUsageWithWeight"
    state_type = LeastResourceUsageWithWeightState
    config_keys = ("loadBalancerHistoryResourcePercentage",
                   "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
                   "loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
                   "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")

    def __init__(self, history: dict | None = None):
        self._hist: dict[str, float] = dict(history or {})
        # the same history as an array aligned with a view's broker list (fast path)
        self._arr = None
        self._arr_brokers = None
        # id(cand) -> (cand, arr, weights, current usage of cand, restart mask of cand, any restart,
        #             {(history %, threshold): settled decision inputs}, view)
        self._gather = None

    @property
    def history(self) -> dict:
        """``broker -> historical weighted usage`` (fraction)."""
        self._sync_dict()
        return self._hist

    def _sync_dict(self):
        if self._arr is not None:
            for b, v in zip(self._arr_brokers, self._arr.tolist()):
                if v == v:  # not NaN
                    self._hist[b] = v
            self._arr = self._arr_brokers = None

    def _array_for(self, view) -> np.ndarray:
        if self._arr is None or self._arr_brokers is not view.brokers:
            self._sync_dict()
            self._arr = np.array([self._hist.get(b, np.nan) for b in view.brokers], dtype=float)
            self._arr_brokers = view.brokers
        return self._arr

    def _memory(self):
        return LeastResourceUsageWithWeightState(pairs(self.history))

    def _set_memory(self, state):
        self._arr = self._arr_brokers = self._gather = None
        self._hist = dict(state.history)

    def on_active_brokers_change(self, active_brokers):
        self._gather = None
        active = set(active_brokers)
        h = self.history
        gone = [b for b in h if b not in active]
        if gone:
            self._touch()
            for b in gone:
                del h[b]

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        if len(cand) == 0:
            dec.reason = "no candidate broker"
            return dec
        self._touch()
        h = conf.loadBalancerHistoryResourcePercentage
        diff = conf.loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100.0
        arr = self._array_for(view)
        weights = conf.weights
        if self._gather is None or len(self._gather) > 1024:
            self._gather = {}
        g = self._gather.get(id(cand))
        if g is None or g[0] is not cand or g[1] is not arr or g[2] != weights or g[7] is not view:
            # the candidates' inputs, kept while the same candidate array comes back (the load
            # manager hands one array to every bundle of a namespace until a filter's outcome changes)
            cur_all, restart_all = _inputs(view, weights)
            restart = restart_all[cand]
            g = self._gather[id(cand)] = (cand, arr, weights, cur_all[cand], restart, bool(restart.any()), {}, view)
        settled = g[6].get((h, diff))
        if settled is None:
            cur, restart, any_restart = g[3], g[4], g[5]
            old = arr[cand]
            # restart reset (no bundles or no traffic) and first observation: start from the current usage
            new = h * old + (1 - h) * cur
            nan = np.isnan(old)
            if any_restart or nan.any():
                fresh = nan | restart
                new[fresh] = cur[fresh]
            arr[cand] = new
            avg = seq_sum(new) / len(cand)
            best = cand[new + diff <= avg]
            scores = new * 100
            if np.array_equal(new, old):
                # every candidate's history is at the fixed point of its update (the current usage
                # does not change within a view): every later call with these candidates updates
                # nothing and decides on the same average, so it is kept
                g[6][(h, diff)] = (avg, best, scores)
        else:
            avg, best, scores = settled
        dec.set_scores(scores, "%")
        dec.lines = {"average": avg * 100, "average - threshold": (avg - diff) * 100}
        if len(best) == 0:
            best = cand
            dec.reason = (f"no broker satisfies usage + {diff * 100:g} % <= average {avg * 100:.2f} %: "
                          f"assign randomly as all {len(best)} brokers are overloaded")
        else:
            dec.reason = (f"{len(best)} broker(s) at least {diff * 100:g} % below the average "
                          f"{avg * 100:.2f} %" + (": random pick" if len(best) > 1 else ""))
        dec.broker = view.brokers[int(draw(ctx.rng, best))]
        dec.set_best(best)
        dec.random = len(best) > 1
        return dec


def _inputs(view, weights):
    """Current weighted usage and the restart-reset mask of every broker (cached per view)."""
    cache = view.__dict__.setdefault("_lruww_cache", {})
    got = cache.get(weights)
    if got is None:
        restart = (view.num_bundles == 0) | ((view.msg_rate_in == 0) & (view.msg_rate_out == 0))
        got = (view.usage_with_weight(weights), restart)
        cache[weights] = got
    return got

SPEC = StrategySpec(
    name="LeastResourceUsageWithWeight",
    fqn="org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight",
    roles=frozenset({"placement"}), load_manager=MODULAR, config_keys=LeastResourceUsageWithWeight.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerAverageResourceUsageDifferenceThresholdPercentage", (5, 8, 10, 15, 20)),
                ("loadBalancerHistoryResourcePercentage", (0.5, 0.7, 0.8, 0.9, 0.95, 0.99))),
    state_type=LeastResourceUsageWithWeightState, factory=LeastResourceUsageWithWeight, explains=frozenset({"candidates"}),
    title="LeastResourceUsageWithWeight: a random broker among those well below the average weighted usage")
