"""The Simulator's strategy pickers, the pairing rule, a side's sliders: asked of the strategy registry.

Nothing here names a strategy: the options are the registered strategies, a placement a shedding
strategy must run with comes from the registry's pairing rule, and the keys a side shows are the keys
its strategy declares.
"""
from __future__ import annotations

from ..keys import (WEIGHT_KEYS, allowed_placements, default_placement, groups_for, key_spec, placement_names,
                    shedding_names)

__all__ = ["shedding_names", "placement_names", "allowed_placements", "default_placement", "required_placement", "pair_problem", "pairing_source",
           "shedding_options", "placement_options", "side_keys", "strategy_keys", "runs_extensible"]


def required_placement(shed: str | None) -> str | None:
    """The placement ``shed`` must run with (None: any placement its load manager runs)."""
    return default_placement(shed) if default_placement(shed) == shed else None


def _needs(place: str | None) -> str | None:
    """The shedding strategy a placement only runs with (None: any of its load manager's)."""
    return next((s for s in shedding_names() if required_placement(s) == place), None)


def pair_problem(shed: str | None, place: str | None) -> str | None:
    """Why Pulsar refuses ``shed`` with ``place`` (None: it runs them together)."""
    need = _needs(place)
    if place in allowed_placements(shed) and need in (None, shed):
        return None
    if need and need != shed and runs_extensible(need) == runs_extensible(shed):
        return f"{place} placement needs {need} shedding"
    return f"{place} does not run with {shed}'s load manager"


def pairing_source(shed: str, place: str) -> str:
    """Who pairs ``place`` with ``shed``, for a message: "Pulsar 5.0 does" when its defaults do."""
    from engine.config import PULSAR_5_DEFAULTS as P5

    if (P5.shedding_strategy, P5.placement_strategy) == (shed, place):
        return "Pulsar 5.0 does"
    return f"{shed} requires"


def shedding_options() -> list[dict]:
    """Options of a side's shedding picker."""
    return [{"label": n, "value": n} for n in shedding_names()]


def placement_options(shed: str | None) -> list[dict]:
    """Options of a side's placement picker: the placements ``shed``'s load manager runs; one that only
    runs with another shedding strategy is shown disabled, naming it."""
    allowed = allowed_placements(shed)
    out = []
    for n in placement_names():
        if n not in allowed:
            continue
        opt = {"label": n, "value": n}
        need = _needs(n)
        if need and need != shed:
            opt = {"label": f"{n} (needs {need} shedding)", "value": n, "disabled": True}
        out.append(opt)
    return out


def _sliders(keys) -> list[str]:
    out = []
    for k in keys:
        try:
            if key_spec(k).kind == "slider" and k not in out:
                out.append(k)
        except KeyError:
            continue
    return out


def side_keys(shed: str, place: str | None = None) -> list[str]:
    """The few keys a side shows as sliders: the shedding strategy's numeric keys (at most five)."""
    groups = groups_for(shed, place or default_placement(shed))
    return _sliders(k for g in groups[:1] for k in g.keys if k not in WEIGHT_KEYS)[:5]


def strategy_keys(shed: str, place: str | None = None) -> list[str]:
    """Every numeric key the side's strategies (and their load manager) read."""
    return _sliders(k for g in groups_for(shed, place or default_placement(shed)) for k in g.keys)


def runs_extensible(shed: str | None) -> bool:
    """True when ``shed`` runs under the Extensible Load Manager."""
    from ..keys import uses_own_manager

    return uses_own_manager(shed)


# temporary: until the registry carries each strategy's sweep grid
_SWEEP_DEFAULTS = {
    "AvgShedder": (("loadBalancerAvgShedderLowThreshold", (5, 10, 15, 20, 25)),
                   ("loadBalancerAvgShedderHitCountLowThreshold", (2, 4, 8, 12, 16))),
    "ThresholdShedder": (("loadBalancerBrokerThresholdShedderPercentage", (5, 10, 15, 20, 25)),
                         ("loadBalancerHistoryResourcePercentage", (0.5, 0.6, 0.7, 0.8, 0.9))),
    "TransferShedder": (("loadBalancerBrokerLoadTargetStd", (0.05, 0.1, 0.15, 0.2, 0.25)),
                        ("loadBalancerSheddingConditionHitCountThreshold", (1, 2, 3, 5, 8))),
    "UniformLoadShedder": (("loadBalancerMsgRateDifferenceShedderThreshold", (10, 30, 50, 70, 90)),
                           ("maxUnloadPercentage", (0.1, 0.2, 0.3, 0.5, 0.8))),
    "OverloadShedder": (("loadBalancerBrokerOverloadedThresholdPercentage", (60, 70, 80, 85, 90)),
                        ("loadBalancerSheddingGracePeriodMinutes", (1, 5, 10, 30, 60))),
}


def sweep_grid(shed: str | None) -> tuple:
    """The strategy's default sweep grid ``((x key, values), (y key, values))``; ``()`` when it has none."""
    return _SWEEP_DEFAULTS.get(shed or "", ())
