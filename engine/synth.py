"""Build snapshots by hand or at random: named fixture clusters, samples and benchmark inputs.

Examples
--------
>>> ld = make_snapshot({
...     "b1:8080": dict(cpu=89, direct_memory=33, bandwidth_in=59, bandwidth_out=81,
...                     bundles={"t/n/0x00000000_0x80000000": dict(rate=9000, throughput=2e8)}),
...     "b2:8080": dict(cpu=19, bundles={"t/n/0x80000000_0xffffffff": dict(rate=500)}),
... })
>>> sorted(ld.brokers), round(ld.brokers["b1:8080"].local.msg_rate)
(['b1:8080', 'b2:8080'], 9000)
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .model import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageMessageData,
)
from .view import LoadView

__all__ = ["make_snapshot", "bundle_names", "random_snapshot", "random_view", "NOW"]

#: a fixed "now" for hand-built snapshots (2025-12-06T05:46:40Z)
NOW = 1_765_000_000_000

_LIMITS = {"cpu": 800.0, "memory": 8192.0, "direct_memory": 4096.0, "bandwidth_in": 10_000_000.0,
           "bandwidth_out": 10_000_000.0}


def bundle_names(namespace: str, n: int) -> list[str]:
    """Pulsar's initial bundle names of a namespace with ``n`` bundles (§7.2)."""
    seg = 2**32 // n
    bounds = [i * seg for i in range(n)] + [0xFFFFFFFF]
    return [f"{namespace}/0x{bounds[i]:08x}_0x{bounds[i + 1]:08x}" for i in range(n)]


def _stats(spec: Mapping) -> NamespaceBundleStats:
    rate = float(spec.get("rate", 0.0))
    thr = float(spec.get("throughput", rate * 1024.0))
    rin = float(spec.get("rate_in", rate / 2))
    rout = float(spec.get("rate_out", rate - rin))
    tin = float(spec.get("throughput_in", thr / 2))
    tout = float(spec.get("throughput_out", thr - tin))
    return NamespaceBundleStats(rin, tin, rout, tout, int(spec.get("consumers", 1)), int(spec.get("producers", 1)),
                                int(spec.get("topics", 1)), 0)


def make_snapshot(brokers: Mapping[str, Mapping], now_ms: int = NOW, samples: tuple = (10, 1000),
                  recently_unloaded: Mapping[str, int] | None = None) -> LoadData:
    """A snapshot from a compact spec.

    ``brokers[id]`` may give ``cpu``, ``memory``, ``direct_memory``, ``bandwidth_in``, ``bandwidth_out``
    in percent (limits are fixed: 8 cores, 8 GiB heap, 4 GiB direct, 10 Gbit/s), or ``usage`` dicts
    ``{resource: (usage, limit)}``, and ``bundles`` = ``{name: {rate, throughput, topics, ...}}`` (in/out
    split in half unless ``rate_in`` etc. are given). Bundle data short/long-term averages equal the
    bundle's stats, with ``samples`` sample counts (``(0, 0)`` = just seen). Extra keys ``version``,
    ``load_manager``, ``last_update`` are honoured.
    """
    ld = LoadData(now_ms=now_ms)
    for bid, spec in brokers.items():
        res = {}
        for r, lim in _LIMITS.items():
            if "usage" in spec and r in spec["usage"]:
                u, lim2 = spec["usage"][r]
                res[r] = ResourceUsage(float(u), float(lim2))
            else:
                res[r] = ResourceUsage(float(spec.get(r, 0.0)) * lim / 100.0, lim)
        stats = {name: _stats(b) for name, b in (spec.get("bundles") or {}).items()}
        local = LocalBrokerData(bid, **res, last_update=int(spec.get("last_update", now_ms)),
                                broker_version_string=spec.get("version", "4.1.0"),
                                load_manager_class_name=spec.get(
                                    "load_manager", "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"))
        local.update(None, stats)
        local.last_bundle_gains.clear()
        local.last_bundle_losses.clear()
        ld.brokers[bid] = BrokerData(local)
        for name, s in stats.items():
            st = TimeAverageMessageData(10, samples[0], s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in,
                                        s.msg_rate_out)
            lt = TimeAverageMessageData(1000, samples[1], s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in,
                                        s.msg_rate_out)
            ld.bundle_data[name] = BundleData(st, lt, s.topics)
    for bd in ld.brokers.values():
        bd.time_average.reset(bd.local.last_stats.keys(), ld.bundle_data)
    if recently_unloaded:
        ld.recently_unloaded.update(recently_unloaded)
    return ld


def random_snapshot(n_brokers: int = 6, bundles_per_broker: int = 8, seed=0, namespaces: int = 3,
                    skew: float = 1.0, now_ms: int = NOW) -> LoadData:
    """A seeded random cluster (object model): uneven load, a few namespaces, distinct bundle data."""
    rng = np.random.default_rng(seed)
    nk = n_brokers * bundles_per_broker
    per_ns = -(-nk // namespaces)
    names = [n for i in range(namespaces) for n in bundle_names(f"tenant/ns{i}", per_ns)][:nk]
    rng.shuffle(names)
    brokers = {}
    for j in range(n_brokers):
        heat = float(np.clip(rng.gamma(2.0, 0.5) * skew, 0.05, 4.0))
        bundles = {}
        for name in names[j * bundles_per_broker:(j + 1) * bundles_per_broker]:
            rate = float(rng.gamma(2.0, 400.0) * heat)
            bundles[name] = dict(rate=round(rate, 3), throughput=round(rate * rng.uniform(500, 4000), 1),
                                 topics=int(rng.integers(1, 30)))
        cpu = float(np.clip(10 + 25 * heat + rng.normal(0, 5), 1, 99))
        bw = float(np.clip(5 + 20 * heat + rng.normal(0, 5), 0.5, 99))
        brokers[f"broker-{j}.example:8080"] = dict(cpu=cpu, bandwidth_in=bw, bandwidth_out=bw * rng.uniform(0.8, 1.5),
                                                   direct_memory=float(rng.uniform(1, 40)), bundles=bundles)
    ld = make_snapshot(brokers, now_ms=now_ms)
    # distinct sample counts so AvgShedder's value-keyed plans never collide by accident
    for i, b in enumerate(ld.bundle_data.values()):
        b.long_term.num_samples = 900 + i % 100
    return ld


def random_view(n_brokers: int, bundles_per_broker: int, seed=0, now_ms: int = NOW) -> LoadView:
    """A large seeded cluster built directly as arrays (benchmarks: 1,000 × 100 in milliseconds)."""
    rng = np.random.default_rng(seed)
    nk = n_brokers * bundles_per_broker
    brokers = [f"10.{(j >> 8) & 255}.{j & 255}.{(j * 7) % 250 + 1}:8080" for j in range(n_brokers)]
    owner = np.repeat(np.arange(n_brokers), bundles_per_broker)
    ns = rng.integers(0, max(1, nk // 64), size=nk)
    bundles = [f"tenant/ns{ns[k]}/0x{k * 4096:08x}_0x{k * 4096 + 4096:08x}" for k in range(nk)]
    heat = np.clip(rng.gamma(2.0, 0.5, size=n_brokers), 0.05, 4.0)
    rate = rng.gamma(2.0, 200.0, size=nk) * heat[owner]
    thr = rate * rng.uniform(500, 4000, size=nk)
    st = np.column_stack([thr / 2, thr / 2, rate / 2, rate / 2])
    lt = st * rng.uniform(0.8, 1.2, size=(nk, 1))
    cpu = np.clip(10 + 25 * heat + rng.normal(0, 5, n_brokers), 1, 99)
    bw = np.clip(5 + 20 * heat + rng.normal(0, 5, n_brokers), 0.5, 99)
    return LoadView.from_arrays(
        brokers=brokers, bundles=bundles, owner=owner, cpu=cpu, bandwidth_in=bw, bandwidth_out=bw * 1.1,
        direct_memory=rng.uniform(1, 40, n_brokers), st=st, lt=lt, topics=rng.integers(1, 30, size=nk),
        lt_samples=900 + np.arange(nk) % 100, now_ms=now_ms)
