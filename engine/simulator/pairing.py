"""Which strategies a run may use: the shedding/placement pair, the load manager, the config a
``--strategy`` / ``--placement`` choice gives.

Every check is made before the run starts (and for each config event of the run), so a bad pair is
an :class:`~engine.errors.InputError` naming the key, never a failure at minute 300.
"""
from __future__ import annotations

from ..config import LoadBalancerConfig
from ..errors import InputError
from ..strategies import placement_name, shedding_name
from .scenario_spec import Scenario

__all__ = ["check_pair", "check_config_events", "runs_extensible", "config_with_strategy"]

def runs_extensible(cfg: LoadBalancerConfig) -> bool:
    """The shedding strategy runs in another load manager than the modular one (TransferShedder)."""
    from ..strategies import SHEDDING

    try:
        return bool(getattr(SHEDDING.get(shedding_name(cfg.loadBalancerLoadSheddingStrategy)),
                            "load_manager_class_name", None))
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


def placement_class(cfg: LoadBalancerConfig):
    from ..strategies import PLACEMENT

    try:
        return PLACEMENT.get(placement_name(cfg.loadBalancerLoadPlacementStrategy))
    except Exception:
        return None


def check_pair(cfg: LoadBalancerConfig, source):
    from ..strategies import PLACEMENT, SHEDDING

    try:
        s = shedding_name(cfg.loadBalancerLoadSheddingStrategy)
        p = placement_name(cfg.loadBalancerLoadPlacementStrategy)
    except Exception as exc:
        raise InputError(str(exc), source=source, field="config") from None
    if p == "AvgShedder" and s != "AvgShedder":
        raise InputError("loadBalancerLoadPlacementStrategy is AvgShedder but loadBalancerLoadSheddingStrategy is "
                         f"{s}: Pulsar 4.x refuses to start (both must be AvgShedder)", source=source,
                         field="loadBalancerLoadPlacementStrategy")
    s_ext = bool(getattr(SHEDDING.get(s), "load_manager_class_name", None))
    p_ext = bool(getattr(PLACEMENT.get(p), "extensible", False))
    if p_ext and not s_ext:
        raise InputError(f"{p} is a placement of the Extensible Load Manager but {s} runs in the modular load "
                         "manager: use TransferShedder with it, or a modular placement",
                         source=source, field="loadBalancerLoadPlacementStrategy")
    if s_ext and not p_ext and p != "RoundRobinBrokerSelector":
        raise InputError(f"{s} runs in the Extensible Load Manager, which places with "
                         f"ExtensibleLeastResourceUsageWithWeight (or RoundRobinBrokerSelector), not {p}",
                         source=source, field="loadBalancerLoadPlacementStrategy")
    if cfg.extensible and not s_ext:
        raise InputError(f"loadManagerClassName is ExtensibleLoadManagerImpl but {s} is a modular shedding "
                         "strategy: use TransferShedder", source=source, field="loadManagerClassName")




def config_with_strategy(cfg: LoadBalancerConfig, strategy: str | None = None,
                         placement: str | None = None) -> LoadBalancerConfig:
    """``cfg`` with the shedding ``strategy`` and/or ``placement`` chosen, as the command line does.

    AvgShedder shedding implies AvgShedder placement unless given; leaving AvgShedder shedding falls
    back to LeastLongTermMessageRate placement. ``TransferShedder`` also sets ``loadManagerClassName``
    to the Extensible Load Manager and, unless given or already extensible, the placement to
    ``ExtensibleLeastResourceUsageWithWeight``; a modular strategy on an extensible config sets the
    modular load manager back (and LeastLongTermMessageRate placement).
    """
    from ..strategies import SHEDDING, fqn

    changes = {}
    if strategy:
        s = shedding_name(strategy)
        changes["loadBalancerLoadSheddingStrategy"] = fqn(s)
        lm_class = getattr(SHEDDING.get(s), "load_manager_class_name", None)
        configured = placement_class(cfg)
        if lm_class:  # TransferShedder: the Extensible Load Manager and its own placement
            changes["loadManagerClassName"] = lm_class
            if not placement and not getattr(configured, "extensible", False):
                placement = SHEDDING[s].default_placement
        else:
            if cfg.extensible:  # back to the modular load manager
                changes["loadManagerClassName"] = LoadBalancerConfig().loadManagerClassName
            if not placement and s == "AvgShedder":
                placement = "AvgShedder"
            elif not placement and s != "AvgShedder" and (
                    cfg.placement_strategy == "AvgShedder" or getattr(configured, "extensible", False)):
                placement = "LeastLongTermMessageRate"
    if placement:
        changes["loadBalancerLoadPlacementStrategy"] = fqn(placement_name(placement))
    if changes:
        cfg = cfg.with_values(changes)
    return cfg
