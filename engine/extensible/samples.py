"""Shipped extensible samples: built here in code and written to ``samples/extensible/<name>.json``.

A sample file is an extensible snapshot (see :mod:`engine.extensible.snapshot`) plus
``"shedlabSample": {"title", "description", "config"}``. Any modular sample of
:mod:`engine.samples` can also be viewed the extensible way with
:func:`~engine.extensible.snapshot.derive_extensible`.

Examples
--------
>>> sorted(EXTENSIBLE_SAMPLES)
['transfer-shedder-5-brokers']
>>> data = load_extensible_sample("transfer-shedder-5-brokers")
>>> len(data.broker_load_data), data.strategy_state["TransferShedder"]["unloadConditionHitCount"]
(5, 3)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..config import LoadBalancerConfig
from ..errors import InputError
from ..model import NamespaceBundleStats, ResourceUsage
from ..synth import NOW, bundle_names
from .broker_load_data import BrokerLoadData
from .snapshot import BrokerLookupData, ExtensibleLoadData
from .top_bundles import top_k_bundles

__all__ = ["ExtensibleSample", "EXTENSIBLE_SAMPLES", "EXTENSIBLE_SAMPLES_DIR", "load_extensible_sample",
           "extensible_sample_json", "three_brokers"]

EXTENSIBLE_SAMPLES_DIR = Path(__file__).resolve().parent.parent.parent / "samples" / "extensible"
MB = 1024 * 1024


@dataclass(frozen=True)
class ExtensibleSample:
    name: str
    title: str
    description: str
    build: Callable[[], ExtensibleLoadData]
    config: dict


def _five_brokers() -> ExtensibleLoadData:
    conf = LoadBalancerConfig()
    # cpu %, bundle throughputs (MB/s): in = out = half of each
    spec = {
        "broker-a:8080": (92, [12, 20, 30, 40, 55, 70, 100, 133]),
        "broker-b:8080": (80, [10, 20, 30, 40, 50, 60, 80, 110]),
        "broker-c:8080": (45, [15, 20, 25, 30, 35, 45, 55]),
        "broker-d:8080": (20, [5, 8, 12, 15, 20, 40]),
        "broker-e:8080": (8, [2, 3, 5, 10, 20]),
    }
    names = iter(bundle_names("shop/orders", 64))
    data = ExtensibleLoadData(now_ms=NOW, lookup={}, ownership={})
    for broker, (cpu, sizes) in spec.items():
        stats = {}
        for s in sizes:
            thr = s * MB
            stats[next(names)] = NamespaceBundleStats(msg_rate_in=thr / 2048, msg_throughput_in=thr / 2,
                                                      msg_rate_out=thr / 2048, msg_throughput_out=thr / 2,
                                                      consumer_count=4, producer_count=2, topics=10)
        thr_in = sum(s.msg_throughput_in for s in stats.values())
        thr_out = sum(s.msg_throughput_out for s in stats.values())
        nic = 10_000_000.0  # Kbit/s
        usage = {"cpu": ResourceUsage(cpu * 8.0, 800.0), "memory": ResourceUsage(3000.0, 8192.0),
                 "direct_memory": ResourceUsage(900.0, 4096.0),
                 "bandwidth_in": ResourceUsage(thr_in * 8 / 1000, nic),
                 "bandwidth_out": ResourceUsage(thr_out * 8 / 1000, nic)}
        d = BrokerLoadData()
        d.update(usage, thr_in, thr_out, sum(s.msg_rate_in for s in stats.values()),
                 sum(s.msg_rate_out for s in stats.values()), len(stats), 10 * len(stats), conf, now_ms=NOW - 4000)
        data.broker_load_data[broker] = d
        data.top_bundles[broker] = top_k_bundles(stats, None, conf)
        data.lookup[broker] = BrokerLookupData(broker_version="4.0.3")
        for b in stats:
            data.ownership[b] = broker
    data.strategy_state = {"TransferShedder": {"unloadConditionHitCount": 3}}
    return data


def three_brokers(loads: tuple, throughputs: tuple) -> ExtensibleLoadData:
    """Three brokers ``b1..b3`` with the given weighted load EMAs (fractions) and throughput EMAs (B/s),
    each owning four bundles with 2.5, 2.5, 5 and 90 % of its throughput; the leader has counted enough unbalanced cycles
    for this one to shed (a small input for the release examples)."""
    data = ExtensibleLoadData(now_ms=NOW, lookup={}, ownership={})
    names = iter(bundle_names("t/ns", 16))
    shares = (0.025, 0.025, 0.05, 0.9)
    for i, (load, thr) in enumerate(zip(loads, throughputs)):
        b = f"b{i + 1}"
        stats = {next(names): NamespaceBundleStats(msg_throughput_in=thr * f / 2, msg_throughput_out=thr * f / 2,
                                                   msg_rate_in=thr * f / 2048, msg_rate_out=thr * f / 2048)
                 for f in shares}
        d = BrokerLoadData(msg_throughput_in=thr / 2, msg_throughput_out=thr / 2, msg_rate_in=thr / 2048,
                           msg_rate_out=thr / 2048, bundle_count=4, topics=4, max_resource_usage=load,
                           weighted_max_ema=load, msg_throughput_ema=thr, updated_at=NOW - 4000,
                           reported_at=NOW - 4000)
        data.broker_load_data[b] = d
        data.top_bundles[b] = top_k_bundles(stats, None, LoadBalancerConfig())
        data.lookup[b] = BrokerLookupData()
        for x in stats:
            data.ownership[x] = b
    data.strategy_state = {"TransferShedder": {"unloadConditionHitCount": 3}}
    return data


EXTENSIBLE_SAMPLES: dict[str, ExtensibleSample] = {s.name: s for s in [
    ExtensibleSample(
        "transfer-shedder-5-brokers", "TransferShedder: five brokers, one pair swaps bundles",
        "CPU 92 / 80 / 45 / 20 / 8 %: average 49 %, std 32.7 % > target 25 %. The leader has already counted 3 "
        "unbalanced cycles, so this cycle (hit 4 > 3) sheds: broker-a gives its smallest bundles to broker-e "
        "until about half their load gap (210 of 460 MB/s) is marked; its 70 MB/s bundle only fits once "
        "broker-e's four smallest bundles (20 MB/s) are swapped back. The std estimate drops to 19.2 % and "
        "broker-b (80 %, not above 85 %) is left alone. The estimate ignores the swapped-back traffic unless "
        "loadBalancerDebugModeEnabled=true (Pulsar's quirk).",
        _five_brokers, {}),
]}


def load_extensible_sample(name: str) -> ExtensibleLoadData:
    """Build a shipped extensible sample (fresh objects each call)."""
    s = EXTENSIBLE_SAMPLES.get(name)
    if s is None:
        raise InputError(f"unknown extensible sample {name!r}; known: {', '.join(EXTENSIBLE_SAMPLES)}")
    data = s.build()
    data.source = f"sample:{name}"
    return data


def extensible_sample_json(name: str) -> dict:
    """The JSON written to ``samples/extensible/<name>.json``."""
    s = EXTENSIBLE_SAMPLES[name]
    d = s.build().to_json()
    d["shedlabSample"] = {"title": s.title, "description": s.description, "config": s.config}
    return d
