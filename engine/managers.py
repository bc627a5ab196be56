"""The load manager for a config and a snapshot: :func:`make_manager`, the one factory.

Which manager runs is read from the strategies' specs (:mod:`engine.strategies.registry`), never from
their names: the shedding strategy's ``load_manager`` (``"modular"`` → :class:`~engine.load_manager.
ModularLoadManager`, ``"extensible"`` → :class:`~engine.extensible.load_manager.ExtensibleLoadManager`).
A modular strategy still gets the extensible manager when ``loadManagerClassName`` names the
Extensible Load Manager or the snapshot is the extensible one's data — as on a cluster running
``ExtensibleLoadManagerImpl``, which falls back to its own unload strategy (recorded in the
manager's ``notes``).

Examples
--------
>>> from engine.config import LoadBalancerConfig
>>> from engine.samples import load_sample
>>> type(make_manager(load_sample("yahoo-japan-3-brokers"), LoadBalancerConfig())).__name__
'ModularLoadManager'
>>> cfg = LoadBalancerConfig().with_values({"loadBalancerLoadSheddingStrategy": "TransferShedder"})
>>> type(make_manager(load_sample("yahoo-japan-3-brokers"), cfg)).__name__
'ExtensibleLoadManager'
"""
from __future__ import annotations

from .config import LOAD_MANAGER_KEYS
from .strategies.spec import EXTENSIBLE, MODULAR

__all__ = ["make_manager", "manager_kind", "LOAD_MANAGER_CLASS", "LOAD_MANAGER_KEYS"]

#: ``loadManagerClassName`` of each load manager
LOAD_MANAGER_CLASS = {
    MODULAR: "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    EXTENSIBLE: "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
}


def manager_kind(config, load_data=None) -> str:
    """``"modular"`` or ``"extensible"``: the load manager that runs ``config`` on ``load_data``."""
    from .strategies import registry

    kind = registry.spec(registry.shedding_name(config.loadBalancerLoadSheddingStrategy)).load_manager
    if kind == MODULAR and (config.extensible or getattr(load_data, "extensible", False)):
        kind = EXTENSIBLE
    return kind


def make_manager(load_data, config, *, seed=None):
    """The load manager for the config's strategies over ``load_data`` (a snapshot)."""
    if manager_kind(config, load_data) == EXTENSIBLE:
        from .extensible.load_manager import ExtensibleLoadManager

        return ExtensibleLoadManager(load_data, config, seed=seed)
    from .load_manager import ModularLoadManager

    return ModularLoadManager(load_data, config, seed=seed)
