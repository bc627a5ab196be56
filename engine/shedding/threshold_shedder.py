"""ThresholdShedder: shed brokers whose *historical* weighted usage is above average + threshold.

Notes
-----
Pulsar file ``impl/ThresholdShedder.java`` (``pulsar-load-balancing.md`` §5.2); the default shedder
before Pulsar 5.0. Config keys: ``loadBalancerBrokerThresholdShedderPercentage`` (10),
``loadBalancerHistoryResourcePercentage`` (0.9), ``loadBalancerBundleUnloadMinThroughputThreshold``
(10 MB), ``lowerBoundarySheddingEnabled`` (false) and the four resource weights.

* State: ``history[broker]``, exponential smoothing ``h·hist + (1−h)·usage``, starting at the first
  observed usage (not 0); every call updates it once for every broker (twice when the
  lower-boundary path runs — Pulsar recomputes the average there).
* A broker sheds when ``hist >= avg + threshold``; it must move ``throughput × (hist − avg −
  threshold + 0.05)`` bytes/s (5 % below the threshold line, applied to *byte* throughput), and
  nothing if that is below the minimum throughput threshold.
* Lower boundary: if nothing was selected, some broker is below ``avg − threshold`` and a broker with
  more than one bundle is above ``avg − threshold``, the hottest such broker moves
  ``throughput × threshold × 0.5``.

Result codes (Pulsar's modular shedders have none; ours, in ``UnloadDecision``'s vocabulary):
Success/Overloaded (brokers above the line), Success/Underloaded (the lower-boundary path),
Skip/Balanced (nobody above the line, or what it would move is below the minimum throughput),
Skip/NoBundles (the brokers above it have one bundle, none, or only recently unloaded ones),
Skip/NoLoadData (the average usage is 0). ``details`` is a :class:`ThresholdShedderDetails`.

Examples
--------
A 3-broker snapshot, one broker at 92 % while the average is 51 %:

>>> from engine.config import LoadBalancerConfig
>>> from engine.synth import make_snapshot
>>> from engine.view import LoadView
>>> def broker(cpu):
...     return dict(cpu=cpu, bundles={f"t/ns/{cpu}-{k}": dict(rate=100, throughput=50 * 2**20) for k in range(3)})
>>> view = LoadView.from_load_data(make_snapshot({"b1:8080": broker(92), "b2:8080": broker(40),
...                                               "b3:8080": broker(20)}))
>>> res, state = ThresholdShedder().run(view, LoadBalancerConfig(), {}, ThresholdShedderState())
>>> print(res.label, res.reason_code, res.reason, [(s.broker, s.bundle) for s in res.selected])
Success Overloaded 2 bundle(s) from 1 broker(s) [('b1:8080', 't/ns/92-2'), ('b1:8080', 't/ns/92-1')]
>>> state.to_json()["history"]["b1:8080"]
0.92
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import numpy as np

from ..results import (BALANCED, NO_BUNDLES, NO_LOAD_DATA, OVERLOADED, UNDERLOADED, BrokerVerdict, Details,
                       Selection, SheddingResult, fmt_bytes)
from ..strategies.spec import MODULAR, StrategySpec
from ..strategies.state import StateValue, pairs, pairs_from_json, pairs_json
from ..javacompat import seq_sum
from .base import SheddingStrategy, finish_result, select_largest_first

__all__ = ["SPEC", "ThresholdShedderDetails", "ThresholdShedderState", "ThresholdShedder"]

MARGIN = 0.05
LOWER_BOUNDARY_MARGIN = 0.5
MB = 1024 * 1024


@dataclass(frozen=True)
class ThresholdShedderState(StateValue):
    """ThresholdShedder's memory: ``brokerAvgResourceUsage``, each broker's history-smoothed usage
    (fraction), as ``(broker, usage)`` pairs in the map's insertion order."""

    history: tuple = ()

    def to_json(self) -> dict:
        return {"history": pairs_json(self.history)}

    @classmethod
    def from_json(cls, data) -> "ThresholdShedderState":
        return cls(pairs_from_json((data or {}).get("history")))


@dataclass(frozen=True)
class ThresholdShedderDetails(Details):
    """Why ThresholdShedder decided: the average and threshold (%), the score history (each broker's
    history-smoothed usage %, ``(broker, %)``), the brokers at or above ``average + threshold`` as
    ``(broker, usage %, bytes/s to move)``, and the lower-boundary move ``(broker, usage %, bytes/s)``
    when that path unloaded."""

    kind = "score_history"
    average: float = 0.0
    threshold: float = 0.0
    history: tuple = ()
    over: tuple = ()
    lower_boundary: tuple | None = None

    def event_fields(self, broker, selections=()):
        if self.lower_boundary is not None and self.lower_boundary[0] == broker:
            _, score, need = self.lower_boundary
            return {"trigger": "lower boundary", "score": score, "gap": score - (self.average - self.threshold),
                    "amount": need}
        for b, score, need in self.over:
            if b == broker:
                return {"trigger": "threshold", "score": score, "gap": score - (self.average + self.threshold),
                        "amount": need}
        return {}


def _over_text(u, avg, th, need, frac, t) -> str:
    """The reason of a broker at or above ``average + threshold``."""
    return (f"{u * 100:.2f} % >= {avg * 100:.2f} % + {th * 100:g} %: offload at least "
            f"{fmt_bytes(need)} ({frac:.2%} of {fmt_bytes(t)}), left throughput {fmt_bytes(t - need)}")


class ThresholdShedder(SheddingStrategy):
    """Shed by history-smoothed usage against the cluster average.

    Parameters
    ----------
    history : dict, optional
        Initial ``broker → historical usage`` (fraction), e.g. to replay a leader's memory.
    """

    name = "ThresholdShedder"
    state_type = ThresholdShedderState
    config_keys = ("loadBalancerBrokerThresholdShedderPercentage", "loadBalancerHistoryResourcePercentage",
                   "loadBalancerBundleUnloadMinThroughputThreshold", "lowerBoundarySheddingEnabled",
                   "loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
                   "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")

    def __init__(self, history: dict | None = None):
        self.history: dict[str, float] = dict(history or {})

    # ------------------------------------------------------------------ state
    def _memory(self):
        return ThresholdShedderState(pairs(self.history))

    def _set_memory(self, state):
        self.history = dict(state.history)

    def on_active_brokers_change(self, active_brokers):
        active = set(active_brokers)
        gone = [b for b in self.history if b not in active]
        if gone:
            self._touch()
            for b in gone:
                del self.history[b]

    def _avg_usage(self, view, conf) -> tuple[float, np.ndarray]:
        h = conf.loadBalancerHistoryResourcePercentage
        cur = view.usage_with_weight(conf.weights)
        old = np.array(list(map(self.history.get, view.brokers, repeat(np.nan))), dtype=float)
        new = np.where(np.isnan(old), cur, old * h + (1 - h) * cur)
        self.history.update(zip(view.brokers, new.tolist()))
        self._last_usage = new
        n = view.nb
        return (seq_sum(new.tolist()) / n if n > 0 else 0.0), new

    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        self._touch()
        th = conf.loadBalancerBrokerThresholdShedderPercentage / 100.0
        min_thr = conf.loadBalancerBundleUnloadMinThroughputThreshold * MB
        avg, hist = self._avg_usage(view, conf)
        recent = view.recent_mask(recently_unloaded)
        thr = view.msg_throughput
        real = view.usage_with_weight(conf.weights)
        res = SheddingResult(self.name, "Skip", "", score_unit="%",
                             lines={"average": avg * 100, "average + threshold": (avg + th) * 100,
                                    "average - threshold": (avg - th) * 100})
        scores = hist
        res.defer(scores=lambda: dict(zip(view.brokers, (scores * 100).tolist())))
        res.notes.append("scores are history-smoothed usage; real usage now: " + ", ".join(
            f"{b} {float(real[j]) * 100:.1f} %" for j, b in enumerate(view.brokers[:20]))
            + (" ..." if view.nb > 20 else ""))
        if avg == 0:
            res.reason, res.reason_code = "average max resource usage is 0", NO_LOAD_DATA
            res.details = ThresholdShedderDetails(0.0, th * 100, tuple(zip(view.brokers, (hist * 100).tolist())))
            res.defer(state=self.state_value().to_json)
            return res
        needs, few = [], 0
        line = (avg + th) * 100
        usage = hist.tolist()
        judged = {}  # broker index -> its verdict, for the brokers at or above the line
        for j, u in enumerate(usage):
            if u < avg + th:
                continue
            b = view.brokers[j]
            frac = u - avg - th + MARGIN
            t_j = float(thr[j])
            need = t_j * frac
            v = judged[j] = BrokerVerdict(b, u * 100, line, "average + threshold", "over", need, "B/s",
                                          _over_text(u, avg, th, need, frac, t_j))
            if need < min_thr:
                v.status = "skipped"
                v.reason += f"; below loadBalancerBundleUnloadMinThroughputThreshold {fmt_bytes(min_thr)}"
                continue
            nb = int(view.num_bundles[j])
            needs.append((b, u * 100, need))
            if nb > 1:
                picked = select_largest_first(view, j, recent, need)
                few += not picked
                for k, t in picked:
                    res.selected.append(Selection(b, view.bundles[k], t, "B/s", float(view.short_rate[k]), t,
                                                  reason=v.reason))
            else:
                few += 1
                v.status = "skipped"
                v.reason += "; sole bundle, not unloaded" if nb == 1 else "; no bundles"

        def verdicts():  # the brokers below the line too, in broker order, when first read
            return [v if (v := judged.get(j)) is not None else
                    BrokerVerdict(b, u * 100, line, "average + threshold", "ok",
                                  reason=f"{u * 100:.2f} % < {avg * 100:.2f} % + {th * 100:g} %")
                    for j, (b, u) in enumerate(zip(view.brokers, usage))]

        res.defer(verdicts=verdicts)
        lower = None
        if not res.selected and conf.lowerBoundarySheddingEnabled:
            lower = self._lower_boundary(view, conf, recent, res)
            hist = self._last_usage
        res.details = ThresholdShedderDetails(avg * 100, th * 100, tuple(zip(view.brokers, (hist * 100).tolist())),
                                              tuple(needs), lower)
        finish_result(res, f"no broker at or above average + {th * 100:g} %",
                      success_code=UNDERLOADED if lower else OVERLOADED, skip_code=NO_BUNDLES if few else BALANCED)
        res.defer(state=self.state_value().to_json)  # the value run() returns; its JSON when read
        return res

    def _lower_boundary(self, view, conf, recent, res):
        """Pulsar's lower-boundary shedding; ``(broker, usage %, need)`` of the broker it unloads, or None."""
        th = conf.loadBalancerBrokerThresholdShedderPercentage / 100.0
        min_thr = conf.loadBalancerBundleUnloadMinThroughputThreshold * MB
        avg, hist = self._avg_usage(view, conf)  # Pulsar advances the history a second time here
        res.notes.append(f"lower-boundary shedding: history advanced again, average now {avg * 100:.2f} %")
        res.lines["average (lower boundary)"] = avg * 100
        max_b, max_u, below = None, avg - th, False
        for j in range(view.nb):
            u = float(hist[j])
            if u > max_u and view.num_bundles[j] > 1:
                max_u, max_b = u, j
            if u < avg - th:
                below = True
        if not below:
            res.notes.append(f"lower boundary: no broker below {(avg - th) * 100:.2f} %")
            return None
        if max_b is None:
            res.notes.append("lower boundary: no broker with more than one bundle above average - threshold")
            return None
        need = float(view.msg_throughput[max_b]) * th * LOWER_BOUNDARY_MARGIN
        if min_thr > need:
            res.notes.append(f"lower boundary: {view.brokers[max_b]} would move {fmt_bytes(need)}, below the minimum")
            return None
        b = view.brokers[max_b]
        why = (f"lower boundary: a broker is below {(avg - th) * 100:.2f} %; hottest {b} at {max_u * 100:.2f} % "
               f"moves {fmt_bytes(need)}")
        picked = select_largest_first(view, max_b, recent, need)
        for k, t in picked:
            res.selected.append(Selection(b, view.bundles[k], t, "B/s", float(view.short_rate[k]), t, reason=why))
        return (b, max_u * 100, need) if picked else None

SPEC = StrategySpec(
    name="ThresholdShedder", fqn="org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
    roles=frozenset({"shedding"}), load_manager=MODULAR, config_keys=ThresholdShedder.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerBrokerThresholdShedderPercentage", (5, 8, 10, 15, 20)),
                ("loadBalancerHistoryResourcePercentage", (0.5, 0.7, 0.8, 0.9, 0.95, 0.99))),
    state_type=ThresholdShedderState, factory=ThresholdShedder, explains=frozenset({"verdicts", "lines", "score_history"}),
    title="ThresholdShedder: unload from brokers above the cluster average usage plus a threshold (history-smoothed)")
