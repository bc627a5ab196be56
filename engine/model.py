"""Snapshot model mirroring Pulsar's ``LoadData`` (modular load manager).

Objects and JSON keys are exactly Pulsar's (``pulsar-load-balancing.md`` §2): a broker's
``LocalBrokerData`` (the ``pulsar-admin broker-stats load-report``), per-bundle ``BundleData`` with
short/long-term ``TimeAverageMessageData``, per-broker ``TimeAverageBrokerData``, preallocated
bundles and recently unloaded bundles. Python attributes are snake_case; ``from_json`` / ``to_json``
use Pulsar's camelCase keys. Unknown JSON keys are ignored on read, as Jackson does.

A snapshot's "now" (:attr:`LoadData.now_ms`) is its own time — the latest ``lastUpdate`` of its
brokers unless given — never the wall clock, so grace periods and report ages replay correctly.

Examples
--------
>>> r = ResourceUsage(30, 100)
>>> r.percent_usage()
30.000001907348633
>>> b = LocalBrokerData("b1:8080", cpu=ResourceUsage(30, 100))
>>> b.max_resource_usage()            # float32 division, as LocalBrokerData.getMaxResourceUsage()
0.30000001192092896
>>> b.max_resource_usage_with_weight(1.0, 0.0, 1.0, 1.0)
0.30000001907348633
>>> t = TimeAverageMessageData(max_samples=10)
>>> t.update(NamespaceBundleStats(msg_rate_in=100.0)); t.msg_rate_in
100.0
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Iterable, Mapping

import numpy as np

from .errors import InputError
from .javacompat import java_max, percent_usage
from .limits import MAX_COUNT, MAX_EPOCH_MS, MAX_JAVA_LONG, MAX_QUANTITY
from .packed import pack_names, unpack_names

__all__ = [
    "ResourceUsage",
    "NamespaceBundleStats",
    "LocalBrokerData",
    "TimeAverageMessageData",
    "BundleData",
    "TimeAverageBrokerData",
    "BrokerData",
    "LoadData",
    "NUM_SHORT_SAMPLES",
    "NUM_LONG_SAMPLES",
    "DEFAULT_MESSAGE_RATE",
    "DEFAULT_MESSAGE_THROUGHPUT",
    "default_bundle_data",
    "bundle_namespace",
    "bundle_range",
    "is_sla_or_heartbeat_namespace",
]


def _pickled_by_position(cls):
    """A slots dataclass pickled as its constructor's arguments (one call to rebuild it), not as a
    dictionary of slots built per object by the default: a snapshot holds millions of such records."""
    names = tuple(f.name for f in fields(cls))

    def __reduce__(self):
        return cls, tuple([getattr(self, n) for n in names])

    cls.__reduce__ = __reduce__
    return cls


NUM_SHORT_SAMPLES = 10
NUM_LONG_SAMPLES = 1000
DEFAULT_MESSAGE_RATE = 50.0
DEFAULT_MESSAGE_THROUGHPUT = 50000.0

_HEARTBEAT_V1 = re.compile(r"pulsar/[^/]+/([^:]+:\d+)")
_HEARTBEAT_V2 = re.compile(r"pulsar/([^:]+:\d+)")
_SLA = re.compile(r"sla-monitor/[^/]+/([^:]+:\d+)")


def bundle_namespace(bundle: str) -> str:
    """``tenant/ns/0x00000000_0x40000000`` → ``tenant/ns`` (everything before the last ``/``)."""
    i = bundle.rfind("/")
    return bundle[:i] if i >= 0 else bundle


def bundle_range(bundle: str) -> str:
    """``tenant/ns/0x00000000_0x40000000`` → ``0x00000000_0x40000000``."""
    return bundle[bundle.rfind("/") + 1:]


def is_sla_or_heartbeat_namespace(namespace: str) -> bool:
    """``NamespaceService.isSLAOrHeartbeatNamespace``: heartbeat ``pulsar/<host>:<port>`` (v1 with a
    cluster segment too) or SLA ``sla-monitor/<cluster>/<host>:<port>``."""
    return bool(_HEARTBEAT_V1.fullmatch(namespace) or _HEARTBEAT_V2.fullmatch(namespace)
                or _SLA.fullmatch(namespace))


# ---------------------------------------------------------------------------- validation helpers
class _Reader:
    """Reads one JSON object with typed getters that raise :class:`InputError` naming the field."""

    def __init__(self, obj, path: str, source: str | None, warnings: list | None):
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", source=source, field=path or None)
        self.obj, self.path, self.source, self.warnings = obj, path, source, warnings

    def _f(self, key):
        return f"{self.path}.{key}" if self.path else key

    def num(self, key, default=0.0, nonneg=True, max_=MAX_QUANTITY):
        """A finite number within ``[0 or -max_, max_]`` (:data:`engine.limits.MAX_QUANTITY`, every
        finite double, unless told). A missing key gives ``default`` as it is: a total the reader
        sums itself over ``lastStats`` overflows to infinity as the broker's own sum does."""
        v = self.obj.get(key)
        if v is None:
            return default
        t = type(v)
        if (t is float or t is int) and (0 <= v <= max_ or (not nonneg and -max_ <= v < 0)):
            return float(v)  # the common case, every rule below already met (NaN fails the comparisons)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    raise InputError(f"expected a number, got {v!r}", self.source, self._f(key)) from None
            else:
                raise InputError(f"expected a number, got {type(v).__name__}", self.source, self._f(key))
        try:
            v = float(v)
        except OverflowError:  # an integer beyond every double
            raise InputError(f"out of range: larger than {max_:g}", self.source, self._f(key)) from None
        if math.isnan(v) or math.isinf(v):
            raise InputError(f"expected a finite number, got {v}", self.source, self._f(key))
        if nonneg and v < 0:
            raise InputError(f"must not be negative, got {v}", self.source, self._f(key))
        if abs(v) > max_:
            raise InputError(f"out of range: {v:g} is larger than {max_:g}", self.source, self._f(key))
        return v

    def int(self, key, default=0, nonneg=True, max_=MAX_COUNT):
        """An integer within ``[0, max_]`` (Java's ``Integer.MAX_VALUE`` unless told)."""
        v = self.num(key, default, nonneg, max_)
        if not float(v).is_integer():
            raise InputError(f"expected an integer, got {v}", self.source, self._f(key))
        return int(v)

    def time(self, key, default=0):
        """Epoch milliseconds, at most :data:`engine.limits.MAX_EPOCH_MS` (year 9999)."""
        return self.int(key, default, max_=MAX_EPOCH_MS)

    def bool(self, key, default=True):
        v = self.obj.get(key, default)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise InputError(f"expected true or false, got {v!r}", self.source, self._f(key))
        return v

    def str(self, key, default=None):
        v = self.obj.get(key, default)
        if v is None:
            return default
        if not isinstance(v, str):
            raise InputError(f"expected text, got {type(v).__name__}", self.source, self._f(key))
        return v

    def obj_(self, key):
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise InputError(f"expected a JSON object, got {type(v).__name__}", self.source, self._f(key))
        return v

    def strlist(self, key):
        v = self.obj.get(key)
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise InputError("expected a list of names", self.source, self._f(key))
        return v

    def warn(self, msg):
        if self.warnings is not None:
            self.warnings.append(f"{self.source + ': ' if self.source else ''}{msg}")


# ---------------------------------------------------------------------------- ResourceUsage
@_pickled_by_position
@dataclass(slots=True)
class ResourceUsage:
    """``{usage, limit}`` of one resource (CPU in % of one core, bandwidth in Kbit/s, memory MiB)."""

    usage: float = 0.0
    limit: float = 0.0

    def percent_usage(self) -> float:
        """float32 ``usage/limit*100`` (0 when ``limit <= 0``)."""
        return percent_usage(self.usage, self.limit)

    def to_json(self) -> dict:
        return {"usage": self.usage, "limit": self.limit}

    @classmethod
    def from_json(cls, obj, path="", source=None, warnings=None) -> "ResourceUsage":
        if obj is None:
            return cls()
        r = _Reader(obj, path, source, warnings)
        # a negative limit is real: a NIC whose speed the kernel does not know (a virtio NIC's
        # /sys/class/net/eth0/speed is -1) gives bandwidth limit -1000 Kbit/s; percentUsage() is 0 for any
        # limit <= 0
        u, lim = r.num("usage"), r.num("limit", nonneg=False)
        if lim <= 0 and u > 0:
            r.warn(f"{path}: limit is {lim:g}, Pulsar counts this resource as 0 %")
        elif lim > 0 and u > lim:
            r.warn(f"{path}: usage {u:g} is above its limit {lim:g} ({100 * u / lim:.0f} %); Pulsar accepts it")
        return cls(u, lim)


# ---------------------------------------------------------------------------- NamespaceBundleStats
@_pickled_by_position
@dataclass(slots=True)
class NamespaceBundleStats:
    """Instantaneous per-bundle stats a broker reports in ``lastStats``."""

    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    consumer_count: int = 0
    producer_count: int = 0
    topics: int = 0
    cache_size: int = 0

    _KEYS = (("msg_rate_in", "msgRateIn"), ("msg_throughput_in", "msgThroughputIn"),
             ("msg_rate_out", "msgRateOut"), ("msg_throughput_out", "msgThroughputOut"))

    def to_json(self) -> dict:
        return {"msgRateIn": self.msg_rate_in, "msgThroughputIn": self.msg_throughput_in,
                "msgRateOut": self.msg_rate_out, "msgThroughputOut": self.msg_throughput_out,
                "consumerCount": self.consumer_count, "producerCount": self.producer_count,
                "topics": self.topics, "cacheSize": self.cache_size}

    @classmethod
    def from_json(cls, obj, path="", source=None, warnings=None) -> "NamespaceBundleStats":
        r = _Reader(obj, path, source, warnings)
        return cls(r.num("msgRateIn"), r.num("msgThroughputIn"), r.num("msgRateOut"), r.num("msgThroughputOut"),
                   r.int("consumerCount"), r.int("producerCount"), r.int("topics"), r.int("cacheSize", max_=MAX_JAVA_LONG))


# ---------------------------------------------------------------------------- LocalBrokerData
_RESOURCES = (("cpu", "cpu"), ("memory", "memory"), ("direct_memory", "directMemory"),
              ("bandwidth_in", "bandwidthIn"), ("bandwidth_out", "bandwidthOut"))


@dataclass(slots=True)
class LocalBrokerData:
    """A broker's load report (``/loadbalance/brokers/<id>``), Pulsar's ``LocalBrokerData``."""

    #: the report's JSON fields the reader models (Jackson's names; the others, ``webServiceUrl`` among them,
    #: are kept as ``extra``). The fast reader (:mod:`engine.fastload`) decodes these and ``webServiceUrl``,
    #: so a new field is added here only.
    JSON_KEYS = ("brokerId", "cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut",
                 "msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut", "lastUpdate", "lastStats",
                 "bundleStats", "numTopics", "numBundles", "numConsumers", "numProducers", "bundles",
                 "lastBundleGains", "lastBundleLosses", "brokerVersionString", "loadManagerClassName",
                 "persistentTopicsEnabled", "nonPersistentTopicsEnabled", "startTimestamp", "maxResourceUsage",
                 "loadReportType")

    broker_id: str
    cpu: ResourceUsage = field(default_factory=ResourceUsage)
    memory: ResourceUsage = field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = field(default_factory=ResourceUsage)
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    last_update: int = 0
    last_stats: dict = field(default_factory=dict)  # bundle -> NamespaceBundleStats
    num_topics: int = 0
    num_bundles: int = 0
    num_consumers: int = 0
    num_producers: int = 0
    bundles: list = field(default_factory=list)  # ordered, unique
    last_bundle_gains: list = field(default_factory=list)
    last_bundle_losses: list = field(default_factory=list)
    broker_version_string: str | None = None
    load_manager_class_name: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    start_timestamp: int = 0
    extra: dict = field(default_factory=dict)  # other Pulsar keys, kept for round-trips

    def __copy__(self):  # a shallow copy shares the lists, as the default one did (the state below packs them)
        return LocalBrokerData(*[getattr(self, f) for f in _LOCAL_FIELDS])

    def __getstate__(self):  # the bundle list as one text (engine.packed): a stored snapshot pickles faster
        return tuple(pack_names(getattr(self, f)) if f == "bundles" else getattr(self, f) for f in _LOCAL_FIELDS)

    def __setstate__(self, state):
        if len(state) == 2 and state[0] is None and isinstance(state[1], dict):  # pickled before: (None, slots)
            state = tuple(state[1].get(f) for f in _LOCAL_FIELDS)
        for f, v in zip(_LOCAL_FIELDS, state):
            setattr(self, f, unpack_names(v) if f == "bundles" else v)

    # -------------------------------------------------------------- derived numbers (§1.2)
    def max_resource_usage(self) -> float:
        """``getMaxResourceUsage()``: max of cpu, directMemory, bandwidthIn/Out % (no memory) / 100.

        Pulsar takes the max of the float percentages and divides the *float* by 100, so the result
        is float32-rounded (e.g. 30/100 % gives 0.30000001192092896).
        """
        m = java_max((self.cpu.percent_usage(), self.direct_memory.percent_usage(),
                      self.bandwidth_in.percent_usage(), self.bandwidth_out.percent_usage()))
        with np.errstate(over="ignore"):
            return float(np.float32(np.float32(m) / np.float32(100.0)))

    def max_resource_usage_with_weight(self, cpu_w: float, direct_memory_w: float, bw_in_w: float,
                                       bw_out_w: float) -> float:
        """``getMaxResourceUsageWithWeight``: max of weighted percentages (in double) / 100."""
        return java_max((self.cpu.percent_usage() * cpu_w, self.direct_memory.percent_usage() * direct_memory_w,
                         self.bandwidth_in.percent_usage() * bw_in_w,
                         self.bandwidth_out.percent_usage() * bw_out_w)) / 100.0

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def update(self, usage: Mapping[str, ResourceUsage] | None, stats: Mapping[str, NamespaceBundleStats]) -> None:
        """``LocalBrokerData.update(SystemResourceUsage, bundleStats)`` (§2.2)."""
        if usage:
            for attr, _key in _RESOURCES:
                if attr in usage:
                    u = usage[attr]
                    setattr(self, attr, ResourceUsage(u.usage, u.limit))
        self.msg_rate_in = sum(s.msg_rate_in for s in stats.values())
        self.msg_rate_out = sum(s.msg_rate_out for s in stats.values())
        self.msg_throughput_in = sum(s.msg_throughput_in for s in stats.values())
        self.msg_throughput_out = sum(s.msg_throughput_out for s in stats.values())
        self.num_topics = sum(s.topics for s in stats.values())
        self.num_consumers = sum(s.consumer_count for s in stats.values())
        self.num_producers = sum(s.producer_count for s in stats.values())
        self.num_bundles = len(stats)
        old = list(self.bundles)
        new = set(stats)
        for b in old:
            if b not in new:
                self.bundles.remove(b)
                self.last_bundle_losses.append(b)
        have = set(self.bundles)
        for b in stats:
            if b not in have:
                self.bundles.append(b)
                self.last_bundle_gains.append(b)
        self.last_stats = dict(stats)

    # -------------------------------------------------------------- JSON
    def to_json(self) -> dict:
        d = dict(self.extra)
        d.update({"brokerId": self.broker_id})
        for attr, key in _RESOURCES:
            d[key] = getattr(self, attr).to_json()
        d.update({
            "msgThroughputIn": self.msg_throughput_in, "msgThroughputOut": self.msg_throughput_out,
            "msgRateIn": self.msg_rate_in, "msgRateOut": self.msg_rate_out, "lastUpdate": self.last_update,
            "lastStats": {b: s.to_json() for b, s in self.last_stats.items()},
            "numTopics": self.num_topics, "numBundles": self.num_bundles, "numConsumers": self.num_consumers,
            "numProducers": self.num_producers, "bundles": list(self.bundles),
            "lastBundleGains": list(self.last_bundle_gains), "lastBundleLosses": list(self.last_bundle_losses),
            "persistentTopicsEnabled": self.persistent_topics_enabled,
            "nonPersistentTopicsEnabled": self.non_persistent_topics_enabled,
            "startTimestamp": self.start_timestamp, "maxResourceUsage": self.max_resource_usage(),
            "loadReportType": "LocalBrokerData",
        })
        if self.broker_version_string is not None:
            d["brokerVersionString"] = self.broker_version_string
        if self.load_manager_class_name is not None:
            d["loadManagerClassName"] = self.load_manager_class_name
        return d

    @classmethod
    def from_json(cls, obj, broker_id: str | None = None, path="", source=None,
                  warnings=None) -> "LocalBrokerData":
        r = _Reader(obj, path, source, warnings)
        bid = broker_id or r.str("brokerId")
        if not bid:
            web = r.str("webServiceUrl")
            if web:
                bid = re.sub(r"^https?://", "", web).rstrip("/")
        if not bid:
            raise InputError("missing brokerId (and no webServiceUrl to derive it from)", source, path or "brokerId")
        res = {attr: ResourceUsage.from_json(r.obj_(key), f"{path}.{key}" if path else key, source, warnings)
               for attr, key in _RESOURCES}
        stats_obj = r.obj_("lastStats")
        if stats_obj is None:
            stats_obj = r.obj_("bundleStats") or {}  # older reports
        last_stats = {}
        for b, s in stats_obj.items():
            last_stats[b] = NamespaceBundleStats.from_json(
                s, f"{path + '.' if path else ''}lastStats[{b!r}]", source, warnings)
        bundles = r.strlist("bundles")
        if not bundles and last_stats:
            bundles = list(last_stats)
        seen = set()
        bundles = [b for b in bundles if not (b in seen or seen.add(b))]
        extra = {k: v for k, v in obj.items() if k not in cls.JSON_KEYS}
        sums = {k: sum(getattr(s, a) for s in last_stats.values()) for a, k in NamespaceBundleStats._KEYS}
        data = cls(
            broker_id=bid, **res,
            msg_throughput_in=r.num("msgThroughputIn", sums["msgThroughputIn"]),
            msg_throughput_out=r.num("msgThroughputOut", sums["msgThroughputOut"]),
            msg_rate_in=r.num("msgRateIn", sums["msgRateIn"]),
            msg_rate_out=r.num("msgRateOut", sums["msgRateOut"]),
            last_update=r.time("lastUpdate"),
            last_stats=last_stats,
            num_topics=r.int("numTopics", sum(s.topics for s in last_stats.values())),
            num_bundles=r.int("numBundles", len(last_stats)),
            num_consumers=r.int("numConsumers", sum(s.consumer_count for s in last_stats.values())),
            num_producers=r.int("numProducers", sum(s.producer_count for s in last_stats.values())),
            bundles=bundles,
            last_bundle_gains=r.strlist("lastBundleGains"),
            last_bundle_losses=r.strlist("lastBundleLosses"),
            broker_version_string=r.str("brokerVersionString"),
            load_manager_class_name=r.str("loadManagerClassName"),
            persistent_topics_enabled=r.bool("persistentTopicsEnabled", True),
            non_persistent_topics_enabled=r.bool("nonPersistentTopicsEnabled", True),
            start_timestamp=r.time("startTimestamp"),
            extra=extra,
        )
        return data


# ---------------------------------------------------------------------------- TimeAverageMessageData
_LOCAL_FIELDS = tuple(f.name for f in fields(LocalBrokerData))  # its pickled state, in order


@_pickled_by_position
@dataclass(slots=True)
class TimeAverageMessageData:
    """Sample-based moving average of a bundle's rates and throughputs (§2.3).

    ``numSamples = min(numSamples + 1, maxSamples); value = ((numSamples - 1) * value + x) / numSamples``.
    """

    max_samples: int = NUM_SHORT_SAMPLES
    num_samples: int = 0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0

    def update(self, stats: NamespaceBundleStats) -> None:
        self.num_samples = min(self.num_samples + 1, self.max_samples)
        n = self.num_samples
        self.msg_throughput_in = ((n - 1) * self.msg_throughput_in + stats.msg_throughput_in) / n
        self.msg_throughput_out = ((n - 1) * self.msg_throughput_out + stats.msg_throughput_out) / n
        self.msg_rate_in = ((n - 1) * self.msg_rate_in + stats.msg_rate_in) / n
        self.msg_rate_out = ((n - 1) * self.msg_rate_out + stats.msg_rate_out) / n

    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def values(self) -> tuple:
        return (self.max_samples, self.num_samples, self.msg_throughput_in, self.msg_throughput_out,
                self.msg_rate_in, self.msg_rate_out)

    def copy(self) -> "TimeAverageMessageData":
        return TimeAverageMessageData(*self.values())

    def to_json(self) -> dict:
        return {"maxSamples": self.max_samples, "numSamples": self.num_samples,
                "msgThroughputIn": self.msg_throughput_in, "msgThroughputOut": self.msg_throughput_out,
                "msgRateIn": self.msg_rate_in, "msgRateOut": self.msg_rate_out}

    @classmethod
    def from_json(cls, obj, max_default: int, path="", source=None, warnings=None) -> "TimeAverageMessageData":
        r = _Reader(obj, path, source, warnings)
        t = cls(r.int("maxSamples", max_default), r.int("numSamples", 0), r.num("msgThroughputIn"),
                r.num("msgThroughputOut"), r.num("msgRateIn"), r.num("msgRateOut"))
        if t.max_samples < 1:
            raise InputError("must be at least 1", source, f"{path}.maxSamples")
        return t


def update_time_average_arrays(values: np.ndarray, num_samples: np.ndarray, max_samples: int | np.ndarray,
                               sample: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Vectorised :meth:`TimeAverageMessageData.update` in place.

    ``values`` is ``(n, k)`` (e.g. the four rates), ``num_samples`` ``(n,)``; rows where ``mask`` is
    False are left alone. Same arithmetic as Java's double update.
    """
    if mask is None:
        mask = np.ones(len(num_samples), dtype=bool)
    ns = np.minimum(num_samples + 1, max_samples)
    num_samples[mask] = ns[mask]
    n = num_samples[mask].astype(np.float64)[:, None]
    values[mask] = ((n - 1) * values[mask] + sample[mask]) / n


__all__.append("update_time_average_arrays")


# ---------------------------------------------------------------------------- BundleData
@_pickled_by_position
@dataclass(slots=True)
class BundleData:
    """Leader-side history of one bundle: short-term (10 samples) and long-term (1000) averages.

    Equality and hash are by value (Lombok ``@EqualsAndHashCode``), which AvgShedder's plan map
    depends on: use :meth:`value_key` for that.
    """

    short_term: TimeAverageMessageData = field(default_factory=lambda: TimeAverageMessageData(NUM_SHORT_SAMPLES))
    long_term: TimeAverageMessageData = field(default_factory=lambda: TimeAverageMessageData(NUM_LONG_SAMPLES))
    topics: int = 0

    def update(self, stats: NamespaceBundleStats) -> None:
        self.short_term.update(stats)
        self.long_term.update(stats)
        self.topics = int(stats.topics)

    def value_key(self) -> tuple:
        """The value identity Pulsar's ``BundleData.equals/hashCode`` use."""
        return self.short_term.values() + self.long_term.values() + (self.topics,)

    def copy(self) -> "BundleData":
        return BundleData(self.short_term.copy(), self.long_term.copy(), self.topics)

    def to_json(self) -> dict:
        return {"shortTermData": self.short_term.to_json(), "longTermData": self.long_term.to_json(),
                "topics": self.topics}

    @classmethod
    def from_json(cls, obj, path="", source=None, warnings=None) -> "BundleData":
        r = _Reader(obj, path, source, warnings)
        st = r.obj_("shortTermData")
        lt = r.obj_("longTermData")
        return cls(
            TimeAverageMessageData.from_json(st or {}, NUM_SHORT_SAMPLES, f"{path}.shortTermData", source, warnings),
            TimeAverageMessageData.from_json(lt or {}, NUM_LONG_SAMPLES, f"{path}.longTermData", source, warnings),
            r.int("topics", 0),
        )


def default_bundle_data(quota: Mapping[str, float] | None = None) -> BundleData:
    """BundleData for a bundle the leader has never seen (§2.4).

    With a legacy ResourceQuota (``msgRateIn``, ``msgRateOut``, ``bandwidthIn``, ``bandwidthOut``) both
    averages take the quota with ``numSamples`` 10 and 1000; otherwise 50 msg/s and 50000 B/s per
    direction with ``numSamples = 0`` (the first real sample replaces them).
    """
    if quota:
        st = TimeAverageMessageData(NUM_SHORT_SAMPLES, NUM_SHORT_SAMPLES, quota.get("bandwidthIn", 0.0),
                                    quota.get("bandwidthOut", 0.0), quota.get("msgRateIn", 0.0),
                                    quota.get("msgRateOut", 0.0))
        lt = TimeAverageMessageData(NUM_LONG_SAMPLES, NUM_LONG_SAMPLES, *st.values()[2:])
        return BundleData(st, lt, 0)
    st = TimeAverageMessageData(NUM_SHORT_SAMPLES, 0, DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_THROUGHPUT,
                                DEFAULT_MESSAGE_RATE, DEFAULT_MESSAGE_RATE)
    lt = TimeAverageMessageData(NUM_LONG_SAMPLES, 0, DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_THROUGHPUT,
                                DEFAULT_MESSAGE_RATE, DEFAULT_MESSAGE_RATE)
    return BundleData(st, lt, 0)


# ---------------------------------------------------------------------------- TimeAverageBrokerData
@_pickled_by_position
@dataclass(slots=True)
class TimeAverageBrokerData:
    """Sums of a broker's bundles' short/long-term averages (§2.5)."""

    short_term_msg_throughput_in: float = 0.0
    short_term_msg_throughput_out: float = 0.0
    short_term_msg_rate_in: float = 0.0
    short_term_msg_rate_out: float = 0.0
    long_term_msg_throughput_in: float = 0.0
    long_term_msg_throughput_out: float = 0.0
    long_term_msg_rate_in: float = 0.0
    long_term_msg_rate_out: float = 0.0

    _KEYS = ("shortTermMsgThroughputIn", "shortTermMsgThroughputOut", "shortTermMsgRateIn", "shortTermMsgRateOut",
             "longTermMsgThroughputIn", "longTermMsgThroughputOut", "longTermMsgRateIn", "longTermMsgRateOut")

    def reset(self, bundles: Iterable[str], bundle_data: Mapping[str, BundleData]) -> None:
        """Recompute every sum over ``bundles``; an unknown bundle contributes the default stats."""
        acc = [0.0] * 8
        for b in bundles:
            d = bundle_data.get(b)
            if d is None:
                vals = (DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_THROUGHPUT, DEFAULT_MESSAGE_RATE,
                        DEFAULT_MESSAGE_RATE) * 2
            else:
                s, lt = d.short_term, d.long_term
                vals = (s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in, s.msg_rate_out,
                        lt.msg_throughput_in, lt.msg_throughput_out, lt.msg_rate_in, lt.msg_rate_out)
            for i, v in enumerate(vals):
                acc[i] += v
        (self.short_term_msg_throughput_in, self.short_term_msg_throughput_out, self.short_term_msg_rate_in,
         self.short_term_msg_rate_out, self.long_term_msg_throughput_in, self.long_term_msg_throughput_out,
         self.long_term_msg_rate_in, self.long_term_msg_rate_out) = acc

    def values(self) -> tuple:
        return (self.short_term_msg_throughput_in, self.short_term_msg_throughput_out, self.short_term_msg_rate_in,
                self.short_term_msg_rate_out, self.long_term_msg_throughput_in, self.long_term_msg_throughput_out,
                self.long_term_msg_rate_in, self.long_term_msg_rate_out)

    def to_json(self) -> dict:
        return dict(zip(self._KEYS, self.values()))

    @classmethod
    def from_json(cls, obj, path="", source=None, warnings=None) -> "TimeAverageBrokerData":
        r = _Reader(obj, path, source, warnings)
        return cls(*(r.num(k) for k in cls._KEYS))


# ---------------------------------------------------------------------------- BrokerData / LoadData
@_pickled_by_position
@dataclass(slots=True)
class BrokerData:
    """Leader-side view of one broker: its report, time averages and preallocated bundles."""

    local: LocalBrokerData
    time_average: TimeAverageBrokerData = field(default_factory=TimeAverageBrokerData)
    preallocated: dict = field(default_factory=dict)  # bundle -> BundleData


@dataclass
class LoadData:
    """The leader's ``LoadData``: brokers, bundle data, recently unloaded bundles (+ topic lists).

    ``brokers`` keeps the input order; :meth:`broker_order` gives Java ``ConcurrentHashMap``
    iteration order, which is the order Pulsar walks brokers in.
    """

    brokers: dict = field(default_factory=dict)  # broker id -> BrokerData
    bundle_data: dict = field(default_factory=dict)  # bundle -> BundleData
    recently_unloaded: dict = field(default_factory=dict)  # bundle -> epoch ms
    bundle_topics: dict = field(default_factory=dict)  # bundle -> [topic names]
    now_ms: int | None = None
    warnings: list = field(default_factory=list)
    source: str | None = None
    #: Shedlab extension: strategy name -> state seed (e.g. ThresholdShedder history) to replay a leader
    strategy_state: dict = field(default_factory=dict)
    #: bundle -> ResourceQuota dict (``/loadbalance/resource-quota/<bundle>``): the BundleData a bundle
    #: without bundle-data starts from (§2.4); see :func:`default_bundle_data`
    resource_quotas: dict = field(default_factory=dict)
    #: ``/loadbalance/resource-quota/default``, kept for reference: the modular load manager never reads it
    default_resource_quota: dict | None = None

    @property
    def now(self) -> int:
        """The snapshot's own time: ``now_ms`` if set, else the latest ``lastUpdate`` (0 if none)."""
        if self.now_ms is not None:
            return int(self.now_ms)
        return max((b.local.last_update for b in self.brokers.values()), default=0)

    def broker_order(self) -> list[str]:
        """Broker ids in ``ConcurrentHashMap`` iteration order (how Pulsar iterates ``brokerData``)."""
        from .javacompat import java_map_order

        return java_map_order(self.brokers, concurrent=True)

    def owners(self) -> dict[str, list[str]]:
        """bundle -> brokers listing it in their ``bundles`` (two during an ownership change)."""
        out: dict[str, list[str]] = {}
        for bid, bd in self.brokers.items():
            for b in bd.local.bundles:
                out.setdefault(b, []).append(bid)
        return out

    def preallocations(self) -> dict:
        """broker id -> its preallocated bundles (BundleData), brokers with some only."""
        return {bid: bd.preallocated for bid, bd in self.brokers.items() if bd.preallocated}

    def stats_columns(self) -> dict | None:
        """Every broker's ``lastStats`` as columns, or ``None`` (then read ``brokers``): a snapshot read
        into columns (:mod:`engine.fastload`) answers while nothing built its objects, with ``reports``
        (broker id → report, its ``lastStats`` not built), ``names`` and ``name_idx`` (each row's
        bundle name is ``names[name_idx[i]]``), ``starts`` (broker ``j``'s rows are
        ``starts[j]:starts[j+1]``, in ``reports`` order), ``stats`` (one row per entry, the columns
        ``msgRateIn, msgThroughputIn, msgRateOut, msgThroughputOut, consumerCount, producerCount,
        topics, cacheSize``) and ``view`` (the :class:`~engine.view.LoadView` over the same names)."""
        return None

    def ensure_bundle_data(self) -> None:
        """Derive missing ``bundleData`` the way Pulsar's leader does (§3.2): a bundle reported in
        some ``lastStats`` but without BundleData gets the default (§2.4) updated with that sample;
        then every broker's ``timeAverageData`` is recomputed when it was not given."""
        for bd in self.brokers.values():
            for b, st in bd.local.last_stats.items():
                if b not in self.bundle_data:
                    d = default_bundle_data(self.resource_quotas.get(b))
                    d.update(st)
                    self.bundle_data[b] = d

    def update_bundle_data(self, leader_owned: set | None = None) -> None:
        """One leader ``updateBundleData()`` (§3.2): every reported bundle takes one sample; then each
        broker's preallocations are pruned and its time averages recomputed; bundles no broker
        reports are forgotten.

        Pulsar drops a preallocation when the bundle is not in the *leader's* ownership cache, or when
        the broker now reports it and it has BundleData. Pass the leader's owned bundles as
        ``leader_owned`` to apply the first rule; when omitted only the second rule applies.
        """
        reported = set()
        for bd in self.brokers.values():
            for b, st in bd.local.last_stats.items():
                reported.add(b)
                d = self.bundle_data.get(b)
                if d is None:
                    d = default_bundle_data(self.resource_quotas.get(b))
                    self.bundle_data[b] = d
                d.update(st)
        for bd in self.brokers.values():
            owned = set(bd.local.bundles)
            for b in list(bd.preallocated):
                if (leader_owned is not None and b not in leader_owned) or (b in owned and b in self.bundle_data):
                    del bd.preallocated[b]
            bd.time_average.reset(bd.local.last_stats.keys(), self.bundle_data)
        for b in list(self.bundle_data):
            if b not in reported:
                del self.bundle_data[b]

    def to_json(self) -> dict:
        """The canonical LoadData JSON of ``design.md`` (brokers, bundleData, timeAverageData, ...)."""
        out = {
            "brokers": {bid: bd.local.to_json() for bid, bd in self.brokers.items()},
            "bundleData": {b: d.to_json() for b, d in self.bundle_data.items()},
            "timeAverageData": {bid: bd.time_average.to_json() for bid, bd in self.brokers.items()},
        }
        pre = {bid: {b: d.to_json() for b, d in bd.preallocated.items()}
               for bid, bd in self.brokers.items() if bd.preallocated}
        if pre:
            out["preallocatedBundleData"] = pre
        if self.recently_unloaded:
            out["recentlyUnloadedBundles"] = dict(self.recently_unloaded)
        if self.bundle_topics:
            out["bundleTopics"] = {b: list(t) for b, t in self.bundle_topics.items()}
        if self.now_ms is not None:
            out["now"] = self.now_ms
        if self.strategy_state:
            out["shedlabStrategyState"] = self.strategy_state
        if self.resource_quotas:
            out["resourceQuotas"] = {b: dict(q) for b, q in self.resource_quotas.items()}
        if self.default_resource_quota is not None:
            out["defaultResourceQuota"] = dict(self.default_resource_quota)
        return out
