"""Setup of a run: the cluster's arrays (brokers, namespaces, bundles, topics, the leader's bundle data).

:class:`ClusterSetup` is the part of :class:`~engine.simulator.run.Simulation` that builds, once,
everything the minute's phases read and write: broker slots and capacities, the written reports,
the bundles and their owners, the topics hashed into bundles, the traffic series, the timeline of
events and the recording arrays. Splits grow the bundle arrays (:meth:`ClusterSetup._grow`).
"""
from __future__ import annotations

import numpy as np

from ..bundles import bundle_indices, initial_boundaries, topic_hashes
from ..model import is_sla_or_heartbeat_namespace
from .scenario_spec import expand_events
from .traffic import topic_names, topic_rates, workload_series

__all__ = ["ClusterSetup"]


class ClusterSetup:
    """Builds the cluster's arrays (``_build``) and keeps the per-bundle caches current."""

    def _build(self):
        sc, cfg = self.sc, self.cfg
        # brokers (slots)
        self.ids = [b.id for b in sc.brokers]
        self.slot = {b: i for i, b in enumerate(self.ids)}
        S = len(self.ids)
        self.S = S
        self.cores = np.array([b.cores for b in sc.brokers], dtype=float)
        self.nic_kbps = np.array([b.nic_gbps for b in sc.brokers], dtype=float) * 1e6
        self.heap_mb = np.array([b.heap_mb for b in sc.brokers], dtype=float)
        self.dm_mb = np.array([b.direct_memory_mb for b in sc.brokers], dtype=float)
        self.bg_cpu = np.array([b.background_cpu for b in sc.brokers], dtype=float)
        self.heap_used = np.array([b.heap_used for b in sc.brokers], dtype=float)
        self.alive = np.zeros(S, dtype=bool)
        self.join_seq = np.full(S, 1 << 40, dtype=np.int64)
        self._seq = 0
        self.leader_slot = -1
        # written reports
        self.has_rep = np.zeros(S, dtype=bool)
        self.rep_time = np.zeros(S, dtype=np.int64)
        self.rep_rate = np.zeros((S, 4))  # rateIn, rateOut, thrIn, thrOut (sums)
        self.rep_pct = np.zeros((S, 5))  # cpu, memory, directMemory, bwIn, bwOut (float32-derived %)
        self.rep_nb = np.zeros(S, dtype=np.int64)
        self.rep_ntop = np.zeros(S, dtype=np.int64)
        self.rep_list = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.rep_stats = [np.zeros((0, 4)) for _ in range(S)]  # thrIn, thrOut, rateIn, rateOut
        self.rep_btop = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.rep_bses = [np.zeros(0, dtype=np.int64) for _ in range(S)]
        self.cpu_set = np.full(S, np.nan)
        self.cpu_add = np.zeros(S)
        self.cpu_until = np.full(S, -1, dtype=np.int64)
        # namespaces and bundles
        self.ns_names = [n.name for n in sc.namespaces]
        self.ns_bounds = []
        names, ns_of, lo, hi = [], [], [], []
        for i, n in enumerate(sc.namespaces):
            nb = n.bundles or cfg.defaultNumberOfNamespaceBundles
            b = initial_boundaries(nb)
            self.ns_bounds.append(np.asarray(b, dtype=np.int64))
            for j in range(nb):
                names.append(f"{n.name}/0x{int(b[j]):08x}_0x{int(b[j + 1]):08x}")
                ns_of.append(i)
                lo.append(int(b[j]))
                hi.append(int(b[j + 1]))
        self.names = names
        self.bidx = {b: k for k, b in enumerate(names)}
        K = len(names)
        self.K = K
        self.b_ns = np.array(ns_of, dtype=np.int64)
        self.b_lo = np.array(lo, dtype=np.int64)
        self.b_hi = np.array(hi, dtype=np.int64)
        self.b_active = np.ones(K, dtype=bool)
        self.owner = np.full(K, -1, dtype=np.int64)
        # leader bundle data
        self.st = np.zeros((K, 4))
        self.lt = np.zeros((K, 4))
        self.st_n = np.zeros(K, dtype=np.int64)
        self.lt_n = np.zeros(K, dtype=np.int64)
        self.in_bd = np.zeros(K, dtype=bool)
        self.bd_topics = np.zeros(K, dtype=np.int64)
        self.keep_bd = np.zeros(K, dtype=bool)
        self.lookup_reason: dict = {}  # bundle -> (why it is unowned, unavailable seconds)
        # workloads and topics
        T = self.T
        steps = {w.name: [] for w in sc.workloads}
        for e in sc.events:
            if e.kind == "traffic":
                steps[e.get("workload")].append((e.at, e.get("factor"), e.get("rate")))
        nw = len(sc.workloads)
        self.P = np.zeros((nw, T))
        self.C = np.zeros((nw, T))
        self.A = np.zeros((nw, T), dtype=bool)
        self.w_subs = np.array([w.subscriptions for w in sc.workloads], dtype=float)
        self.w_size = np.array([w.msg_size for w in sc.workloads], dtype=float)
        t_names, t_w, t_rate, t_ses = [], [], [], []
        for i, w in enumerate(sc.workloads):
            self.P[i], self.C[i], self.A[i] = workload_series(w, T, self.layout_rng, steps[w.name])
            tn = topic_names(w)
            t_names.extend(tn)
            t_w.append(np.full(len(tn), i, dtype=np.int64))
            t_rate.append(topic_rates(w, len(tn), self.layout_rng))
            t_ses.append(np.full(len(tn), w.producers_per_topic + w.subscriptions * w.consumers_per_subscription,
                                 dtype=np.int64))
        self.t_names = t_names
        self.t_w = np.concatenate(t_w) if t_w else np.zeros(0, dtype=np.int64)
        self.t_rate = np.concatenate(t_rate) if t_rate else np.zeros(0)
        self.t_ses = np.concatenate(t_ses) if t_ses else np.zeros(0, dtype=np.int64)
        self.t_hash = topic_hashes(t_names).astype(np.int64) if t_names else np.zeros(0, dtype=np.int64)
        ns_index = {n: i for i, n in enumerate(self.ns_names)}
        w_ns = np.array([ns_index[w.namespace] for w in sc.workloads], dtype=np.int64)
        self.t_ns = w_ns[self.t_w] if nw else np.zeros(0, dtype=np.int64)
        self.t_bundle = np.full(len(t_names), -1, dtype=np.int64)
        self.ns_first = []
        first = 0
        for i, n in enumerate(sc.namespaces):
            self.ns_first.append(first)
            first += len(self.ns_bounds[i]) - 1
        self.ns_bundles = [list(range(self.ns_first[i], self.ns_first[i] + len(self.ns_bounds[i]) - 1))
                           for i in range(len(self.ns_names))]
        for i in range(len(self.ns_names)):
            sel = np.flatnonzero(self.t_ns == i)
            if len(sel):
                bi = bundle_indices(self.t_hash[sel], self.ns_bounds[i])
                self.t_bundle[sel] = np.where(bi >= 0, bi + self.ns_first[i], -1)
        self.unhashable = int((self.t_bundle < 0).sum())
        self._rebuild_pairs()
        self._refresh_bundle_caches()
        # initial owners
        for i, n in enumerate(sc.namespaces):
            ks = self.ns_bundles[i]
            start_brokers = [b.id for b in sc.brokers if b.join == 0]
            if n.owners == "round_robin":
                for j, k in enumerate(ks):
                    self.owner[k] = self.slot[start_brokers[j % len(start_brokers)]]
            elif n.owners == "random":
                pick = self.layout_rng.integers(0, len(start_brokers), size=len(ks))
                for k, p in zip(ks, pick.tolist()):
                    self.owner[k] = self.slot[start_brokers[p]]
            elif n.owners == "placement":
                pass  # owned at the first lookup of one of its topics
            else:
                given = set()
                for bid, idxs in n.owners:
                    for x in idxs:
                        self.owner[ks[x]] = self.slot[bid]
                        given.add(x)
        self.timeline = {}
        for e in expand_events(sc.events, sc.brokers):
            self.timeline.setdefault(e.at, []).append(e)
        # recording
        self.rec = {k: np.full((T, S), np.nan) for k in ("cpu", "bandwidth_in", "bandwidth_out", "direct_memory",
                                                           "memory", "usage", "reported_usage", "score",
                                                           "msg_rate", "throughput", "bundles", "wrote_report")}
        self.rec_alive = np.zeros((T, S), dtype=bool)
        self.events: list = []
        self.score_unit = ""
        self.cur_usage = np.zeros(S)
        self._ent = None
        self.last_check = 0
        self.cycle_no = 0
        #: the leader is the Extensible Load Manager's (tables get load_std / target_std)
        self.ext = bool(getattr(self.leader, "extensible", False))
        self.rec_target = np.full(T, np.nan)

    def _rebuild_pairs(self):
        """Aggregate topics into (bundle, workload) pairs: traffic is computed per pair each minute."""
        self._pairs_version = getattr(self, "_pairs_version", 0) + 1
        self._top_key = None
        ok = self.t_bundle >= 0
        nw = max(1, len(self.sc.workloads))
        key = self.t_bundle[ok] * nw + self.t_w[ok]
        uk, inv = np.unique(key, return_inverse=True)
        self.p_k = uk // nw
        self.p_w = uk % nw
        self.p_rate = np.bincount(inv, weights=self.t_rate[ok], minlength=len(uk))
        self.p_top = np.bincount(inv, minlength=len(uk)).astype(np.int64)
        self.p_ses = np.bincount(inv, weights=self.t_ses[ok], minlength=len(uk)).astype(np.int64)
        if len(self.sc.workloads):
            self.p_out = self.p_rate * self.w_subs[self.p_w]
            self.p_size = self.w_size[self.p_w]
        else:
            self.p_out = np.zeros(len(uk))
            self.p_size = np.zeros(len(uk))

    def _refresh_bundle_caches(self):
        """Per-bundle lookups injected into every view (they only change on splits)."""
        self.bidx = {b: k for k, b in enumerate(self.names)}
        ns_sorted = sorted(set(self.ns_names))
        ns_pos = {n: i for i, n in enumerate(ns_sorted)}
        remap = np.array([ns_pos[n] for n in self.ns_names], dtype=np.int64)
        self.v_ns_sorted = ns_sorted
        self.v_ns_index = ns_pos
        self.v_ns_id = remap[self.b_ns]
        bad = np.array([is_sla_or_heartbeat_namespace(n) for n in ns_sorted], dtype=bool)
        self.v_bad_ns = bad[self.v_ns_id]

    def _grow(self, n):
        """Make room for ``n`` new bundles (split children)."""
        def ext(a, fill):
            shape = (n,) + a.shape[1:]
            return np.concatenate([a, np.full(shape, fill, dtype=a.dtype)])
        self.b_ns = ext(self.b_ns, 0)
        self.b_lo = ext(self.b_lo, 0)
        self.b_hi = ext(self.b_hi, 0)
        self.b_active = ext(self.b_active, True)
        self.owner = ext(self.owner, -1)
        self.st = ext(self.st, 0.0)
        self.lt = ext(self.lt, 0.0)
        self.st_n = ext(self.st_n, 0)
        self.lt_n = ext(self.lt_n, 0)
        self.in_bd = ext(self.in_bd, False)
        self.bd_topics = ext(self.bd_topics, 0)
        self.keep_bd = ext(self.keep_bd, False)
        self.K += n

