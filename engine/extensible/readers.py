"""The Extensible Load Manager's load data as an operator can get it, read into an :class:`ExtensibleLoadData`.

The ELM keeps its load data in two non-persistent system topics, table views keyed by broker id
(``ExtensibleLoadManagerImpl.BROKER_LOAD_DATA_STORE_TOPIC`` / ``TOP_BUNDLES_LOAD_DATA_STORE_TOPIC``);
there is no REST endpoint for them. Accepted, each alone, several together, or in one zip:

* **``pulsar-client consume`` output** of either topic (``CmdConsume`` / ``AbstractCmdConsume``, default
  ``bytes`` schema): a ``----- got message -----`` line, then
  ``[publishTime:[MS], eventTime:[MS], ]key:[BROKER], properties:[...], content:JSON`` (the
  ``publishTime``/``eventTime`` prefix is printed by Pulsar 3.x clients, not by 2.x ones; a 4.x/5.x
  client's ``--print-metadata`` suffix after the JSON and client log lines in between are skipped).
  ``content:null`` is a tombstone (the broker left).
* **``{key, value}`` JSON lines** — one message per line, ``value`` the Jackson JSON of the value (or
  that JSON as a string, or ``null``); other members (``topic``, ``publishTime``...) are ignored.
* **one value**: a ``BrokerLoadData`` (``data/BrokerLoadData.java``) or a ``TopBundlesLoadData``
  (``{"topBundlesLoadData": [{"bundleName", "stats": NamespaceBundleStats}]}``) — the broker is the
  one given (``--broker`` on the command line), else the file name without its extension.
* the **container** of :mod:`engine.extensible.snapshot` (``{"brokerLoadData": ..., "topBundlesLoadData": ...}``).
* beside them (or in the zip), the cluster's **policies** (:mod:`engine.policies`): ``ns-isolation-policy
  list``, anti-affinity groups, ``clusters list-failure-domains`` JSON, the ZooKeeper ``admin/...`` nodes,
  or the container's ``shedlabPolicies`` key; the snapshot carries them, so ``BrokerIsolationPoliciesFilter``,
  ``AntiAffinityGroupPolicyFilter`` and ``loadBalancerSheddingBundlesWithPoliciesEnabled`` apply.

As Pulsar's ``TableView``, the last message of a key wins, in file order; which topic a message
came from is told by its value (``BrokerLoadData`` fields vs ``topBundlesLoadData``).

Telling shapes apart (:func:`json_shape`): a single JSON object is a modular ``LoadData``
(``brokers``), an ELM container (``brokerLoadData``), a ``TopBundlesLoadData`` (``topBundlesLoadData``),
a ``{key, value}`` message, a modular load report (``LocalBrokerData``: any of
:data:`MODULAR_REPORT_FIELDS`) or a ``BrokerLoadData`` (any of :data:`BROKER_LOAD_DATA_FIELDS`, none of
the modular ones). Anything else is refused with the shapes tried and the field that decided.

Departures: the bundle owners are those of the top-K lists (a bundle outside every broker's top
``loadBalancerMaxNumberOfBundlesInBundleLoadReport`` is not seen; the service-unit channel is not
read), and every broker with load data counts as available (the broker registry is not read) —
both said in the snapshot's warnings.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import PurePosixPath

from ..errors import InputError
from .snapshot import ExtensibleLoadData, extensible_from_json

__all__ = ["BROKER_LOAD_DATA_TOPIC", "TOP_BUNDLES_TOPIC", "MESSAGE_BOUNDARY", "BROKER_LOAD_DATA_FIELDS",
           "MODULAR_REPORT_FIELDS", "ELM_SHAPES", "json_shape", "elm_from_json", "elm_from_bytes", "elm_from_files",
           "is_elm_bytes", "parse_consume_text", "parse_json_lines", "display_load_data"]

BROKER_LOAD_DATA_TOPIC = "non-persistent://pulsar/system/loadbalancer-broker-load-data"
TOP_BUNDLES_TOPIC = "non-persistent://pulsar/system/loadbalancer-top-bundles-load-data"
#: what ``pulsar-client consume`` prints before each message (``AbstractCmdConsume.MESSAGE_BOUNDARY``)
MESSAGE_BOUNDARY = "----- got message -----"
#: fields only ``BrokerLoadData`` has (a modular ``LocalBrokerData`` has none of them)
BROKER_LOAD_DATA_FIELDS = ("weightedMaxEMA", "msgThroughputEMA", "bundleCount", "updatedAt", "reportedAt")
#: fields only a modular load report (``LocalBrokerData``) has
MODULAR_REPORT_FIELDS = ("brokerId", "lastStats", "lastUpdate", "numBundles", "numTopics", "bundles",
                         "webServiceUrl", "pulsarServiceUrl", "loadReportType", "lastBundleGains")
_SHAPES_TRIED = ("modular LoadData (\"brokers\")", "modular load report (LocalBrokerData: lastStats, lastUpdate, "
                 "numBundles, webServiceUrl...)", "ELM container (\"brokerLoadData\")",
                 "BrokerLoadData (weightedMaxEMA, bundleCount, updatedAt...)",
                 "TopBundlesLoadData (\"topBundlesLoadData\")", "{key, value} message")
_MSG = re.compile(r"(?:publishTime:\[[^\]\n]*\], eventTime:\[[^\]\n]*\], )?key:\[(?P<key>[^\n]*?)\], "
                  r"(?:properties:\[(?P<props>[^\n]*?)\], )?content:")
_MAX_MESSAGES = 200_000

# ------------------------------------------------------------------------------------------ shapes
MODULAR_LOADDATA, MODULAR_REPORT = "modular LoadData", "modular load report"
CONTAINER, BROKER_LOAD, TOP_BUNDLES, RECORD = "ELM container", "BrokerLoadData", "TopBundlesLoadData", "{key, value}"
#: the shapes :func:`json_shape` names that are the Extensible Load Manager's
ELM_SHAPES = (CONTAINER, BROKER_LOAD, TOP_BUNDLES, RECORD)


def json_shape(obj, source: str | None = None) -> tuple[str, str]:
    """``(shape, deciding field)`` of one parsed JSON object; :class:`InputError` when it is none of them.

    >>> json_shape({"cpu": {"usage": 1, "limit": 8}, "weightedMaxEMA": 0.4})
    ('BrokerLoadData', 'weightedMaxEMA')
    >>> json_shape({"cpu": {"usage": 1, "limit": 8}, "lastStats": {}})
    ('modular load report', 'lastStats')
    """
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}; tried: {'; '.join(_SHAPES_TRIED)}",
                         source=source)
    if "brokers" in obj:
        return MODULAR_LOADDATA, "brokers"
    if "brokerLoadData" in obj:
        return CONTAINER, "brokerLoadData"
    if "topBundlesLoadData" in obj:
        return TOP_BUNDLES, "topBundlesLoadData"
    if "key" in obj and "value" in obj:
        return RECORD, "value"
    elm = next((k for k in BROKER_LOAD_DATA_FIELDS if k in obj), None)
    mod = next((k for k in MODULAR_REPORT_FIELDS if k in obj), None)
    if elm and mod:
        raise InputError(f"both a modular load report field ({mod!r}) and a BrokerLoadData field ({elm!r}): "
                         "cannot tell which load manager wrote it", source=source, field=elm)
    if elm:
        return BROKER_LOAD, elm
    if mod:
        return MODULAR_REPORT, mod
    if "cpu" in obj:  # a bare resource-usage report: read as a modular load report, as before
        return MODULAR_REPORT, "cpu"
    keys = ", ".join(sorted(map(str, obj))[:8]) or "none"
    # the deciding field: "brokers" (the modular LoadData) is missing, and no other shape's field is there
    raise InputError(f"missing \"brokers\": neither a modular nor an Extensible Load Manager shape; tried "
                     f"{'; '.join(_SHAPES_TRIED)}; none of their fields is present (keys: {keys})", source=source,
                     field="brokers")


def _stem(source: str | None) -> str | None:
    """The file name without its extension (``"d/broker-1:8080.json"`` → ``"broker-1:8080"``)."""
    if not source:
        return None
    s = str(source).replace("\\", "/")
    if ".zip:" in s:
        s = s.rsplit(".zip:", 1)[1]
    name = s.rsplit("/", 1)[-1]
    for ext in (".json", ".jsonl", ".ndjson", ".txt", ".log", ".out"):
        if name.lower().endswith(ext):
            return name[: -len(ext)] or None
    return name or None


def _broker_for_value(broker: str | None, source: str | None, field: str) -> str:
    b = broker or _stem(source)
    if not b:
        raise InputError("a single value names no broker: give it with --broker ID or in the file name "
                         "(e.g. broker-1:8080.json)", source=source, field=field)
    return b


# ------------------------------------------------------------------------------------------ messages
class _Messages:
    """Messages in arrival order, folded as a TableView: last value per key wins, ``None`` removes."""

    def __init__(self, source: str):
        self.source = source
        self.broker: dict = {}
        self.top: dict = {}
        self.n = 0
        self.notes: list[str] = []
        #: the cluster's policies read beside the messages (engine.policies.ClusterPolicies) or None
        self.policies = None

    def add_policies(self, got) -> None:
        if got is not None and not got.empty:
            self.policies = got if self.policies is None else self.policies.merge(got)

    def add(self, key, value, where: str, kind: str | None = None) -> str | None:
        """Fold one message; returns the topic kind it belonged to (``"broker"``/``"top"``/None)."""
        self.n += 1
        if self.n > _MAX_MESSAGES:
            raise InputError(f"more than {_MAX_MESSAGES} messages", source=self.source)
        if not isinstance(key, str) or not key or key == "null":
            raise InputError("a message without a key: the key names the broker on the ELM's topics",
                             source=where, field="key")
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                raise InputError("value is text that is not JSON", source=where, field="value") from None
        if value is None:  # a tombstone: the broker's entry is deleted
            stores = {"broker": (self.broker,), "top": (self.top,)}.get(kind, (self.broker, self.top))
            for s in stores:
                s.pop(key, None)
            return kind
        shape, fld = json_shape(value, where)
        if shape == TOP_BUNDLES:
            self.top[key] = (value, where)
            return "top"
        if shape == BROKER_LOAD:
            self.broker[key] = (value, where)
            return "broker"
        raise InputError(f"a {shape} ({fld!r}) where a BrokerLoadData or TopBundlesLoadData value was expected",
                         source=where, field=fld)

    def build(self, extra_warnings=()) -> ExtensibleLoadData:
        from .broker_load_data import BrokerLoadData
        from .snapshot import _top_list

        # validate each value where it was read, so an error names the line, then build the container
        for k, (v, where) in self.broker.items():
            BrokerLoadData.from_json(v, f"key {k!r}", where, [])
        for k, (v, where) in self.top.items():
            _top_list(v, f"key {k!r}", where, [])
        obj = {"brokerLoadData": {k: v for k, (v, _) in self.broker.items()},
               "topBundlesLoadData": {k: v for k, (v, _) in self.top.items()}}
        data = extensible_from_json(obj, self.source)
        data.warnings[:0] = list(extra_warnings) + self.notes
        if self.broker and not self.top:
            data.warnings.append(f"{self.source}: no top-bundles load data: TransferShedder can tell whether to "
                                 f"shed but sees no bundle to move (consume {TOP_BUNDLES_TOPIC} too)")
        total = sum(d.bundle_count for d in data.broker_load_data.values())
        listed = len(data.owners())
        if self.top and total > listed:
            data.warnings.append(f"{self.source}: the brokers report {total} bundles (bundleCount) and their top-K "
                                 f"lists show {listed}: the others are not drawn (TransferShedder only ever picks "
                                 "from the top-K lists, loadBalancerMaxNumberOfBundlesInBundleLoadReport)")
        if self.broker or self.top:
            data.warnings.append(f"{self.source}: bundle owners are taken from the brokers' top-K lists and every "
                                 "broker with load data counts as available (the ELM's channel and registry "
                                 "are not in these topics)")
        if self.policies is not None:
            from ..policies import attach

            attach(data, self.policies)
        return data


def parse_consume_text(text: str, source: str) -> list[tuple[str, object, str]]:
    """``(key, value, where)`` of each message ``pulsar-client consume`` printed (value ``None``: tombstone).

    >>> t = "----- got message -----\\nkey:[b1:8080], properties:[], content:{\\"weightedMaxEMA\\":0.5}\\n"
    >>> parse_consume_text(t, "c.txt")
    [('b1:8080', {'weightedMaxEMA': 0.5}, 'c.txt:2')]
    """
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.strip() == MESSAGE_BOUNDARY]
    if not starts:
        raise InputError(f"no {MESSAGE_BOUNDARY!r} line: not pulsar-client consume output", source=source)
    dec = json.JSONDecoder()
    out = []
    for n, i in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        where = f"{source}:{i + 2}"
        block = "\n".join(lines[i + 1:end])
        m = _MSG.search(block)
        if m is None:
            raise InputError("expected 'key:[...], properties:[...], content:...' after the message line",
                             source=where, field="key")
        body = block[m.end():].lstrip()
        if body.startswith("null") and (len(body) == 4 or not body[4].isalnum()):
            out.append((m.group("key"), None, where))
            continue
        try:
            value, _ = dec.raw_decode(body)
        except RecursionError:
            raise InputError("content nests too deeply", source=where, field="content") from None
        except ValueError as exc:
            hint = ""
            if re.match(r"\{\w+=", body):
                hint = " (printed with --schema-type auto_consume: consume with the default bytes schema)"
            elif re.match(r"[0-9a-fA-F]{8} ", body):
                hint = " (a --hex dump: consume without --hex)"
            raise InputError(f"content is not JSON: {exc.msg}{hint}", source=where, field="content") from None
        out.append((m.group("key"), value, where))
    return out


def parse_json_lines(text: str, source: str) -> list[tuple[str, object, str]]:
    """``(key, value, where)`` of each ``{key, value}`` JSON line (blank lines skipped)."""
    out = []
    for i, ln in enumerate(text.splitlines(), 1):
        if not ln.strip():
            continue
        where = f"{source}:{i}"
        try:
            obj = json.loads(ln)
        except RecursionError:
            raise InputError("the line nests too deeply", source=where) from None
        except ValueError as exc:
            raise InputError(f"not valid JSON: {exc.msg} at column {getattr(exc, 'colno', '?')}", source=where) from None
        if not isinstance(obj, dict) or "key" not in obj or "value" not in obj:
            raise InputError("expected a {\"key\": BROKER, \"value\": ...} message", source=where,
                             field="key" if isinstance(obj, dict) and "key" not in obj else "value")
        out.append((obj["key"], obj["value"], where))
    return out


# ------------------------------------------------------------------------------------------ entry points
def _decode(raw: bytes, source: str) -> str | None:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _text_kind(text: str) -> str | None:
    """``"consume"``, ``"jsonl"`` (``{key, value}`` lines) or None."""
    if MESSAGE_BOUNDARY in text:
        return "consume"
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{") and '"key"' in first and '"value"' in first:
        try:
            obj = json.loads(first)
        except (ValueError, RecursionError):
            return None
        if isinstance(obj, dict) and "key" in obj and "value" in obj and "brokers" not in obj:
            return "jsonl"
    return None


def is_elm_bytes(raw: bytes, source: str = "") -> bool:
    """Cheap test: consume output, ``{key, value}`` lines, or one ELM-shaped JSON value."""
    if raw[:2] == b"PK":
        return False
    text = _decode(raw, source)
    if text is None:
        return False
    if _text_kind(text):
        return True
    try:
        shape = json_shape(json.loads(text), source)[0]
    except (ValueError, RecursionError, InputError):
        return False
    return shape in ELM_SHAPES


def _fold_file(msgs: _Messages, raw: bytes, name: str, broker: str | None) -> bool:
    """Fold one file's messages into ``msgs``; False when the file is not an ELM input."""
    text = _decode(raw, name)
    if text is None:
        return False
    kind = _text_kind(text)
    if kind is not None:
        recs = parse_consume_text(text, name) if kind == "consume" else parse_json_lines(text, name)
        kinds = set()  # the topic of this file, told by its values (a tombstone carries none)
        for key, value, where in recs:
            if value is None:
                msgs.add(key, None, where, next(iter(kinds)) if len(kinds) == 1 else None)
            else:
                kinds.add(msgs.add(key, value, where))
        return True
    from ..inputs import read_json_bytes

    obj = read_json_bytes(raw, name)
    try:
        shape, fld = json_shape(obj, name)
    except InputError:
        from ..policies import classify_policy_json, read_policies_json

        kind = classify_policy_json(obj)
        if kind is None:
            raise
        msgs.add_policies(read_policies_json(obj, name, kind))  # a policy file beside the ELM data
        return True
    if shape == CONTAINER:
        data = extensible_from_json(obj, name)
        from ..policies import policies_of

        msgs.add_policies(policies_of(data))  # its shedlabPolicies
        for b, d in data.broker_load_data.items():
            msgs.add(b, d.to_json(), f"{name}:brokerLoadData[{b!r}]")
        for b, lst in data.top_bundles.items():
            msgs.add(b, {"topBundlesLoadData": [x.to_json() for x in lst]}, f"{name}:topBundlesLoadData[{b!r}]")
        return True
    if shape in (BROKER_LOAD, TOP_BUNDLES):
        b = _broker_for_value(broker, name, fld)
        if not broker:
            msgs.notes.append(f"{name}: broker id {b!r} taken from the file name")
        msgs.add(b, obj, name)
        return True
    if shape == RECORD:
        msgs.add(obj.get("key"), obj.get("value"), name)
        return True
    return False


def elm_from_json(obj, source: str = "<json>", broker: str | None = None) -> ExtensibleLoadData | None:
    """An ELM snapshot from one parsed JSON object; ``None`` for a modular shape (the caller reads it).

    Raises :class:`InputError` for an object that is neither (shapes tried, deciding field).
    """
    shape, fld = json_shape(obj, source)
    if shape in (MODULAR_LOADDATA, MODULAR_REPORT):
        return None
    if shape == CONTAINER:
        return extensible_from_json(obj, source)
    msgs = _Messages(source)
    if shape == RECORD:
        msgs.add(obj.get("key"), obj.get("value"), source)
    else:
        b = _broker_for_value(broker, source, fld)
        if not broker:
            msgs.notes.append(f"{source}: broker id {b!r} taken from the file name")
        msgs.add(b, obj, source)
    return msgs.build()


def _zip_members(raw: bytes, source: str, limit: int, first_only: bool = False) -> list[tuple[str, bytes]]:
    """(name, bytes) of the zip's files in name order (never written to disk; hidden files skipped).

    Read by :func:`engine.bounded.read_zip`: member count, bytes counted while decompressing
    (``limit`` is ``SHEDLAB_MAX_INPUT_MB`` per member), encrypted members, unsafe names and corrupt
    data are refused with one ``InputError``."""
    from ..bounded import read_zip

    files = read_zip(raw, source, want=lambda n: not PurePosixPath(n).name.startswith("."))
    out = sorted((n, b) for n, b in files.items() if not PurePosixPath(n).name.startswith("."))
    return out[:1] if first_only else out


def elm_from_files(files: list[tuple[bytes, str]], source: str, broker: str | None = None,
                   policies=None) -> ExtensibleLoadData:
    """One ELM snapshot from several files (both topics' consume output, JSON lines, single values).

    Every file must be an ELM input or a policy JSON file (:mod:`engine.policies`: ``ns-isolation-policy
    list``, anti-affinity groups, failure domains, the bundle); the first one that is neither raises
    :class:`InputError` naming it. ``policies`` (a ``ClusterPolicies``, e.g. a zip's ZooKeeper
    ``admin/...`` nodes) are attached too.
    """
    msgs = _Messages(source)
    msgs.add_policies(policies)
    for raw, name in files:
        if not _fold_file(msgs, raw, name, broker if len(files) == 1 else None):
            raise InputError("not Extensible Load Manager data (pulsar-client consume output, {key, value} lines, "
                             "a BrokerLoadData / TopBundlesLoadData value or the container)", source=name)
    return msgs.build()


def _is_policy_json(raw: bytes) -> bool:
    """A small JSON file in one of the policy shapes of :mod:`engine.policies`."""
    if len(raw) > 8 * 1024 * 1024 or raw.lstrip()[:1] not in (b"{", b"\xef"):
        return False
    from ..policies import classify_policy_json

    try:
        return classify_policy_json(json.loads(raw.decode("utf-8-sig"))) is not None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


def elm_from_bytes(raw: bytes, source: str, broker: str | None = None) -> ExtensibleLoadData | None:
    """An ELM snapshot from consume output, ``{key, value}`` lines or a zip of ELM files; ``None`` otherwise.

    A single JSON value is left to the caller (parsed once, then :func:`elm_from_json`). A zip is ELM
    when its first member that is not a policy file is (then every member must be ELM data or a policy
    file: loose policy JSON or ZooKeeper ``admin/...`` nodes, attached as the snapshot's policies).
    """
    from ..inputs import MAX_INPUT_BYTES

    if raw[:2] == b"PK":
        members = _zip_members(raw, source, MAX_INPUT_BYTES)
        admin = {n: b for n, b in members if "admin" in PurePosixPath(n).parts}  # ZooKeeper policy nodes
        rest = [(n, b) for n, b in members if n not in admin]
        first = next(((n, b) for n, b in rest if not _is_policy_json(b)), None)
        if first is None or not is_elm_bytes(first[1], first[0]):
            return None
        from ..policies import policies_from_files

        pol = policies_from_files(admin, source) if admin else None
        return elm_from_files([(b, f"{source}:{n}") for n, b in rest], source, broker, policies=pol)
    text = _decode(raw, source)
    if text is None or not _text_kind(text):
        return None  # one JSON value: the caller parses it once and asks elm_from_json
    return elm_from_files([(raw, source)], source, broker)


# ------------------------------------------------------------------------------------------ pages
def display_load_data(ext: ExtensibleLoadData):
    """A modular-shaped ``LoadData`` of an ELM snapshot *for drawing only* (per-broker bars, bundle lists).

    Each broker's ``BrokerLoadData`` gives the usages, rates and throughputs; its top-K list gives
    ``lastStats`` and ``bundles`` (the top-K bundles it owns). The ELM snapshot itself is kept as
    ``ld.elm``: every decision (TransferShedder, the ELM's placement) runs on it, never on this view.
    """
    from ..inputs import finish_load_data as _finish
    from ..model import BrokerData, LoadData, LocalBrokerData
    from .snapshot import EXTENSIBLE_LOAD_MANAGER

    owners = ext.owners()
    ld = LoadData(source=ext.source, warnings=list(ext.warnings), now_ms=ext.now)
    ld.strategy_state = dict(ext.strategy_state)
    ld.recently_unloaded = dict(ext.recently_unloaded)
    for b in ext.brokers:
        d = ext.broker_load_data.get(b)
        if d is None:
            continue
        top = {x.bundle_name: x.stats for x in ext.top_bundles.get(b, []) if owners.get(x.bundle_name) == b}
        look = ext.lookup_data(b)
        loc = LocalBrokerData(b, cpu=d.cpu, memory=d.memory, direct_memory=d.direct_memory,
                              bandwidth_in=d.bandwidth_in, bandwidth_out=d.bandwidth_out,
                              msg_throughput_in=d.msg_throughput_in, msg_throughput_out=d.msg_throughput_out,
                              msg_rate_in=d.msg_rate_in, msg_rate_out=d.msg_rate_out, last_update=d.updated_at,
                              last_stats=dict(top), num_topics=d.topics, num_bundles=d.bundle_count,
                              bundles=list(top), broker_version_string=look.broker_version,
                              load_manager_class_name=look.load_manager_class_name or EXTENSIBLE_LOAD_MANAGER)
        ld.brokers[b] = BrokerData(loc)
    _finish(ld)
    ld.warnings = list(dict.fromkeys(ld.warnings))
    ld.elm = ext
    if getattr(ext, "cluster_policies", None) is not None:  # for the page (summary, broker groups) only
        ld.cluster_policies = ext.cluster_policies
    return ld
