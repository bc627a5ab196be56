"""The Extensible Load Manager (PIP-192): TransferShedder, its placement, and their inputs.

Modules, one concept each:

* :mod:`~engine.extensible.broker_load_data` — ``BrokerLoadData`` and its EMA (§8.1);
* :mod:`~engine.extensible.top_bundles` — top-K bundle reports, ``NamespaceBundleStats.compareTo`` (§8.2);
* :mod:`~engine.extensible.snapshot` — the extensible snapshot (JSON layout) and
  :func:`derive_extensible` from a modular ``LoadData``;
* :mod:`~engine.extensible.readers` — the ELM's data as operators get it (``pulsar-client consume``
  output of its load-data topics, ``{key, value}`` lines, single values), and the shape sniffing;
* :mod:`~engine.extensible.filters` — the broker filter pipeline and ``transferable`` (§8.4);
* :mod:`~engine.extensible.placement` — the extensible LeastResourceUsageWithWeight and round robin (§8.5);
* :mod:`~engine.extensible.transfer_shedder` — TransferShedder (§8.3);
* :mod:`~engine.extensible.load_manager` — :class:`ExtensibleLoadManager` (``UnloadScheduler``, ``selectAsync``);
* :mod:`~engine.extensible.sim_leader` — the simulator's leader for it (``engine.simulator.make_leader``):
  brokers' EMA every 5 s report, throttled publication, top-K every minute, transfers.

The strategy registry (:mod:`engine.strategies.registry`) finds, through the ``SPEC`` of their
modules, the shedding strategy ``TransferShedder``
(``org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder``; it runs in the
extensible load manager, :func:`engine.managers.make_manager`) and the placement strategy
``ExtensibleLeastResourceUsageWithWeight``: a distinct short name because the modular
``LeastResourceUsageWithWeight`` owns the plain one; Pulsar's fully qualified
``org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight`` resolves to it.

Examples
--------
>>> from engine.strategies import placement_name, shedding_name
>>> shedding_name("org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder")
'TransferShedder'
>>> placement_name("org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight")
'ExtensibleLeastResourceUsageWithWeight'
>>> placement_name("org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight")
'LeastResourceUsageWithWeight'
"""
from .broker_load_data import BrokerLoadData
from .filters import ExtensiblePolicies, FilterContext, transferable
from .load_manager import ExtensibleLoadManager
from .placement import EXTENSIBLE_LRUWW_FQN, ExtensibleLeastResourceUsageWithWeight, ExtensibleRoundRobin
from .snapshot import (
    EXTENSIBLE_LOAD_MANAGER,
    BrokerLookupData,
    ExtensibleLoadData,
    derive_extensible,
    extensible_config,
    extensible_from_json,
    is_extensible_json,
    load_extensible_snapshot,
    save_extensible_snapshot,
)
from .top_bundles import BundleLoadData, bundle_stats_key, compare_bundle_stats, top_k_bundles
from .transfer_shedder import TRANSFER_SHEDDER_FQN, LoadStats, TransferShedder

__all__ = [
    "BrokerLoadData", "BundleLoadData", "top_k_bundles", "bundle_stats_key", "compare_bundle_stats",
    "ExtensibleLoadData", "BrokerLookupData", "derive_extensible", "extensible_config", "extensible_from_json",
    "is_extensible_json",
    "load_extensible_snapshot", "save_extensible_snapshot", "ExtensiblePolicies", "FilterContext", "transferable",
    "ExtensibleLeastResourceUsageWithWeight", "ExtensibleRoundRobin", "TransferShedder", "LoadStats",
    "ExtensibleLoadManager", "EXTENSIBLE_LOAD_MANAGER", "EXTENSIBLE_LRUWW_FQN", "TRANSFER_SHEDDER_FQN",
]
