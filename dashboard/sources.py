"""Where the data comes from: shipped samples, uploads and the live-cluster collector.

Heavy data never goes to the browser. An upload is parsed and validated once, stored in the app's
diskcache under a random token (``snap:<token>``, :func:`_token`: 80 random bits, not the content hash),
and listed in the session's index (``sess:<session id>:sources``); the browser keeps only the small source
id (``upload:<token>``). Another session opens an upload only with its id (a permalink carries it).
Each process keeps the few snapshots it recently used, parsed and with their columnar view, in
memory, so a slider move never re-reads or re-parses anything.

Source ids
----------
``sample:<name>``   a shipped sample (:mod:`engine.samples`)
``upload:<hash>``   an uploaded snapshot or timeline
``live:<hash>``     a snapshot taken by the collector (:mod:`dashboard.collect`)
``history:<hash>``  a minute of a history dataset the History page saved for the Tuner (diskcache key
                    ``history-snapshot:<hash>``, contract in :mod:`dashboard.history.snapshot`); the
                    Tuner opens it from ``/tuner?snapshot=history-snapshot:<hash>`` (:func:`open_history`)

Uploaded file names are shown to the user (and name the file in error messages) but never used as
paths: archives and files are read in memory only.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import zipfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath

from engine.config import parse_broker_conf
from engine.errors import InputError
from engine.extensible.readers import display_load_data, elm_from_bytes, elm_from_files, is_elm_bytes
from engine.bounded import loads_json, loads_yaml, read_zip
from engine.fastload import (FAST_MIN_BYTES, ColumnarLoadData, load_bytes_typed, load_data_fast, parse_json_fast,
                             snapshot_bytes_fast)
from engine.gcquiet import freeze_all, no_gc
from engine.io import load_data_from_json, load_snapshot_bytes, read_json_bytes, report_broker_id
from engine.model import LoadData
from engine.samples import SAMPLES, load_sample
from engine.view import LoadView

from . import uploads
from .memo import Memo
from .cache import get_cache, get_waiting, is_stored, set_behind
from .keys import fmt_conf_value

__all__ = ["MAX_UPLOAD_BYTES", "DEFAULT_SOURCE", "HISTORY_PREFIX", "Snapshot", "Ingested", "parse_source_id",
           "session_key", "display_name", "decode_upload", "ingest_files", "store_load_data", "get_snapshot",
           "source_info", "source_options", "sample_state", "list_session_sources", "get_scenario", "list_scenarios",
           "clear_memory", "history_source_id", "open_history"]

#: largest upload (per file), shown beside the drop zone and re-checked on the server. 100 MB (the
#: engine's SHEDLAB_MAX_INPUT_MB) fits a 1,000-broker, 100,000-bundle LoadData JSON (64 MB); its base64
#: data URL (133 MB) fits the request limit (SHEDLAB_MAX_REQUEST_MB, 160)
MAX_UPLOAD_BYTES = int(float(os.getenv("SHEDLAB_MAX_UPLOAD_MB", "100")) * 1024 * 1024)
#: the view a new user opens on: a real ThresholdShedder decision (field findings §1.1)
DEFAULT_SOURCE = "sample:bigo-threshold-first-unload"
_TTL = int(float(os.getenv("SHEDLAB_UPLOAD_TTL_DAYS", "7")) * 86400)
_MAX_SESSION_SOURCES = 30
#: a snapshot of at least this many bundles (times its steps) is written to the diskcache behind the upload
#: (:func:`dashboard.cache.set_behind`): at 1,000,000 bundles the pickle and the write take ~2 s
BEHIND_BUNDLES = 100_000
_ID = re.compile(r"(sample):([a-z0-9][a-z0-9-]{0,80})|(upload|live):([0-9a-f]{20})|(history):([0-9a-f]{24})")
#: diskcache key prefix of a History minute (``dashboard.history.snapshot.SNAPSHOT_PREFIX``)
HISTORY_PREFIX = "history-snapshot:"
_HISTORY_KEY = re.compile(r"history-snapshot:([0-9a-f]{24})")
#: identifiers are checked whole (``fullmatch``): ``$`` would also match before a final newline
_SESSION = re.compile(r"[0-9a-f]{32}")
_SCENARIO_KEYS = {"events", "scenario", "duration", "minutes", "traffic", "namespaces", "topics", "ticks"}


# ------------------------------------------------------------------------------------------ ids
def parse_source_id(source_id) -> tuple[str, str]:
    """``"sample:x"`` → ``("sample", "x")``; anything malformed raises :class:`InputError`."""
    if not isinstance(source_id, str):
        raise InputError("no data source chosen", field="src")
    m = _ID.fullmatch(source_id.strip())
    if not m:
        raise InputError(f"not a data source id: {source_id[:60]!r}", field="src")
    if m.group(1):
        if m.group(2) not in SAMPLES:
            raise InputError(f"unknown sample {m.group(2)!r}", field="src")
        return "sample", m.group(2)
    if m.group(5):
        return "history", m.group(6)
    return m.group(3), m.group(4)


def history_source_id(key) -> str:
    """``"history-snapshot:<24 hex>"`` (the History page's ``?snapshot=`` key) → ``"history:<24 hex>"``.

    Anything else raises :class:`InputError`: the key only ever selects a diskcache entry by its
    hash, never a file.
    """
    m = _HISTORY_KEY.fullmatch(key.strip()) if isinstance(key, str) else None
    if not m:
        shown = key[:60] if isinstance(key, str) else type(key).__name__
        raise InputError(f"not a History snapshot key: {shown!r} (expected history-snapshot:<24 hex digits>)",
                         field="snapshot")
    return f"history:{m.group(1)}"


def session_key(session_id) -> str | None:
    """The session id if it looks like one of ours (exactly 32 hex digits, nothing around them, made by
    the server with ``secrets.token_hex``), else ``None``: a malformed id gets no session list at all (it never shares
    one with other malformed ids), so what it uploads is reachable only through the returned id."""
    return session_id if isinstance(session_id, str) and _SESSION.fullmatch(session_id) else None


display_name = uploads.safe_label


# ------------------------------------------------------------------------------------------ snapshots
@dataclass
class Snapshot:
    """One snapshot of a source, parsed, with its columnar view built on first use."""

    id: str
    ld: LoadData
    info: dict
    step: int = 0
    steps: int = 1

    @cached_property
    def view(self) -> LoadView:
        v = LoadView.from_load_data(self.ld)
        return v

    @property
    def label(self) -> str:
        return self.info.get("label", self.id)


@dataclass
class Ingested:
    """What an upload produced: new sources, a scenario, broker.conf values, and messages."""

    sources: list = field(default_factory=list)  # info dicts of new snapshot/timeline sources
    scenarios: list = field(default_factory=list)  # info dicts of stored scenarios
    conf: dict | None = None  # {"values": {key: text}, "label", "ignored"}
    errors: list = field(default_factory=list)  # one line each, naming the file
    notes: list = field(default_factory=list)


_mem = Memo(8)  # the last snapshots parsed, as live objects


def _freeze() -> None:
    """Move the just-parsed snapshot's objects out of the cyclic GC's reach.

    A 10,000-bundle LoadData is ~10^5 long-lived objects; without this, a full collection can land in
    the middle of a slider release and cost 50-100 ms. Frozen objects are still freed by reference
    counting when the cache drops them.
    """
    freeze_all()


def clear_memory() -> None:
    """Forget the in-process snapshot cache (tests)."""
    _mem.clear()


def _info(source_id: str, kind: str, label: str, lds: list, extra: dict | None = None) -> dict:
    ld = lds[-1]
    counts = getattr(ld, "counts", None)  # engine.fastload: without building the object model
    if counts is not None and not ld.materialised:
        n_brokers, n_bundles = counts()
    else:
        n_brokers, n_bundles = len(ld.brokers), len(ld.bundle_data)
    n_bundles = n_bundles or len({b for bd in ld.brokers.values() for b in bd.local.bundles})
    warnings = [w for x in lds for w in x.warnings][:5]
    info = {"id": source_id, "kind": kind, "label": label, "brokers": n_brokers, "bundles": n_bundles,
            "steps": len(lds), "warnings": warnings}
    from engine.policies import policies_of

    pol = policies_of(ld)
    if pol is not None:  # the cluster's isolation / anti-affinity / failure-domain policies
        info["policies"] = pol.summary()
    if extra:
        info.update(extra)
    return info


def _load_payload(source_id: str) -> dict:
    """``{"lds": [LoadData...], "info": {...}}`` of a source (memory, then diskcache, then samples)."""
    got = _mem.get(("payload", source_id))
    if got is not None:
        return got
    kind, name = parse_source_id(source_id)
    if kind == "sample":
        ld = load_sample(name)
        s = SAMPLES[name]
        payload = {"lds": [ld], "info": _info(source_id, "sample", s.title, [ld], {"description": s.description})}
    elif kind == "history":
        payload = _history_payload(source_id, name)
    else:
        payload = get_waiting(f"snap:{name}")
        if payload is None:
            raise InputError("this uploaded snapshot is no longer on the server (it expired or the cache was "
                             "cleared): upload it again", source=source_id)
    _mem.put(("payload", source_id), payload)
    _freeze()
    return payload


def _history_payload(source_id: str, digest: str) -> dict:
    """A History minute from the diskcache (contract: :mod:`dashboard.history.snapshot`), validated."""
    key = HISTORY_PREFIX + digest
    obj = get_cache().get(key)
    if obj is None:
        raise InputError("this History minute is no longer on the server (entries expire after 7 days, or the "
                         "cache was cleared): open it again from the History page", source=key)
    if not isinstance(obj, dict) or not isinstance(obj.get("brokers"), dict):
        raise InputError("not a LoadData snapshot (no brokers)", source=key)
    ld = load_data_from_json(obj, key)
    if not isinstance(ld, LoadData):
        raise InputError("not a modular LoadData snapshot", source=key)
    meta = obj.get("shedlabHistory") if isinstance(obj.get("shedlabHistory"), dict) else {}
    dataset = display_name(str(meta.get("dataset") or "")) if meta.get("dataset") else "history"
    minute = str(meta.get("minute") or "")[:16].replace("T", " ") or "?"
    strategy = meta.get("strategy") if isinstance(meta.get("strategy"), str) else None
    raw_conf = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    config = {str(k): (v if isinstance(v, str) else fmt_conf_value(v)) for k, v in raw_conf.items()}
    raw_ev = meta.get("event") if isinstance(meta.get("event"), dict) else {}
    event = {k: str(raw_ev[k])[:200] for k in ("broker", "partner", "trigger", "bundles") if raw_ev.get(k) is not None}
    label = f"History · {dataset} · minute {minute}"
    hist = {"dataset": str(meta.get("dataset") or ""), "minute": str(meta.get("minute") or ""),
            "strategy": strategy, "config": config, "event": event, "key": key}
    return {"lds": [ld], "info": _info(source_id, "history", label, [ld], {"history": hist})}


def get_snapshot(source_id: str, step: int | None = None) -> Snapshot:
    """The snapshot of a source (the last step of a timeline unless ``step`` is given)."""
    payload = _load_payload(source_id)
    lds = payload["lds"]
    n = len(lds)
    k = n - 1 if step is None else max(0, min(n - 1, int(step)))
    key = ("snap", source_id, k)
    snap = _mem.get(key)
    if snap is None:
        snap = Snapshot(source_id, lds[k], payload["info"], k, n)
        _mem.put(key, snap)
    return snap


def source_info(source_id: str) -> dict:
    """Small, JSON-friendly facts about a source (what the shell's Store keeps)."""
    return dict(_load_payload(source_id)["info"])


def sample_state(source_id: str) -> dict | None:
    """The broker.conf keys a sample ships with (``{"values": {key: text}}``), None for others.

    A History minute (``history:<hash>``) gives the backtest's strategy and changed keys, so one
    shedding cycle in the Tuner reproduces the backtest's decision (its placement: the one Pulsar
    pairs with that strategy, AvgShedder for AvgShedder).
    """
    try:
        kind, name = parse_source_id(source_id)
    except InputError:
        return None
    if kind == "history":
        return _history_state(source_id)
    if kind != "sample":
        return _elm_state(source_id)
    cfg = SAMPLES[name].config
    return {"values": {k: fmt_conf_value(v) for k, v in cfg.items()}}


def _history_state(source_id: str) -> dict | None:
    try:
        hist = source_info(source_id).get("history") or {}
    except InputError:
        return None
    from engine.strategies import registry

    values = dict(hist.get("config") or {})
    shed = hist.get("strategy")
    if shed:
        try:
            shed = registry.shedding_name(shed)
            values.setdefault("loadBalancerLoadSheddingStrategy", registry.fqn(shed))
            values.setdefault("loadBalancerLoadPlacementStrategy", registry.fqn(registry.default_placement(shed)))
        except Exception:  # noqa: BLE001 - an unknown name: coerce_state reports the strategy key
            values.setdefault("loadBalancerLoadSheddingStrategy", str(shed))
    return {"values": values}


def _elm_state(source_id: str) -> dict | None:
    """An Extensible Load Manager snapshot (``info["elm"]``) runs the shedding strategy of that load manager
    with the placement the registry pairs with it (:func:`engine.strategies.registry.default_placement`)
    under ``ExtensibleLoadManagerImpl``; None for any other upload."""
    try:
        if not source_info(source_id).get("elm"):
            return None
    except InputError:
        return None
    from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER
    from engine.strategies import registry
    from engine.strategies.spec import EXTENSIBLE

    shed = registry.specs(role="shedding", load_manager=EXTENSIBLE)[0].name
    return {"values": {"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER,
                       "loadBalancerLoadSheddingStrategy": registry.fqn(shed),
                       "loadBalancerLoadPlacementStrategy": registry.fqn(registry.default_placement(shed))}}


def open_history(sid, key) -> dict:
    """Open a History minute (``?snapshot=<key>``): validate the key, load the snapshot, list it among the
    session's sources (the picker shows "History · <dataset> · minute <m>") and return its info.

    Raises :class:`InputError` for a malformed key or a missing / expired / malformed entry.
    """
    info = source_info(history_source_id(key))
    _remember(sid, "sources", info)
    return info


# ------------------------------------------------------------------------------------------ session index
def _sess_list_key(sid: str, what: str) -> str | None:
    sk = session_key(sid)
    return f"sess:{sk}:{what}" if sk else None


def _remember(sid: str, what: str, info: dict) -> None:
    cache = get_cache()
    key = _sess_list_key(sid, what)
    if key is None:
        return
    with cache.transact():
        items = [x for x in (cache.get(key) or []) if x.get("id") != info["id"]]
        items.insert(0, info)
        cache.set(key, items[:_MAX_SESSION_SOURCES], expire=_TTL)


def list_session_sources(sid) -> list[dict]:
    """This session's uploaded and collected sources, newest first (still on the server)."""
    key = _sess_list_key(sid, "sources")
    items = (get_cache().get(key) if key else None) or []
    return [x for x in items if is_stored((HISTORY_PREFIX if x.get("kind") == "history" else "snap:")
                                          + x["id"].split(":", 1)[1])]


def list_scenarios(sid) -> list[dict]:
    """This session's uploaded scenario files, newest first (for the Simulator page)."""
    key = _sess_list_key(sid, "scenarios")
    items = (get_cache().get(key) if key else None) or []
    cache = get_cache()
    return [x for x in items if f"scen:{x['id'].split(':', 1)[1]}" in cache]


def get_scenario(scenario_id: str) -> dict:
    """``{"text", "data", "info"}`` of a stored scenario (``scenario:<hash>``)."""
    m = re.match(r"^scenario:([0-9a-f]{20})$", scenario_id or "")
    if not m:
        raise InputError(f"not a scenario id: {str(scenario_id)[:60]!r}")
    got = get_cache().get(f"scen:{m.group(1)}")
    if got is None:
        raise InputError("this scenario is no longer on the server: upload it again", source=scenario_id)
    return got


def source_options(sid) -> list[dict]:
    """Options of the shell's source picker: the samples, then this session's own sources."""
    opts = [{"label": f"Sample · {s.title}", "value": f"sample:{s.name}", "title": s.description}
            for s in SAMPLES.values()]
    for x in list_session_sources(sid):
        if x["kind"] == "history":  # the label says "History · <dataset> · minute <m>" already
            opts.append({"label": f"{x['label']} ({x['brokers']} brokers)", "value": x["id"]})
            continue
        what = "Live" if x["kind"] == "live" else ("Timeline" if x.get("steps", 1) > 1 else "Upload")
        if x.get("elm"):
            what += " · Extensible LM"
        opts.append({"label": f"{what} · {x['label']} ({x['brokers']} brokers)", "value": x["id"]})
    return opts


# ------------------------------------------------------------------------------------------ storing
def _hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        early = _early_digests.get(id(p))
        h.update(early[1].result() if early is not None and early[0] is p else hashlib.sha256(p).digest())
    return h.hexdigest()[:20]


#: id(bytes) -> (the bytes, future of their sha256 digest): big uploads are hashed on a thread while
#: they are parsed (hashlib lets go of the GIL on big inputs; the parsers hold it)
_early_digests: dict = {}


def _hash_early(files: list):
    """Start hashing the big files of an upload (:func:`_hash` then waits for those digests); returns
    the executor (``None`` when no file is big), to be shut down with :func:`_hash_done`."""
    big = [raw for raw, _ in files if len(raw) >= FAST_MIN_BYTES]
    if not big:
        return None
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-hash")
    for raw in big:
        _early_digests[id(raw)] = (raw, pool.submit(lambda r: hashlib.sha256(r).digest(), raw))
    return pool


def _hash_done(files: list, pool) -> None:
    if pool is None:
        return
    for raw, _ in files:
        got = _early_digests.get(id(raw))
        if got is not None and got[0] is raw:
            del _early_digests[id(raw)]
    pool.shutdown(wait=False, cancel_futures=True)


def _token(sid, kind: str, digest: str, stored: str) -> str:
    """The id of an upload: 20 random hex digits (80 bits from :mod:`secrets`), never the content hash,
    so nobody opens someone else's upload by hashing a file they guess. The same content uploaded again
    in the same session gets its earlier id back while that is still stored (``stored`` formats the
    cache key of an id). Whoever is given the id — a permalink carries it — can open the upload."""
    cache = get_cache()
    sk = session_key(sid)
    own = f"own:{sk}:{kind}:{digest}" if sk else None
    if own:
        prev = cache.get(own)
        if isinstance(prev, str) and is_stored(stored.format(prev)):
            return prev
    tok = secrets.token_hex(10)
    if own:
        cache.set(own, tok, expire=_TTL)
    return tok


def _page_lds(lds: list) -> tuple[list, dict | None]:
    """The pages draw modular-shaped snapshots: an Extensible Load Manager snapshot becomes its
    :func:`~engine.extensible.readers.display_load_data` (the ELM data kept as ``ld.elm``; every decision
    runs on it, see :func:`dashboard.tuner.analysis.build_manager`). Returns the list and the ``elm`` info flag."""
    if not any(getattr(x, "extensible", False) for x in lds):
        return lds, None
    return [display_load_data(x) if getattr(x, "extensible", False) else x for x in lds], {"elm": True}


def _store(sid, kind: str, digest: str, label: str, lds: list, extra=None) -> dict:
    lds, elm = _page_lds(lds)
    if elm:
        extra = {**(extra or {}), **elm}
    digest = _token(sid, kind, digest, "snap:{}")
    source_id = f"{kind}:{digest}"
    info = _info(source_id, kind, label, lds, extra)
    payload = {"lds": lds, "info": info}
    _mem.put(("payload", source_id), payload)
    # a big one is written behind: this process reads it from memory, another waits for it (get_waiting)
    behind = info["bundles"] * max(1, info["steps"]) >= BEHIND_BUNDLES
    if not behind:
        with no_gc():  # pickling a big snapshot makes ~10^5 short-lived tuples and no cycles: without this,
            # their allocations set off collections over everything the upload built
            get_cache().set(f"snap:{digest}", payload, expire=_TTL)
    freeze_all(collect=False)  # as _freeze, without the full collection (the upload waits for this)
    if behind:  # after the freeze: the pickling's collections then pass over its own young objects only
        set_behind(f"snap:{digest}", payload, expire=_TTL)
    _remember(sid, "sources", info)  # (after the marker: the list shows what is stored or being written)
    return info


def store_load_data(sid, obj: dict, label: str, kind: str = "live") -> dict:
    """Validate and store a LoadData JSON object (the collector's output) as a new source."""
    raw = json.dumps(obj, sort_keys=True).encode()
    ld = load_data_from_json(obj, label)
    return _store(sid, kind, _hash(raw), label, [ld])


# ------------------------------------------------------------------------------------------ uploads
def decode_upload(contents, name: str) -> bytes:
    """The bytes of a ``dcc.Upload`` data URL, size-checked before and after decoding."""
    return uploads.decode_data_url(contents, name, MAX_UPLOAD_BYTES, env="SHEDLAB_MAX_UPLOAD_MB")


def _looks_like_report(obj) -> bool:
    return (isinstance(obj, dict) and "brokers" not in obj
            and ("brokerId" in obj or "lastStats" in obj or ("cpu" in obj and "bandwidthIn" in obj)))


def _is_elm_value(obj) -> bool:
    """One ELM-shaped JSON object (container, BrokerLoadData, TopBundlesLoadData, {key, value}): a
    ``BrokerLoadData`` has ``topics``, which alone would look like a scenario key."""
    from engine.extensible.readers import ELM_SHAPES, json_shape

    try:
        return isinstance(obj, dict) and json_shape(obj)[0] in ELM_SHAPES
    except InputError:
        return False


def _is_scenario(obj) -> bool:
    if not isinstance(obj, dict) or "bundleData" in obj or "timeAverageData" in obj:
        return False
    if isinstance(obj.get("brokers"), list):  # a scenario lists brokers; LoadData maps id -> report
        return True
    if set(obj) & _SCENARIO_KEYS:
        brokers = obj.get("brokers")
        if isinstance(brokers, dict) and brokers and all(_looks_like_report(v) for v in brokers.values()):
            return False
        return True
    return False


_PROP_LINE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_.\-]*\s*[=:]")


def _text(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not a text file, a JSON file or a zip archive", source=name) from None


def _classify_text(text: str, name: str) -> str:
    ext = PurePosixPath(name).suffix.lower()
    s = text.lstrip()
    if ext in (".yaml", ".yml"):
        return "yaml"
    if ext in (".conf", ".properties"):
        return "conf"
    if s.startswith(("{", "[")) or ext in (".json", ".jsonl", ".ndjson"):
        return "json"
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "!"))]
    if lines and all(_PROP_LINE.match(ln) for ln in lines[:50]):
        if any("=" in ln.split(":", 1)[0] for ln in lines[:50]):
            return "conf"
        if any(ln.split(":", 1)[0].strip().startswith(("loadBalancer", "loadManager", "maxUnload", "minUnload"))
               for ln in lines[:50]):
            return "conf"
        return "yaml"
    raise InputError("not a recognised file: expected LoadData or load-report JSON, a zip of a ZooKeeper "
                     "/loadbalance dump or of load reports, a timeline, a scenario (YAML/JSON) or a broker.conf",
                     source=name)


def _parse_json_loose(raw: bytes, name: str):
    """JSON, or JSON lines (a timeline)."""
    try:
        return read_json_bytes(raw, name)
    except InputError as first:
        text = raw.decode("utf-8-sig", errors="replace")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
            out = []
            for i, ln in enumerate(lines, 1):
                try:
                    out.append(loads_json(ln, name))  # nesting limit (engine.bounded)
                except InputError as exc:
                    raise InputError(f"line {i}: {exc.message}", source=name) from None
            return {"__jsonl__": out}
        raise first


def _snapshots_from_json(obj, name: str) -> tuple[str, list]:
    """("snapshot" | "timeline", [LoadData...]) from parsed JSON."""
    if isinstance(obj, dict) and "__jsonl__" in obj:
        obj = obj["__jsonl__"]
    if isinstance(obj, dict) and isinstance(obj.get("snapshots"), list):
        obj = obj["snapshots"]
    if isinstance(obj, list):
        if not obj:
            raise InputError("an empty list: expected snapshots", source=name)
        if all(_looks_like_report(x) for x in obj):
            return "snapshot", [_combine_reports([(x, f"{name}[{i}]") for i, x in enumerate(obj)], name)]
        return "timeline", [load_data_from_json(x, f"{name}[{i}]") for i, x in enumerate(obj)]
    # a modular snapshot or report, or an Extensible Load Manager value / container (told apart by their fields)
    return "snapshot", [load_data_from_json(obj, name)]


def _combine_reports(reports: list, label: str) -> LoadData:
    """Several ``broker-stats load-report`` objects → one snapshot; each broker id by the engine's one
    rule (:func:`engine.io.report_broker_id`: the report's own, the file name only when it names none)."""
    brokers = {}
    for obj, where in reports:
        if not _looks_like_report(obj):
            raise InputError("not a broker load report (no brokerId / lastStats)", source=where)
        bid = report_broker_id(obj, PurePosixPath(display_name(where)).stem or f"broker-{len(brokers) + 1}")
        if bid in brokers:
            raise InputError(f"broker {bid} appears twice", source=where, field="brokerId")
        brokers[bid] = obj
    return load_data_from_json({"brokers": brokers}, label)


def _zip_kind(raw: bytes, name: str) -> str:
    """"timeline" for a zip of LoadData snapshots, else "snapshot" (ZK dump or load reports)."""
    files = read_zip(raw, name)  # member count, bytes while decompressing, encryption (engine.bounded)
    if any("brokers" in PurePosixPath(n).parts[:-1] for n in files):
        return "snapshot"
    jsons = sorted(n for n in files if n.endswith(".json"))
    if not jsons:
        return "snapshot"
    try:
        obj = loads_json(files[jsons[0]], name)
    except InputError:
        return "snapshot"
    return "timeline" if isinstance(obj, dict) and "brokers" in obj else "snapshot"


def _zip_timeline(raw: bytes, name: str) -> list:
    files = read_zip(raw, name)
    out = []
    for n in sorted(n for n in files if n.endswith(".json")):
        where = f"{name}:{PurePosixPath(n).name}"
        out.append(load_data_from_json(read_json_bytes(files[n], where), where))
    if not out:
        raise InputError("the archive holds no snapshots", source=name)
    return out


def _validate_scenario(obj, name: str) -> dict:
    """The simulator's own validation (``engine.simulator.parse_scenario``): one message naming the field."""
    try:
        from engine.simulator.scenario import parse_scenario
    except ImportError:  # pragma: no cover - the simulator engine is part of the project
        return {}
    sc = parse_scenario(obj, source=name)
    return {"name": sc.name, "title": sc.title or sc.name, "minutes": sc.minutes, "brokers": len(sc.brokers)}


def _scenario(sid, raw: bytes, text: str, obj, name: str) -> dict:
    if not isinstance(obj, dict):
        raise InputError("a scenario must be a mapping (a YAML or JSON object) with brokers, namespaces and "
                         "events", source=name)
    facts = _validate_scenario(obj, name)
    digest = _token(sid, "scenario", _hash(raw), "scen:{}")
    scen_id = f"scenario:{digest}"
    info = {"id": scen_id, "label": name, "keys": sorted(map(str, obj))[:12], "bytes": len(raw), **facts}
    get_cache().set(f"scen:{digest}", {"text": text, "data": obj, "info": info}, expire=_TTL)
    _remember(sid, "scenarios", info)
    return info


def _one_file(sid, raw: bytes, name: str, out: Ingested, policies=None, policy_raws=(), parsed=None) -> None:
    """One uploaded file; ``policies`` (policy files uploaded beside it) go with its snapshots."""
    if raw[:2] == b"PK":
        if _zip_kind(raw, name) == "timeline":
            lds = _zip_timeline(raw, name)
        else:
            lds = [load_snapshot_bytes(raw, name)]
        out.sources.append(_store(sid, "upload", _hash(raw, *policy_raws), name, _with_policies(lds, policies)))
        return
    obj = (parsed or {}).get(id(raw))
    if isinstance(obj, ColumnarLoadData):  # read already by _policy_files (engine.fastload)
        fast = obj
    else:
        fast = load_data_fast(obj, name) if obj is not None else snapshot_bytes_fast(raw, name)  # engine.fastload
    if fast is not None:
        out.sources.append(_store(sid, "upload", _hash(raw, *policy_raws), name, _with_policies([fast], policies)))
        return
    ext = elm_from_bytes(raw, name)  # pulsar-client consume output / {key, value} lines of the ELM's topics
    if ext is not None:
        out.sources.append(_store(sid, "upload", _hash(raw, *policy_raws), name, _with_policies([ext], policies)))
        return
    text = _text(raw, name)
    kind = _classify_text(text, name)
    if kind == "conf":
        parsed = parse_broker_conf(text, source=name)
        if not parsed.applied:
            raise InputError(f"no load-balancer keys found ({len(parsed.unknown)} other keys ignored)", source=name)
        values = {k: fmt_conf_value(getattr(parsed.config, k)) for k in parsed.applied}
        conf = out.conf or {"values": {}, "label": name, "ignored": 0}
        conf["values"].update(values)
        conf["ignored"] += len(parsed.unknown)
        out.conf = conf
        return
    if kind == "yaml":
        obj = loads_yaml(text, name)  # safe loader, nesting / alias-expansion / size limits (engine.bounded)
        out.scenarios.append(_scenario(sid, raw, text, obj, name))
        return
    obj = _parse_json_loose(raw, name)
    if not _is_elm_value(obj) and _is_scenario(obj):
        out.scenarios.append(_scenario(sid, raw, text, obj, name))
        return
    what, lds = _snapshots_from_json(obj, name)
    out.sources.append(_store(sid, "upload", _hash(raw, *policy_raws), name, _with_policies(lds, policies)))


def _with_policies(lds: list, policies) -> list:
    """Attach uploaded policy files to every snapshot of a source (``engine.policies``)."""
    if policies is not None:
        from engine.policies import attach

        for ld in lds:
            attach(ld, policies)
    return lds


def _policy_files(files: list, out: Ingested, parsed: dict | None = None):
    """Split the namespace-isolation / anti-affinity / failure-domain JSON files (``engine.policies``)
    off the uploads: (other files, merged policies or None, their raw bytes). A big JSON that is not a
    policy file is parsed once, by the fast parser, and kept in ``parsed`` (``id(raw)`` -> object, or a big
    LoadData JSON's snapshot read as columns by ``engine.fastload.load_bytes_typed``) for :func:`_one_file`."""
    from engine.policies import classify_policy_json, read_policies_json

    rest, pol, raws = [], None, []
    for raw, label in files:
        kind = None
        if raw[:2] != b"PK" and raw.lstrip()[:1] in (b"{", b"\xef"):
            try:
                obj = None
                if len(raw) >= FAST_MIN_BYTES:  # a big LoadData JSON read as columns at once (engine.fastload)
                    probe: dict = {}
                    typed = load_bytes_typed(raw, label, probe)
                    if typed is not None and classify_policy_json(probe["top"]) is None:
                        if parsed is not None:
                            parsed[id(raw)] = typed
                        rest.append((raw, label))
                        continue
                    obj = parse_json_fast(raw, label)
                if obj is not None and classify_policy_json(obj) is None:
                    if parsed is not None:
                        parsed[id(raw)] = obj
                    rest.append((raw, label))
                    continue
                obj = read_json_bytes(raw, label)
                kind = classify_policy_json(obj)
            except InputError:
                kind = None
        if kind is None:
            rest.append((raw, label))
            continue
        try:
            got = read_policies_json(obj, label, kind)
        except InputError as exc:
            out.errors.append(str(exc))
            continue
        pol = got if pol is None else pol.merge(got)
        raws.append(raw)
        out.notes.append(f"{label}: {got.summary()} (applied to the snapshot uploaded with it)")
    return rest, pol, raws


def ingest_files(sid, contents, names) -> Ingested:
    """Parse, validate and store uploaded files; never raises (problems become ``errors``).

    Several load reports uploaded together make one snapshot; other files are handled one by one,
    so one bad file does not lose the others.
    """
    out = Ingested()
    if contents is None:
        return out
    if isinstance(contents, str):
        contents, names = [contents], [names]
    names = list(names or [])
    names += [None] * (len(contents) - len(names))
    files = []
    for c, n in zip(contents, names):
        label = display_name(n)
        try:
            files.append((decode_upload(c, label), label))
        except InputError as exc:
            out.errors.append(str(exc))
    pool = _hash_early(files)
    try:
        return _ingest(sid, files, out)
    finally:
        _hash_done(files, pool)


def _ingest(sid, files: list, out: Ingested) -> Ingested:
    if len(files) > 1 and all(is_elm_bytes(raw, label) for raw, label in files):
        # e.g. both topics' consume output, or one BrokerLoadData per broker: one ELM snapshot
        try:
            label = f"{len(files)} Extensible Load Manager files"
            ext = elm_from_files([(raw, n) for raw, n in files], label)
            out.sources.append(_store(sid, "upload", _hash(*[r for r, _ in files]), label, [ext]))
        except InputError as exc:
            out.errors.append(str(exc))
        return out
    big_json: dict = {}  # id(raw) -> a big JSON parsed once (engine.fastload)
    files, policies, policy_raws = _policy_files(files, out, big_json)
    if policies is not None and not files:
        out.errors.append("policy files need a snapshot: upload them together with the LoadData JSON, load "
                          "reports or ZooKeeper dump (or put them in its zip)")
        return out
    if policies is not None and len(files) > 1 and all(is_elm_bytes(raw, label) for raw, label in files):
        # the ELM's files with the cluster's policy files beside them: one ELM snapshot carrying them
        try:
            label = f"{len(files)} Extensible Load Manager files"
            ext = elm_from_files([(raw, n) for raw, n in files], label, policies=policies)
            out.sources.append(_store(sid, "upload", _hash(*[r for r, _ in files], *policy_raws), label, [ext]))
        except InputError as exc:
            out.errors.append(str(exc))
        return out
    if len(files) > 1:
        parsed = []
        for raw, label in files:
            try:
                obj = read_json_bytes(raw, label) if raw[:2] != b"PK" else None
            except InputError:
                obj = None
            parsed.append(obj)
        if all(_looks_like_report(o) for o in parsed):
            try:
                label = f"{len(files)} load reports"
                ld = _combine_reports([(o, n) for o, (_, n) in zip(parsed, files)], label)
                out.sources.append(_store(sid, "upload", _hash(*[r for r, _ in files], *policy_raws), label,
                                          _with_policies([ld], policies)))
            except InputError as exc:
                out.errors.append(str(exc))
            return out
    for raw, label in files:
        try:
            _one_file(sid, raw, label, out, policies, policy_raws, big_json)
        except InputError as exc:
            out.errors.append(str(exc))
        except (RecursionError, MemoryError, zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as exc:
            out.errors.append(f"{label}: cannot read the file ({type(exc).__name__})")
    return out
