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
from collections.abc import MutableMapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Mapping, Sequence

import numpy as np

from ..config import LoadBalancerConfig
from ..javacompat import chm_group_ranks, java_long, java_map_order, java_string_hashes
from ..javasort import ContractViolation, java_sort
from ..model import NamespaceBundleStats, bundle_namespace, is_sla_or_heartbeat_namespace

__all__ = ["BundleLoadData", "top_k_bundles", "bundle_stats_key", "compare_bundle_stats", "java_math_round",
           "partition_sort", "is_system_service_namespace", "top_k_for_brokers", "TopKPlan", "TopBundles", "compare_bundle_stats_threshold", "MSG_RATE_RESOLUTION", "BW_RESOLUTION",
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
    them (:class:`TopKPlan`). When a broker's top K keys are all distinct and the K-th differs from the
    next one, the top K and their order are the same whatever the partitioning, so the list is read off
    the sort; a broker with a tie there (where Pulsar's partitioning decides) and the threshold
    ``compareTo`` of older releases take Pulsar's partitioning itself.
    """
    plan = TopKPlan.of_maps(stats_maps, conf, has_policies)
    return [plan.list_for(p) for p in range(plan.n_brokers)]


_FIELDS = ("msg_throughput_in", "msg_throughput_out", "msg_rate_in", "msg_rate_out", "topics", "consumer_count",
           "producer_count", "cache_size")


class TopKPlan:
    """Every broker's top-K list, worked out from columns of all their bundles' stats at once; each list is
    built (its :class:`BundleLoadData` objects, and Pulsar's partitioning where a tie decides) when read.

    Rows are the bundles of every broker's stats map, broker after broker, each map's rows in its insertion
    order. A row's name is ``names[name_idx[i]]`` (``names[i]`` without ``name_idx``) and its stats
    ``objs[i]``, or built from ``stats_cols`` (the columns of :data:`engine.fastload._STAT_KEYS`) when read.
    ``vals`` holds every row's numbers, one column per name of ``fields`` (``None``: not numbers an array
    holds, each broker's list is worked out from its objects).
    """

    def __init__(self, n_rows: int, counts, conf: LoadBalancerConfig | None, has_policies, *, names: list,
                 name_idx=None, objs: list | None = None, stats_cols: np.ndarray | None = None,
                 vals: np.ndarray | None = None, fields: tuple = (), namespaces: tuple | None = None):
        self.conf = conf = conf or LoadBalancerConfig()
        self.k = conf.loadBalancerMaxNumberOfBundlesInBundleLoadReport
        self.has_policies = has_policies
        self.names, self.name_idx, self.objs, self.stats_cols = names, name_idx, objs, stats_cols
        counts = np.asarray(counts, dtype=np.int64)
        self.n_brokers = len(counts)
        self.offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        # not vector: each broker through top_k_bundles over its own map (the threshold compareTo of
        # older releases, numbers the arrays do not hold exactly, K <= 0)
        self.vector = False
        if not conf.has("topk_rounding_compare") or self.k <= 0 or vals is None:
            return
        vals = np.asarray(vals, dtype=float)
        # finite and below 2**53 in magnitude (NaN fails both comparisons): numbers the arrays hold exactly
        if vals.size and not (-2.0**53 < vals.min() and vals.max() < 2.0**53):
            return
        self.vector = True
        cols = dict(zip(fields, vals.T))
        self._sort(n_rows, cols, counts, namespaces)

    @classmethod
    def of_maps(cls, stats_maps, conf=None, has_policies=None) -> "TopKPlan":
        """The plan over mappings ``name -> NamespaceBundleStats`` (one per broker)."""
        names, objs, counts = [], [], []
        for m in stats_maps:
            names.extend(m)
            objs.extend(m.values())
            counts.append(len(m))
        vals = None
        if conf is None or conf.has("topk_rounding_compare"):
            try:
                vals = np.array(list(map(attrgetter(*_FIELDS), objs)), dtype=float).reshape(len(objs), len(_FIELDS))
            except (TypeError, ValueError, OverflowError):
                vals = None
        return cls(len(objs), counts, conf, has_policies, names=names, objs=objs, vals=vals, fields=_FIELDS)

    # ------------------------------------------------------------------ rows
    def _name(self, i: int) -> str:
        return self.names[i] if self.name_idx is None else self.names[self.name_idx[i]]

    def _row_names(self, a: int, b: int) -> list:
        if self.name_idx is None:
            return self.names[a:b]
        names = self.names
        return [names[j] for j in self.name_idx[a:b].tolist()]

    def _stats(self, i: int) -> NamespaceBundleStats:
        if self.objs is not None:
            return self.objs[i]
        r = self.stats_cols[i].tolist()
        return NamespaceBundleStats(r[0], r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), int(r[7]))

    def _entry(self, i: int) -> BundleLoadData:
        return BundleLoadData(self._name(i), self._stats(i))

    # ------------------------------------------------------------------ the one sort
    def _sort(self, n: int, col: dict, counts: np.ndarray, namespaces) -> None:
        conf = self.conf
        owner = np.repeat(np.arange(self.n_brokers), counts)
        ti, to = col["msg_throughput_in"], col["msg_throughput_out"]
        keep = np.ones(n, dtype=bool)
        if conf.has("transfer_skip_zero_throughput"):
            keep &= (ti + to) != 0
        excluded = conf.excluded_namespaces
        skip_pol = None if conf.loadBalancerSheddingBundlesWithPoliciesEnabled else self.has_policies

        def dropped(ns):
            return is_system_service_namespace(ns) or ns in excluded or (skip_pol is not None and skip_pol(ns))

        if namespaces is not None:  # (namespace names, each row's namespace id): judged once per namespace
            nss, row_ns = namespaces
            bad = np.fromiter((dropped(ns) for ns in nss), dtype=bool, count=len(nss))
            if bad.any():
                keep &= ~bad[row_ns]
        elif n:
            # bundle_namespace of every name (inlined), each namespace judged once
            per = [b[:i] if (i := b.rfind("/")) >= 0 else b for b in self._row_names(0, n)]
            out = {ns for ns in set(per) if dropped(ns)}
            if out:
                keep &= np.fromiter((ns not in out for ns in per), dtype=bool, count=n)
        with np.errstate(invalid="ignore", over="ignore"):
            conn = np.trunc(col["topics"]) + np.trunc(col["consumer_count"]) + np.trunc(col["producer_count"])
            keys = [_round_array(ti / BW_RESOLUTION), _round_array(to / BW_RESOLUTION),
                    _round_array((col["msg_rate_in"] + col["msg_rate_out"]) / MSG_RATE_RESOLUTION),
                    np.trunc(conn / TOPIC_CONN_RESOLUTION).astype(np.int64),  # Java long division
                    np.trunc(np.trunc(col["cache_size"]) / CACHE_SIZE_RESOLUTION).astype(np.int64)]
        # per broker, the largest keys first; ``cut[i]``: row ``order[i+1]`` starts a new (broker, key)
        if keep.all():
            order, cut = _by_broker_desc(owner, keys)
        else:
            idx = np.flatnonzero(keep)
            order, cut = _by_broker_desc(owner[idx], [x[idx] for x in keys])
            order = idx[order]
        self.keep, self.order = keep, order
        self.first = np.full(self.n_brokers, -1, dtype=np.int64)  # where each broker's rows start in ``order``
        self.kept = np.zeros(self.n_brokers, dtype=np.int64)
        self.tied = np.zeros(self.n_brokers, dtype=bool)
        if len(order) == 0:
            return
        ob = owner[order]
        same_next = np.zeros(len(order), dtype=bool)
        same_next[:-1] = ~cut
        starts = np.flatnonzero(np.concatenate(([True], ob[1:] != ob[:-1])))
        ends = np.concatenate((starts[1:], [len(order)]))
        self.first[ob[starts]] = starts
        self.kept[ob[starts]] = ends - starts
        pos = np.arange(len(order)) - np.repeat(starts, ends - starts)
        hit = same_next & (pos < self.k)  # a tie inside the top K or between the K-th and the next
        self.tied[ob[hit]] = True
        if self.tied.any():
            # a key's rank among all keys (the same order as compareTo): a larger key, a smaller rank
            dense = np.concatenate(([0], np.cumsum(cut)))
            self.rank = np.zeros(n, dtype=np.int64)
            self.rank[order] = -dense

    # ------------------------------------------------------------------ one broker's list
    def list_for(self, p: int) -> list[BundleLoadData]:
        """Broker ``p``'s top-K list, ascending (what :func:`top_k_bundles` gives for its map)."""
        a, b = int(self.offsets[p]), int(self.offsets[p + 1])
        if not self.vector:
            m = {self._name(i): self._stats(i) for i in range(a, b)}
            return top_k_bundles(m, None, self.conf, self.has_policies)
        s, c = int(self.first[p]), int(self.kept[p])
        if c == 0:
            return []
        if not self.tied[p]:
            return [self._entry(i) for i in reversed(self.order[s:s + min(c, self.k)].tolist())]
        # a tie decides: Pulsar's partitioning over the broker's bundles in ConcurrentHashMap order (of the
        # whole map, dropped bundles included), comparing the keys by their rank
        h = java_string_hashes(self._row_names(a, b)) & 0xFFFFFFFF
        in_map = chm_group_ranks((h ^ (h >> 16)) & 0x7FFFFFFF, np.zeros(b - a, dtype=np.int64), 1)
        seq = a + np.argsort(in_map, kind="stable")
        seq = seq[self.keep[seq]]
        ids, ks = seq.tolist(), self.rank[seq].tolist()
        kk = min(self.k, len(ids))
        _partition_sort_ints(ids, ks, kk)
        return [self._entry(i) for i in reversed(ids[:kk])]


def _by_broker_desc(owner: np.ndarray, keys: list) -> tuple[np.ndarray, np.ndarray]:
    """The rows sorted by owner, then by ``keys`` (lexicographic) descending, ties in row order; and, for
    each sorted row but the last, whether the next one has another owner or another key. The key columns
    that are the same on every row are left out; when the rest fit 63 bits (the usual case: non-negative
    and small after Pulsar's resolutions) they are packed into one integer and sorted once (with the row
    number in the low bits when it fits too: unique values, sorted without an index array)."""
    n = len(owner)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    keys = [x for x in keys if x.min() != x.max()]
    widths, ok = [], True
    for x in [owner] + keys:
        lo, hi = int(x.min()), int(x.max())
        ok &= lo >= 0
        widths.append(max(hi, 1).bit_length())
    if ok and sum(widths) <= 63:
        packed = owner.astype(np.int64)
        for x, w in zip(keys, widths[1:]):
            packed = (packed << w) | (((1 << w) - 1) - x)  # larger key, smaller value: descending
        ib = max(n - 1, 1).bit_length()
        if sum(widths) + ib <= 63:
            srt = np.sort((packed << ib) | np.arange(n, dtype=np.int64))
            order, ps = srt & ((1 << ib) - 1), srt >> ib
        else:
            order = np.argsort(packed, kind="stable")
            ps = packed[order]
        return order, ps[1:] != ps[:-1]
    order = np.lexsort(tuple(-x for x in reversed(keys)) + (owner,))
    ob = owner[order]
    cut = ob[1:] != ob[:-1]
    for x in keys:
        xs = x[order]
        cut |= xs[1:] != xs[:-1]
    return order, cut


class TopBundles(MutableMapping):
    """broker → its top-K list (the ``topBundleLoadDataStore``), each list worked out on its first read
    from a :class:`TopKPlan` (a leader reads the lists of the brokers it unloads from; a page or a
    JSON dump reads them all). Assigning a broker's list replaces it. :meth:`copy` shares the plan and the
    lists read so far; ``copy.copy``, ``copy.deepcopy`` and a pickle give a plain ``dict`` of every list."""

    def __init__(self, brokers, plan: TopKPlan):
        self._pos = {b: p for p, b in enumerate(brokers)}
        self._plan = plan
        self._lists: dict = {}
        self._replaced = False

    def __getitem__(self, broker):
        got = self._lists.get(broker)
        if got is None:
            if broker not in self._pos:
                raise KeyError(broker)
            got = self._lists[broker] = self._plan.list_for(self._pos[broker])
        return got

    def __setitem__(self, broker, value) -> None:
        if broker not in self._pos:
            self._pos[broker] = -1
        self._lists[broker] = value
        self._replaced = True

    def __delitem__(self, broker) -> None:
        del self._pos[broker]
        self._lists.pop(broker, None)
        self._replaced = True

    def __iter__(self):
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, broker) -> bool:
        return broker in self._pos

    def __repr__(self) -> str:
        return f"TopBundles({len(self._pos)} brokers, {len(self._lists)} lists read)"

    @property
    def plan(self) -> TopKPlan:
        return self._plan

    @property
    def replaced(self) -> bool:
        """Whether some broker's list was assigned rather than worked out from the plan."""
        return self._replaced

    def copy(self) -> "TopBundles":
        """A new map sharing the plan and the lists read so far (lists are read only)."""
        out = TopBundles.__new__(TopBundles)
        out._pos, out._plan, out._lists, out._replaced = dict(self._pos), self._plan, dict(self._lists), self._replaced
        return out

    def __reduce__(self):
        return dict, (dict(self.items()),)
