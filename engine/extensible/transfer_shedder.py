"""TransferShedder: the Extensible Load Manager's shedding strategy (``scheduler/TransferShedder.java``).

It aims at a target standard deviation of broker load (each broker's ``weightedMaxEMA``): after
``loadBalancerSheddingConditionHitCountThreshold`` consecutive "unbalanced" cycles it pairs the most
loaded broker with the least loaded one, moves about half their load difference (in bytes/s of the
top-K bundles, smallest first), swaps bundles back when a bundle is too big, updates the std
estimate, and repeats with the next pair, for at most ``loadBalancerMaxNumberOfBrokerSheddingPerCycle``
brokers.

Result codes are Pulsar's (``UnloadDecision``): Success with Overloaded or Underloaded (by the
brokers shed for each reason, as ``UnloadDecision.succeed`` counts them); Skip with CoolDown,
NoBrokers, OutDatedData, NoLoadData, NoBundles or HitCount (the reason of Pulsar's
``pulsar_lb_unload_broker_breakdown_total`` metric; not in the ``UnloadDecision.Reason`` enum).
``details`` is a :class:`TransferShedderDetails`, the state a :class:`TransferShedderState`.

Examples
--------
A 3-broker snapshot on the 4th unbalanced cycle (hit count 3, threshold 3): the hot broker gives
half the load gap to the cool one, (0.9 - 0.1) / 2 of 900 B/s = 400 B/s:

>>> from engine.config import LoadBalancerConfig
>>> from engine.extensible.broker_load_data import BrokerLoadData
>>> from engine.extensible.snapshot import ExtensibleLoadData
>>> from engine.extensible.top_bundles import BundleLoadData
>>> from engine.model import NamespaceBundleStats as S
>>> data = ExtensibleLoadData(
...     {"hot:8080": BrokerLoadData(weighted_max_ema=0.9, msg_throughput_in=900.0, updated_at=1000),
...      "mid:8080": BrokerLoadData(weighted_max_ema=0.5, msg_throughput_in=500.0, updated_at=1000),
...      "cool:8080": BrokerLoadData(weighted_max_ema=0.1, msg_throughput_in=100.0, updated_at=1000)},
...     {"hot:8080": [BundleLoadData(f"t/n/b{i}", S(msg_throughput_in=t)) for i, t in enumerate([100.0, 300.0, 500.0])]},
...     now_ms=1000)
>>> res, state = TransferShedder().run(data, LoadBalancerConfig(), {}, TransferShedderState(3))
>>> print(res.label, res.reason_code, res.reason)
Success Overloaded 2 unload(s) from 1 broker(s); std 32.66 % -> 0.00 % (target 25.00 %)
>>> [(d.bundle, d.destination, d.reason) for d in res.decisions]
[('t/n/b0', 'cool:8080', 'Overloaded'), ('t/n/b1', 'cool:8080', 'Overloaded')]
>>> state
TransferShedderState(unload_condition_hit_count=0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from ..config import LoadBalancerConfig
from ..errors import UsageError
from ..javacompat import java_map_order
from ..model import bundle_namespace
from ..results import (BALANCED, COOL_DOWN, FAILURE, HIT_COUNT, NO_BROKERS, NO_BUNDLES, NO_LOAD_DATA, OUTDATED_DATA,
                       OVERLOADED, SKIP, SUCCESS, UNDERLOADED, UNKNOWN, BrokerVerdict, Details, Selection,
                       SheddingResult, UnloadDecision, fmt_bytes)
from ..strategies.spec import EXTENSIBLE, StrategySpec
from ..strategies.state import StateValue, Stateful
from .filters import FilterContext, transferable
from .snapshot import EXTENSIBLE_LOAD_MANAGER, ExtensibleLoadData, extensible_config

__all__ = ["SPEC", "TransferShedderState", "TransferShedderDetails", "TransferShedder", "LoadStats", "TRANSFER_SHEDDER_FQN", "SUCCESS", "SKIP", "FAILURE", "OVERLOADED",
           "UNDERLOADED", "BALANCED", "HIT_COUNT", "NO_BUNDLES", "COOL_DOWN", "OUTDATED_DATA", "NO_LOAD_DATA",
           "NO_BROKERS", "UNKNOWN"]

TRANSFER_SHEDDER_FQN = "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder"



def _jsqrt(x: float) -> float:
    """Java ``Math.sqrt``: NaN for a negative argument (rounding can make ``sqSum/n - avg²`` < 0)."""
    return math.sqrt(x) if x >= 0 else math.nan


def _jdiv(a: float, b: float) -> float:
    """Java double division (``x/0`` is ±Infinity or NaN, never an exception)."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _pct(x: float) -> str:
    return f"{x * 100:.2f} %"


@dataclass
class LoadStats:
    """``TransferShedder.LoadStats``: the load statistics of one call, and the min/max walk.

    ``sorted_brokers`` holds *every* store entry by load ascending (stable over store order) —
    including brokers whose data is outdated, which are left out of ``n``, ``avg`` and ``std``.
    """

    sum: float = 0.0
    sq_sum: float = 0.0
    n: int = 0
    avg: float = 0.0
    std: float = 0.0
    sorted_brokers: list = field(default_factory=list)
    min_idx: int = 0
    max_idx: int = 0
    shed_brokers: int = 0  # numberOfBrokerSheddingPerCycle
    max_shed_brokers: int = 0  # maxNumberOfBrokerSheddingPerCycle
    # what the trigger compared (for the pages; not part of Pulsar's LoadStats)
    hit_count: int = 0  # unloadConditionHitCount compared with the threshold (before a Success resets it)
    hit_threshold: int = 0  # loadBalancerSheddingConditionHitCountThreshold
    std_over_target: bool = False
    min_underloaded: bool = False
    max_overloaded: bool = False
    min_broker: str | None = None
    max_broker: str | None = None

    def update(self, total: float, sq_sum: float, n: int) -> None:
        self.sum, self.sq_sum, self.n = total, sq_sum, n
        if n == 0:
            self.avg = self.std = 0.0
        else:
            self.avg = total / n
            self.std = _jsqrt(sq_sum / n - self.avg * self.avg)

    def offload(self, max_load: float, min_load: float, offload: float) -> None:
        """The std estimate after moving ``offload`` of load from the max to the min broker (avg unchanged)."""
        self.sq_sum -= max_load * max_load + min_load * min_load
        maxd = max(0.0, max_load - offload)
        mind = min_load + offload
        self.sq_sum += maxd * maxd + mind * mind
        self.std = math.sqrt(abs(self.sq_sum / self.n - self.avg * self.avg))
        self.shed_brokers += 1
        self.min_idx += 1

    def has_transferable_brokers(self) -> bool:
        return self.shed_brokers < self.max_shed_brokers and self.min_idx < self.max_idx

    def peek_min(self) -> str:
        return self.sorted_brokers[self.min_idx]

    def peek_max(self) -> str:
        return self.sorted_brokers[self.max_idx]

    def poll_max(self) -> str:
        b = self.sorted_brokers[self.max_idx]
        self.max_idx -= 1
        return b


@dataclass
class _Round:
    """One call's inputs and working values, passed between the phases of
    :meth:`TransferShedder.find_bundles_for_unloading` (not Pulsar's: its fields are locals there)."""

    data: ExtensibleLoadData
    conf: LoadBalancerConfig
    store: dict
    res: SheddingResult
    stats: LoadStats
    verdicts: dict
    order: list
    load: dict
    now: int
    filters: FilterContext
    owners: Mapping[str, str] | None
    recently_unloaded: Mapping[str, int]
    recently_unloaded_brokers: dict
    avg: float = 0.0
    std0: float = 0.0
    target: float = 0.0
    under_mult: float = 0.0
    over_line: float = 0.0
    decisions: list = field(default_factory=list)
    selections: list = field(default_factory=list)
    moves: list = field(default_factory=list)  # (max broker, min broker, reason, max load %, min load %, B/s)
    empty_data: int = 0
    few_bundles: int = 0

    def is_under(self, b: str) -> bool:
        d = self.store.get(b)
        if d is None:
            return False
        if d.weighted_max_ema < self.avg * self.under_mult:
            return True
        if not self.conf.has("transfer_underload_by_throughput"):
            return d.msg_throughput_ema < 1  # releases before 3.0.5: no traffic at all
        mx = self.store.get(self.stats.peek_max())
        if mx is None:
            return False
        return d.msg_throughput_ema < mx.msg_throughput_ema * self.under_mult

    def is_over(self, b: str) -> bool:
        d = self.store.get(b)
        if d is None:
            return False
        x = d.weighted_max_ema
        return x > self.over_line and x > self.avg + self.target

    def details(self, hit_count: int) -> "TransferShedderDetails":
        return TransferShedderDetails(self.avg * 100, self.std0 * 100, self.stats.std * 100, self.target * 100,
                                      hit_count, tuple(self.moves))


@dataclass
class _Pick:
    """What one max broker gives in :meth:`TransferShedder._select_bundles`."""

    max_b: str
    min_b: str
    reason: str
    max_thr: float
    min_thr: float
    offload_thr: float
    remaining: int
    marked: float = 0.0
    gained: float = 0.0
    n_moved: int = 0
    n_swapped: int = 0
    skipped: list = field(default_factory=list)
    stopped: str = ""


@dataclass(frozen=True)
class TransferShedderDetails(Details):
    """Why TransferShedder decided: the load average and std (%) before and after, the target std, the
    hit count it compared, and each broker pair that moved load as ``(max broker, min broker, reason,
    max load %, min load %, bytes/s to offload)``. The per-bundle decisions are the result's
    ``decisions``."""

    kind = "decisions"
    average: float = 0.0
    std: float = 0.0
    std_after: float = 0.0
    target: float = 0.0
    hit_count: int = 0
    moves: tuple = ()

    def event_fields(self, broker, selections=()):
        for max_b, min_b, reason, max_load, min_load, amount in self.moves:
            if max_b == broker:
                return {"partner": min_b, "trigger": reason, "score": max_load, "partner_score": min_load,
                        "gap": max_load - min_load, "amount": amount}
        return {}


@dataclass(frozen=True)
class TransferShedderState(StateValue):
    """TransferShedder's memory: ``unloadConditionHitCount``, the consecutive cycles the shedding
    condition held. ``to_json()`` is the snapshot's ``shedlabStrategyState`` entry."""

    unload_condition_hit_count: int = 0

    def to_json(self) -> dict:
        return {"unloadConditionHitCount": self.unload_condition_hit_count}

    @classmethod
    def from_json(cls, data) -> "TransferShedderState":
        return cls(int((data or {}).get("unloadConditionHitCount", 0)))


class TransferShedder(Stateful):
    """Pulsar's ``TransferShedder`` with its one piece of memory, ``unloadConditionHitCount``.

    Parameters
    ----------
    unload_condition_hit_count : int
        Consecutive cycles the shedding condition held (Pulsar starts at 0).

    Notes
    -----
    ``pulsar-load-balancing.md`` §8.3, followed step by step. Config keys:
    ``loadBalancerBrokerLoadTargetStd`` (0.25), ``loadBalancerSheddingConditionHitCountThreshold`` (3;
    shedding needs ``hit > threshold``), ``loadBalancerTransferEnabled`` (destination = the min broker,
    swaps allowed), ``loadBalancerMaxNumberOfBrokerSheddingPerCycle`` (3),
    ``loadBalancerBrokerLoadDataTTLInSeconds`` (1800: older data → OutDatedData),
    ``loadBalanceSheddingDelayInSeconds`` (180: CoolDown of the whole cycle while a recently unloaded
    broker's data is not that much newer than its unload), ``loadBalancerBrokerOverloadedThresholdPercentage``
    (85, ``isOverLoaded``), ``loadBalancerSheddingExcludedNamespaces``,
    ``loadBalancerSheddingBundlesWithPoliciesEnabled`` and ``loadBalancerDebugModeEnabled``.

    Reproduced quirks: the std is the population std; the sorted broker list includes outdated
    brokers (they can be min or max) while ``n`` does not; the byte target uses the *instantaneous*
    throughput but the std the EMA load; one min-broker iterator is shared by all bundles of a max
    broker; swap candidates are not checked against ownership or recently unloaded bundles; swapped-in
    traffic only counts (``trafficMarkedToGain``) when ``loadBalancerDebugModeEnabled`` is true.

    Departures: ``now`` is the caller's (the snapshot's) time, not the wall clock; the decisions are
    returned in the order they were made (Pulsar collects them in a ``HashSet`` whose order depends
    on identity hash codes); an exception inside Pulsar's loop (label Failure, reason Unknown) has no
    counterpart here.
    """

    name = "TransferShedder"
    pulsar_class = TRANSFER_SHEDDER_FQN
    #: ``loadManagerClassName`` a broker must run for this strategy to exist
    load_manager_class_name = EXTENSIBLE_LOAD_MANAGER
    config_keys = ("loadBalancerBrokerLoadTargetStd", "loadBalancerSheddingConditionHitCountThreshold",
                   "loadBalancerTransferEnabled", "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
                   "loadBalanceSheddingDelayInSeconds", "loadBalancerBrokerLoadDataTTLInSeconds",
                   "loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerSheddingBundlesWithPoliciesEnabled",
                   "loadBalancerDebugModeEnabled", "loadBalancerSheddingExcludedNamespaces",
                   "loadBalancerCPUResourceWeight", "loadBalancerMemoryResourceWeight",
                   "loadBalancerDirectMemoryResourceWeight", "loadBalancerBandwidthInResourceWeight",
                   "loadBalancerBandwidthOutResourceWeight", "loadBalancerHistoryResourcePercentage")

    state_type = TransferShedderState

    def __init__(self, unload_condition_hit_count: int = 0):
        self.unload_condition_hit_count = int(unload_condition_hit_count)
        #: load statistics of the last call (Pulsar's ``stats`` field)
        self.stats = LoadStats()

    # ------------------------------------------------------------------ state
    @property
    def unload_condition_hit_count(self) -> int:
        """Pulsar's ``unloadConditionHitCount``."""
        return self._hit_count

    @unload_condition_hit_count.setter
    def unload_condition_hit_count(self, n: int) -> None:
        self._touch()
        self._hit_count = n

    def state(self) -> dict:
        return self.state_value().to_json()

    def _memory(self):
        return TransferShedderState(self._hit_count)

    def _set_memory(self, state) -> None:
        self.unload_condition_hit_count = state.unload_condition_hit_count

    def reset(self) -> None:
        super().reset()
        self.stats = LoadStats()

    def on_active_brokers_change(self, active_brokers) -> None:
        pass

    def run(self, data: ExtensibleLoadData, conf: LoadBalancerConfig, recently_unloaded: Mapping[str, int],
            state=None, **kw):
        """``(result, new_state)``: one :meth:`find_bundles_for_unloading` from ``state`` (a
        :class:`TransferShedderState`; ``None`` = empty); ``kw`` as there."""
        self._enter(state)
        res = self.find_bundles_for_unloading(data, conf, recently_unloaded, **kw)
        return res, self.state_value()

    def copy(self) -> "TransferShedder":
        import copy

        return copy.deepcopy(self)

    # ------------------------------------------------------------------ the algorithm
    def find_bundles_for_unloading(self, data: ExtensibleLoadData, conf: LoadBalancerConfig,
                                   recently_unloaded: Mapping[str, int],
                                   recently_unloaded_brokers: dict | None = None, *, now_ms: int | None = None,
                                   filters: FilterContext | None = None,
                                   owners: Mapping[str, str] | None = None) -> SheddingResult:
        """``findBundlesForUnloading(context, recentlyUnloadedBundles, recentlyUnloadedBrokers)``.

        Four phases, as ``pulsar-load-balancing.md`` §8.3 lays them out: :meth:`_start` (the call's
        inputs), :meth:`_load_statistics` (average and std, TTL and cool-down), :meth:`_trigger` (the
        shedding condition and the hit count) and :meth:`_shed` (the min/max walk, one
        :meth:`_unload_max_broker` per pair, and the result). A phase that ends the call returns the
        Skip result; otherwise ``None``.

        Parameters
        ----------
        data : ExtensibleLoadData
            The load-data stores (``brokerLoadData``, top-K bundles) and the broker registry.
        recently_unloaded : mapping
            bundle → unload time (ms) of the scheduler's ``recentlyUnloadedBundles``.
        recently_unloaded_brokers : dict, optional
            broker → last unload time (ms); **modified** like Pulsar's (a broker whose cool-down is
            over is removed).
        now_ms : int, optional
            The time of the call (default: the snapshot's ``now``); used for the TTL.
        filters : FilterContext, optional
            Filter pipeline and policies for ``transferable`` (default: no policies).
        owners : mapping, optional
            bundle → owner from the service-unit channel (default: ``data.owners()``).

        Returns
        -------
        SheddingResult
            ``decisions`` holds Pulsar's ``UnloadDecision`` set: Success decisions (one per unload,
            reason Overloaded or Underloaded), or one Skip decision with the reason; ``label`` and
            ``reason_code`` say the same for the whole call, ``details`` is a
            :class:`TransferShedderDetails`.
        """
        self._touch()
        r = self._start(data, conf, recently_unloaded, recently_unloaded_brokers, now_ms, filters, owners)
        return self._load_statistics(r) or self._trigger(r) or self._shed(r)

    # ------------------------------------------------------------------ phases
    def _start(self, data, conf, recently_unloaded, recently_unloaded_brokers, now_ms, filters, owners) -> "_Round":
        """The call's inputs, the result with a verdict per broker, and ``LoadStats`` with the sorted brokers."""
        if not isinstance(data, ExtensibleLoadData):
            raise UsageError("TransferShedder runs in the Extensible Load Manager: give it an ExtensibleLoadData "
                             "(engine.extensible.derive_extensible) or use ExtensibleLoadManager / "
                             "--strategy TransferShedder")
        conf = extensible_config(conf)
        store = data.broker_load_data
        res = SheddingResult(self.name, SKIP, "", score_unit="%")
        stats = LoadStats(max_shed_brokers=conf.loadBalancerMaxNumberOfBrokerSheddingPerCycle,
                          hit_count=self.unload_condition_hit_count,
                          hit_threshold=conf.loadBalancerSheddingConditionHitCountThreshold)
        self.stats = stats
        order = java_map_order(store, concurrent=True)
        load = {b: store[b].weighted_max_ema for b in order}
        res.scores = {b: load[b] * 100 for b in order}
        verdicts = {b: BrokerVerdict(b, load[b] * 100) for b in order}
        res.verdicts = [verdicts[b] for b in order]
        # stats.setLoadDataStore: every store entry, by load ascending, stable over store order
        stats.sorted_brokers = sorted(order, key=lambda b: load[b])
        stats.max_idx = len(stats.sorted_brokers) - 1
        return _Round(
            data=data, conf=conf, store=store, res=res, stats=stats, verdicts=verdicts, order=order, load=load,
            now=data.now if now_ms is None else int(now_ms), filters=filters or FilterContext(data, conf),
            owners=data.owners() if owners is None else owners, recently_unloaded=recently_unloaded,
            recently_unloaded_brokers={} if recently_unloaded_brokers is None else recently_unloaded_brokers)

    def _skip(self, r: "_Round", reason: str, detail: str) -> SheddingResult:
        res = r.res
        res.label, res.reason, res.reason_code = SKIP, f"{reason}: {detail}", reason
        res.decisions = [UnloadDecision(SKIP, reason, detail=detail)]
        res.details = r.details(self.unload_condition_hit_count)
        res.state = self.state()
        return res

    def _load_statistics(self, r: "_Round") -> SheddingResult | None:
        """Average and std over the brokers with fresh load data; Skip on CoolDown, NoBrokers,
        OutDatedData or NoLoadData."""
        conf, store = r.conf, r.store
        ttl = conf.loadBalancerBrokerLoadDataTTLInSeconds * 1000
        delay = conf.loadBalanceSheddingDelayInSeconds * 1000
        reason = None
        total = sq = 0.0
        n = 0
        for b in r.order:
            d = store[b]
            if r.now - d.updated_at > ttl:
                reason = OUTDATED_DATA
                v = r.verdicts[b]
                v.status = "skipped"
                v.reason = (f"load data updated {(r.now - d.updated_at) / 1000:,.0f} s ago > "
                            f"loadBalancerBrokerLoadDataTTLInSeconds {conf.loadBalancerBrokerLoadDataTTLInSeconds}: "
                            "left out of the average and std")
                continue
            unloaded = r.recently_unloaded_brokers
            if b in unloaded:
                elapsed = d.updated_at - unloaded[b]
                if elapsed < delay:
                    return self._skip(r, COOL_DOWN, f"{b} was unloaded at {unloaded[b]} and its load data "
                                                    f"is only {elapsed / 1000:,.0f} s newer (< "
                                                    f"loadBalanceSheddingDelayInSeconds "
                                                    f"{conf.loadBalanceSheddingDelayInSeconds}): no shedding this cycle")
                del unloaded[b]
            x = r.load[b]
            total += x
            sq += x * x
            n += 1
        if n == 0:
            if reason is None:
                return self._skip(r, NO_BROKERS, "no broker load data")
            return self._skip(r, reason, "every broker's load data is older than loadBalancerBrokerLoadDataTTLInSeconds "
                                         f"{conf.loadBalancerBrokerLoadDataTTLInSeconds}")
        missing = [b for b in r.data.available_brokers if b not in store]
        if missing:
            return self._skip(r, NO_LOAD_DATA, f"no load data from available broker(s) {', '.join(missing)}")
        r.stats.update(total, sq, n)
        r.avg, r.std0 = r.stats.avg, r.stats.std
        return None

    def _trigger(self, r: "_Round") -> SheddingResult | None:
        """The shedding condition (std over target, min underloaded, max overloaded) and the hit count;
        Skip/HitCount until the condition held more than the threshold."""
        conf, stats, res = r.conf, r.stats, r.res
        r.target = conf.loadBalancerBrokerLoadTargetStd
        r.under_mult = min(0.5, max(0.0, r.target / 2.0))
        r.over_line = conf.loadBalancerBrokerOverloadedThresholdPercentage / 100.0
        avg, std0, target = r.avg, r.std0, r.target
        res.lines = {"average": avg * 100, "std": std0 * 100, "target std": target * 100,
                     "average + target std": (avg + target) * 100, "overload threshold": r.over_line * 100,
                     "underload line": avg * r.under_mult * 100}
        c_std, c_under, c_over = std0 > target, r.is_under(stats.peek_min()), r.is_over(stats.peek_max())
        why = []
        if c_std:
            why.append(f"std {_pct(std0)} > target {_pct(target)}")
        if c_under:
            why.append(f"min broker {stats.peek_min()} is underloaded")
        if c_over:
            why.append(f"max broker {stats.peek_max()} is overloaded (> {_pct(r.over_line)} and > average + target "
                       f"{_pct(avg + target)})")
        if why:
            self.unload_condition_hit_count += 1
        else:
            self.unload_condition_hit_count = 0
        stats.hit_count = self.unload_condition_hit_count
        stats.std_over_target, stats.min_underloaded, stats.max_overloaded = c_std, c_under, c_over
        stats.min_broker, stats.max_broker = stats.peek_min(), stats.peek_max()
        hit_th = conf.loadBalancerSheddingConditionHitCountThreshold
        res.notes.append(f"load average {_pct(avg)}, std {_pct(std0)} over {stats.n} broker(s); target std "
                         f"{_pct(target)}; "
                         + ("; ".join(why) if why else "balanced (std within target, min not underloaded, max not "
                                                        "overloaded)")
                         + f"; hit count {self.unload_condition_hit_count}")
        if self.unload_condition_hit_count <= hit_th:
            if why:
                detail = (f"shedding condition hit {self.unload_condition_hit_count} time(s) <= "
                          f"loadBalancerSheddingConditionHitCountThreshold {hit_th} ({'; '.join(why)})")
            else:
                detail = (f"balanced: std {_pct(std0)} <= target {_pct(target)}, min broker not underloaded, max "
                          f"broker not overloaded; hit count reset to 0")
            return self._skip(r, HIT_COUNT, detail)
        return None

    def _shed(self, r: "_Round") -> SheddingResult:
        """The main loop: while brokers may shed and a condition holds, the max broker gives to the min
        broker (:meth:`_unload_max_broker`); then the result."""
        stats, res, target = r.stats, r.res, r.target
        while stats.has_transferable_brokers():
            if stats.std > target:
                reason = OVERLOADED
                because = f"std {_pct(stats.std)} > target {_pct(target)}"
            elif r.is_under(stats.peek_min()):
                reason = UNDERLOADED
                because = f"{stats.peek_min()} is underloaded although std {_pct(stats.std)} <= target"
            elif r.is_over(stats.peek_max()):
                reason = OVERLOADED
                because = f"{stats.peek_max()} is overloaded although std {_pct(stats.std)} <= target"
            else:
                res.notes.append(f"the cluster now meets the target: std {_pct(stats.std)} <= {_pct(target)}, "
                                 "min not underloaded, max not overloaded")
                break
            self._unload_max_broker(r, reason, because)
        res.lines["std after"] = stats.std * 100
        decisions = r.decisions
        if not decisions:
            if r.empty_data > 0:
                return self._skip(r, NO_LOAD_DATA, f"{r.empty_data} max broker(s) without top bundles load data")
            if r.few_bundles > 0:
                return self._skip(r, NO_BUNDLES, f"{r.few_bundles} max broker(s) had no bundle that could be "
                                                 "unloaded (sole bundle, or every bundle too big / excluded / "
                                                 "recently unloaded)")
            return self._skip(r, HIT_COUNT, "no broker pair to shed from")
        hits = self.unload_condition_hit_count
        self.unload_condition_hit_count = 0
        res.label = SUCCESS
        # UnloadDecision.succeed(overloaded, underloaded): by the brokers shed for each reason
        n_over = sum(m[2] == OVERLOADED for m in r.moves)
        res.reason_code = OVERLOADED if n_over > len(r.moves) - n_over else UNDERLOADED
        res.decisions = decisions
        res.selected = r.selections
        srcs = {d.broker for d in decisions if not d.swap}
        res.reason = (f"{len(decisions)} unload(s) from {len(srcs)} broker(s)"
                      + (f" incl. {sum(d.swap for d in decisions)} swap(s)" if any(d.swap for d in decisions) else "")
                      + f"; std {_pct(r.std0)} -> {_pct(stats.std)} (target {_pct(target)})")
        res.details = r.details(hits)
        res.state = self.state()
        return res

    def _unload_max_broker(self, r: "_Round", reason: str, because: str) -> None:
        """One iteration of the main loop: the max broker's bundles to the min broker (§8.3), the std
        updated when something moved."""
        stats, store, res = r.stats, r.store, r.res
        max_b = stats.poll_max()
        min_b = stats.peek_min()
        if max_b not in store or min_b not in store:  # cannot happen with one store; kept from Pulsar
            r.empty_data += 1
            return
        max_d, min_d = store[max_b], store[min_b]
        max_load, min_load = max_d.weighted_max_ema, min_d.weighted_max_ema
        offload = (max_load - min_load) / 2
        max_thr = max_d.msg_throughput_in + max_d.msg_throughput_out
        min_thr = min_d.msg_throughput_in + min_d.msg_throughput_out
        offload_thr = _jdiv(max_thr * offload, max_load)
        vmax = r.verdicts[max_b]
        head = (f"{max_b} ({_pct(max_load)}) -> {min_b} ({_pct(min_load)}): {reason} ({because}); offload "
                f"{_pct(offload)} = {fmt_bytes(offload_thr)} of {fmt_bytes(max_thr)}")
        max_top = r.data.top_bundles.get(max_b)
        if not max_top:
            r.empty_data += 1
            vmax.status, vmax.reason = "skipped", "NoLoadData: its top bundles load data is empty"
            res.notes.append(head + " — no top bundles load data")
            return
        if len(max_top) == 1:
            r.few_bundles += 1
            vmax.status = "skipped"
            vmax.reason = f"NoBundles: its sole bundle {max_top[0].bundle_name} is overloading the broker"
            res.notes.append(head + f" — sole bundle {max_top[0].bundle_name}: not unloaded")
            return
        pick = _Pick(max_b, min_b, reason, max_thr, min_thr, offload_thr, remaining=len(max_top))
        self._select_bundles(r, pick, max_top, r.data.top_bundles.get(min_b))
        tail = []
        if pick.skipped:
            tail.append("skipped " + ", ".join(pick.skipped))
        if pick.stopped:
            tail.append("stopped: " + pick.stopped)
        if pick.marked > 0:
            adjusted = _jdiv((pick.marked - pick.gained) * max_load, max_thr)
            before = stats.std
            stats.offload(max_load, min_load, adjusted)
            vmax.status, vmax.need, vmax.need_unit = "over", offload_thr, "B/s"
            to = min_b if r.conf.loadBalancerTransferEnabled else "placement"
            vmax.reason = (f"{reason}: {pick.n_moved} bundle(s), {fmt_bytes(pick.marked)} to {to}"
                           + (f", {pick.n_swapped} swapped back" if pick.n_swapped else ""))
            vmin = r.verdicts[min_b]
            vmin.status = "under"
            vmin.reason = f"receives from {max_b}"
            r.moves.append((max_b, min_b, reason, max_load * 100, min_load * 100, offload_thr))
            res.notes.append(head + f"; moved {pick.n_moved} bundle(s) {fmt_bytes(pick.marked)}"
                             + (f", swapped {pick.n_swapped} ({fmt_bytes(pick.gained)} counted)"
                                if pick.n_swapped else "")
                             + f"; load moved {_pct(adjusted)}; std {_pct(before)} -> {_pct(stats.std)}"
                             + ("; " + "; ".join(tail) if tail else ""))
        else:
            r.few_bundles += 1
            vmax.status = "skipped"
            vmax.reason = "NoBundles: no bundle of its top-K report could be unloaded"
            res.notes.append(head + " — nothing could be unloaded" + ("; " + "; ".join(tail) if tail else ""))

    def _select_bundles(self, r: "_Round", pick: "_Pick", max_top, min_top) -> None:
        """The max broker's top bundles, in order, until the offload target is met: each one skipped
        (ownership, excluded namespace, recently unloaded, not transferable, no traffic), taken, or —
        when too big — taken with swaps from the min broker (:meth:`_find_swaps`), else the end."""
        conf, max_b, min_b = r.conf, pick.max_b, pick.min_b
        transfer, debug = conf.loadBalancerTransferEnabled, conf.loadBalancerDebugModeEnabled
        swap_iter = iter(min_top) if min_top is not None else None  # shared by all bundles of max_b
        for e in max_top:
            x = e.bundle_name
            if r.owners is not None and r.owners.get(x) != max_b:
                pick.skipped.append(f"{x} (owned by {r.owners.get(x) or 'nobody'})")
                continue
            ns = bundle_namespace(x)
            if ns in conf.excluded_namespaces:
                pick.skipped.append(f"{x} (loadBalancerSheddingExcludedNamespaces)")
                continue
            if x in r.recently_unloaded:
                pick.skipped.append(f"{x} (recently unloaded at {r.recently_unloaded[x]})")
                continue
            if not transferable(r.filters, x, max_b, min_b):
                pick.skipped.append(f"{x} (not transferable: policies or filters)")
                continue
            if pick.remaining <= 1:
                pick.stopped = "one top bundle left: kept"
                break
            t = e.throughput
            if t == 0 and r.conf.has("transfer_skip_zero_throughput"):
                pick.skipped.append(f"{x} (no throughput)")
                continue
            swaps, swap_thr = [], 0.0
            if pick.marked - pick.gained + t > pick.offload_thr:
                swapped = False
                if transfer and swap_iter is not None:
                    swapped, swaps, swap_thr = self._find_swaps(r, pick, t, swap_iter)
                if not swapped:
                    pick.stopped = (f"{x} ({fmt_bytes(t)}) would exceed the target "
                                    f"({fmt_bytes(pick.marked - pick.gained + t)} > {fmt_bytes(pick.offload_thr)})"
                                    + (" and no swap balances it" if transfer else ""))
                    break
                for y in swaps:
                    detail = (f"swap: {y.bundle_name} ({fmt_bytes(y.throughput)}) {min_b} -> {max_b} to make room "
                              f"for {x} ({fmt_bytes(t)})")
                    r.decisions.append(UnloadDecision(SUCCESS, pick.reason, min_b, y.bundle_name, max_b, detail, True))
                    r.selections.append(Selection(min_b, y.bundle_name, y.throughput, "B/s", y.msg_rate,
                                                  y.throughput, max_b, f"{pick.reason}: {detail}"))
                    pick.n_swapped += 1
                if debug:  # Pulsar counts the swapped-in traffic only inside its debug logging block
                    pick.gained += swap_thr
            dst = min_b if transfer else None
            detail = (f"{x} ({fmt_bytes(t)}) {max_b} -> {dst or 'placement'}; marked "
                      f"{fmt_bytes(pick.marked + t)} of {fmt_bytes(pick.offload_thr)}")
            r.decisions.append(UnloadDecision(SUCCESS, pick.reason, max_b, x, dst, detail))
            r.selections.append(Selection(max_b, x, t, "B/s", e.msg_rate, t, dst, f"{pick.reason}: {detail}"))
            pick.marked += t
            pick.remaining -= 1
            pick.n_moved += 1

    @staticmethod
    def _find_swaps(r: "_Round", pick: "_Pick", t: float, swap_iter) -> tuple:
        """Bundles of the min broker to send back so that a too-big bundle ``t`` of the max broker can
        move: ``(balanced, swaps, their throughput)``; ``swap_iter`` goes on where it stopped."""
        new_max = pick.max_thr - pick.marked + pick.gained - t
        new_min = pick.min_thr + pick.marked - pick.gained + t
        swaps, swap_thr = [], 0.0
        for y in swap_iter:
            if not transferable(r.filters, y.bundle_name, pick.min_b, pick.max_b):
                continue
            ty = y.throughput
            if ty == 0 and r.conf.has("transfer_skip_zero_throughput"):
                continue
            max_tmp, min_tmp = new_max + ty, new_min - ty
            if max_tmp < pick.max_thr and min_tmp < pick.max_thr:
                swaps.append(y)
                new_max, new_min = max_tmp, min_tmp
                swap_thr += ty
                if new_min <= new_max and new_max < pick.max_thr * 0.75:
                    return True, swaps, swap_thr
        return False, swaps, swap_thr


SPEC = StrategySpec(
    name="TransferShedder", fqn=TRANSFER_SHEDDER_FQN, roles=frozenset({"shedding"}), load_manager=EXTENSIBLE,
    config_keys=TransferShedder.config_keys, requires_placement="ExtensibleLeastResourceUsageWithWeight",
    sweep_grid=(("loadBalancerBrokerLoadTargetStd", (0.1, 0.15, 0.25, 0.35, 0.5)),
                ("loadBalancerSheddingConditionHitCountThreshold", (1, 2, 3, 4, 5, 6))),
    state_type=TransferShedderState, factory=TransferShedder, explains=frozenset({"decisions", "std"}),
    title="TransferShedder (Extensible Load Manager): transfer load from the max to the min broker "
          "until the load std is below target")
