"""Phase 1 of a minute: the events of the minute and the leader election.

Brokers join or leave (graceful shutdown or crash), CPU spikes start and end, config changes apply
(traffic steps are part of the precomputed traffic). When the leader left, the next broker (the
scenario's preferred leader, else the longest running) takes over with empty strategy memory. A
departed broker's clients look their bundles up right away: the leader's ``updateAll`` for the
membership change, then ``selectBrokerForAssignment``.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .minute import Minute
from .pairing import check_pair, runs_extensible

__all__ = ["EventsPhase"]


class EventsPhase:
    """Events of the minute, election, and the departed brokers' lookups (part of :class:`Simulation`)."""

    def step_events(self, m: Minute) -> None:
        t = m.t
        for s in np.flatnonzero((self.cpu_until >= 0) & (self.cpu_until <= t)).tolist():
            self.cpu_set[s], self.cpu_add[s], self.cpu_until[s] = np.nan, 0.0, -1
        changes = self._apply_events(t)
        if changes:
            self._elect(t)
        if changes and self._leader_ready():
            lookups = self._lookups(t)
            if lookups:
                # a departed broker's clients look their bundles up right away: the leader's
                # updateAll for the membership change, then selectBrokerForAssignment
                self._update_bundle_data(changes)
                changes = 0
                self.leader.observe(self._view(t))
                self._assign(t, lookups)
        m.changes = changes

    def _leader_ready(self) -> bool:
        """A leader runs and at least one running broker has written a report."""
        return self.leader_slot >= 0 and bool((self.alive & self.has_rep).any())

    def _give_policies(self):
        """The scenario's isolation / anti-affinity / failure-domain policies go to the leader
        (``ModularLeader.policies``; TransferShedder's ``ExtensibleLeader.policies``)."""
        if getattr(self.sc, "policies", None) is not None and hasattr(self.leader, "policies"):
            self.leader.policies = self.sc.policies

    def _elect(self, t):
        alive = np.flatnonzero(self.alive)
        if self.leader_slot >= 0 and self.alive[self.leader_slot]:
            return
        if len(alive) == 0:
            self.leader_slot = -1
            return
        pref = self.sc.leader
        if pref is not None and self.alive[self.slot[pref]]:
            new = self.slot[pref]
        else:
            new = int(alive[np.argmin(self.join_seq[alive])])
        had = self.leader_slot >= 0
        self.leader_slot = new
        if had:
            # a new leader starts with empty strategy memory and grace-period map
            if self._leader_factory is not None:
                old = self.leader
                self.leader = self._leader_factory(self.cfg, seed=self._leader_rng)
                self._give_policies()
                take_over = getattr(self.leader, "take_over", None)
                if take_over is not None:
                    take_over(old)  # the brokers' own published data survives the election
            self._event(t, "leader-change", broker=self.ids[new],
                        reason=f"{self.ids[new]} became the leader: strategy state and recently unloaded "
                               "bundles start empty")

    def _apply_events(self, t):
        changes = 0
        for e in self.timeline.get(t, ()):
            k = e.kind
            if k == "add_broker":
                s = self.slot[e.get("broker")]
                self.alive[s] = True
                self.has_rep[s] = False
                self.join_seq[s] = self._seq
                self._seq += 1
                changes += 1
                if not e.get("initial"):
                    b = self.sc.brokers[s]
                    self._event(t, "broker-added", broker=self.ids[s],
                                reason=("restarted" if e.get("restart") else "added")
                                       + f": {b.cores:g} cores, {b.nic_gbps:g} Gbit/s NIC")
            elif k == "remove_broker":
                s = self.slot[e.get("broker")]
                mode = e.get("mode")
                self.alive[s] = False
                self.has_rep[s] = False
                self.rep_list[s] = np.zeros(0, dtype=np.int64)
                self.rep_stats[s] = np.zeros((0, 4))
                self.rep_btop[s] = np.zeros(0, dtype=np.int64)
                self.rep_bses[s] = np.zeros(0, dtype=np.int64)
                self._ent = None
                orphans = np.flatnonzero((self.owner == s) & self.b_active)
                self.owner[orphans] = -1
                unav = (self.sc.timing.crash_unavailable_seconds if mode == "crash"
                        else self.sc.timing.unload_unavailable_seconds)
                why = ("crash" if mode == "crash" else "restart" if e.get("restart") else "graceful shutdown")
                for kk in orphans.tolist():
                    self.lookup_reason[kk] = (f"owner {self.ids[s]} gone ({why})", unav)
                if mode != "crash":
                    self.keep_bd[orphans] = self.in_bd[orphans]
                changes += 1
                self._event(t, "broker-removed", broker=self.ids[s],
                            reason=f"{why}: {len(orphans)} bundle(s) to place"
                                   + ("; their bundle data is lost (metadata-store session expired)"
                                      if mode == "crash" else ""))
            elif k == "cpu":
                s = self.slot[e.get("broker")]
                if e.get("cpu") is not None:
                    self.cpu_set[s], self.cpu_add[s] = e.get("cpu"), 0.0
                    what = f"CPU at {e.get('cpu'):g} %"
                else:
                    self.cpu_set[s], self.cpu_add[s] = np.nan, e.get("add")
                    what = f"CPU {e.get('add'):+g} points"
                self.cpu_until[s] = t + e.get("minutes")
                self._event(t, "cpu", broker=self.ids[s],
                            reason=f"{what} for {e.get('minutes')} minute(s), traffic unchanged")
            elif k == "config":
                vals = dict(e.get("set"))
                old = self.cfg
                self.cfg = self.cfg.with_values(vals, source=self.sc.source)
                check_pair(self.cfg, self.sc.source)
                if runs_extensible(old) != runs_extensible(self.cfg):
                    raise InputError("a config event cannot switch between the modular and the extensible load "
                                     "manager (Pulsar needs a broker restart)", source=self.sc.source,
                                     field=f"events (minute {t})")
                self.leader.reconfigure(self.cfg)
                self._event(t, "config-change", reason=", ".join(f"{a}={b}" for a, b in vals.items()))
        return changes

