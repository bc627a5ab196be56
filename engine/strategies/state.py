"""State as a value: what a strategy remembers between cycles, passed in and returned.

Every strategy has a ``state_type`` (its spec's too): a frozen dataclass with ``to_json()`` (a
JSON-friendly dict) and ``from_json(dict)`` that round-trip losslessly; ``state_type()`` is the
empty state. A shedding strategy runs as ``result, new_state = strategy.run(view, conf, recently,
state)``; a placement as ``decision, new_state = strategy.place(..., state)`` — so "run N cycles"
is a fold, and a state can be shown, diffed, pinned or carried in a permalink.

The strategy object is the executor: it keeps a working copy of its memory (Pulsar's fields, so the
algorithm reads as the Java does) and the value it last returned. A call with that very value goes
on from the working copy; any other value is restored first (replaced, never merged). Where we depart
from a pure function: a placement call between two cycles (AvgShedder's sticky choice, the history of
LeastResourceUsageWithWeight, the round-robin position) changes the working copy; the load managers
read it back with :meth:`Stateful.state_value` before the next cycle, as Pulsar's single object would
simply carry it.

:meth:`Stateful.state` / :meth:`Stateful.load_state` (a dict) are the former API, kept: ``state()``
is the display form the command line prints (AvgShedder's plans as bundle → destination), and
``load_state(dict)`` takes either that or ``to_json()``'s form and restores it.
"""
from __future__ import annotations

from .spec import EmptyState, StateValue

__all__ = ["Stateful", "StateValue", "EmptyState", "fold", "pairs", "pairs_json", "pairs_from_json"]


def pairs(d) -> tuple:
    """A dict as a tuple of ``(key, value)`` items (insertion order kept): a frozen value's field."""
    return tuple(d.items())


def pairs_json(items) -> dict:
    return {k: v for k, v in items}


def pairs_from_json(d, kind=float) -> tuple:
    return tuple((str(k), kind(v)) for k, v in (d or {}).items())


class Stateful:
    """Mixin: the value interface over a strategy's working memory.

    Subclasses set ``state_type`` and implement ``_memory()`` (the working memory as a value) and
    ``_set_memory(value)``; every method that changes the working memory calls ``_touch()``.
    """

    state_type = EmptyState
    _emitted = None  # the value equal to the working memory, when known

    # -- to implement
    def _memory(self):
        return self.state_type()

    def _set_memory(self, state) -> None:
        pass

    # -- the value interface
    def _touch(self) -> None:
        """The working memory changed: the last value no longer describes it."""
        self._emitted = None

    def state_value(self):
        """The working memory as a ``state_type`` value."""
        v = self._emitted
        if v is None:
            v = self._emitted = self._memory()
        return v

    def as_state(self, state):
        """``state`` as a ``state_type`` value (``None`` → empty, a dict → ``from_json``)."""
        if state is None:
            return self.state_type()
        if isinstance(state, self.state_type):
            return state
        if isinstance(state, dict):
            return self.state_type.from_json(state)
        raise TypeError(f"{type(self).__name__} state must be a {self.state_type.__name__}, "
                        f"got {type(state).__name__}")

    def restore(self, state) -> None:
        """Replace the working memory by ``state`` (a value, or its ``to_json()`` dict)."""
        state = self.as_state(state)
        self._set_memory(state)
        self._emitted = state

    def _enter(self, state) -> None:
        if state is not self._emitted or state is None:
            self.restore(state)

    # -- the former API
    def load_state(self, state: dict) -> None:
        """Restore the memory from a dict (``state()``'s or ``to_json()``'s form); not a merge."""
        self.restore(self.state_type.from_json(state or {}))

    def reset(self) -> None:
        """Forget everything (a new leader)."""
        self.restore(self.state_type())



def fold(strategy, steps, state=None):
    """Run a shedding strategy over ``steps`` (``(view, conf, recently_unloaded)`` each), threading the
    state: ``(results, final_state)``. ``n`` cycles of a load manager are this fold plus the manager's
    own memory (recently unloaded bundles, placements).

    >>> from engine.config import LoadBalancerConfig
    >>> from engine.shedding.avg_shedder import AvgShedder
    >>> from engine.synth import make_snapshot
    >>> from engine.view import LoadView
    >>> view = LoadView.from_load_data(make_snapshot({"a:1": dict(cpu=90), "b:1": dict(cpu=10)}))
    >>> results, state = fold(AvgShedder(), [(view, LoadBalancerConfig(), {})] * 2)
    >>> [r.reason_code for r in results], dict(state.hit_high)  # 2nd: triggered, but no traffic to move
    (['HitCount', 'Balanced'], {})
    """
    results = []
    for view, conf, recently in steps:
        res, state = strategy.run(view, conf, recently, state)
        results.append(res)
    return results, state if state is not None else strategy.state_value()


class HoldsStrategyStates:
    """What a load manager says of its strategies' memories (``self.shedding`` / ``self.placement``):
    the values the next cycle starts from, and restoring them. One object playing both roles
    (AvgShedder) is restored once, from the shedding value."""

    @property
    def shedding_state(self):
        """The shedding strategy's memory as a value (its ``state_type``), as the next cycle starts from."""
        return self.shedding.state_value()

    @property
    def placement_state(self):
        """The placement strategy's memory as a value (the shedding one's when one object plays both)."""
        return self.placement.state_value()

    def restore_states(self, shedding=None, placement=None) -> None:
        """Replace the strategies' memories by state values (or their ``to_json()`` dicts); ``None``
        leaves one as it is."""
        if shedding is not None:
            self.shedding.restore(shedding)
        if placement is not None and self.placement is not self.shedding:
            self.placement.restore(placement)
