"""Phase 5 of a minute: automatic bundle split (only when ``loadBalancerAutoBundleSplitEnabled``).

``BundleSplitterTask`` on the written reports and the leader's long-term averages, split with the
configured algorithm; the children are unloaded (looked up again) when
``loadBalancerAutoUnloadSplitBundlesEnabled``. A split grows the bundle arrays and re-hashes the
parent's topics into the children.
"""
from __future__ import annotations

import numpy as np

from ..bundles import auto_split_from_config, split_from_config
from .clock import MIB
from .minute import Minute

__all__ = ["SplitPhase"]


class SplitPhase:
    """Auto split of hot bundles (part of :class:`Simulation`)."""

    def step_split(self, m: Minute) -> None:
        if self.cfg.loadBalancerAutoBundleSplitEnabled and self._leader_ready():
            self._auto_split(m.t)

    def _auto_split(self, t):
        cfg = self.cfg
        if not cfg.loadBalancerAutoBundleSplitEnabled or int((self.alive & self.has_rep).sum()) <= 1:
            return False
        order, E_k, E_x, E_top, E_pos = self._entries()
        if len(E_k) == 0:
            return False
        E_ses = np.concatenate([self.rep_bses[s] for s in order.tolist()])
        rate = (self.lt[:, 2] + self.lt[:, 3])[E_k] * self.in_bd[E_k]
        thr = (self.lt[:, 0] + self.lt[:, 1])[E_k] * self.in_bd[E_k]
        m_ses = cfg.loadBalancerNamespaceBundleMaxSessions
        hit = (E_top >= 2) & ((E_top > cfg.loadBalancerNamespaceBundleMaxTopics)
                              | ((m_ses > 0) & (E_ses > m_ses))
                              | (rate > cfg.loadBalancerNamespaceBundleMaxMsgRate)
                              | (thr > cfg.loadBalancerNamespaceBundleMaxBandwidthMbytes * MIB))
        if not hit.any():
            return False
        sel = np.flatnonzero(hit)
        counts = {self.ns_names[i]: len(self.ns_bundles[i]) for i in range(len(self.ns_names))}
        res = auto_split_from_config(cfg, [self.names[k] for k in E_k[sel].tolist()], E_top[sel].tolist(),
                                     E_ses[sel].tolist(), rate[sel].tolist(), thr[sel].tolist(), counts,
                                     brokers=[self.ids[s] for s in order[E_pos[sel]].tolist()])
        done = False
        for dec in res.decisions:
            if dec.label != "Split":
                continue
            k = self.bidx[dec.bundle]
            if not self.b_active[k]:
                continue
            done |= self._split(t, k, dec.reason)
        return done

    def _split(self, t, k, why) -> bool:
        cfg = self.cfg
        i = int(self.b_ns[k])
        lo, hi = int(self.b_lo[k]), int(self.b_hi[k])
        tsel = np.flatnonzero(self.t_bundle == k)
        tnames = [self.t_names[x] for x in tsel.tolist()]
        P = self.P[:, min(self._t, self.T - 1)]
        trate = self.t_rate[tsel] * P[self.t_w[tsel]]
        tthr = trate * self.w_size[self.t_w[tsel]] * (1 + self.w_subs[self.t_w[tsel]])
        trate = trate * (1 + self.w_subs[self.t_w[tsel]])
        res = split_from_config(cfg, self.ns_bounds[i], (lo, hi), topics=tnames, msg_rate=trate.tolist(),
                                throughput=tthr.tolist(), namespace=self.ns_names[i])
        if not res.ok:
            self._event(t, "split", bundle=self.names[k], broker=self._owner_id(k),
                        reason=f"{why}; split not done: {res.reason}")
            return False
        children = res.children
        n0 = self.K
        self._grow(len(children))
        src = int(self.owner[k])
        for j, (a, b) in enumerate(children):
            kk = n0 + j
            self.names.append(f"{self.ns_names[i]}/0x{a:08x}_0x{b:08x}")
            self.b_ns[kk], self.b_lo[kk], self.b_hi[kk] = i, a, b
            self.owner[kk] = src
        self.ns_bounds[i] = np.asarray(res.apply(self.ns_bounds[i]), dtype=np.int64)
        self.b_active[k] = False
        self.owner[k] = -1
        self.in_bd[k] = False
        self.ns_bundles[i] = sorted([x for x in self.ns_bundles[i] if x != k] + list(range(n0, self.K)),
                                    key=lambda x: int(self.b_lo[x]))
        if len(tsel):
            lows = np.array([a for a, _ in children], dtype=np.int64)
            pos = np.searchsorted(lows, self.t_hash[tsel], side="right") - 1
            self.t_bundle[tsel] = n0 + pos
        for s in range(self.S):  # Pulsar drops the parent from the owner's lastStats
            if len(self.rep_list[s]) and (self.rep_list[s] == k).any():
                keep = self.rep_list[s] != k
                self.rep_list[s] = self.rep_list[s][keep]
                self.rep_stats[s] = self.rep_stats[s][keep]
                self.rep_btop[s] = self.rep_btop[s][keep]
                self.rep_bses[s] = self.rep_bses[s][keep]
        self._ent = None
        self._rebuild_pairs()
        self._refresh_bundle_caches()
        unload = cfg.loadBalancerAutoUnloadSplitBundlesEnabled
        self._event(t, "split", bundle=self.names[k], broker=self.ids[src] if src >= 0 else None,
                    reason=f"{why}; {res.reason}" + ("; children unloaded" if unload else ""),
                    detail=", ".join(self.names[n0:]))
        if unload and src >= 0:
            for kk in range(n0, self.K):
                self.owner[kk] = -1
                self.lookup_reason[kk] = (f"split of {self.names[k]} (children unloaded)",
                                          self.sc.timing.unload_unavailable_seconds)
        return True

    def _owner_id(self, k):
        s = int(self.owner[k])
        return self.ids[s] if s >= 0 else None

