"""The simulation of a snapshot scenario: :class:`SnapshotSimulation` and its seeded leaders.

:mod:`engine.simulator.from_snapshot` builds the :class:`~engine.simulator.from_snapshot.SnapshotScenario`;
this module runs it: the snapshot's bundles, owners and steady traffic instead of workloads, each
broker's reported usage plus the cost of the traffic that moved, the leader (modular or extensible)
seeded with the snapshot's grace-period maps and strategy state.
"""
from __future__ import annotations

import copy

import numpy as np

from ..errors import InputError
from ..javacompat import percent_usage_array
from ..strategies.spec import EXTENSIBLE
from .clock import EPOCH_MS, MIB, MINUTE_MS
from .leader import ModularLeader
from .pairing import load_manager_of
from .run import Simulation

__all__ = ["SnapshotSimulation"]


class SnapshotSimulation(Simulation):
    """:class:`~engine.simulator.run.Simulation` of a
    :class:`~engine.simulator.from_snapshot.SnapshotScenario`: the snapshot's bundles, owners and steady
    traffic instead of workloads, each broker's reported usage plus the cost of the traffic that moved
    (module docs), the leader seeded with the snapshot's memory."""

    def __init__(self, scenario, config, seed=None, minutes=None, leader=None):
        st = scenario.start
        if st is None:
            raise InputError("a snapshot scenario without its snapshot", source=scenario.source)
        self.start = st
        interval = max(1, int(config.loadBalancerSheddingIntervalMinutes))
        #: added to every timestamp of the snapshot: the first check runs at the snapshot's time
        self.shift = (EPOCH_MS + interval * MINUTE_MS) - int(st.now_ms)
        if leader is None:
            leader = self._make_leader
        super().__init__(scenario, config, seed=seed, minutes=minutes, leader=leader)

    # ------------------------------------------------------------------ leader
    def _rebased(self, d: dict) -> dict:
        return {k: int(v) + self.shift for k, v in d.items()}

    def _make_leader(self, config, seed=None):
        """The leader of :func:`~engine.simulator.leader.make_leader`'s load manager, seeded with the
        snapshot's memory."""
        st = self.start
        if load_manager_of(config) == EXTENSIBLE:
            ldr = _SnapshotExtensibleLeader(config, seed=seed)
            ldr.seed_from(st, self.shift)
            return ldr
        ldr = _SnapshotModularLeader(config, seed)
        ldr.seeds = (self._rebased(st.recently_unloaded), st.strategy_state)
        return ldr

    # ------------------------------------------------------------------ setup
    def _build(self):
        super()._build()
        st = self.start
        S = self.S
        self.lim = np.asarray(st.limit, dtype=float).copy()
        self.cores = self.lim[:, 0] / 100.0
        self.heap_mb = self.lim[:, 1]
        self.dm_mb = self.lim[:, 2]
        self.nic_kbps = self.lim[:, 3]
        # the snapshot's bundles replace the equal ranges the namespaces were built with
        names = list(st.bundles)
        self.names = names
        K = len(names)
        assert K == self.K, "namespaces were built from the same bundles"
        self.b_lo = np.array([lo for lo, _ in st.bounds], dtype=np.int64)
        self.b_hi = np.array([hi for _, hi in st.bounds], dtype=np.int64)
        for i in range(len(self.ns_names)):
            ks = self.ns_bundles[i]
            self.ns_bounds[i] = np.asarray([int(self.b_lo[ks[0]])] + [int(self.b_hi[k]) for k in ks], dtype=np.int64)
        self.owner = np.asarray(st.owner, dtype=np.int64).copy()
        self._refresh_bundle_caches()
        self.bt = np.asarray(st.traffic, dtype=float)
        self._top_c = np.asarray(st.topics, dtype=np.int64)
        self._ses_c = np.asarray(st.sessions, dtype=np.int64)
        # what each broker's bundles carried in the snapshot (the base of the deltas)
        self.base_rates = self._per_broker(self.bt)
        self.base_ntop = np.bincount(self.owner, self._top_c, S).astype(np.int64)
        self.snap_usage = np.asarray(st.usage, dtype=float)
        self.snap_rates = np.asarray(st.rates, dtype=float)
        self._seeded_bd = False
        self._ltr0 = None
        self.info_of = dict(zip(st.brokers, st.broker_info)) if st.broker_info else None
        self.ntop_of = dict(zip(st.brokers, st.num_topics.tolist())) if st.num_topics is not None else None
        self.ltr_of = dict(zip(st.brokers, st.long_term_msg_rate.tolist())) if st.long_term_msg_rate is not None else None

    def _per_broker(self, x: np.ndarray) -> np.ndarray:
        o = np.where(self.b_active & (self.owner >= 0), self.owner, self.S)
        return np.column_stack([np.bincount(o, x[:, j], self.S + 1)[:self.S] for j in range(x.shape[1])])

    # ------------------------------------------------------------------ traffic and usage
    def _auto_split(self, t):
        return False  # no topic names in a snapshot: bundles do not split (module docs)

    def _topics(self, t):
        return self._top_c, self._ses_c

    def _traffic(self, t):
        x = self.bt
        sig = self.sc.noise.traffic
        if sig > 0:
            f = 1.0 + (sig * 3.4641016151377544) * (self.rng_traffic.random(self.K) - 0.5)
            np.maximum(f, 0.0, out=f)
            x = x * f[:, None]
        return x[:, 0], x[:, 1], x[:, 2], x[:, 3]

    def _usage(self, t, r_in, r_out, t_in, t_out, top):
        S, cost = self.S, self.sc.cost
        now = self._per_broker(np.column_stack([r_in, r_out, t_in, t_out]))
        d = now - self.base_rates  # exactly 0 on the unchanged snapshot
        rates = np.maximum(self.snap_rates + d, 0.0)
        u = self.snap_usage
        cpu = u[:, 0] + 100.0 * cost.cpu_per_msg_in * (d[:, 0] + d[:, 1])
        if self.sc.noise.cpu > 0:
            cpu = cpu + self.sc.noise.cpu * self.lim[:, 0] / 100.0 * self.rng_cpu.standard_normal(S)
        cpu = np.clip(cpu, 0.0, np.maximum(self.lim[:, 0], u[:, 0]))
        heap = u[:, 1]
        if self.sc.noise.heap > 0:
            heap = np.clip(heap + self.sc.noise.heap * self.lim[:, 1] / 100.0 * self.rng_cpu.standard_normal(S),
                           0.0, None)
        dm = np.maximum(u[:, 2] + cost.direct_memory_per_mib * (d[:, 2] + d[:, 3]) / MIB, 0.0)
        bw_in = np.maximum(u[:, 3] + d[:, 2] * 8.0 / 1000.0, 0.0)
        bw_out = np.maximum(u[:, 4] + (d[:, 3] + cost.replication * d[:, 2]) * 8.0 / 1000.0, 0.0)
        self._raw = (cpu, heap, dm, bw_in, bw_out)
        pct = np.column_stack([percent_usage_array(x, self.lim[:, j]) for j, x in enumerate(self._raw)])
        o = np.where(self.b_active & (self.owner >= 0), self.owner, S)
        nb = np.bincount(np.where(top > 0, o, S), minlength=S + 1)[:S].astype(np.int64)
        return pct, rates, nb

    def _broker_reports(self, t, *args):
        r = super()._broker_reports(t, *args)
        al = np.flatnonzero(self.alive)
        r.limit = self.lim[al]
        if self.ntop_of is None:  # ELM: topics as reported, plus those of the bundles that moved
            r.topics = np.asarray(r.topics) + self._topic_offset()[al]
        return r

    def _topic_offset(self) -> np.ndarray:
        st = self.start
        if st.elm is not None:
            rep = np.array([st.elm.broker_load_data[b].topics for b in self.ids], dtype=np.int64)
        else:
            rep = np.asarray(st.num_topics, dtype=np.int64)
        return rep - self.base_ntop

    # ------------------------------------------------------------------ leader memory
    def _update_bundle_data(self, n_updates: int):
        super()._update_bundle_data(n_updates)
        st = self.start
        if n_updates > 0 and not self._seeded_bd and st.st is not None:
            self._seeded_bd = True  # the snapshot's bundle data is the leader's at the start
            m = np.asarray(st.in_bd, dtype=bool) & self.in_bd[:len(st.bundles)]
            ks = np.flatnonzero(m)
            self.st[ks], self.lt[ks] = st.st[ks], st.lt[ks]
            self.st_n[ks], self.lt_n[ks] = st.st_n[ks], st.lt_n[ks]

    def _view(self, t):
        v = super()._view(t)
        if self.info_of is not None:
            from ..view import BrokerInfo

            v.broker_info = [self.info_of.get(b) or BrokerInfo() for b in v.brokers]
            v.resource_quotas = dict(self.start.resource_quotas)
        if self.ntop_of is not None:
            off = self._topic_offset()
            v.num_topics = v.num_topics + off[[self.slot[b] for b in v.brokers]]
        if self.ltr_of is not None:
            cur = np.asarray(v.long_term_msg_rate, dtype=float)
            if self._ltr0 is None:  # the first view: the brokers' long-term rates as the snapshot has them
                self._ltr0 = dict(zip(v.brokers, cur.tolist()))
            v.long_term_msg_rate = np.array([self.ltr_of[b] + (c - self._ltr0.get(b, c))
                                             for b, c in zip(v.brokers, cur.tolist())])
        return v


class _SnapshotModularLeader(ModularLeader):
    """The modular leader whose manager starts with the snapshot's grace-period map and strategy state."""

    seeds = None

    def observe(self, view) -> None:
        first = self.manager is None
        super().observe(view)
        if first and self.seeds is not None:
            recent, state = self.seeds
            m = self.manager
            for b, t in recent.items():
                m.recently_unloaded[b] = max(int(t), m.recently_unloaded.get(b, 0))
            if state:  # the snapshot's values (or their to_json() dicts), keyed by strategy name
                m.restore_states(shedding=state.get(m.shedding.name), placement=state.get(m.placement.name))
            self.seeds = None


def _elm_leader_classes():
    from ..extensible.sim_leader import ExtensibleLeader, SimulatedBrokers

    class SnapshotBrokers(SimulatedBrokers):
        """The brokers' side starting from the snapshot: at minute 0 their load data *is* the published
        ``BrokerLoadData`` (timestamps shifted), their top-K the snapshot's; then they report as usual."""

        def __init__(self, data: dict, tops: dict):
            super().__init__()
            self._pending = (data, tops)
            self._kept: dict = {}

        @staticmethod
        def _key(lst) -> set:
            return {(x.bundle_name, x.stats.msg_rate_in, x.stats.msg_throughput_in, x.stats.msg_rate_out,
                     x.stats.msg_throughput_out) for x in lst}

        def report(self, r, conf) -> None:
            if self._pending is None:
                super().report(r, conf)
                # a broker whose bundles and their stats are still the snapshot's republishes the list
                # it published (same entries; kept in the snapshot's order, which decides ties)
                for b, lst in list(self._kept.items()):
                    if b in self.top and self._key(self.top[b]) == self._key(lst):
                        self.top[b] = list(lst)
                    else:
                        del self._kept[b]
                return
            data, tops = self._pending
            self._kept = {b: list(tops.get(b, [])) for b in data}
            self._pending = None
            rest = [b for b in r.brokers if b not in data]
            for b in r.brokers:
                if b in data:
                    self.local[b] = copy.copy(data[b])
                    self.store[b] = copy.copy(data[b])
                    self.published_minute[b] = int(r.minute)
                    self.top[b] = list(tops.get(b, []))
            if rest:  # not expected (every simulated broker has load data); report them normally
                super().report(r, conf)

    class SnapshotExtensibleLeader(ExtensibleLeader):
        """The ELM leader reading the snapshot's registry, grace-period maps and hit count first."""

        _seed = None
        _lookup = None

        def seed_from(self, st, shift: int) -> None:
            ext = st.elm
            data = {}
            for b in st.brokers:
                d = copy.copy(ext.broker_load_data[b])
                d.updated_at = int(d.updated_at) + shift
                d.reported_at = int(d.reported_at) + shift if d.reported_at else d.reported_at
                data[b] = d
            self.brokers = SnapshotBrokers(data, {b: ext.top_bundles.get(b, []) for b in st.brokers})
            self._lookup = None if ext.lookup is None else dict(ext.lookup)
            self._seed = ({k: int(v) + shift for k, v in st.recently_unloaded.items()},
                          {k: int(v) + shift for k, v in st.recently_unloaded_brokers.items()},
                          copy.deepcopy(st.strategy_state))

        def take_over(self, previous) -> None:
            super().take_over(previous)
            self._lookup = getattr(previous, "_lookup", None)

        def snapshot(self, registry, now_ms):
            data = super().snapshot(registry, now_ms)
            if self._lookup is not None:
                from ..extensible.snapshot import BrokerLookupData

                data.lookup = {b: self._lookup.get(b) or BrokerLookupData(None) for b in registry}
            if self._seed is not None:
                data.recently_unloaded, data.recently_unloaded_brokers, data.strategy_state = self._seed
                self._seed = None
            return data

    return SnapshotExtensibleLeader


_ELM_CLASS = None


def _SnapshotExtensibleLeader(config, seed=None):
    global _ELM_CLASS
    if _ELM_CLASS is None:
        _ELM_CLASS = _elm_leader_classes()
    return _ELM_CLASS(config, seed=seed)
