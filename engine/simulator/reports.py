"""Phase 3 of a minute: the brokers' load reports.

A broker writes its report (``LocalBrokerData``) when ``needBrokerDataUpdate()`` says so — a change
of msg rate, throughput, bundle count or weighted usage above
``loadBalancerReportUpdateThresholdPercentage`` since its last *written* report, or
``loadBalancerReportUpdateMaxIntervalMinutes`` elapsed. Unwritten changes stay invisible to the
leader (a broker that just lost a bundle may keep reporting it). A leader with an ``on_reports``
hook (the Extensible Load Manager's) also gets what every running broker measured that minute
(:class:`~engine.simulator.leader.BrokerReports`).
"""
from __future__ import annotations

import numpy as np

from .leader import BrokerReports
from .minute import Minute

__all__ = ["ReportsPhase"]


class ReportsPhase:
    """Written load reports and the ``on_reports`` feed (part of :class:`Simulation`)."""

    def step_reports(self, m: Minute) -> None:
        t, top, ses = m.t, m.top, m.ses
        m.wrote = self._reports(t, m.pct, m.rates, m.nb, m.r_in, m.r_out, m.t_in, m.t_out, top, ses)
        feed = getattr(self.leader, "on_reports", None)
        if feed is not None:
            feed(self._broker_reports(t, m.pct, m.rates, m.nb, m.wrote, m.r_in, m.r_out, m.t_in, m.t_out, top, ses))

    def _reports(self, t, pct, rates, nb, r_in, r_out, t_in, t_out, top, ses):
        cfg = self.cfg
        cand = self.alive
        uw_cur = self._weighted(pct) / 100.0
        uw_old = self._weighted(self.rep_pct) / 100.0

        def pc(old, new):
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(old == 0, np.where(new == 0, 0.0, np.inf), 100.0 * np.abs((old - new) / np.where(old == 0, 1, old)))
            return r

        ch = np.maximum.reduce([
            pc(self.rep_rate[:, 0] + self.rep_rate[:, 1], rates[:, 0] + rates[:, 1]),
            pc(self.rep_rate[:, 2] + self.rep_rate[:, 3], rates[:, 2] + rates[:, 3]),
            pc(self.rep_nb.astype(float), nb.astype(float)),
            100.0 * np.abs(uw_old - uw_cur),
        ])
        due = (t - self.rep_time) >= cfg.loadBalancerReportUpdateMaxIntervalMinutes
        write = cand & (~self.has_rep | due | (ch > cfg.loadBalancerReportUpdateThresholdPercentage))
        writers = np.flatnonzero(write)
        if len(writers):
            ok = (self.owner >= 0) & self.b_active & (top > 0)
            ks = np.flatnonzero(ok)
            grp = np.argsort(self.owner[ks], kind="stable")
            ks = ks[grp]
            counts = np.bincount(self.owner[ks], minlength=self.S)
            starts = np.concatenate(([0], np.cumsum(counts)))
            stats = np.column_stack([t_in, t_out, r_in, r_out])
            for s in writers.tolist():
                lst = ks[starts[s]:starts[s + 1]]
                self.rep_list[s] = lst
                self.rep_stats[s] = stats[lst]
                self.rep_btop[s] = top[lst]
                self.rep_bses[s] = ses[lst]
            self.rep_rate[writers] = rates[writers]
            self.rep_pct[writers] = pct[writers]
            self.rep_nb[writers] = nb[writers]
            self.rep_ntop[writers] = np.array([int(self.rep_btop[s].sum()) for s in writers.tolist()])
            self.rep_time[writers] = t
            self.has_rep[writers] = True
            self._ent = None
        return write

    def _broker_reports(self, t, pct, rates, nb, wrote, r_in, r_out, t_in, t_out, top, ses) -> BrokerReports:
        """The minute's measurements of the running brokers, for a leader with an ``on_reports`` hook."""
        al = np.flatnonzero(self.alive)
        pos = np.full(self.S, -1, dtype=np.int64)
        pos[al] = np.arange(len(al))
        ks = np.flatnonzero(self.b_active & (self.owner >= 0) & (top > 0))
        ks = ks[pos[self.owner[ks]] >= 0]
        bpos = pos[self.owner[ks]]
        ntop = np.bincount(bpos, top[ks], len(al)).astype(np.int64) if len(ks) else np.zeros(len(al), dtype=np.int64)
        lim = (100.0 * self.cores, self.heap_mb, self.dm_mb, self.nic_kbps, self.nic_kbps)
        return BrokerReports(
            minute=t, now_ms=self.now_ms(t), brokers=[self.ids[s] for s in al.tolist()],
            usage=np.column_stack([np.broadcast_to(x, (self.S,)) for x in self._raw])[al],
            limit=np.column_stack(lim)[al], percent=pct[al], rates=rates[al], bundle_count=nb[al], topics=ntop,
            writes_report=np.asarray(wrote, dtype=bool)[al], bundle_broker=bpos,
            bundle_names=[self.names[k] for k in ks.tolist()],
            bundle_stats=np.column_stack([r_in[ks], t_in[ks], r_out[ks], t_out[ks]]),
            bundle_topics=top[ks], bundle_sessions=ses[ks], channel=self._channel)

    def _channel(self) -> dict:
        """The service-unit channel: bundle -> current owner (running brokers only)."""
        ks = np.flatnonzero(self.b_active & (self.owner >= 0))
        ids, names, own = self.ids, self.names, self.owner
        return {names[k]: ids[own[k]] for k in ks.tolist()}

