"""Columnar, read-only view of a ``LoadData`` snapshot: what the strategies read.

Strategies never walk Python objects per bundle: they read numpy arrays (per broker and per bundle)
from a :class:`LoadView`. A view is built from a :class:`engine.model.LoadData`
(:meth:`LoadView.from_load_data`) or directly from arrays (:meth:`LoadView.from_arrays`, used by
the simulator and the benchmarks), so a 1,000-broker, 100,000-bundle cycle stays well under 100 ms.

Order matters for fidelity: :attr:`LoadView.brokers` is in Java ``ConcurrentHashMap`` iteration
order (how Pulsar iterates ``loadData.brokerData``), and :meth:`LoadView.shed_rank` gives each bundle's
position in the ``HashMap`` returned by ``getBundleDataForLoadShedding()``, which breaks ties in
Pulsar's stable sorts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import repeat
from operator import itemgetter
from typing import Mapping, Sequence

import numpy as np

from .javacompat import hashmap_capacity, java_map_rank, java_max_rows, java_string_hashes, percent_usage_array
from .model import (
    BundleData,
    LoadData,
    TimeAverageMessageData,
    bundle_namespace,
    default_bundle_data,
    is_sla_or_heartbeat_namespace,
)
from .packed import pack_names, unpack_names

__all__ = ["LoadView", "BrokerInfo"]

_F = np.float64

# Facts derived from the bundle-name list alone (namespaces, Java hashes) are cached by the list's
# identity: a simulator or a timeline builds a new view every minute over the same names.
_NAME_CACHE: list = []

#: the sample counts a view built from arrays gives each bundle's short- and long-term data when none
#: are given (a full window of each)
DEFAULT_ST_SAMPLES, DEFAULT_LT_SAMPLES = 10, 1000


def _known_name_facts(bundles: list) -> dict | None:
    """The name facts kept for the list object ``bundles``, or ``None`` (none added)."""
    for obj, facts in _NAME_CACHE:
        if obj is bundles and facts["n"] == len(bundles):
            return facts
    return None


def _name_facts(bundles: list) -> dict:
    facts = _known_name_facts(bundles)
    if facts is not None:
        return facts
    facts = {"n": len(bundles)}
    _NAME_CACHE.insert(0, (bundles, facts))
    del _NAME_CACHE[4:]
    return facts


def namespace_facts(bundles: list) -> dict:
    """The namespaces of the bundle names ``bundles``: ``namespaces`` (sorted), ``namespace_index`` (each
    one's position there), ``ns_id`` (per bundle, its namespace's position) and ``bad_ns`` (per namespace:
    an SLA-monitor or heartbeat one). A bundle's namespace is everything before the last ``/``, or the whole
    name."""
    # by rpartition in C (a million bundles: ~0.1 s less than a slice each), which gives "" for a name
    # without "/"
    per = list(map(itemgetter(0), map(str.rpartition, bundles, repeat("/"))))
    found = set(per)
    if "" in found:  # "" is a namespace only of names starting with "/": slice each name
        per = [b[:i] if (i := b.rfind("/")) >= 0 else b for b in bundles]
        found = set(per)
    nss = sorted(found)
    idx = {ns: i for i, ns in enumerate(nss)}
    return {"namespaces": nss, "namespace_index": idx,
            "ns_id": np.array(list(map(idx.__getitem__, per)), dtype=np.int64),
            "bad_ns": np.array([is_sla_or_heartbeat_namespace(ns) for ns in nss], dtype=bool)}


def remember_namespace_facts(bundles: list, facts: dict) -> None:
    """Give views over ``bundles`` their :func:`namespace_facts`, computed already (by the reader)."""
    f = _name_facts(bundles)
    if "namespaces" not in f:
        f.update(facts)


def remember_bundle_index(bundles: list, index: dict) -> None:
    """Give :attr:`LoadView.bundle_index` of views over ``bundles`` the index their reader built already
    (``index``: a plain dict, each name of ``bundles`` to its position)."""
    _name_facts(bundles).setdefault("index", index)


#: a namespace can only be an SLA-monitor or heartbeat one (``is_sla_or_heartbeat_namespace``) when
#: its name starts so
_SYSTEM_PREFIXES = ("pulsar/", "sla-monitor/")


def _system_name_mask(bundles: list) -> np.ndarray:
    """Per bundle name: its namespace (everything before the last ``/``) is an SLA-monitor or heartbeat
    namespace. One search through the joined names finds those starting with a system prefix; only
    they are split and matched."""
    n = len(bundles)
    out = np.zeros(n, dtype=bool)
    joined = "\n".join(bundles)
    hits = []
    for pre in _SYSTEM_PREFIXES:
        if joined.startswith(pre):
            hits.append(0)
        at = joined.find("\n" + pre)
        while at >= 0:
            hits.append(at + 1)
            at = joined.find("\n" + pre, at + 1)
    if not hits:
        return out
    # the names holding a hit (a name holding a newline itself may be one: its namespace decides)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, bundles), dtype=np.int64, count=n)[:-1] + 1, out=starts[1:])
    seen: dict = {}
    for k in set((np.searchsorted(starts, hits, side="right") - 1).tolist()):
        ns = bundle_namespace(bundles[k])
        bad = seen.get(ns)
        if bad is None:
            bad = seen[ns] = is_sla_or_heartbeat_namespace(ns)
        out[k] = bad
    return out


@dataclass(frozen=True)
class BrokerInfo:
    """Per-broker facts the placement filters need that are not numbers."""

    load_manager_class_name: str | None = None
    version: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True


#: the facts of a broker that reported none of them (frozen: one shared value)
_NO_INFO = BrokerInfo()

# owned-bundle lists of the last owner arrays: a backtest or a simulator minute often has the same
# owners as the one before (compared by value; the index arrays are never written)
_OWNED_CACHE: list = []


def _owned_lists(owner: np.ndarray, valid: np.ndarray, nb: int) -> list:
    """``(owned, counts)``: ``owned[j]`` the indices of the bundles owned by broker ``j`` (bundle index
    order; ``owner[k]`` = -1 for none), ``counts[j]`` their number. A new list each call; the index
    arrays are shared with earlier calls on equal owners."""
    for got_owner, got_nb, got, got_counts in _OWNED_CACHE:
        if got_nb == nb and np.array_equal(got_owner, owner):
            return list(got), got_counts.copy()
    nk = len(owner)
    srt = np.argsort(owner, kind="stable")
    counts = np.bincount(owner[valid], minlength=nb)
    starts = np.concatenate(([0], np.cumsum(counts))) + (nk - int(valid.sum()))
    s = starts.tolist()
    owned = [srt[s[j]:s[j + 1]] for j in range(nb)]
    counts = counts[:nb].astype(np.int64)
    _OWNED_CACHE.insert(0, (owner.copy(), nb, owned, counts.copy()))
    del _OWNED_CACHE[4:]
    return list(owned), counts


def broker_columns(brokers: Mapping, order: Sequence[str], bundle_index: Mapping[str, int],
                   names: list | None = None, given: Mapping | None = None) -> dict:
    """The per-broker fields of a :class:`LoadView` from the snapshot's ``BrokerData``, in ``order``.

    Resource percentages (``percent_usage_array`` of usage and limit), the report's rates and
    throughputs, the time-average long-term message rate, topic counts, report times, the owned
    bundles' indices (``bundle_index``) and the :class:`BrokerInfo`. With ``names`` (the view's bundle
    list), each report's ``bundles`` is rebound to those same ``str`` objects (one copy in memory and
    in pickles). ``given`` (broker id -> its owned indices and that list of names), from a reader that
    looked the names up already, is taken as it is. One loop serves :meth:`LoadView.from_load_data` and
    the fast JSON reader.
    """
    nb = len(order)
    f = {k: np.zeros(nb) for k in ("cpu_u", "cpu_l", "mem_u", "mem_l", "dm_u", "dm_l", "in_u", "in_l", "out_u",
                                   "out_l", "ri", "ro", "ti", "to", "ltr")}
    ntop = np.zeros(nb, dtype=np.int64)
    lup = np.zeros(nb, dtype=np.int64)
    owned, info = [], []
    index = bundle_index.__getitem__
    for j, bid in enumerate(order):
        bd = brokers[bid]
        L = bd.local
        for key, r in (("cpu", L.cpu), ("mem", L.memory), ("dm", L.direct_memory), ("in", L.bandwidth_in),
                       ("out", L.bandwidth_out)):
            f[key + "_u"][j] = r.usage
            f[key + "_l"][j] = r.limit
        f["ri"][j], f["ro"][j] = L.msg_rate_in, L.msg_rate_out
        f["ti"][j], f["to"][j] = L.msg_throughput_in, L.msg_throughput_out
        ta = bd.time_average
        f["ltr"][j] = ta.long_term_msg_rate_in + ta.long_term_msg_rate_out
        ntop[j] = L.num_topics
        lup[j] = L.last_update
        got = given.get(bid) if given else None
        if got is not None:
            owned.append(got[0])
            if names is not None:
                L.bundles = got[1]
        else:
            own = list(map(index, L.bundles))
            owned.append(np.array(own, dtype=np.int64))
            if names is not None:
                L.bundles = list(map(names.__getitem__, own))
        info.append(BrokerInfo(L.load_manager_class_name, L.broker_version_string, L.persistent_topics_enabled,
                               L.non_persistent_topics_enabled))
    return dict(
        cpu=percent_usage_array(f["cpu_u"], f["cpu_l"]), memory=percent_usage_array(f["mem_u"], f["mem_l"]),
        direct_memory=percent_usage_array(f["dm_u"], f["dm_l"]),
        bandwidth_in=percent_usage_array(f["in_u"], f["in_l"]),
        bandwidth_out=percent_usage_array(f["out_u"], f["out_l"]),
        msg_rate_in=f["ri"], msg_rate_out=f["ro"], msg_throughput_in=f["ti"], msg_throughput_out=f["to"],
        long_term_msg_rate=f["ltr"], num_topics=ntop, last_update=lup, owned=owned, broker_info=info)


@dataclass(eq=False)
class LoadView:
    """Arrays describing one moment of the cluster as the leader sees it.

    Per broker (length ``nb``, in :attr:`brokers` order): resource percentages (float32-derived),
    message rates and throughputs of the load report, the long-term message rate of its time-average
    data, topic counts, report time. Per bundle (length ``nk``): short/long-term averages, topics,
    whether it is in ``bundleData`` and not an SLA/heartbeat bundle (``sheddable``), its namespace.
    Ownership: ``owned[i]`` = indices of the bundles broker ``i`` lists in its ``bundles`` set.
    """

    now_ms: int
    brokers: list
    cpu: np.ndarray
    memory: np.ndarray
    direct_memory: np.ndarray
    bandwidth_in: np.ndarray
    bandwidth_out: np.ndarray
    msg_rate_in: np.ndarray
    msg_rate_out: np.ndarray
    msg_throughput_in: np.ndarray
    msg_throughput_out: np.ndarray
    long_term_msg_rate: np.ndarray  # timeAverageData longTermMsgRateIn + Out
    num_topics: np.ndarray
    last_update: np.ndarray
    bundles: list
    st: np.ndarray  # (nk, 4): short-term thrIn, thrOut, rateIn, rateOut
    lt: np.ndarray  # (nk, 4): long-term  thrIn, thrOut, rateIn, rateOut
    st_samples: np.ndarray
    lt_samples: np.ndarray
    topics: np.ndarray
    in_bundle_data: np.ndarray  # bool
    owned: list  # list of int arrays
    broker_info: list = field(default_factory=list)
    st_max: int = 10
    lt_max: int = 1000
    #: bundle -> ResourceQuota of the snapshot (``LoadData.resource_quotas``): the default BundleData
    #: of a bundle without bundle-data starts from it, as in ``getBundleDataOrDefault``
    resource_quotas: dict = field(default_factory=dict)
    #: each broker's bundles carry equal short- and long-term values (a broker's load split evenly, as a
    #: backtest's synthetic bundles are): sorted by any of those values, largest first, a broker's bundles
    #: all tie, so they come in :attr:`shed_rank` order, :attr:`owned_in_shed_order`
    even_shares: bool = False

    def __copy__(self):  # a shallow copy shares the bundle list (and so what is cached for it), as by default
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self):  # the bundle names as one text (engine.packed): a stored snapshot pickles faster
        state = dict(self.__dict__)
        state["bundles"] = pack_names(state["bundles"])
        return state

    def __setstate__(self, state):
        state["bundles"] = unpack_names(state["bundles"])
        self.__dict__.update(state)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_load_data(cls, ld: LoadData) -> "LoadView":
        """Build the view of a snapshot (missing bundle data derived as Pulsar's leader does)."""
        pre = getattr(ld, "prebuilt_view", None)  # engine.fastload: built from the JSON's columns
        if pre is not None:
            v = pre()
            if v is not None:
                return v
        ld.ensure_bundle_data()
        order = ld.broker_order()
        names: dict[str, int] = {}
        for b in ld.bundle_data:
            names.setdefault(b, len(names))
        for bid in order:
            for b in ld.brokers[bid].local.bundles:
                names.setdefault(b, len(names))
        nk = len(names)
        st = np.zeros((nk, 4))
        lt = np.zeros((nk, 4))
        st_n = np.zeros(nk, dtype=np.int64)
        lt_n = np.zeros(nk, dtype=np.int64)
        topics = np.zeros(nk, dtype=np.int64)
        inbd = np.zeros(nk, dtype=bool)
        for b, d in ld.bundle_data.items():
            i = names[b]
            s, t = d.short_term, d.long_term
            st[i] = (s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in, s.msg_rate_out)
            lt[i] = (t.msg_throughput_in, t.msg_throughput_out, t.msg_rate_in, t.msg_rate_out)
            st_n[i], lt_n[i], topics[i] = s.num_samples, t.num_samples, d.topics
            inbd[i] = True
        # time averages: recompute from bundle data when the snapshot gave none
        for bid in order:
            bd = ld.brokers[bid]
            if not any(bd.time_average.values()) and bd.local.last_stats:
                bd.time_average.reset(bd.local.last_stats.keys(), ld.bundle_data)
        return cls(
            now_ms=ld.now, brokers=order, **broker_columns(ld.brokers, order, names),
            bundles=list(names), st=st, lt=lt, st_samples=st_n, lt_samples=lt_n, topics=topics,
            in_bundle_data=inbd, resource_quotas=dict(ld.resource_quotas),
        )

    @classmethod
    def from_arrays(cls, *, brokers: Sequence[str], bundles: Sequence[str], owner: np.ndarray,
                    cpu, direct_memory=None, bandwidth_in=None, bandwidth_out=None, memory=None,
                    msg_rate_in=None, msg_rate_out=None, msg_throughput_in=None, msg_throughput_out=None,
                    long_term_msg_rate=None, num_topics=None, st=None, lt=None, st_samples=None,
                    lt_samples=None, topics=None, now_ms: int = 0, last_update=None,
                    java_order: bool = True, broker_info=None) -> "LoadView":
        """Build a view from arrays (percentages already computed, e.g. by the simulator).

        ``owner[k]`` is the broker index (into ``brokers``) of bundle ``k`` (-1 for unowned). Broker
        report rates/throughputs default to the sums of the owned bundles' short-term values and the
        long-term broker rate to the sum of the long-term values. With ``java_order`` the brokers are
        reordered into Java ``ConcurrentHashMap`` order (all arrays follow).
        """
        brokers = list(brokers)
        nb, nk = len(brokers), len(bundles)
        owner = np.asarray(owner, dtype=np.int64)
        z = np.zeros(nb)
        st = np.zeros((nk, 4)) if st is None else np.asarray(st, dtype=_F)
        lt = st.copy() if lt is None else np.asarray(lt, dtype=_F)
        valid = owner >= 0

        def per_broker(col_arr):
            return np.bincount(owner[valid], weights=col_arr[valid], minlength=nb).astype(_F)

        if msg_throughput_in is None:
            msg_throughput_in = per_broker(st[:, 0])
        if msg_throughput_out is None:
            msg_throughput_out = per_broker(st[:, 1])
        if msg_rate_in is None:
            msg_rate_in = per_broker(st[:, 2])
        if msg_rate_out is None:
            msg_rate_out = per_broker(st[:, 3])
        if long_term_msg_rate is None:
            long_term_msg_rate = per_broker(lt[:, 2] + lt[:, 3])
        topics = np.zeros(nk, dtype=np.int64) if topics is None else np.asarray(topics, dtype=np.int64)
        if num_topics is None:
            num_topics = np.bincount(owner[valid], weights=topics[valid], minlength=nb).astype(np.int64)
        order = np.argsort(java_map_rank(brokers, concurrent=True)) if java_order else np.arange(nb)
        if java_order:
            inv = np.empty(nb, dtype=np.int64)
            inv[order] = np.arange(nb)
            new_owner = np.where(valid, inv[np.where(valid, owner, 0)], -1)
        else:
            new_owner = np.where(valid, owner, -1)
        owned, counts = _owned_lists(new_owner, valid, nb)
        order_l = order.tolist()

        def o(a, default=z):
            a = default if a is None else np.asarray(a, dtype=_F)
            return a[order]

        view = cls(
            now_ms=int(now_ms), brokers=[brokers[i] for i in order_l] if java_order else brokers,
            cpu=o(cpu), memory=o(memory), direct_memory=o(direct_memory), bandwidth_in=o(bandwidth_in),
            bandwidth_out=o(bandwidth_out), msg_rate_in=o(msg_rate_in), msg_rate_out=o(msg_rate_out),
            msg_throughput_in=o(msg_throughput_in), msg_throughput_out=o(msg_throughput_out),
            long_term_msg_rate=o(long_term_msg_rate),
            num_topics=np.asarray(num_topics, dtype=np.int64)[order],
            last_update=(np.full(nb, now_ms, dtype=np.int64) if last_update is None
                         else np.asarray(last_update, dtype=np.int64)[order]),
            bundles=list(bundles), st=st, lt=lt,
            st_samples=(np.full(nk, DEFAULT_ST_SAMPLES, dtype=np.int64) if st_samples is None else np.asarray(st_samples)),
            lt_samples=(np.full(nk, DEFAULT_LT_SAMPLES, dtype=np.int64) if lt_samples is None else np.asarray(lt_samples)),
            topics=topics, in_bundle_data=np.ones(nk, dtype=bool), owned=owned,
            broker_info=[broker_info[i] for i in order_l] if broker_info else [_NO_INFO] * nb,
        )
        view.__dict__["num_bundles"] = counts  # the cached property, known here
        return view

    #: what :meth:`at_minute` carries over: derived from the brokers, the bundle names, ``bundleData``,
    #: the ownership and the broker infos alone (never from a minute's load)
    _FIXED_FACTS = ("num_bundles", "broker_index", "broker_set", "sheddable", "_shed_capacities",
                    "owned_in_shed_order", "first_in_shed_order", "owners", "shed_rank", "persistent_ok",
                    "non_persistent_ok", "name_rank", "broker_map_rank", "owned_flat")

    def at_minute(self, *, now_ms: int, cpu, memory, direct_memory, bandwidth_in, bandwidth_out, msg_rate_in,
                  msg_rate_out, msg_throughput_in, msg_throughput_out, st, lt) -> "LoadView":
        """The view of another minute over this view's brokers, bundles and ownership: what
        :meth:`from_arrays` builds from the same arrays (``java_order=False``, sample counts, topics and
        broker infos as this view's, ``last_update`` = ``now_ms``, the long-term broker rate the owned
        bundles' sum), without deriving again what depends on the names and the ownership alone
        (:data:`_FIXED_FACTS`, shared with this view). The arrays are kept as given, not copied: the
        caller hands over float64 arrays it never writes to again."""
        nb, nk = len(self.brokers), len(self.bundles)
        if st.shape != (nk, 4) or lt.shape != (nk, 4):
            raise ValueError("st and lt must have one row per bundle of the view")
        # (each broker's bundles in bundle order, as from_arrays lists them: the same sums, added in the same
        # order, as over the bundles' owners)
        flat, grp = self.owned_flat
        view = LoadView(
            now_ms=int(now_ms), brokers=self.brokers, cpu=cpu, memory=memory, direct_memory=direct_memory,
            bandwidth_in=bandwidth_in, bandwidth_out=bandwidth_out, msg_rate_in=msg_rate_in,
            msg_rate_out=msg_rate_out, msg_throughput_in=msg_throughput_in, msg_throughput_out=msg_throughput_out,
            long_term_msg_rate=np.bincount(grp, weights=(lt[:, 2] + lt[:, 3])[flat], minlength=nb).astype(_F),
            num_topics=self.num_topics, last_update=np.full(nb, now_ms, dtype=np.int64), bundles=self.bundles,
            st=st, lt=lt, st_samples=self.st_samples, lt_samples=self.lt_samples, topics=self.topics,
            in_bundle_data=self.in_bundle_data, owned=self.owned, broker_info=self.broker_info,
            st_max=self.st_max, lt_max=self.lt_max, resource_quotas=self.resource_quotas,
            even_shares=self.even_shares)
        d, mine = view.__dict__, self.__dict__
        for k in self._FIXED_FACTS:
            if k in mine:
                d[k] = mine[k]
        return view

    # ------------------------------------------------------------------ lookups
    @cached_property
    def broker_index(self) -> dict:
        return {b: i for i, b in enumerate(self.brokers)}

    @cached_property
    def broker_set(self) -> frozenset:
        """The brokers as a set (what a strategy's ``on_active_brokers_change`` is handed; a replay's
        later minutes share their first view's)."""
        return frozenset(self.brokers)

    @property
    def bundle_index(self) -> dict:
        got = self.__dict__.get("_bundle_index")  # (names list, its length, index): asked per placement
        if got is not None and got[0] is self.bundles and got[1] == len(self.bundles):
            return got[2]
        f = _name_facts(self.bundles)
        if "index" not in f:
            f["index"] = dict(zip(self.bundles, range(len(self.bundles))))
        self.__dict__["_bundle_index"] = (self.bundles, len(self.bundles), f["index"])
        return f["index"]

    @property
    def nb(self) -> int:
        return len(self.brokers)

    @property
    def nk(self) -> int:
        return len(self.bundles)

    @cached_property
    def msg_rate(self) -> np.ndarray:
        """``msgRateIn + msgRateOut`` of each broker's report."""
        with np.errstate(over="ignore"):  # doubles overflow to Infinity, as in Java
            return self.msg_rate_in + self.msg_rate_out

    @cached_property
    def msg_throughput(self) -> np.ndarray:
        """``msgThroughputIn + msgThroughputOut`` of each broker's report."""
        with np.errstate(over="ignore"):
            return self.msg_throughput_in + self.msg_throughput_out

    @cached_property
    def short_rate(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.st[:, 2] + self.st[:, 3]

    @cached_property
    def short_throughput(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.st[:, 0] + self.st[:, 1]

    @cached_property
    def long_rate(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.lt[:, 2] + self.lt[:, 3]

    @cached_property
    def long_throughput(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.lt[:, 0] + self.lt[:, 1]

    @cached_property
    def num_bundles(self) -> np.ndarray:
        """Size of each broker's ``bundles`` set."""
        return np.fromiter((len(o) for o in self.owned), dtype=np.int64, count=self.nb)

    def _ns_facts(self) -> dict:
        f = _name_facts(self.bundles)
        if "namespaces" not in f:
            f.update(namespace_facts(self.bundles))
        return f

    @property
    def namespaces(self) -> list:
        return self._ns_facts()["namespaces"]

    @property
    def namespace_index(self) -> dict:
        return self._ns_facts()["namespace_index"]

    @property
    def bundle_namespace_id(self) -> np.ndarray:
        return self._ns_facts()["ns_id"]

    def _system_names(self) -> np.ndarray:
        """Per bundle: its namespace is an SLA-monitor or heartbeat one (bool array)."""
        f = _name_facts(self.bundles)
        if "system" not in f:
            if "bad_ns" in f:  # the namespaces are known already
                f["system"] = f["bad_ns"][f["ns_id"]]
            else:
                f["system"] = _system_name_mask(self.bundles)
        return f["system"]

    @cached_property
    def sheddable(self) -> np.ndarray:
        """In ``getBundleDataForLoadShedding()``: has BundleData and is not an SLA/heartbeat bundle."""
        if self.nk == 0:
            return np.zeros(0, dtype=bool)
        return self.in_bundle_data & ~self._system_names()

    @cached_property
    def _shed_capacities(self) -> tuple[int, int]:
        """Table sizes of ``bundleData`` (a ``ConcurrentHashMap``) and of the ``HashMap`` that
        ``getBundleDataForLoadShedding()`` fills from it."""
        return (hashmap_capacity(int(self.in_bundle_data.sum()), concurrent=True),
                hashmap_capacity(int(self.sheddable.sum())))

    def shed_keys(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(map_key, chm_bucket)`` of the bundles ``ks``: ordering bundles by ``(map_key, chm_bucket,
        index)`` is ordering them by :attr:`shed_rank`. ``map_key`` is the bucket in the shedding
        ``HashMap`` (``2**40`` when not sheddable), ``chm_bucket`` the bucket in ``bundleData``. Only
        the names of ``ks`` are hashed (a sort needs them for tied values alone)."""
        ks = np.asarray(ks, dtype=np.int64)
        f = _name_facts(self.bundles)
        # the spread hashes of the names asked for so far, kept with the name facts
        spread, known = f.get("spread") or f.setdefault(
            "spread", (np.zeros(self.nk, dtype=np.int64), np.zeros(self.nk, dtype=bool)))
        miss = ks[~known[ks]]
        if len(miss):
            names = self.bundles
            h = java_string_hashes([names[k] for k in miss.tolist()]) & 0xFFFFFFFF
            spread[miss] = h ^ (h >> 16)
            known[miss] = True
        s = spread[ks]
        cap_chm, cap_new = self._shed_capacities
        key_new = s & (cap_new - 1)
        key_new[~self.sheddable[ks]] = 1 << 40
        return key_new, s & (cap_chm - 1)

    def shed_order(self, ks: np.ndarray) -> tuple:
        """Keys for ``np.lexsort`` (least significant first) that order the bundles ``ks`` as
        :attr:`shed_rank` does: the rank itself when it is known for these names and this view's
        ``bundleData`` (views over the same names share it), or when every name's hash is known already
        (then it hashes nothing, and later views over the same names find it: a backtest's minutes);
        else :meth:`shed_keys` and the index, which hash the names of ``ks`` alone."""
        ks = np.asarray(ks, dtype=np.int64)
        rank = self.known_shed_rank()
        if rank is None and (spread := _name_facts(self.bundles).get("spread")) is not None and spread[1].all():
            rank = self.shed_rank
        if rank is not None:
            return (rank[ks],)
        key_new, key_chm = self.shed_keys(ks)
        return ks, key_chm, key_new

    def known_shed_rank(self) -> np.ndarray | None:
        """:attr:`shed_rank` when it is known without hashing or ranking anything: computed for this view,
        or kept with the name facts for this view's ``bundleData`` (an earlier view over the same names: a
        backtest's minutes); else ``None``."""
        rank = self.__dict__.get("shed_rank")
        if rank is None and (f := _known_name_facts(self.bundles)) is not None \
                and (rank := self._stored_shed_rank(f)) is not None:
            self.__dict__["shed_rank"] = rank  # (what shed_rank would return)
        return rank

    @cached_property
    def owned_flat(self) -> tuple[np.ndarray, np.ndarray]:
        """``(bundles, brokers)``: every owned bundle and its broker, broker after broker (:attr:`owned`
        joined end to end)."""
        counts = np.fromiter(map(len, self.owned), dtype=np.int64, count=len(self.owned))
        flat = np.concatenate(self.owned) if counts.sum() else np.zeros(0, dtype=np.int64)
        return flat, np.repeat(np.arange(len(self.owned)), counts)

    @cached_property
    def owned_in_shed_order(self) -> list:
        """Per broker, the indices of its sheddable bundles in :attr:`shed_rank` order (a tuple each): what
        ``getBundleDataForLoadShedding()`` offers of the broker, ties in ``HashMap`` order. A function of
        the names, ``bundleData`` and the ownership alone (views that share these may share it)."""
        idx, grp = self.owned_flat
        keep = self.sheddable[idx]
        idx, grp = idx[keep], grp[keep]
        idx = idx[np.lexsort((self.shed_rank[idx], grp))]
        ends = np.cumsum(np.bincount(grp, minlength=len(self.owned))).tolist()
        flat = idx.tolist()
        return [tuple(flat[a:b]) for a, b in zip([0, *ends[:-1]], ends)]

    @cached_property
    def first_in_shed_order(self) -> np.ndarray:
        """Per broker, the first of :attr:`owned_in_shed_order` (``-1`` for a broker without a sheddable
        bundle): with :attr:`even_shares`, the bundle whose value each of the broker's bundles has."""
        return np.fromiter((t[0] if t else -1 for t in self.owned_in_shed_order), dtype=np.int64,
                           count=len(self.owned))

    @cached_property
    def owners(self) -> dict:
        """bundle index -> list of broker indices listing it (more than one during a handover)."""
        out: dict[int, list] = {}
        for j, o in enumerate(self.owned):
            for k in o.tolist():
                out.setdefault(k, []).append(j)
        return out

    def _stored_shed_rank(self, facts: dict) -> np.ndarray | None:
        """The rank kept with the name facts ``facts`` when it was computed for this view's ``bundleData``."""
        got = facts.get("shed_rank")
        return got[1] if got is not None and got[0] == self.in_bundle_data.tobytes() else None

    @cached_property
    def shed_rank(self) -> np.ndarray:
        """Position of each bundle in the ``HashMap`` of ``getBundleDataForLoadShedding()``.

        That map is filled by iterating ``bundleData`` (a ``ConcurrentHashMap``), so inside a bucket
        the order is the CHM order; CHM buckets use the CHM's own capacity. Bundles that are not
        sheddable get rank ``nk`` + index (they are never sorted).
        """
        nk = self.nk
        if nk == 0:
            return np.zeros(0, dtype=np.int64)
        # a function of the names and in_bundle_data alone: kept with the name facts for the last mask
        f = _name_facts(self.bundles)
        got = self._stored_shed_rank(f)
        if got is not None:
            return got
        mask = self.in_bundle_data.tobytes()
        key_new, chm_b = self.shed_keys(np.arange(nk))
        order = np.lexsort((np.arange(nk), chm_b, key_new))
        rank = np.empty(nk, dtype=np.int64)
        rank[order] = np.arange(nk)
        rank.flags.writeable = False  # shared by the views over the same names
        f["shed_rank"] = (mask, rank)
        return rank

    @cached_property
    def persistent_ok(self) -> np.ndarray:
        """Broker accepts persistent topics (``persistentTopicsEnabled``)."""
        if not self.broker_info:
            return np.ones(self.nb, dtype=bool)
        return np.array([i.persistent_topics_enabled for i in self.broker_info], dtype=bool)

    @cached_property
    def non_persistent_ok(self) -> np.ndarray:
        """Broker accepts non-persistent topics (``nonPersistentTopicsEnabled``)."""
        if not self.broker_info:
            return np.ones(self.nb, dtype=bool)
        return np.array([i.non_persistent_topics_enabled for i in self.broker_info], dtype=bool)

    @cached_property
    def broker_map_rank(self) -> np.ndarray:
        """Position of each broker in a ``HashMap`` filled in :attr:`brokers` order (read-only: shared)."""
        got = java_map_rank(self.brokers)
        got.flags.writeable = False
        return got

    @cached_property
    def name_rank(self) -> np.ndarray:
        """Rank of each broker id in lexicographic (Java ``String.compareTo``) order."""
        order = sorted(range(self.nb), key=lambda i: self.brokers[i].encode("utf-16-be"))
        r = np.empty(self.nb, dtype=np.int64)
        r[order] = np.arange(self.nb)
        return r

    def ns_counts(self, ns: str) -> np.ndarray:
        """Per broker: how many bundles of namespace ``ns`` it lists (BundleRangeCache, reported part)."""
        cache = self.__dict__.setdefault("_ns_cache", {})
        got = cache.get(ns)
        if got is None:
            if "_ns_owners" not in self.__dict__:
                # every listed (broker, bundle) pair's broker, grouped by the bundle's namespace: one sort,
                # then each namespace's counts read only its own pairs
                lens = self.num_bundles
                pb = np.repeat(np.arange(self.nb), lens)
                pk = np.concatenate(self.owned) if self.nb else np.zeros(0, dtype=np.int64)
                ids = self.bundle_namespace_id[pk] if len(pk) else np.zeros(0, dtype=np.int64)
                n_ns = len(self.namespace_index)
                # a radix sort when the ids fit 16 bits (a million pairs: ~0.07 s less), the same order
                order = np.argsort(ids.astype(np.uint16) if n_ns <= 65536 else ids, kind="stable")
                ids = ids[order]
                self.__dict__["_ns_owners"] = (pb[order], np.searchsorted(ids, np.arange(n_ns + 1)))
            owners, bounds = self.__dict__["_ns_owners"]
            ns_id = self.namespace_index.get(ns)
            if ns_id is None:
                got = np.zeros(self.nb, dtype=np.int64)
            else:
                got = np.bincount(owners[bounds[ns_id]:bounds[ns_id + 1]], minlength=self.nb)
            cache[ns] = got
        return got

    def usage_with_weight(self, weights: tuple) -> np.ndarray:
        """``getMaxResourceUsageWithWeight(cpu, directMemory, bwIn, bwOut)`` of every broker (fraction)."""
        cache = self.__dict__.setdefault("_uw_cache", {})
        w = tuple(float(x) for x in weights)
        got = cache.get(w)
        if got is None:
            cpu_w, dm_w, in_w, out_w = w
            with np.errstate(invalid="ignore"):  # Infinity * 0 is NaN, as in Java; java_max skips it
                got = java_max_rows([self.cpu * cpu_w, self.direct_memory * dm_w, self.bandwidth_in * in_w,
                                     self.bandwidth_out * out_w]) / 100.0 if self.nb else np.zeros(0)
            cache[w] = got
        return got

    def usage_unweighted(self) -> np.ndarray:
        """``getMaxResourceUsage()`` of every broker (float32 max / 100, memory excluded)."""
        got = self.__dict__.get("_unweighted")
        if got is None:
            if self.nb == 0:
                got = np.zeros(0)
            else:
                m = java_max_rows([self.cpu, self.direct_memory, self.bandwidth_in, self.bandwidth_out])
                got = (m.astype(np.float32) / np.float32(100.0)).astype(np.float32).astype(np.float64)
            self.__dict__["_unweighted"] = got
        return got

    def overload_usage(self, conf) -> np.ndarray:
        """The usage Pulsar's overload tests read (OverloadShedder, LeastLongTermMessageRate, the
        ``selectBroker`` retry): the weighted maximum from 4.0 (PIP-358), ``getMaxResourceUsage()`` —
        unweighted — before (the release's ``weighted_overload`` behaviour)."""
        return self.usage_with_weight(conf.weights) if conf.has("weighted_overload") else self.usage_unweighted()

    def bundle_data(self, bundle: str) -> BundleData:
        """A fresh BundleData object for ``bundle`` (Pulsar's default when unknown)."""
        i = self.bundle_index.get(bundle)
        if i is None or not self.in_bundle_data[i]:
            return default_bundle_data(self.resource_quotas.get(bundle))
        s, t = self.st[i], self.lt[i]
        return BundleData(
            TimeAverageMessageData(self.st_max, int(self.st_samples[i]), *map(float, s)),
            TimeAverageMessageData(self.lt_max, int(self.lt_samples[i]), *map(float, t)),
            int(self.topics[i]),
        )

    def bundle_value_key(self, i: int) -> tuple:
        """Value identity of bundle ``i``'s BundleData (see :meth:`BundleData.value_key`).

        Memoised per view: a view is never changed once built (every producer builds a new one per
        snapshot or minute, and the dashboard shares one per snapshot), and AvgShedder asks for the same
        bundle's key when it plans a move and again when it places the bundle."""
        memo = self.__dict__.get("_value_keys")
        i = int(i)
        got = memo.get(i) if memo is not None else None
        return got if got is not None else self.bundle_value_keys([i])[0]

    def bundle_value_keys(self, ks: list) -> list:
        """:meth:`bundle_value_key` of each bundle index in ``ks`` (the rows read at once)."""
        memo = self.__dict__.get("_value_keys")
        if memo is None:
            memo = self.__dict__.setdefault("_value_keys", {})
        todo = [k for k in ks if k not in memo]
        if todo:
            def col(a, kind):  # the rows as Python ints / floats (``tolist`` converts a matching dtype itself)
                a = a[todo]
                if a.dtype.kind == kind or (kind == "i" and a.dtype.kind == "u"):
                    return a.tolist()
                conv = int if kind == "i" else float
                return [[conv(x) for x in r] for r in a.tolist()] if a.ndim == 2 else [conv(x) for x in a.tolist()]

            st, lt = col(self.st, "f"), col(self.lt, "f")
            sn, ln, tp = col(self.st_samples, "i"), col(self.lt_samples, "i"), col(self.topics, "i")
            st_max, lt_max = self.st_max, self.lt_max
            for k, a, b, c, d, t in zip(todo, sn, st, ln, lt, tp):
                memo[k] = (st_max, a, *b, lt_max, c, *d, t)
        return [memo[k] for k in ks]

    def recent_mask(self, recently_unloaded: Mapping[str, int]) -> np.ndarray:
        """Boolean array: bundle is in ``recentlyUnloadedBundles``."""
        m = np.zeros(self.nk, dtype=bool)
        if recently_unloaded:
            hit = [i for i in map(self.bundle_index.get, recently_unloaded) if i is not None]
            if hit:
                m[hit] = True
        return m

    def broker_usage_table(self, weights: tuple) -> dict:
        """Per broker: cpu, memory, direct memory, bandwidth in/out percentages and weighted usage."""
        uw = self.usage_with_weight(weights)
        return {b: {"cpu": float(self.cpu[i]), "memory": float(self.memory[i]),
                    "directMemory": float(self.direct_memory[i]), "bandwidthIn": float(self.bandwidth_in[i]),
                    "bandwidthOut": float(self.bandwidth_out[i]), "weighted": float(uw[i])}
                for i, b in enumerate(self.brokers)}


class ViewBundle:
    """A bundle's ``BundleData`` as a placement strategy sees it, read from the view on demand:
    :meth:`value_key` straight from the arrays; any other attribute builds the full object once."""

    __slots__ = ("view", "index", "_data")

    def __init__(self, view: LoadView, index: int):
        self.view, self.index, self._data = view, index, None

    def value_key(self) -> tuple:
        return self.view.bundle_value_key(self.index)

    def __getattr__(self, name):
        if self._data is None:
            self._data = self.view.bundle_data(self.view.bundles[self.index])
        return getattr(self._data, name)
