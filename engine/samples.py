"""Shipped sample snapshots: the field findings' worked examples, so a new user sees real decisions.

Each sample is built here in code and also written to ``samples/snapshots/<name>.json`` (by
``python scripts/make_samples.py``; a test keeps the two in sync) so the command line can read it.
A sample JSON carries ``"shedlabSample": {"title", "description", "config"}`` — the broker.conf keys
that reproduce the finding (ignored by Pulsar-format readers).

Examples
--------
>>> [s.name for s in list_samples()][:2]
['bigo-threshold-first-unload', 'bigo-threshold-over-unloading']
>>> ld = load_sample("yahoo-japan-3-brokers")
>>> len(ld.brokers)
3
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .config import IMPL, LoadBalancerConfig
from .model import LoadData
from .synth import NOW, bundle_names, make_snapshot, random_snapshot

__all__ = ["Sample", "SAMPLES", "list_samples", "load_sample", "sample_config", "SAMPLES_DIR", "sample_json"]

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples" / "snapshots"
MB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    name: str
    title: str
    description: str
    build: Callable[[], LoadData]
    config: dict = field(default_factory=dict)  # broker.conf keys reproducing the finding
    ship_json: bool = True
    #: what the home page's card says beside the strategies, e.g. the policy-free answer it differs from
    note: str = ""


def _seed(hist_after: dict, real: dict, h: float = 0.9) -> dict:
    """History seeds such that one EMA update with ``real`` gives ``hist_after`` (as logged)."""
    return {b: (hist_after[b] - (1 - h) * real[b]) / h for b in hist_after}


def _bigo_first_unload() -> LoadData:
    ips = {".83": "10.0.0.83:8080", ".32": "10.0.0.32:8080", ".87": "10.0.0.87:8080", ".206": "10.0.0.206:8080",
           ".161": "10.0.0.161:8080"}
    real = {".83": 0.620, ".32": 0.614, ".87": 0.345, ".206": 0.685, ".161": 0.419}
    thr = {".83": 201.3, ".32": 198.6, ".87": 110.2, ".206": 222.96, ".161": 135.4}  # MB/s in+out
    shares = [40.0, 35.0, 30.0, 28.0, 25.0, 24.0, 21.96, 19.0]  # .206's bundles, sum 222.96
    names = bundle_names("bigo/load-test", 40)
    brokers, k = {}, 0
    for key, ip in ips.items():
        if key == ".206":
            sizes = shares
        else:
            n = 8
            sizes = [thr[key] / n * f for f in (1.3, 1.2, 1.1, 1.0, 1.0, 0.9, 0.8, 0.7)]
        bundles = {}
        for s in sizes:
            bundles[names[k]] = dict(rate=round(s * 1000 / 1.0, 3), throughput=s * MB, topics=12)
            k += 1
        u = real[key] * 100
        brokers[ip] = dict(cpu=u, bandwidth_in=u * 0.55, bandwidth_out=u * 0.7, direct_memory=20.0, bundles=bundles)
    ld = make_snapshot(brokers)
    th_hist = {".83": 0.1464, ".32": 0.1781, ".87": 0.1344, ".206": 0.2895, ".161": 0.1192}
    pl_hist = {".83": 0.0825, ".32": 0.1114, ".87": 0.0460, ".206": 0.2393, ".161": 0.0601}
    ld.strategy_state = {
        "ThresholdShedder": {"history": {ips[b]: v for b, v in _seed(th_hist, real).items()}},
        "LeastResourceUsageWithWeight": {"history": {ips[b]: v for b, v in _seed(pl_hist, real).items()}},
    }
    return ld


def _bigo_over_unloading() -> LoadData:
    ips = {".83": "10.0.0.83:8080", ".32": "10.0.0.32:8080", ".206": "10.0.0.206:8080"}
    real = {".83": 0.72, ".32": 0.70, ".206": 0.45}
    total = 14.887 + 188.944  # .32's throughput, MB/s
    thr = {".83": 215.0, ".32": total, ".206": 120.0}
    names = bundle_names("bigo/load-test", 60)
    brokers, k = {}, 0
    for key, ip in ips.items():
        n = 20
        w = [1 + 0.01 * (i - n / 2) for i in range(n)]
        sizes = [thr[key] * x / sum(w) for x in w]
        bundles = {}
        for s2 in sizes:
            bundles[names[k]] = dict(rate=round(s2 * 900, 3), throughput=s2 * MB, topics=10)
            k += 1
        u = real[key] * 100
        brokers[ip] = dict(cpu=u, bandwidth_in=u * 0.5, bandwidth_out=u * 0.6, direct_memory=15.0, bundles=bundles)
    ld = make_snapshot(brokers)
    avg = 0.7809 - 0.1 + 0.05 - 14.887 / total  # from the logged amount: frac = u - avg - th + 0.05
    other = 3 * avg - 0.7809
    th_hist = {".83": 0.6600, ".32": 0.7809, ".206": other - 0.6600}
    pl_hist = {".83": 0.6968, ".32": 0.6564, ".206": 0.5448}
    ld.strategy_state = {
        "ThresholdShedder": {"history": {ips[b]: v for b, v in _seed(th_hist, real).items()}},
        "LeastResourceUsageWithWeight": {"history": {ips[b]: v for b, v in _seed(pl_hist, real).items()}},
    }
    return ld


def _yahoo_japan() -> LoadData:
    names = bundle_names("public/default", 8)
    spec = {
        "broker1:8080": dict(cpu=89, direct_memory=33, bandwidth_in=59, bandwidth_out=81,
                             bundles={names[0]: dict(rate=4000, throughput=120 * MB, topics=40),
                                      names[1]: dict(rate=3000, throughput=90 * MB, topics=30),
                                      names[2]: dict(rate=1680, throughput=44 * MB, topics=20),
                                      names[3]: dict(rate=1000, throughput=30 * MB, topics=10)}),
        "broker2:8080": dict(cpu=19, direct_memory=11, bandwidth_in=40, bandwidth_out=64,
                             bundles={names[4]: dict(rate=312, throughput=7 * MB, topics=6),
                                      names[5]: dict(rate=200, throughput=5 * MB, topics=4)}),
        "broker3:8080": dict(cpu=3, direct_memory=1, bandwidth_in=1, bandwidth_out=1,
                             bundles={names[6]: dict(rate=60, throughput=1.2 * MB, topics=2),
                                      names[7]: dict(rate=38, throughput=0.8 * MB, topics=1)}),
    }
    return make_snapshot(spec)


def _avg_pairing() -> LoadData:
    scores = [20, 51, 52, 80, 80, 80]
    names = bundle_names("bigo/pairs", 36)
    brokers, k = {}, 0
    for j, s in enumerate(scores):
        bundles = {}
        for i in range(6):
            rate = s * 150 * (1.4 - 0.15 * i)
            bundles[names[k]] = dict(rate=round(rate, 3), throughput=rate * 4096, topics=8)
            k += 1
        brokers[f"broker-{j + 1}:8080"] = dict(cpu=s, bandwidth_in=s * 0.6, bandwidth_out=s * 0.7, bundles=bundles)
    ld = make_snapshot(brokers)
    for i, b in enumerate(ld.bundle_data.values()):
        b.long_term.num_samples = 900 + i
    return ld


def _homogeneous_avg() -> LoadData:
    usage = {"10.0.0.83:8080": 63.0, "10.0.0.32:8080": 55.0, "10.0.0.87:8080": 48.0, "10.0.0.206:8080": 44.0,
             "10.0.0.161:8080": 38.5}
    names = bundle_names("bigo/load-test", 40)
    brokers, k = {}, 0
    for ip, u in usage.items():
        bundles = {}
        for i in range(8):
            rate = u * 400 * (1.3 - 0.08 * i)
            bundles[names[k]] = dict(rate=round(rate, 3), throughput=rate * 3000, topics=15)
            k += 1
        brokers[ip] = dict(cpu=u, bandwidth_in=u * 0.5, bandwidth_out=u * 0.6, bundles=bundles)
    ld = make_snapshot(brokers)
    for i, b in enumerate(ld.bundle_data.values()):
        b.long_term.num_samples = 900 + i
    return ld


#: the isolation-groups sample's policies, in the shapes ``pulsar-admin ns-isolation-policy list`` and
#: ``namespaces get-anti-affinity-group`` give them (engine.policies)
ISOLATION_SAMPLE_POLICIES = {
    "namespaceIsolationPolicies": {
        "payments": {"namespaces": ["acme/payments.*"], "primary": ["broker-[0-3].*"], "secondary": ["broker-[4-5].*"],
                     "auto_failover_policy": {"policy_type": "min_available",
                                              "parameters": {"min_limit": "2", "usage_threshold": "80"}}},
        "analytics": {"namespaces": ["acme/analytics"], "primary": ["broker-[6-7].*"], "secondary": [],
                      "auto_failover_policy": {"policy_type": "min_available",
                                               "parameters": {"min_limit": "1", "usage_threshold": "80"}}}},
    "antiAffinityGroups": {"acme/payments-a": "payments-ha", "acme/payments-b": "payments-ha"},
}


def _isolation_groups() -> LoadData:
    """Eight brokers: payments on broker-0..3 (broker-4/5 secondary), analytics on broker-6/7, the rest
    (acme/web) on the shared broker-4/5; payments-a and payments-b in one anti-affinity group."""
    from .policies import attach, read_policies_json

    layout = {0: ("acme/payments-a", 86), 1: ("acme/payments-b", 44), 2: ("acme/payments-c", 40),
              3: ("acme/payments-c", 38), 4: ("acme/web", 35), 5: ("acme/web", 33), 6: ("acme/analytics", 20),
              7: ("acme/analytics", 8)}
    names = {ns: bundle_names(ns, 8) for ns in {v[0] for v in layout.values()}}
    used = {ns: 0 for ns in names}
    brokers = {}
    for j, (ns, u) in layout.items():
        bundles = {}
        for i in range(4):
            b = names[ns][used[ns]]
            used[ns] += 1
            rate = u * 60 * (1.3 - 0.2 * i)
            bundles[b] = dict(rate=round(rate, 3), throughput=rate * 2048, topics=6)
        brokers[f"broker-{j}:8080"] = dict(cpu=u, bandwidth_in=u * 0.6, bandwidth_out=u * 0.7, direct_memory=20.0,
                                           bundles=bundles)
    ld = make_snapshot(brokers)
    return attach(ld, read_policies_json(ISOLATION_SAMPLE_POLICIES, "sample:isolation-groups", "bundle"))


def _cluster_100() -> LoadData:
    return random_snapshot(100, 100, seed=100, namespaces=20, skew=0.6, now_ms=NOW)


_THRESHOLD_LRU = {"loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
                  "loadBalancerLoadPlacementStrategy": IMPL + "LeastResourceUsageWithWeight",
                  "loadBalancerDistributeBundlesEvenlyEnabled": False}
_BIGO_AVG = {"loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder",
             "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder",
             "loadBalancerDistributeBundlesEvenlyEnabled": False, "maxUnloadPercentage": 0.5,
             "minUnloadMessageThroughput": 10 * MB, "minUnloadMessage": 10000}

SAMPLES: dict[str, Sample] = {s.name: s for s in [
    Sample("bigo-threshold-first-unload", "BIGO: ThresholdShedder's first unload (5 brokers)",
           "Field findings §1.1: history scores lag the real load; only .206 is above average + 10 %, "
           "it must offload at least 14.709 MB/s; LeastResourceUsageWithWeight finds no broker 10 % below "
           "the average and assigns at random (the over-loading BIGO saw).",
           _bigo_first_unload, _THRESHOLD_LRU),
    Sample("bigo-threshold-over-unloading", "BIGO: over-unloading after scale-in (3 brokers)",
           "Field findings §1.1 round 2: .32 at 78.09 % > 65.79 % + 10 % offloads 14.887 MB/s (left 188.944 MB/s); "
           "placement history average 63.27 % leaves no candidate: random, possibly onto the hot .83.",
           _bigo_over_unloading, _THRESHOLD_LRU),
    Sample("yahoo-japan-3-brokers", "Yahoo Japan: three brokers, one hot",
           "Field findings §3: broker1 CPU 89 %, direct memory 33 %, bandwidth in 59 %, out 81 %; broker2 "
           "19/11/40/64; broker3 3/1/1/1; message rates 9680/512/98 msg/s and throughputs 284/12/2 MiB/s. "
           "OverloadShedder, ThresholdShedder and UniformLoadShedder all unload from broker1.",
           _yahoo_japan, {}),
    Sample("avgshedder-pairing-6-brokers", "AvgShedder pairing: scores 20, 51, 52, 80, 80, 80",
           "Field findings §1.3: ThresholdShedder would shed all three 80s onto the 20; AvgShedder pairs one "
           "80 with the 20 and needs 2 consecutive high hits (gap >= 40): run 2 cycles.",
           _avg_pairing, _BIGO_AVG),
    Sample("bigo-avgshedder-homogeneous", "AvgShedder on the homogeneous start (63 vs 38.5)",
           "Field findings §1.4: the hottest (63) and coolest (38.5) differ by 24.5 > 15, so after 8 checks "
           "(8 cycles) they share load: one unload, then stable.",
           _homogeneous_avg, _BIGO_AVG),
    Sample("isolation-groups", "Isolation groups and an anti-affinity group change the destination (8 brokers)",
           "Isolation and anti-affinity: broker-0 (86 %) sheds two acme/payments-a bundles. Without the cluster's policies they go to "
           "the coldest broker, broker-7. With them (shipped beside the snapshot: ns-isolation-policy `payments` "
           "pins acme/payments.* to broker-[0-3] with broker-[4-5] as failover secondaries, `analytics` pins "
           "acme/analytics to broker-[6-7], and payments-a / payments-b share the anti-affinity group "
           "payments-ha) only broker-0..3 may take them, broker-1 is dropped because it already serves "
           "payments-b, and they go to broker-3. The Tuner lists every broker a policy excluded and why.",
           _isolation_groups, {"loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
                               "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate"},
           note="cluster policies: broker-3 with them, broker-7 without"),
    Sample("cluster-100-brokers", "A 100-broker, 10,000-bundle cluster (generated)",
           "A seeded random cluster with uneven load across 20 namespaces, for exploring at scale.",
           _cluster_100, {}, ship_json=False),
]}


def list_samples() -> list[Sample]:
    return list(SAMPLES.values())


def load_sample(name: str) -> LoadData:
    """Build a shipped sample (fresh objects each call)."""
    from .errors import InputError

    s = SAMPLES.get(name)
    if s is None:
        raise InputError(f"unknown sample {name!r}; known: {', '.join(SAMPLES)}")
    ld = s.build()
    ld.source = f"sample:{name}"
    return ld


def sample_config(name: str, base: LoadBalancerConfig | None = None) -> LoadBalancerConfig:
    """The config that reproduces a sample's finding."""
    return (base or LoadBalancerConfig()).with_values(SAMPLES[name].config)


def sample_json(name: str) -> dict:
    """The JSON written to ``samples/snapshots/<name>.json``."""
    s = SAMPLES[name]
    ld = s.build()
    d = ld.to_json()
    from .policies import POLICY_KEY, policies_of

    pol = policies_of(ld)
    if pol is not None:  # the cluster's isolation / anti-affinity / failure-domain policies
        d[POLICY_KEY] = pol.to_json()
    d["shedlabSample"] = {"title": s.title, "description": s.description, "config": s.config}
    return d
