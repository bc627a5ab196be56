"""OverloadShedder: unload the biggest bundles of every broker at or above the overload line.

Notes
-----
Pulsar file ``impl/OverloadShedder.java`` (``pulsar-load-balancing.md`` §5.1). Config keys:
``loadBalancerBrokerOverloadedThresholdPercentage`` (85) and the four resource weights.

* A broker sheds when its weighted max usage ``u >= T`` (note ``>=``); it must move
  ``throughput × (u − T + 0.05)`` bytes/s.
* Bundles are taken by *short-term byte throughput* descending until that amount is covered, at
  least one — not "exactly one bundle by message rate" as Pulsar's Javadoc claims.
* A broker with a single bundle or none only gets a warning.
* Weighted usage as in Pulsar master (PIP-358); branch-3.x used the unweighted value.

Result codes (Pulsar's modular shedders have none; ours, in ``UnloadDecision``'s vocabulary):
Success/Overloaded when bundles were selected; Skip/Balanced when no broker reaches the line;
Skip/NoBundles when the brokers over it have one bundle, none, or only recently unloaded ones.
``details`` is an :class:`OverloadShedderDetails`.

Examples
--------
A 3-broker snapshot, one broker at 92 % against the line of 85 %:

>>> from engine.config import LoadBalancerConfig
>>> from engine.synth import make_snapshot
>>> from engine.view import LoadView
>>> def broker(cpu):
...     return dict(cpu=cpu, bundles={f"t/ns/{cpu}-{k}": dict(rate=100, throughput=10_000) for k in range(3)})
>>> view = LoadView.from_load_data(make_snapshot({"b1:8080": broker(92), "b2:8080": broker(40),
...                                               "b3:8080": broker(20)}))
>>> res, state = OverloadShedder().run(view, LoadBalancerConfig(), {}, None)
>>> print(res.label, res.reason_code, res.reason, [(s.broker, s.bundle) for s in res.selected])
Success Overloaded 1 bundle(s) from 1 broker(s) [('b1:8080', 't/ns/92-2')]
>>> res.details.event_fields("b1:8080")["trigger"]
'overload'
"""
from __future__ import annotations

from dataclasses import dataclass

from ..results import BALANCED, NO_BUNDLES, BrokerVerdict, Details, Selection, SheddingResult, fmt_bytes
from ..strategies.spec import EmptyState, MODULAR, StrategySpec
from .base import SheddingStrategy, finish_result, select_largest_first

__all__ = ["SPEC", "OverloadShedderDetails", "OverloadShedder"]

MARGIN = 0.05


@dataclass(frozen=True)
class OverloadShedderDetails(Details):
    """The overload line (%) and each broker at or above it: ``(broker, usage %, bytes/s to move)``."""

    kind = "verdicts"
    threshold: float = 0.0
    over: tuple = ()

    def event_fields(self, broker, selections=()):
        for b, score, need in self.over:
            if b == broker:
                return {"trigger": "overload", "score": score, "gap": score - self.threshold, "amount": need}
        return {}


class OverloadShedder(SheddingStrategy):
    """Stateless shedder for brokers above ``loadBalancerBrokerOverloadedThresholdPercentage``.

    Examples
    --------
    See ``tests/engine/test_shedding.py`` for the Yahoo Japan three-broker example.
    """

    name = "OverloadShedder"
    config_keys = ("loadBalancerBrokerOverloadedThresholdPercentage", "loadBalancerCPUResourceWeight",
                   "loadBalancerDirectMemoryResourceWeight", "loadBalancerBandwidthInResourceWeight",
                   "loadBalancerBandwidthOutResourceWeight")

    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        T = conf.loadBalancerBrokerOverloadedThresholdPercentage / 100.0
        u = view.overload_usage(conf)
        recent = view.recent_mask(recently_unloaded)
        thr = view.msg_throughput
        res = SheddingResult(self.name, "Skip", "", score_unit="%",
                             lines={"overload": T * 100})
        for j, b in enumerate(view.brokers):
            uj = float(u[j])
            res.scores[b] = uj * 100
            if uj < T:
                res.verdicts.append(BrokerVerdict(b, uj * 100, T * 100, "overload", "ok",
                                                  reason=f"{uj * 100:.2f} % < overload {T * 100:g} %"))
                continue
            need = float(thr[j]) * (uj - T + MARGIN)
            v = BrokerVerdict(b, uj * 100, T * 100, "overload", "over", need, "B/s",
                              f"{uj * 100:.2f} % >= overload {T * 100:g} %: move {uj - T + MARGIN:.2%} of "
                              f"{fmt_bytes(float(thr[j]))} = {fmt_bytes(need)}")
            nb = int(view.num_bundles[j])
            if nb > 1:
                picked = select_largest_first(view, j, recent, need)
                if not picked:
                    v.reason += "; every bundle was unloaded recently"
                for k, t in picked:
                    res.selected.append(Selection(b, view.bundles[k], t, "B/s", float(view.short_rate[k]),
                                                  t, reason=f"overloaded: {v.reason}"))
            elif nb == 1:
                v.status = "skipped"
                v.reason += "; sole bundle, not unloaded"
            else:
                v.status = "skipped"
                v.reason += "; no bundles"
            res.verdicts.append(v)
        over = tuple((v.broker, v.score, v.need) for v in res.verdicts if v.status != "ok")
        res.details = OverloadShedderDetails(T * 100, over)
        finish_result(res, "no broker at or above the overload threshold", skip_code=NO_BUNDLES if over else BALANCED)
        return res


SPEC = StrategySpec(
    name="OverloadShedder", fqn="org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
    roles=frozenset({"shedding"}), load_manager=MODULAR, config_keys=OverloadShedder.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerBrokerOverloadedThresholdPercentage", (75, 80, 85, 90, 95)),
                ("loadBalancerCPUResourceWeight", (0.25, 0.5, 1.0, 1.5, 2.0, 3.0))),
    state_type=EmptyState, factory=OverloadShedder, explains=frozenset({"verdicts", "lines"}),
    title="OverloadShedder: unload from brokers whose weighted usage is above the overload threshold")
