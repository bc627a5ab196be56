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
"""
from __future__ import annotations

import numpy as np

from ..shedding.base import seq_sum
from .base import PlacementStrategy, draw, new_decision

__all__ = ["LeastResourceUsageWithWeight"]


class LeastResourceUsageWithWeight(PlacementStrategy):
    """Placement by history-smoothed weighted usage against the candidates' average."""

    name = "LeastResourceUsageWithWeight"
    config_keys = ("loadBalancerHistoryResourcePercentage",
                   "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
                   "loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
                   "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")

    def __init__(self, history: dict | None = None):
        self.history: dict[str, float] = dict(history or {})

    def state(self):
        return {"history": dict(self.history)}

    def reset(self):
        self.history.clear()

    def load_state(self, state):
        self.history.update({str(k): float(v) for k, v in (state.get("history") or {}).items()})

    def on_active_brokers_change(self, active_brokers):
        active = set(active_brokers)
        for b in list(self.history):
            if b not in active:
                del self.history[b]

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        if len(cand) == 0:
            dec.reason = "no candidate broker"
            return dec
        h = conf.loadBalancerHistoryResourcePercentage
        names = [view.brokers[j] for j in cand.tolist()]
        old = np.array([self.history.get(b, np.nan) for b in names], dtype=float)
        restart = (view.num_bundles[cand] == 0) | ((view.msg_rate_in[cand] == 0) & (view.msg_rate_out[cand] == 0))
        old[restart] = np.nan
        cur = view.usage_with_weight(conf.weights)[cand]
        new = np.where(np.isnan(old), cur, h * old + (1 - h) * cur)
        self.history.update(zip(names, new.tolist()))
        avg = seq_sum(new.tolist()) / len(cand)
        diff = conf.loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100.0
        dec.set_scores(new * 100, "%")
        dec.lines = {"average": avg * 100, "average - threshold": (avg - diff) * 100}
        best = cand[new + diff <= avg]
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
