"""The Simulator's strategy pickers, the pairing rule, a side's sliders and its sweep grid: asked of the
strategy registry (:mod:`engine.strategies.registry`).

Nothing here names a strategy: the pickers offer the registered strategies (a plug-in module's too), the
placement a shedding strategy must run with is the registry's pairing rule, and the keys a side shows and
sweeps are the keys its strategies declare (``spec.config_keys``, ``spec.sweep_grid``).
"""
from __future__ import annotations

from engine.config import PULSAR_4_DEFAULTS, PULSAR_5_DEFAULTS
from engine.errors import UsageError
from engine.strategies import registry

from ..keys import WEIGHT_KEYS, groups_for, key_spec

__all__ = ["shedding_names", "placement_names", "allowed_placements", "default_placement", "required_placement",
           "pair_problem", "pairing_source", "shedding_options", "placement_options", "side_keys",
           "strategy_keys", "sweep_grid", "runs_extensible"]

#: the load manager whose runs carry the load std against its target (``StrategySpec.load_manager``)
EXTENSIBLE = "extensible"
#: how many sliders a side shows (the first numeric keys its shedding strategy declares)
SIDE_SLIDERS = 5


def _spec(name):
    try:
        return registry.spec(name) if name else None
    except UsageError:
        return None


def shedding_names() -> list[str]:
    """Registered shedding strategies, in registration order (Pulsar's defaults first)."""
    return [s.name for s in registry.specs(role="shedding")]


def placement_names() -> list[str]:
    """Registered placement strategies, in registration order."""
    return [s.name for s in registry.specs(role="placement")]


def allowed_placements(shed: str | None) -> list[str]:
    """The placements Pulsar runs with ``shed`` (none for an unknown name)."""
    return registry.placements_allowed(shed) if _spec(shed) is not None else []


def default_placement(shed: str | None) -> str:
    """The placement ``shed`` gets when the chosen one cannot run with it: the one it is paired with,
    else Pulsar's default placement when it runs with ``shed``, else the first that does."""
    if _spec(shed) is None:
        return ""
    allowed = allowed_placements(shed)
    pulsar = PULSAR_4_DEFAULTS.placement_strategy
    return required_placement(shed) or (pulsar if pulsar in allowed else (allowed or [""])[0])


def required_placement(shed: str | None) -> str | None:
    """The placement ``shed`` is paired with (None: any placement its load manager runs)."""
    return registry.placement_for(shed) if _spec(shed) is not None else None


def pair_problem(shed: str | None, place: str | None) -> str | None:
    """Why Pulsar refuses ``shed`` with ``place`` (None: it runs them together).

    Where we depart: Pulsar refuses to start the broker with such a pair; the page keeps going with the
    shedding strategy's default placement and says so (as the Tuner does)."""
    if place in allowed_placements(shed):
        return None
    s, p = _spec(shed), _spec(place)
    if s is not None and p is not None and "shedding" in p.roles and p.name in _same_manager(s):
        return f"{place} placement needs {place} shedding"
    return f"{place} does not run with {shed}'s load manager"


def _same_manager(s) -> set:
    return {p.name for p in registry.specs(role="placement", load_manager=s.load_manager)}


def pairing_source(shed: str, place: str) -> str:
    """Who pairs ``place`` with ``shed``, for a message: "Pulsar 5.0 does" when its defaults do."""
    if (PULSAR_5_DEFAULTS.shedding_strategy, PULSAR_5_DEFAULTS.placement_strategy) == (shed, place):
        return "Pulsar 5.0 does"
    return f"{shed} requires"


def shedding_options() -> list[dict]:
    """Options of a side's shedding picker."""
    return [{"label": n, "value": n, "title": registry.spec(n).title} for n in shedding_names()]


def placement_options(shed: str | None) -> list[dict]:
    """Options of a side's placement picker: the placements ``shed``'s load manager runs; one that is
    itself a shedding strategy (it runs only with itself) is shown disabled, saying so."""
    s = _spec(shed)
    if s is None:
        return []
    allowed = set(allowed_placements(shed))
    out = []
    for p in registry.specs(role="placement", load_manager=s.load_manager):
        if p.name in allowed:
            out.append({"label": p.name, "value": p.name, "title": p.title})
        elif "shedding" in p.roles:
            out.append({"label": f"{p.name} (needs {p.name} shedding)", "value": p.name, "disabled": True})
    return out


def _sliders(keys) -> list[str]:
    out = []
    for k in keys:
        try:
            if k not in out and key_spec(k).kind == "slider":
                out.append(k)
        except KeyError:
            continue
    return out


def side_keys(shed: str, place: str | None = None) -> list[str]:
    """The few keys a side shows as sliders: the shedding strategy's own numeric keys (its resource
    weights stay in the "other keys" text)."""
    s = _spec(shed)
    keys = s.config_keys if s is not None else ()
    return _sliders(k for k in keys if k not in WEIGHT_KEYS)[:SIDE_SLIDERS]


def strategy_keys(shed: str, place: str | None = None) -> list[str]:
    """Every numeric key the side's strategies (and their load manager) read: the Tuner's groups, then
    any key a strategy declares that they do not show."""
    place = place or default_placement(shed)
    grouped = [k for g in groups_for(shed, place) for k in g.keys]
    declared = [k for sp in (_spec(shed), _spec(place)) if sp is not None for k in sp.config_keys]
    return _sliders(grouped + declared)


def sweep_grid(shed: str | None) -> tuple:
    """The strategy's default sweep grid ``((x key, values), (y key, values))``; ``()`` when it has none."""
    s = _spec(shed)
    return s.sweep_grid if s is not None else ()


def runs_extensible(shed: str | None) -> bool:
    """True when ``shed`` runs under the Extensible Load Manager (its runs carry the load std)."""
    s = _spec(shed)
    return s is not None and s.load_manager == EXTENSIBLE
