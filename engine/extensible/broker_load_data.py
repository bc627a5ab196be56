"""BrokerLoadData: what each broker publishes on ``loadbalancer-broker-load-data`` (extensible LM).

Examples
--------
>>> from engine.config import LoadBalancerConfig
>>> from engine.model import ResourceUsage
>>> d = BrokerLoadData()
>>> d.weighted_max_ema, d.updated_at          # Pulsar's defaults before the first update
(1.0, 0)
>>> d.update({"cpu": ResourceUsage(30, 100)}, 1e6, 2e6, 10.0, 20.0, 4, 40, LoadBalancerConfig(), now_ms=1000)
>>> d.weighted_max_ema                          # first update: the current weighted max (float32 30 %)
0.30000001907348633
>>> d.update({"cpu": ResourceUsage(10, 100)}, 1e6, 2e6, 10.0, 20.0, 4, 40, LoadBalancerConfig(), now_ms=6000)
>>> round(d.weighted_max_ema, 6)                # 0.9 * 0.3 + 0.1 * 0.1
0.28
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..config import LoadBalancerConfig
from ..javacompat import percent_usage_array
from ..model import ResourceUsage, _Reader

__all__ = ["BrokerLoadData", "RESOURCES", "first_updates"]

#: (attribute, Pulsar JSON key) of the five resources, in ``BrokerLoadData`` order
RESOURCES = (("cpu", "cpu"), ("memory", "memory"), ("direct_memory", "directMemory"),
             ("bandwidth_in", "bandwidthIn"), ("bandwidth_out", "bandwidthOut"))


def _usage(u) -> ResourceUsage:
    if isinstance(u, ResourceUsage):
        return ResourceUsage(u.usage, u.limit)
    if isinstance(u, Mapping):
        return ResourceUsage(float(u.get("usage", 0.0)), float(u.get("limit", 0.0)))
    usage, limit = u
    return ResourceUsage(float(usage), float(limit))


@dataclass
class BrokerLoadData:
    """One broker's load as the Extensible Load Manager sees it (``data/BrokerLoadData.java``).

    Attributes are snake_case; :meth:`to_json` / :meth:`from_json` use Pulsar's field names
    (``cpu``, ``memory``, ``directMemory``, ``bandwidthIn``, ``bandwidthOut``, ``msgThroughputIn``,
    ``msgThroughputOut``, ``msgRateIn``, ``msgRateOut``, ``bundleCount``, ``topics``,
    ``maxResourceUsage``, ``weightedMaxEMA``, ``msgThroughputEMA``, ``updatedAt``, ``reportedAt``).

    The *load* TransferShedder and the extensible LeastResourceUsageWithWeight compare is
    :attr:`weighted_max_ema`.

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.1. :meth:`update` honours ``loadBalancerCPUResourceWeight``,
    ``loadBalancerMemoryResourceWeight`` (only the extensible LM uses memory),
    ``loadBalancerDirectMemoryResourceWeight``, the PIP-357 bandwidth weight getters and
    ``loadBalancerHistoryResourcePercentage`` (the EMA factor ``h``, 0.9, for both EMAs).
    Percentages are float32 (:func:`engine.javacompat.percent_usage`); the weighted products and
    the EMA are double, as in Java. Defaults before the first update are Pulsar's:
    ``maxResourceUsage = weightedMaxEMA = 1.0``, ``msgThroughputEMA = 0``, ``updatedAt = 0``.
    """

    cpu: ResourceUsage = field(default_factory=ResourceUsage)
    memory: ResourceUsage = field(default_factory=ResourceUsage)
    direct_memory: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_in: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidth_out: ResourceUsage = field(default_factory=ResourceUsage)
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    bundle_count: int = 0
    topics: int = 0
    max_resource_usage: float = 1.0
    weighted_max_ema: float = 1.0
    msg_throughput_ema: float = 0.0
    updated_at: int = 0
    reported_at: int = 0

    # ------------------------------------------------------------------ derived numbers
    @property
    def msg_throughput(self) -> float:
        """``msgThroughputIn + msgThroughputOut`` (instantaneous, bytes/s)."""
        return self.msg_throughput_in + self.msg_throughput_out

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    def max_resource_usage_with_weight(self, cpu_w: float, memory_w: float, direct_memory_w: float,
                                       bw_in_w: float, bw_out_w: float) -> float:
        """``getMaxResourceUsageWithWeight`` (5 weights): max of float32 % × weight (double) / 100."""
        return max(self.cpu.percent_usage() * cpu_w, self.memory.percent_usage() * memory_w,
                   self.direct_memory.percent_usage() * direct_memory_w,
                   self.bandwidth_in.percent_usage() * bw_in_w,
                   self.bandwidth_out.percent_usage() * bw_out_w) / 100.0

    def weighted_max(self, conf: LoadBalancerConfig) -> float:
        """The current (not smoothed) weighted max usage under ``conf``'s five weights."""
        return self.max_resource_usage_with_weight(
            conf.loadBalancerCPUResourceWeight, conf.loadBalancerMemoryResourceWeight,
            conf.loadBalancerDirectMemoryResourceWeight, conf.bandwidth_in_weight, conf.bandwidth_out_weight)

    def _max_resource_usage(self) -> float:
        # LocalBrokerData.max(float...) / 100 in float: memory excluded, float32 result
        m = max(self.cpu.percent_usage(), self.direct_memory.percent_usage(), self.bandwidth_in.percent_usage(),
                self.bandwidth_out.percent_usage())
        return float(np.float32(np.float32(m) / np.float32(100.0)))

    # ------------------------------------------------------------------ the broker's own update
    def update(self, usage: Mapping | None, msg_throughput_in: float, msg_throughput_out: float,
               msg_rate_in: float, msg_rate_out: float, bundle_count: int, topics: int,
               conf: LoadBalancerConfig, now_ms: int) -> None:
        """``BrokerLoadData.update(usage, thrIn, thrOut, rateIn, rateOut, bundleCount, topics, conf)``.

        Called by every broker for itself at each load-data generation
        (``loadBalancerReportUpdateMinIntervalMillis``, 5 s): the EMAs advance on every call,
        whether or not the result gets published.

        Parameters
        ----------
        usage : mapping, optional
            ``{"cpu"|"memory"|"direct_memory"|"bandwidth_in"|"bandwidth_out": ResourceUsage or
            (usage, limit)}``; resources not given keep their previous value.
        now_ms : int
            The generation time (Pulsar uses the wall clock); becomes ``updatedAt``.
        """
        if usage:
            for attr, key in RESOURCES:
                u = usage.get(attr, usage.get(key)) if isinstance(usage, Mapping) else None
                if u is not None:
                    setattr(self, attr, _usage(u))
        self.msg_throughput_in = float(msg_throughput_in)
        self.msg_throughput_out = float(msg_throughput_out)
        self.msg_rate_in = float(msg_rate_in)
        self.msg_rate_out = float(msg_rate_out)
        self.bundle_count = int(bundle_count)
        self.topics = int(topics)
        h = conf.loadBalancerHistoryResourcePercentage
        self.max_resource_usage = self._max_resource_usage()
        wmax = self.weighted_max(conf)
        self.weighted_max_ema = wmax if self.updated_at == 0 else self.weighted_max_ema * h + (1 - h) * wmax
        thr = self.msg_throughput_in + self.msg_throughput_out
        self.msg_throughput_ema = thr if self.updated_at == 0 else self.msg_throughput_ema * h + (1 - h) * thr
        self.updated_at = int(now_ms)

    def copy(self) -> "BrokerLoadData":
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict:
        d = {key: getattr(self, attr).to_json() for attr, key in RESOURCES}
        d.update({
            "msgThroughputIn": self.msg_throughput_in, "msgThroughputOut": self.msg_throughput_out,
            "msgRateIn": self.msg_rate_in, "msgRateOut": self.msg_rate_out, "bundleCount": self.bundle_count,
            "topics": self.topics, "maxResourceUsage": self.max_resource_usage,
            "weightedMaxEMA": self.weighted_max_ema, "msgThroughputEMA": self.msg_throughput_ema,
            "updatedAt": self.updated_at, "reportedAt": self.reported_at,
        })
        return d

    @classmethod
    def from_json(cls, obj, path: str = "", source: str | None = None,
                  warnings: list | None = None) -> "BrokerLoadData":
        """Read Pulsar's JSON (unknown keys ignored, missing keys take Pulsar's defaults).

        Raises :class:`InputError` naming ``source`` and the field for a wrong type, a negative
        or non-finite number.
        """
        r = _Reader(obj, path, source, warnings)
        res = {attr: ResourceUsage.from_json(r.obj_(key), f"{path}.{key}" if path else key, source, warnings)
               for attr, key in RESOURCES}
        if "weightedMaxEMA" not in r.obj:
            r.warn(f"{path or 'BrokerLoadData'}: no weightedMaxEMA: Pulsar's default 1.0 (100 %) is used")
        d = cls(**res,
                msg_throughput_in=r.num("msgThroughputIn"), msg_throughput_out=r.num("msgThroughputOut"),
                msg_rate_in=r.num("msgRateIn"), msg_rate_out=r.num("msgRateOut"),
                bundle_count=r.int("bundleCount"), topics=r.int("topics"),
                max_resource_usage=r.num("maxResourceUsage", 1.0), weighted_max_ema=r.num("weightedMaxEMA", 1.0),
                msg_throughput_ema=r.num("msgThroughputEMA", 0.0), updated_at=r.time("updatedAt"),
                reported_at=r.time("reportedAt"))
        return d



def first_updates(locals_, times, conf: LoadBalancerConfig) -> list[BrokerLoadData]:
    """``new BrokerLoadData()`` updated once, for many brokers at once: ``locals_`` are modular
    ``LocalBrokerData`` reports (their five resources, throughputs, rates, bundle and topic counts),
    ``times`` each one's ``updatedAt``. The same numbers as :meth:`BrokerLoadData.update` on each
    (float32 percentages, double weighted products); a broker whose weighted products are not all
    finite takes :meth:`~BrokerLoadData.update` itself (Python's ``max`` and numpy's differ on NaN)."""
    n = len(locals_)
    if n == 0:
        return []
    attrs = [a for a, _ in RESOURCES]
    res = [[getattr(L, a) for a in attrs] for L in locals_]
    ul = np.array([[x for r in row for x in (r.usage, r.limit)] for row in res], dtype=float).reshape(n, 10)
    pct = percent_usage_array(ul[:, 0::2], ul[:, 1::2])  # n x 5, in RESOURCES order
    w = np.array([conf.loadBalancerCPUResourceWeight, conf.loadBalancerMemoryResourceWeight,
                  conf.loadBalancerDirectMemoryResourceWeight, conf.bandwidth_in_weight, conf.bandwidth_out_weight],
                 dtype=float)
    with np.errstate(all="ignore"):
        weighted = pct * w
        wmax = (weighted.max(axis=1) / 100.0).tolist()
        # LocalBrokerData.max(float...) / 100 in float: memory excluded
        mru = (pct[:, [0, 2, 3, 4]].max(axis=1).astype(np.float32) / np.float32(100.0)).astype(np.float32)
    finite = np.isfinite(weighted).all(axis=1) & np.isfinite(pct).all(axis=1)
    mru_l, ok = mru.astype(float).tolist(), finite.tolist()
    out = []
    for i, (L, r, t) in enumerate(zip(locals_, res, times)):
        bundles = len(L.bundles) if L.bundles else L.num_bundles
        if not ok[i]:
            d = BrokerLoadData()
            d.update(dict(zip(attrs, r)), L.msg_throughput_in, L.msg_throughput_out, L.msg_rate_in, L.msg_rate_out,
                     bundles, L.num_topics, conf, now_ms=t)
            out.append(d)
            continue
        thr_in, thr_out = float(L.msg_throughput_in), float(L.msg_throughput_out)
        out.append(BrokerLoadData(
            ResourceUsage(r[0].usage, r[0].limit), ResourceUsage(r[1].usage, r[1].limit),
            ResourceUsage(r[2].usage, r[2].limit), ResourceUsage(r[3].usage, r[3].limit),
            ResourceUsage(r[4].usage, r[4].limit), thr_in, thr_out, float(L.msg_rate_in), float(L.msg_rate_out),
            int(bundles), int(L.num_topics), mru_l[i], wmax[i], thr_in + thr_out, int(t), 0))
    return out
