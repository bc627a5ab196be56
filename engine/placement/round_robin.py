"""RoundRobinBrokerSelector: cycle through the candidates.

Notes
-----
Pulsar file ``impl/RoundRobinBrokerSelector.java`` (§6.3). Used for bundles of
``loadBalancerSheddingExcludedNamespaces`` (PIP-380) and by the extensible load manager. State: the
counter and a cached candidate list (refreshed when its size changes or the pick is no longer a
candidate).
"""
from __future__ import annotations

from ..javacompat import INT_MAX
from ..strategies.spec import EXTENSIBLE, EmptyState, MODULAR, StrategySpec
from .base import PlacementStrategy, new_decision

__all__ = ["SPEC", "RoundRobinBrokerSelector"]


class RoundRobinBrokerSelector(PlacementStrategy):
    """Deterministic round robin over the candidate set."""

    name = "RoundRobinBrokerSelector"

    def __init__(self):
        self.count = 0
        self.cache: list = []

    def state(self):
        return {"count": self.count, "cache": list(self.cache)}

    def load_state(self, state):
        self.count = int(state.get("count", 0))

    def reset(self):
        self.count = 0
        self.cache = []

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        candidates = [view.brokers[j] for j in cand.tolist()]
        if not candidates:
            dec.reason = "no candidate broker"
            return dec
        idx = self.count % len(candidates)
        self.count = 0 if self.count == INT_MAX else self.count + 1
        if len(self.cache) <= idx or len(candidates) != len(self.cache):
            self.cache = list(candidates)
        sel = self.cache[idx]
        if sel not in candidates:
            self.cache = list(candidates)
            sel = self.cache[idx]
        dec.broker = sel
        dec.set_best([view.broker_index[sel]])
        dec.reason = f"round robin: position {idx} of {len(candidates)}"
        return dec

SPEC = StrategySpec(
    name="RoundRobinBrokerSelector", fqn="org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector",
    roles=frozenset({"placement"}), load_manager=MODULAR, config_keys=RoundRobinBrokerSelector.config_keys,
    requires_placement=None, sweep_grid=(),
    state_type=EmptyState, factory=RoundRobinBrokerSelector, explains=frozenset({"candidates"}),
    title="RoundRobinBrokerSelector: the candidates in turn",
    also_runs_in=frozenset({EXTENSIBLE}))  # the extensible load manager has its own round robin
