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

import numpy as np

from ..javacompat import INT_MAX
from ..results import LeanDecision
from ..strategies.spec import EXTENSIBLE, MODULAR, StrategySpec
from ..strategies.state import StateValue
from .base import PlacementStrategy, new_decision

__all__ = ["SPEC", "RoundRobinState", "RoundRobinBrokerSelector", "RoundRobinDecision"]


class RoundRobinDecision(LeanDecision):
    """A round-robin pick. A lookup of the bundles of an excluded namespace makes one per new bundle,
    so it holds the least it can: its reason is written when read, its ``best`` and ``lines`` are
    made when read, and its filter steps may be a tuple shared by every lookup with the same
    candidates. Few new objects per lookup means few garbage-collector passes in a lookup storm."""

    _pos = 0  # the counter's position in the candidate list
    _of = 0  # the list's length

    def __init__(self, bundle, strategy, names, cand, broker, j, pos, of):
        self.bundle, self.strategy, self.broker = bundle, strategy, broker
        self._names, self._cand, self.filters = names, cand, ()
        self._j, self._pos, self._of = j, pos, of

    def _written(self) -> str:
        return f"round robin: position {self._pos} of {self._of}"


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
        # the candidates' names (a list, never changed in place), their set and count, kept per
        # candidate array: the load manager hands one array to every bundle of a namespace
        facts = ctx._facts(view, cand) if ctx is not None else None
        got = facts.get(self.name) if facts is not None else None
        if got is None:
            ints = np.asarray(cand, dtype=np.int64).tolist()
            names = [view.brokers[j] for j in ints]
            got = (names, frozenset(names), len(names), ints)
            if facts is not None:
                facts[self.name] = got
        candidates, members, n, ints = got
        if not n:
            dec = new_decision(self.name, bundle, view, cand)
            dec.reason = "no candidate broker"
            return dec
        self._emitted = None  # the working memory changes (Stateful._touch)
        count = self.count
        idx = count % n
        self.count = 0 if count == INT_MAX else count + 1
        if cand.__class__ is not np.ndarray or cand.dtype != np.int64:
            cand = np.asarray(cand, dtype=np.int64)
        cache = self.cache
        if cache is candidates:  # (the usual case: the pick is a candidate, its index known)
            return RoundRobinDecision(bundle, self.name, view.brokers, cand, candidates[idx], ints[idx], idx, n)
        held = len(cache)
        if held <= idx or n != held:
            cache = self.cache = candidates
        sel = cache[idx]
        if sel not in members:
            cache = self.cache = candidates
            sel = cache[idx]
        return RoundRobinDecision(bundle, self.name, view.brokers, cand, sel, view.broker_index[sel], idx, n)


SPEC = StrategySpec(
    name="RoundRobinBrokerSelector", fqn="org.apache.pulsar.broker.loadbalance.impl.RoundRobinBrokerSelector",
    roles=frozenset({"placement"}), load_manager=MODULAR, config_keys=RoundRobinBrokerSelector.config_keys,
    requires_placement=None, sweep_grid=(),
    state_type=RoundRobinState, factory=RoundRobinBrokerSelector, explains=frozenset({"candidates"}),
    title="RoundRobinBrokerSelector: the candidates in turn",
    also_runs_in=frozenset({EXTENSIBLE}))  # the extensible load manager has its own round robin
