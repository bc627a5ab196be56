"""Reading snapshots: LoadData JSON, load-report directories, ZooKeeper ``/loadbalance`` dumps,
timelines. Every problem becomes one :class:`InputError` naming the file and field.

Formats (``design.md``):

* **LoadData JSON** — ``{"brokers": {id: LocalBrokerData}, "bundleData": {bundle: BundleData},
  "timeAverageData": {id: TimeAverageBrokerData}, "preallocatedBundleData": {id: {bundle:
  BundleData}}, "recentlyUnloadedBundles": {bundle: ms}, "bundleTopics": {bundle: [topic]},
  "now": ms, "resourceQuotas": {bundle: ResourceQuota}, "defaultResourceQuota": ResourceQuota}``; all but
  ``brokers`` optional. A single load report (an object with ``brokerId`` or
  ``cpu``) is read as a one-broker snapshot. Shedlab extension: ``"shedlabStrategyState"`` —
  ``{strategy name: state}`` seeds a strategy's memory (e.g. ThresholdShedder history) to replay a
  leader exactly.
* **Extensible snapshot** — ``{"brokerLoadData": {id: BrokerLoadData}, "topBundlesLoadData": ...}``
  (layout in :mod:`engine.extensible.snapshot`): read as an ``ExtensibleLoadData``; so are the
  Extensible Load Manager's data as operators get it (:mod:`engine.extensible.readers`):
  ``pulsar-client consume`` output of its two load-data topics, ``{key, value}`` JSON lines, one
  ``BrokerLoadData`` / ``TopBundlesLoadData`` value, or a zip of them.
* **Load-report directory** — one ``pulsar-admin broker-stats load-report`` JSON per broker (``*.json``).
  Every way a report arrives (one file, a directory, a zip, several uploads) names its broker by one
  rule, :func:`report_broker_id`: the report's own id first, the file name only when it has none.
* **ZooKeeper dump** — a directory (or ``.zip``) holding ``brokers/<id>``,
  ``bundle-data/<tenant>/<ns>/<range>`` (and the legacy ``bundle-data/<prop>/<cluster>/<ns>/<range>``
  of v1 namespaces), ``broker-time-average/<id>`` and ``resource-quota/...`` files with the node
  contents (optionally under ``loadbalance/``); see :func:`load_zk_dump`.
* **Timeline** — a directory of snapshots in name order (each a LoadData JSON file, or a
  sub-directory of load reports / a ZK dump), or one JSON file holding a list of snapshots (or
  ``{"snapshots": [...]}``), or JSON lines.

This module is the dispatcher on top: the helpers every reader shares live in :mod:`engine.inputs`,
LoadData JSON in :mod:`engine.loaddata_json`, the ELM shapes in :mod:`engine.extensible.readers`,
policies in :mod:`engine.policies`; their names stay importable from here.
"""
from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Iterable

from .bounded import loads_json, read_zip
from .errors import InputError
from .fastload import FAST_MIN_BYTES
from .inputs import (MAX_INPUT_BYTES, _check_size, _finish, _is_report, _json_file_stem, _read_file,  # noqa: F401
                     read_input_bytes, read_input_text, read_json_bytes, report_broker_id, resource_quota_from_json)
from .limits import limit_bytes
from .loaddata_json import load_data_from_json
from .model import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageBrokerData

__all__ = ["MAX_INPUT_BYTES", "report_broker_id", "resource_quota_from_json", "read_input_bytes", "read_input_text", "load_snapshot", "load_snapshot_bytes", "load_data_from_json", "load_timeline",
           "load_report_dir", "load_zk_dump", "load_zk_zip", "save_snapshot", "read_json_bytes"]

def load_report_dir(path: Path, files: Iterable[Path] | None = None) -> LoadData:
    """A directory of ``broker-stats load-report`` JSON files (one per broker); each broker's id
    by :func:`report_broker_id` (the report's own, the file name only when it names none)."""
    path = Path(path)
    files = sorted(files if files is not None else [p for p in path.iterdir() if p.suffix == ".json"])
    if not files:
        raise InputError("no *.json load reports in the directory", source=str(path))
    ld = LoadData(source=str(path))
    for f in files:
        obj = read_json_bytes(_read_file(f), str(f))
        rep = LocalBrokerData.from_json(obj, broker_id=report_broker_id(obj, f.stem), source=str(f),
                                        warnings=ld.warnings)
        if rep.broker_id in ld.brokers:
            raise InputError(f"broker {rep.broker_id} appears twice", source=str(f), field="brokerId")
        ld.brokers[rep.broker_id] = BrokerData(rep)
    _finish(ld)
    return ld


def _zk_from_files(files: dict[str, bytes], source: str) -> LoadData:
    """``files``: posix relative path -> content, of a ``/loadbalance`` dump (see :func:`load_zk_dump`)."""
    # find the root: the prefix before "brokers/"
    roots = set()
    for p in files:
        parts = PurePosixPath(p).parts
        if "brokers" in parts:
            i = parts.index("brokers")
            roots.add(parts[:i])
    if not roots:
        raise InputError("not a ZooKeeper /loadbalance dump: no brokers/<id> files", source=source)
    root = min(roots, key=len)
    n = len(root)
    ld = LoadData(source=source)
    bdata, tavg = {}, {}
    quotas, legacy_quotas, ignored = {}, {}, []
    for p, raw in sorted(files.items()):
        parts = PurePosixPath(p).parts
        if parts[:n] != root or len(parts) <= n + 1:
            continue
        kind, rest = parts[n], parts[n + 1:]
        where = f"{source}:{p}"
        if kind in ("bundle-data", "resource-quota") and not raw.strip():
            continue  # a parent node (tenant, namespace) without data
        if kind == "brokers" and len(rest) == 1:
            if not raw.strip():
                continue  # lock node without data
            obj = read_json_bytes(raw, where)
            rep = LocalBrokerData.from_json(obj, broker_id=rest[0], source=where, warnings=ld.warnings)
            rep.broker_id = rest[0]
            ld.brokers[rest[0]] = BrokerData(rep)
        elif kind == "bundle-data" and len(rest) in (3, 4):
            # tenant/ns/range, or prop/cluster/ns/range of a v1 namespace: Pulsar's node is
            # BUNDLE_DATA_BASE_PATH + "/" + bundle name, whatever the namespace's form
            bdata["/".join(rest)] = BundleData.from_json(read_json_bytes(raw, where), source=where,
                                                         warnings=ld.warnings)
        elif kind == "broker-time-average" and len(rest) == 1:
            tavg[rest[0]] = TimeAverageBrokerData.from_json(read_json_bytes(raw, where), source=where,
                                                           warnings=ld.warnings)
        elif kind == "resource-quota" and rest == ("default",):
            ld.default_resource_quota = resource_quota_from_json(read_json_bytes(raw, where), where)
        elif kind == "resource-quota" and rest[0] == "namespace" and len(rest) in (4, 5):
            legacy_quotas["/".join(rest[1:])] = resource_quota_from_json(read_json_bytes(raw, where), where)
        elif kind == "resource-quota" and len(rest) in (3, 4):
            quotas["/".join(rest)] = resource_quota_from_json(read_json_bytes(raw, where), where)
        elif kind in ("bundle-data", "resource-quota"):
            ignored.append(p)
    if not ld.brokers:
        raise InputError("the dump has no broker load reports under brokers/", source=source)
    if ignored:
        shown = ", ".join(ignored[:5]) + (f" and {len(ignored) - 5} more" if len(ignored) > 5 else "")
        ld.warnings.append(f"{source}: ignored {len(ignored)} node(s) that are not a bundle's "
                           f"(<tenant>/<ns>/<range> or <prop>/<cluster>/<ns>/<range>): {shown}")
    both = sorted(set(quotas) & set(legacy_quotas))
    if both:
        ld.warnings.append(f"{source}: {len(both)} bundle(s) have a quota at both resource-quota/<bundle> and the "
                           f"older resource-quota/namespace/<bundle> (e.g. {both[0]}): the first is used, as "
                           "current Pulsar reads only that one")
    ld.resource_quotas = {**legacy_quotas, **quotas}
    # the leader's bundleData holds the bundles the brokers report (lastStats); a bundle-data node no
    # broker reports is only in the store, and updateBundleData forgets and deletes it
    active = {b for bd in ld.brokers.values() for b in bd.local.last_stats}
    stale = [b for b in bdata if b not in active]
    if stale:
        ld.warnings.append(f"{source}: {len(stale)} bundle-data node(s) of bundles no broker reports (e.g. "
                           f"{stale[0]}) are left out: Pulsar's leader builds its bundle data from the brokers' "
                           "lastStats and deletes those nodes (updateBundleData)")
    ld.bundle_data.update((b, d) for b, d in bdata.items() if b in active)
    for bid, t in tavg.items():
        if bid in ld.brokers:
            ld.brokers[bid].time_average = t
    from .policies import attach, policies_from_files  # admin/clusters/..., admin/local-policies/... nodes

    attach(ld, policies_from_files(files, source))
    _finish(ld)
    return ld


def load_zk_dump(path: Path) -> LoadData:
    """A ZooKeeper ``/loadbalance`` dump directory (one file per znode, holding its data).

    Read: ``brokers/<id>`` (LocalBrokerData; the node name is the broker id),
    ``bundle-data/<tenant>/<ns>/<range>`` and, for v1 namespaces, the 4-segment
    ``bundle-data/<prop>/<cluster>/<ns>/<range>`` (BundleData; the bundle is the path after
    ``bundle-data/``, as ``LoadBalanceResources.BundleDataResources`` stores it),
    ``broker-time-average/<id>`` (TimeAverageBrokerData), and the ResourceQuota nodes:
    ``resource-quota/<bundle>`` (``LoadBalanceResources.QuotaResources``, what current Pulsar reads),
    the older ``resource-quota/namespace/<bundle>`` (``ResourceQuotaCache``, Pulsar 2.x) and
    ``resource-quota/default``. Any other ``bundle-data`` / ``resource-quota`` node with data is
    listed in one warning; nodes without data (parents) are skipped. The snapshot's bundle data is
    the leader's: the ``bundle-data`` nodes of the bundles some broker reports in its ``lastStats``
    (``ModularLoadManagerImpl.updateBundleData``); a node of a bundle no broker reports is left out
    with a warning (the leader deletes it from the store).

    Notes
    -----
    A bundle's quota is used where Pulsar uses it: ``ModularLoadManagerImpl.getBundleDataOrDefault``
    starts a bundle that has no ``bundle-data`` node from its quota (both averages at the quota's
    rates, with full sample counts) instead of 50 msg/s and 50 KB/s — see
    :meth:`engine.model.LoadData.ensure_bundle_data` and the default BundleData of a bundle placed
    for the first time (:meth:`engine.view.LoadView.bundle_data`). The default quota is kept on the
    snapshot (``default_resource_quota``) but changes no decision: the modular load manager does not
    fall back to it (only the legacy ``SimpleLoadManagerImpl`` did).
    """
    path = Path(path)
    files = {}
    total = 0
    for p in path.rglob("*"):
        if p.is_file():
            raw = _read_file(p)
            total += len(raw)
            if total > limit_bytes("SHEDLAB_MAX_ZIP_MB"):
                raise InputError("the dump is larger than the SHEDLAB_MAX_ZIP_MB limit", source=str(path))
            files[p.relative_to(path).as_posix()] = raw
    return _zk_from_files(files, str(path))


def _zk_member(name: str) -> bool:
    return "brokers" in PurePosixPath(name).parts


def load_zk_zip(raw: bytes, source: str) -> LoadData:
    """A zipped ZooKeeper dump, read in memory (archive paths are never used on disk; the zip limits
    of :func:`engine.bounded.read_zip` apply)."""
    files = read_zip(raw, source)
    return _zk_from_files(files, source)


def load_snapshot_bytes(raw: bytes, source: str, broker: str | None = None) -> LoadData:
    """A snapshot from bytes (an upload): LoadData/report JSON or a zipped ZK dump / report set, or the
    Extensible Load Manager's data (:mod:`engine.extensible.readers`; ``broker`` names the broker of a
    single ``BrokerLoadData`` value)."""
    if len(raw) >= FAST_MIN_BYTES and raw[:2] != b"PK":
        # a big LoadData JSON (one object with "brokers", so not ELM data): read as columns
        from .fastload import snapshot_bytes_fast

        fast = snapshot_bytes_fast(raw, source)
        if fast is not None:
            return fast
    from .extensible.readers import elm_from_bytes

    ext = elm_from_bytes(raw, source, broker)
    if ext is not None:
        return ext
    if raw[:2] == b"PK":
        files = read_zip(raw, source)
        if any(_zk_member(n) for n in files):
            return _zk_from_files(files, source)
        # a zip of load reports
        ld = LoadData(source=source)
        for name, content in files.items():
            if not name.endswith(".json"):
                continue
            where = f"{source}:{name}"
            obj = read_json_bytes(content, where)
            from .policies import is_policy_member

            if is_policy_member(name, obj):
                continue  # a policy file beside the reports: read below
            stem = PurePosixPath(name).stem
            rep = LocalBrokerData.from_json(obj, broker_id=report_broker_id(obj, stem), source=where,
                                            warnings=ld.warnings)
            if rep.broker_id in ld.brokers:
                raise InputError(f"broker {rep.broker_id} appears twice", source=where, field="brokerId")
            ld.brokers[rep.broker_id] = BrokerData(rep)
        if not ld.brokers:
            raise InputError("the archive holds neither a /loadbalance dump nor load reports", source=source)
        from .policies import attach, policies_from_files

        attach(ld, policies_from_files(files, source))
        _finish(ld)
        return ld
    return load_data_from_json(read_json_bytes(raw, source), source, broker)


def load_snapshot(path, broker: str | None = None) -> LoadData:
    """A snapshot from a path: LoadData JSON file, load-report directory, ZK dump directory or zip, or
    the Extensible Load Manager's data (``broker``: see :func:`load_snapshot_bytes`). ``"-"`` reads
    standard input (bounded like a file: ``SHEDLAB_MAX_INPUT_MB``)."""
    if str(path) == "-":
        return load_snapshot_bytes(read_input_bytes("-"), "<stdin>", broker)
    p = Path(path)
    try:
        exists, is_dir = p.exists(), p.is_dir()
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte, ...
        raise InputError(f"cannot open: {getattr(exc, 'strerror', None) or exc}", source=str(p)[:200]) from None
    if not exists:
        raise InputError("no such file or directory", source=str(p))
    if is_dir:
        if (p / "brokers").is_dir() or (p / "loadbalance" / "brokers").is_dir():
            return load_zk_dump(p)
        return load_report_dir(p)
    return load_snapshot_bytes(_read_file(p), str(p), broker)


def load_timeline(path) -> list[LoadData]:
    """An ordered list of snapshots (see the module docstring for the accepted layouts)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", source=str(p))
    if p.is_dir():
        entries = sorted(x for x in p.iterdir() if not x.name.startswith("."))
        snaps = []
        for e in entries:
            if e.is_dir() or e.suffix in (".json", ".zip"):
                snaps.append(load_snapshot(e))
        if not snaps:
            raise InputError("no snapshots (*.json, *.zip or sub-directories) in the timeline directory", source=str(p))
        return snaps
    raw = _read_file(p)
    from .extensible.readers import elm_from_bytes

    ext = elm_from_bytes(raw, str(p))  # consume output / {key, value} lines: one ELM snapshot
    if ext is not None:
        return [ext]
    try:
        obj = read_json_bytes(raw, str(p))
    except InputError:
        # JSON lines
        snaps = []
        for i, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
            if line.strip():
                try:
                    obj = loads_json(line, f"{p}:{i}")
                except InputError as exc:
                    raise InputError(f"line {i}: {exc.message}", source=str(p)) from None
                snaps.append(load_data_from_json(obj, f"{p}:{i}"))
        if not snaps:
            raise
        return snaps
    if isinstance(obj, dict) and "snapshots" in obj:
        obj = obj["snapshots"]
    if isinstance(obj, list):
        if not obj:
            raise InputError("the timeline is empty", source=str(p))
        return [load_data_from_json(o, f"{p}[{i}]") for i, o in enumerate(obj)]
    return [load_data_from_json(obj, str(p))]


def save_snapshot(ld: LoadData, path) -> None:
    """Write a snapshot as LoadData JSON."""
    Path(path).write_text(json.dumps(ld.to_json(), indent=1))
