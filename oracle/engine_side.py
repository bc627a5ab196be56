"""The same case through the engine, answered in the driver's shape.

Shedding: one strategy object across the cycles (its memory carried, as the leader keeps its instance), each
cycle's selections issued in the order ``doLoadShedding`` issues them (brokers in the key order of the
strategy's ``ArrayListMultimap``, then selection order). Placement: the strategy's best brokers (the set
Pulsar draws from) and the pick when the set has one broker.
"""
from __future__ import annotations

import copy
import json

import numpy as np

from engine.config import LoadBalancerConfig
from engine.errors import InputError, UsageError
from engine.javacompat import java_map_rank
from engine.load_manager import unload_broker_rank
from engine.loaddata_json import load_data_from_json
from engine.placement.base import PlacementContext
from engine.strategies import make_placement, make_shedding
from engine.view import LoadView


def config_for(case: dict, pulsar_version: str | None = None) -> LoadBalancerConfig:
    """The case's broker.conf keys over the engine's defaults (those of ``pulsar_version``'s line when the
    engine knows release lines). The config is frozen: one built per distinct (version, keys)."""
    conf = dict(case.get("conf") or {})
    try:
        key = (pulsar_version, json.dumps(conf, sort_keys=True))
    except (TypeError, ValueError):
        return _config_for(conf, pulsar_version)
    got = _CONFIGS.get(key)
    if got is None:
        got = _config_for(conf, pulsar_version)
        if len(_CONFIGS) >= 4096:
            _CONFIGS.clear()
        _CONFIGS[key] = got
    return got


_CONFIGS: dict = {}


def _config_for(conf: dict, pulsar_version: str | None) -> LoadBalancerConfig:
    base = LoadBalancerConfig()
    if pulsar_version:
        try:
            from engine import releases  # the engine's release lines, when it has them

            base = releases.defaults_for(pulsar_version)
        except ImportError:
            pass
    return base.with_values(conf)


def _load(obj: dict, carried: dict | None = None, memo: dict | None = None):
    """The snapshot and its view. ``memo`` (one case's, shared by the lines it is decided as): each snapshot
    is read once per case (with the same carried unloads) and its view built afresh for every line; the
    maps the engine is handed are copies, so no line sees another's changes."""
    key = None
    if memo is not None:
        key = (id(obj), tuple(sorted(carried.items())) if carried else ())
        got = memo.get(key)
        if got is not None:
            return _fresh(got), LoadView.from_load_data(got)
    o = dict(obj)
    if carried:
        ru = dict(o.get("recentlyUnloadedBundles") or {})
        ru.update(carried)
        o["recentlyUnloadedBundles"] = ru
    ld = load_data_from_json(o, source="<oracle case>")  # (the reader does not change its input)
    if key is not None:
        memo[key] = ld
        return _fresh(ld), LoadView.from_load_data(ld)
    return ld, LoadView.from_load_data(ld)


def _fresh(ld):
    """A shallow copy of a memoised snapshot with its own recently-unloaded map and preallocation sets."""
    out = copy.copy(ld)
    out.recently_unloaded = dict(ld.recently_unloaded)
    out.brokers = {b: copy.copy(bd) for b, bd in ld.brokers.items()}
    for bd in out.brokers.values():
        bd.preallocated = dict(bd.preallocated)
    return out


def answer(case: dict, pulsar_version: str | None = None, memo: dict | None = None) -> dict:
    """The engine's answer to ``case`` ({"id", "cycles"} / {"id", "steps"} / {"id", "error"}); ``memo``: a dict
    kept while the same case is answered as several versions (its snapshots read once)."""
    try:
        conf = config_for(case, pulsar_version) if case["kind"] != "bundle" else None
        if case["kind"] == "shed":
            return {"id": case["id"], "cycles": _shed(case, conf, memo)}
        if case["kind"] == "place":
            return {"id": case["id"], "steps": _place(case, conf, memo)}
        if case["kind"] == "bundle":
            return {"id": case["id"], **_bundle(case)}
        if case["kind"] == "filters":
            return {"id": case["id"], "steps": _filters(case, conf, memo)}
        if case["kind"] == "transfer":
            return {"id": case["id"], "cycles": _transfer(case, conf)}
        if case["kind"] == "extplace":
            return {"id": case["id"], "steps": _extplace(case, conf)}
        raise UsageError(f"unknown kind {case['kind']!r}")
    except (InputError, UsageError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        return {"id": case["id"], "error": f"{type(exc).__name__}: {exc}"}


def _shed(case: dict, conf: LoadBalancerConfig, memo: dict | None = None) -> list:
    s = make_shedding(case["strategy"])
    carry = bool(case.get("carryUnloaded"))
    carried: dict[str, int] = {}
    out = []
    for cyc in case["cycles"]:
        ld, view = _load(cyc, carried, memo)
        s.on_active_brokers_change(set(view.brokers))
        res = s.find_bundles_for_unloading(view, conf, ld.recently_unloaded)
        by_broker: dict[str, list] = {}
        for sel in res.selected:
            by_broker.setdefault(sel.broker, []).append(sel.bundle)
        keys = list(by_broker)
        pairs = []
        # the order the engine's doLoadShedding issues them in (the strategy's multimap order)
        for i in np.argsort(unload_broker_rank(s, keys), kind="stable").tolist():
            pairs.extend([keys[i], b] for b in by_broker[keys[i]])
        if carry:
            for _, b in pairs:
                carried[b] = int(cyc.get("now", 0))
        out.append(pairs)
    return out


def _place(case: dict, conf: LoadBalancerConfig, memo: dict | None = None) -> list:
    s = make_placement(case["strategy"])
    rng = np.random.default_rng(0)
    out = []
    for step in case["steps"]:
        ld, view = _load(step["data"], None, memo)
        s.on_active_brokers_change(set(view.brokers))
        names = [b for b in step["candidates"] if b in view.broker_index]
        # the candidate set is a HashSet<String>: iterated in its hash order
        order = np.argsort(java_map_rank(names), kind="stable")
        cand = np.array([view.broker_index[names[i]] for i in order.tolist()], dtype=np.int64)
        ctx = PlacementContext(rng, ld.preallocations())
        bundle = step["bundle"]
        data = ld.bundle_data.get(bundle) if bundle in ld.bundle_data else view.bundle_data(bundle)
        dec = s.select_broker(cand, bundle, data, view, conf, ctx)
        best = list(dec.best) if dec.broker is not None else []
        out.append({"best": best, "chosen": dec.broker})
    return out


def _bundle(case: dict) -> dict:
    """Topic → bundle lookups (``bundle_of``) and each split's boundaries (``split_bundle``: the points the
    algorithm returns, null when it returns none, an error when it throws)."""
    from engine.bundles.constants import BundleLookupError
    from engine.bundles.ranges import bundle_of
    from engine.bundles.split import split_bundle

    b = case["boundaries"]
    lookups = []
    for t in case["lookups"]:
        try:
            lookups.append(bundle_of(t, b).rsplit("/", 1)[1])
        except (BundleLookupError, InputError) as exc:
            lookups.append(f"error: {type(exc).__name__}")
    splits = []
    for s in case["splits"]:
        alg = s["algorithm"]
        try:
            r = split_bundle(b, s["bundle"], alg, topics=s.get("topics"), msg_rate=s.get("msgRate"),
                             throughput=s.get("throughput"), positions=s.get("positions"),
                             force=bool(s.get("force")), defaultNamespaceBundleSplitAlgorithm=alg,
                             **(s.get("conf") or {}))
        except InputError as exc:
            splits.append(f"error: {type(exc).__name__}")
            continue
        if r.label == "Skip":
            splits.append(None)
        elif r.label == "Failure" and not r.boundaries:
            splits.append(f"error: {r.reason}")
        else:
            splits.append([int(x) for x in r.boundaries])
    return {"lookups": lookups, "splits": splits}


class _Recorder:
    """The filters case's placement strategy: notes each candidate set it is handed (sorted names) and picks the
    smallest name, as the driver's recorder does, so only the filters decide."""

    #: a registered placement name (the load manager looks its kind up; nothing else reads it)
    name = "LeastLongTermMessageRate"
    uses_bundle_data = False

    def __init__(self):
        self.calls: list = []

    def select_broker(self, cand, bundle, data, view, conf, ctx):
        from engine.placement.base import new_decision

        names = sorted(view.brokers[j] for j in np.asarray(cand).tolist())
        self.calls.append(names)
        dec = new_decision(self.name, bundle, view, cand)
        if names:
            dec.broker = min(names, key=java_sort_key)
        return dec

    def on_active_brokers_change(self, active) -> None:
        pass

    def state(self) -> dict:
        return {}


def java_sort_key(name: str):
    """``String.compareTo`` order: UTF-16 code units."""
    return name.encode("utf-16-be")


def _filters(case: dict, conf: LoadBalancerConfig, memo: dict | None = None) -> list:
    """``selectBrokerForAssignment`` of each bundle in turn on one load manager: the candidate sets its
    strategy is handed (the filtered set, then the overload retry's) and the broker chosen. The snapshot (with
    the policies) is read once for all the lines (``memo``); each line's load manager keeps its own
    preallocations."""
    from engine.load_manager import ModularLoadManager

    obj = memo.get("filters-data") if memo is not None else None
    if obj is None:
        obj = {**case["data"], "shedlabPolicies": case["policies"]} if case.get("policies") else case["data"]
        if memo is not None:
            memo["filters-data"] = obj  # held, so its id names it for as long as the memo lives
    ld, view = _load(obj, memo=memo)
    rec = _Recorder()
    lm = ModularLoadManager(ld, conf, seed=0, placement=rec, view=view)
    out = []
    for b in case["bundles"]:
        rec.calls = []
        dec = lm.select_broker_for_assignment(b)
        out.append({"calls": [sorted(c, key=java_sort_key) for c in rec.calls], "chosen": dec.broker})
    return out


# ------------------------------------------------------------------ the extensible load manager
def _ext_data(cyc: dict, available=None):
    """An ExtensibleLoadData from a case's cycle / step (the engine's own snapshot reader)."""
    from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER, extensible_from_json

    obj = {"brokerLoadData": cyc["brokerLoadData"], "topBundlesLoadData": cyc.get("topBundlesLoadData") or {}}
    if "brokerLookupData" in cyc:
        obj["brokerLookupData"] = cyc["brokerLookupData"]
    elif available is not None and set(available) != set(cyc["brokerLoadData"]):
        # brokers in the registry without load data: each registered as running the extensible load manager
        obj["brokerLookupData"] = {b: {"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER} for b in available}
    if "now" in cyc:
        obj["now"] = cyc["now"]
    return extensible_from_json(obj, source="<oracle case>")


def _transfer(case: dict, conf: LoadBalancerConfig) -> list:
    """TransferShedder across the cycles, one instance (its hit count carried); the recently unloaded bundles
    and brokers carried as the driver carries them. Each cycle: its Success decisions (sorted), the unload
    counter's increments (a Skip's reason) and the hit count after it."""
    from engine.extensible.transfer_shedder import TransferShedder
    from engine.results import SKIP, SUCCESS

    s = TransferShedder()
    carry = bool(case.get("carryUnloaded"))
    bundles = {k: int(v) for k, v in (case.get("recentlyUnloadedBundles") or {}).items()}
    brokers = {k: int(v) for k, v in (case.get("recentlyUnloadedBrokers") or {}).items()}
    out = []
    for cyc in case["cycles"]:
        data = _ext_data(cyc, cyc.get("available"))
        now = int(cyc["now"])
        res = s.find_bundles_for_unloading(data, conf, bundles, brokers, now_ms=now)
        rows = sorted(([d.broker, d.bundle, d.destination, f"{d.label}:{d.reason}"]
                       for d in res.decisions if d.label == SUCCESS), key=json.dumps)
        counter = {f"{SKIP}:{res.reason_code}": 1} if res.label == SKIP else {}
        out.append({"decisions": rows, "counter": counter, "hitCount": s.unload_condition_hit_count})
        if carry:
            for d in res.decisions:
                if d.label == SUCCESS:
                    bundles[d.bundle] = now
                    brokers[d.broker] = now
    return out


def _extplace(case: dict, conf: LoadBalancerConfig) -> list:
    """The extensible filters over the available brokers, then the extensible LeastResourceUsageWithWeight."""
    from engine.extensible.filters import FilterContext
    from engine.extensible.placement import ExtensibleLeastResourceUsageWithWeight

    s = ExtensibleLeastResourceUsageWithWeight()
    rng = np.random.default_rng(0)
    out = []
    for step in case["steps"]:
        data = _ext_data(step)
        got = FilterContext(data, conf).filter(data.available_brokers, step["bundle"])
        cands = list(got.candidates)
        o = {"candidates": sorted(cands), "filterError": got.error is not None}
        if not cands:
            o.update(best=None, chosen=None)
        else:
            dec = s.select(cands, step["bundle"], data, conf, rng)
            o.update(best=sorted(dec.best), chosen=dec.broker)
        out.append(o)
    return out
