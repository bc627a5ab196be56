"""LoadData JSON (or one load report) as a :class:`~engine.model.LoadData`; an Extensible Load Manager
shape as an :class:`~engine.extensible.ExtensibleLoadData` (:mod:`engine.extensible.readers`).

Below :mod:`engine.io` (which re-exports :func:`load_data_from_json`) and :mod:`engine.fastload` (whose
fast path hands the non-bulk part of a big document to it); it imports only the leaf helpers of
:mod:`engine.inputs`, the model, and the readers of the ELM shapes and of policies.
"""
from __future__ import annotations

from .errors import InputError
from .inputs import finish_load_data as _finish, is_report as _is_report, json_file_stem as _json_file_stem
from .inputs import report_broker_id, resource_quota_from_json
from .limits import epoch_ms
from .model import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageBrokerData

__all__ = ["load_data_from_json", "TOP_KEYS"]

#: the document's keys read here besides ``brokers`` and ``bundleData`` (the fast reader,
#: :mod:`engine.fastload`, decodes these in its one pass; a new key is added here only)
TOP_KEYS = ("timeAverageData", "now", "preallocatedBundleData", "recentlyUnloadedBundles", "bundleTopics",
            "resourceQuotas", "defaultResourceQuota", "shedlabStrategyState", "shedlabPolicies")


def load_data_from_json(obj, source: str = "<json>", broker: str | None = None) -> LoadData:
    """Build a :class:`LoadData` from parsed LoadData JSON (or a single load report).

    An Extensible Load Manager shape — the container (``brokerLoadData``), one ``BrokerLoadData`` or
    ``TopBundlesLoadData`` value (its broker: ``broker``, else the file name), a ``{key, value}``
    message — gives an :class:`engine.extensible.ExtensibleLoadData` instead; the shapes are told
    apart by their fields (:func:`engine.extensible.readers.json_shape`), and an object that is none
    of them raises :class:`InputError` naming the shapes tried.
    """
    if isinstance(obj, dict) and "brokers" not in obj:  # "brokers": the modular LoadData (json_shape's first rule)
        from .extensible.readers import elm_from_json

        ext = elm_from_json(obj, source, broker)
        if ext is not None:
            return ext
    warnings: list[str] = []
    if _is_report(obj):
        # one report alone: the same rule as a directory (its own id; else --broker / the file name)
        rep = LocalBrokerData.from_json(obj, broker_id=report_broker_id(obj, broker or _json_file_stem(source)),
                                        path="", source=source, warnings=warnings)
        ld = LoadData(brokers={rep.broker_id: BrokerData(rep)}, warnings=warnings, source=source)
        _finish(ld)
        return ld
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object with \"brokers\", got {type(obj).__name__}", source=source)
    if "brokers" not in obj:
        raise InputError("missing \"brokers\" (broker id -> load report)", source=source, field="brokers")
    brokers_obj = obj["brokers"]
    if not isinstance(brokers_obj, dict):
        raise InputError("expected an object mapping broker id -> load report", source=source, field="brokers")
    ld = LoadData(warnings=warnings, source=source)
    for bid, rep in brokers_obj.items():
        path = f"brokers[{bid!r}]"
        local = LocalBrokerData.from_json(rep, broker_id=bid, path=path, source=source, warnings=warnings)
        if local.broker_id != bid:
            local.broker_id = bid
        ld.brokers[bid] = BrokerData(local)
    bd = obj.get("bundleData") or {}
    if not isinstance(bd, dict):
        raise InputError("expected an object mapping bundle -> BundleData", source=source, field="bundleData")
    for b, d in bd.items():
        ld.bundle_data[b] = BundleData.from_json(d, path=f"bundleData[{b!r}]", source=source, warnings=warnings)
    ta = obj.get("timeAverageData") or {}
    if not isinstance(ta, dict):
        raise InputError("expected an object mapping broker id -> TimeAverageBrokerData", source=source,
                         field="timeAverageData")
    for bid, t in ta.items():
        if bid in ld.brokers:
            ld.brokers[bid].time_average = TimeAverageBrokerData.from_json(
                t, path=f"timeAverageData[{bid!r}]", source=source, warnings=warnings)
    pre = obj.get("preallocatedBundleData") or {}
    if not isinstance(pre, dict):
        raise InputError("expected broker id -> {bundle: BundleData}", source=source, field="preallocatedBundleData")
    for bid, m in pre.items():
        if bid not in ld.brokers or not isinstance(m, dict):
            raise InputError("unknown broker or not an object", source=source, field=f"preallocatedBundleData[{bid!r}]")
        for b, d in m.items():
            ld.brokers[bid].preallocated[b] = BundleData.from_json(
                d, path=f"preallocatedBundleData[{bid!r}][{b!r}]", source=source, warnings=warnings)
    ru = obj.get("recentlyUnloadedBundles") or {}
    if not isinstance(ru, dict):
        raise InputError("expected bundle -> unload time (ms)", source=source, field="recentlyUnloadedBundles")
    for b, t in ru.items():
        ld.recently_unloaded[b] = epoch_ms(t, source, f"recentlyUnloadedBundles[{b!r}]")
    bt = obj.get("bundleTopics") or {}
    if not isinstance(bt, dict):
        raise InputError("expected bundle -> [topic names]", source=source, field="bundleTopics")
    for b, ts in bt.items():
        if not isinstance(ts, list) or not all(isinstance(x, str) for x in ts):
            raise InputError("expected a list of topic names", source=source, field=f"bundleTopics[{b!r}]")
        ld.bundle_topics[b] = list(ts)
    now = obj.get("now")
    if now is not None:
        ld.now_ms = epoch_ms(now, source, "now")
    rq = obj.get("resourceQuotas") or {}
    if not isinstance(rq, dict):
        raise InputError("expected bundle -> ResourceQuota", source=source, field="resourceQuotas")
    for b, q in rq.items():
        ld.resource_quotas[b] = resource_quota_from_json(q, f"{source}: resourceQuotas[{b!r}]")
    if obj.get("defaultResourceQuota") is not None:
        ld.default_resource_quota = resource_quota_from_json(obj["defaultResourceQuota"],
                                                             f"{source}: defaultResourceQuota")
    st = obj.get("shedlabStrategyState")
    if st is not None:
        if not isinstance(st, dict):
            raise InputError("expected strategy name -> state", source=source, field="shedlabStrategyState")
        ld.strategy_state = st
    if obj.get("shedlabPolicies") is not None:  # isolation / anti-affinity / failure domains (engine.policies)
        from .policies import attach, read_policies_json

        attach(ld, read_policies_json(obj["shedlabPolicies"], f"{source}: shedlabPolicies", "bundle"))
    _finish(ld)
    return ld
