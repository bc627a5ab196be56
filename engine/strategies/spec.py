"""What a strategy declares about itself: one frozen :class:`StrategySpec` per strategy module.

A strategy module defines ``SPEC = StrategySpec(...)`` (or ``SPECS = (...)``) next to its class; the
registry (:mod:`engine.strategies.registry`) discovers it. Everything the rest of the project needs
to know about a strategy — its Pulsar names, its roles, the load manager that runs it, the
``broker.conf`` keys it reads, the placement it pairs with, the default History sweep grid and the
type of its state — is read from here, never from its name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..config import ConfigKey

__all__ = ["StrategySpec", "StateValue", "EmptyState", "ConfigKey", "MODULAR", "EXTENSIBLE", "LOAD_MANAGERS"]

#: the two load managers of Pulsar: ``ModularLoadManagerImpl`` and the Extensible Load Manager (PIP-192)
MODULAR = "modular"
EXTENSIBLE = "extensible"
LOAD_MANAGERS = (MODULAR, EXTENSIBLE)
ROLES = frozenset({"shedding", "placement"})


class StateValue:
    """Base of the state types: frozen dataclasses with ``to_json()`` / ``from_json(dict)``."""

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_json(cls, data):
        raise NotImplementedError

    def shedding_only(self):
        """The part of the state that decides the next shedding cycle (a driver that never places,
        like the backtest, keeps only this); the whole state unless the strategy says otherwise."""
        return self


@dataclass(frozen=True)
class EmptyState(StateValue):
    """The state of a strategy that remembers nothing between cycles."""

    def to_json(self) -> dict:
        return {}

    @classmethod
    def from_json(cls, data) -> "EmptyState":
        return cls()


@dataclass(frozen=True)
class StrategySpec:
    """One strategy as the registry knows it.

    Attributes
    ----------
    name : str
        Short name as in ``broker.conf`` (``"AvgShedder"``). Unique in the registry.
    fqn : str
        Pulsar's fully qualified class name.
    roles : frozenset
        ``{"shedding"}``, ``{"placement"}`` or both (AvgShedder: one instance plays both roles).
    load_manager : str
        ``"modular"`` or ``"extensible"``: the load manager that runs it.
    config_keys : tuple
        ``broker.conf`` keys it reads (the sliders shown for it): keys of ``LoadBalancerConfig`` or of
        ``new_keys``. A key that is neither fails the registration.
    requires_placement : str or None
        For a shedding strategy: the placement it pairs with (AvgShedder → AvgShedder, TransferShedder
        → the extensible LeastResourceUsageWithWeight); ``None`` = any placement of its load manager.
    sweep_grid : tuple
        Default History sweep grid, ``((key1, (v, ...)), (key2, (v, ...)))``.
    state_type : type
        Frozen dataclass with ``.to_json()`` and ``cls.from_json(dict)``; ``state_type()`` is the
        empty state.
    factory : callable
        ``() -> the strategy object``.
    explains : frozenset
        What its results carry for figures and why-not (``{"pairs"}``, ``{"score_history"}``,
        ``{"candidates"}``, ...).
    title : str
        One line for pickers and help.
    also_runs_in : frozenset
        Other load managers that accept the same name with an equivalent of their own (Pulsar's
        round robin for ``loadBalancerSheddingExcludedNamespaces`` exists in both). Ours: not a
        Pulsar notion, it only tells the pickers which pairs can run.
    new_keys : tuple
        :class:`~engine.config.ConfigKey` declarations of the ``broker.conf`` keys this strategy adds
        (Pulsar's name and default, unit, doc, slider range). The registry declares them to the config
        when the spec registers; the strategy reads them as ``conf.<key>`` like any other key.
    """

    name: str
    fqn: str
    roles: frozenset
    load_manager: str
    config_keys: tuple
    requires_placement: str | None
    sweep_grid: tuple
    state_type: type
    factory: Callable
    explains: frozenset
    title: str
    also_runs_in: frozenset = field(default=frozenset())
    new_keys: tuple = ()

    def __post_init__(self):
        from ..errors import UsageError

        if not isinstance(self.name, str) or not self.name or "." in self.name:
            raise UsageError(f"a strategy spec needs a short name without dots, got {self.name!r}")
        object.__setattr__(self, "roles", frozenset(self.roles))
        object.__setattr__(self, "explains", frozenset(self.explains))
        object.__setattr__(self, "also_runs_in", frozenset(self.also_runs_in))
        object.__setattr__(self, "config_keys", tuple(self.config_keys))
        object.__setattr__(self, "new_keys", tuple(self.new_keys))
        if not all(isinstance(k, ConfigKey) for k in self.new_keys):
            raise UsageError(f"strategy {self.name}: new_keys must be ConfigKey declarations")
        object.__setattr__(self, "sweep_grid", tuple((k, tuple(v)) for k, v in self.sweep_grid))
        if not self.roles or not self.roles <= ROLES:
            raise UsageError(f"strategy {self.name}: roles must be a non-empty subset of {sorted(ROLES)}")
        if self.load_manager not in LOAD_MANAGERS:
            raise UsageError(f"strategy {self.name}: load_manager must be one of {LOAD_MANAGERS}, "
                             f"got {self.load_manager!r}")
        if not callable(self.factory):
            raise UsageError(f"strategy {self.name}: factory must be callable")

    @property
    def is_shedding(self) -> bool:
        return "shedding" in self.roles

    @property
    def is_placement(self) -> bool:
        return "placement" in self.roles

    def runs_in(self, load_manager: str) -> bool:
        """Whether the load manager ``load_manager`` can run this strategy."""
        return load_manager == self.load_manager or load_manager in self.also_runs_in

    def sweep_grid_text(self) -> list[tuple[str, str]]:
        """The sweep grid as ``[(key, "v1, v2, ...")]``, the History page's text fields."""
        return [(k, ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in vals))
                for k, vals in self.sweep_grid]
