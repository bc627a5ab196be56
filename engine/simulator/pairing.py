"""Which strategies a run may use: the shedding/placement pair, the load manager, the config a
``--strategy`` / ``--placement`` choice gives — all read from the strategy registry.

Every check is made before the run starts (and for each config event of the run), so a bad pair is
an :class:`~engine.errors.InputError` naming the key, never a failure at minute 300. The rules are
the registry's (:func:`engine.strategies.registry.placements_allowed`, ``placement_for``, each spec's
``load_manager``); no strategy is named here, so a strategy registered from a plug-in module runs in
the simulator with no edit.

Examples
--------
>>> from engine.config import LoadBalancerConfig
>>> cfg = config_with_strategy(LoadBalancerConfig(), "AvgShedder")
>>> cfg.shedding_strategy, cfg.placement_strategy
('AvgShedder', 'AvgShedder')
>>> config_with_strategy(cfg, "ThresholdShedder").placement_strategy   # Pulsar's default placement again
'LeastLongTermMessageRate'
>>> load_manager_of(config_with_strategy(cfg, "TransferShedder"))
'extensible'
"""
from __future__ import annotations

from ..config import LoadBalancerConfig
from ..errors import InputError
from ..managers import LOAD_MANAGER_CLASS, manager_kind
from ..strategies import registry
from ..strategies.spec import EXTENSIBLE, MODULAR
from .scenario_spec import Scenario

__all__ = ["check_pair", "check_config_events", "load_manager_of", "runs_extensible", "config_with_strategy"]

#: how messages name each load manager
_MANAGER_TEXT = {MODULAR: "the modular load manager", EXTENSIBLE: "the Extensible Load Manager"}


def load_manager_of(cfg: LoadBalancerConfig) -> str:
    """``"modular"`` or ``"extensible"``: the load manager that runs the config's shedding strategy
    (:func:`engine.managers.manager_kind`, the one rule; :func:`check_pair` has refused a modular
    strategy on an extensible ``loadManagerClassName`` before a run asks)."""
    return manager_kind(cfg)


def runs_extensible(cfg: LoadBalancerConfig) -> bool:
    """The shedding strategy runs in the Extensible Load Manager (False for an unknown name: the pair
    check reports that)."""
    try:
        return load_manager_of(cfg) == EXTENSIBLE
    except Exception:
        return False


def check_config_events(cfg: LoadBalancerConfig, sc: Scenario, minutes: int) -> None:
    """Config events of the run must keep a valid strategy pair and the same load manager."""
    for e in sorted((e for e in sc.events if e.kind == "config" and e.at < minutes), key=lambda e: e.at):
        new = cfg.with_values(dict(e.get("set")), source=sc.source)
        check_pair(new, sc.source)
        if runs_extensible(new) != runs_extensible(cfg):
            raise InputError("a config event cannot switch between the modular and the extensible load manager "
                             "(Pulsar needs a broker restart)", source=sc.source, field=f"events[{e.index}]")
        cfg = new


def _allowed_first(s: str) -> list:
    """The placements that run with shedding strategy ``s``, its paired placement first."""
    allowed = registry.placements_allowed(s)
    req = registry.placement_for(s)
    return ([req] if req in allowed else []) + [p for p in allowed if p != req]


def _shedding_of(kind: str) -> str:
    """The shedding strategies of load manager ``kind``, for a message (``"A or B"``)."""
    return " or ".join(x.name for x in registry.specs(role="shedding") if x.load_manager == kind)


def check_pair(cfg: LoadBalancerConfig, source) -> None:
    """Refuse a shedding/placement pair no load manager runs (:class:`~engine.errors.InputError`)."""
    try:
        s = registry.shedding_name(cfg.loadBalancerLoadSheddingStrategy)
        p = registry.placement_name(cfg.loadBalancerLoadPlacementStrategy)
    except Exception as exc:
        raise InputError(str(exc), source=source, field="config") from None
    s_spec, p_spec = registry.spec(s), registry.spec(p)
    if p not in registry.placements_allowed(s):
        if p_spec.is_shedding and p != s:
            raise InputError(f"loadBalancerLoadPlacementStrategy is {p} but loadBalancerLoadSheddingStrategy is "
                             f"{s}: Pulsar 4.x refuses to start (both must be {p})", source=source,
                             field="loadBalancerLoadPlacementStrategy")
        if s_spec.load_manager == MODULAR and not p_spec.runs_in(MODULAR):
            users = _shedding_of(p_spec.load_manager)
            raise InputError(f"{p} is a placement of {_MANAGER_TEXT[p_spec.load_manager]} but {s} runs in the "
                             f"modular load manager: use {users} with it, or a modular placement",
                             source=source, field="loadBalancerLoadPlacementStrategy")
        allowed = _allowed_first(s)
        others = f" (or {', '.join(allowed[1:])})" if len(allowed) > 1 else ""
        raise InputError(f"{s} runs in {_MANAGER_TEXT[s_spec.load_manager]}, which "
                         f"places with {allowed[0] if allowed else 'no registered placement'}{others}, not {p}",
                         source=source, field="loadBalancerLoadPlacementStrategy")
    if cfg.extensible and s_spec.load_manager != EXTENSIBLE:
        users = _shedding_of(EXTENSIBLE)
        raise InputError(f"loadManagerClassName is ExtensibleLoadManagerImpl but {s} is a modular shedding "
                         f"strategy: use {users}", source=source, field="loadManagerClassName")


def config_with_strategy(cfg: LoadBalancerConfig, strategy: str | None = None,
                         placement: str | None = None) -> LoadBalancerConfig:
    """``cfg`` with the shedding ``strategy`` and/or ``placement`` chosen, as the command line does.

    The strategy's load manager is set (``loadManagerClassName``, only when it or the config's is
    the extensible one). Unless ``placement`` is given: a strategy with a paired placement
    (``requires_placement``: AvgShedder, TransferShedder) gets it; another keeps the configured
    placement when it can run with it, else gets :func:`engine.strategies.registry.default_placement`
    (Pulsar's default placement). Where we depart from Pulsar: a broker changes nothing but the key
    it is given (and refuses to start on a bad pair); choosing one strategy here also sets the keys it
    needs to run, as an operator would.
    """
    changes = {}
    if strategy:
        s = registry.shedding_name(strategy)
        spec = registry.spec(s)
        changes["loadBalancerLoadSheddingStrategy"] = registry.fqn(s)
        if spec.load_manager == EXTENSIBLE or cfg.extensible:
            changes["loadManagerClassName"] = LOAD_MANAGER_CLASS[spec.load_manager]
        if not placement:
            req = registry.placement_for(s)
            if req is not None:
                placement = req
            else:
                try:
                    configured = registry.placement_name(cfg.loadBalancerLoadPlacementStrategy)
                except Exception:
                    configured = None  # unknown: the pair check names it
                if configured is not None and configured not in registry.placements_allowed(s):
                    placement = registry.default_placement(s)
    if placement:
        changes["loadBalancerLoadPlacementStrategy"] = registry.fqn(registry.placement_name(placement))
    if changes:
        cfg = cfg.with_values(changes)
    return cfg
