"""RoundRobinBrokerSelector: cycle through the candidates.

Notes
-----
Pulsar file ``impl/RoundRobinBrokerSelector.java`` (§6.3). Used for bundles of
``loadBalancerSheddingExcludedNamespaces`` (PIP-380) and by the extensible load manager. State: the
counter and a cached candidate list (refreshed when its size changes or the pick is no longer a
candidate).

The state is a :class:`RoundRobinState`.

Examples
--------
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
>>> dec, state = RoundRobinBrokerSelector().place(cand, "new/ns/0x00000000_0xffffffff", None, view,
...                                               LoadBalancerConfig(), PlacementContext(), RoundRobinState())
>>> print(dec.label, dec.broker, dec.reason)
Success b1:8080 round robin: position 0 of 3
>>> dec, state = RoundRobinBrokerSelector().place(cand, "new/ns/0x00000000_0xffffffff", None, view,
...                                               LoadBalancerConfig(), PlacementContext(), state)
>>> print(dec.label, dec.broker, dec.reason)
Success b2:8080 round robin: position 1 of 3
"""
from __future__ import annotations

from dataclasses import dataclass

from ..javacompat import INT_MAX
from ..strategies.spec import EXTENSIBLE, MODULAR, StrategySpec
from ..strategies.state import StateValue
from .base import PlacementStrategy, new_decision

__all__ = ["SPEC", "RoundRobinState", "RoundRobinBrokerSelector"]


@dataclass(frozen=True)
class RoundRobinState(StateValue):
    """The selector's memory: the counter and the cached candidate list."""

    count: int = 0
    cache: tuple = ()

    def to_json(self) -> dict:
        return {"count": self.count, "cache": list(self.cache)}

    @classmethod
    def from_json(cls, data) -> "RoundRobinState":
        data = data or {}
        return cls(int(data.get("count", 0)), tuple(str(b) for b in data.get("cache") or ()))


class RoundRobinBrokerSelector(PlacementStrategy):
    """Deterministic round robin over the candidate set."""

    name = "RoundRobinBrokerSelector"
    state_type = RoundRobinState

    def __init__(self):
        self.count = 0
        self.cache: list = []

    def _memory(self):
        return RoundRobinState(self.count, tuple(self.cache))

    def _set_memory(self, state):
        self.count = state.count
        self.cache = list(state.cache)

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        dec = new_decision(self.name, bundle, view, cand)
        if not len(cand):
            dec.reason = "no candidate broker"
            return dec
        # the candidates' names (a list, never changed in place) and their set, kept per candidate
        # array: the load manager hands one array to every bundle of a namespace
        facts = ctx._facts(view, cand) if ctx is not None else {}
        got = facts.get(self.name)
        if got is None:
            names = [view.brokers[j] for j in cand.tolist()]
            got = facts[self.name] = (names, frozenset(names))
        candidates, members = got
        self._touch()
        idx = self.count % len(candidates)
        self.count = 0 if self.count == INT_MAX else self.count + 1
        if len(self.cache) <= idx or len(candidates) != len(self.cache):
            self.cache = candidates
        sel = self.cache[idx]
        if sel not in members:
            self.cache = candidates
            sel = self.cache[idx]
        dec.broker = sel
        dec.set_best([view.broker_index[sel]])
        dec.reason = f"round robin: position {idx} of {len(candidates)}"
        return dec

SPEC = StrategySpec(
    name="RoundRobinBrokerSelector", fqn="org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector",
    roles=frozenset({"placement"}), load_manager=MODULAR, config_keys=RoundRobinBrokerSelector.config_keys,
    requires_placement=None, sweep_grid=(),
    state_type=RoundRobinState, factory=RoundRobinBrokerSelector, explains=frozenset({"candidates"}),
    title="RoundRobinBrokerSelector: the candidates in turn",
    also_runs_in=frozenset({EXTENSIBLE}))  # the extensible load manager has its own round robin
