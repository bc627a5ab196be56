"""The extensible snapshot: per-broker ``BrokerLoadData`` and top-K bundle lists, as the leader reads them.

File layout (one JSON object; only ``brokerLoadData`` is required)::

    {
      "brokerLoadData":      {BROKER: BrokerLoadData},          # loadbalancer-broker-load-data
      "topBundlesLoadData":  {BROKER: {"topBundlesLoadData":     # loadbalancer-top-bundles-load-data
                                 [{"bundleName": B, "stats": NamespaceBundleStats}, ...]}},
                                 # (a bare list is accepted too); ascending, as published
      "brokerLookupData":    {BROKER: {"loadManagerClassName": FQN, "brokerVersion": V,
                                       "persistentTopicsEnabled": bool,
                                       "nonPersistentTopicsEnabled": bool}},
                                 # the broker registry = the *available* brokers; default: the
                                 # brokerLoadData brokers, all running ExtensibleLoadManagerImpl
      "bundleOwnership":     {BUNDLE: BROKER},                   # service-unit channel (default:
                                                                 # the broker listing it in its top K)
      "recentlyUnloadedBundles": {BUNDLE: ms},
      "recentlyUnloadedBrokers": {BROKER: ms},                   # source broker -> last unload time
      "now": ms,                                                 # default: the latest updatedAt
      "shedlabStrategyState": {"TransferShedder": {"unloadConditionHitCount": n}},
      "shedlabPolicies": {"namespaceIsolationPolicies": ..., "antiAffinityGroups": ...,
                          "failureDomains": ...}   # the cluster's policies (engine.policies), optional
    }

Field names inside ``BrokerLoadData``, ``NamespaceBundleStats`` and ``BrokerLookupData`` are
Pulsar's. Bad input raises :class:`engine.errors.InputError` naming the file and the field.

:func:`derive_extensible` builds the same structure from a modular ``LoadData`` snapshot, so any
sample can be viewed both ways.

Examples
--------
>>> from engine.samples import load_sample
>>> ext = derive_extensible(load_sample("yahoo-japan-3-brokers"))
>>> sorted(ext.broker_load_data)
['broker1:8080', 'broker2:8080', 'broker3:8080']
>>> round(ext.broker_load_data["broker1:8080"].weighted_max_ema, 4)    # cpu 89 % is the max
0.89
>>> [len(v) for k, v in sorted(ext.top_bundles.items())]
[4, 2, 2]
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from pathlib import Path

import numpy as np

from ..config import LoadBalancerConfig
from ..errors import InputError
from ..gcquiet import no_gc
from ..limits import epoch_ms
from ..javacompat import java_map_order
from ..model import LoadData, NamespaceBundleStats, _Reader
from .broker_load_data import BrokerLoadData, first_updates
from .top_bundles import BundleLoadData, TopBundles, TopKPlan, top_k_bundles

__all__ = ["EXTENSIBLE_LOAD_MANAGER", "extensible_config", "BrokerLookupData", "ExtensibleLoadData", "derive_extensible",
           "extensible_from_json", "load_extensible_snapshot", "is_extensible_json", "save_extensible_snapshot"]

_MAX_STEPS = 200  # 0.9**200 ~ 7e-10: the history is gone long before

EXTENSIBLE_LOAD_MANAGER = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


def extensible_config(conf: LoadBalancerConfig | None) -> LoadBalancerConfig:
    """``conf`` as seen by an extensible leader: ``loadManagerClassName`` is ExtensibleLoadManagerImpl.

    TransferShedder and the extensible filters only exist in that load manager, so a config naming
    another one (e.g. the 4.x default ``ModularLoadManagerImpl``) is read as naming it; a config that
    already names an extensible class is returned unchanged.
    """
    conf = conf or LoadBalancerConfig()
    if conf.extensible:
        return conf
    return conf.with_values({"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER})


@dataclass
class BrokerLookupData:
    """The part of a broker's registry entry (``BrokerLookupData``) the filters read."""

    load_manager_class_name: str | None = EXTENSIBLE_LOAD_MANAGER
    broker_version: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True

    def to_json(self) -> dict:
        d = {"persistentTopicsEnabled": self.persistent_topics_enabled,
             "nonPersistentTopicsEnabled": self.non_persistent_topics_enabled}
        if self.load_manager_class_name is not None:
            d["loadManagerClassName"] = self.load_manager_class_name
        if self.broker_version is not None:
            d["brokerVersion"] = self.broker_version
        return d

    @classmethod
    def from_json(cls, obj, path="", source=None, warnings=None) -> "BrokerLookupData":
        r = _Reader(obj, path, source, warnings)
        name = r.str("loadManagerClassName")
        if name is None:
            r.warn(f"{path}: no loadManagerClassName: the BrokerLoadManagerClassFilter drops this broker")
        return cls(name, r.str("brokerVersion"), r.bool("persistentTopicsEnabled", True),
                   r.bool("nonPersistentTopicsEnabled", True))


@dataclass
class ExtensibleLoadData:
    """What the extensible leader knows: the two load-data stores, the registry and the channel.

    Attributes
    ----------
    broker_load_data : dict
        broker → :class:`BrokerLoadData` (the ``brokerLoadDataStore``).
    top_bundles : dict
        broker → list of :class:`BundleLoadData`, ascending (the ``topBundleLoadDataStore``).
    lookup : dict or None
        broker → :class:`BrokerLookupData` of the *available* brokers; ``None`` = the brokers of
        ``broker_load_data``, all running the extensible load manager.
    ownership : dict or None
        bundle → owner broker (the service-unit state channel); ``None`` = derived from the top-K lists.
    """

    broker_load_data: dict = field(default_factory=dict)
    top_bundles: dict = field(default_factory=dict)
    lookup: dict | None = None
    ownership: dict | None = None
    recently_unloaded: dict = field(default_factory=dict)
    recently_unloaded_brokers: dict = field(default_factory=dict)
    now_ms: int | None = None
    strategy_state: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    source: str | None = None

    #: tells loaders and the command line this is the extensible form (a modular LoadData has none)
    extensible = True

    @property
    def now(self) -> int:
        """The snapshot's time: ``now_ms`` if set, else the latest ``updatedAt`` (0 if none)."""
        if self.now_ms is not None:
            return int(self.now_ms)
        return max((d.updated_at for d in self.broker_load_data.values()), default=0)

    @property
    def available_brokers(self) -> list[str]:
        """The broker registry's available brokers, in ``HashMap`` order (how filters iterate them)."""
        names = list(self.lookup) if self.lookup is not None else list(self.broker_load_data)
        return java_map_order(names)

    def lookup_data(self, broker: str) -> BrokerLookupData:
        if self.lookup is None:
            return BrokerLookupData()
        return self.lookup.get(broker) or BrokerLookupData(None)

    @property
    def brokers(self) -> list[str]:
        """Every broker the snapshot names (available or with load data), ``ConcurrentHashMap`` order."""
        names = dict.fromkeys(self.broker_load_data)
        names.update(dict.fromkeys(self.lookup or {}))
        return java_map_order(names, concurrent=True)

    @property
    def bundles(self) -> list[str]:
        """Every bundle the snapshot names (channel ownership and top-K lists)."""
        own, tb = self.ownership, self.top_bundles
        if isinstance(own, ChannelOwnership) and isinstance(tb, TopBundles) and own.holds_every_row_of(tb):
            return list(own)  # no top-K list can name another bundle: none is worked out for this
        out = dict.fromkeys(self.ownership or {})
        for lst in self.top_bundles.values():
            out.update(dict.fromkeys(b.bundle_name for b in lst))
        return list(out)

    def owners(self) -> dict[str, str]:
        """bundle → owner: :attr:`ownership` if given, else the broker listing it in its top-K report
        (the first in store order when two list it during a handover)."""
        if self.ownership is not None:
            return owners_dict(self.ownership)
        out: dict[str, str] = {}
        for b in java_map_order(self.top_bundles, concurrent=True):
            for x in self.top_bundles[b]:
                out.setdefault(x.bundle_name, b)
        return out

    def copy(self) -> "ExtensibleLoadData":
        return copy.deepcopy(self)

    def shallow_copy(self) -> "ExtensibleLoadData":
        """New maps and new ``BrokerLoadData`` objects (their ``updatedAt`` may be shifted); the top-K
        lists, lookup entries and stats are shared (read-only for the load manager). Cheap."""
        out = copy.copy(self)
        out.broker_load_data = {b: copy.copy(d) for b, d in self.broker_load_data.items()}
        out.top_bundles = self.top_bundles.copy()
        out.lookup = None if self.lookup is None else dict(self.lookup)
        out.ownership = None if self.ownership is None else self.ownership.copy()  # (a ChannelOwnership: itself)
        out.recently_unloaded = dict(self.recently_unloaded)
        out.recently_unloaded_brokers = dict(self.recently_unloaded_brokers)
        out.strategy_state = dict(self.strategy_state)
        out.warnings = list(self.warnings)
        return out

    def to_json(self) -> dict:
        out = {
            "brokerLoadData": {b: d.to_json() for b, d in self.broker_load_data.items()},
            "topBundlesLoadData": {b: {"topBundlesLoadData": [x.to_json() for x in lst]}
                                   for b, lst in self.top_bundles.items()},
        }
        if self.lookup is not None:
            out["brokerLookupData"] = {b: d.to_json() for b, d in self.lookup.items()}
        if self.ownership is not None:
            out["bundleOwnership"] = owners_dict(self.ownership)
        if self.recently_unloaded:
            out["recentlyUnloadedBundles"] = dict(self.recently_unloaded)
        if self.recently_unloaded_brokers:
            out["recentlyUnloadedBrokers"] = dict(self.recently_unloaded_brokers)
        if self.now_ms is not None:
            out["now"] = int(self.now_ms)
        if self.strategy_state:
            out["shedlabStrategyState"] = copy.deepcopy(self.strategy_state)
        pol = getattr(self, "cluster_policies", None)
        if pol is not None and not pol.empty:  # engine.policies: the cluster's own placement policies
            out["shedlabPolicies"] = pol.to_json()
        return out


# ------------------------------------------------------------------------------------------ reading
def is_extensible_json(obj) -> bool:
    """Parsed JSON in the extensible form (has ``brokerLoadData``, no modular ``brokers``)."""
    return isinstance(obj, dict) and "brokerLoadData" in obj and "brokers" not in obj


def _times(obj, key, source) -> dict:
    m = obj.get(key) or {}
    if not isinstance(m, dict):
        raise InputError("expected name -> time in ms", source=source, field=key)
    out = {}
    for k, t in m.items():
        out[k] = epoch_ms(t, source, f"{key}[{k!r}]")
    return out


def _top_list(v, path, source, warnings) -> list[BundleLoadData]:
    if isinstance(v, dict):
        v = v.get("topBundlesLoadData", [])
        path += ".topBundlesLoadData"
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError("expected a list of {bundleName, stats}", source=source, field=path)
    out = []
    seen = set()
    for i, e in enumerate(v):
        p = f"{path}[{i}]"
        r = _Reader(e, p, source, warnings)
        name = r.str("bundleName")
        if not name:
            raise InputError("missing bundleName", source=source, field=f"{p}.bundleName")
        if name in seen:
            raise InputError(f"bundle {name} is listed twice", source=source, field=f"{p}.bundleName")
        seen.add(name)
        st = r.obj_("stats")
        if st is None:
            raise InputError("missing stats (NamespaceBundleStats)", source=source, field=f"{p}.stats")
        out.append(BundleLoadData(name, NamespaceBundleStats.from_json(st, f"{p}.stats", source, warnings)))
    return out


def extensible_from_json(obj, source: str = "<json>") -> ExtensibleLoadData:
    """Build an :class:`ExtensibleLoadData` from parsed JSON in the layout of the module docstring."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object with \"brokerLoadData\", got {type(obj).__name__}", source=source)
    warnings: list[str] = []
    bld = obj.get("brokerLoadData")
    if not isinstance(bld, dict):
        raise InputError("expected an object mapping broker id -> BrokerLoadData", source=source,
                         field="brokerLoadData")
    data = ExtensibleLoadData(warnings=warnings, source=source)
    for b, d in bld.items():
        data.broker_load_data[b] = BrokerLoadData.from_json(d, f"brokerLoadData[{b!r}]", source, warnings)
    top = obj.get("topBundlesLoadData") or {}
    if not isinstance(top, dict):
        raise InputError("expected an object mapping broker id -> top bundles", source=source,
                         field="topBundlesLoadData")
    for b, v in top.items():
        data.top_bundles[b] = _top_list(v, f"topBundlesLoadData[{b!r}]", source, warnings)
    lk = obj.get("brokerLookupData")
    if lk is not None:
        if not isinstance(lk, dict):
            raise InputError("expected an object mapping broker id -> BrokerLookupData", source=source,
                             field="brokerLookupData")
        data.lookup = {b: BrokerLookupData.from_json(v, f"brokerLookupData[{b!r}]", source, warnings)
                       for b, v in lk.items()}
    own = obj.get("bundleOwnership")
    if own is not None:
        if not isinstance(own, dict) or not all(isinstance(v, str) for v in own.values()):
            raise InputError("expected an object mapping bundle -> broker id", source=source, field="bundleOwnership")
        data.ownership = dict(own)
    data.recently_unloaded = _times(obj, "recentlyUnloadedBundles", source)
    data.recently_unloaded_brokers = _times(obj, "recentlyUnloadedBrokers", source)
    now = obj.get("now")
    if now is not None:
        data.now_ms = epoch_ms(now, source, "now")
    st = obj.get("shedlabStrategyState")
    if st is not None:
        if not isinstance(st, dict):
            raise InputError("expected strategy name -> state", source=source, field="shedlabStrategyState")
        ts = st.get("TransferShedder")
        if ts is not None:
            hc = ts.get("unloadConditionHitCount") if isinstance(ts, dict) else None
            if isinstance(hc, bool) or not isinstance(hc, int) or hc < 0:
                raise InputError("expected a whole number >= 0", source=source,
                                 field="shedlabStrategyState.TransferShedder.unloadConditionHitCount")
        data.strategy_state = st
    if obj.get("shedlabPolicies") is not None:  # isolation / anti-affinity / failure domains (engine.policies)
        from ..policies import attach, read_policies_json

        attach(data, read_policies_json(obj["shedlabPolicies"], f"{source}: shedlabPolicies", "bundle"))
    if not data.broker_load_data:
        warnings.append(f"{source}: no broker load data: nothing to balance")
    for b in data.top_bundles:
        if b not in data.broker_load_data:
            warnings.append(f"{source}: broker {b} has a top-bundles report but no BrokerLoadData")
    owners: dict[str, list] = {}
    for b, lst in data.top_bundles.items():
        for x in lst:
            owners.setdefault(x.bundle_name, []).append(b)
    for x, bs in owners.items():
        if len(bs) > 1:
            warnings.append(f"{source}: bundle {x} is in the top-K reports of {len(bs)} brokers ({', '.join(bs)})")
    return data


def load_extensible_snapshot(path) -> ExtensibleLoadData:
    """Read an extensible snapshot file (see the module docstring); errors name the file and field."""
    from ..inputs import read_input_bytes, read_json_bytes

    p = Path(path)
    obj = read_json_bytes(read_input_bytes(p), str(p))
    if not is_extensible_json(obj):
        raise InputError("not an extensible snapshot: missing \"brokerLoadData\"", source=str(p), field="brokerLoadData")
    return extensible_from_json(obj, str(p))


def save_extensible_snapshot(data: ExtensibleLoadData, path, extra: Mapping | None = None) -> None:
    """Write ``data`` as extensible snapshot JSON (plus ``extra`` top-level keys, e.g. ``shedlabSample``)."""
    import json

    d = data.to_json()
    if extra:
        d.update(extra)
    Path(path).write_text(json.dumps(d, indent=1) + "\n")


# ------------------------------------------------------------------------------------------ derivation
def derive_extensible(load_data: LoadData, config: LoadBalancerConfig | None = None, *,
                      previous: ExtensibleLoadData | None = None, has_policies=None) -> ExtensibleLoadData:
    """The extensible view of a modular ``LoadData`` snapshot.

    Each broker's ``LocalBrokerData`` feeds one :meth:`BrokerLoadData.update` at its ``lastUpdate``
    (the snapshot's time when 0): usages, throughputs, rates, bundle and topic counts; its
    ``lastStats`` give the top-K report (:func:`top_k_bundles`); its ``bundles`` the channel ownership.

    Parameters
    ----------
    previous : ExtensibleLoadData, optional
        The view derived from the previous snapshot of a timeline: brokers known there continue their
        EMAs with one step per ``loadBalancerReportUpdateMinIntervalMillis`` (5 s) between the two
        ``lastUpdate`` times (at most 200; the report's usage is taken as constant in between; a
        report already seen adds no step); new brokers start from their current usage.

    Notes
    -----
    Departures, deliberate: without ``previous`` the EMAs start at the current weighted max (a broker
    that just (re)started), not at a history the modular report does not carry; the brokers are taken
    to run ``ExtensibleLoadManagerImpl`` (their modular ``loadManagerClassName`` is not copied, else
    the load-manager-class filter would drop them all); versions and topic-type flags are copied.
    Recently unloaded bundles are kept. Config keys: the five resource weights,
    ``loadBalancerHistoryResourcePercentage``, ``loadBalancerReportUpdateMinIntervalMillis`` and the
    top-K keys of :func:`top_k_bundles`.
    """
    with no_gc():  # a record per broker and the ownership map: no cycles among them
        return _derive(load_data, config, previous, has_policies)


def _derive(load_data: LoadData, config, previous, has_policies) -> ExtensibleLoadData:
    conf = config or LoadBalancerConfig()
    now = load_data.now
    tick = conf.loadBalancerReportUpdateMinIntervalMillis
    out = ExtensibleLoadData(now_ms=load_data.now_ms, source=load_data.source,
                             warnings=list(load_data.warnings), lookup={}, ownership={})
    out.recently_unloaded = dict(load_data.recently_unloaded)
    columns = load_data.stats_columns()
    reports = load_data.brokers if columns is None else columns["reports"]
    bids = list(reports)
    locals_ = [bd.local for bd in reports.values()]
    times = [int(L.last_update) or int(now) for L in locals_]
    out.top_bundles = TopBundles(bids, _top_k_plan(columns, locals_, conf, has_policies))
    fresh = [j for j, bid in enumerate(bids)
             if previous is None or previous.broker_load_data.get(bid) is None]
    firsts = dict(zip(fresh, first_updates([locals_[j] for j in fresh], [times[j] for j in fresh], conf)))
    for j, (bid, L, t) in enumerate(zip(bids, locals_, times)):
        d = firsts.get(j)
        if d is None:  # a broker of the previous view: its EMAs go on
            d = _continue(previous.broker_load_data[bid], L, t, tick, conf)
        out.broker_load_data[bid] = d
        out.lookup[bid] = BrokerLookupData(EXTENSIBLE_LOAD_MANAGER, L.broker_version_string,
                                           L.persistent_topics_enabled, L.non_persistent_topics_enabled)
    # the channel's ownership: each broker's listed bundles (a bundle listed by two: the first keeps it)
    view = None if columns is None else columns["view"]
    if view is not None:
        out.ownership = ChannelOwnership.of_view(view, bids)
    else:
        lists = [L.bundles for L in locals_]
        own = dict(zip(chain.from_iterable(lists), chain.from_iterable(map(repeat, bids, map(len, lists)))))
        if len(own) < sum(map(len, lists)):
            own = {}
            for bid, lst in zip(bids, lists):
                for b in lst:
                    own.setdefault(b, bid)
        out.ownership = own
    hc = (load_data.strategy_state or {}).get("TransferShedder")
    if hc:
        out.strategy_state = {"TransferShedder": dict(hc)}
    return out


def _continue(prev: BrokerLoadData, L, t: int, tick: int, conf: LoadBalancerConfig) -> BrokerLoadData:
    """``prev`` (a broker of the previous view) advanced to its report at ``t``: one update per
    ``tick`` between the two (at most ``_MAX_STEPS``), none for a report already seen."""
    d = prev.copy()
    if prev.updated_at == 0:
        steps = 1
    elif t <= prev.updated_at:
        steps = 0  # a report already seen: not counted twice
    else:  # the broker regenerated its load data every 5 s in between (same usage assumed)
        steps = min(_MAX_STEPS, max(1, round((t - prev.updated_at) / max(1, tick))))
    for i in range(steps):
        d.update({"cpu": L.cpu, "memory": L.memory, "direct_memory": L.direct_memory,
                  "bandwidth_in": L.bandwidth_in, "bandwidth_out": L.bandwidth_out},
                 L.msg_throughput_in, L.msg_throughput_out, L.msg_rate_in, L.msg_rate_out,
                 len(L.bundles) if L.bundles else L.num_bundles, L.num_topics, conf,
                 now_ms=t - (steps - 1 - i) * tick)
    return d


def _top_k_plan(columns: dict | None, locals_, conf: LoadBalancerConfig, has_policies) -> TopKPlan:
    """The top-K plan of every broker's ``lastStats``: from the snapshot's columns while nothing built its
    objects (:meth:`~engine.model.LoadData.stats_columns`: a big file read into columns; the namespaces
    of the view over the same names), else from the objects."""
    if columns is None:
        return TopKPlan.of_maps([L.last_stats for L in locals_], conf, has_policies)
    stats, idx, view = columns["stats"], columns["name_idx"], columns["view"]
    namespaces = (view.namespaces, view.bundle_namespace_id[idx]) if view is not None and len(idx) else None
    return TopKPlan(len(idx), np.diff(columns["starts"]), conf, has_policies, names=columns["names"], name_idx=idx,
                    stats_cols=stats, vals=stats, fields=_STATS_FIELDS, namespaces=namespaces)


#: the columns of ``stats_columns()["stats"]`` (Pulsar's lastStats entry order), by attribute name
_STATS_FIELDS = ("msg_rate_in", "msg_throughput_in", "msg_rate_out", "msg_throughput_out", "consumer_count",
                 "producer_count", "topics", "cache_size")


def owners_dict(ownership) -> dict:
    """A new ``dict`` of an ownership mapping (a ``dict`` or a :class:`ChannelOwnership`)."""
    return ownership.to_dict() if isinstance(ownership, ChannelOwnership) else dict(ownership)


class OwnerMapping(Mapping):
    """A read-only bundle → owner mapping answered by :meth:`get` (``None``: no owner)."""

    __slots__ = ()

    def get(self, bundle, default=None):
        raise NotImplementedError

    def __getitem__(self, bundle):
        got = self.get(bundle)
        if got is None:
            raise KeyError(bundle)
        return got

    def __contains__(self, bundle) -> bool:
        return self.get(bundle) is not None


class ChannelOwnership(OwnerMapping):
    """The service-unit channel's bundle → owner over a view's arrays: no ``dict`` of every bundle is
    built (a big snapshot's view reads a few owners per cycle). Read only; iterates in the order the
    brokers list their bundles (a bundle listed by two: the first keeps it), as the ``dict`` would."""

    __slots__ = ("_view", "_owner", "_brokers", "_order")

    def __init__(self, view, owner: np.ndarray, brokers: list, order: np.ndarray):
        self._view, self._owner, self._brokers, self._order = view, owner, brokers, order

    @classmethod
    def of_view(cls, view, brokers: list) -> "ChannelOwnership":
        """From ``view.owned`` (each broker's listed bundles), the brokers taken in ``brokers`` order."""
        at = view.broker_index
        parts = [view.owned[at[b]] for b in brokers]
        cat = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        who = np.repeat(np.arange(len(brokers), dtype=np.int64), [len(p) for p in parts])
        uniq, first = np.unique(cat, return_index=True)
        owner = np.full(view.nk, -1, dtype=np.int64)
        owner[uniq] = who[first]
        return cls(view, owner, list(brokers), cat[np.sort(first)])

    def get(self, bundle, default=None):
        i = self._view.bundle_index.get(bundle)
        if i is None:
            return default
        j = int(self._owner[i])
        return default if j < 0 else self._brokers[j]

    def __iter__(self):
        return map(self._view.bundles.__getitem__, self._order.tolist())

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"ChannelOwnership({len(self)} bundles)"

    def copy(self) -> "ChannelOwnership":
        return self  # read only: shared

    def holds_every_row_of(self, top: TopBundles) -> bool:
        """Whether every bundle ``top``'s lists could name (a lastStats entry the report keeps) has an owner here."""
        plan = top.plan
        if top.replaced or plan.names is not self._view.bundles or plan.name_idx is None:
            return False
        rows = plan.name_idx[plan.keep] if plan.vector else plan.name_idx  # (system namespaces are never listed)
        return bool((self._owner[rows] >= 0).all())

    def to_dict(self) -> dict:
        ol = self._order.tolist()
        return dict(zip(map(self._view.bundles.__getitem__, ol), map(self._brokers.__getitem__,
                                                                      self._owner[ol].tolist())))

    def __reduce__(self):
        return dict, (self.to_dict(),)
