"""The Extensible Load Manager as the simulator's leader (``run_scenario(..., strategy="TransferShedder")``).

:class:`ExtensibleLeader` implements the simulator's ``Leader`` interface
(:mod:`engine.simulator.leader`) over :class:`~engine.extensible.load_manager.ExtensibleLoadManager`;
the simulator's ``make_leader`` picks it whenever the configured shedding strategy's spec names the
extensible load manager (TransferShedder, or a plug-in of that manager). It lives here, not in
:mod:`engine.simulator`, because the simulator only knows the ``Leader`` interface and its per-minute
``on_reports`` feed (duck-typed: nothing here imports the simulator), while how the extensible brokers
turn a minute of measurements into ``BrokerLoadData`` and top-K reports is this package's business.

Cadence (``pulsar-load-balancing.md`` §8.1, §8.2, §8.3), at the simulator's one-minute resolution:

* **Broker side** (:class:`SimulatedBrokers`, kept across leader elections: the data lives in system
  topics). Every running broker regenerates its ``BrokerLoadData`` every
  ``loadBalancerReportUpdateMinIntervalMillis`` (5 s): ``round(60 s / tick)`` = 12 generations per
  simulated minute, at ``now − 55 s, …, now``, each with that minute's usage, throughputs, rates,
  bundle and topic counts (the simulator has no sub-minute resolution, so the minute's values are
  constant over its 12 generations). ``weightedMaxEMA`` and ``msgThroughputEMA`` advance on every
  generation: after a usage step from ``old`` to ``new`` the EMA follows ``h·ema + (1 − h)·new``
  twelve times a minute (``h = loadBalancerHistoryResourcePercentage``).
* **Publishing** is throttled as §8.1 says ("like §3.1"): a broker publishes its ``BrokerLoadData``
  (the state after the minute's last generation, ``updatedAt = now``) in the minutes it writes its
  load report (``needBrokerDataUpdate()``: a change above
  ``loadBalancerReportUpdateThresholdPercentage`` or ``loadBalancerReportUpdateMaxIntervalMinutes``
  elapsed), and the leader reads the *published* copy. So the 180 s cool-down
  (``loadBalanceSheddingDelayInSeconds``), which compares a broker's published ``updatedAt`` with its
  last unload, ends only when that broker publishes again at least 180 s after the unload.
  ``loadBalancerReportUpdateThresholdPercentage=0`` makes a broker publish whenever anything changed
  (every minute with noisy traffic).
* **Top-K reports** (``loadBalancerMaxNumberOfBundlesInBundleLoadReport``) are rebuilt and published
  every minute from the broker's bundle stats (:func:`top_k_reports`, the lists of
  :func:`~engine.extensible.top_bundles.top_k_bundles` for all brokers at once;
  Pulsar republishes when the bundle stats refresh, every 60 s). Sessions (producers + consumers)
  go in ``consumerCount`` (``compareTo`` only uses their sum with the topics). With a scenario's
  ``policies:`` the bundles of namespaces that have policies are left out unless
  ``loadBalancerSheddingBundlesWithPoliciesEnabled`` (``TopKBundles``), and the leader's placement and
  ``isTransferable`` run ``BrokerIsolationPoliciesFilter`` / ``AntiAffinityGroupPolicyFilter``
  (:class:`~engine.policies.ExtensibleClusterPolicies`).
* **Leader**: ``observe`` builds an :class:`~engine.extensible.snapshot.ExtensibleLoadData` from the
  published stores of the registered brokers (those the simulator's leader sees), the service-unit
  channel (the simulator's current owners) and the time; ``shed`` is
  ``UnloadScheduler.execute`` (TransferShedder with its hit count, ``recentlyUnloadedBundles``,
  ``recentlyUnloadedBrokers``); each unload goes to TransferShedder's min broker
  (``loadBalancerTransferEnabled``) or, without transfer, to the extensible placement; ``assign``
  is ``selectAsync`` (filters + ExtensibleLeastResourceUsageWithWeight or round robin).
* A broker that leaves takes its load data out of both stores (a simplification: a crashed broker's
  entry would otherwise linger until its data is older than ``loadBalancerBrokerLoadDataTTLInSeconds``).
  A restarted broker starts a new EMA.

Events and the check rows carry Pulsar's decision codes: unload reasons start with ``Overloaded`` or
``Underloaded`` (then the decision's detail; swaps say ``swap:``), check reasons with the skip code
(``HitCount``, ``CoolDown``, ``NoBundles``, ``NoLoadData``, ``OutDatedData``, ``NoBrokers``) or the
codes of the cycle's unloads.

Examples
--------
>>> from engine.simulator import run_scenario                                   # doctest: +SKIP
>>> r = run_scenario("bigo-scale-out", strategy="TransferShedder")               # doctest: +SKIP
>>> r.cluster[["minute", "load_std", "target_std", "unloads"]]                   # doctest: +SKIP

The EMA of one broker over one simulated minute (12 generations of 5 s):

>>> from engine.config import LoadBalancerConfig
>>> from engine.model import ResourceUsage
>>> d = BrokerLoadData()
>>> t = [60_000 - (11 - g) * 5_000 for g in range(12)]
>>> generate(d, {"cpu": ResourceUsage(20, 100)}, 0, 0, 0, 0, 1, 1, LoadBalancerConfig(), t)
>>> round(d.weighted_max_ema, 6), d.updated_at                 # first minute: starts at the usage
(0.2, 60000)
>>> generate(d, {"cpu": ResourceUsage(60, 100)}, 0, 0, 0, 0, 1, 1, LoadBalancerConfig(),
...          [x + 60_000 for x in t])
>>> round(d.weighted_max_ema, 6)                               # 0.6 - 0.4 * 0.9**12
0.487028
"""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np

from ..config import LoadBalancerConfig
from ..javacompat import java_map_order
from ..load_manager import as_rng
from ..model import NamespaceBundleStats, ResourceUsage, bundle_namespace
from ..results import Cycle, PlacementDecision
from .broker_load_data import RESOURCES, BrokerLoadData
from .load_manager import ExtensibleLoadManager
from .snapshot import BrokerLookupData, ExtensibleLoadData, extensible_config
from .top_bundles import (
    BW_RESOLUTION,
    MSG_RATE_RESOLUTION,
    TOPIC_CONN_RESOLUTION,
    BundleLoadData,
    is_system_service_namespace,
    partition_sort,
)
from .transfer_shedder import SUCCESS

__all__ = ["ExtensibleLeader", "SimulatedBrokers", "generate", "generations", "top_k_reports"]

_MINUTE_MS = 60_000


def generations(now_ms: int, conf: LoadBalancerConfig) -> list[int]:
    """The load-data generation times of the minute ending at ``now_ms``: one every
    ``loadBalancerReportUpdateMinIntervalMillis``, the last at ``now_ms``.

    >>> generations(120_000, LoadBalancerConfig())[:3], len(generations(120_000, LoadBalancerConfig()))
    ([65000, 70000, 75000], 12)
    """
    tick = int(conf.loadBalancerReportUpdateMinIntervalMillis)
    n = max(1, int(round(_MINUTE_MS / tick)))
    return [int(now_ms) - (n - 1 - g) * tick for g in range(n)]


def generate(d: BrokerLoadData, usage, msg_throughput_in: float, msg_throughput_out: float, msg_rate_in: float,
             msg_rate_out: float, bundle_count: int, topics: int, conf: LoadBalancerConfig,
             times: Sequence[int]) -> None:
    """``d.update(...)`` once per time in ``times`` with unchanged inputs (the generations of one minute).

    Same numbers as calling :meth:`BrokerLoadData.update` ``len(times)`` times (the first call sets
    every field; the weighted max and throughput of the later calls are the same, so only the two
    EMAs and ``updatedAt`` move — computed with ``update``'s own expressions, without recomputing
    the float32 percentages eleven more times).
    """
    if not times:
        return
    d.update(usage, msg_throughput_in, msg_throughput_out, msg_rate_in, msg_rate_out, bundle_count, topics, conf,
             now_ms=times[0])
    if len(times) == 1:
        return
    h = conf.loadBalancerHistoryResourcePercentage
    wmax = d.weighted_max(conf)
    thr = d.msg_throughput_in + d.msg_throughput_out
    ema, tema = d.weighted_max_ema, d.msg_throughput_ema
    for _ in times[1:]:
        ema = ema * h + (1 - h) * wmax
        tema = tema * h + (1 - h) * thr
    d.weighted_max_ema, d.msg_throughput_ema, d.updated_at = ema, tema, int(times[-1])


def _java_round(x: np.ndarray) -> np.ndarray:
    """:func:`~engine.extensible.top_bundles.java_math_round` over an array of finite doubles."""
    f = np.floor(x)
    return (f + ((x - f) >= 0.5)).astype(np.int64)


def top_k_reports(n_brokers: int, bundle_broker: np.ndarray, names: Sequence[str], stats: np.ndarray,
                  topics: np.ndarray, sessions: np.ndarray, conf: LoadBalancerConfig,
                  order_cache: dict | None = None, has_policies=None) -> list[list[BundleLoadData]]:
    """Every broker's top-K list at once: the same lists as :func:`top_k_bundles` on each broker's
    bundle stats (in ``names`` order), with the ``compareTo`` keys computed for all bundles in one go.

    ``stats`` rows are msgRateIn, msgThroughputIn, msgRateOut, msgThroughputOut; ``sessions``
    (producers + consumers) count as ``consumerCount``; ``has_policies`` (``namespace -> bool``, optional)
    leaves out the bundles of namespaces with isolation / anti-affinity policies unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``, as ``TopKBundles.update`` does. ``order_cache``
    (optional) keeps each broker's ``ConcurrentHashMap`` order between calls (it only changes with
    the broker's bundle set).
    """
    out: list[list] = [[] for _ in range(n_brokers)]
    m = len(names)
    k = conf.loadBalancerMaxNumberOfBundlesInBundleLoadReport
    if m == 0 or k <= 0:
        return out
    st = np.asarray(stats, dtype=float).reshape(m, 4)
    excluded = conf.excluded_namespaces
    if order_cache is not None and len(order_cache) > 8 * n_brokers + 64:
        order_cache.clear()
    cache = order_cache if order_cache is not None else {}
    skip_pol = has_policies if has_policies is not None and not conf.loadBalancerSheddingBundlesWithPoliciesEnabled \
        else None
    name_ok = cache.setdefault(("name_ok", tuple(excluded), id(skip_pol) if skip_pol else None), {})
    keep = (st[:, 1] + st[:, 3]) != 0
    for j, name in enumerate(names):
        ok = name_ok.get(name)
        if ok is None:
            ns = bundle_namespace(name)
            ok = name_ok[name] = not (is_system_service_namespace(ns) or ns in excluded
                                      or (skip_pol is not None and skip_pol(ns)))
        if not ok:
            keep[j] = False
    conn = np.asarray(topics, dtype=np.int64) + np.asarray(sessions, dtype=np.int64)
    keys = np.column_stack([_java_round(st[:, 1] / BW_RESOLUTION), _java_round(st[:, 3] / BW_RESOLUTION),
                            _java_round((st[:, 0] + st[:, 2]) / MSG_RATE_RESOLUTION), conn // TOPIC_CONN_RESOLUTION,
                            np.zeros(m, dtype=np.int64)])
    # dense rank of the key tuples in lexicographic order (= compareTo)
    order = np.lexsort(keys.T[::-1])
    sk = keys[order]
    dense = np.concatenate(([0], np.cumsum(np.any(sk[1:] != sk[:-1], axis=1))))
    rank_a = np.empty(m, dtype=np.int64)
    rank_a[order] = dense
    rank = rank_a.tolist()

    def cmp(a, b):
        ra, rb = rank[a], rank[b]
        return (ra > rb) - (ra < rb)

    bb = np.asarray(bundle_broker, dtype=np.int64)
    grp = np.argsort(bb, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(bb, minlength=n_brokers))))
    kl = keep.tolist()
    for p in range(n_brokers):
        idx = grp[bounds[p]:bounds[p + 1]].tolist()
        if not idx:
            continue
        key = tuple(names[j] for j in idx)
        pos = cache.get(key)
        if pos is None:
            where = {x: i for i, x in enumerate(key)}
            pos = cache[key] = [where[x] for x in java_map_order(key, concurrent=True)]
        arr = [idx[i] for i in pos if kl[idx[i]]]
        if not arr:
            continue
        kk = min(k, len(arr))
        partition_sort(arr, kk, cmp)
        out[p] = [BundleLoadData(names[j], NamespaceBundleStats(
            msg_rate_in=float(st[j, 0]), msg_throughput_in=float(st[j, 1]), msg_rate_out=float(st[j, 2]),
            msg_throughput_out=float(st[j, 3]), consumer_count=int(sessions[j]), topics=int(topics[j])))
            for j in (arr[i] for i in range(kk - 1, -1, -1))]
    return out


class SimulatedBrokers:
    """The brokers' side of the Extensible Load Manager in a simulation.

    Attributes
    ----------
    local : dict
        broker → its reporter's own :class:`BrokerLoadData` (advanced every generation).
    store : dict
        broker → the last *published* copy (``loadbalancer-broker-load-data``, what the leader reads).
    top : dict
        broker → its last top-K list, ascending (``loadbalancer-top-bundles-load-data``).
    published_minute : dict
        broker → minute of its last publication.
    """

    def __init__(self):
        self.local: dict[str, BrokerLoadData] = {}
        self.store: dict[str, BrokerLoadData] = {}
        self.top: dict[str, list] = {}
        self.published_minute: dict[str, int] = {}
        self._order_cache: dict = {}
        #: ``namespace -> bool``: the namespace has policies (the scenario's, engine.policies), or None
        self.has_policies = None

    def report(self, r, conf: LoadBalancerConfig) -> None:
        """One simulated minute of every running broker (``r``: the simulator's ``BrokerReports``)."""
        running = set(r.brokers)
        for b in [b for b in self.local if b not in running]:  # stopped: its reporter and its entries go
            self.local.pop(b, None)
            self.store.pop(b, None)
            self.top.pop(b, None)
            self.published_minute.pop(b, None)
        times = generations(r.now_ms, conf)
        attrs = [a for a, _ in RESOURCES]
        for i, b in enumerate(r.brokers):
            d = self.local.get(b)
            if d is None:
                d = self.local[b] = BrokerLoadData()
            usage = {a: ResourceUsage(float(r.usage[i, j]), float(r.limit[i, j])) for j, a in enumerate(attrs)}
            rin, rout, tin, tout = (float(x) for x in r.rates[i])
            generate(d, usage, tin, tout, rin, rout, int(r.bundle_count[i]), int(r.topics[i]), conf, times)
            if bool(r.writes_report[i]) or b not in self.store:
                pub = copy.copy(d)  # update() replaces the ResourceUsage objects, never mutates them
                pub.reported_at = int(r.now_ms)
                self.store[b] = pub
                self.published_minute[b] = int(r.minute)
        # top-K reports from the minute's bundle stats
        tops = top_k_reports(len(r.brokers), r.bundle_broker, r.bundle_names, r.bundle_stats, r.bundle_topics,
                             r.bundle_sessions, conf, self._order_cache, self.has_policies)
        for b, lst in zip(r.brokers, tops):
            self.top[b] = lst


class ExtensibleLeader:
    """The simulator's leader running ``ExtensibleLoadManagerImpl`` (TransferShedder + ``selectAsync``).

    Parameters
    ----------
    config : LoadBalancerConfig
        Read as an extensible config (:func:`~engine.extensible.snapshot.extensible_config`).
    seed : int or numpy.random.Generator
        Randomness of the placement draws (one stream for the whole run).

    Notes
    -----
    See the module docstring for the cadence. The manager (hit count, ``recentlyUnloadedBundles``,
    ``recentlyUnloadedBrokers``) is this leader's memory; a new leader starts without it but takes
    over the brokers' published data (:meth:`take_over`). ``assign`` places with ``selectAsync``
    (the simulator only looks up bundles no broker owns).
    """

    extensible = True

    def __init__(self, config: LoadBalancerConfig, seed=None):
        self.config = extensible_config(config)
        self.rng = as_rng(seed)
        self.brokers = SimulatedBrokers()
        self.manager: ExtensibleLoadManager | None = None
        self._channel = None
        self._policies = None

    @property
    def policies(self):
        """The scenario's isolation / anti-affinity / failure-domain policies (``engine.policies.ClusterPolicies``,
        set by the simulation): ``BrokerIsolationPoliciesFilter`` and ``AntiAffinityGroupPolicyFilter`` in
        the placement and TransferShedder's ``isTransferable``, and the brokers' top-K lists leave out
        the bundles of namespaces with policies (``TopKBundles``) unless
        ``loadBalancerSheddingBundlesWithPoliciesEnabled``."""
        return self._policies

    @policies.setter
    def policies(self, cp) -> None:
        self._policies = cp if cp is not None and not cp.empty else None
        self.brokers.has_policies = self._policies.has_policies if self._policies is not None else None

    @property
    def name(self) -> str:
        if self.manager is None:
            return f"{self.config.shedding_strategy} + {self.config.placement_strategy}"
        return f"{self.manager.shedding.name} + {self.manager.placement.name}"

    # ------------------------------------------------------------------ broker side
    def on_reports(self, reports) -> None:
        """The brokers' minute: 12 generations each, publications, top-K reports."""
        self.brokers.report(reports, self.config)
        self._channel = reports.channel

    def take_over(self, previous) -> None:
        """A new leader: the brokers and their published data stay; the leader's memory does not."""
        brokers = getattr(previous, "brokers", None)
        if isinstance(brokers, SimulatedBrokers):
            self.brokers = brokers
            self._channel = getattr(previous, "_channel", None)
            if self._policies is not None:
                self.brokers.has_policies = self._policies.has_policies

    # ------------------------------------------------------------------ leader side
    def snapshot(self, registry: Sequence[str], now_ms: int) -> ExtensibleLoadData:
        """What the leader reads now: the registered brokers' published data, the channel, the time."""
        store, top = self.brokers.store, self.brokers.top
        return ExtensibleLoadData({b: store[b] for b in registry if b in store},
                                  {b: top[b] for b in registry if b in top},
                                  lookup={b: BrokerLookupData() for b in registry},
                                  ownership=self._channel() if self._channel is not None else {},
                                  now_ms=int(now_ms))

    def observe(self, view) -> None:
        data = self.snapshot(list(view.brokers), view.now_ms)
        if self.manager is None:
            pol = None
            if self._policies is not None:
                from ..policies import ExtensibleClusterPolicies

                pol = ExtensibleClusterPolicies(self._policies)
            self.manager = ExtensibleLoadManager(data, self.config, seed=self.rng, policies=pol)
        else:
            self.manager.update(data)

    def shed(self, now_ms: int) -> Cycle:
        cyc = self.manager.do_load_shedding(now_ms)
        res = cyc.shedding
        if res is None:
            return cyc
        ok = [d for d in res.decisions if d.label == SUCCESS]
        for d, u in zip(ok, cyc.unloads):
            u.reason = f"{d.reason}: {d.detail}" if d.detail else d.reason
            if d.destination is not None:  # a transfer: the shedding strategy chose the destination
                dec = PlacementDecision(u.bundle, res.strategy, broker=d.destination)
                dec.reason = (f"swap: back to the max broker {d.destination} (loadBalancerTransferEnabled)" if d.swap
                              else f"transfer to {res.strategy}'s min broker {d.destination} "
                                   "(loadBalancerTransferEnabled)")
                u.placement = dec
        if ok:
            codes = list(dict.fromkeys(d.reason for d in ok))
            cyc.reason = f"{'/'.join(codes)}: {res.reason}"
        return cyc

    def assign(self, bundle: str) -> PlacementDecision:
        return self.manager.select_broker(bundle)

    def reconfigure(self, config: LoadBalancerConfig) -> None:
        old = self.config
        self.config = extensible_config(config)
        m = self.manager
        if m is None:
            return
        m.config = self.config
        if old.loadBalancerLoadPlacementStrategy != self.config.loadBalancerLoadPlacementStrategy:
            m.placement = m._make_placement()

    def state(self) -> dict:
        if self.manager is None:
            return {}
        out = self.manager.state()
        out["published_minute"] = dict(self.brokers.published_minute)
        return out

    def state_values(self) -> dict:
        """``{strategy name: state value}`` of the manager's shedding and placement strategies."""
        m = self.manager
        return {} if m is None else {m.shedding.name: m.shedding_state, m.placement.name: m.placement_state}
