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
# Names are imported on first use (PEP 562), so ``import engine`` — and every ``python -m engine``
# command — does not pay for what it does not use (the simulator's pandas metrics alone took 0.7 s).
_LAZY = {
    "config": ("BIGO_AVGSHEDDER", "PRESETS", "PULSAR_4_DEFAULTS", "PULSAR_5_DEFAULTS", "LoadBalancerConfig",
               "changed_keys", "key_info", "parse_broker_conf", "to_broker_conf"),
    "errors": ("InputError", "ShedlabError", "UsageError"),
    "commands": ("commands_text", "unload_commands"),
    "io": ("load_snapshot", "load_snapshot_bytes", "load_timeline", "save_snapshot"),
    "load_manager": ("ModularLoadManager", "NamespacePolicies"),
    "model": ("BrokerData", "BundleData", "LoadData", "LocalBrokerData", "NamespaceBundleStats", "ResourceUsage",
              "TimeAverageBrokerData", "TimeAverageMessageData"),
    "results": ("Cycle", "PlacementDecision", "SheddingResult", "Unload"),
    "strategies": ("make_placement", "make_shedding", "placement_name", "shedding_name"),
    "view": ("LoadView",),
    "simulator": ("compare", "load_scenario", "run_scenario"),
    "extensible": ("ExtensibleLoadManager", "derive_extensible"),
}
_WHERE = {name: mod for mod, names in _LAZY.items() for name in names}


def __getattr__(name):
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


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
