"""Placement in the extensible load manager: LeastResourceUsageWithWeight (extensible) and round robin.

Registered (its module's ``SPEC``, :mod:`engine.strategies.registry`) as ``ExtensibleLeastResourceUsageWithWeight`` — a distinct
short name, because the modular ``LeastResourceUsageWithWeight`` (``impl``) already owns the plain
one; its fully qualified name
``org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight`` resolves to
it. These strategies read the extensible snapshot (``BrokerLoadData``), not a modular ``LoadView``:
a ``ModularLoadManager`` refuses them, as Pulsar's modular load manager cannot load them either.

Examples
--------
>>> import numpy as np
>>> from engine.config import LoadBalancerConfig
>>> from engine.extensible.broker_load_data import BrokerLoadData
>>> from engine.extensible.snapshot import ExtensibleLoadData
>>> data = ExtensibleLoadData({b: BrokerLoadData(weighted_max_ema=u) for b, u in
...                            [("a:8080", 0.1), ("b:8080", 0.5), ("c:8080", 0.9)]})
>>> dec, state = ExtensibleLeastResourceUsageWithWeight().place(["a:8080", "b:8080", "c:8080"], "t/n/x", data,
...                                                              LoadBalancerConfig(), np.random.default_rng(0))
>>> print(dec.label, dec.broker, dec.reason)          # average 0.5: only 0.1 + 0.1 <= 0.5
Success a:8080 1 broker(s) with weightedMaxEMA at least 10 % below the average 50.00 %
>>> dec.best, state
(['a:8080'], EmptyState())
"""
from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import numpy as np

from ..config import LoadBalancerConfig
from ..errors import UsageError
from ..placement.base import draw
from ..placement.round_robin import RoundRobinBrokerSelector, RoundRobinState
from ..results import PlacementDecision
from ..strategies.spec import EXTENSIBLE, EmptyState, StrategySpec
from ..strategies.state import Stateful
from .snapshot import EXTENSIBLE_LOAD_MANAGER, ExtensibleLoadData

__all__ = ["SPEC", "ExtensibleLeastResourceUsageWithWeight", "ExtensibleRoundRobin", "EXTENSIBLE_LRUWW_FQN"]

EXTENSIBLE_LRUWW_FQN = "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight"


class _ExtensiblePlacement(Stateful):
    name = ""
    extensible = True
    #: ``loadManagerClassName`` this strategy belongs to
    load_manager_class_name = EXTENSIBLE_LOAD_MANAGER
    config_keys: tuple = ()

    def select(self, candidates: list, bundle: str, data: ExtensibleLoadData, conf: LoadBalancerConfig,
               rng: np.random.Generator) -> PlacementDecision:
        raise NotImplementedError

    def place(self, candidates: list, bundle: str, data: ExtensibleLoadData, conf: LoadBalancerConfig,
              rng: np.random.Generator, state=None):
        """``(decision, new_state)``: one :meth:`select` from ``state`` (``None`` = empty)."""
        self._enter(state)
        dec = self.select(candidates, bundle, data, conf, rng)
        return dec, self.state_value()

    def select_broker(self, *args, **kwargs):
        raise UsageError(f"{self.name} is an Extensible Load Manager strategy: run it with ExtensibleLoadManager "
                         "(e.g. --strategy TransferShedder), not with the modular load manager")

    def on_active_brokers_change(self, active_brokers) -> None:
        pass

    def state(self) -> dict:
        return self.state_value().to_json()

    def copy(self):
        return copy.deepcopy(self)


class ExtensibleLeastResourceUsageWithWeight(_ExtensiblePlacement):
    """``extensions/strategy/LeastResourceUsageWithWeight``: a broker well below the average EMA load.

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.5. Same rule as the modular strategy (§6.2) but without private
    history: each candidate's own ``weightedMaxEMA`` (§8.1) is compared with the average over the
    candidates that have load data; those with ``load + diff <= average`` (``diff =
    loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100``) are the best; when none is,
    every candidate (also those without load data) is. One best broker is returned as is; among
    several, one is drawn with the injected RNG (Pulsar: ``ThreadLocalRandom``). Stateless.
    """

    name = "ExtensibleLeastResourceUsageWithWeight"
    config_keys = ("loadBalancerAverageResourceUsageDifferenceThresholdPercentage",)

    def select(self, candidates, bundle, data, conf, rng):
        cand = list(candidates)
        dec = PlacementDecision(bundle, self.name, names=None, cand=cand)
        if not cand:
            dec.reason = "no candidate broker"
            return dec
        store = data.broker_load_data
        loads = [store[b].weighted_max_ema if b in store else math.nan for b in cand]
        total, valid = 0.0, 0
        for v in loads:
            if not math.isnan(v):
                total += v
                valid += 1
        dec.set_scores(np.array(loads) * 100, "%")
        best = []
        diff = conf.loadBalancerAverageResourceUsageDifferenceThresholdPercentage / 100.0
        no_data = len(cand) - valid
        if valid > 0:
            avg = total / valid
            dec.lines = {"average": avg * 100, "average - threshold": (avg - diff) * 100}
            best = [b for b, v in zip(cand, loads) if not math.isnan(v) and v + diff <= avg]
            if best:
                dec.reason = (f"{len(best)} broker(s) with weightedMaxEMA at least {diff * 100:g} % below the "
                              f"average {avg * 100:.2f} %" + (": random pick" if len(best) > 1 else ""))
            else:
                dec.reason = (f"no broker satisfies weightedMaxEMA + {diff * 100:g} % <= average {avg * 100:.2f} %: "
                              f"assign randomly as all {len(cand)} brokers are overloaded")
        else:
            dec.reason = f"none of the {len(cand)} candidates has load data: random pick among all"
        if no_data and valid:
            dec.reason += f" ({no_data} without load data left out of the average)"
        if not best:
            best = cand
        dec.set_best(best)
        if len(best) == 1:
            dec.broker = best[0]
        else:
            dec.broker = draw(rng, best)
            dec.random = True
        return dec


class ExtensibleRoundRobin(_ExtensiblePlacement):
    """Round robin over broker names (§6.3), for ``loadBalancerSheddingExcludedNamespaces`` bundles
    and as the extensible ``RoundRobinBrokerSelectionStrategy``; wraps :class:`RoundRobinBrokerSelector`
    (its counter and cache are the state)."""

    name = "RoundRobinBrokerSelector"
    state_type = RoundRobinState

    def __init__(self):
        self.inner = RoundRobinBrokerSelector()

    def select(self, candidates, bundle, data, conf, rng):
        self._touch()
        cand = list(candidates)
        shim = SimpleNamespace(brokers=cand, broker_index={b: i for i, b in enumerate(cand)})
        return self.inner.select_broker(np.arange(len(cand), dtype=np.int64), bundle, None, shim, conf, None)

    def _memory(self):
        return self.inner.state_value()

    def _set_memory(self, state):
        self.inner.restore(state)

SPEC = StrategySpec(
    name="ExtensibleLeastResourceUsageWithWeight", fqn=EXTENSIBLE_LRUWW_FQN, roles=frozenset({"placement"}),
    load_manager=EXTENSIBLE, config_keys=ExtensibleLeastResourceUsageWithWeight.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerAverageResourceUsageDifferenceThresholdPercentage", (5, 8, 10, 15, 20)),),
    state_type=EmptyState, factory=ExtensibleLeastResourceUsageWithWeight, explains=frozenset({"candidates"}),
    title="LeastResourceUsageWithWeight of the Extensible Load Manager")
