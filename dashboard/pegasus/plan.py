"""The Pegasus page's plan: its toggles as one hashable value, and the engine's plan of a source, cached per
process (deterministic: same source + options -> same plan)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from engine.errors import InputError
from engine.pegasus import BUG_QUIRKS, PegasusConfig, load_snapshot, parse_snapshot_json, run_plan

from .sources import SAMPLES_DIR, list_samples, source_key

__all__ = ["OPTION_KEYS", "PageOptions", "plan_for"]

#: toggle values of the options checklist
OPTION_KEYS = ("cluster", "only_primary", "only_move_primary", "in_turn", "quirks")


@dataclass(frozen=True)
class PageOptions:
    """The page's toggles, hashable (a cache key)."""

    cluster: bool = False
    only_primary: bool = False
    only_move_primary: bool = False
    in_turn: bool = False
    quirks: bool = True
    seed: int | None = None

    @classmethod
    def from_inputs(cls, values, seed=None) -> "PageOptions":
        values = set(values or ())
        if seed in ("", None):
            seed = None
        else:
            try:
                seed = int(seed)
            except (TypeError, ValueError):
                raise InputError(f"seed {seed!r} is not an integer", field="seed") from None
            if seed < 0:
                raise InputError("seed must not be negative", field="seed")
        return cls("cluster" in values, "only_primary" in values, "only_move_primary" in values,
                   "in_turn" in values, "quirks" in values, seed)

    def config(self) -> PegasusConfig:
        return PegasusConfig(balance_cluster=self.cluster, only_primary_balancer=self.only_primary,
                             only_move_primary=self.only_move_primary,
                             balancer_in_turn=self.in_turn,
                             fixed_quirks=frozenset() if self.quirks else frozenset(BUG_QUIRKS))


@lru_cache(maxsize=32)
def _cached_plan(kind: str, name: str, text: str, options: PageOptions):
    if kind == "sample":
        if name not in list_samples():
            raise InputError(f"no sample named {name!r}", field="sample")
        snap = load_snapshot(SAMPLES_DIR / name)
        snap = replace(snap, source=name)          # show the name, not the server path
    else:
        snap = parse_snapshot_json(text, name)  # parsed within the nesting limit (engine.bounded)
    return run_plan(snap, options.config(), seed=options.seed)


def plan_for(source: dict, options: PageOptions):
    """The :class:`~engine.pegasus.plan.Plan` of a source store value (cached)."""
    kind, name, text = source_key(source)
    return _cached_plan(kind, name, text, options)
