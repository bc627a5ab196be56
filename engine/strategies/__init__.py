"""Load-balancing strategies as units: one module per strategy, one :class:`StrategySpec` each.

:mod:`engine.strategies.spec` says what a strategy declares, :mod:`engine.strategies.registry`
finds the declarations and answers every question about strategies (names, pairing, keys, grids).
The defaults are chosen in exactly one place: :class:`engine.config.LoadBalancerConfig`
(``loadBalancerLoadSheddingStrategy`` / ``loadBalancerLoadPlacementStrategy``).

The names of the former ``engine.strategies`` module (``make_shedding``, ``make_placement``,
``shedding_name``, ``placement_name``, ``fqn``, ``SHEDDING``, ``PLACEMENT``, ``FQN``,
``register_shedding``, ``register_placement``) keep working.

Examples
--------
>>> from engine.strategies import make_shedding, shedding_name
>>> shedding_name("org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder")
'ThresholdShedder'
>>> make_shedding("AvgShedder").name
'AvgShedder'
"""
from __future__ import annotations

from . import registry
from .registry import FQN, PLACEMENT, SHEDDING, _load, fqn, placement_name, shedding_name
from .spec import EXTENSIBLE, MODULAR, EmptyState, StrategySpec

__all__ = ["registry", "StrategySpec", "EmptyState", "MODULAR", "EXTENSIBLE", "SHEDDING", "PLACEMENT", "FQN",
           "register_shedding", "register_placement", "shedding_name", "placement_name", "make_shedding",
           "make_placement", "fqn"]

_IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def make_shedding(name: str, **kw):
    """A new shedding strategy object by short or fully qualified name."""
    return SHEDDING[shedding_name(name)](**kw)


def make_placement(name: str, **kw):
    """A new placement strategy object by short or fully qualified name."""
    return PLACEMENT[placement_name(name)](**kw)


def _legacy_spec(cls, fqn_: str | None, name: str, role: str) -> StrategySpec:
    return StrategySpec(
        name=name, fqn=fqn_ or _IMPL + name, roles=frozenset({role}),
        load_manager=EXTENSIBLE if getattr(cls, "extensible", False) or getattr(cls, "load_manager_class_name", None)
        else MODULAR,
        config_keys=tuple(getattr(cls, "config_keys", ())), requires_placement=None, sweep_grid=(),
        state_type=EmptyState, factory=cls, explains=frozenset(), title=name)


def register_shedding(cls, fqn: str | None = None) -> None:
    """Former API: register a shedding class (prefer a ``SPEC`` in the class's module)."""
    registry.register(_legacy_spec(cls, fqn, cls.name, "shedding"))


def register_placement(cls, fqn: str | None = None, name: str | None = None) -> None:
    """Former API: register a placement class (prefer a ``SPEC`` in the class's module)."""
    registry.register(_legacy_spec(cls, fqn, name or cls.name, "placement"))
