"""Top-K bundle reports: what each broker publishes on ``loadbalancer-top-bundles-load-data``.

Examples
--------
>>> from engine.config import LoadBalancerConfig
>>> from engine.model import NamespaceBundleStats as S
>>> stats = {"t/n/0x00000000_0x40000000": S(msg_throughput_in=300_000.0),
...          "t/n/0x40000000_0x80000000": S(msg_throughput_in=900_000.0),
...          "t/n/0x80000000_0xc0000000": S(msg_throughput_in=600_000.0),
...          "t/n/0xc0000000_0xffffffff": S()}                       # no traffic: not reported
>>> [b.bundle_name[4:] for b in top_k_bundles(stats, 2, LoadBalancerConfig())]   # ascending
['0x80000000_0xc0000000', '0x40000000_0x80000000']
>>> java_math_round(2.5), java_math_round(-2.5)                      # Math.round is half-up
(3, -2)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Mapping, Sequence

import numpy as np

from ..config import LoadBalancerConfig
from ..javacompat import chm_group_ranks, java_long, java_map_order, java_string_hashes
from ..javasort import ContractViolation, java_sort
from ..model import NamespaceBundleStats, bundle_namespace, is_sla_or_heartbeat_namespace

__all__ = ["BundleLoadData", "top_k_bundles", "bundle_stats_key", "compare_bundle_stats", "java_math_round",
           "partition_sort", "is_system_service_namespace", "top_k_for_brokers", "compare_bundle_stats_threshold", "MSG_RATE_RESOLUTION", "BW_RESOLUTION",
           "TOPIC_CONN_RESOLUTION", "CACHE_SIZE_RESOLUTION"]

MSG_RATE_RESOLUTION = 100
BW_RESOLUTION = 100_000
TOPIC_CONN_RESOLUTION = 500
CACHE_SIZE_RESOLUTION = 100_000


@dataclass
class BundleLoadData:
    """One entry of a top-K report: ``TopBundlesLoadData.BundleLoadData(bundleName, stats)``."""

    bundle_name: str
    stats: NamespaceBundleStats

    @property
    def throughput(self) -> float:
        """``msgThroughputIn + msgThroughputOut`` (what TransferShedder moves)."""
        return self.stats.msg_throughput_in + self.stats.msg_throughput_out

    @property
    def msg_rate(self) -> float:
        return self.stats.msg_rate_in + self.stats.msg_rate_out

    def to_json(self) -> dict:
        return {"bundleName": self.bundle_name, "stats": self.stats.to_json()}


def java_math_round(x: float) -> int:
    """Java ``Math.round(double)``: ``floor(x + 1/2)`` computed exactly; NaN → 0; saturates."""
    if isinstance(x, float) and math.isnan(x):
        return 0
    if math.isinf(x):
        return java_long(x)
    f = math.floor(x)
    r = f + 1 if x - f >= 0.5 else f  # x - floor(x) is exact for doubles
    return java_long(float(r)) if abs(r) >= 2**63 else int(r)


def bundle_stats_key(s: NamespaceBundleStats) -> tuple:
    """The five quantities ``NamespaceBundleStats.compareTo`` compares, in order, at Pulsar's resolutions.

    ``round(thrIn/1e5)``, ``round(thrOut/1e5)``, ``round((rateIn+rateOut)/100)`` (``Math.round``),
    ``(topics+consumers+producers)/500`` and ``cacheSize/100000`` (Java integer division).
    """
    conn = int(s.topics) + int(s.consumer_count) + int(s.producer_count)
    return (java_math_round(s.msg_throughput_in / BW_RESOLUTION),
            java_math_round(s.msg_throughput_out / BW_RESOLUTION),
            java_math_round((s.msg_rate_in + s.msg_rate_out) / MSG_RATE_RESOLUTION),
            int(conn / TOPIC_CONN_RESOLUTION),  # Java long division truncates toward zero
            int(int(s.cache_size) / CACHE_SIZE_RESOLUTION))


def compare_bundle_stats(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    """``a.compareTo(b)``: -1, 0 or 1 (§2.1)."""
    ka, kb = bundle_stats_key(a), bundle_stats_key(b)
    return (ka > kb) - (ka < kb)


def _double_compare(x: float, y: float) -> int:
    """Java ``Double.compare`` (NaN above everything, -0.0 below 0.0)."""
    if x < y:
        return -1
    if x > y:
        return 1
    xn, yn = math.isnan(x), math.isnan(y)
    if xn or yn:
        return (xn > yn) - (xn < yn)
    sx, sy = math.copysign(1.0, x), math.copysign(1.0, y)
    return (sx > sy) - (sx < sy)


def _beyond(x: float, y: float, threshold: float) -> int:
    """``Math.abs(x - y) > threshold ? compare(x, y) : 0``: the threshold rule of the old ``compareTo``."""
    return _double_compare(x, y) if abs(x - y) > threshold else 0


def compare_bundle_stats_threshold(a: NamespaceBundleStats, b: NamespaceBundleStats) -> int:
    """``a.compareTo(b)`` of releases before the rounding fix (3.0.14, 3.3.9, 4.0.7, 4.1.1, 4.2): throughput
    in, throughput out, message rate, topics + connections and cache size, each "equal" when within its
    resolution (not transitive)."""
    r = _beyond(a.msg_throughput_in, b.msg_throughput_in, BW_RESOLUTION)
    if r == 0:
        r = _beyond(a.msg_throughput_out, b.msg_throughput_out, BW_RESOLUTION)
    if r == 0:
        r = _beyond(a.msg_rate_in + a.msg_rate_out, b.msg_rate_in + b.msg_rate_out, MSG_RATE_RESOLUTION)
    if r == 0:
        ca = int(a.topics) + int(a.consumer_count) + int(a.producer_count)
        cb = int(b.topics) + int(b.consumer_count) + int(b.producer_count)
        r = ((ca > cb) - (ca < cb)) if abs(ca - cb) > TOPIC_CONN_RESOLUTION else 0
    if r == 0:
        xa, xb = int(a.cache_size), int(b.cache_size)
        r = ((xa > xb) - (xa < xb)) if abs(xa - xb) > CACHE_SIZE_RESOLUTION else 0
    return r


def partition_sort(arr: list, k: int, cmp: Callable) -> None:
    """``TopKBundles.partitionSort(arr, k)`` in place: three-way quickselect around the last element,
    then a stable descending sort of the head.

    After the call ``arr[:k]`` holds the top ``k`` in descending order. Ties keep the order this
    (unstable) partitioning leaves them in, which is what Pulsar publishes.
    """
    start, end, target = 0, len(arr) - 1, k - 1
    while start < end:
        lo, hi, mid = start, end, start
        pivot = arr[hi]
        while mid <= hi:
            c = cmp(pivot, arr[mid])
            if c < 0:
                arr[lo], arr[mid] = arr[mid], arr[lo]
                lo += 1
                mid += 1
            elif c > 0:
                arr[mid], arr[hi] = arr[hi], arr[mid]
                hi -= 1
            else:
                mid += 1
        if lo <= target < mid:
            end = lo
            break
        if target < lo:
            end = lo - 1
        else:
            start = mid
    head = arr[:end]
    java_sort(head, lambda a, b: cmp(b, a))  # Collections.sort(subList, (a, b) -> b.compareTo(a))
    arr[:end] = head


def _partition_sort_ints(ids: list, keys: list, k: int) -> None:
    """:func:`partition_sort` for a total order given as ints (``keys[i]`` of ``ids[i]``, larger = larger),
    the comparisons inlined: the same moves, both lists reordered in place; ``ids[:k]`` ends as the top
    ``k``, descending (the head's sort is stable, as ``Collections.sort``)."""
    start, end, target = 0, len(ids) - 1, k - 1
    while start < end:
        lo, hi, mid = start, end, start
        pivot = keys[hi]
        while mid <= hi:
            v = keys[mid]
            if pivot < v:
                keys[lo], keys[mid] = v, keys[lo]
                ids[lo], ids[mid] = ids[mid], ids[lo]
                lo += 1
                mid += 1
            elif pivot > v:
                keys[mid], keys[hi] = keys[hi], v
                ids[mid], ids[hi] = ids[hi], ids[mid]
                hi -= 1
            else:
                mid += 1
        if lo <= target < mid:
            end = lo
            break
        if target < lo:
            end = lo - 1
        else:
            start = mid
    if end > 1:
        o = sorted(range(end), key=lambda i: -keys[i])
        ids[:end] = [ids[i] for i in o]
        keys[:end] = [keys[i] for i in o]


def is_system_service_namespace(namespace: str) -> bool:
    """``NamespaceService.isSystemServiceNamespace``: ``pulsar/system``, heartbeat and SLA-monitor namespaces."""
    return namespace == "pulsar/system" or is_sla_or_heartbeat_namespace(namespace)


def top_k_bundles(bundle_stats: Mapping[str, NamespaceBundleStats], k: int | None = None,
                  conf: LoadBalancerConfig | None = None,
                  has_policies: Callable[[str], bool] | None = None) -> list[BundleLoadData]:
    """The top-K list a broker publishes for its bundles, **ascending** (smallest of the top K first).

    Parameters
    ----------
    bundle_stats : mapping
        bundle name → its instantaneous :class:`NamespaceBundleStats` (the broker's bundle stats).
    k : int, optional
        ``loadBalancerMaxNumberOfBundlesInBundleLoadReport`` of ``conf`` (10) if omitted.
    has_policies : callable, optional
        ``namespace -> bool``: the namespace has isolation or anti-affinity policies (none by default).

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.2 (``models/TopKBundles.java``). Dropped: bundles with no
    throughput, system namespaces (``pulsar/system``, heartbeat, SLA monitor), namespaces with policies
    unless ``loadBalancerSheddingBundlesWithPoliciesEnabled``, and
    ``loadBalancerSheddingExcludedNamespaces``. The ranking is ``NamespaceBundleStats.compareTo``
    (:func:`bundle_stats_key`; :func:`compare_bundle_stats_threshold` before the rounding fix) via
    :func:`partition_sort`; releases before 3.3.3 / 4.0.1 keep bundles with no throughput, fed in ``ConcurrentHashMap`` order of the
    bundle names (Shedlab's assumption for the broker's bundle-stats map; it only decides ties).
    """
    conf = conf or LoadBalancerConfig()
    k = conf.loadBalancerMaxNumberOfBundlesInBundleLoadReport if k is None else int(k)
    excluded = conf.excluded_namespaces
    with_policies = conf.loadBalancerSheddingBundlesWithPoliciesEnabled
    arr = []
    keys = {}
    rounding = conf.has("topk_rounding_compare")
    for name in java_map_order(bundle_stats, concurrent=True):
        s = bundle_stats[name]
        if s.msg_throughput_in + s.msg_throughput_out == 0 and conf.has("transfer_skip_zero_throughput"):
            continue
        ns = bundle_namespace(name)
        if is_system_service_namespace(ns) or ns in excluded:
            continue
        if not with_policies and has_policies is not None and has_policies(ns):
            continue
        arr.append(name)
        if rounding:  # the threshold compareTo of older releases reads the stats themselves
            keys[name] = bundle_stats_key(s)
    if not arr or k <= 0:
        return []
    k = min(k, len(arr))

    if rounding:
        def cmp(a, b):
            ka, kb = keys[a], keys[b]
            return (ka > kb) - (ka < kb)
    else:  # the threshold compareTo of older releases (not transitive), on each bundle's quantities read once
        q = {}
        for name in arr:
            s = bundle_stats[name]
            q[name] = (s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in + s.msg_rate_out,
                       int(s.topics) + int(s.consumer_count) + int(s.producer_count), int(s.cache_size))

        def cmp(a, b):
            x, y = q[a], q[b]
            r = _beyond(x[0], y[0], BW_RESOLUTION)
            if r == 0:
                r = _beyond(x[1], y[1], BW_RESOLUTION)
            if r == 0:
                r = _beyond(x[2], y[2], MSG_RATE_RESOLUTION)
            if r == 0:
                r = ((x[3] > y[3]) - (x[3] < y[3])) if abs(x[3] - y[3]) > TOPIC_CONN_RESOLUTION else 0
            if r == 0:
                r = ((x[4] > y[4]) - (x[4] < y[4])) if abs(x[4] - y[4]) > CACHE_SIZE_RESOLUTION else 0
            return r

    try:
        partition_sort(arr, k, cmp)
    except ContractViolation:  # TopKBundles.update throws after clearing its list: nothing is reported
        return []
    return [BundleLoadData(arr[i], bundle_stats[arr[i]]) for i in range(k - 1, -1, -1)]


def _round_array(x: np.ndarray) -> np.ndarray:
    """:func:`java_math_round` over an array of finite doubles below 2**62 in magnitude."""
    f = np.floor(x)
    return (f + ((x - f) >= 0.5)).astype(np.int64)


def top_k_for_brokers(stats_maps: Sequence[Mapping[str, NamespaceBundleStats]],
                      conf: LoadBalancerConfig | None = None,
                      has_policies: Callable[[str], bool] | None = None) -> list[list[BundleLoadData]]:
    """:func:`top_k_bundles` of many brokers at once (one list per mapping, the same lists).

    The ``compareTo`` keys of every bundle are computed in one go and each broker's bundles sorted by
    them. When a broker's top K keys are all distinct and the K-th differs from the next one, the top
    K and their order are the same whatever the partitioning, so the list is read off the sort; a
    broker with a tie there (where Pulsar's partitioning decides) and the threshold ``compareTo`` of
    older releases take :func:`top_k_bundles` itself.
    """
    conf = conf or LoadBalancerConfig()
    k = conf.loadBalancerMaxNumberOfBundlesInBundleLoadReport
    if not conf.has("topk_rounding_compare") or k <= 0:
        return [top_k_bundles(m, None, conf, has_policies) for m in stats_maps]
    names, objs, owner = [], [], []
    for p, m in enumerate(stats_maps):
        names.extend(m)
        objs.extend(m.values())
        owner.append(len(m))
    n = len(objs)
    owner = np.repeat(np.arange(len(stats_maps)), owner)
    fields = ("msg_throughput_in", "msg_throughput_out", "msg_rate_in", "msg_rate_out", "topics", "consumer_count",
              "producer_count", "cache_size")
    try:
        vals = np.array(list(map(attrgetter(*fields), objs)), dtype=float).reshape(n, len(fields))
    except (TypeError, ValueError, OverflowError):
        vals = None
    if vals is None or not np.isfinite(vals).all() or (np.abs(vals) >= 2.0**53).any():
        # not plain finite numbers the arrays hold exactly: the one-broker path reads them as they are
        return [top_k_bundles(m, None, conf, has_policies) for m in stats_maps]
    col = dict(zip(fields, vals.T))
    whole = np.trunc(vals[:, 4:])  # int(x) of each count
    ti, to = col["msg_throughput_in"], col["msg_throughput_out"]
    keep = np.ones(n, dtype=bool)
    if conf.has("transfer_skip_zero_throughput"):
        keep &= (ti + to) != 0
    excluded = conf.excluded_namespaces
    skip_pol = None if conf.loadBalancerSheddingBundlesWithPoliciesEnabled else has_policies
    # bundle_namespace of every name (inlined), each namespace judged once
    per = [b[:i] if (i := b.rfind("/")) >= 0 else b for b in names]
    dropped = {ns for ns in set(per) if is_system_service_namespace(ns) or ns in excluded
               or (skip_pol is not None and skip_pol(ns))}
    if dropped:
        keep &= np.fromiter((ns not in dropped for ns in per), dtype=bool, count=n)
    conn = whole[:, 0] + whole[:, 1] + whole[:, 2]
    cache = whole[:, 3]
    with np.errstate(invalid="ignore", over="ignore"):
        keys = np.column_stack([
            _round_array(ti / BW_RESOLUTION), _round_array(to / BW_RESOLUTION),
            _round_array((col["msg_rate_in"] + col["msg_rate_out"]) / MSG_RATE_RESOLUTION),
            np.trunc(conn / TOPIC_CONN_RESOLUTION).astype(np.int64),  # Java long division
            np.trunc(cache / CACHE_SIZE_RESOLUTION).astype(np.int64)])
    idx = np.flatnonzero(keep)
    ko = keys[idx]
    # per broker, the largest keys first
    order = idx[np.lexsort(tuple(-ko[:, c] for c in range(4, -1, -1)) + (owner[idx],))]
    out: list[list] = [[] for _ in stats_maps]
    if len(order) == 0:
        return out
    ob, sk = owner[order], keys[order]
    same_next = np.zeros(len(order), dtype=bool)
    same_next[:-1] = (ob[1:] == ob[:-1]) & np.all(sk[1:] == sk[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate(([True], ob[1:] != ob[:-1])))
    ends = np.concatenate((starts[1:], [len(order)]))
    pos = np.arange(len(order)) - np.repeat(starts, ends - starts)
    tied = np.zeros(len(stats_maps), dtype=bool)
    hit = same_next & (pos < k)  # a tie inside the top K or between the K-th and the next
    tied[ob[hit]] = True
    ol = order.tolist()
    for s, e, p in zip(starts.tolist(), ends.tolist(), ob[starts].tolist()):
        if not tied[p]:
            top = ol[s:min(e, s + k)]
            out[p] = [BundleLoadData(names[j], objs[j]) for j in reversed(top)]
    tied_p = np.flatnonzero(tied)
    if len(tied_p) == 0:
        return out
    # a tie decides: Pulsar's partitioning over each such broker's bundles in ConcurrentHashMap order,
    # comparing the keys by their rank among all keys (the same order as compareTo); the maps' orders
    # all at once (chm_group_ranks), the partitioning per broker on plain ints
    dense = np.concatenate(([0], np.cumsum(np.any(sk[1:] != sk[:-1], axis=1) | (ob[1:] != ob[:-1]))))
    ra = np.zeros(n, dtype=np.int64)
    ra[order] = -dense  # ``order`` is descending within a broker: a larger key, a smaller dense
    counts = np.bincount(owner, minlength=len(stats_maps))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    sizes = counts[tied_p]
    sel = np.repeat(offsets[tied_p] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes) + np.arange(sizes.sum())
    grp = np.repeat(np.arange(len(tied_p)), sizes)
    h = java_string_hashes([names[j] for j in sel.tolist()]) & 0xFFFFFFFF
    in_map = chm_group_ranks((h ^ (h >> 16)) & 0x7FFFFFFF, grp, len(tied_p))
    by_map = np.lexsort((in_map, grp))
    seq, gk = sel[by_map], grp[by_map]
    kept = keep[seq]
    seq, gk = seq[kept], gk[kept]
    cut = np.searchsorted(gk, np.arange(len(tied_p) + 1))
    seq_l, key_l = seq.tolist(), ra[seq].tolist()
    for i, p in enumerate(tied_p.tolist()):
        a, b = int(cut[i]), int(cut[i + 1])
        ids, ks = seq_l[a:b], key_l[a:b]
        kk = min(k, len(ids))
        _partition_sort_ints(ids, ks, kk)
        out[p] = [BundleLoadData(names[j], objs[j]) for j in reversed(ids[:kk])]
    return out
