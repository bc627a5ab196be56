"""Topic lists for the bundle tools: read from ``pulsar-admin`` output or a snapshot, or generate them.

Formats (detected from the content by :func:`read_topics`):

``topics-list``
    Text of ``pulsar-admin topics list <tenant/ns>`` (one full name per line; partitions appear as
    ``...-partition-N``) and/or ``pulsar-admin topics list-partitioned-topics <tenant/ns>`` (one
    partitioned topic per line). Blank lines and ``#`` comments are ignored; a JSON array of names
    (older ``pulsar-admin`` output) is accepted too. A partitioned topic listed by its base name is
    expanded into its partitions when its partition count is given (``partitions_of``); without a
    count it is kept as one name (it is hashed as such, like a non-partitioned topic).
``broker-stats``
    JSON of ``pulsar-admin broker-stats topics``:
    ``{namespace: {bundle: {"persistent": {topic: stats}, "non-persistent": {...}}}}``. Per-topic
    ``msgRateIn``, ``msgRateOut``, ``msgThroughputIn``, ``msgThroughputOut`` give traffic;
    ``producerCount`` (or the ``publishers`` list) plus the ``consumers`` of every subscription give
    sessions; the bundle key is kept as the topic's reported bundle.
``bundle-topics``
    A LoadData snapshot JSON with ``bundleTopics`` (bundle → list of topic names). The bundles named
    anywhere in the snapshot (``bundleTopics``, ``bundleData``, brokers' ``bundles``/``lastStats``)
    give each namespace's layout when they cover its whole hash range.
``generated``
    ``gen:NAME[:K][,NAME[:K]...]``: the ``K`` partitions Pulsar creates for ``NAME`` (no ``:K``:
    the one non-partitioned topic), e.g. ``gen:persistent://vivo/ns/t:30``.

Every reader returns a :class:`TopicList` of normalised full names (duplicates dropped, first
occurrence kept). Bad input raises :class:`engine.errors.InputError` naming the file and the line
or JSON path.

Examples
--------
>>> tl = read_topics_text("persistent://a/b/t-partition-0\\n# comment\\na/b/u\\n")
>>> tl.names
('persistent://a/b/t-partition-0', 'persistent://a/b/u')
>>> generate_topics("gen:a/b/t:2").names
('persistent://a/b/t-partition-0', 'persistent://a/b/t-partition-1')
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .bundles import (
    TopicName,
    boundaries_from_ranges,
    parse_bundle_name,
    parse_range,
    parse_topic_name,
    partition_names,
)
from .errors import InputError
from .limits import MAX_COUNT, MAX_QUANTITY

__all__ = [
    "TopicList",
    "MAX_TOPICS",
    "MAX_FILE_BYTES",
    "read_topics",
    "read_topics_text",
    "parse_topics_list",
    "parse_broker_stats_topics",
    "parse_bundle_topics",
    "generate_topics",
    "load_topics",
]

#: refuse inputs with more topics than this (memory guard)
MAX_TOPICS = 10_000_000
#: refuse files larger than this
MAX_FILE_BYTES = 1 << 30

_PARTITION = re.compile(r"(.*)-partition-(0|[1-9][0-9]{0,9})", re.ASCII | re.DOTALL)
_INT_MAX = 2**31 - 1
_RATE_KEYS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")


@dataclass(frozen=True, eq=False)
class TopicList:
    """Topic names with optional per-topic traffic and reported bundles.

    Attributes
    ----------
    names : tuple of str
        Full topic names (each partition separately), unique, in input order.
    format : str
        ``topics-list``, ``broker-stats``, ``bundle-topics`` or ``generated``.
    source : str or None
        File (or ``gen:`` spec) the names came from.
    msg_rate_in, msg_rate_out, msg_throughput_in, msg_throughput_out : ndarray or None
        Per-topic traffic (msg/s, bytes/s) when the input has it.
    sessions : ndarray or None
        Per-topic producers + consumers when the input has them.
    reported_bundles : tuple or None
        Full bundle name each topic was reported under (``None`` entries when unknown).
    layouts : dict
        ``{namespace: boundaries}`` when the input names a namespace's complete set of bundles.
    """

    names: tuple
    format: str
    source: str | None = None
    msg_rate_in: np.ndarray | None = None
    msg_rate_out: np.ndarray | None = None
    msg_throughput_in: np.ndarray | None = None
    msg_throughput_out: np.ndarray | None = None
    sessions: np.ndarray | None = None
    reported_bundles: tuple | None = None
    layouts: dict | None = None

    def __len__(self) -> int:
        return len(self.names)

    @property
    def has_traffic(self) -> bool:
        return self.msg_rate_in is not None

    @property
    def msg_rate(self) -> np.ndarray | None:
        """``msgRateIn + msgRateOut`` per topic (what Pulsar's split algorithms and BundleData use)."""
        return None if self.msg_rate_in is None else self.msg_rate_in + self.msg_rate_out

    @property
    def throughput(self) -> np.ndarray | None:
        """``msgThroughputIn + msgThroughputOut`` per topic (bytes/s)."""
        return None if self.msg_throughput_in is None else self.msg_throughput_in + self.msg_throughput_out

    def by_namespace(self) -> dict[str, np.ndarray]:
        """``{namespace: indices of its topics}`` in order of first appearance."""
        groups: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            groups.setdefault(_namespace_of(n), []).append(i)
        return {ns: np.asarray(ix, dtype=np.int64) for ns, ix in groups.items()}

    def partitioned_topics(self) -> dict[str, int]:
        """``{partitioned topic: number of its partitions present}``."""
        out: dict[str, int] = {}
        match = _PARTITION.fullmatch
        for n in self.names:
            m = match(n)
            if m is not None and int(m.group(2)) <= _INT_MAX:  # TopicName.getPartitionIndex rules
                base = m.group(1)
                out[base] = out.get(base, 0) + 1
        return out


def _namespace_of(full: str) -> str:
    rest = full.split("://", 1)[1]
    parts = rest.split("/", 3)
    return "/".join(parts[:-1])


def _topic(name: Any, source: str | None, field: str) -> TopicName:
    if not isinstance(name, str):
        raise InputError(f"topic name must be a string, got {type(name).__name__}", source=source, field=field)
    try:
        return parse_topic_name(name.strip())
    except InputError as exc:
        raise InputError(exc.message, source=source, field=field) from None


def _check_count(n: int, source: str | None) -> None:
    if n > MAX_TOPICS:
        raise InputError(f"too many topics ({n:,} > {MAX_TOPICS:,})", source=source)


# --------------------------------------------------------------------------------------------
# topics list text
# --------------------------------------------------------------------------------------------

def parse_topics_list(lines: Sequence[str], *, partitions_of: Mapping[str, int] | None = None,
                      source: str | None = None, fields: Sequence[str] | None = None) -> TopicList:
    """Topic names from ``topics list`` / ``list-partitioned-topics`` output lines.

    Parameters
    ----------
    lines : sequence of str
        One name per entry (blank entries and ``#`` comments skipped).
    partitions_of : mapping, optional
        ``{partitioned topic: partition count}``: expand these names into their partitions. Each must
        appear in the input (as its base name or as one of its partitions).
    source : str, optional
        For error messages.
    fields : sequence of str, optional
        Error location of each entry (default ``line N``).

    Examples
    --------
    >>> parse_topics_list(["persistent://a/b/t"], partitions_of={"a/b/t": 2}).names
    ('persistent://a/b/t-partition-0', 'persistent://a/b/t-partition-1')
    """
    expand: dict[str, int] = {}
    for name, k in (partitions_of or {}).items():
        t = _topic(name, source, f"partitions of {name!r}")
        if t.is_partitioned:
            raise InputError(f"{str(t)!r} is a partition, not a partitioned topic", source=source)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_TOPICS:
            raise InputError(f"partition count of {str(t)!r} must be an integer in 1..{MAX_TOPICS:,}, got {k!r}",
                             source=source)
        expand[str(t)] = int(k)
    seen: dict[str, None] = {}
    found: set[str] = set()
    for i, raw in enumerate(lines):
        line = raw.strip() if isinstance(raw, str) else raw
        if isinstance(line, str) and (not line or line.startswith("#")):
            continue
        t = _topic(line, source, fields[i] if fields else f"line {i + 1}")
        full = str(t)
        base = t.partitioned_topic_name
        if full in expand or base in expand:
            key = full if full in expand else base
            found.add(key)
            if full in expand:  # the base name: expand it
                for p in partition_names(full, expand[full]):
                    seen.setdefault(p, None)
                continue
        seen.setdefault(full, None)
        _check_count(len(seen), source)
    missing = [n for n in expand if n not in found]
    if missing:
        raise InputError(f"partitioned topic {missing[0]!r} (given a partition count) is not in the input",
                         source=source)
    for key in expand:  # partitions listed without the base name: complete them to the count
        for p in partition_names(key, expand[key]):
            seen.setdefault(p, None)
    _check_count(len(seen), source)
    return TopicList(tuple(seen), "topics-list", source)


def read_topics_text(text: str, *, partitions_of: Mapping[str, int] | None = None,
                     source: str | None = None) -> TopicList:
    """Detect the format of ``text`` (topics list, JSON array, broker-stats JSON, snapshot) and parse it."""
    if text.startswith("\ufeff"):
        text = text[1:]
    head = text.lstrip()[:1]
    if head in ("{", "["):
        from .bounded import loads_json

        obj = loads_json(text, source)  # nesting and size limits (engine.limits)
        if isinstance(obj, list):
            return parse_topics_list(obj, partitions_of=partitions_of, source=source,
                                     fields=[f"[{i}]" for i in range(len(obj))])
        if partitions_of:
            raise InputError("partition counts apply to topics-list input only (JSON inputs list every partition)",
                             source=source)
        if isinstance(obj, dict) and ("bundleTopics" in obj or "brokers" in obj):
            return parse_bundle_topics(obj, source=source)
        return parse_broker_stats_topics(obj, source=source)
    return parse_topics_list(text.splitlines(), partitions_of=partitions_of, source=source)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def read_topics(path: str | os.PathLike, *, partitions_of: Mapping[str, int] | None = None) -> TopicList:
    """Read a topic file in any supported format (see the module docstring)."""
    from .bounded import read_bytes_bounded

    source = str(path)
    data = read_bytes_bounded(path)  # at most SHEDLAB_MAX_INPUT_MB (+1 byte): devices and streams too
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    return read_topics_text(text, partitions_of=partitions_of, source=source)


# --------------------------------------------------------------------------------------------
# broker-stats topics JSON
# --------------------------------------------------------------------------------------------

def _rate(stats: dict, key: str, source, field) -> float:
    v = stats.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"must be a number, got {json.dumps(v)[:40]}", source=source, field=f"{field}.{key}")
    v = float(v)
    if math.isnan(v) or math.isinf(v) or v < 0 or v > MAX_QUANTITY:
        raise InputError(f"must be a finite number, not negative, got {v}", source=source,
                         field=f"{field}.{key}")
    return v


def _sessions(stats: dict, source, field) -> int:
    if "producerCount" in stats:
        pc = stats["producerCount"]
        if isinstance(pc, bool) or not isinstance(pc, int) or not 0 <= pc <= MAX_COUNT:
            raise InputError(f"must be an integer in 0..{MAX_COUNT:,}, got {pc!r}", source=source,
                             field=f"{field}.producerCount")
    else:
        pubs = stats.get("publishers", [])
        if not isinstance(pubs, list):
            raise InputError("must be a list", source=source, field=f"{field}.publishers")
        pc = len(pubs)
    cc = 0
    subs = stats.get("subscriptions", {})
    if not isinstance(subs, dict):
        raise InputError("must be an object", source=source, field=f"{field}.subscriptions")
    for sub, s in subs.items():
        cons = s.get("consumers", []) if isinstance(s, dict) else None
        if not isinstance(cons, list):
            raise InputError("must be a list", source=source, field=f"{field}.subscriptions[{sub!r}].consumers")
        cc += len(cons)
    return pc + cc


def parse_broker_stats_topics(obj: Any, *, source: str | None = None) -> TopicList:
    """Topics and traffic from ``pulsar-admin broker-stats topics`` JSON.

    Examples
    --------
    >>> tl = parse_broker_stats_topics({"a/b": {"0x00000000_0xffffffff": {"persistent": {
    ...     "persistent://a/b/t": {"msgRateIn": 5.0, "msgRateOut": 10.0,
    ...                            "msgThroughputIn": 500.0, "msgThroughputOut": 1000.0}}}}})
    >>> tl.msg_rate.tolist(), tl.sessions.tolist(), tl.reported_bundles
    ([15.0], [0], ('a/b/0x00000000_0xffffffff',))
    """
    shape = "{namespace: {bundle: {\"persistent\": {topic: stats}, \"non-persistent\": {...}}}}"
    if not isinstance(obj, dict):
        raise InputError(f"expected broker-stats topics JSON: {shape}", source=source)
    names: list[str] = []
    rates: list[tuple] = []
    sessions: list[int] = []
    bundles: list[str] = []
    seen: set[str] = set()
    per_ns_ranges: dict[str, list[tuple[int, int]]] = {}
    for ns, by_bundle in obj.items():
        f_ns = f"[{ns!r}]"
        if not isinstance(by_bundle, dict):
            raise InputError(f"expected an object of bundles: {shape}", source=source, field=f_ns)
        for bkey, by_domain in by_bundle.items():
            f_b = f"{f_ns}[{bkey!r}]"
            try:
                if "/" in bkey:
                    bns, lo, up = parse_bundle_name(bkey)
                    if bns != ns:
                        raise InputError(f"bundle of namespace {bns} listed under {ns}")
                else:
                    lo, up = parse_range(bkey)
            except InputError as exc:
                raise InputError(exc.message, source=source, field=f_b) from None
            per_ns_ranges.setdefault(ns, []).append((lo, up))
            full_bundle = f"{ns}/0x{lo:08x}_0x{up:08x}"
            if not isinstance(by_domain, dict):
                raise InputError('expected {"persistent": {...}, "non-persistent": {...}}', source=source,
                                 field=f_b)
            for domain, topics in by_domain.items():
                f_d = f"{f_b}[{domain!r}]"
                if domain not in ("persistent", "non-persistent"):
                    raise InputError("domain must be persistent or non-persistent", source=source, field=f_d)
                if not isinstance(topics, dict):
                    raise InputError("expected an object {topic: stats}", source=source, field=f_d)
                for topic, stats in topics.items():
                    f_t = f"{f_d}[{topic!r}]"
                    t = _topic(topic, source, f_t)
                    full = str(t)
                    if t.namespace != ns:
                        raise InputError(f"topic of namespace {t.namespace} listed under {ns}", source=source,
                                         field=f_t)
                    if t.domain != domain:
                        raise InputError(f"{t.domain} topic listed under {domain!r}", source=source, field=f_t)
                    if not isinstance(stats, dict):
                        raise InputError("topic stats must be an object", source=source, field=f_t)
                    if full in seen:
                        continue
                    seen.add(full)
                    names.append(full)
                    rates.append(tuple(_rate(stats, k, source, f_t) for k in _RATE_KEYS))
                    sessions.append(_sessions(stats, source, f_t))
                    bundles.append(full_bundle)
                    _check_count(len(names), source)
    r = np.asarray(rates, dtype=float).reshape(-1, 4)
    return TopicList(tuple(names), "broker-stats", source, r[:, 0].copy(), r[:, 1].copy(), r[:, 2].copy(),
                     r[:, 3].copy(), np.asarray(sessions, dtype=np.int64), tuple(bundles),
                     _complete_layouts(per_ns_ranges))


def _complete_layouts(per_ns: Mapping[str, Sequence[tuple[int, int]]]) -> dict:
    out = {}
    for ns, ranges in per_ns.items():
        try:
            out[ns] = boundaries_from_ranges(sorted(set(ranges)))
        except InputError:  # not a complete cover: layout unknown
            pass
    return out


# --------------------------------------------------------------------------------------------
# snapshot bundleTopics
# --------------------------------------------------------------------------------------------

def parse_bundle_topics(obj: Any, *, source: str | None = None) -> TopicList:
    """Topics from a LoadData snapshot's ``bundleTopics`` (bundle → list of topic names).

    ``obj`` is the snapshot JSON (a dict) or an object with a ``bundle_topics`` mapping (such as
    ``engine.model.LoadData``).

    Examples
    --------
    >>> tl = parse_bundle_topics({"bundleTopics": {"a/b/0x00000000_0xffffffff": ["persistent://a/b/t"]}})
    >>> tl.names, tl.reported_bundles
    (('persistent://a/b/t',), ('a/b/0x00000000_0xffffffff',))
    """
    extra: list[str] = []
    if isinstance(obj, dict):
        if "bundleTopics" not in obj:
            raise InputError("the snapshot has no bundleTopics (bundle → list of topic names)", source=source,
                             field="bundleTopics")
        bt = obj["bundleTopics"]
        extra = _snapshot_bundles(obj, source)
    elif hasattr(obj, "bundle_topics"):
        bt = obj.bundle_topics
    else:
        raise InputError("expected a LoadData snapshot with bundleTopics", source=source)
    if not isinstance(bt, Mapping):
        raise InputError("must be an object {bundle: [topic, ...]}", source=source, field="bundleTopics")
    names: list[str] = []
    bundles: list[str] = []
    seen: set[str] = set()
    per_ns: dict[str, set] = {}
    for bundle, topics in bt.items():
        f_b = f"bundleTopics[{bundle!r}]"
        try:
            ns, lo, up = parse_bundle_name(bundle)
        except InputError as exc:
            raise InputError(exc.message, source=source, field=f_b) from None
        per_ns.setdefault(ns, set()).add((lo, up))
        if not isinstance(topics, (list, tuple)):
            raise InputError("must be a list of topic names", source=source, field=f_b)
        full_bundle = f"{ns}/0x{lo:08x}_0x{up:08x}"
        for i, topic in enumerate(topics):
            t = _topic(topic, source, f"{f_b}[{i}]")
            if t.namespace != ns:
                raise InputError(f"topic of namespace {t.namespace} listed under bundle of {ns}", source=source,
                                 field=f"{f_b}[{i}]")
            full = str(t)
            if full in seen:
                continue
            seen.add(full)
            names.append(full)
            bundles.append(full_bundle)
            _check_count(len(names), source)
    for b in extra:
        ns, lo, up = parse_bundle_name(b)
        per_ns.setdefault(ns, set()).add((lo, up))
    return TopicList(tuple(names), "bundle-topics", source, reported_bundles=tuple(bundles),
                     layouts=_complete_layouts(per_ns))


def _snapshot_bundles(obj: dict, source) -> list[str]:
    """Every valid bundle name a snapshot mentions outside ``bundleTopics`` (for the layout)."""
    names: list[str] = []
    bd = obj.get("bundleData")
    if isinstance(bd, dict):
        names.extend(bd)
    brokers = obj.get("brokers")
    if isinstance(brokers, dict):
        for b in brokers.values():
            if isinstance(b, dict):
                local = b.get("localData", b)  # LocalBrokerData, or BrokerData wrapping it
                if isinstance(local, dict):
                    if isinstance(local.get("bundles"), list):
                        names.extend(x for x in local["bundles"] if isinstance(x, str))
                    if isinstance(local.get("lastStats"), dict):
                        names.extend(local["lastStats"])
    out = []
    for n in names:
        try:
            parse_bundle_name(n)
        except InputError:
            continue  # validated by the snapshot loader, not here
        out.append(n)
    return out


# --------------------------------------------------------------------------------------------
# generated
# --------------------------------------------------------------------------------------------

def generate_topics(spec: str) -> TopicList:
    """Topic names from ``gen:NAME[:K][,NAME[:K]...]``.

    ``NAME:K`` gives the ``K`` partitions Pulsar creates for partitioned topic ``NAME``; ``NAME``
    alone is one non-partitioned topic. Short names are completed like Pulsar does.

    Examples
    --------
    >>> len(generate_topics("gen:persistent://vivo/ns/t:30"))
    30
    >>> generate_topics("gen:t").names
    ('persistent://public/default/t',)
    """
    body = spec[4:] if spec.startswith("gen:") else spec
    if not body.strip():
        raise InputError("empty gen: spec; use gen:NAME[:PARTITIONS][,NAME[:PARTITIONS]...]", source=spec)
    seen: dict[str, None] = {}
    for item in body.split(","):
        item = item.strip()
        if not item:
            raise InputError("empty item in gen: spec", source=spec)
        name, k = item, None
        head, sep, tail = item.rpartition(":")
        if sep and not tail.startswith("//"):
            if not tail.isdigit() or not tail.isascii():
                raise InputError(f"partition count must be a whole number, got {tail!r}", source=spec, field=item)
            name, k = head, int(tail)
            if k < 1 or k > MAX_TOPICS:
                raise InputError(f"partition count must be in 1..{MAX_TOPICS:,}, got {k}", source=spec, field=item)
        try:
            t = parse_topic_name(name)
            new = [str(t)] if k is None else partition_names(str(t), k)
        except InputError as exc:
            raise InputError(exc.message, source=spec, field=item) from None
        for n in new:
            seen.setdefault(n, None)
        _check_count(len(seen), spec)
    return TopicList(tuple(seen), "generated", spec)


def gen_count(spec: str) -> int:
    """How many topics a ``gen:`` spec names (before generating them; duplicates counted)."""
    body = spec[4:] if spec.startswith("gen:") else spec
    n = 0
    for item in body.split(","):
        head, sep, tail = item.strip().rpartition(":")
        if sep and not tail.startswith("//") and tail.isascii() and tail.isdigit():
            n += int(tail) if len(tail) <= 18 else 10 ** 18
        else:
            n += 1
    return n


def check_topic_memory(n: int, bytes_per_topic: float, source: str | None) -> None:
    """Refuse ``n`` topics whose run would need more than ``SHEDLAB_MAX_RUN_MB``
    (:func:`engine.limits.check_run_memory`)."""
    from .limits import check_run_memory

    check_run_memory(float(n) * bytes_per_topic, f"{n:,} topics", source=source)


def load_topics(arg: str, *, partitions_of: Mapping[str, int] | None = None,
                bytes_per_topic: float | None = None) -> TopicList:
    """A ``gen:`` spec or a file path (the command line's ``TOPICS`` argument).

    ``bytes_per_topic``: memory the caller needs per topic (default: just reading them,
    :data:`engine.limits.TOPIC_BYTES_READ`); the count is checked against ``SHEDLAB_MAX_RUN_MB``
    before the names are generated, and again once they are read."""
    from .limits import TOPIC_BYTES_READ

    per = max(float(bytes_per_topic or 0), TOPIC_BYTES_READ)
    if arg.startswith("gen:"):
        if partitions_of:
            raise InputError("partition counts apply to topic list files; write gen:NAME:K instead", source=arg)
        check_topic_memory(gen_count(arg), per, arg)
        tl = generate_topics(arg)
    else:
        if partitions_of:  # the partitions named on the command line, before they are generated
            check_topic_memory(sum(int(k) for k in partitions_of.values() if isinstance(k, int)), per, arg)
        tl = read_topics(arg, partitions_of=partitions_of)
    check_topic_memory(len(tl), per, tl.source)
    return tl
