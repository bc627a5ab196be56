"""A snapshot as the starting state of a simulation: the cluster as it was, its traffic held steady.

:func:`scenario_from_snapshot` turns a modular ``LoadData`` snapshot (a sample, an upload, a collected
snapshot) or an Extensible Load Manager snapshot (:class:`~engine.extensible.snapshot.ExtensibleLoadData`,
or the display ``LoadData`` that carries it as ``ld.elm``) into a :class:`SnapshotScenario`: a
:class:`~engine.simulator.scenario.Scenario` (brokers, namespaces, no workloads, no events) plus a
:class:`SnapshotStart` with the measured state. :func:`engine.simulator.run_scenario` /
:func:`~engine.simulator.simulate` run it with :class:`SnapshotSimulation` (the scenario names its
simulation class), so a run takes every override (strategy, placement, preset, ``set``) a scenario
file takes.

What is taken from the snapshot
-------------------------------
* **Brokers**: every broker with a load report (modular ``LocalBrokerData``; ELM ``BrokerLoadData``), with
  its limits as reported: ``cpu.limit`` (percent of one core × cores), ``memory.limit`` (heap MB),
  ``directMemory.limit`` (MB), ``bandwidthIn.limit`` / ``bandwidthOut.limit`` (Kbit/s), and its usages,
  message rates and throughputs as reported. Registered ELM brokers without load data are not simulated.
* **Bundles and owners**: modular — every bundle a broker lists in its ``bundles`` (the first broker
  in ``brokerData`` order when two list it during a handover); ELM — the service-unit channel
  (``bundleOwnership``) when the snapshot has it, else the broker listing the bundle in its top-K report.
  Bundle data of bundles no broker owns is dropped (nothing serves them, so nothing can move them).
* **Traffic per bundle** (msg/s and bytes/s in and out), held constant over the run: modular — the
  bundle's ``bundleData`` short-term averages (``lastStats`` when it has no bundle data); ELM — the
  ``NamespaceBundleStats`` of the top-K reports (a channel bundle outside every top-K list carries no
  traffic of its own). ``topics`` per bundle from ``bundleData.topics`` / the stats (at least 1, so the
  bundle stays in its owner's report); sessions are ``producerCount + consumerCount``.
* **Background load**: what a broker reports beyond its bundles' traffic stays on that broker and
  never moves: its message rates and throughputs minus those of its bundles (for ELM: the bundles
  outside its top K), its CPU, heap, direct memory and NIC usage not explained by the cost model.
  Each minute a broker reports ``reported value + cost × (traffic it serves now − traffic it served in
  the snapshot)``; on the unchanged snapshot that is exactly the reported value.
* **The leader's memory**: modular — the bundle data (short- and long-term averages and their sample
  counts), the brokers' long-term message rates and topic counts, ``recentlyUnloadedBundles``, the
  strategies' state the snapshot records (``shedlabStrategyState``), the broker versions and load-manager
  classes the filters read, resource quotas and the cluster's isolation / anti-affinity / failure-domain
  policies; ELM — the published ``BrokerLoadData`` (``weightedMaxEMA`` is the starting EMA, the brokers'
  EMAs advance from it), the top-K lists, the broker registry (``BrokerLookupData``),
  ``recentlyUnloadedBundles`` / ``recentlyUnloadedBrokers``, TransferShedder's hit count and the
  cluster's policies (uploaded beside the ELM data or in its ``shedlabPolicies``).
* **Strategy**: an ELM snapshot's scenario config names ``ExtensibleLoadManagerImpl``, TransferShedder
  and the extensible LeastResourceUsageWithWeight placement; a modular snapshot's the keys given to
  :func:`scenario_from_snapshot` (e.g. a sample's own ``broker.conf`` values).
* **Time**: every timestamp of the snapshot is shifted so that the simulation's first shedding check
  (minute ``loadBalancerSheddingIntervalMinutes``) runs at the snapshot's own time. On the unchanged
  snapshot no report changes before that check (traffic is steady), so **the first cycle sees exactly
  the snapshot and decides what the Tuner decides** for it under the same config (tested for
  ThresholdShedder on a modular sample and TransferShedder on ``pulsar-client consume`` output).

Approximations (what a snapshot does not say)
---------------------------------------------
* **CPU cost per message**: a snapshot has no per-message CPU cost. It is fitted: the median over the
  brokers carrying traffic of ``cpu.usage / 100 / (msgRateIn + msgRateOut)`` cores per msg/s; a bundle
  moving away takes that much CPU per message with it; the rest of each broker's CPU is its own
  background. With no traffic anywhere, the scenario default (``CostModel.cpu_per_msg_in``).
* **Bandwidth**: a moving bundle takes ``bytes × 8 / 1000`` Kbit/s of NIC in and
  ``(bytes out + r × bytes in) × 8 / 1000`` of NIC out, ``r`` (writes to bookies) fitted as the median
  over brokers of ``(bandwidthOut − msgThroughputOut) / msgThroughputIn`` (clipped to 0..10; 2 without data).
* **Direct memory** per MiB/s of throughput: the scenario default (``CostModel.direct_memory_per_mib``);
  heap usage stays as reported.
* **Per-topic split of a bundle**: not in a snapshot (neither has topic names). Bundles therefore do not
  split during the run (auto split is off whatever the config says: a split needs the topics' hashes),
  and a bundle's traffic moves as one.
* **Traffic over time**: held at the snapshot's values (optionally with the scenario's per-minute
  noise, :class:`~engine.simulator.scenario.NoiseModel`; off by default so the first cycle is exact).
* Modular preallocations of the snapshot are not carried over; the brokers' ``lastUpdate`` times are
  the simulator's (the leader's strategies do not read them).
* For ELM, the load of bundles outside the top-K lists cannot move (it is background). A broker whose
  bundles and their stats are still the snapshot's republishes the list it published (its order decides
  ties, and a recorded list need not be in the order Shedlab's ``top_k_bundles`` would give); once they
  change, its list is rebuilt every minute from the simulated bundle stats, as brokers do.

Examples
--------
>>> from engine.samples import load_sample
>>> sc = scenario_from_snapshot(load_sample("yahoo-japan-3-brokers"), minutes=5)
>>> [b.id for b in sc.brokers], sc.start.kind, len(sc.start.bundles)
(['broker1:8080', 'broker2:8080', 'broker3:8080'], 'modular', 8)
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..model import LoadData, bundle_namespace
from .snapshot_sim import SnapshotSimulation
from .scenario import (
    BrokerSpec,
    CostModel,
    MetricsSpec,
    NamespaceSpec,
    NoiseModel,
    Scenario,
    TimingModel,
    check_scenario_size,
)

__all__ = ["SnapshotStart", "SnapshotScenario", "SnapshotSimulation", "scenario_from_snapshot", "snapshot_kind"]

_RANGE = re.compile(r"0x([0-9a-fA-F]{1,8})_0x([0-9a-fA-F]{1,8})")
#: resources in the simulator's order (cpu, memory, directMemory, bandwidthIn, bandwidthOut)
_RES = ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")


@dataclass(eq=False)
class SnapshotStart:
    """The measured state a :class:`SnapshotSimulation` starts from (see the module docs).

    Arrays per broker follow :attr:`brokers`; per bundle :attr:`bundles` (grouped by namespace, in
    hash-range order). ``traffic`` rows: msgRateIn, msgRateOut, msgThroughputIn, msgThroughputOut
    (bytes/s); ``rates`` the brokers' reported totals in the same order; ``usage`` / ``limit`` the
    reported resource usages and limits (cpu, memory, directMemory, bandwidthIn, bandwidthOut).
    """

    kind: str  # "modular" or "elm"
    source: str
    now_ms: int
    brokers: list
    usage: np.ndarray
    limit: np.ndarray
    rates: np.ndarray
    bundles: list
    bounds: list  # (lo, hi) per bundle
    owner: np.ndarray
    traffic: np.ndarray
    topics: np.ndarray
    sessions: np.ndarray
    cpu_per_msg: float
    replication: float
    direct_memory_per_mib: float
    # modular leader memory (None for ELM)
    st: np.ndarray | None = None
    lt: np.ndarray | None = None
    st_n: np.ndarray | None = None
    lt_n: np.ndarray | None = None
    in_bd: np.ndarray | None = None
    num_topics: np.ndarray | None = None
    long_term_msg_rate: np.ndarray | None = None
    broker_info: list | None = None
    resource_quotas: dict = field(default_factory=dict)
    recently_unloaded: dict = field(default_factory=dict)
    recently_unloaded_brokers: dict = field(default_factory=dict)
    strategy_state: dict = field(default_factory=dict)
    #: the ELM snapshot itself (its BrokerLoadData, top-K lists and registry seed the ELM leader)
    elm: Any = None
    notes: list = field(default_factory=list)


@dataclass(frozen=True)
class SnapshotScenario(Scenario):
    """A :class:`Scenario` whose run starts from a snapshot (``start``); run with :class:`SnapshotSimulation`."""

    start: Any = None

    @property
    def simulation_class(self):
        return SnapshotSimulation


# ============================================================================================ conversion
def snapshot_kind(data) -> str:
    """``"elm"`` for an ELM snapshot (or a display ``LoadData`` carrying one as ``.elm``), else ``"modular"``."""
    if getattr(data, "elm", None) is not None or getattr(data, "extensible", False) is True and not isinstance(
            data, LoadData):
        return "elm"
    return "modular"


def _range(name: str, source) -> tuple[int, int]:
    m = _RANGE.fullmatch(name.rsplit("/", 1)[-1])
    if not m:
        raise InputError(f"bundle {name[:120]!r} has no 0xLOWER_0xUPPER hash range", source=source,
                         field="bundles")
    return int(m.group(1), 16), int(m.group(2), 16)


def _median_ratio(num: np.ndarray, den: np.ndarray, default: float, lo: float = 0.0, hi: float | None = None) -> float:
    ok = (den > 0) & np.isfinite(num) & (num >= 0)
    if not ok.any():
        return default
    v = float(np.median(num[ok] / den[ok]))
    if hi is not None:
        v = min(v, hi)
    return max(v, lo)


def scenario_from_snapshot(data, *, minutes: int = 60, config: dict | None = None, noise: NoiseModel | None = None,
                           seed: int = 0, name: str | None = None, title: str | None = None) -> SnapshotScenario:
    """The scenario that starts from ``data`` (see the module docs for what is taken and approximated).

    Parameters
    ----------
    data : LoadData or ExtensibleLoadData
        A modular snapshot, an ELM snapshot, or the display ``LoadData`` of an ELM upload (``.elm``).
    minutes : int
        Length of the run.
    config : dict, optional
        ``broker.conf`` keys of the scenario (a modular source's own values); an ELM snapshot always
        adds ``loadManagerClassName``, TransferShedder and its placement (unless ``config`` names them).
    noise : NoiseModel, optional
        Per-minute noise; default none (traffic held exactly steady).
    """
    elm = getattr(data, "elm", None)
    if elm is None and getattr(data, "extensible", False) is True and not isinstance(data, LoadData):
        elm = data
    source = getattr(elm if elm is not None else data, "source", None) or "snapshot"
    start = _elm_start(elm, source) if elm is not None else _modular_start(data, source)
    if not start.brokers:
        raise InputError("the snapshot has no broker with load data: nothing to simulate", source=source,
                         field="brokers")
    values = dict(config or {})
    if start.kind == "elm":
        from ..managers import LOAD_MANAGER_CLASS
        from ..strategies import registry
        from ..strategies.spec import EXTENSIBLE

        # the Extensible Load Manager's shedding strategy (the first registered) and its placement
        shedding = next(x.name for x in registry.specs(role="shedding") if x.load_manager == EXTENSIBLE)
        values.setdefault("loadManagerClassName", LOAD_MANAGER_CLASS[EXTENSIBLE])
        values.setdefault("loadBalancerLoadSheddingStrategy", registry.fqn(shedding))
        values.setdefault("loadBalancerLoadPlacementStrategy", registry.fqn(registry.default_placement(shedding)))
    # brokers: limits as reported (the simulator's own arrays are set from start.limit)
    brokers = []
    for i, b in enumerate(start.brokers):
        lim, use = start.limit[i], start.usage[i]
        brokers.append(BrokerSpec(
            id=b, cores=max(float(lim[0]) / 100.0, 1e-9), nic_gbps=max(float(lim[3]) / 1e6, 1e-12),
            heap_mb=max(float(lim[1]), 1e-9), direct_memory_mb=max(float(lim[2]), 1e-9), background_cpu=0.0,
            heap_used=float(100.0 * use[1] / lim[1]) if lim[1] > 0 else 0.0, join=0))
    namespaces, counts = [], {}
    for bn in start.bundles:
        counts[bundle_namespace(bn)] = counts.get(bundle_namespace(bn), 0) + 1
    for ns, n in counts.items():
        namespaces.append(NamespaceSpec(ns, n, "placement"))
    cost = CostModel(cpu_per_msg_in=start.cpu_per_msg, cpu_per_msg_out=start.cpu_per_msg, cpu_per_mib=0.0,
                     replication=start.replication, direct_memory_per_mib=start.direct_memory_per_mib)
    from ..policies import policies_of

    policies = policies_of(data)  # the modular leader and TransferShedder's leader both apply them
    label = "ELM snapshot" if start.kind == "elm" else "snapshot"
    sc = SnapshotScenario(
        name=name or f"{label}: {str(source)[:80]}", minutes=int(minutes), brokers=tuple(brokers),
        namespaces=tuple(namespaces), title=title or f"from the {label} {str(source)[:80]}",
        description="The cluster as the snapshot recorded it, its traffic held steady: " + "; ".join(start.notes),
        seed=int(seed), config=tuple(sorted((str(k), str(v)) for k, v in values.items())), cost=cost,
        noise=noise or NoiseModel(0.0, 0.0, 0.0), timing=TimingModel(), metrics=MetricsSpec(),
        source=str(source), policies=policies, start=start)
    check_scenario_size(sc)
    return sc


def _sort_bundles(names: list[str], source) -> list[str]:
    """Grouped by namespace (first appearance), each namespace's bundles in hash-range order."""
    order = {}
    for n in names:
        order.setdefault(bundle_namespace(n), len(order))
    return sorted(names, key=lambda n: (order[bundle_namespace(n)], _range(n, source)))


def _fits(usage, limit, rates, traffic, owner, S, notes):
    """CPU per message and the bookie-write factor of NIC out, fitted over the brokers (module docs)."""
    msg = rates[:, 0] + rates[:, 1]
    cpu = _median_ratio(usage[:, 0] / 100.0, msg, CostModel().cpu_per_msg_in)
    notes.append(f"CPU per message fitted from the brokers' CPU and msg rates: {cpu:.3g} cores per msg/s")
    # bandwidthOut (Kbit/s) -> bytes/s, minus what the broker sends to consumers, per byte received
    repl = _median_ratio(usage[:, 4] * 1000.0 / 8.0 - rates[:, 3], rates[:, 2], CostModel().replication, 0.0, 10.0)
    notes.append(f"NIC out per byte in (writes to bookies) fitted: {repl:.3g}")
    notes.append("direct memory per MiB/s: the scenario default; no per-topic split (bundles do not split)")
    return cpu, repl


def _modular_start(ld: LoadData, source) -> SnapshotStart:
    from ..view import LoadView

    v = LoadView.from_load_data(ld)
    brokers = list(v.brokers)
    S = len(brokers)
    owner_of: dict[str, int] = {}
    for i, ks in enumerate(v.owned):
        for k in np.asarray(ks).tolist():
            owner_of.setdefault(v.bundles[k], i)
    names = _sort_bundles(list(owner_of), source)
    vk = v.bundle_index
    idx = np.array([vk[n] for n in names], dtype=np.int64)
    K = len(names)
    traffic = np.zeros((K, 4))
    topics = np.ones(K, dtype=np.int64)
    sessions = np.zeros(K, dtype=np.int64)
    for j, n in enumerate(names):
        k = int(idx[j])
        stats = ld.brokers[brokers[owner_of[n]]].local.last_stats.get(n)
        if v.in_bundle_data[k]:
            thr_in, thr_out, r_in, r_out = (float(x) for x in v.st[k])
            traffic[j] = (r_in, r_out, thr_in, thr_out)
            topics[j] = max(1, int(v.topics[k]))
        elif stats is not None:
            traffic[j] = (stats.msg_rate_in, stats.msg_rate_out, stats.msg_throughput_in, stats.msg_throughput_out)
        if stats is not None:
            sessions[j] = int(stats.producer_count) + int(stats.consumer_count)
            if not v.in_bundle_data[k]:
                topics[j] = max(1, int(stats.topics))
    usage = np.zeros((S, 5))
    limit = np.zeros((S, 5))
    rates = np.zeros((S, 4))
    for i, b in enumerate(brokers):
        L = ld.brokers[b].local
        for j, a in enumerate(_RES):
            r = getattr(L, a)
            usage[i, j], limit[i, j] = float(r.usage), float(r.limit)
        rates[i] = (L.msg_rate_in, L.msg_rate_out, L.msg_throughput_in, L.msg_throughput_out)
    owner = np.array([owner_of[n] for n in names], dtype=np.int64)
    notes = []
    dropped = int(v.in_bundle_data.sum()) - int(v.in_bundle_data[idx].sum()) if K else int(v.in_bundle_data.sum())
    if dropped:
        notes.append(f"{dropped} bundle(s) with bundle data but no owner dropped")
    cpu, repl = _fits(usage, limit, rates, traffic, owner, S, notes)
    return SnapshotStart(
        kind="modular", source=str(source), now_ms=int(v.now_ms), brokers=brokers, usage=usage, limit=limit,
        rates=rates, bundles=names, bounds=[_range(n, source) for n in names], owner=owner, traffic=traffic,
        topics=topics, sessions=sessions, cpu_per_msg=cpu, replication=repl,
        direct_memory_per_mib=CostModel().direct_memory_per_mib,
        st=v.st[idx].copy(), lt=v.lt[idx].copy(), st_n=v.st_samples[idx].copy(), lt_n=v.lt_samples[idx].copy(),
        in_bd=v.in_bundle_data[idx].copy(), num_topics=np.asarray(v.num_topics, dtype=np.int64).copy(),
        long_term_msg_rate=np.asarray(v.long_term_msg_rate, dtype=float).copy(), broker_info=list(v.broker_info),
        resource_quotas=dict(v.resource_quotas), recently_unloaded=dict(ld.recently_unloaded),
        strategy_state=copy.deepcopy(dict(getattr(ld, "strategy_state", None) or {})), notes=notes)


def _elm_start(ext, source) -> SnapshotStart:
    from ..javacompat import java_map_order

    brokers = [b for b in java_map_order(list(ext.broker_load_data), concurrent=True)]
    S = len(brokers)
    pos = {b: i for i, b in enumerate(brokers)}
    owners = {bn: b for bn, b in ext.owners().items() if b in pos}
    stats = {}
    for b in java_map_order(list(ext.top_bundles), concurrent=True):
        for x in ext.top_bundles[b]:
            if owners.get(x.bundle_name) == b:
                stats.setdefault(x.bundle_name, x.stats)
    names = _sort_bundles(list(owners), source)
    K = len(names)
    traffic = np.zeros((K, 4))
    topics = np.ones(K, dtype=np.int64)
    sessions = np.zeros(K, dtype=np.int64)
    for j, n in enumerate(names):
        s = stats.get(n)
        if s is not None:
            traffic[j] = (s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out)
            topics[j] = max(1, int(s.topics))
            sessions[j] = int(s.producer_count) + int(s.consumer_count)
    usage = np.zeros((S, 5))
    limit = np.zeros((S, 5))
    rates = np.zeros((S, 4))
    for i, b in enumerate(brokers):
        d = ext.broker_load_data[b]
        for j, a in enumerate(_RES):
            r = getattr(d, a)
            usage[i, j], limit[i, j] = float(r.usage), float(r.limit)
        rates[i] = (d.msg_rate_in, d.msg_rate_out, d.msg_throughput_in, d.msg_throughput_out)
    owner = np.array([pos[owners[n]] for n in names], dtype=np.int64)
    notes = ["the load of bundles outside each broker's top-K report stays on it as background"]
    missing = [b for b in ext.brokers if b not in pos]
    if missing:
        notes.append(f"{len(missing)} registered broker(s) without load data not simulated: {', '.join(missing[:5])}")
    cpu, repl = _fits(usage, limit, rates, traffic, owner, S, notes)
    return SnapshotStart(
        kind="elm", source=str(source), now_ms=int(ext.now), brokers=brokers, usage=usage, limit=limit, rates=rates,
        bundles=names, bounds=[_range(n, source) for n in names], owner=owner, traffic=traffic, topics=topics,
        sessions=sessions, cpu_per_msg=cpu, replication=repl,
        direct_memory_per_mib=CostModel().direct_memory_per_mib,
        recently_unloaded=dict(ext.recently_unloaded), recently_unloaded_brokers=dict(ext.recently_unloaded_brokers),
        strategy_state=copy.deepcopy(dict(ext.strategy_state or {})), elm=ext, notes=notes)
