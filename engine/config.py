"""The load-balancer configuration: one frozen dataclass whose fields are Pulsar's ``broker.conf``
keys, with Pulsar 4.x defaults, units and one-line docs.

A config is immutable and hashable (a natural cache key); change it with
:func:`dataclasses.replace` or :meth:`LoadBalancerConfig.with_values` (which parses strings the way
``broker.conf`` values are written). :func:`parse_broker_conf` reads ``broker.conf`` text (unknown
keys are kept and ignored, bad values are rejected naming the key) and :func:`to_broker_conf`
writes the changed keys back as ``broker.conf`` lines.

Examples
--------
>>> cfg = LoadBalancerConfig()
>>> cfg.loadBalancerBrokerOverloadedThresholdPercentage, cfg.maxUnloadPercentage
(85, 0.2)
>>> cfg5 = PULSAR_5_DEFAULTS
>>> cfg5.shedding_strategy, cfg5.placement_strategy
('AvgShedder', 'AvgShedder')
>>> c = cfg.with_values({"loadBalancerBandwithInResourceWeight": "3"})
>>> c.bandwidth_in_weight
3.0
>>> to_broker_conf(c)
'loadBalancerBandwithInResourceWeight=3.0\\n'

Notes
-----
Bandwidth weights follow PIP-357: the correctly spelled ``loadBalancerBandwidthIn/OutResourceWeight``
wins when it is not 1.0, else the deprecated ``loadBalancerBandwithIn/Out...`` spelling when it is not
1.0, else 1.0 (see :attr:`LoadBalancerConfig.bandwidth_in_weight`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .errors import InputError
from .release_lines import DEFAULT_VERSION, LINE_DEFAULTS, Release, release

__all__ = [
    "LoadBalancerConfig",
    "LOAD_MANAGER_KEYS",
    "PULSAR_4_DEFAULTS",
    "PULSAR_5_DEFAULTS",
    "BIGO_AVGSHEDDER",
    "PRESETS",
    "BROKER_CONF_KEYS",
    "ParsedBrokerConf",
    "parse_broker_conf",
    "to_broker_conf",
    "changed_keys",
    "release_defaults",
    "key_info",
    "short_class_name",
    "IMPL",
    "ConfigKey",
    "declare_keys",
    "forget_keys",
    "declared_keys",
    "is_key",
    "key_names",
]

IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def _k(default, unit: str, doc: str, *, dyn: bool = True, lo=None, hi=None, step=None, since=None):
    """A config key: default, unit, doc, whether dynamic, slider range (lo, hi, step)."""
    meta = {"unit": unit, "doc": doc, "dynamic": dyn, "lo": lo, "hi": hi, "step": step}
    if since:
        meta["since"] = since
    if isinstance(default, (set, frozenset, list, tuple)):
        return field(default=frozenset(default) if not isinstance(default, tuple) else default, metadata=meta)
    return field(default=default, metadata=meta)


#: values of a configuration computed once when first read (kept out of its pickles)
_DERIVED = ("weights", "excluded_namespaces")


@dataclass(frozen=True)
class LoadBalancerConfig:
    """Every load-balancer key of Pulsar's ``ServiceConfiguration`` (4.x defaults).

    Field names are exactly the ``broker.conf`` keys. Field metadata: ``unit``, ``doc``, ``dynamic``
    and a slider range ``lo``/``hi``/``step`` for the dashboard.
    """

    # --- the release decided as (Shedlab's; not a broker.conf key) ----------------------------
    pulsarVersion: str = field(default=DEFAULT_VERSION, metadata={
        "unit": "version", "dynamic": False, "lo": None, "hi": None, "step": None, "shedlab": True,
        "doc": "The Pulsar release decided as (X.Y or X.Y.Z; X.Y is the line's latest patch): its load "
               "balancer's behaviour, see engine.releases. Not a broker.conf key."})

    # --- wiring ----------------------------------------------------------------------------
    loadManagerClassName: str = _k(
        "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl", "class",
        "Load manager implementation (modular or extensible).")
    loadBalancerEnabled: bool = _k(True, "bool", "Enable the load balancer.", dyn=False)
    loadBalancerSheddingEnabled: bool = _k(True, "bool", "Enable periodic load shedding (leader).")
    loadBalancerSheddingIntervalMinutes: int = _k(1, "min", "Period of the shedding task.", lo=1, hi=30, step=1)
    loadBalancerSheddingGracePeriodMinutes: int = _k(
        30, "min", "A bundle unloaded less than this long ago is not shed again.", lo=0, hi=120, step=1)
    loadBalancerLoadSheddingStrategy: str = _k(
        IMPL + "ThresholdShedder", "class", "Shedding strategy (needs restart to change).")
    loadBalancerLoadPlacementStrategy: str = _k(
        IMPL + "LeastLongTermMessageRate", "class", "Placement strategy for new and unloaded bundles.", dyn=False)
    lowerBoundarySheddingEnabled: bool = _k(
        False, "bool", "ThresholdShedder also sheds from the hottest broker when one is below avg - threshold.",
        dyn=False)

    # --- reporting cadence -------------------------------------------------------------------
    loadBalancerReportUpdateThresholdPercentage: int = _k(
        10, "%", "A broker rewrites its load report when a value changes by more than this.", lo=0, hi=100, step=1)
    loadBalancerReportUpdateMinIntervalMillis: int = _k(5000, "ms", "Load-report generation tick.", lo=1000, hi=60000)
    loadBalancerReportUpdateMaxIntervalMinutes: int = _k(15, "min", "Force a report write after this long.", lo=1, hi=60)
    loadBalancerHostUsageCheckIntervalMinutes: int = _k(1, "min", "Host usage sampling period.", lo=1, hi=10)
    loadBalancerResourceQuotaUpdateIntervalMinutes: int = _k(
        15, "min", "Leader writes bundle data / time averages to the store this often.", dyn=False, lo=1, hi=60)

    # --- placement filters -------------------------------------------------------------------
    loadBalancerDistributeBundlesEvenlyEnabled: bool = _k(
        True, "bool", "Keep only brokers with the fewest bundles of the namespace as candidates.")
    loadBalancerBrokerMaxTopics: int = _k(
        50000, "topics", "Brokers above this many topics are dropped from placement candidates.",
        lo=0, hi=200000, step=1000)

    # --- thresholds -------------------------------------------------------------------------
    loadBalancerBrokerOverloadedThresholdPercentage: int = _k(
        85, "%", "Overload line: OverloadShedder (>=), LeastLongTermMessageRate and the selectBroker retry (>).",
        lo=0, hi=100, step=1)
    loadBalancerBrokerThresholdShedderPercentage: int = _k(
        10, "%", "ThresholdShedder sheds brokers above average + this.", lo=0, hi=100, step=1)
    loadBalancerHistoryResourcePercentage: float = _k(
        0.9, "ratio", "Weight of history in ThresholdShedder / LeastResourceUsageWithWeight / BrokerLoadData EMA.",
        lo=0.0, hi=1.0, step=0.05)
    loadBalancerBundleUnloadMinThroughputThreshold: float = _k(
        10.0, "MB/s", "ThresholdShedder does not shed a broker whose amount to move is below this.",
        lo=0.0, hi=100.0, step=1.0)
    loadBalancerAverageResourceUsageDifferenceThresholdPercentage: int = _k(
        10, "%", "LeastResourceUsageWithWeight: candidates must be this far below the average.",
        lo=0, hi=100, step=1)

    # --- resource weights -------------------------------------------------------------------
    loadBalancerCPUResourceWeight: float = _k(1.0, "weight", "Weight of CPU usage.", lo=0.0, hi=5.0, step=0.1)
    loadBalancerMemoryResourceWeight: float = _k(
        0.0, "weight", "Weight of heap memory (deprecated; used only by the extensible load manager).",
        lo=0.0, hi=5.0, step=0.1)
    loadBalancerDirectMemoryResourceWeight: float = _k(
        0.0, "weight", "Weight of direct memory usage.", lo=0.0, hi=5.0, step=0.1)
    loadBalancerBandwidthInResourceWeight: float = _k(
        1.0, "weight", "Weight of inbound NIC usage (PIP-357 spelling).", lo=0.0, hi=5.0, step=0.1)
    loadBalancerBandwidthOutResourceWeight: float = _k(
        1.0, "weight", "Weight of outbound NIC usage (PIP-357 spelling).", lo=0.0, hi=5.0, step=0.1)
    loadBalancerBandwithInResourceWeight: float = _k(
        1.0, "weight", "Deprecated typo spelling of the inbound bandwidth weight.", lo=0.0, hi=5.0, step=0.1)
    loadBalancerBandwithOutResourceWeight: float = _k(
        1.0, "weight", "Deprecated typo spelling of the outbound bandwidth weight.", lo=0.0, hi=5.0, step=0.1)

    # --- UniformLoadShedder -----------------------------------------------------------------
    loadBalancerMsgRateDifferenceShedderThreshold: float = _k(
        50.0, "%", "UniformLoadShedder: shed when (max - min) msg rate exceeds this % of the min.",
        lo=0.0, hi=500.0, step=5.0)
    loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold: float = _k(
        4.0, "x", "UniformLoadShedder: shed when max throughput exceeds this multiple of the min.",
        lo=0.0, hi=20.0, step=0.5)
    minUnloadMessage: int = _k(1000, "msg/s", "Uniform/AvgShedder: minimum msg rate worth moving.",
                               lo=0, hi=100000, step=100)
    minUnloadMessageThroughput: int = _k(
        1048576, "B/s", "Uniform/AvgShedder: minimum throughput worth moving.", lo=0, hi=104857600, step=1048576)
    maxUnloadPercentage: float = _k(
        0.2, "ratio", "Uniform/AvgShedder: fraction of the max-min difference to move.", lo=0.0, hi=1.0, step=0.05)
    maxUnloadBundleNumPerShedding: int = _k(
        -1, "bundles", "UniformLoadShedder: at most this many bundles per cycle (-1 = unlimited).",
        lo=-1, hi=100, step=1)

    # --- AvgShedder -------------------------------------------------------------------------
    loadBalancerAvgShedderLowThreshold: float = _k(
        15.0, "points", "AvgShedder: a pair whose score gap is at least this counts a low hit.", lo=0.0, hi=100.0, step=1.0)
    loadBalancerAvgShedderHighThreshold: float = _k(
        40.0, "points", "AvgShedder: a pair whose score gap is at least this counts a high hit.", lo=0.0, hi=100.0, step=1.0)
    loadBalancerAvgShedderHitCountLowThreshold: int = _k(
        8, "hits", "AvgShedder: consecutive low hits needed to shed.", lo=1, hi=30, step=1)
    loadBalancerAvgShedderHitCountHighThreshold: int = _k(
        2, "hits", "AvgShedder: consecutive high hits needed to shed.", lo=1, hi=30, step=1)

    loadBalancerSheddingExcludedNamespaces: frozenset = _k(
        frozenset(), "namespaces", "Namespaces never shed; placed by round robin (PIP-380).")
    loadBalancerMaxNumberOfBundlesInBundleLoadReport: int = _k(
        10, "bundles", "Top-K bundles per broker in bundle load reports (K per broker).", lo=0, hi=100)

    # --- bundle split -----------------------------------------------------------------------
    loadBalancerAutoBundleSplitEnabled: bool = _k(True, "bool", "Split hot bundles automatically.")
    loadBalancerAutoUnloadSplitBundlesEnabled: bool = _k(True, "bool", "Unload the children of a split right away.")
    loadBalancerNamespaceBundleMaxTopics: int = _k(1000, "topics", "Split a bundle above this many topics.",
                                                   lo=0, hi=10000, step=50)
    loadBalancerNamespaceBundleMaxSessions: int = _k(
        1000, "sessions", "Split a bundle above this many producers+consumers (<=0 disables).", lo=0, hi=10000, step=50)
    loadBalancerNamespaceBundleMaxMsgRate: int = _k(30000, "msg/s", "Split a bundle above this long-term msg rate.",
                                                    lo=0, hi=200000, step=1000)
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = _k(
        100, "MB/s", "Split a bundle above this long-term throughput.", lo=0, hi=1000, step=10)
    loadBalancerNamespaceMaximumBundles: int = _k(128, "bundles", "No split beyond this many bundles per namespace.",
                                                  lo=1, hi=4096, step=1)
    defaultNumberOfNamespaceBundles: int = _k(4, "bundles", "Bundles of a new namespace.", lo=1, hi=4096, step=1)
    defaultNumberOfSystemNamespaceBundles: int = _k(
        64, "bundles", "Bundles of a new system namespace (Pulsar 5.0 key; unused by 4.x).", lo=1, hi=4096, since="5.0")
    defaultNamespaceBundleSplitAlgorithm: str = _k("range_equally_divide", "name", "Bundle split algorithm.")
    supportedNamespaceBundleSplitAlgorithms: tuple = _k(
        ("range_equally_divide", "topic_count_equally_divide", "specified_positions_divide",
         "flow_or_qps_equally_divide"), "names", "Split algorithms an admin may request.")
    flowOrQpsDifferenceThresholdPercentage: int = _k(
        10, "%", "flow_or_qps_equally_divide: tolerance above the max rate/bandwidth.", lo=0, hi=100)
    topicBundleAssignmentStrategy: str = _k(
        "org.apache.pulsar.common.naming.ConsistentHashingTopicBundleAssigner", "class", "Topic -> bundle hashing.",
        dyn=False)
    failureDomainsEnabled: bool = _k(False, "bool", "Anti-affinity counts per failure domain.")
    preferLaterVersions: bool = _k(False, "bool", "Place only on brokers reporting the highest version.", dyn=False)
    exposeBundlesMetricsInPrometheus: bool = _k(False, "bool", "Export pulsar_bundle_* metrics.", dyn=False)
    loadBalancerOverrideBrokerNicSpeedGbps: Any = _k(
        None, "Gbps", "Override a misreported NIC speed (empty = use the reported speed).", dyn=False)

    # --- extensible load manager (TransferShedder) -------------------------------------------
    loadBalancerBrokerLoadTargetStd: float = _k(
        0.25, "ratio", "TransferShedder: target standard deviation of broker load.", lo=0.0, hi=1.0, step=0.01)
    loadBalancerSheddingConditionHitCountThreshold: int = _k(
        3, "hits", "TransferShedder: consecutive hits (more than this) before shedding.", lo=0, hi=30, step=1)
    loadBalancerTransferEnabled: bool = _k(True, "bool", "TransferShedder: transfer to a chosen broker (swaps).")
    loadBalancerMaxNumberOfBrokerSheddingPerCycle: int = _k(
        3, "brokers", "TransferShedder: at most this many brokers shed per cycle.", lo=1, hi=50, step=1)
    loadBalanceSheddingDelayInSeconds: int = _k(
        180, "s", "TransferShedder: cool-down after a broker was unloaded.", lo=0, hi=3600, step=10)
    loadBalancerBrokerLoadDataTTLInSeconds: int = _k(
        1800, "s", "TransferShedder: ignore broker load data older than this.", lo=60, hi=7200, step=60)
    loadBalancerSheddingBundlesWithPoliciesEnabled: bool = _k(
        False, "bool", "TransferShedder: also shed bundles with isolation / anti-affinity policies.")
    loadBalancerDebugModeEnabled: bool = _k(
        False, "bool", "Debug logging (TransferShedder also counts swapped-in traffic only in debug mode).")
    loadBalancerSplitIntervalMinutes: int = _k(1, "min", "Extensible split task period.", dyn=False)
    loadBalancerMaxNumberOfBundlesToSplitPerCycle: int = _k(10, "bundles", "Extensible: splits per cycle.")
    loadBalancerNamespaceBundleSplitConditionHitCountThreshold: int = _k(
        3, "hits", "Extensible: consecutive hits before a split.")

    # --- keys a strategy module declares (ConfigKey in its spec; the registry declares them) -
    declared: tuple = field(default=(), metadata={"declared": True, "unit": "", "doc": "(key, value) pairs of the "
                                                  "keys strategy modules declare, set away from their default"})

    def __getattr__(self, name):
        """A key a strategy module declared (:func:`declare_keys`) reads like a field: its value, else its
        default. Only reached for names that are not fields."""
        decl = _DECLARED.get(name)
        if decl is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!s} has no key {name!r}")
        return dict(object.__getattribute__(self, "declared")).get(name, decl.default)

    def __post_init__(self):
        try:
            object.__setattr__(self, "pulsarVersion", release(self.pulsarVersion).version)
        except InputError as exc:
            raise InputError(str(exc), field="pulsarVersion") from None
        for f in fields(self):
            v = getattr(self, f.name)
            try:
                object.__setattr__(self, f.name, _coerce(f, v))
            except (TypeError, ValueError) as exc:
                raise InputError(str(exc), field=f.name) from None
        object.__setattr__(self, "declared", _declared_values(self.declared))
        _validate(self)

    # ---------------------------------------------------------------- derived values
    @property
    def release(self) -> Release:
        """The :class:`~engine.release_lines.Release` decided as (``pulsarVersion``)."""
        return release(self.pulsarVersion)

    def has(self, behaviour: str) -> bool:
        """Whether the release decided as has ``behaviour`` (:data:`engine.releases.BEHAVIOURS`)."""
        return release(self.pulsarVersion).has(behaviour)

    def __getstate__(self):
        """The fields only (the derived values computed once are left out of pickles and copies)."""
        d = dict(self.__dict__)
        for k in _DERIVED:
            d.pop(k, None)
        return d

    @functools.cached_property  # every placement reads it: computed once per (immutable) configuration
    def excluded_namespaces(self) -> frozenset:
        """``loadBalancerSheddingExcludedNamespaces`` as the release reads it: empty before the key
        existed (PIP-380: 4.0.11, 4.1.0)."""
        return self.loadBalancerSheddingExcludedNamespaces if self.has("excluded_namespaces") else frozenset()

    @property
    def bandwidth_in_weight(self) -> float:
        """PIP-357 getter: the new key if != 1.0, else the typo key if != 1.0, else 1.0. Releases before
        4.0 read only the typo key (the new spelling does not exist there)."""
        if not self.has("pip357_keys"):
            return self.loadBalancerBandwithInResourceWeight
        if self.loadBalancerBandwidthInResourceWeight != 1.0:
            return self.loadBalancerBandwidthInResourceWeight
        if self.loadBalancerBandwithInResourceWeight != 1.0:
            return self.loadBalancerBandwithInResourceWeight
        return 1.0

    @property
    def bandwidth_out_weight(self) -> float:
        """PIP-357 getter for the outbound bandwidth weight (see :attr:`bandwidth_in_weight`)."""
        if not self.has("pip357_keys"):
            return self.loadBalancerBandwithOutResourceWeight
        if self.loadBalancerBandwidthOutResourceWeight != 1.0:
            return self.loadBalancerBandwidthOutResourceWeight
        if self.loadBalancerBandwithOutResourceWeight != 1.0:
            return self.loadBalancerBandwithOutResourceWeight
        return 1.0

    @functools.cached_property  # every placement reads it: computed once per (immutable) configuration
    def weights(self) -> tuple[float, float, float, float]:
        """``(cpu, directMemory, bandwidthIn, bandwidthOut)`` weights of the modular load manager."""
        return (self.loadBalancerCPUResourceWeight, self.loadBalancerDirectMemoryResourceWeight,
                self.bandwidth_in_weight, self.bandwidth_out_weight)

    @property
    def shedding_strategy(self) -> str:
        """Short class name of ``loadBalancerLoadSheddingStrategy``."""
        return short_class_name(self.loadBalancerLoadSheddingStrategy)

    @property
    def placement_strategy(self) -> str:
        """Short class name of ``loadBalancerLoadPlacementStrategy``."""
        return short_class_name(self.loadBalancerLoadPlacementStrategy)

    @property
    def overload_threshold(self) -> float:
        """``loadBalancerBrokerOverloadedThresholdPercentage / 100`` as a fraction."""
        return self.loadBalancerBrokerOverloadedThresholdPercentage / 100.0

    @property
    def extensible(self) -> bool:
        """True when ``loadManagerClassName`` names the Extensible Load Manager."""
        return "ExtensibleLoadManagerImpl" in self.loadManagerClassName

    # ---------------------------------------------------------------- updates
    def with_values(self, values: Mapping[str, Any], source: str | None = None) -> "LoadBalancerConfig":
        """A copy with ``values`` applied; string values are parsed like ``broker.conf`` values.

        Unknown keys raise :class:`InputError` naming the key (use :func:`parse_broker_conf` to keep
        unknown keys of a whole file).
        """
        known = {**{f.name: f for f in _key_fields()}, **_DECLARED}
        changes = {}
        for k, v in values.items():
            if k not in known:
                raise InputError(f"unknown load-balancer key {k!r}", source=source, field=k)
            try:
                changes[k] = _parse_value(known[k], v) if isinstance(v, str) else v
            except (TypeError, ValueError) as exc:
                raise InputError(str(exc), source=source, field=k) from None
        declared = {k: changes.pop(k) for k in list(changes) if k in _DECLARED}
        if declared:
            changes["declared"] = tuple({**dict(self.declared), **declared}.items())
        try:
            return dataclasses.replace(self, **changes)
        except InputError as exc:
            raise exc.with_source(source) if source else exc

    def on_release(self, version: str | None) -> "LoadBalancerConfig":
        """The same settings decided as another release: every key changed from this config's release
        defaults keeps its value; the others take ``version``'s defaults."""
        base = release_defaults(version)
        if base.pulsarVersion == self.pulsarVersion:
            return self
        mine = {k: new for k, (_old, new) in changed_keys(self).items() if k != "pulsarVersion"}
        return dataclasses.replace(base, **mine) if mine else base

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict of every key (sets as sorted lists)."""
        out = {}
        for f in _key_fields():
            v = getattr(self, f.name)
            if isinstance(v, (frozenset, tuple)):
                v = sorted(v) if isinstance(v, frozenset) else list(v)
            out[f.name] = v
        for k in _DECLARED:
            out[k] = getattr(self, k)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | None = None) -> "LoadBalancerConfig":
        """Inverse of :meth:`to_dict` (unknown keys rejected)."""
        return cls().with_values(dict(data), source=source)


# -------------------------------------------------------------------- parsing and validation
_BOOL = {"true": True, "false": False}


def _base_type(f):
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return t


def _coerce(f, v):
    t = _base_type(f)
    if t == "bool":
        if isinstance(v, bool):
            return v
        raise TypeError(f"expected true or false, got {v!r}")
    if t == "int":
        if isinstance(v, bool):
            raise TypeError(f"expected an integer, got {v!r}")
        if isinstance(v, int):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise TypeError(f"expected an integer, got {v!r}")
    if t == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"expected a number, got {v!r}")
        v = float(v)
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"expected a finite number, got {v!r}")
        return v
    if t == "str":
        if not isinstance(v, str):
            raise TypeError(f"expected text, got {v!r}")
        return v
    if t == "frozenset":
        if isinstance(v, str):
            v = [x.strip() for x in v.split(",") if x.strip()]
        return frozenset(v)
    if t == "tuple":
        if isinstance(v, str):
            v = [x.strip() for x in v.split(",") if x.strip()]
        return tuple(v)
    if t == "Any":  # optional number
        if v is None or v == "":
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"expected a number or empty, got {v!r}")
        return float(v)
    return v


def _parse_value(f, text: str):
    """Parse a ``broker.conf`` value string for field ``f``."""
    s = text.strip()
    t = _base_type(f)
    if t == "bool":
        if s.lower() not in _BOOL:
            raise ValueError(f"expected true or false, got {text!r}")
        return _BOOL[s.lower()]
    if t == "int":
        try:
            return int(s)
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
    if t == "float":
        try:
            v = float(s)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
        if math.isnan(v) or math.isinf(v):
            raise ValueError(f"expected a finite number, got {text!r}")
        return v
    if t == "Any":
        if s == "":
            return None
        try:
            return float(s)
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
    if t in ("frozenset", "tuple"):
        return s
    return s


def _validate(c: LoadBalancerConfig) -> None:
    def bad(key, msg):
        raise InputError(msg, field=key)

    nonneg = [
        "loadBalancerCPUResourceWeight", "loadBalancerMemoryResourceWeight", "loadBalancerDirectMemoryResourceWeight",
        "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight",
        "loadBalancerBandwithInResourceWeight", "loadBalancerBandwithOutResourceWeight",
        "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerBrokerThresholdShedderPercentage",
        "loadBalancerBundleUnloadMinThroughputThreshold", "loadBalancerSheddingGracePeriodMinutes",
        "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold", "minUnloadMessage",
        "minUnloadMessageThroughput", "loadBalancerBrokerMaxTopics", "loadBalancerBrokerLoadTargetStd",
        "loadBalanceSheddingDelayInSeconds", "loadBalancerReportUpdateThresholdPercentage",
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
    ]
    for k in nonneg:
        if getattr(c, k) < 0:
            bad(k, f"must be >= 0, got {getattr(c, k)}")
    if not 0.0 <= c.loadBalancerHistoryResourcePercentage <= 1.0:
        bad("loadBalancerHistoryResourcePercentage", "must be between 0 and 1")
    if not 0.0 <= c.maxUnloadPercentage <= 1.0:
        bad("maxUnloadPercentage", "must be between 0 and 1")
    for k in ("loadBalancerSheddingIntervalMinutes", "loadBalancerReportUpdateMaxIntervalMinutes",
              "defaultNumberOfNamespaceBundles", "loadBalancerNamespaceMaximumBundles"):
        if getattr(c, k) < 1:
            bad(k, f"must be >= 1, got {getattr(c, k)}")
    if c.loadBalancerAvgShedderHitCountLowThreshold < 0 or c.loadBalancerAvgShedderHitCountHighThreshold < 0:
        bad("loadBalancerAvgShedderHitCountLowThreshold", "hit counts must be >= 0")
    if c.loadBalancerOverrideBrokerNicSpeedGbps is not None and c.loadBalancerOverrideBrokerNicSpeedGbps <= 0:
        bad("loadBalancerOverrideBrokerNicSpeedGbps", "must be > 0 or empty")


# -------------------------------------------------------------------- keys strategy modules declare
@dataclass(frozen=True)
class ConfigKey:
    """A ``broker.conf`` key a strategy module adds (Pulsar's name and default), declared in the strategy's
    spec (``StrategySpec(new_keys=(ConfigKey(...),))``): the registry declares it when the spec registers,
    and from then on the config reads, parses and writes it like a field, and the Tuner shows its slider.

    ``default`` decides the type (bool, int, float or str); ``lo``/``hi``/``step`` are the slider range."""

    name: str
    default: Any
    unit: str
    doc: str
    lo: Any = None
    hi: Any = None
    step: Any = None
    dynamic: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.]{0,199}", self.name):
            raise InputError(f"a config key needs a broker.conf name, got {self.name!r}")
        if type(self.default) not in (bool, int, float, str):
            raise InputError(f"config key {self.name}: the default must be a bool, int, float or str, "
                             f"got {self.default!r}")
        if not isinstance(self.doc, str) or not self.doc or not isinstance(self.unit, str):
            raise InputError(f"config key {self.name}: unit and doc must be text, doc not empty")

    @property
    def type(self) -> str:
        return type(self.default).__name__

    def info(self) -> dict[str, Any]:
        """What :func:`key_info` says of it."""
        return {"unit": self.unit, "doc": self.doc, "dynamic": self.dynamic, "lo": self.lo, "hi": self.hi,
                "step": self.step, "key": self.name, "default": self.default, "type": self.type}


#: key name -> its declaration (filled by :func:`declare_keys`, which the strategy registry calls)
_DECLARED: dict[str, ConfigKey] = {}


def _key_fields():
    """The fields that are ``broker.conf`` keys (all but the declared keys' values)."""
    return [f for f in fields(LoadBalancerConfig) if not f.metadata.get("declared")]


def key_names() -> list[str]:
    """Every key the config knows: its fields' ``broker.conf`` keys, then the declared keys."""
    return [f.name for f in _key_fields()] + list(_DECLARED)


def is_key(name: str) -> bool:
    """Whether ``name`` is a key the config knows (a field or a declared key)."""
    return name in _DECLARED or any(f.name == name for f in _key_fields())


def declared_keys() -> dict[str, ConfigKey]:
    """The keys strategy modules declared, by name."""
    return dict(_DECLARED)


def declare_keys(keys) -> None:
    """Make ``keys`` (:class:`ConfigKey`) keys of the config. A name that is already a field, or declared
    otherwise, is an :class:`InputError`; declaring the same key again is a no-op."""
    keys = tuple(keys)
    for k in keys:
        if not isinstance(k, ConfigKey):
            raise InputError(f"a declared key must be a ConfigKey, got {type(k).__name__}")
        if any(f.name == k.name for f in fields(LoadBalancerConfig)):
            raise InputError(f"config key {k.name} is already a key of the config: declare only new keys")
        if _DECLARED.get(k.name, k) != k:
            raise InputError(f"config key {k.name} is already declared, with another default, unit, doc or range")
    _DECLARED.update((k.name, k) for k in keys)


def forget_keys(names) -> None:
    """Drop declared keys (a plug-in strategy unregistered)."""
    for n in names:
        _DECLARED.pop(n, None)


def _declared_values(pairs) -> tuple:
    """The ``declared`` field's value: declared keys only, values of the key's type, defaults dropped, sorted."""
    out = {}
    for item in pairs:
        try:
            k, v = item
        except (TypeError, ValueError):
            raise InputError(f"declared key values must be (key, value) pairs, got {item!r}") from None
        decl = _DECLARED.get(k)
        if decl is None:
            raise InputError(f"unknown load-balancer key {k!r}", field=str(k))
        try:
            v = _coerce(decl, v)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), field=k) from None
        if v != decl.default:
            out[k] = v
    return tuple(sorted(out.items()))


def short_class_name(name: str) -> str:
    """``org.apache.pulsar.broker.loadbalance.impl.AvgShedder`` → ``AvgShedder``."""
    return name.strip().rsplit(".", 1)[-1]


def key_info(key: str) -> dict[str, Any]:
    """Default, unit, doc, dynamic flag and slider range of one key (a field, or a key a strategy module
    declared)."""
    if key in _DECLARED:
        return _DECLARED[key].info()
    for f in _key_fields():
        if f.name == key:
            d = dict(f.metadata)
            d["key"] = key
            d["default"] = getattr(PULSAR_4_DEFAULTS, key)
            d["type"] = _base_type(f)
            return d
    raise KeyError(key)


# -------------------------------------------------------------------- broker.conf text
@dataclass(frozen=True)
class ParsedBrokerConf:
    """Result of :func:`parse_broker_conf`: the config, and the keys Shedlab does not model."""

    config: LoadBalancerConfig
    unknown: tuple = ()  # ((key, value), ...) kept in file order and ignored
    applied: tuple = ()  # keys of the file that changed the config


_LINE = re.compile(r"^\s*([^=:\s]+)\s*[=:\s]\s*(.*?)\s*$")


def _logical_lines(text: str):
    buf = ""
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not buf and line.lstrip().startswith(("#", "!")):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += line[:-1].lstrip() if buf else line[:-1]
            continue
        buf += line.lstrip() if buf else line
        if buf.strip():
            yield buf
        buf = ""
    if buf.strip():
        yield buf


def parse_broker_conf(text: str, base: LoadBalancerConfig | None = None,
                      source: str | None = None) -> ParsedBrokerConf:
    """Read ``broker.conf`` (Java properties) text into a config.

    Keys Shedlab models are applied over ``base`` (defaults if omitted); blank values keep the
    default, as Pulsar does; unknown keys are kept in ``unknown`` and ignored; a bad value raises
    :class:`InputError` naming the file and key.
    """
    if not isinstance(text, str):
        raise InputError("broker.conf must be text", source=source)
    base = base or LoadBalancerConfig()
    known = {f.name for f in _key_fields() if not f.metadata.get("shedlab")} | set(_DECLARED)
    values: dict[str, str] = {}
    unknown = []
    for lineno, line in enumerate(_logical_lines(text), 1):
        m = _LINE.match(line)
        if not m:
            key, val = line.strip(), ""
        else:
            key, val = m.group(1), m.group(2)
        if key in known:
            if val.strip() == "":
                continue  # Pulsar leaves blank values at their default
            values[key] = val
        else:
            unknown.append((key, val))
    cfg = base.with_values(values, source=source)
    return ParsedBrokerConf(cfg, tuple(unknown), tuple(values))


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, frozenset):
        return ",".join(sorted(v))
    if isinstance(v, tuple):
        return ",".join(v)
    return str(v)


def changed_keys(cfg: LoadBalancerConfig, base: LoadBalancerConfig | None = None) -> dict[str, tuple]:
    """``{key: (base value, new value)}`` for every key that differs from ``base`` — by default the
    defaults of ``cfg``'s own release (:func:`release_defaults`); ``pulsarVersion`` is among them only when
    ``base`` is another release."""
    base = base or release_defaults(cfg.pulsarVersion)
    return {k: (getattr(base, k), getattr(cfg, k)) for k in key_names() if getattr(base, k) != getattr(cfg, k)}


def release_defaults(version: str | None = None) -> LoadBalancerConfig:
    """The defaults of ``version``'s release line, with ``pulsarVersion`` set to it (also
    :func:`engine.releases.defaults_for`)."""
    v = release(version).version if version else DEFAULT_VERSION
    return LoadBalancerConfig(pulsarVersion=v, **LINE_DEFAULTS[release(v).line])


def to_broker_conf(cfg: LoadBalancerConfig, base: LoadBalancerConfig | None = None,
                   comments: bool = False) -> str:
    """The ``broker.conf`` lines of every key that differs from ``base`` (the defaults of ``cfg``'s release)."""
    out = []
    for k, (old, new) in changed_keys(cfg, base).items():
        if k in SHEDLAB_FIELDS:
            continue  # Shedlab's own fields (the release) are no broker.conf lines
        if comments:
            out.append(f"# {key_info(k)['doc']} (default {_fmt(old)})")
        out.append(f"{k}={_fmt(new)}")
    return "\n".join(out) + ("\n" if out else "")


#: the fields that are Shedlab's own, not ``broker.conf`` keys (the release decided as)
SHEDLAB_FIELDS = frozenset(f.name for f in fields(LoadBalancerConfig) if f.metadata.get("shedlab"))
#: the fields that are ``broker.conf`` keys (strategy modules may declare more: :func:`key_names`)
BROKER_CONF_KEYS = frozenset(f.name for f in _key_fields() if f.name not in SHEDLAB_FIELDS)

PULSAR_4_DEFAULTS = LoadBalancerConfig()

#: the Pulsar 5.0 line: its defaults (AvgShedder for shedding and placement, even distribution off, 50 %,
#: 32 bundles; upstream #26609/#26610) and its behaviour (``pulsarVersion`` 5.0.x)
PULSAR_5_DEFAULTS = LoadBalancerConfig(pulsarVersion="5.0", **LINE_DEFAULTS["5.0"])

#: BIGO's recommended AvgShedder production settings (field findings §1.3).
BIGO_AVGSHEDDER = dataclasses.replace(
    PULSAR_4_DEFAULTS,
    loadBalancerLoadSheddingStrategy=IMPL + "AvgShedder",
    loadBalancerLoadPlacementStrategy=IMPL + "AvgShedder",
    loadBalancerAvgShedderHitCountHighThreshold=2,
    loadBalancerAvgShedderHitCountLowThreshold=8,
    loadBalancerAvgShedderLowThreshold=15.0,
    loadBalancerAvgShedderHighThreshold=40.0,
    maxUnloadPercentage=0.5,
    minUnloadMessageThroughput=10 * 1024 * 1024,
    minUnloadMessage=10000,
)

PRESETS = {"pulsar-4": PULSAR_4_DEFAULTS, "pulsar-5": PULSAR_5_DEFAULTS, "bigo-avgshedder": BIGO_AVGSHEDDER}

#: the keys each load manager reads around its strategies (the Tuner's "Load manager" group): the modular
#: manager's candidate filters, overload retry and grace period; the extensible manager's scheduler, grace
#: period, top-K report and candidate filters. Keyed by a strategy spec's ``load_manager``.
LOAD_MANAGER_KEYS = {
    "modular": ("loadBalancerDistributeBundlesEvenlyEnabled", "loadBalancerBrokerOverloadedThresholdPercentage",
                "loadBalancerBrokerMaxTopics", "loadBalancerSheddingGracePeriodMinutes"),
    "extensible": ("loadBalancerSheddingEnabled", "loadBalancerSheddingIntervalMinutes",
                   "loadBalancerSheddingGracePeriodMinutes", "loadBalancerMaxNumberOfBundlesInBundleLoadReport",
                   "loadBalancerBrokerMaxTopics"),
}

