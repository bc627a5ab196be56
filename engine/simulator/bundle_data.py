"""Phase 4 of a minute: the leader's ``updateAll`` — its bundle averages and the view it decides on.

Once per written report, per broker joining or leaving, and per
``loadBalancerResourceQuotaUpdateIntervalMinutes`` tick, the leader advances every reported bundle's
short-term (10 samples) and long-term (1000 samples) averages by one sample; bundles no report lists
are forgotten. :meth:`BundleDataPhase._view` builds the :class:`~engine.view.LoadView` the leader's
strategies read: the written reports (brokers in Java map order) and these averages.
"""
from __future__ import annotations

import numpy as np

from ..javacompat import java_map_rank
from ..view import BrokerInfo, LoadView
from .clock import EPOCH_MS, MINUTE_MS
from .minute import Minute

__all__ = ["BundleDataPhase", "advance"]

_INFO = BrokerInfo()


class BundleDataPhase:
    """The leader's bundle data and its view (part of :class:`Simulation`)."""

    def step_bundle_data(self, m: Minute) -> None:
        q = self.cfg.loadBalancerResourceQuotaUpdateIntervalMinutes
        t = m.t
        self._update_bundle_data(int(m.wrote.sum()) + m.changes + (1 if t > 0 and t % q == 0 else 0))

    def _alive_order(self) -> np.ndarray:
        """Running brokers with a written report, in Java ConcurrentHashMap order (brokerData)."""
        s = np.flatnonzero(self.alive & self.has_rep)
        if len(s) == 0:
            return s
        key = tuple(s.tolist())
        if getattr(self, "_order_key", None) != key:
            rank = java_map_rank([self.ids[i] for i in s], concurrent=True)
            self._order = s[np.argsort(rank, kind="stable")]
            self._order_key = key
        return self._order


    def _entries(self):
        """The leader's walk over the written reports: brokers in map order, each report's bundles.

        Returns ``(order, E_k, E_x, E_top, E_pos)``: broker slots, then per listing the bundle, its
        stats (thrIn, thrOut, rateIn, rateOut), topics and the broker's position in ``order``.
        Cached until a report changes.
        """
        if self._ent is not None:
            return self._ent
        order = self._alive_order()
        if len(order) == 0:
            z = np.zeros(0, dtype=np.int64)
            self._ent = (order, z, np.zeros((0, 4)), z, z)
            return self._ent
        ol = order.tolist()
        lists = [self.rep_list[s] for s in ol]
        E_k = np.concatenate(lists)
        E_x = np.concatenate([self.rep_stats[s] for s in ol])
        E_top = np.concatenate([self.rep_btop[s] for s in ol])
        E_pos = np.repeat(np.arange(len(ol)), [len(x) for x in lists])
        self._ent = (order, E_k, E_x, E_top, E_pos)
        return self._ent

    def _update_bundle_data(self, n_updates: int):
        """``n_updates`` leader ``updateBundleData()`` calls on the current written reports."""
        if n_updates <= 0:
            return
        order, E_k, E_x, E_top, _ = self._entries()
        K = self.K
        cnt = np.bincount(E_k, minlength=K)
        listed = cnt > 0
        new = listed & ~self.in_bd
        self.st_n[new] = 0
        self.lt_n[new] = 0
        single = cnt[E_k] == 1
        if single.all():
            ks, xs = E_k, E_x
        else:
            ks, xs = E_k[single], E_x[single]
        advance(self.st, self.st_n, 10, ks, xs, n_updates)
        advance(self.lt, self.lt_n, 1000, ks, xs, n_updates)
        if not single.all():  # a bundle in two reports (stale owner + new owner): one sample each
            dk, dx = E_k[~single], E_x[~single]
            for _ in range(n_updates):
                for k, x in zip(dk.tolist(), dx):
                    for arr, n_arr, mx in ((self.st, self.st_n, 10), (self.lt, self.lt_n, 1000)):
                        n = min(n_arr[k] + 1, mx)
                        n_arr[k] = n
                        arr[k] = ((n - 1) * arr[k] + x) / n
        self.bd_topics[E_k] = E_top
        self.in_bd = listed | self.keep_bd
        self.keep_bd[:] = False

    def _view(self, t) -> LoadView:
        """The leader's LoadView: written reports (brokers in map order) + its bundle averages."""
        order, E_k, E_x, E_top, E_pos = self._entries()
        o = order
        nb = len(o)
        lt_rate = self.lt[:, 2] + self.lt[:, 3]
        ltr = np.bincount(E_pos, lt_rate[E_k], nb) if len(E_k) else np.zeros(nb)
        v = LoadView(
            now_ms=self.now_ms(t), brokers=[self.ids[s] for s in o.tolist()],
            cpu=self.rep_pct[o, 0], memory=self.rep_pct[o, 1], direct_memory=self.rep_pct[o, 2],
            bandwidth_in=self.rep_pct[o, 3], bandwidth_out=self.rep_pct[o, 4],
            msg_rate_in=self.rep_rate[o, 0], msg_rate_out=self.rep_rate[o, 1],
            msg_throughput_in=self.rep_rate[o, 2], msg_throughput_out=self.rep_rate[o, 3],
            long_term_msg_rate=ltr, num_topics=self.rep_ntop[o].copy(),
            last_update=EPOCH_MS + self.rep_time[o] * MINUTE_MS, bundles=list(self.names),
            st=self.st.copy(), lt=self.lt.copy(), st_samples=self.st_n.copy(), lt_samples=self.lt_n.copy(),
            topics=self.bd_topics.copy(), in_bundle_data=self.in_bd.copy(),
            owned=[self.rep_list[s] for s in o.tolist()], broker_info=[_INFO] * nb)
        _prime_view(v, self)
        return v



def advance(values, nsamp, mx, ks, xs, c):
    """``c`` identical samples ``xs`` into rows ``ks`` of a TimeAverageMessageData array (closed form).

    Pulsar's update is a running mean while ``numSamples < max`` and then an exponential average with
    weight ``1/max``; ``c`` samples of ``x`` give ``v' = x + (v − x)·a`` with
    ``a = n/(n + m)·(1 − 1/max)^(c − m)``, ``m = min(c, max − n)`` samples in the mean phase.
    Same values as ``c`` calls of the update, up to floating-point rounding.
    """
    if len(ks) == 0 or c <= 0:
        return
    n = nsamp[ks]
    m1 = np.minimum(c, np.maximum(mx - n, 0))
    n1 = n + m1
    a = n / np.maximum(n1, 1)
    rest = c - m1
    if rest.any():
        a = a * np.power(1.0 - 1.0 / mx, rest)
    v = values[ks]
    values[ks] = xs + (v - xs) * a[:, None]
    nsamp[ks] = np.minimum(n1, mx)


def _prime_view(v: LoadView, sim) -> None:
    """Inject the per-bundle lookups the simulator keeps (they change only on splits) and the
    leader's bundleData membership into a freshly built view: ``LoadView`` caches these as
    ``cached_property`` values, so setting them in the instance dict is what computing them would
    store, without rebuilding a 10,000-entry dict every minute."""
    d = v.__dict__
    d["bundle_index"] = sim.bidx
    d["namespaces"] = sim.v_ns_sorted
    d["namespace_index"] = sim.v_ns_index
    d["bundle_namespace_id"] = sim.v_ns_id
    d["sheddable"] = v.in_bundle_data & ~sim.v_bad_ns

