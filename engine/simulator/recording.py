"""Phase 8 of a minute: recording — the minute's broker measurements and the event log rows.

Every phase writes its events with :meth:`RecordPhase._event` (one row of
:data:`engine.simulator.metrics.EVENT_COLUMNS`); the minute's broker values go to the recording
arrays the tables are built from (:func:`engine.simulator.metrics.build_tables`).
"""
from __future__ import annotations

import json
import math

import numpy as np

from .minute import Minute

__all__ = ["RecordPhase", "scores_json"]


class RecordPhase:
    """The minute's recording and the event log (part of :class:`Simulation`)."""

    def step_record(self, m: Minute) -> None:
        t, pct, rates = m.t, m.pct, m.rates
        self.rec_alive[t] = self.alive
        r = self.rec
        r["cpu"][t], r["memory"][t], r["direct_memory"][t] = pct[:, 0], pct[:, 1], pct[:, 2]
        r["bandwidth_in"][t], r["bandwidth_out"][t] = pct[:, 3], pct[:, 4]
        r["usage"][t] = self.cur_usage
        r["reported_usage"][t] = self._weighted(self.rep_pct)
        r["msg_rate"][t] = rates[:, 0] + rates[:, 1]
        r["throughput"][t] = rates[:, 2] + rates[:, 3]
        r["bundles"][t] = m.nb
        r["wrote_report"][t] = m.wrote
        if self.ext:
            self.rec_target[t] = self.cfg.loadBalancerBrokerLoadTargetStd * 100.0

    def _event(self, t, kind, **kw):
        row = {"minute": t, "time": None, "kind": kind, "broker": None,
               "bundle": None, "destination": None, "reason": "", "placement": "", "random": False,
               "from_plan": False, "bad_placement": False, "dest_usage": np.nan, "avg_usage": np.nan,
               "src_score": np.nan, "dst_score": np.nan, "score_unit": "", "msg_rate": np.nan,
               "throughput": np.nan, "unavailable_s": 0.0, "scores": "", "placement_scores": "", "cycle": None,
               "label": "", "reason_code": ""}
        row.update(kw)
        self.events.append(row)
        return row



def scores_json(d) -> str:
    """``{broker: score}`` as compact JSON (6 decimals, non-finite as null); ``""`` when empty."""
    if not d:
        return ""
    return json.dumps({str(k): (round(float(x), 6) if isinstance(x, (int, float, np.floating)) and math.isfinite(x)
                                else None) for k, x in d.items()}, separators=(",", ":"))
