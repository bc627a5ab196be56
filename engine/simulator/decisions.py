"""Phases 6 and 7 of a minute: the leader's decisions — lookups, then the shedding check.

**Lookups**: unowned bundles with a loaded topic (cluster start, a broker gone, split children) are
placed by ``selectBrokerForAssignment`` (placement strategy + preallocation), in client order.
**Shedding** every ``loadBalancerSheddingIntervalMinutes`` (:func:`engine.cadence.shedding_due`, the
load managers' own cadence, from the last check): ``doLoadShedding``; each unloaded bundle
is served by its destination from the next minute (after a short unavailability) and sits in the
grace period. Both go to the event log with the decision's own explanation (reason, placement
reason, scores); shedding rows also carry Pulsar's vocabulary, the cycle's ``label`` (``Success`` /
``Skip``) and ``reason_code`` (``UnloadDecision.Reason``: ``Overloaded``, ``Underloaded``,
``Balanced``, ``HitCount``, ...), read from the result, never from the strategy's name.
"""
from __future__ import annotations

import numpy as np

from ..cadence import shedding_due
from ..results import SKIP, SUCCESS
from .minute import Minute
from .recording import scores_json

__all__ = ["DecisionsPhase"]


class DecisionsPhase:
    """The leader's lookups and shedding check (part of :class:`Simulation`)."""

    def step_decisions(self, m: Minute) -> None:
        if not self._leader_ready():
            return
        t = m.t
        lookups = self._lookups(t)
        check = shedding_due(self.now_ms(t), self.now_ms(self.last_check),
                             self.cfg.loadBalancerSheddingIntervalMinutes)
        if lookups or check:
            self.leader.observe(self._view(t))
            if lookups:
                self._assign(t, lookups)
        if check:
            self.last_check = t
            self._shed(t)

    def _lookups(self, t) -> list:
        """Unowned bundles with a loaded topic: their clients' lookups reach the leader now."""
        top, _ = self._topics(t)
        ks = np.flatnonzero(self.b_active & (self.owner < 0) & (top > 0))
        if len(ks) == 0:
            return []
        first = "cluster start: first lookup" if t == 0 else "first lookup of one of its topics"
        items = [(k,) + self.lookup_reason.get(k, (first, 0.0)) for k in ks.tolist()]
        if len(items) > 1:  # lookups arrive in client order
            perm = self.rng_order.permutation(len(items))
            items = [items[i] for i in perm.tolist()]
        return items

    def _assign(self, t, items):
        usage = self.cur_usage
        avg = float(np.mean(usage[self.alive])) if self.alive.any() else np.nan
        for k, why, unav in items:
            dec = self.leader.assign(self.names[k])
            if dec.broker is None:
                continue  # retried at the next minute
            self.lookup_reason.pop(k, None)
            s = self.slot[dec.broker]
            self.owner[k] = s
            du = float(usage[s])
            self._event(t, "assign", bundle=self.names[k], destination=dec.broker, reason=why,
                        placement=dec.reason, random=bool(dec.random), from_plan=bool(dec.from_plan),
                        bad_placement=bool(du > avg), dest_usage=du, avg_usage=avg, unavailable_s=float(unav),
                        placement_scores=scores_json(dec.scores), score_unit=dec.score_unit)

    def _shed(self, t):
        cyc = self.leader.shed(self.now_ms(t))
        self.cycle_no += 1
        sh = cyc.shedding
        scores = sh.scores if sh is not None else {}
        unit = sh.score_unit if sh is not None else ""
        if scores:
            self.score_unit = unit
            row = self.rec["score"][t]
            for b, v in scores.items():
                row[self.slot[b]] = v
        usage = self.cur_usage
        avg = float(np.mean(usage[self.alive])) if self.alive.any() else np.nan
        sj = scores_json(scores) if (cyc.unloads or cyc.skipped) else ""
        code = cyc.reason_code or ""  # Pulsar's UnloadDecision.Reason of the cycle (the strategy's own)
        self._event(t, "check", reason=cyc.reason or "", cycle=self.cycle_no, score_unit=unit,
                    scores=scores_json(scores) if len(scores) <= 50 else "", detail=str(len(cyc.unloads)),
                    label=SUCCESS if cyc.unloads else SKIP, reason_code=code)
        unav = self.sc.timing.unload_unavailable_seconds
        for u in cyc.unloads:
            k = self.bidx[u.bundle]
            dec = u.placement
            if u.destination is None:  # released with no broker to go to: looked up again next minute
                self.owner[k] = -1
                self.lookup_reason[k] = (f"unloaded from {u.broker}, no destination", unav)
                self._event(t, "unload", broker=u.broker, bundle=u.bundle, reason=u.reason,
                            placement=dec.reason if dec else "", avg_usage=avg,
                            src_score=scores.get(u.broker, np.nan), score_unit=unit, msg_rate=u.msg_rate,
                            throughput=u.throughput, unavailable_s=float(unav), scores=sj, cycle=self.cycle_no,
                            label=SUCCESS, reason_code=code)
                continue
            d = self.slot[u.destination]
            du = float(usage[d])
            self.owner[k] = d
            self._event(t, "unload", broker=u.broker, bundle=u.bundle, destination=u.destination, reason=u.reason,
                        placement=dec.reason if dec else "", random=bool(dec.random) if dec else False,
                        from_plan=bool(dec.from_plan) if dec else False, bad_placement=bool(du > avg),
                        dest_usage=du, avg_usage=avg, src_score=scores.get(u.broker, np.nan),
                        dst_score=scores.get(u.destination, np.nan), score_unit=unit, msg_rate=u.msg_rate,
                        throughput=u.throughput, unavailable_s=float(unav), scores=sj,
                        placement_scores=scores_json(dec.scores) if dec else "", cycle=self.cycle_no,
                        label=SUCCESS, reason_code=code)
        for u in cyc.skipped:
            self._event(t, "unload-skipped", broker=u.broker, bundle=u.bundle, destination=u.destination,
                        reason=u.skipped or "", placement=u.placement.reason if u.placement else "",
                        score_unit=unit, msg_rate=u.msg_rate, throughput=u.throughput, cycle=self.cycle_no,
                        label=SKIP)

