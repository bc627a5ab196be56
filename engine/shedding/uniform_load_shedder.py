"""UniformLoadShedder: even out message rate (first) or throughput across brokers.

Notes
-----
Pulsar file ``impl/UniformLoadShedder.java`` (``pulsar-load-balancing.md`` §5.3). Config keys:
``loadBalancerMsgRateDifferenceShedderThreshold`` (50 %),
``loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold`` (4), ``maxUnloadPercentage``
(0.2), ``minUnloadMessage`` (1000), ``minUnloadMessageThroughput`` (1 MiB),
``maxUnloadBundleNumPerShedding`` (−1).

* Only the broker with the highest message rate (or throughput) sheds, one per cycle; strict
  comparisons, so the first broker in map order wins ties.
* A min of ~0 is replaced by 1.0. Message-rate mode has absolute priority over throughput.
* The amount is ``(int)((max − min) × maxUnloadPercentage)``; each selected bundle subtracts its
  *truncated* rate (``MutableInt.add``); bundles are taken largest first while they fit (``<=``),
  zero-traffic bundles included. Releases before 4.1 let a bundle fit up to 1000 above the amount left
  (``+ 1000 /* delta */``, the release's ``uniform_without_delta`` behaviour).

Result codes (Pulsar's modular shedders have none; ours, in ``UnloadDecision``'s vocabulary):
Success/Overloaded; Skip/Balanced (below both thresholds, or the amount is below the minimum);
Skip/NoBundles (the max broker has one bundle or none, or no bundle fits the amount);
Skip/NoBrokers. ``details`` is a :class:`UniformLoadShedderDetails`.

Examples
--------
A 3-broker snapshot where b1 serves 30,000 msg/s and b3 only 3,000:

>>> from engine.config import LoadBalancerConfig
>>> from engine.synth import make_snapshot
>>> from engine.view import LoadView
>>> def broker(rate):
...     return dict(cpu=30, bundles={f"t/ns/{rate}-{k}": dict(rate=rate / 6, throughput=rate * 100) for k in range(6)})
>>> view = LoadView.from_load_data(make_snapshot({"b1:8080": broker(30000), "b2:8080": broker(15000),
...                                               "b3:8080": broker(3000)}))
>>> res, _ = UniformLoadShedder().run(view, LoadBalancerConfig(), {}, None)
>>> print(res.label, res.reason_code, res.reason, [(s.broker, s.bundle) for s in res.selected])
Success Overloaded 1 bundle(s) from 1 broker(s) [('b1:8080', 't/ns/30000-0')]
>>> res.details.event_fields("b1:8080")
{'partner': 'b3:8080', 'trigger': 'msg rate', 'gap': 900.0, 'amount': 5400.0}
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..javacompat import java_int
from ..results import (BALANCED, NO_BROKERS, NO_BUNDLES, BrokerVerdict, Details, Selection, SheddingResult, fmt_bytes,
                       fmt_rate)
from ..strategies.spec import EmptyState, MODULAR, StrategySpec
from .base import SheddingStrategy, candidate_bundles, finish_result, sort_desc

__all__ = ["SPEC", "UniformLoadShedderDetails", "UniformLoadShedder"]

EPS = 1e-6
INT_MAX_AS_DOUBLE = 2147483647.0


@dataclass(frozen=True)
class UniformLoadShedderDetails(Details):
    """The comparison that decided: ``mode`` (``"msg rate"``, which has priority, or ``"throughput"``),
    the max and min broker, their ``difference`` (% for msg rate, a ratio for throughput) against
    ``threshold``, and the ``amount`` to move (in ``unit``) once triggered."""

    kind = "verdicts"
    mode: str = ""
    max_broker: str = ""
    min_broker: str = ""
    difference: float = 0.0
    threshold: float = 0.0
    amount: float | None = None
    unit: str = ""

    def event_fields(self, broker, selections=()):
        if broker != self.max_broker or self.amount is None:
            return {}
        return {"partner": self.min_broker, "trigger": self.mode, "gap": self.difference, "amount": self.amount}


class UniformLoadShedder(SheddingStrategy):
    """Stateless shedder comparing the max and min broker message rate / throughput."""

    name = "UniformLoadShedder"
    config_keys = ("loadBalancerMsgRateDifferenceShedderThreshold",
                   "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", "maxUnloadPercentage",
                   "minUnloadMessage", "minUnloadMessageThroughput", "maxUnloadBundleNumPerShedding")

    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        rate_th = conf.loadBalancerMsgRateDifferenceShedderThreshold
        thr_th = conf.loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold
        p = conf.maxUnloadPercentage
        max_rate = max_thr = -1.0
        min_rate = min_thr = INT_MAX_AS_DOUBLE
        rate_over = thr_over = rate_under = thr_under = None
        rates, thrs = view.msg_rate.tolist(), view.msg_throughput.tolist()
        for j in range(view.nb):
            r, t = rates[j], thrs[j]
            if r > max_rate:
                max_rate, rate_over = r, j
            if t > max_thr:
                max_thr, thr_over = t, j
            if r < min_rate:
                min_rate, rate_under = r, j
            if t < min_thr:
                min_thr, thr_under = t, j
        res = SheddingResult(self.name, "Skip", "", score_unit="msg/s")
        res.scores = {b: rates[j] for j, b in enumerate(view.brokers)}
        res.notes.append("throughput (B/s): " + ", ".join(f"{b} {thrs[j]:,.0f}" for j, b in enumerate(view.brokers[:20])))
        if view.nb == 0:
            res.reason, res.reason_code = "no brokers", NO_BROKERS
            return res
        if -EPS <= min_rate <= EPS:
            min_rate = 1.0
        if -EPS <= min_thr <= EPS:
            min_thr = 1.0
        rate_pct = (max_rate - min_rate) * 100 / min_rate
        thr_ratio = max_thr / min_thr
        rate_hit = rate_th > 0 and rate_pct > rate_th
        thr_hit = thr_th > 0 and thr_ratio > thr_th
        res.lines = {"max msg rate": max_rate, "min msg rate": min_rate,
                     "min msg rate x (1 + threshold)": min_rate * (1 + rate_th / 100.0)}
        # Pulsar's minimum starts at Integer.MAX_VALUE: when every broker reports that much or more,
        # no broker is the underloaded one (Pulsar only logs it), and the shedding goes on
        def name(j):
            return view.brokers[j] if j is not None else "(none below Integer.MAX_VALUE)"

        res.state = {"msg_rate_difference_pct": rate_pct, "throughput_ratio": thr_ratio,
                     "max_rate_broker": name(rate_over), "min_rate_broker": name(rate_under),
                     "max_throughput_broker": name(thr_over), "min_throughput_broker": name(thr_under)}
        rate_txt = (f"msg rate {name(rate_over)} {fmt_rate(max_rate)} vs {name(rate_under)} "
                    f"{fmt_rate(min_rate)}: difference {rate_pct:.1f} % {'>' if rate_hit else '<='} {rate_th:g} %")
        thr_txt = (f"throughput {name(thr_over)} {fmt_bytes(max_thr)} vs {name(thr_under)} "
                   f"{fmt_bytes(min_thr)}: ratio {thr_ratio:.2f} {'>' if thr_hit else '<='} {thr_th:g}")
        for j, b in enumerate(view.brokers):
            st = "over" if (rate_hit and j == rate_over) or (not rate_hit and thr_hit and j == thr_over) else (
                "under" if j in (rate_under, thr_under) else "ok")
            res.verdicts.append(BrokerVerdict(b, rates[j], min_rate * (1 + rate_th / 100.0),
                                              "min msg rate × (1 + threshold)", st))
        res.details = UniformLoadShedderDetails(
            "msg rate" if rate_hit or not thr_hit else "throughput",
            name(rate_over if rate_hit or not thr_hit else thr_over),
            name(rate_under if rate_hit or not thr_hit else thr_under),
            rate_pct if rate_hit or not thr_hit else thr_ratio, rate_th if rate_hit or not thr_hit else thr_th)
        if not (rate_hit or thr_hit):
            res.reason, res.reason_code = f"balanced: {rate_txt}; {thr_txt}", BALANCED
            return res
        req_rate = java_int((max_rate - min_rate) * p)
        req_thr = java_int((max_thr - min_thr) * p)
        recent = view.recent_mask(recently_unloaded)
        max_n = conf.maxUnloadBundleNumPerShedding
        if rate_hit:
            j, req, floor, vals, unit, txt = rate_over, req_rate, conf.minUnloadMessage, view.short_rate, "msg/s", rate_txt
            amount_txt = f"move (int)(({max_rate:,.1f} - {min_rate:,.1f}) x {p:g}) = {req_rate:,} msg/s"
        else:
            j, req, floor, vals, unit, txt = thr_over, req_thr, conf.minUnloadMessageThroughput, view.short_throughput, "B/s", thr_txt
            amount_txt = f"move (int)(({max_thr:,.0f} - {min_thr:,.0f}) x {p:g}) = {req_thr:,} B/s"
        b = view.brokers[j]
        v = res.verdicts[j]
        v.need, v.need_unit = float(req), unit
        v.reason = f"{txt}; {amount_txt}"
        nb = int(view.num_bundles[j])
        res.details = replace(res.details, amount=float(req), unit=unit)
        if nb <= 1:
            v.status = "skipped"
            res.reason = f"{v.reason}; but {b} has {'only one bundle' if nb == 1 else 'no bundles'}"
            res.reason_code = NO_BUNDLES
            return res
        if req < floor:
            v.status = "skipped"
            res.reason = f"{v.reason}; below the minimum {floor:,} {unit} (min unload floor)"
            res.reason_code = BALANCED
            return res
        idx = sort_desc(view, candidate_bundles(view, j, recent), vals)
        delta = 0 if conf.has("uniform_without_delta") else 1000  # the +1000 tolerance of releases before 4.1
        for k in idx.tolist():
            if max_n != -1 and len(res.selected) >= max_n:
                continue
            x = float(vals[k])
            if x <= _int_add(req, delta):
                req = req + java_int(-x)
                res.selected.append(Selection(b, view.bundles[k], x, unit, float(view.short_rate[k]),
                                              float(view.short_throughput[k]), reason=v.reason))
        finish_result(res, v.reason + "; no bundle small enough to fit", skip_code=NO_BUNDLES)
        return res


def _int_add(a: int, b: int) -> int:
    """Java ``int`` addition (wraps around at 32 bits)."""
    return ((a + b + 2**31) % 2**32) - 2**31


SPEC = StrategySpec(
    name="UniformLoadShedder", fqn="org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder",
    roles=frozenset({"shedding"}), load_manager=MODULAR, config_keys=UniformLoadShedder.config_keys,
    requires_placement=None,
    sweep_grid=(("loadBalancerMsgRateDifferenceShedderThreshold", (25, 35, 50, 75, 100)),
                ("loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold", (2, 3, 4, 5, 6, 8))),
    state_type=EmptyState, factory=UniformLoadShedder, explains=frozenset({"verdicts", "lines"}),
    title="UniformLoadShedder: move load from the busiest to the idlest broker when their rates differ too much")
