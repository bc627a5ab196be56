"""The strategy registry: Pulsar names (short or fully qualified) → strategy classes.

The default strategies are chosen in exactly one place: :class:`engine.config.LoadBalancerConfig`
(``loadBalancerLoadSheddingStrategy`` / ``loadBalancerLoadPlacementStrategy``).
"""
from __future__ import annotations

from .errors import UsageError

__all__ = ["SHEDDING", "PLACEMENT", "FQN", "register_shedding", "register_placement", "shedding_name",
           "placement_name", "make_shedding", "make_placement", "fqn"]

SHEDDING: dict[str, type] = {}
PLACEMENT: dict[str, type] = {}
#: short name -> Pulsar's fully qualified class name
FQN: dict[str, str] = {}

_IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def register_shedding(cls, fqn: str | None = None) -> None:
    SHEDDING[cls.name] = cls
    FQN.setdefault(cls.name, fqn or _IMPL + cls.name)


def register_placement(cls, fqn: str | None = None, name: str | None = None) -> None:
    PLACEMENT[name or cls.name] = cls
    FQN.setdefault(name or cls.name, fqn or _IMPL + (name or cls.name))


def _resolve(name: str, table: dict, kind: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"empty {kind} strategy name")
    n = name.strip()
    if n in table:
        return n
    for k, full in FQN.items():  # exact class name first: two packages may share a simple name
        if full == n and k in table:
            return k
    short = n.rsplit(".", 1)[-1]
    if short in table and (n == short or FQN.get(short) == n or n.startswith("org.apache.pulsar.")):
        return short
    low = {k.lower(): k for k in table}
    if short.lower() in low:
        return low[short.lower()]
    raise UsageError(f"unknown {kind} strategy {name!r}; known: {', '.join(sorted(table))}")


def shedding_name(name: str) -> str:
    """Short name of a shedding strategy given its short or fully qualified name."""
    _load()
    return _resolve(name, SHEDDING, "shedding")


def placement_name(name: str) -> str:
    """Short name of a placement strategy given its short or fully qualified name."""
    _load()
    return _resolve(name, PLACEMENT, "placement")


def fqn(name: str) -> str:
    _load()
    return FQN.get(name, name)


def make_shedding(name: str, **kw):
    return SHEDDING[shedding_name(name)](**kw)


def make_placement(name: str, **kw):
    return PLACEMENT[placement_name(name)](**kw)


_loaded = False


def _load():
    global _loaded
    if _loaded:
        return
    _loaded = True
    from .placement.least_long_term_message_rate import LeastLongTermMessageRate
    from .placement.least_resource_usage_with_weight import LeastResourceUsageWithWeight
    from .placement.round_robin import RoundRobinBrokerSelector
    from .shedding.avg_shedder import AvgShedder
    from .shedding.overload_shedder import OverloadShedder
    from .shedding.threshold_shedder import ThresholdShedder
    from .shedding.uniform_load_shedder import UniformLoadShedder

    for c in (OverloadShedder, ThresholdShedder, UniformLoadShedder, AvgShedder):
        register_shedding(c)
    for c in (LeastLongTermMessageRate, LeastResourceUsageWithWeight, AvgShedder):
        register_placement(c)
    register_placement(RoundRobinBrokerSelector)
    try:  # the extensible load manager registers TransferShedder and its placement
        from . import extensible  # noqa: F401
    except ImportError:
        pass
