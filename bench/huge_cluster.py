"""A large LoadData JSON written straight from arrays (seconds, not minutes, at a million bundles).

``engine.synth.random_snapshot`` builds the object model first: fine at 100,000 bundles, ~15 minutes
and gigabytes at a million. This writes the same document shape (every broker's ``lastStats`` and
``bundles``, ``bundleData``, ``timeAverageData``; the distributions of ``random_snapshot``: a gamma
"heat" per broker, gamma message rates, 500–4,000 bytes per message, 1–29 topics a bundle, 20
namespaces, distinct long-term sample counts) with one formatted string per entry.

    .venv/bin/python bench/huge_cluster.py 10000 1000000 /tmp/cluster-10000x1000000.json
"""
from __future__ import annotations

import json
import sys

import numpy as np

NOW = 1_765_000_000_000


def huge_snapshot_bytes(n_brokers: int, n_bundles: int, seed: int = 100, namespaces: int = 20,
                        skew: float = 0.6) -> bytes:
    """The LoadData JSON (UTF-8) of ``n_brokers`` brokers holding ``n_bundles`` bundles between them."""
    rng = np.random.default_rng(seed)
    per = max(1, n_bundles // n_brokers)
    nk = per * n_brokers
    per_ns = -(-nk // namespaces)
    seg = 2**32 // per_ns
    names = [f"tenant/ns{i}/0x{k * seg:08x}_0x{(k + 1) * seg if k + 1 < per_ns else 0xFFFFFFFF:08x}"
             for i in range(namespaces) for k in range(per_ns)][:nk]
    rng.shuffle(names)
    heat = np.clip(rng.gamma(2.0, 0.5, n_brokers) * skew, 0.05, 4.0)
    owner = np.repeat(np.arange(n_brokers), per)
    rate = np.round(rng.gamma(2.0, 400.0, nk) * heat[owner], 3)
    thr = np.round(rate * rng.uniform(500, 4000, nk), 1)
    topics = rng.integers(1, 30, nk)
    half_r, half_t = rate / 2, thr / 2
    cpu = np.clip(10 + 25 * heat + rng.normal(0, 5, n_brokers), 1, 99)
    bw = np.clip(5 + 20 * heat + rng.normal(0, 5, n_brokers), 0.5, 99)
    bwo = bw * rng.uniform(0.8, 1.5, n_brokers)
    dm = rng.uniform(1, 40, n_brokers)
    r_b = np.bincount(owner, half_r, n_brokers)
    t_b = np.bincount(owner, half_t, n_brokers)
    cpu, bw, bwo, dm, r_b, t_b = (a.tolist() for a in (cpu, bw, bwo, dm, r_b, t_b))  # Python floats: repr is JSON
    stat = [f'"{n}":{{"msgRateIn":{r!r},"msgThroughputIn":{t!r},"msgRateOut":{r!r},"msgThroughputOut":{t!r},'
            f'"consumerCount":1,"producerCount":1,"topics":{int(c)},"cacheSize":0}}'
            for n, r, t, c in zip(names, half_r.tolist(), half_t.tolist(), topics.tolist())]
    out = ['{"brokers":{']
    for j in range(n_brokers):
        b = f"broker-{j}.example:8080"
        sl = slice(j * per, (j + 1) * per)
        out.append(("," if j else "") + f'"{b}":{{"brokerId":"{b}",'
                   f'"cpu":{{"usage":{cpu[j] * 8.0!r},"limit":800.0}},"memory":{{"usage":0.0,"limit":8192.0}},'
                   f'"directMemory":{{"usage":{dm[j] * 40.96!r},"limit":4096.0}},'
                   f'"bandwidthIn":{{"usage":{bw[j] * 1e5!r},"limit":10000000.0}},'
                   f'"bandwidthOut":{{"usage":{bwo[j] * 1e5!r},"limit":10000000.0}},'
                   f'"msgThroughputIn":{t_b[j]!r},"msgThroughputOut":{t_b[j]!r},"msgRateIn":{r_b[j]!r},'
                   f'"msgRateOut":{r_b[j]!r},"lastUpdate":{NOW},"lastStats":{{' + ",".join(stat[sl]) + "},"
                   f'"numTopics":{int(topics[sl].sum())},"numBundles":{per},"numConsumers":{per},"numProducers":{per},'
                   f'"bundles":{json.dumps(names[sl])},"lastBundleGains":[],"lastBundleLosses":[],'
                   f'"persistentTopicsEnabled":true,"nonPersistentTopicsEnabled":true,"startTimestamp":0,'
                   f'"maxResourceUsage":{max(cpu[j], bw[j], bwo[j]) / 100!r},"loadReportType":"LocalBrokerData",'
                   f'"brokerVersionString":"4.1.0","loadManagerClassName":'
                   f'"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"}}')
    del stat
    out.append('},"bundleData":{')
    out.append(",".join(
        f'"{n}":{{"shortTermData":{{"maxSamples":10,"numSamples":10,"msgThroughputIn":{t!r},"msgThroughputOut":{t!r},'
        f'"msgRateIn":{r!r},"msgRateOut":{r!r}}},"longTermData":{{"maxSamples":1000,"numSamples":{900 + k % 100},'
        f'"msgThroughputIn":{t!r},"msgThroughputOut":{t!r},"msgRateIn":{r!r},"msgRateOut":{r!r}}},"topics":{int(c)}}}'
        for k, (n, r, t, c) in enumerate(zip(names, half_r.tolist(), half_t.tolist(), topics.tolist()))))
    out.append('},"timeAverageData":{')
    out.append(",".join(
        f'"broker-{j}.example:8080":{{"shortTermMsgThroughputIn":{t!r},"shortTermMsgThroughputOut":{t!r},'
        f'"shortTermMsgRateIn":{r!r},"shortTermMsgRateOut":{r!r},"longTermMsgThroughputIn":{t!r},'
        f'"longTermMsgThroughputOut":{t!r},"longTermMsgRateIn":{r!r},"longTermMsgRateOut":{r!r}}}'
        for j, (r, t) in enumerate(zip(r_b, t_b))))
    out.append(f'}},"now":{NOW}}}')
    return "".join(out).encode()


if __name__ == "__main__":
    b, k, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    raw = huge_snapshot_bytes(b, k)
    with open(path, "wb") as f:
        f.write(raw)
    print(f"{path}: {len(raw) / 1e6:.0f} MB")
