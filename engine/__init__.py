"""Shedlab's engine: what Pulsar's load manager (and Pegasus' balancer) would decide, and why.

Pure Python (stdlib, numpy, pandas, a YAML parser): no dash, plotly or pyspark.

Notebook API
------------
>>> from engine import load_snapshot, LoadBalancerConfig, ModularLoadManager   # doctest: +SKIP
>>> ld = load_snapshot("samples/snapshots/bigo-threshold-first-unload.json")     # doctest: +SKIP
>>> cfg = LoadBalancerConfig().with_values({"loadBalancerBrokerThresholdShedderPercentage": "15"})  # doctest: +SKIP
>>> lm = ModularLoadManager(ld, cfg, seed=1)                                    # doctest: +SKIP
>>> cycle = lm.do_load_shedding()                                               # doctest: +SKIP
>>> [(u.broker, u.bundle, u.destination, u.reason) for u in cycle.unloads]      # doctest: +SKIP
"""
from .config import (
    BIGO_AVGSHEDDER,
    PRESETS,
    PULSAR_4_DEFAULTS,
    PULSAR_5_DEFAULTS,
    LoadBalancerConfig,
    changed_keys,
    key_info,
    parse_broker_conf,
    to_broker_conf,
)
from .errors import InputError, ShedlabError, UsageError
from .commands import commands_text, unload_commands
from .io import load_snapshot, load_snapshot_bytes, load_timeline, save_snapshot
from .load_manager import ModularLoadManager, NamespacePolicies
from .model import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from .results import Cycle, PlacementDecision, SheddingResult, Unload
from .strategies import make_placement, make_shedding, placement_name, shedding_name
from .view import LoadView
from .simulator import compare, load_scenario, run_scenario
from .extensible import ExtensibleLoadManager, derive_extensible

__all__ = [
    "commands_text", "unload_commands",
    "LoadBalancerConfig", "PULSAR_4_DEFAULTS", "PULSAR_5_DEFAULTS", "BIGO_AVGSHEDDER", "PRESETS", "changed_keys",
    "key_info", "parse_broker_conf", "to_broker_conf", "InputError", "ShedlabError", "UsageError", "load_snapshot",
    "load_snapshot_bytes", "load_timeline", "save_snapshot", "ModularLoadManager", "NamespacePolicies", "BrokerData",
    "BundleData", "LoadData", "LocalBrokerData", "NamespaceBundleStats", "ResourceUsage", "TimeAverageBrokerData",
    "TimeAverageMessageData", "Cycle", "PlacementDecision", "SheddingResult", "Unload", "make_placement",
    "make_shedding", "placement_name", "shedding_name", "LoadView", "run_scenario", "compare", "load_scenario",
    "ExtensibleLoadManager", "derive_extensible",
]
# Sub-packages with their own APIs: engine.bundles (topic hashing, splits), engine.pegasus (Pegasus balancer).
