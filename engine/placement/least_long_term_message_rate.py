"""LeastLongTermMessageRate: place on the broker with the lowest long-term message rate.

Notes
-----
Pulsar file ``impl/LeastLongTermMessageRate.java`` (``pulsar-load-balancing.md`` §6.1); the default
placement before Pulsar 5.0. Config keys: ``loadBalancerBrokerOverloadedThresholdPercentage`` and the
four resource weights (weighted usage since PIP-358).

Score = long-term msg rate in+out of the broker's time-average data + the long-term rates of its
preallocated bundles; +∞ when the weighted usage is above the overload line (``>``). The lowest
score wins; ties (including "every broker overloaded", all +∞) are drawn at random. Bytes are
ignored.

Examples
--------
Three brokers at 1,800, 600 and 200 msg/s (long term):

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
>>> dec, state = LeastLongTermMessageRate().place(cand, "new/ns/0x00000000_0xffffffff", None, view,
...                                               LoadBalancerConfig(), PlacementContext(), None)
>>> print(dec.label, dec.broker, dec.reason)
Success b3:8080 lowest long-term message rate 200 msg/s
"""
from __future__ import annotations

import math

import numpy as np

from ..results import fmt_rate
from ..strategies.spec import EmptyState, MODULAR, StrategySpec
from .base import PlacementStrategy, draw, new_decision

__all__ = ["SPEC", "LeastLongTermMessageRate"]


class LeastLongTermMessageRate(PlacementStrategy):
    """Stateless placement by long-term message rate."""

    name = "LeastLongTermMessageRate"
    config_keys = ("loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerCPUResourceWeight",
                   "loadBalancerDirectMemoryResourceWeight", "loadBalancerBandwidthInResourceWeight",
                   "loadBalancerBandwidthOutResourceWeight")

    def scores(self, view, conf, ctx) -> np.ndarray:
        """Score of every broker of the view (msg/s, +inf when overloaded)."""
        uw = view.overload_usage(conf)
        return np.where(uw > conf.overload_threshold, np.inf, ctx.prealloc_rate(view) + view.long_term_msg_rate)

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        if len(cand) == 0:
            dec.reason = "no candidate broker"
            return dec
        # the candidates' scores, lowest score and ties, kept per candidate array while the view, the
        # configuration and the preallocations are unchanged (the load manager hands one array to
        # every bundle of a namespace): a cycle's placements are one draw each
        facts = ctx._facts(view, cand)
        got = facts.get(self.name)
        if got is None or got[0] is not conf or got[1] != ctx.pre_version:
            sc = self.scores(view, conf, ctx)[cand]
            m = sc.min()
            got = facts[self.name] = (conf, ctx.pre_version, sc, m, cand[sc == m])
        sc, m, best = got[2], got[3], got[4]
        dec.set_scores(sc, "msg/s")
        j = int(draw(ctx.rng, best))
        dec.broker = view.brokers[j]
        dec.set_best(best)
        dec.random = len(best) > 1
        if math.isinf(m):
            dec.reason = (f"every candidate is above the overload line "
                          f"{conf.loadBalancerBrokerOverloadedThresholdPercentage} %: random among all {len(best)}")
        elif len(best) > 1:
            dec.reason = f"{len(best)} brokers tie at {fmt_rate(m)}: random pick"
        else:
            dec.reason = f"lowest long-term message rate {fmt_rate(m)}"
        return dec

SPEC = StrategySpec(
    name="LeastLongTermMessageRate", fqn="org.apache.pulsar.broker.loadbalance.impl.LeastLongTermMessageRate",
    roles=frozenset({"placement"}), load_manager=MODULAR, config_keys=LeastLongTermMessageRate.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerBrokerOverloadedThresholdPercentage", (75, 80, 85, 90, 95)),
                ("loadBalancerCPUResourceWeight", (0.25, 0.5, 1.0, 1.5, 2.0, 3.0))),
    state_type=EmptyState, factory=LeastLongTermMessageRate, explains=frozenset({"candidates"}),
    title="LeastLongTermMessageRate: the broker with the least long-term message rate (overloaded ones last)")
