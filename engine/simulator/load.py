"""Phase 2 of a minute: traffic and usage.

Every bundle's msg/s and bytes/s in and out (workload patterns × per-bundle noise), served by its
current owner; every broker's real CPU, NIC, direct-memory and heap usage, and its weighted usage
with the config's weights. Bundles not served (unowned, or split parents) count on a sentinel
broker and reach no one.
"""
from __future__ import annotations

import numpy as np

from ..javacompat import java_max_rows, percent_usage_array
from .clock import MIB
from .minute import Minute

__all__ = ["LoadPhase"]


class LoadPhase:
    """Traffic per bundle and usage per broker (part of :class:`Simulation`)."""

    def step_load(self, m: Minute) -> None:
        t = m.t
        m.top, m.ses = self._topics(t)
        m.r_in, m.r_out, m.t_in, m.t_out = self._traffic(t)
        m.pct, m.rates, m.nb = self._usage(t, m.r_in, m.r_out, m.t_in, m.t_out, m.top)
        self.cur_usage = self._weighted(m.pct)

    def _traffic(self, t):
        K = self.K
        P, C = self.P[:, t], self.C[:, t]
        if len(self.p_k):
            pw = P[self.p_w]
            rin = self.p_rate * pw
            rout = self.p_out * pw * C[self.p_w]
            r_in = np.bincount(self.p_k, rin, K)
            r_out = np.bincount(self.p_k, rout, K)
            t_in = np.bincount(self.p_k, rin * self.p_size, K)
            t_out = np.bincount(self.p_k, rout * self.p_size, K)
        else:
            r_in = r_out = t_in = t_out = np.zeros(K)
        sig = self.sc.noise.traffic
        if sig > 0:
            # uniform noise with standard deviation sig (a normal draw costs 10x more per bundle)
            f = 1.0 + (sig * 3.4641016151377544) * (self.rng_traffic.random(K) - 0.5)
            np.maximum(f, 0.0, out=f)
            r_in, r_out, t_in, t_out = r_in * f, r_out * f, t_in * f, t_out * f
        return r_in, r_out, t_in, t_out

    def _topics(self, t):
        """Loaded topics and sessions (producers + consumers) per bundle at minute ``t``.

        A bundle is in its owner's load report (``lastStats``) only while it has loaded topics:
        Pulsar builds bundle stats from the topics a broker serves."""
        key = (self._pairs_version, self.A[:, t].tobytes())
        if self._top_key != key:
            K = self.K
            if len(self.p_k):
                act = self.A[:, t][self.p_w]
                top = np.bincount(self.p_k, self.p_top * act, K).astype(np.int64)
                ses = np.bincount(self.p_k, self.p_ses * act, K).astype(np.int64)
            else:
                top = ses = np.zeros(K, dtype=np.int64)
            self._top, self._ses, self._top_key = top, ses, key
        return self._top, self._ses

    def _usage(self, t, r_in, r_out, t_in, t_out, top):
        S, cost = self.S, self.sc.cost
        # bundles not served (unowned, or split parents) count on a sentinel broker S
        o = np.where(self.b_active & (self.owner >= 0), self.owner, S)
        n = S + 1
        c = r_in * cost.cpu_per_msg_in + r_out * cost.cpu_per_msg_out + (t_in + t_out) * (cost.cpu_per_mib / MIB)
        cores_used = np.bincount(o, c, n)[:S]
        b_rin = np.bincount(o, r_in, n)[:S]
        b_rout = np.bincount(o, r_out, n)[:S]
        b_tin = np.bincount(o, t_in, n)[:S]
        b_tout = np.bincount(o, t_out, n)[:S]
        nb = np.bincount(np.where(top > 0, o, S), minlength=n)[:S].astype(np.int64)
        cpu = 100.0 * cores_used / self.cores + self.bg_cpu
        if self.sc.noise.cpu > 0:
            cpu = cpu + self.sc.noise.cpu * self.rng_cpu.standard_normal(S)
        spike = self.cpu_until > t
        cpu = np.where(spike & ~np.isnan(self.cpu_set), self.cpu_set, cpu + np.where(spike, self.cpu_add, 0.0))
        cpu = np.clip(cpu, 0.0, 100.0)
        heap = self.heap_used.copy()
        if self.sc.noise.heap > 0:
            heap = heap + self.sc.noise.heap * self.rng_cpu.standard_normal(S)
        heap = np.clip(heap, 0.0, 100.0)
        bw_in = b_tin * 8.0 / 1000.0
        bw_out = (b_tout + cost.replication * b_tin) * 8.0 / 1000.0
        dm = cost.direct_memory_base_mb + cost.direct_memory_per_mib * (b_tin + b_tout) / MIB
        self._raw = (cpu * self.cores, heap * self.heap_mb / 100.0, dm, bw_in, bw_out)
        pct = np.column_stack([
            percent_usage_array(cpu * self.cores, 100.0 * self.cores),
            percent_usage_array(heap * self.heap_mb / 100.0, self.heap_mb),
            percent_usage_array(dm, self.dm_mb),
            percent_usage_array(bw_in, self.nic_kbps),
            percent_usage_array(bw_out, self.nic_kbps),
        ])
        return pct, np.column_stack([b_rin, b_rout, b_tin, b_tout]), nb

    def _weighted(self, pct, cfg=None) -> np.ndarray:
        w_cpu, w_dm, w_in, w_out = (cfg or self.cfg).weights
        with np.errstate(invalid="ignore"):  # getMaxResourceUsageWithWeight: a NaN never wins (LocalBrokerData.max)
            return java_max_rows([pct[:, 0] * w_cpu, pct[:, 2] * w_dm, pct[:, 3] * w_in, pct[:, 4] * w_out])

