"""Inputs for the oracle, biased to the edges: ties, scores less than one point apart, zero traffic, a
broker's only bundle, hit counts across cycles, float32 boundaries, many brokers.

One generator, two sources of choices: :class:`RandomDraw` (a seeded ``random.Random``: fast, for the
fixed-seed sample of ``make test`` and the long campaign) and :class:`HypothesisDraw` (hypothesis'
``data.draw``: for the property tests, where hypothesis explores and shrinks a failure itself).

A case is plain JSON: ``{"id", "kind": "shed", "strategy", "conf": {broker.conf key: value}, "cycles":
[LoadData JSON, ...], "carryUnloaded": bool}`` or ``{"id", "kind": "place", "strategy", "conf",
"steps": [{"data": LoadData JSON, "bundle", "candidates": [ids]}]}``. LoadData JSON is the shape the
engine reads (``engine.loaddata_json``) and Pulsar's Jackson mapping reads. The ``bundle`` kind
(:func:`bundle_case`): ``{"id", "kind": "bundle", "namespace", "boundaries", "lookups": [topic names],
"splits": [{"bundle": index, "algorithm", "topics", "msgRate", "throughput", "positions", "force", "conf"}]}``.
The ``filters`` kind (:func:`filters_case`): ``{"id", "kind": "filters", "conf", "data": LoadData JSON with
preallocations, "policies": {"namespaceIsolationPolicies", "antiAffinityGroups", "failureDomains"}, "bundles":
[names placed in turn]}``: selectBrokerForAssignment's candidate filters, with a recording strategy on both sides.

The extensible load manager's kinds, ``transfer`` (:func:`transfer_case`: TransferShedder across cycles) and
``extplace`` (:func:`extplace_case`: the broker filters and the extensible LeastResourceUsageWithWeight), carry
Pulsar's ``BrokerLoadData`` / ``TopBundlesLoadData`` / ``BrokerLookupData`` JSON per broker.
"""
from __future__ import annotations

import math
import random
import struct
import zlib

SHEDDERS = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")
PLACEMENTS = ("LeastLongTermMessageRate", "LeastResourceUsageWithWeight")
#: the "bundle" kind: topic → bundle lookups and the split algorithms' boundaries
BUNDLE = "bundle"
#: ... and the extensible load manager's kinds (TRANSFER, EXTPLACE below)
STRATEGIES = SHEDDERS + PLACEMENTS + (BUNDLE,) + ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight")
#: strategies with a memory across calls (their inputs get several cycles)
STATEFUL = ("ThresholdShedder", "AvgShedder", "LeastResourceUsageWithWeight")

MB = 1024 * 1024
_NS = ("public/default", "tenant-a/ns1", "t/ns-2")
_NAME_STYLES = ("b{}:8080", "broker-{}.pulsar.svc:8080", "10.0.0.{}:8080", "pulsar-broker-{}:8080")


def f32(x: float) -> float:
    """``x`` rounded to float32 (a value on a float32 boundary)."""
    return struct.unpack("f", struct.pack("f", x))[0]


class RandomDraw:
    """Choices from a seeded ``random.Random``."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def int(self, lo, hi):
        return self.r.randint(lo, hi)

    def choice(self, seq):
        return seq[self.r.randrange(len(seq))]

    def unit(self):
        return self.r.random()

    def bool(self, p=0.5):
        return self.r.random() < p


class HypothesisDraw:
    """Choices from hypothesis' ``st.data()`` (so hypothesis can shrink them)."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.d, self.st = data, st

    def int(self, lo, hi):
        return self.d.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.d.draw(self.st.integers(0, len(seq) - 1))]

    def unit(self):
        return self.d.draw(self.st.floats(0.0, 1.0, exclude_max=True))

    def bool(self, p=0.5):
        return self.d.draw(self.st.booleans())


class _Values:
    """Numbers that sit on edges: zero, repeats of earlier values (ties), a hair apart, float32-rounded."""

    def __init__(self, d):
        self.d = d
        self.seen: list[float] = []

    def pick(self, lo: float, hi: float, *, integral=False) -> float:
        d = self.d
        k = d.int(0, 9)
        if k == 0:
            v = 0.0
        elif k in (1, 2) and self.seen:
            v = d.choice(self.seen)  # a tie
        elif k == 3 and self.seen:
            base = d.choice(self.seen)
            v = base + d.choice((1e-9, -1e-9, 0.5, -0.5, 0.999, 1e-6)) * max(1.0, abs(base) * d.choice((0, 1e-12, 1e-7)))
        elif k == 4:
            v = f32(lo + (hi - lo) * d.unit())
        elif k == 5:
            v = d.choice((lo, hi, (lo + hi) / 2))
        else:
            v = lo + (hi - lo) * d.unit()
        v = min(max(v, 0.0), hi * 1.5 if hi > 0 else 1.0)
        if integral:
            v = float(round(v))
        self.seen.append(v)
        if len(self.seen) > 16:
            self.seen.pop(0)
        return v


def _bundles(d, count: int, used: set) -> list[str]:
    out = []
    while len(out) < count:
        ns = d.choice(_NS)
        lo = d.int(0, 255) << 24
        name = f"{ns}/0x{lo:08x}_0x{min(lo + (1 << 24), 0xFFFFFFFF):08x}"
        if name not in used:
            used.add(name)
            out.append(name)
    return out


def _tam(vals: _Values, max_samples: int, rate_hi: float, thr_hi: float) -> dict:
    return {"maxSamples": max_samples, "numSamples": max_samples,
            "msgThroughputIn": vals.pick(0, thr_hi), "msgThroughputOut": vals.pick(0, thr_hi),
            "msgRateIn": vals.pick(0, rate_hi), "msgRateOut": vals.pick(0, rate_hi)}


def _resource(vals: _Values, limit: float) -> dict:
    d = vals.d
    if d.int(0, 19) == 0:
        limit = 0.0  # no limit reported
    return {"usage": vals.pick(0, limit * 1.1 if limit else 100.0), "limit": limit}


def load_data(d, *, nb: int | None = None, now: int = 1_700_000_000_000) -> dict:
    """One LoadData JSON (brokers, bundleData, timeAverageData, recentlyUnloadedBundles)."""
    vals = _Values(d)
    if nb is None:
        k = d.int(0, 19)
        nb = d.int(1, 3) if k < 9 else d.int(4, 8) if k < 18 else d.int(9, 30)
    style = d.choice(_NAME_STYLES)
    ids = [style.format(i) for i in d.choice((range(1, nb + 1), range(nb, 0, -1)))]
    rate_hi = d.choice((100.0, 5000.0, 1e6))
    thr_hi = d.choice((1e5, 5e7, 1e9))
    brokers, bundle_data, tad, used = {}, {}, {}, set()
    with_stats = d.bool(0.3)  # the reports' lastStats (the strategies read bundleData; the reader reads both)
    for bid in ids:
        nbun = d.choice((0, 1, 1, 2, 3, 4, 6, d.int(0, 12)))
        bundles = _bundles(d, nbun, used)
        last = {}
        for b in bundles:
            st = _tam(vals, 10, rate_hi, thr_hi)
            lt = dict(st) if d.bool(0.7) else _tam(vals, 1000, rate_hi, thr_hi)
            lt["maxSamples"] = lt["numSamples"] = 1000
            bundle_data[b] = {"shortTermData": st, "longTermData": lt, "topics": d.int(0, 50)}
            if with_stats:
                last[b] = {"msgRateIn": st["msgRateIn"], "msgThroughputIn": st["msgThroughputIn"],
                           "msgRateOut": st["msgRateOut"], "msgThroughputOut": st["msgThroughputOut"],
                           "consumerCount": 1, "producerCount": 1, "topics": bundle_data[b]["topics"], "cacheSize": 0}
        if d.bool(0.5):  # the broker's totals are the sum of its bundles (as reported), else independent
            tot = {k: math.fsum(bundle_data[b]["shortTermData"][k] for b in bundles)
                   for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")}
        else:
            tot = {"msgRateIn": vals.pick(0, rate_hi * 4), "msgRateOut": vals.pick(0, rate_hi * 4),
                   "msgThroughputIn": vals.pick(0, thr_hi * 4), "msgThroughputOut": vals.pick(0, thr_hi * 4)}
        brokers[bid] = {
            "cpu": _resource(vals, d.choice((800.0, 400.0, 1600.0))),
            "memory": _resource(vals, 8192.0),
            "directMemory": _resource(vals, 4096.0),
            "bandwidthIn": _resource(vals, d.choice((1e7, 1.25e8, 1e9))),
            "bandwidthOut": _resource(vals, d.choice((1e7, 1.25e8, 1e9))),
            **tot,
            "numTopics": sum(bundle_data[b]["topics"] for b in bundles), "numBundles": len(bundles),
            "numConsumers": 0, "numProducers": 0, "bundles": bundles, "lastStats": last,
            "lastUpdate": now, "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
            "brokerVersionString": "4.0.0", "loadReportType": "LocalBrokerData",
        }
        def sum_of(term, key):
            return math.fsum(bundle_data[b][term][key] for b in bundles)
        if d.bool(0.6):
            tad[bid] = {f"{t}Msg{k}": sum_of(f"{t}Data", f"msg{k}") for t in ("shortTerm", "longTerm")
                        for k in ("ThroughputIn", "ThroughputOut", "RateIn", "RateOut")}
        else:
            tad[bid] = {f"{t}Msg{k}": vals.pick(0, (thr_hi if "Through" in k else rate_hi) * 4)
                        for t in ("shortTerm", "longTerm") for k in ("ThroughputIn", "ThroughputOut", "RateIn",
                                                                   "RateOut")}
    recent = {}
    all_b = sorted(bundle_data)
    if all_b and d.bool(0.3):
        for _ in range(d.int(1, 3)):
            recent[d.choice(all_b)] = now - d.int(0, 3_600_000)
    return {"brokers": brokers, "bundleData": bundle_data, "timeAverageData": tad,
            "recentlyUnloadedBundles": recent, "now": now}


def _perturb(d, ld: dict, now: int) -> dict:
    """The next cycle's LoadData: the same, or some brokers' usage and traffic moved."""
    import copy

    nxt = copy.deepcopy(ld)
    nxt["now"] = now
    if d.bool(0.5):
        return nxt
    vals = _Values(d)
    for bid, rep in nxt["brokers"].items():
        rep["lastUpdate"] = now
        if d.bool(0.4):
            for res in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut"):
                if d.bool(0.5):
                    rep[res]["usage"] = vals.pick(0, rep[res]["limit"] * 1.1 if rep[res]["limit"] else 100.0)
            for k in ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut"):
                if d.bool(0.3):
                    rep[k] = rep[k] * d.choice((0.0, 0.5, 1.0, 2.0))
    return nxt


#: per strategy, the broker.conf keys it reads and edgy values for them (the first value is Pulsar 4.x's default)
CONF_VALUES = {
    "loadBalancerBrokerOverloadedThresholdPercentage": (85, 0, 50, 80, 90, 100),
    "loadBalancerCPUResourceWeight": (1.0, 0.0, 0.5, 2.0),
    "loadBalancerMemoryResourceWeight": (1.0, 0.0, 0.5, 2.0),
    "loadBalancerDirectMemoryResourceWeight": (1.0, 0.0, 0.5, 2.0),
    "loadBalancerBandwidthInResourceWeight": (1.0, 0.0, 0.5, 2.0),
    "loadBalancerBandwidthOutResourceWeight": (1.0, 0.0, 0.5, 2.0),
    "loadBalancerBrokerThresholdShedderPercentage": (10, 0, 1, 5, 30),
    "loadBalancerHistoryResourcePercentage": (0.9, 0.0, 0.5, 1.0),
    "loadBalancerBundleUnloadMinThroughputThreshold": (10, 0, 0.1, 100),
    "lowerBoundarySheddingEnabled": (False, True),
    "loadBalancerMsgRateDifferenceShedderThreshold": (50, 0, 1, 10, 200),
    "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": (4, 0, 1, 1.5, 10),
    "maxUnloadPercentage": (0.2, 0.0, 0.5, 1.0),
    "minUnloadMessage": (1000, 0, 10, 100000),
    "minUnloadMessageThroughput": (1048576, 0, 1000, 10485760),
    "maxUnloadBundleNumPerShedding": (-1, 1, 2),
    "loadBalancerAvgShedderLowThreshold": (15, 0, 5, 40),
    "loadBalancerAvgShedderHighThreshold": (40, 0, 15, 100),
    "loadBalancerAvgShedderHitCountLowThreshold": (8, 1, 2),
    "loadBalancerAvgShedderHitCountHighThreshold": (2, 1, 3),
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": (10, 0, 1, 50),
}
_WEIGHTS = ("loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
            "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight",
            "loadBalancerMemoryResourceWeight")
STRATEGY_KEYS = {
    "OverloadShedder": ("loadBalancerBrokerOverloadedThresholdPercentage",) + _WEIGHTS,
    "ThresholdShedder": ("loadBalancerBrokerThresholdShedderPercentage", "loadBalancerHistoryResourcePercentage",
                         "loadBalancerBundleUnloadMinThroughputThreshold", "lowerBoundarySheddingEnabled") + _WEIGHTS,
    "UniformLoadShedder": ("loadBalancerMsgRateDifferenceShedderThreshold",
                           "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", "maxUnloadPercentage",
                           "minUnloadMessage", "minUnloadMessageThroughput", "maxUnloadBundleNumPerShedding"),
    "AvgShedder": ("loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHighThreshold",
                   "loadBalancerAvgShedderHitCountLowThreshold", "loadBalancerAvgShedderHitCountHighThreshold",
                   "maxUnloadPercentage", "minUnloadMessage", "minUnloadMessageThroughput") + _WEIGHTS,
    "LeastLongTermMessageRate": ("loadBalancerBrokerOverloadedThresholdPercentage",) + _WEIGHTS,
    "LeastResourceUsageWithWeight": ("loadBalancerHistoryResourcePercentage",
                                     "loadBalancerAverageResourceUsageDifferenceThresholdPercentage",
                                     "loadBalancerBrokerOverloadedThresholdPercentage") + _WEIGHTS,
}


def conf(d, strategy: str) -> dict:
    """Every key the strategy reads, set explicitly (so a line's own defaults never decide): mostly the 4.x
    default, sometimes an edge value."""
    out = {}
    for k in STRATEGY_KEYS[strategy]:
        vals = CONF_VALUES[k]
        out[k] = vals[0] if d.bool(0.6) else d.choice(vals)
    return out


def case(d, strategy: str, cid) -> dict:
    """One case for ``strategy``."""
    if strategy == BUNDLE:
        return bundle_case(d, cid)
    if strategy == FILTERS:
        return filters_case(d, cid)
    if strategy == TRANSFER:
        return transfer_case(d, cid)
    if strategy == EXTPLACE:
        return extplace_case(d, cid)
    now = 1_700_000_000_000
    if strategy in SHEDDERS:
        first = load_data(d, now=now)
        k = d.int(0, 9)
        if strategy in STATEFUL:  # memory across cycles: several cycles
            n = 1 if k < 3 else d.int(2, 4) if k < 8 else d.int(5, 8)
        else:  # stateless: the cycles matter only through the recently unloaded bundles
            n = 1 if k < 6 else d.int(2, 3)
        if len(first["brokers"]) > 8:
            n = min(n, 2)  # many brokers: a cycle or two (the cost of a case grows with brokers x cycles)
        cycles = [first]
        for i in range(1, n):
            cycles.append(_perturb(d, cycles[-1], now + i * 60_000))
        return {"id": cid, "kind": "shed", "strategy": strategy, "conf": conf(d, strategy), "cycles": cycles,
                "carryUnloaded": d.bool(0.5)}
    ld = load_data(d, now=now)
    steps = []
    for i in range(1 if strategy not in STATEFUL or d.bool(0.5) else d.int(2, 4)):
        data = ld if i == 0 else _perturb(d, steps[-1]["data"], now + i * 60_000)
        ids = list(data["brokers"])
        cands = [b for b in ids if d.bool(0.85)] or ids[:1]
        bundles = sorted(data["bundleData"])
        bundle = d.choice(bundles) if bundles and d.bool(0.5) else "public/default/0x00000000_0xffffffff"
        steps.append({"data": data, "bundle": bundle, "candidates": cands})
    return {"id": cid, "kind": "place", "strategy": strategy, "conf": conf(d, strategy), "steps": steps}


def sample(strategy: str, n: int, seed: int = 0, start: int = 0):
    """``n`` cases for ``strategy`` from a fixed seed (case ``i`` depends only on seed, strategy, i)."""
    for i in range(start, start + n):
        yield case(RandomDraw(f"{seed}/{strategy}/{i}"), strategy, f"{strategy}/{i}")


# ------------------------------------------------------------------ bundles
FULL = 0xFFFFFFFF
SPLIT_ALGORITHMS = ("range_equally_divide", "topic_count_equally_divide", "specified_positions_divide",
                    "flow_or_qps_equally_divide")
_LOCAL = ("t", "topic-1", "orders", "my_topic.v2", "événements", "主题", "emoji-😀", "Ω≈ç", "a" * 120,
          "x-partition-", "UPPER-lower", "0", "with space")


def _topic(d, ns: str, *, short_ok: bool) -> str:
    """A topic name of ``ns``: persistent or not, sometimes a partition, unicode, long."""
    local = d.choice(_LOCAL)
    k = d.int(0, 9)
    if k < 3:
        local = f"{local}-partition-{d.int(0, 20)}"
    elif k == 3:
        local = local * d.int(2, 8)  # long names
    elif k < 7:
        local = f"{local}-{d.int(0, 10**6)}"
    if short_ok and d.bool(0.15):
        return f"{ns}/{local}"  # short form: persistent:// is implied
    return f"{d.choice(('persistent', 'persistent', 'non-persistent'))}://{ns}/{local}"


def _boundaries(d) -> list[int]:
    """0 … 0xffffffff: initial layouts, split layouts, random cuts, and the tightest ranges."""
    k = d.int(0, 9)
    if k < 4:
        n = d.choice((1, 2, 3, 4, 5, 7, 16))
        seg = (1 << 32) // n
        return [i * seg for i in range(n)] + [FULL]
    pts = set()
    for _ in range(d.int(1, 12)):
        j = d.int(0, 5)
        if j == 0:
            pts.add(d.choice((1, 2, FULL - 1, FULL - 2, 0x80000000, 0x7FFFFFFF)))
        elif j == 1 and pts:  # a range of width 1 or 2
            p = d.choice(sorted(pts))
            pts.add(min(p + d.int(1, 2), FULL - 1))
        else:
            pts.add(d.int(1, FULL - 1))
    return [0] + sorted(pts) + [FULL]


def bundle_case(d, cid) -> dict:
    """``{"id", "kind": "bundle", "namespace", "boundaries", "lookups": [topic...], "splits": [...]}``."""
    ns = d.choice(_NS)
    b = _boundaries(d)
    lookups = [_topic(d, ns, short_ok=True) for _ in range(d.int(1, 12))]
    splits = []
    for _ in range(d.int(1, 4)):
        alg = d.choice(SPLIT_ALGORITHMS)
        s = {"bundle": d.int(0, len(b) - 2), "algorithm": alg}
        if alg != "range_equally_divide":
            # a namespace lists each topic once; half the time most of them hash into the bundle
            want = d.choice((0, 1, 2, 3, 5, 12, 40))
            lo, up = b[s["bundle"]], b[s["bundle"] + 1]
            inside = d.bool(0.5)
            names: list[str] = []
            for _ in range(want * (8 if inside else 1)):
                t = _topic(d, ns, short_ok=False)
                if not inside or lo <= zlib.crc32(t.encode("utf-8")) < up or d.bool(0.05):
                    names.append(t)
                if len(names) >= want:
                    break
            s["topics"] = list(dict.fromkeys(names))
        if alg == "specified_positions_divide":
            lo, up = b[s["bundle"]], b[s["bundle"] + 1]
            pos = []
            for _ in range(d.int(0, 4)):
                j = d.int(0, 4)
                pos.append(d.choice((lo, up, lo + 1, up - 1)) if j == 0 else
                           d.choice(pos) if j == 1 and pos else d.int(lo, up) if j < 4 else d.int(0, FULL))
            s["positions"] = pos
            s["force"] = d.bool(0.5)
        if alg == "flow_or_qps_equally_divide":
            vals = _Values(d)
            s["msgRate"] = [None if d.bool(0.1) else vals.pick(0, 40000) for _ in s["topics"]]
            s["throughput"] = [None if r is None else vals.pick(0, 150 * MB) for r in s["msgRate"]]
            s["conf"] = {"loadBalancerNamespaceBundleMaxMsgRate": d.choice((30000, 1000, 100, 1)),
                         "loadBalancerNamespaceBundleMaxBandwidthMbytes": d.choice((100, 10, 1)),
                         "flowOrQpsDifferenceThresholdPercentage": d.choice((10, 0, 50, 100))}
        splits.append(s)
    return {"id": cid, "kind": "bundle", "namespace": ns, "boundaries": b, "lookups": lookups, "splits": splits}


# ------------------------------------------------------------------ filters
#: the "filters" kind: selectBrokerForAssignment's candidate filters (namespace isolation, max topics,
#: anti-affinity with failure domains, even distribution of a namespace, broker filters, their fallbacks)
FILTERS = "filters"
STRATEGIES = STRATEGIES + (FILTERS,)
MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
#: namespaces of a filters case: few, so that bundles pile up in them; pulsar/system is always spread evenly
_FNS = ("public/default", "tenant-a/ns1", "tenant-a/ns2", "t/ns-2", "pulsar/system")


def _rename_bundles(d, ld: dict, namespaces: tuple) -> None:
    """Move every bundle of ``ld`` into ``namespaces`` (one of them hot), distinct ranges per namespace; every
    reported bundle gets its lastStats entry (the leader's bundle-range cache reads those keys)."""
    hot = d.choice(namespaces)
    used, ren = set(), {}
    for b in sorted(ld["bundleData"]):
        while True:
            ns = hot if d.bool(0.5) else d.choice(namespaces)
            lo = d.int(0, 255) << 24
            name = f"{ns}/0x{lo:08x}_0x{min(lo + (1 << 24), 0xFFFFFFFF):08x}"
            if name not in used:
                used.add(name)
                ren[b] = name
                break
    ld["bundleData"] = {ren[b]: v for b, v in ld["bundleData"].items()}
    ld["recentlyUnloadedBundles"] = {ren[b]: t for b, t in ld["recentlyUnloadedBundles"].items()}
    for rep in ld["brokers"].values():
        rep["bundles"] = [ren[b] for b in rep["bundles"]]
        rep["lastStats"] = {b: {"msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
                                "consumerCount": 0, "producerCount": 0, "topics": ld["bundleData"][b]["topics"],
                                "cacheSize": 0} for b in rep["bundles"]}
    ld["_used"] = used


def _new_bundle(d, ns: str, used: set) -> str:
    for _ in range(64):
        lo = d.int(0, 255) << 24
        name = f"{ns}/0x{lo:08x}_0x{min(lo + (1 << 24), 0xFFFFFFFF):08x}"
        if name not in used:
            used.add(name)
            return name
    return name


def _host_regex(d, hosts: list) -> str:
    """A broker regex: one host exactly, a prefix of several, a class, everything, one with its port, or a
    partial name (``b1`` beside ``b10``)."""
    h = d.choice(hosts)
    k = d.int(0, 9)
    if k < 4:
        return h.replace(".", "\\.")
    if k < 6:
        return h[: max(1, len(h) - 1)].replace(".", "\\.") + ".*"
    if k == 6:
        return ".*"
    if k == 7:
        return h.replace(".", "\\.") + ":8080"
    if k == 8:
        return h.rstrip("0123456789").replace(".", "\\.") + "[1-3]"
    return "nobody"


def _policies(d, ids: list) -> dict:
    hosts = [b.rsplit(":", 1)[0] for b in ids]
    out = {}
    if d.bool(0.6):
        iso = {}
        for i in range(d.int(1, 3)):
            nss = [d.choice(("tenant-a/ns1", "tenant-a/.*", "public/default", "t/ns-2", "pulsar/system", ".*"))
                   for _ in range(d.int(1, 2))]
            iso[d.choice(("pol-a", "pol-b", "ns1-policy", "z", "payments"))] = {
                "namespaces": list(dict.fromkeys(nss)),
                "primary": [_host_regex(d, hosts) for _ in range(d.int(1, 2))],  # the admin API refuses none
                "secondary": [_host_regex(d, hosts) for _ in range(d.int(0, 2))],
                "auto_failover_policy": {"policy_type": "min_available",
                                         "parameters": {"min_limit": str(d.choice((1, 0, 1, 2, 3, 5))),
                                                        "usage_threshold": "80"}}}
        out["namespaceIsolationPolicies"] = iso
    if d.bool(0.7):
        groups = {}
        for ns in _FNS:
            if d.bool(0.6):
                groups[ns] = d.choice(("g1", "g1", "G1", "g2", ""))
        out["antiAffinityGroups"] = groups
    if d.bool(0.6):
        doms = {}
        names = ("dom-a", "dom-b", "dom-c")[: d.int(1, 3)]
        for b in ids:
            if d.bool(0.8):
                doms.setdefault(d.choice(names), []).append(b)
        out["failureDomains"] = {k: {"brokers": v} for k, v in doms.items()}
    return out


FILTER_CONF = {
    "loadBalancerBrokerMaxTopics": (50000, 0, 1, 10, 60, 200),
    "loadBalancerDistributeBundlesEvenlyEnabled": (True, False),
    "failureDomainsEnabled": (False, True),
    "preferLaterVersions": (False, True),
    "loadBalancerBrokerOverloadedThresholdPercentage": (85, 0, 50, 100),
}


def filters_case(d, cid) -> dict:
    """``{"id", "kind": "filters", "strategy": "filters", "conf", "data": LoadData JSON, "policies", "bundles"}``:
    a snapshot with preallocations and the cluster's policies, and the bundles the leader places in turn."""
    nb = d.choice((1, 2, 2, 3, 3, 4, 5, 6, 8, d.int(9, 14)))
    ld = load_data(d, nb=nb)
    _rename_bundles(d, ld, _FNS)
    used = ld.pop("_used")
    ids = list(ld["brokers"])
    odd = d.choice(ids) if d.bool(0.2) else None  # one broker reporting no or another load manager class
    odd_class = d.choice((None, "org.example.OtherLoadManager"))
    for bid, rep in ld["brokers"].items():
        rep["loadManagerClassName"] = odd_class if bid == odd else MODULAR
        rep["brokerVersionString"] = d.choice(("4.0.0", "4.0.0", "4.0.1", "3.0.7", "4.1.0-SNAPSHOT"))
        if d.int(0, 29) == 0:
            rep["brokerVersionString"] = "not-a-version"
        if d.int(0, 14) == 0:
            rep["persistentTopicsEnabled"] = False
        if d.bool(0.3):
            rep["numTopics"] = d.choice((0, 1, 10, 11, 59, 60, 61, 199, 200, 201))
    pre = {}
    for bid in ids:
        if d.bool(0.3):
            for _ in range(d.int(1, 3)):
                b = _new_bundle(d, d.choice(_FNS), used)
                st = _tam(_Values(d), 10, 100.0, 1e5)
                pre.setdefault(bid, {})[b] = {"shortTermData": st, "longTermData": {**st, "maxSamples": 1000,
                                                                                      "numSamples": 1000},
                                              "topics": d.choice((0, 1, 5, 50))}
    ld["preallocatedBundleData"] = pre
    bundles = []
    for _ in range(d.choice((1, 1, 2, 3, 4, 6))):
        k = d.int(0, 9)
        owned = [b for rep in ld["brokers"].values() for b in rep["bundles"]]
        prealloc = [b for p in pre.values() for b in p]
        if k == 0 and owned:
            b = d.choice(owned)
        elif k == 1 and prealloc:
            b = d.choice(prealloc)
        else:
            ns = d.choice(_FNS) if d.bool(0.5) or not owned else owned[0].rsplit("/", 1)[0]
            b = _new_bundle(d, ns, used)
        if b not in ld["bundleData"] and not any(b in p for p in pre.values()):
            st = _tam(_Values(d), 10, 100.0, 1e5)
            ld["bundleData"][b] = {"shortTermData": st, "longTermData": {**st, "maxSamples": 1000, "numSamples": 1000},
                                   "topics": d.choice((0, 1, 5, 50))}
        bundles.append(b)
    # the reported bundles' data is read by no filter (the bundle-range cache reads the reports' lastStats keys):
    # only the bundles to place keep theirs
    ld["bundleData"] = {b: v for b, v in ld["bundleData"].items() if b in bundles}
    ld["timeAverageData"] = {}
    conf = {k: (v[0] if d.bool(0.5) else d.choice(v)) for k, v in FILTER_CONF.items()}
    weights = d.bool(0.3)  # the weights matter only to the overload retry (4.0 on)
    for k in _WEIGHTS:
        conf[k] = CONF_VALUES[k][0] if not weights or d.bool(0.5) else d.choice(CONF_VALUES[k])
    return {"id": cid, "kind": "filters", "strategy": FILTERS, "conf": conf, "data": ld,
            "policies": _policies(d, ids), "bundles": bundles}


# ------------------------------------------------------------------ the extensible load manager
#: the "transfer" kind: the extensible load manager's TransferShedder across cycles
TRANSFER = "TransferShedder"
#: the "extplace" kind: the extensible placement (broker filters, then its LeastResourceUsageWithWeight)
EXTPLACE = "ExtensibleLeastResourceUsageWithWeight"
EXTENSIBLE_KINDS = {TRANSFER: "transfer", EXTPLACE: "extplace"}
EXTENSIBLE_LM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
_MODULAR_LM = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"

#: the broker.conf keys TransferShedder reads (on every line; loadBalancerSheddingExcludedNamespaces only
#: where the line has it) and edgy values (the first is the default)
TRANSFER_CONF = {
    "loadBalancerBrokerLoadTargetStd": (0.25, 0.0, 0.1, 0.05, 0.5),
    "loadBalancerSheddingConditionHitCountThreshold": (3, 0, 0, 1, 2),
    "loadBalancerTransferEnabled": (True, False),
    "loadBalancerMaxNumberOfBrokerSheddingPerCycle": (3, 1, 2, 10),
    "loadBalanceSheddingDelayInSeconds": (180, 0, 60, 600),
    "loadBalancerBrokerLoadDataTTLInSeconds": (1800, 60, 300),
    "loadBalancerBrokerOverloadedThresholdPercentage": (85, 0, 50, 100),
    "loadBalancerDebugModeEnabled": (False, True),
    "loadBalancerSheddingExcludedNamespaces": ("", "public/default", "t/ns-2,tenant-a/ns1"),
}
#: the keys the extensible placement reads: the strategy's threshold and the filters' keys
EXTPLACE_CONF = {
    "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": (10, 0, 1, 5, 50),
    "loadBalancerBrokerOverloadedThresholdPercentage": (85, 0, 50),
    "loadBalancerBrokerMaxTopics": (50000, 0, 5, 10),
    "preferLaterVersions": (False, True),
}
_VERSIONS = ("4.0.0", "4.0.0", "4.0.1", "3.0.7", "4.1.0-SNAPSHOT", "4.0.0+b1", "4.0.0-rc.1", "10.0.0", "4.0",
             "", None, "v4")


def _ext_conf(d, table: dict) -> dict:
    out = {"loadManagerClassName": EXTENSIBLE_LM}  # the extensible load manager's own config
    for k, vals in table.items():
        out[k] = vals[0] if d.bool(0.6) else d.choice(vals)
    return out


def _load_value(vals: _Values) -> float:
    """A weightedMaxEMA: mostly 0 … 1, ties and hairs apart from _Values, sometimes over 100 %."""
    return vals.pick(0.0, vals.d.choice((1.0, 1.0, 0.3, 1.2)))


def _broker_load(d, vals: _Values, now: int, ttl_edge: bool) -> dict:
    """A BrokerLoadData with the fields the strategies and filters read (the others take Pulsar's defaults on
    both sides)."""
    thr_hi = d.choice((1e3, 5e7, 1e9))
    tin, tout = vals.pick(0, thr_hi), vals.pick(0, thr_hi)
    out = {"msgThroughputIn": tin, "msgThroughputOut": tout, "topics": d.int(0, 100),
           "weightedMaxEMA": _load_value(vals),
           "msgThroughputEMA": d.choice((tin + tout, vals.pick(0, thr_hi * 2), 0.0)),
           # clearly fresh or (sometimes) clearly older than any TTL the conf may set (no boundary: the JVM's
           # TTL check reads the wall clock)
           "updatedAt": now - (d.choice((0, 1000, 30_000)) if not ttl_edge else d.choice((400_000, 4_000_000)))}
    if d.bool(0.03):
        del out["weightedMaxEMA"]  # Pulsar's default (100 %)
    return out


def _top_bundles(d, vals: _Values, used: set, broker_thr: float) -> list:
    nb = d.choice((0, 1, 2, 2, 3, 3, 4, 6, d.int(0, 10)))
    out = []
    for name in _bundles(d, nb, used):
        k = d.int(0, 9)
        if k == 0:
            tin = tout = 0.0
        else:
            hi = max(broker_thr, 1.0) * d.choice((0.1, 0.3, 0.6, 1.0))
            tin, tout = vals.pick(0, hi), vals.pick(0, hi) if d.bool(0.5) else 0.0
        out.append({"bundleName": name, "stats": {"msgThroughputIn": tin, "msgThroughputOut": tout}})
    if d.bool(0.7):  # published ascending by throughput (the reporter's order); else as drawn
        out.sort(key=lambda e: e["stats"]["msgThroughputIn"] + e["stats"]["msgThroughputOut"])
    return out


def _transfer_cycle(d, now: int, brokers: list, prev: dict | None, used: set) -> dict:
    vals = _Values(d)
    bld, top = {}, {}
    stale = d.bool(0.1)
    for b in brokers:
        if prev is not None and b in prev["brokerLoadData"] and d.bool(0.6):
            x = dict(prev["brokerLoadData"][b])
            x["updatedAt"] = now - d.choice((0, 1000))
            if d.bool(0.4):
                x["weightedMaxEMA"] = _load_value(vals)
            bld[b] = x
            top[b] = prev["topBundlesLoadData"].get(b, {"topBundlesLoadData": []})
            continue
        bld[b] = _broker_load(d, vals, now, stale and d.bool(0.3))
        top[b] = {"topBundlesLoadData": _top_bundles(d, vals, used, bld[b]["msgThroughputIn"]
                                                     + bld[b]["msgThroughputOut"])}
    for b in list(top):
        if d.bool(0.05):
            del top[b]  # no top-bundles report
    available = list(brokers)
    if d.bool(0.08):
        available.append(f"new-{d.int(0, 9)}:8080")  # registered, no load data yet
    return {"now": now, "brokerLoadData": bld, "topBundlesLoadData": top, "available": available}


def transfer_case(d, cid) -> dict:
    """``{"id", "kind": "transfer", "strategy", "conf", "carryUnloaded", "recentlyUnloadedBundles",
    "recentlyUnloadedBrokers", "cycles": [{"now", "brokerLoadData", "topBundlesLoadData", "available"}]}``."""
    now = 1_700_000_000_000
    k = d.int(0, 19)
    nb = d.int(1, 3) if k < 9 else d.int(4, 6) if k < 18 else d.int(7, 16)
    style = d.choice(_NAME_STYLES)
    brokers = [style.format(i) for i in d.choice((range(1, nb + 1), range(nb, 0, -1)))]
    used: set = set()
    # memory across cycles: several cycles; many brokers: one or two (a case's cost grows with brokers x cycles)
    n = d.choice((1, 1, 2, 2, 3, 4)) if nb <= 6 else d.choice((1, 2))
    cycles = [_transfer_cycle(d, now, brokers, None, used)]
    for _ in range(1, n):
        now += d.choice((60_000, 60_000, 200_000, 700_000))
        cycles.append(_transfer_cycle(d, now, brokers, cycles[-1], used))
    first = cycles[0]
    all_b = sorted(x["bundleName"] for t in first["topBundlesLoadData"].values() for x in t["topBundlesLoadData"])
    ru = {d.choice(all_b): first["now"] - d.int(0, 600_000) for _ in range(d.int(1, 3))} if all_b and d.bool(0.3) \
        else {}
    rb = {d.choice(brokers): first["now"] - d.choice((0, 60_000, 170_000, 190_000, 900_000))
          for _ in range(d.int(1, 2))} if d.bool(0.25) else {}
    return {"id": cid, "kind": "transfer", "strategy": TRANSFER, "conf": _ext_conf(d, TRANSFER_CONF),
            "carryUnloaded": d.bool(0.6), "recentlyUnloadedBundles": ru, "recentlyUnloadedBrokers": rb,
            "cycles": cycles}


def extplace_case(d, cid) -> dict:
    """``{"id", "kind": "extplace", "strategy", "conf", "steps": [{"brokerLoadData", "brokerLookupData",
    "bundle"}]}``: the available brokers (lookup data) and the load data of some of them."""
    conf = _ext_conf(d, EXTPLACE_CONF)
    mx = conf["loadBalancerBrokerMaxTopics"]
    steps = []
    for _ in range(d.choice((1, 1, 2, 3))):
        vals = _Values(d)
        k = d.int(0, 19)
        nb = d.int(1, 3) if k < 9 else d.int(4, 8) if k < 18 else d.int(9, 24)
        style = d.choice(_NAME_STYLES)
        ids = [style.format(i) for i in d.choice((range(1, nb + 1), range(nb, 0, -1)))]
        lookup, bld = {}, {}
        same_version = d.bool(0.5)
        v0 = d.choice(_VERSIONS[:4])
        for b in ids:
            lk = {"persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True}
            cls = EXTENSIBLE_LM if d.bool(0.9) else d.choice((_MODULAR_LM, None))
            if cls is not None:
                lk["loadManagerClassName"] = cls
            v = v0 if same_version or d.bool(0.5) else d.choice(_VERSIONS)
            if v is not None:
                lk["brokerVersion"] = v
            lookup[b] = lk
            if d.bool(0.9):
                x = _broker_load(d, vals, 1_700_000_000_000, False)
                x["topics"] = d.choice((0, mx - 1, mx, mx + 1, d.int(0, 100))) if d.bool(0.3) else d.int(0, 3)
                x["topics"] = max(0, x["topics"])
                bld[b] = x
        if bld and d.bool(0.2):  # a load exactly at the average minus the threshold
            b = d.choice(sorted(bld))
            bld[b]["weightedMaxEMA"] = 0.5
        steps.append({"brokerLoadData": bld, "brokerLookupData": lookup,
                      "bundle": d.choice(("public/default/0x00000000_0xffffffff",
                                          "tenant-a/ns1/0x40000000_0x80000000"))})
    return {"id": cid, "kind": "extplace", "strategy": EXTPLACE, "conf": conf, "steps": steps}
