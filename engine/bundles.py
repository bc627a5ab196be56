"""Namespace bundles exactly as Pulsar builds them: topic → bundle hashing, ranges, splits, auto split.

A namespace's 32-bit hash range ``[0x00000000, 0xffffffff]`` is cut into bundles by sorted
*boundaries* ``p0 = 0 < p1 < … < pn = 0xffffffff``; bundle ``i`` is ``[p_i, p_{i+1})`` (the last
one is closed). A topic belongs to the bundle holding the CRC-32 of its full name. Load moves
bundle by bundle, so how evenly topics (and partitions, each hashed on its own) land in bundles
decides how lumpy the load is: see the vivo case (``field-findings.md`` §4) and
:func:`expected_max_over_mean`.

Everything here is pure (stdlib + numpy + pandas) and works on plain values: names, boundary
arrays, per-bundle counts and rates. Results are small dataclasses with ``to_json()``.

Examples
--------
>>> b = initial_boundaries(4)
>>> [format_bound(x) for x in b]
['0x00000000', '0x40000000', '0x80000000', '0xc0000000', '0xffffffff']
>>> hex(topic_hash("persistent://public/default/my-topic"))
'0x2bad45f7'
>>> bundle_of("my-topic", b)
'public/default/0x00000000_0x40000000'
>>> r = range_equally_divide(0x00000000, 0x40000000)
>>> r.label, [format_bound(x) for x in r.boundaries]
('Split', ['0x20000000'])
>>> apply_split(b, 0, 0x40000000, r.boundaries)[:3]
(0, 536870912, 1073741824)

Notes
-----
Pulsar sources reproduced (reference ``pulsar-load-balancing.md`` §7): ``TopicName``,
``ConsistentHashingTopicBundleAssigner``, ``NamespaceBundles.getBundle``, ``NamespaceBundle``,
``NamespaceBundleFactory.getBundle/splitBundles/canSplitBundle``, ``PoliciesUtil.getBundles``, the
four ``*BundleSplitAlgorithm`` classes, ``NamespaceService.getBundleSplitOption`` and
``BundleSplitterTask.findBundlesToSplit``.

Config keys honoured (as keyword arguments named exactly like the ``broker.conf`` keys, with
Pulsar's defaults; :func:`auto_split_from_config` and :func:`split_from_config` read them from a
config object by attribute name): ``defaultNumberOfNamespaceBundles``,
``defaultNamespaceBundleSplitAlgorithm``, ``supportedNamespaceBundleSplitAlgorithms``,
``flowOrQpsDifferenceThresholdPercentage``, ``loadBalancerAutoBundleSplitEnabled``,
``loadBalancerNamespaceBundleMaxTopics``, ``loadBalancerNamespaceBundleMaxSessions``,
``loadBalancerNamespaceBundleMaxMsgRate``, ``loadBalancerNamespaceBundleMaxBandwidthMbytes``,
``loadBalancerNamespaceMaximumBundles``. ``topicBundleAssignmentStrategy`` is assumed to be the
default ``ConsistentHashingTopicBundleAssigner`` (a custom assigner cannot be emulated).

Deliberate differences from Pulsar:

* **Hash exactly ``0xffffffff``.** Java's lookup indexes one past the last bundle and throws
  ``IndexOutOfBoundsException`` (the topic cannot be served). Here :func:`bundle_of` raises
  :class:`BundleLookupError`; the bulk :func:`bundle_indices` / :func:`assign_bundles` return the
  documented flag ``-1`` for such topics (and they are left out of every count) so one unlucky
  name does not abort a million-topic run.
* **Stricter parsing.** Bundle ranges must have exactly two ``_``-separated halves inside
  ``[0, 0xffffffff]`` (Java ignores a third half and only fails later); topic names with an empty
  tenant, cluster or namespace are rejected (Java's regex accepts empty names).
* **Errors are values.** Where Pulsar logs and returns ``null`` (no split) the result has
  ``label="Skip"``; where it throws, ``label="Failure"``; both carry the reason.
* **Iteration order is the caller's.** ``BundleSplitterTask`` walks brokers and each broker's
  ``lastStats`` in Java hash-map order, which matters only when ``loadBalancerNamespaceMaximumBundles``
  cuts a round short; :func:`auto_split` walks the bundles in the order given.
* **Expected spread is Monte-Carlo**, not exact (see :func:`expected_max_over_mean`); it is an
  analysis aid with no Pulsar counterpart.
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = [
    # constants
    "FULL_LOWER_BOUND",
    "FULL_UPPER_BOUND",
    "RANGE_EQUALLY_DIVIDE",
    "TOPIC_COUNT_EQUALLY_DIVIDE",
    "SPECIFIED_POSITIONS_DIVIDE",
    "FLOW_OR_QPS_EQUALLY_DIVIDE",
    "SPLIT_ALGORITHMS",
    "BUNDLE_CONFIG_DEFAULTS",
    "PARTITIONED_TOPIC_SUFFIX",
    "BundleLookupError",
    # topic names
    "TopicName",
    "parse_topic_name",
    "normalize_topic_name",
    "partition_names",
    # hashing and lookup
    "topic_hash",
    "topic_hashes",
    "initial_boundaries",
    "check_boundaries",
    "boundaries_from_ranges",
    "java_long_decode",
    "format_bound",
    "format_range",
    "parse_range",
    "bundle_name",
    "parse_bundle_name",
    "bundle_ranges",
    "bundle_indices",
    "assign_bundles",
    "bundle_of",
    # splits
    "SplitResult",
    "can_split_bundle",
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
    "split_bundle",
    "split_from_config",
    "divide_range",
    "apply_split",
    # auto split
    "ThresholdHit",
    "AutoSplitDecision",
    "AutoSplitResult",
    "auto_split",
    "auto_split_from_config",
    # metrics
    "Distribution",
    "distribution",
    "gini",
    "ExpectedSpread",
    "expected_max_over_mean",
    "PARTITION_MODEL_MAX_HASHES",
    "NamespaceLayout",
    "build_layout",
]

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
PARTITIONED_TOPIC_SUFFIX = "-partition-"

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPECIFIED_POSITIONS_DIVIDE = "specified_positions_divide"
FLOW_OR_QPS_EQUALLY_DIVIDE = "flow_or_qps_equally_divide"

#: the four split algorithm names, in Pulsar's order
SPLIT_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE, SPECIFIED_POSITIONS_DIVIDE,
                    FLOW_OR_QPS_EQUALLY_DIVIDE)

#: the ``broker.conf`` keys this module honours, with Pulsar 4.x defaults
BUNDLE_CONFIG_DEFAULTS: dict[str, Any] = {
    "defaultNumberOfNamespaceBundles": 4,
    "defaultNamespaceBundleSplitAlgorithm": RANGE_EQUALLY_DIVIDE,
    "supportedNamespaceBundleSplitAlgorithms": SPLIT_ALGORITHMS,
    "flowOrQpsDifferenceThresholdPercentage": 10,
    "loadBalancerAutoBundleSplitEnabled": True,
    "loadBalancerNamespaceBundleMaxTopics": 1000,
    "loadBalancerNamespaceBundleMaxSessions": 1000,
    "loadBalancerNamespaceBundleMaxMsgRate": 30000,
    "loadBalancerNamespaceBundleMaxBandwidthMbytes": 100,
    "loadBalancerNamespaceMaximumBundles": 128,
}

_MIBI = 1024 * 1024  # LoadManagerShared.MIBI / the flow algorithm's MBytes
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MAX = 2**31 - 1


class BundleLookupError(InputError):
    """A topic whose hash is exactly ``0xffffffff``: Pulsar's bundle lookup throws for it."""


# --------------------------------------------------------------------------------------------
# topic names
# --------------------------------------------------------------------------------------------

# NamedEntity: ^[-=:.\w]*$ with Java's ASCII \w (we also require non-empty)
_NAMED = re.compile(r"[-=:.\w]+", re.ASCII)
_DOMAINS = ("persistent", "non-persistent")
_FULL_PREFIXES = ("persistent://", "non-persistent://")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class TopicName:
    """A parsed topic name, like Pulsar's ``TopicName``.

    Attributes
    ----------
    domain : str
        ``persistent`` or ``non-persistent``.
    tenant, namespace_portion, local_name : str
        The parts of ``domain://tenant/namespace/local``.
    cluster : str or None
        The cluster of a legacy ``domain://tenant/cluster/namespace/local`` name.
    partition_index : int
        ``N`` of a ``...-partition-N`` name, else ``-1`` (Pulsar's ``getPartitionIndex``).
    """

    domain: str
    tenant: str
    cluster: str | None
    namespace_portion: str
    local_name: str
    partition_index: int = -1

    @property
    def namespace(self) -> str:
        """``tenant/namespace`` (or ``tenant/cluster/namespace`` for legacy names)."""
        if self.cluster is None:
            return f"{self.tenant}/{self.namespace_portion}"
        return f"{self.tenant}/{self.cluster}/{self.namespace_portion}"

    @property
    def is_partitioned(self) -> bool:
        """True for a partition ``...-partition-N`` of a partitioned topic."""
        return self.partition_index >= 0

    @property
    def partitioned_topic_name(self) -> str:
        """The base name of a partition (``TopicName.getPartitionedTopicName``), else the name."""
        s = str(self)
        if self.is_partitioned:
            return s[: s.rfind(PARTITIONED_TOPIC_SUFFIX)]
        return s

    def partition(self, index: int) -> str:
        """``TopicName.getPartition(index)``: the full name of partition ``index``."""
        s = str(self)
        if index == -1 or s.endswith(f"{PARTITIONED_TOPIC_SUFFIX}{index}"):
            return s
        return f"{s}{PARTITIONED_TOPIC_SUFFIX}{index}"

    def __str__(self) -> str:  # TopicName.toString(): the name that is hashed
        return f"{self.domain}://{self.namespace}/{self.local_name}"


def _partition_index(name: str) -> int:
    """``TopicName.getPartitionIndex``: ``-1`` unless the suffix is a canonical non-negative int."""
    i = name.rfind(PARTITIONED_TOPIC_SUFFIX)
    if i < 0:
        return -1
    idx = name[i + len(PARTITIONED_TOPIC_SUFFIX):]
    if not _JAVA_INT.fullmatch(idx):
        return -1
    v = int(idx)
    if v < 0 or v > _INT_MAX:  # negative, or Integer.parseInt overflow
        return -1
    if len(idx) != len(str(v)):  # "topic-partition-01", "topic-partition-+1"
        return -1
    return v


def parse_topic_name(name: str) -> TopicName:
    """Parse a topic name the way Pulsar's ``TopicName`` does.

    Short names are completed: ``t`` → ``persistent://public/default/t`` and
    ``tenant/ns/t`` → ``persistent://tenant/ns/t``. ``domain://tenant/cluster/ns/local`` is the
    legacy form with a cluster (a ``/`` in the local part makes a name legacy, as in Pulsar).

    Parameters
    ----------
    name : str
        A short or full topic name.

    Returns
    -------
    TopicName

    Raises
    ------
    InputError
        For an empty name, a two-part short name, an unknown domain, bad tenant/namespace
        characters or a blank local name.

    Examples
    --------
    >>> str(parse_topic_name("my-topic"))
    'persistent://public/default/my-topic'
    >>> t = parse_topic_name("a/b/t-partition-3")
    >>> t.namespace, t.partition_index, t.partitioned_topic_name
    ('a/b', 3, 'persistent://a/b/t')
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"invalid topic name {name!r}: empty")
    full = name
    if "://" not in name:
        parts = [p for p in name.split("/") if p]  # StringUtils.split drops empty tokens
        if len(parts) == 3:
            full = "persistent://" + name
        elif len(parts) == 1:
            full = "persistent://public/default/" + parts[0]
        else:
            raise InputError(f"invalid short topic name {name!r}: use <tenant>/<namespace>/<topic> or <topic>")
    domain, rest = full.split("://", 1)
    if domain not in _DOMAINS:
        raise InputError(f"invalid topic name {name!r}: domain must be persistent or non-persistent")
    parts = rest.split("/", 3)  # Splitter.on("/").limit(4)
    if len(parts) == 3:
        tenant, ns, local = parts
        cluster = None
    elif len(parts) == 4:
        tenant, cluster, ns, local = parts
    else:
        raise InputError(f"invalid topic name {name!r}: expected {domain}://<tenant>/<namespace>/<topic>")
    for what, v in (("tenant", tenant), ("cluster", cluster), ("namespace", ns)):
        if v is not None and not _NAMED.fullmatch(v):
            raise InputError(f"invalid topic name {name!r}: bad {what} {v!r}")
    if not local.strip():
        raise InputError(f"invalid topic name {name!r}: the topic local name must not be blank")
    return TopicName(domain, tenant, cluster, ns, local, _partition_index(full))


def normalize_topic_name(name: str) -> str:
    """The full name Pulsar hashes (``TopicName.toString()``).

    Examples
    --------
    >>> normalize_topic_name("tenant/ns/orders")
    'persistent://tenant/ns/orders'
    """
    return str(parse_topic_name(name))


def partition_names(topic: str, partitions: int, namespace: str | None = None) -> list[str]:
    """The partition names Pulsar creates for a partitioned topic.

    Parameters
    ----------
    topic : str
        The topic (short or full name). With ``namespace``, a bare local name placed there.
    partitions : int
        Number of partitions (≥ 1).
    namespace : str, optional
        ``tenant/ns``: "topic ``t`` with 30 partitions in namespace ``a/b``".

    Returns
    -------
    list of str
        ``<full>-partition-0`` … ``<full>-partition-(K-1)``.

    Examples
    --------
    >>> partition_names("t", 2, namespace="a/b")
    ['persistent://a/b/t-partition-0', 'persistent://a/b/t-partition-1']
    """
    if isinstance(partitions, bool) or not isinstance(partitions, (int, np.integer)) or partitions < 1:
        raise InputError(f"partitions must be an integer ≥ 1, got {partitions!r}")
    if namespace is not None:
        if "://" in topic or "/" in topic:
            raise InputError(f"with a namespace, give the bare topic name, got {topic!r}")
        topic = f"{namespace}/{topic}"
    t = parse_topic_name(topic)
    if t.is_partitioned:
        raise InputError(f"{str(t)!r} is already a partition")
    base = str(t)
    return [f"{base}{PARTITIONED_TOPIC_SUFFIX}{i}" for i in range(int(partitions))]


# --------------------------------------------------------------------------------------------
# hashing, ranges, lookup
# --------------------------------------------------------------------------------------------

def topic_hash(name: str) -> int:
    """Unsigned CRC-32 of the UTF-8 bytes of ``name`` (Guava ``crc32().hashString().padToLong()``).

    The name is hashed as given: normalise short names first (:func:`normalize_topic_name`).
    Unpaired surrogates are encoded as ``?``, like Java's ``String.getBytes(UTF_8)``.

    Examples
    --------
    >>> topic_hash("persistent://my-tenant/my-ns/topic-1")
    3273635211
    """
    return zlib.crc32(name.encode("utf-8", "replace"))


def topic_hashes(names: Sequence[str]) -> np.ndarray:
    """CRC-32 of each (already full) name as an ``int64`` array (values in ``[0, 2^32)``)."""
    crc = zlib.crc32
    return np.fromiter((crc(n.encode("utf-8", "replace")) for n in names), dtype=np.int64, count=len(names))


def initial_boundaries(n: int) -> np.ndarray:
    """Boundaries of a new namespace with ``n`` bundles (``PoliciesUtil.getBundles``).

    ``seg = 2**32 // n``; boundaries ``0, seg, …, (n-1)·seg, 0xffffffff``: the last bundle absorbs
    the remainder.

    Examples
    --------
    >>> [hex(x) for x in initial_boundaries(3)]
    ['0x0', '0x55555555', '0xaaaaaaaa', '0xffffffff']
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n < 2**32:
        raise InputError(f"number of bundles must be an integer in [1, 2^32 - 1], got {n!r}")
    seg = (1 << 32) // int(n)
    b = np.arange(int(n) + 1, dtype=np.int64) * seg
    b[-1] = FULL_UPPER_BOUND
    return b


def check_boundaries(boundaries: Sequence[int] | np.ndarray) -> np.ndarray:
    """Validate and return boundaries as ``int64``: strictly increasing, ``0`` … ``0xffffffff``."""
    try:
        b = np.asarray(boundaries, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"boundaries must be integers: {exc}") from None
    if b.ndim != 1 or b.size < 2:
        raise InputError("boundaries need at least two values (0 and 0xffffffff)")
    if b[0] != FULL_LOWER_BOUND or b[-1] != FULL_UPPER_BOUND:
        raise InputError(f"boundaries must start at 0x00000000 and end at 0xffffffff, got "
                         f"{format_bound(b[0])} … {format_bound(b[-1])}")
    if np.any(np.diff(b) <= 0):
        i = int(np.argmax(np.diff(b) <= 0))
        raise InputError(f"boundaries must be strictly increasing: {format_bound(b[i])} then {format_bound(b[i + 1])}")
    return b


def java_long_decode(s: str) -> int:
    """Java ``Long.decode``: optional sign, then ``0x``/``0X``/``#`` hex, ``0`` octal, or decimal.

    Examples
    --------
    >>> java_long_decode("0xC0000000"), java_long_decode("#10"), java_long_decode("010")
    (3221225472, 16, 8)
    """
    if not isinstance(s, str) or not s:
        raise InputError(f"not a number: {s!r}")
    i, neg = 0, False
    if s[0] in "+-":
        neg, i = s[0] == "-", 1
    if s.startswith(("0x", "0X"), i):
        radix, i = 16, i + 2
    elif s.startswith("#", i):
        radix, i = 16, i + 1
    elif s.startswith("0", i) and len(s) > i + 1:
        radix, i = 8, i + 1
    else:
        radix = 10
    digits = s[i:]
    pattern = {16: r"[0-9a-fA-F]+", 8: r"[0-7]+", 10: r"[0-9]+"}[radix]
    if not re.fullmatch(pattern, digits, re.ASCII):
        raise InputError(f"not a number: {s!r}")
    v = int(digits, radix)
    v = -v if neg else v
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise InputError(f"number out of range: {s!r}")
    return v


def format_bound(x: int) -> str:
    """``String.format("0x%08x", x)``."""
    return f"0x{int(x):08x}"


def format_range(lower: int, upper: int) -> str:
    """Pulsar's bundle range string ``0x%08x_0x%08x``.

    Examples
    --------
    >>> format_range(0xC0000000, 0xFFFFFFFF)
    '0xc0000000_0xffffffff'
    """
    return f"0x{int(lower):08x}_0x{int(upper):08x}"


def parse_range(text: str) -> tuple[int, int]:
    """Parse ``0x..._0x...`` with ``Long.decode`` on each half (upper-case hex accepted).

    Examples
    --------
    >>> parse_range("0x40000000_0X80000000")
    (1073741824, 2147483648)
    """
    if not isinstance(text, str) or "_" not in text:
        raise InputError(f"invalid bundle range {text!r}: expected 0xLOWER_0xUPPER")
    halves = text.strip().split("_")
    if len(halves) != 2:
        raise InputError(f"invalid bundle range {text!r}: expected exactly two halves")
    try:
        lower, upper = java_long_decode(halves[0]), java_long_decode(halves[1])
    except InputError:
        raise InputError(f"invalid bundle range {text!r}: halves must be numbers like 0x40000000") from None
    if not (FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND):
        raise InputError(f"invalid bundle range {text!r}: need 0x00000000 <= lower < upper <= 0xffffffff")
    return lower, upper


def bundle_name(namespace: str, lower: int, upper: int) -> str:
    """Full bundle name ``<tenant>/<ns>/0x%08x_0x%08x``."""
    return f"{namespace}/{format_range(lower, upper)}"


def parse_bundle_name(name: str) -> tuple[str, int, int]:
    """``tenant/ns/0x00000000_0x40000000`` → ``("tenant/ns", 0, 0x40000000)``."""
    if not isinstance(name, str) or "/" not in name:
        raise InputError(f"invalid bundle name {name!r}: expected <tenant>/<namespace>/0xLOWER_0xUPPER")
    i = name.rfind("/")
    ns = name[:i]
    parts = ns.split("/")
    if len(parts) not in (2, 3) or not all(_NAMED.fullmatch(p) for p in parts):
        raise InputError(f"invalid bundle name {name!r}: bad namespace {ns!r}")
    lower, upper = parse_range(name[i + 1:])
    return ns, lower, upper


def boundaries_from_ranges(ranges: Iterable[str | tuple[int, int]]) -> np.ndarray:
    """Boundaries from a namespace's complete set of bundle ranges (any order).

    Raises :class:`InputError` when the ranges leave a gap, overlap, or do not cover the full range.

    Examples
    --------
    >>> [hex(x) for x in boundaries_from_ranges(["0x80000000_0xffffffff", "0x00000000_0x80000000"])]
    ['0x0', '0x80000000', '0xffffffff']
    """
    pairs = []
    for r in ranges:
        if isinstance(r, str):
            r = parse_bundle_name(r)[1:] if "/" in r else parse_range(r)
        pairs.append((int(r[0]), int(r[1])))
    if not pairs:
        raise InputError("no bundle ranges")
    pairs.sort()
    for (lo1, up1), (lo2, up2) in zip(pairs, pairs[1:]):
        if up1 != lo2:
            what = "gap" if up1 < lo2 else "overlap"
            raise InputError(f"bundle ranges have a {what}: {format_range(lo1, up1)} then {format_range(lo2, up2)}")
    b = np.array([pairs[0][0]] + [u for _, u in pairs], dtype=np.int64)
    return check_boundaries(b)


def bundle_ranges(boundaries: Sequence[int] | np.ndarray) -> list[str]:
    """The range strings of every bundle of a layout, in order."""
    b = check_boundaries(boundaries)
    return [format_range(lo, up) for lo, up in zip(b[:-1].tolist(), b[1:].tolist())]


def bundle_indices(hashes: np.ndarray | Sequence[int], boundaries: Sequence[int] | np.ndarray) -> np.ndarray:
    """Index of the bundle holding each hash (vectorised ``NamespaceBundles.getBundle``).

    ``idx = binarySearch(boundaries, hash)``, insertion point − 1 when not found. A hash equal to
    the last boundary ``0xffffffff`` gets the flag ``-1`` (Pulsar throws for it).

    Examples
    --------
    >>> bundle_indices([0, 0x40000000, 0xfffffffe, 0xffffffff], initial_boundaries(4)).tolist()
    [0, 1, 3, -1]
    """
    b = check_boundaries(boundaries)
    h = np.asarray(hashes, dtype=np.int64)
    idx = np.searchsorted(b, h, side="right") - 1
    n = b.size - 1
    idx[(idx >= n) | (idx < 0)] = -1
    return idx


def assign_bundles(names: Sequence[str], boundaries: Sequence[int] | np.ndarray, *,
                   normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Hash every topic and find its bundle: the bulk version of :func:`bundle_of`.

    Parameters
    ----------
    names : sequence of str
        Topic names (each partition separately).
    boundaries : array-like of int
        The namespace's boundaries.
    normalize : bool, default True
        Complete short names (``t`` → ``persistent://public/default/t``). Names that already start
        with ``persistent://`` or ``non-persistent://`` are hashed as given (no validation, for
        speed); set False when every name is known to be full.

    Returns
    -------
    hashes : ndarray of int64
    indices : ndarray of int64
        Bundle index of each topic, ``-1`` for a hash of exactly ``0xffffffff``.

    Examples
    --------
    >>> h, i = assign_bundles(["my-topic", "non-persistent://public/default/t1"], initial_boundaries(4))
    >>> i.tolist()
    [0, 2]
    """
    if normalize:
        names = [n if n.startswith(_FULL_PREFIXES) else normalize_topic_name(n) for n in names]
    h = topic_hashes(names)
    return h, bundle_indices(h, boundaries)


def bundle_of(topic: str, boundaries: Sequence[int] | np.ndarray | None = None) -> str:
    """Full name of the bundle that owns ``topic`` (``ConsistentHashingTopicBundleAssigner``).

    Parameters
    ----------
    topic : str
        Short or full topic name.
    boundaries : array-like of int, optional
        The namespace's boundaries; default: 4 initial bundles (``defaultNumberOfNamespaceBundles``).

    Raises
    ------
    BundleLookupError
        When the hash is exactly ``0xffffffff`` (Pulsar: ``IndexOutOfBoundsException``).

    Examples
    --------
    >>> bundle_of("persistent://my-tenant/my-ns/topic-1")
    'my-tenant/my-ns/0xc0000000_0xffffffff'
    """
    t = parse_topic_name(topic)
    b = check_boundaries(initial_boundaries(4) if boundaries is None else boundaries)
    h = topic_hash(str(t))
    i = int(bundle_indices(np.array([h]), b)[0])
    if i < 0:
        raise BundleLookupError(f"topic {str(t)!r} hashes to 0x{h:08x}: Pulsar's bundle lookup fails for it "
                                "(index past the last bundle)")
    return bundle_name(t.namespace, int(b[i]), int(b[i + 1]))


# --------------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SplitResult:
    """The outcome of a split request on one bundle.

    Attributes
    ----------
    algorithm : str
        The algorithm that ran.
    lower, upper : int
        The bundle's range.
    label : str
        ``"Split"`` (boundaries found and accepted by ``splitBundles``), ``"Skip"`` (the algorithm
        returned no boundary: Pulsar logs and does nothing) or ``"Failure"`` (Pulsar throws).
    reason : str
        Why, with the numbers.
    boundaries : tuple of int
        The split points (sorted); also kept on ``Failure`` to show what was refused.
    namespace : str or None
        Set by :func:`split_bundle` for full bundle names.
    """

    algorithm: str
    lower: int
    upper: int
    label: str
    reason: str
    boundaries: tuple = ()
    namespace: str | None = None

    @property
    def ok(self) -> bool:
        """True when the bundle is split."""
        return self.label == "Split"

    @property
    def bundle_range(self) -> str:
        return format_range(self.lower, self.upper)

    @property
    def children(self) -> tuple:
        """``(lower, upper)`` of each child bundle (empty unless ``ok``)."""
        if not self.ok:
            return ()
        pts = (self.lower, *self.boundaries, self.upper)
        return tuple(zip(pts[:-1], pts[1:]))

    def apply(self, boundaries: Sequence[int] | np.ndarray) -> np.ndarray:
        """The namespace's boundaries after this split (unchanged when not ``ok``)."""
        b = check_boundaries(boundaries)
        if not self.ok:
            return b
        return np.asarray(apply_split(b, self.lower, self.upper, self.boundaries), dtype=np.int64)

    def to_json(self) -> dict:
        out = {
            "algorithm": self.algorithm,
            "bundle": (bundle_name(self.namespace, self.lower, self.upper) if self.namespace
                       else self.bundle_range),
            "range": self.bundle_range,
            "label": self.label,
            "reason": self.reason,
            "boundaries": [int(x) for x in self.boundaries],
            "boundaries_hex": [format_bound(x) for x in self.boundaries],
            "children": [format_range(lo, up) for lo, up in self.children],
        }
        return out


def can_split_bundle(lower: int, upper: int) -> bool:
    """``NamespaceBundleFactory.canSplitBundle``: ``upper − lower > 1``."""
    return int(upper) - int(lower) > 1


def _check_range(lower: int, upper: int) -> tuple[int, int]:
    lower, upper = int(lower), int(upper)
    if not FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND:
        raise InputError(f"invalid bundle range [{lower}, {upper}]: need 0 <= lower < upper <= 0xffffffff")
    return lower, upper


def _finish(algorithm: str, lower: int, upper: int, points, skip_reason: str, note: str = "") -> SplitResult:
    """What ``NamespaceService`` + ``splitBundles`` do with an algorithm's boundaries."""
    rng = format_range(lower, upper)
    if not points:  # null/empty: "No valid boundary found ... to split bundle"
        return SplitResult(algorithm, lower, upper, "Skip", skip_reason)
    pts = tuple(sorted(int(p) for p in points))  # Collections.sort(splitBoundaries)
    hexes = ", ".join(format_bound(p) for p in pts)
    if not can_split_bundle(lower, upper):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"{rng} can't be split further since range not larger than 1", pts)
    if not (pts[0] > lower and pts[-1] < upper):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"boundaries {hexes} are not all strictly inside ({format_bound(lower)}, "
                           f"{format_bound(upper)}) (splitBundles: the fixed keys must be between the key range)", pts)
    if len(set(pts)) != len(pts):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"duplicate boundaries {hexes} would create an empty bundle (Pulsar: cannot create "
                           "bundle object for an empty key range)", pts)
    reason = f"split {rng} at {hexes} into {len(pts) + 1} bundles" + (f"; {note}" if note else "")
    return SplitResult(algorithm, lower, upper, "Split", reason, pts)


def range_equally_divide(lower: int, upper: int) -> SplitResult:
    """``RangeEquallyDivideBundleSplitAlgorithm``: one boundary at ``lower + (upper − lower) // 2``.

    The default algorithm (``defaultNamespaceBundleSplitAlgorithm``).

    Examples
    --------
    >>> format_bound(range_equally_divide(0xC0000000, 0xFFFFFFFF).boundaries[0])
    '0xdfffffff'
    >>> range_equally_divide(5, 6).label
    'Failure'
    """
    lower, upper = _check_range(lower, upper)
    return _finish(RANGE_EQUALLY_DIVIDE, lower, upper, [lower + (upper - lower) // 2], "")


def topic_count_equally_divide(lower: int, upper: int, topics: Sequence[str]) -> SplitResult:
    """``TopicCountEquallyDivideBundleSplitAlgorithm``: cut between the two middle topic hashes.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    topics : sequence of str
        The bundle's owned topics (full names, each partition separately).

    Notes
    -----
    ``≤ 1`` topic → Skip. ``H`` = sorted CRC-32 of the names; ``s = H[max(n//2 − 1, 0)]``,
    ``e = H[n//2]``; boundary ``s + (e − s)//2``. The boundary can equal ``s``, and even the
    bundle's lower bound, in which case ``splitBundles`` refuses it (Failure), as in Pulsar.

    Examples
    --------
    >>> topic_count_equally_divide(0, 0xFFFFFFFF, ["persistent://a/b/t"]).reason
    'the bundle has 1 topic (≤ 1): no split'
    """
    lower, upper = _check_range(lower, upper)
    topics = list(topics or ())
    n = len(topics)
    if n <= 1:
        return SplitResult(TOPIC_COUNT_EQUALLY_DIVIDE, lower, upper, "Skip",
                           f"the bundle has {n} topic{'s' if n != 1 else ''} (≤ 1): no split")
    h = sorted(topic_hash(t) for t in topics)
    s, e = h[max(n // 2 - 1, 0)], h[n // 2]
    note = f"{n} topics, middle hashes {format_bound(s)} and {format_bound(e)}"
    return _finish(TOPIC_COUNT_EQUALLY_DIVIDE, lower, upper, [s + (e - s) // 2], "", note)


def specified_positions_divide(lower: int, upper: int, positions: Sequence[int] | None,
                               topics: Sequence[str] | None = None, *, force: bool = False) -> SplitResult:
    """``SpecifiedPositionsBundleSplitAlgorithm``: split at the given positions inside the range.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    positions : sequence of int
        Requested split points (``splitBoundaries`` of the admin call). Required.
    topics : sequence of str, optional
        The bundle's owned topics; with ``force=False`` a bundle with ≤ 1 topic is not split.
    force : bool, default False
        Split even with ≤ 1 topic.

    Notes
    -----
    Positions outside ``(lower, upper)`` are dropped silently by Pulsar; the reason names them.
    No position left → Skip. Empty/None positions → Failure (``IllegalArgumentException``).

    Examples
    --------
    >>> r = specified_positions_divide(0, 0x40000000, [0x10000000, 0x50000000], force=True)
    >>> r.label, [format_bound(x) for x in r.boundaries]
    ('Split', ['0x10000000'])
    """
    lower, upper = _check_range(lower, upper)
    if not positions:
        return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Failure",
                           "specified_positions_divide needs split positions (SplitBoundaries can't be empty)")
    pos = sorted(int(p) for p in positions)
    if not force:
        n = len(topics or ())
        if n <= 1:
            return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Skip",
                               f"the bundle has {n} topic{'s' if n != 1 else ''} (≤ 1) and force is off: no split")
    inside = [p for p in pos if lower < p < upper]
    dropped = [p for p in pos if not lower < p < upper]
    window = f"({format_bound(lower)}, {format_bound(upper)})"
    if not inside:
        return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Skip",
                           f"no position inside {window}: "
                           f"{', '.join(format_bound(p) for p in dropped)} are outside: no split")
    note = (f"ignored {len(dropped)} position(s) outside {window}: {', '.join(format_bound(p) for p in dropped)}"
            if dropped else "")
    return _finish(SPECIFIED_POSITIONS_DIVIDE, lower, upper, inside, "", note)


def _clean(v):
    """JSON-safe scalar: numpy → Python, NaN/±inf → None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _num(x) -> float | None:
    if x is None:
        return None
    v = float(x)
    return None if math.isnan(v) else v


def flow_or_qps_equally_divide(
    lower: int,
    upper: int,
    topics: Sequence[str],
    msg_rate: Sequence[float | None],
    throughput: Sequence[float | None],
    *,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    flowOrQpsDifferenceThresholdPercentage: int = 10,
) -> SplitResult:
    """``FlowOrQpsEquallyDivideBundleSplitAlgorithm``: cut where accumulated traffic exceeds the limits.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    topics : sequence of str
        The bundle's owned topics (full names).
    msg_rate, throughput : sequence of float or None
        Per topic ``msgRateIn + msgRateOut`` (msg/s) and ``msgThroughputIn + msgThroughputOut``
        (bytes/s); ``None``/NaN = no stats for that topic.
    loadBalancerNamespaceBundleMaxMsgRate, loadBalancerNamespaceBundleMaxBandwidthMbytes,
    flowOrQpsDifferenceThresholdPercentage
        The config keys of the same names (R, B in MB, d in %).

    Notes
    -----
    ``≤ 1`` owned topic → Skip. Topics without stats or with ``rate ≤ 0 and throughput ≤ 0`` are
    left out; fewer than 2 left, or ``Σrate < R·(1+d)`` and ``Σthr < B·2^20·(1+d)`` → Skip. Then walk
    the sorted hashes accumulating rate and throughput; when adding topic ``i`` would exceed ``R``
    or ``B·2^20``, emit ``H[i−1] + (H[i] − H[i−1])//2 + 1`` and restart at topic ``i``. Topics with
    the same hash share one map entry (the last one wins), exactly like Pulsar's ``HashMap``.

    The broker only builds this algorithm's input when ``defaultNamespaceBundleSplitAlgorithm`` is
    ``flow_or_qps_equally_divide``; that gate lives in :func:`split_bundle`, not here.

    Examples
    --------
    >>> r = flow_or_qps_equally_divide(0, 0xFFFFFFFF, ["persistent://a/b/x", "persistent://a/b/y"],
    ...                                [10.0, 10.0], [0.0, 0.0], loadBalancerNamespaceBundleMaxMsgRate=100)
    >>> r.label
    'Skip'
    """
    lower, upper = _check_range(lower, upper)
    topics = list(topics or ())
    if len(msg_rate) != len(topics) or len(throughput) != len(topics):
        raise InputError("flow_or_qps_equally_divide: topics, msg_rate and throughput must have the same length")
    algo = FLOW_OR_QPS_EQUALLY_DIVIDE
    if len(topics) <= 1:
        return SplitResult(algo, lower, upper, "Skip",
                           f"the bundle has {len(topics)} topic{'s' if len(topics) != 1 else ''} (≤ 1): no split")
    max_rate = int(loadBalancerNamespaceBundleMaxMsgRate)
    max_bytes = int(loadBalancerNamespaceBundleMaxBandwidthMbytes) * _MIBI
    diff = int(flowOrQpsDifferenceThresholdPercentage) / 100.0
    info: dict[int, tuple[float, float]] = {}
    hashes: list[int] = []
    total_rate = total_thr = 0.0
    for name, r, t in zip(topics, msg_rate, throughput):
        r, t = _num(r), _num(t)
        if r is None or t is None:  # topicStats == null
            continue
        if r <= 0 and t <= 0:  # skip empty topic
            continue
        h = topic_hash(name)
        hashes.append(h)
        info[h] = (r, t)
        total_thr += t
        total_rate += r
    if len(info) < 2:
        return SplitResult(algo, lower, upper, "Skip",
                           f"only {len(info)} topic(s) with traffic (need ≥ 2): no split")
    if total_rate < max_rate * (1 + diff) and total_thr < max_bytes * (1 + diff):
        return SplitResult(algo, lower, upper, "Skip",
                           f"bundle rate {total_rate:,.6g} msg/s < {max_rate}·(1+{diff:g}) and throughput "
                           f"{total_thr:,.0f} B/s < {max_bytes}·(1+{diff:g}): no split")
    hashes.sort()
    out: list[int] = []
    acc_r, acc_t = info[hashes[0]]
    for i in range(1, len(hashes)):
        r, t = info[hashes[i]]
        if acc_r + r > max_rate or acc_t + t > max_bytes:
            s, e = hashes[i - 1], hashes[i]
            out.append(s + (e - s) // 2 + 1)
            acc_r, acc_t = r, t
        else:
            acc_r += r
            acc_t += t
    note = (f"{len(hashes)} topics with traffic, {total_rate:,.6g} msg/s, {total_thr:,.0f} B/s; limits "
            f"{max_rate} msg/s, {max_bytes} B/s per bundle")
    return _finish(algo, lower, upper, out, f"traffic never exceeds a limit while walking the hashes: no split "
                   f"({note})", note)


def split_bundle(
    boundaries: Sequence[int] | np.ndarray,
    bundle: str | int | tuple[int, int],
    algorithm: str | None = None,
    *,
    topics: Sequence[str] | None = None,
    msg_rate: Sequence[float | None] | None = None,
    throughput: Sequence[float | None] | None = None,
    positions: Sequence[int] | None = None,
    force: bool = False,
    namespace: str | None = None,
    defaultNamespaceBundleSplitAlgorithm: str = RANGE_EQUALLY_DIVIDE,
    supportedNamespaceBundleSplitAlgorithms: Sequence[str] = SPLIT_ALGORITHMS,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    flowOrQpsDifferenceThresholdPercentage: int = 10,
) -> SplitResult:
    """Split one bundle of a layout the way a broker does on ``splitNamespaceBundle``.

    Parameters
    ----------
    boundaries : array-like of int
        The namespace's boundaries.
    bundle : str, int or (lower, upper)
        The bundle: a range ``0x..._0x...``, a full bundle name, its index, or its bounds.
    algorithm : str, optional
        One of :data:`SPLIT_ALGORITHMS`; ``None`` (auto split, or an admin call without one) uses
        ``defaultNamespaceBundleSplitAlgorithm``, and if that is unknown ``range_equally_divide``.
    topics : sequence of str, optional
        Topics of the namespace (full names); only those hashing into the bundle count as its
        owned topics.
    msg_rate, throughput : sequence, optional
        Per-topic traffic aligned with ``topics`` (for ``flow_or_qps_equally_divide``).
    positions, force
        For ``specified_positions_divide``.
    namespace : str, optional
        Namespace for the result's full bundle name.
    defaultNamespaceBundleSplitAlgorithm, supportedNamespaceBundleSplitAlgorithms,
    loadBalancerNamespaceBundleMaxMsgRate, loadBalancerNamespaceBundleMaxBandwidthMbytes,
    flowOrQpsDifferenceThresholdPercentage
        The ``broker.conf`` keys of the same names.

    Returns
    -------
    SplitResult
        ``Failure`` for an unsupported algorithm name (admin REST: 412), for
        ``flow_or_qps_equally_divide`` when it is not the default algorithm (Pulsar fails on the
        option type), and whenever ``splitBundles`` would throw.

    Notes
    -----
    Name resolution follows the admin path: a name outside ``supportedNamespaceBundleSplitAlgorithms``
    is refused before anything runs; a supported name Pulsar does not know (possible only with a
    hand-edited supported list), like ``None``, falls back to the configured default and then to
    ``range_equally_divide`` (``getNamespaceBundleSplitAlgorithmByName``).

    Examples
    --------
    >>> r = split_bundle(initial_boundaries(4), "0xc0000000_0xffffffff")
    >>> r.algorithm, r.children[0] == (0xC0000000, 0xDFFFFFFF)
    ('range_equally_divide', True)
    >>> split_bundle(initial_boundaries(4), 0, "flow_or_qps_equally_divide").label
    'Failure'
    """
    b = check_boundaries(boundaries)
    lower, upper = _resolve_bundle(b, bundle)
    supported = tuple(supportedNamespaceBundleSplitAlgorithms)
    if algorithm is not None and str(algorithm).strip():
        if algorithm not in supported:
            return SplitResult(str(algorithm), lower, upper, "Failure",
                               f"unsupported namespace bundle split algorithm {algorithm!r}; supported: "
                               f"{', '.join(supported)}", namespace=namespace)
        name = algorithm
    else:
        name = None
    # getNamespaceBundleSplitAlgorithmByName: unknown → the configured default → range_equally_divide
    if name not in SPLIT_ALGORITHMS:
        name = defaultNamespaceBundleSplitAlgorithm
    if name not in SPLIT_ALGORITHMS:
        name = RANGE_EQUALLY_DIVIDE
    owned, owned_rate, owned_thr = _owned(b, lower, upper, topics, msg_rate, throughput)
    if name == RANGE_EQUALLY_DIVIDE:
        r = range_equally_divide(lower, upper)
    elif name == TOPIC_COUNT_EQUALLY_DIVIDE:
        r = topic_count_equally_divide(lower, upper, owned)
    elif name == SPECIFIED_POSITIONS_DIVIDE:
        r = specified_positions_divide(lower, upper, positions, owned, force=force)
    else:
        if defaultNamespaceBundleSplitAlgorithm != FLOW_OR_QPS_EQUALLY_DIVIDE:
            r = SplitResult(name, lower, upper, "Failure",
                            "flow_or_qps_equally_divide needs it to be the configured default algorithm "
                            f"(defaultNamespaceBundleSplitAlgorithm is {defaultNamespaceBundleSplitAlgorithm!r}; "
                            "the broker builds the traffic option only then)")
        elif owned_rate is None:
            raise InputError("flow_or_qps_equally_divide needs per-topic msg_rate and throughput")
        else:
            r = flow_or_qps_equally_divide(
                lower, upper, owned, owned_rate, owned_thr,
                loadBalancerNamespaceBundleMaxMsgRate=loadBalancerNamespaceBundleMaxMsgRate,
                loadBalancerNamespaceBundleMaxBandwidthMbytes=loadBalancerNamespaceBundleMaxBandwidthMbytes,
                flowOrQpsDifferenceThresholdPercentage=flowOrQpsDifferenceThresholdPercentage)
    if namespace is None and isinstance(bundle, str) and "/" in bundle:
        namespace = parse_bundle_name(bundle)[0]
    return SplitResult(r.algorithm, r.lower, r.upper, r.label, r.reason, r.boundaries, namespace)


def split_from_config(cfg: Any, boundaries, bundle, algorithm: str | None = None, **kwargs) -> SplitResult:
    """:func:`split_bundle` with the split keys read from ``cfg`` by attribute name.

    Missing attributes fall back to Pulsar's defaults (:data:`BUNDLE_CONFIG_DEFAULTS`).
    """
    keys = ("defaultNamespaceBundleSplitAlgorithm", "supportedNamespaceBundleSplitAlgorithms",
            "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes",
            "flowOrQpsDifferenceThresholdPercentage")
    conf = {k: getattr(cfg, k, BUNDLE_CONFIG_DEFAULTS[k]) for k in keys}
    conf.update(kwargs)
    return split_bundle(boundaries, bundle, algorithm, **conf)


def _resolve_bundle(b: np.ndarray, bundle) -> tuple[int, int]:
    if isinstance(bundle, (int, np.integer)) and not isinstance(bundle, bool):
        i = int(bundle)
        if not 0 <= i < b.size - 1:
            raise InputError(f"bundle index {i} out of range (0..{b.size - 2})")
        return int(b[i]), int(b[i + 1])
    if isinstance(bundle, str):
        lower, upper = parse_bundle_name(bundle)[1:] if "/" in bundle else parse_range(bundle)
    else:
        lower, upper = (int(x) for x in bundle)
    i = int(np.searchsorted(b, lower))
    if i >= b.size - 1 or b[i] != lower or b[i + 1] != upper:
        raise InputError(f"bundle {format_range(lower, upper)} is not a bundle of this layout")
    return lower, upper


def _owned(b, lower, upper, topics, msg_rate, throughput):
    if topics is None:
        return [], None, None
    topics = list(topics)
    if not topics:
        return [], ([] if msg_rate is not None else None), ([] if throughput is not None else None)
    h = topic_hashes(topics)
    # [lower, upper); the last bundle is closed but its one extra hash, 0xffffffff, is served by
    # no bundle (Pulsar's lookup throws for it), so the half-open test is right for every bundle
    sel = np.flatnonzero((h >= lower) & (h < upper))
    owned = [topics[i] for i in sel]
    if msg_rate is None or throughput is None:
        return owned, None, None
    if len(msg_rate) != len(topics) or len(throughput) != len(topics):
        raise InputError("topics, msg_rate and throughput must have the same length")
    return owned, [msg_rate[i] for i in sel], [throughput[i] for i in sel]


def divide_range(lower: int, upper: int, num_bundles: int) -> tuple:
    """Split points of ``splitBundles(bundle, numBundles, null)`` (the old API, no boundaries given).

    ``seg = (upper − lower) // numBundles``; points ``lower + seg·i`` for ``i = 1 … numBundles − 1``.
    With ``seg = 0`` the points repeat and :func:`apply_split` refuses them (Pulsar: empty bundle).

    Examples
    --------
    >>> [hex(x) for x in divide_range(0, 0x40000000, 4)]
    ['0x10000000', '0x20000000', '0x30000000']
    """
    lower, upper = _check_range(lower, upper)
    if isinstance(num_bundles, bool) or not isinstance(num_bundles, (int, np.integer)) or num_bundles < 2:
        raise InputError(f"num_bundles must be an integer ≥ 2, got {num_bundles!r}")
    seg = (upper - lower) // int(num_bundles)
    return tuple(lower + seg * i for i in range(1, int(num_bundles)))


def apply_split(boundaries: Sequence[int] | np.ndarray, lower: int, upper: int,
                split_points: Sequence[int]) -> tuple:
    """Replace bundle ``[lower, upper]`` by its children (``NamespaceBundleFactory.splitBundles``).

    Returns the new boundaries as a tuple of ints. Raises :class:`InputError` when the bundle is not
    in the layout or the points are not strictly inside ``(lower, upper)``, sorted-unique.

    Examples
    --------
    >>> [hex(x) for x in apply_split(initial_boundaries(2), 0x80000000, 0xFFFFFFFF, [0xBFFFFFFF])]
    ['0x0', '0x80000000', '0xbfffffff', '0xffffffff']
    """
    b = check_boundaries(boundaries)
    lower, upper = _resolve_bundle(b, (lower, upper))
    pts = sorted(int(p) for p in split_points)
    if not pts:
        return tuple(int(x) for x in b)
    if not can_split_bundle(lower, upper):
        raise InputError(f"{format_range(lower, upper)} can't be split further since range not larger than 1")
    if not (pts[0] > lower and pts[-1] < upper) or len(set(pts)) != len(pts):
        raise InputError(f"split points must be distinct and strictly inside ({format_bound(lower)}, "
                         f"{format_bound(upper)})")
    i = int(np.searchsorted(b, lower))
    out = [int(x) for x in b[: i + 1]] + pts + [int(x) for x in b[i + 1:]]
    return tuple(out)


# --------------------------------------------------------------------------------------------
# auto split (BundleSplitterTask)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ThresholdHit:
    """One auto-split threshold a bundle exceeds: ``value > limit`` for config ``key``."""

    key: str
    quantity: str
    value: float
    limit: float

    def __str__(self) -> str:
        return f"{self.quantity} {self.value:.12g} > {self.key} {self.limit:.12g}"

    def to_json(self) -> dict:
        return {"key": self.key, "quantity": self.quantity, "value": _clean(self.value), "limit": _clean(self.limit)}


@dataclass(frozen=True)
class AutoSplitDecision:
    """Whether one bundle is chosen for an automatic split, and why.

    ``label`` is ``"Split"`` or ``"Skip"``; ``hits`` lists every exceeded threshold (Pulsar ORs them).
    """

    bundle: str
    namespace: str
    label: str
    reason: str
    hits: tuple = ()
    broker: str | None = None
    topics: int = 0
    sessions: int = 0
    msg_rate: float = 0.0
    throughput: float = 0.0

    def to_json(self) -> dict:
        return {"bundle": self.bundle, "namespace": self.namespace, "broker": self.broker, "label": self.label,
                "reason": self.reason, "hits": [h.to_json() for h in self.hits], "topics": self.topics,
                "sessions": self.sessions, "msg_rate": _clean(self.msg_rate), "throughput": _clean(self.throughput)}


@dataclass(frozen=True)
class AutoSplitResult:
    """All auto-split decisions of one ``BundleSplitterTask`` round, in walk order."""

    decisions: tuple
    enabled: bool = True
    config: dict = field(default_factory=dict)

    @property
    def to_split(self) -> dict:
        """``{bundle: broker}`` of the chosen bundles (``bundleCache`` in Pulsar)."""
        return {d.bundle: d.broker for d in self.decisions if d.label == "Split"}

    def to_frame(self) -> pd.DataFrame:
        """One row per bundle: bundle, namespace, broker, label, reason, topics, sessions, rates."""
        cols = ["bundle", "namespace", "broker", "label", "reason", "topics", "sessions", "msg_rate", "throughput"]
        return pd.DataFrame([{c: getattr(d, c) for c in cols} for d in self.decisions], columns=cols)

    def to_json(self) -> dict:
        return {"enabled": self.enabled, "config": dict(self.config),
                "to_split": list(self.to_split), "decisions": [d.to_json() for d in self.decisions]}


def auto_split(
    bundles: Sequence[str],
    topics: Sequence[int],
    sessions: Sequence[int] | None = None,
    msg_rate: Sequence[float | None] | None = None,
    throughput: Sequence[float | None] | None = None,
    namespace_bundle_counts: Mapping[str, int] | None = None,
    *,
    brokers: Sequence[str | None] | None = None,
    loadBalancerAutoBundleSplitEnabled: bool = True,
    loadBalancerNamespaceBundleMaxTopics: int = 1000,
    loadBalancerNamespaceBundleMaxSessions: int = 1000,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    loadBalancerNamespaceMaximumBundles: int = 128,
) -> AutoSplitResult:
    """Which bundles the leader would split (``BundleSplitterTask.findBundlesToSplit``).

    Parameters
    ----------
    bundles : sequence of str
        Full bundle names, in the order the leader walks them (broker by broker, ``lastStats`` order).
    topics : sequence of int
        Per bundle ``topics`` of the broker's last (instantaneous) ``NamespaceBundleStats``.
    sessions : sequence of int, optional
        Per bundle ``consumerCount + producerCount`` (default 0).
    msg_rate, throughput : sequence of float or None, optional
        Per bundle long-term ``totalMsgRate()`` (msg/s) and ``totalMsgThroughput()`` (bytes/s) of its
        ``BundleData``; ``None``/NaN when the bundle has no ``BundleData`` (Pulsar then uses 0).
    namespace_bundle_counts : mapping, optional
        Current number of bundles of each namespace; default: the number of distinct ``bundles``
        of that namespace in the input.
    brokers : sequence of str, optional
        Owner broker of each bundle (carried into the result).
    loadBalancerAutoBundleSplitEnabled, loadBalancerNamespaceBundleMaxTopics,
    loadBalancerNamespaceBundleMaxSessions, loadBalancerNamespaceBundleMaxMsgRate,
    loadBalancerNamespaceBundleMaxBandwidthMbytes, loadBalancerNamespaceMaximumBundles
        The ``broker.conf`` keys of the same names, with Pulsar's defaults.

    Returns
    -------
    AutoSplitResult

    Notes
    -----
    A bundle with fewer than 2 topics is never split. Otherwise it is a candidate when
    ``topics > MaxTopics`` or (``MaxSessions > 0`` and ``sessions > MaxSessions``) or
    ``rate > MaxMsgRate`` or ``throughput > MaxBandwidthMbytes·2^20``; a candidate is chosen while
    ``bundle count + chosen this round < loadBalancerNamespaceMaximumBundles``. With auto split
    disabled (``checkNamespaceBundleSplit`` returns early) every decision is Skip, but the exceeded
    thresholds are still listed. Walk order is the caller's (see the module Notes).

    Examples
    --------
    >>> r = auto_split(["a/b/0x00000000_0x80000000", "a/b/0x80000000_0xffffffff"], [1500, 1],
    ...                namespace_bundle_counts={"a/b": 2})
    >>> r.to_split
    {'a/b/0x00000000_0x80000000': None}
    >>> r.decisions[0].reason
    'topics 1500 > loadBalancerNamespaceBundleMaxTopics 1000'
    """
    n = len(bundles)

    def col(x, default):
        if x is None:
            return [default] * n
        if len(x) != n:
            raise InputError("auto_split: every per-bundle input must have one value per bundle")
        return list(x)

    topics_, sessions_ = col(topics, 0), col(sessions, 0)
    rate_, thr_, brokers_ = col(msg_rate, None), col(throughput, None), col(brokers, None)
    max_topics = int(loadBalancerNamespaceBundleMaxTopics)
    max_sessions = int(loadBalancerNamespaceBundleMaxSessions)
    max_rate = int(loadBalancerNamespaceBundleMaxMsgRate)
    max_bw = int(loadBalancerNamespaceBundleMaxBandwidthMbytes) * _MIBI
    max_bundles = int(loadBalancerNamespaceMaximumBundles)
    namespaces = [b[: b.rfind("/")] if "/" in b else b for b in bundles]
    counts = dict(namespace_bundle_counts or {})
    for ns in set(namespaces) - set(counts):
        counts[ns] = len({b for b, s in zip(bundles, namespaces) if s == ns})
    chosen: dict[str, int] = {}
    out = []
    for i, bundle in enumerate(bundles):
        ns = namespaces[i]
        t, s = int(topics_[i]), int(sessions_[i])
        r, th = _num(rate_[i]) or 0.0, _num(thr_[i]) or 0.0
        common = dict(bundle=bundle, namespace=ns, broker=brokers_[i], topics=t, sessions=s, msg_rate=r, throughput=th)
        if t < 2:
            out.append(AutoSplitDecision(label="Skip", reason=f"{t} topic{'s' if t != 1 else ''} (< 2): never split",
                                         **common))
            continue
        hits = []
        if t > max_topics:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxTopics", "topics", t, max_topics))
        if max_sessions > 0 and s > max_sessions:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxSessions", "sessions", s, max_sessions))
        if r > max_rate:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxMsgRate", "msg rate", r, max_rate))
        if th > max_bw:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxBandwidthMbytes",
                                     "throughput (B/s; limit = MB·2^20)", th, max_bw))
        hits_t = tuple(hits)
        if not hits:
            out.append(AutoSplitDecision(label="Skip", reason="within every split threshold", **common))
            continue
        why = "; ".join(str(h) for h in hits)
        if not loadBalancerAutoBundleSplitEnabled:
            out.append(AutoSplitDecision(label="Skip", reason=f"{why}, but auto split is disabled "
                                         "(loadBalancerAutoBundleSplitEnabled=false)", hits=hits_t, **common))
            continue
        have, already = counts[ns], chosen.get(ns, 0)
        if have + already < max_bundles:
            chosen[ns] = already + 1
            out.append(AutoSplitDecision(label="Split", reason=why, hits=hits_t, **common))
        else:
            out.append(AutoSplitDecision(
                label="Skip", hits=hits_t,
                reason=f"{why}, but namespace {ns} has {have} bundles + {already} chosen this round ≥ "
                       f"loadBalancerNamespaceMaximumBundles {max_bundles}", **common))
    conf = {"loadBalancerAutoBundleSplitEnabled": bool(loadBalancerAutoBundleSplitEnabled),
            "loadBalancerNamespaceBundleMaxTopics": max_topics,
            "loadBalancerNamespaceBundleMaxSessions": max_sessions,
            "loadBalancerNamespaceBundleMaxMsgRate": max_rate,
            "loadBalancerNamespaceBundleMaxBandwidthMbytes": int(loadBalancerNamespaceBundleMaxBandwidthMbytes),
            "loadBalancerNamespaceMaximumBundles": max_bundles}
    return AutoSplitResult(tuple(out), bool(loadBalancerAutoBundleSplitEnabled), conf)


_AUTO_KEYS = ("loadBalancerAutoBundleSplitEnabled", "loadBalancerNamespaceBundleMaxTopics",
              "loadBalancerNamespaceBundleMaxSessions", "loadBalancerNamespaceBundleMaxMsgRate",
              "loadBalancerNamespaceBundleMaxBandwidthMbytes", "loadBalancerNamespaceMaximumBundles")


def auto_split_from_config(cfg: Any, bundles, topics, sessions=None, msg_rate=None, throughput=None,
                           namespace_bundle_counts=None, *, brokers=None) -> AutoSplitResult:
    """:func:`auto_split` with its thresholds read from ``cfg`` by ``broker.conf`` key name.

    ``cfg`` is any object with those attributes (e.g. ``engine.config.LoadBalancerConfig``);
    a missing attribute falls back to Pulsar's default.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(loadBalancerNamespaceBundleMaxTopics=10)
    >>> auto_split_from_config(cfg, ["a/b/0x00000000_0xffffffff"], [11]).to_split
    {'a/b/0x00000000_0xffffffff': None}
    """
    conf = {k: getattr(cfg, k, BUNDLE_CONFIG_DEFAULTS[k]) for k in _AUTO_KEYS}
    return auto_split(bundles, topics, sessions, msg_rate, throughput, namespace_bundle_counts,
                      brokers=brokers, **conf)


# --------------------------------------------------------------------------------------------
# distribution metrics
# --------------------------------------------------------------------------------------------

def gini(values: Sequence[float] | np.ndarray) -> float:
    """Gini coefficient of non-negative values (0 = all equal, → 1 = all in one).

    ``G = Σ_i Σ_j |x_i − x_j| / (2 n² mean)``; NaN when the total is 0 or there are no values.

    Examples
    --------
    >>> gini([0, 0, 0, 4]), gini([2, 2, 2, 2])
    (0.75, 0.0)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    total = x.sum()
    if n == 0 or total <= 0:
        return float("nan")
    i = np.arange(1, n + 1)
    return float((2.0 * np.sum(i * x)) / (n * total) - (n + 1.0) / n)


@dataclass(frozen=True)
class Distribution:
    """How one quantity (topics, msg rate, throughput) spreads over the bundles of a namespace."""

    quantity: str
    bundles: int
    total: float
    max: float
    min: float
    mean: float
    max_over_mean: float
    gini: float
    empty: int
    argmax: int

    def to_json(self) -> dict:
        return {k: _clean(getattr(self, k)) for k in ("quantity", "bundles", "total", "max", "min", "mean",
                                                      "max_over_mean", "gini", "empty", "argmax")}


def distribution(per_bundle: Sequence[float] | np.ndarray, quantity: str = "topics") -> Distribution:
    """Summary of a per-bundle quantity: max, mean, max/mean, Gini, number of empty bundles.

    Examples
    --------
    >>> d = distribution([0, 1, 1, 2])
    >>> d.max, d.mean, d.max_over_mean, d.empty
    (2.0, 1.0, 2.0, 1)
    """
    x = np.asarray(per_bundle, dtype=float)
    if x.size == 0:
        raise InputError("distribution of zero bundles")
    total, mean = float(x.sum()), float(x.mean())
    mx = float(x.max())
    return Distribution(quantity, int(x.size), total, mx, float(x.min()), mean,
                        mx / mean if mean > 0 else float("nan"), gini(x), int(np.count_nonzero(x == 0)),
                        int(np.argmax(x)))


@dataclass(frozen=True)
class ExpectedSpread:
    """What ``max/mean`` topics per bundle random names give for ``topics`` over ``bundles``.

    Monte-Carlo (see :func:`expected_max_over_mean` for the two models). ``p_at_least_observed``
    is the share of trials whose fullest bundle holds at least ``observed_max`` topics: small means
    the real layout is unlucky; ``p_at_most_observed`` small means it is flatter than usual.
    """

    topics: int
    bundles: int
    method: str
    trials: int
    seed: Any
    mean_max: float
    mean_max_over_mean: float
    p05: float
    p50: float
    p95: float
    observed_max: int | None = None
    observed_max_over_mean: float | None = None
    p_at_least_observed: float | None = None
    p_at_most_observed: float | None = None
    model: str = "multinomial"

    @property
    def verdict(self) -> str:
        """``unlucky`` / ``lucky`` (< 5 % of random layouts as bad / as flat) / ``typical``."""
        if self.observed_max is None or self.p_at_least_observed is None:
            return "n/a"
        if self.p_at_least_observed < 0.05:
            return "unlucky"
        if self.p_at_most_observed is not None and self.p_at_most_observed < 0.05:
            return "lucky"
        return "typical"

    def to_json(self) -> dict:
        out = {k: _clean(getattr(self, k)) for k in ("topics", "bundles", "method", "model", "trials", "mean_max",
                                                      "mean_max_over_mean", "p05", "p50", "p95", "observed_max",
                                                      "observed_max_over_mean", "p_at_least_observed",
                                                      "p_at_most_observed")}
        out["seed"] = self.seed if isinstance(self.seed, (int, type(None))) else repr(self.seed)
        out["verdict"] = self.verdict
        return out


#: partition-names model: at most this many hashes in total (trials × partitions)
PARTITION_MODEL_MAX_HASHES = 5_000_000
_NAME_ALPHABET = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789-_"))


def _partition_name_maxes(k: int, b: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    nb = b.size - 1
    suffixes = [f"-partition-{i}" for i in range(k)]
    maxes = np.empty(trials, dtype=np.int64)
    for t in range(trials):
        local = "".join(rng.choice(_NAME_ALPHABET, int(rng.integers(3, 25))))
        base = f"persistent://tenant-{int(rng.integers(1000))}/ns/{local}"
        idx = bundle_indices(topic_hashes([base + s for s in suffixes]), b)
        maxes[t] = np.bincount(idx[idx >= 0], minlength=nb).max()
    return maxes


def expected_max_over_mean(n_topics: int, bundles: int | Sequence[int] | np.ndarray, *,
                           observed_max: int | None = None, trials: int = 1000,
                           seed: int | np.random.Generator | None = 0,
                           model: str = "multinomial") -> ExpectedSpread:
    """Expected fullest-bundle load relative to the mean for ``n_topics`` random names.

    Parameters
    ----------
    n_topics : int
        Number of topics (partitions count one each).
    bundles : int or array-like of int
        A number of initial bundles, or boundaries (unequal bundles get proportional odds).
    observed_max : int, optional
        The real layout's max topics per bundle, to rank it against random layouts.
    trials : int, default 1000
        Monte-Carlo trials.
    seed : int, Generator or None, default 0
        Randomness (an int seeds ``numpy.random.default_rng``).
    model : {"multinomial", "partition-names"}
        ``multinomial``: every topic hashes independently and uniformly (right for many unrelated
        topic names). ``partition-names``: each trial hashes the real partition names
        ``<random base>-partition-0 … -(n_topics-1)`` of one random topic name (right for the
        partitions of one topic; needs ``n_topics × trials ≤`` :data:`PARTITION_MODEL_MAX_HASHES`).

    Returns
    -------
    ExpectedSpread

    Notes
    -----
    Monte-Carlo, not exact. CRC-32 is linear: the partition names of one topic differ only in a few
    trailing bytes, so their hashes are an XOR-shifted copy of a fixed pattern and spread *more
    evenly* than independent hashes (e.g. 120 partitions over 180 bundles: mean max ≈ 3.2 with real
    partition names vs ≈ 3.7 with independent hashes). Hence the ``partition-names`` model for a
    partitioned topic. Quantiles are of ``max/mean`` with ``mean = n_topics / bundles``.

    Examples
    --------
    >>> e = expected_max_over_mean(30, 180, observed_max=4, trials=2000, seed=1)
    >>> e.verdict, e.p50
    ('unlucky', 12.0)
    """
    if isinstance(n_topics, bool) or not isinstance(n_topics, (int, np.integer)) or n_topics < 0:
        raise InputError(f"n_topics must be a non-negative integer, got {n_topics!r}")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"trials must be a positive integer, got {trials!r}")
    if model not in ("multinomial", "partition-names"):
        raise InputError(f"model must be 'multinomial' or 'partition-names', got {model!r}")
    if isinstance(bundles, (int, np.integer)) and not isinstance(bundles, bool):
        b = initial_boundaries(int(bundles))
    else:
        b = check_boundaries(bundles)
    trials = int(trials)
    nb = b.size - 1
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if model == "partition-names":
        if n_topics * trials > PARTITION_MODEL_MAX_HASHES:
            raise InputError(f"partition-names model: {n_topics:,} partitions × {trials:,} trials is more than "
                             f"{PARTITION_MODEL_MAX_HASHES:,} hashes; use fewer trials or the multinomial model")
        maxes = _partition_name_maxes(int(n_topics), b, trials, rng)
    else:
        widths = np.diff(b).astype(float)  # the hash 0xffffffff itself is served by no bundle
        p = widths / widths.sum()
        maxes = np.empty(trials, dtype=np.int64)
        chunk = max(1, min(trials, 2_000_000 // max(nb, 1)))
        for start in range(0, trials, chunk):
            k = min(chunk, trials - start)
            maxes[start:start + k] = rng.multinomial(int(n_topics), p, size=k).max(axis=1)
    mean = n_topics / nb
    ratio = maxes / mean if mean > 0 else np.full(maxes.shape, np.nan)
    q = np.quantile(ratio, [0.05, 0.5, 0.95]) if mean > 0 else [float("nan")] * 3
    obs_ratio = p_ge = p_le = None
    if observed_max is not None:
        observed_max = int(observed_max)
        obs_ratio = observed_max / mean if mean > 0 else None
        p_ge = float(np.mean(maxes >= observed_max))
        p_le = float(np.mean(maxes <= observed_max))
    return ExpectedSpread(int(n_topics), nb, "monte-carlo", trials,
                          seed if isinstance(seed, (int, type(None))) else "generator",
                          float(maxes.mean()), float(np.mean(ratio)), float(q[0]), float(q[1]), float(q[2]),
                          observed_max, obs_ratio, p_ge, p_le, model)


# --------------------------------------------------------------------------------------------
# a namespace layout: topics assigned to bundles, per-bundle table, metrics
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class NamespaceLayout:
    """The topics of one namespace assigned to its bundles (built by :func:`build_layout`).

    Attributes
    ----------
    namespace : str
    boundaries : ndarray of int64
    topics : tuple of str
        Full topic names.
    hashes, index : ndarray of int64
        CRC-32 and bundle index (``-1`` = hash ``0xffffffff``, unserved) of each topic.
    topic_msg_rate, topic_throughput : ndarray or None
        Per-topic in+out traffic when known (NaN = unknown).
    topic_sessions : ndarray or None
        Per-topic producers + consumers when known.
    """

    namespace: str
    boundaries: np.ndarray
    topics: tuple
    hashes: np.ndarray
    index: np.ndarray
    topic_msg_rate: np.ndarray | None = None
    topic_throughput: np.ndarray | None = None
    topic_sessions: np.ndarray | None = None

    @property
    def n_bundles(self) -> int:
        return int(self.boundaries.size - 1)

    @property
    def unassignable(self) -> list[str]:
        """Topics Pulsar cannot look up (hash exactly ``0xffffffff``)."""
        return [self.topics[i] for i in np.flatnonzero(self.index < 0)]

    def _per_bundle(self, weights) -> np.ndarray:
        ok = self.index >= 0
        if weights is None:
            return np.bincount(self.index[ok], minlength=self.n_bundles).astype(np.int64)
        w = np.nan_to_num(np.asarray(weights, dtype=float)[ok], nan=0.0)
        return np.bincount(self.index[ok], weights=w, minlength=self.n_bundles)

    @property
    def counts(self) -> np.ndarray:
        """Topics (partitions) per bundle."""
        return self._per_bundle(None)

    @property
    def msg_rate(self) -> np.ndarray | None:
        """msg/s (in+out) per bundle, when per-topic rates are known."""
        return None if self.topic_msg_rate is None else self._per_bundle(self.topic_msg_rate)

    @property
    def throughput(self) -> np.ndarray | None:
        """bytes/s (in+out) per bundle, when known."""
        return None if self.topic_throughput is None else self._per_bundle(self.topic_throughput)

    @property
    def sessions(self) -> np.ndarray | None:
        return None if self.topic_sessions is None else self._per_bundle(self.topic_sessions).astype(np.int64)

    def bundle_names(self) -> list[str]:
        return [f"{self.namespace}/{r}" for r in bundle_ranges(self.boundaries)]

    def distributions(self) -> dict:
        """``{"topics": Distribution, "msg_rate": … or None, "throughput": … or None}``."""
        out = {"topics": distribution(self.counts, "topics"), "msg_rate": None, "throughput": None}
        if self.topic_msg_rate is not None:
            out["msg_rate"] = distribution(self.msg_rate, "msg_rate")
        if self.topic_throughput is not None:
            out["throughput"] = distribution(self.throughput, "throughput")
        return out

    def single_partitioned_topic(self) -> str | None:
        """The topic, when this namespace holds exactly the partitions ``0..K-1`` of one topic."""
        if not self.topics:
            return None
        base = None
        idx = set()
        for t in self.topics:
            i = t.rfind(PARTITIONED_TOPIC_SUFFIX)
            if i < 0:
                return None
            p = _partition_index(t)
            if p < 0 or (base is not None and t[:i] != base):
                return None
            base = t[:i]
            idx.add(p)
        return base if idx == set(range(len(self.topics))) else None

    def expected(self, *, trials: int = 1000, seed=0, model: str = "auto") -> ExpectedSpread:
        """:func:`expected_max_over_mean` for this layout's topic count and boundaries.

        ``model="auto"``: ``partition-names`` when the namespace is the partitions of one topic (and
        the work fits), else ``multinomial``.
        """
        c = self.counts
        n = int(c.sum())
        if model == "auto":
            fits = len(self.topics) * trials <= PARTITION_MODEL_MAX_HASHES
            model = "partition-names" if fits and self.single_partitioned_topic() else "multinomial"
        if model == "partition-names":
            n = len(self.topics)  # the model hashes all K partitions (an unserved one included)
        return expected_max_over_mean(n, self.boundaries, observed_max=int(c.max()), trials=trials, seed=seed,
                                      model=model)

    def most_loaded(self) -> int:
        """Index of the busiest bundle: by msg rate when known (and non-zero), else by topics."""
        rate = self.msg_rate
        if rate is not None and np.nansum(rate) > 0:
            return int(np.argmax(rate))
        return int(np.argmax(self.counts))

    def topics_in(self, i: int) -> list[str]:
        return [self.topics[j] for j in np.flatnonzero(self.index == i)]

    def split(self, bundle=None, algorithm: str | None = None, **kwargs) -> SplitResult:
        """:func:`split_bundle` on ``bundle`` (default: :meth:`most_loaded`) with this layout's topics."""
        bundle = self.most_loaded() if bundle is None else bundle
        rate = None if self.topic_msg_rate is None else self.topic_msg_rate.tolist()
        thr = None if self.topic_throughput is None else self.topic_throughput.tolist()
        return split_bundle(self.boundaries, bundle, algorithm, topics=list(self.topics), msg_rate=rate,
                            throughput=thr, namespace=self.namespace, **kwargs)

    def auto_split(self, **config) -> AutoSplitResult:
        """:func:`auto_split` over this namespace's bundles with these per-bundle totals.

        The traffic here is whatever the topics carry (often instantaneous), not Pulsar's long-term
        averages.
        """
        names = self.bundle_names()
        return auto_split(names, self.counts.tolist(),
                          None if self.topic_sessions is None else self.sessions.tolist(),
                          None if self.topic_msg_rate is None else self.msg_rate.tolist(),
                          None if self.topic_throughput is None else self.throughput.tolist(),
                          {self.namespace: self.n_bundles}, **config)

    @property
    def has_non_persistent(self) -> np.ndarray:
        """Per bundle: holds a non-persistent topic (Pulsar's ``hasNonPersistentTopic``, §4.4)."""
        nonp = np.fromiter((t.startswith("non-persistent://") for t in self.topics), dtype=bool,
                           count=len(self.topics))
        return self._per_bundle(nonp.astype(float)) > 0

    def to_frame(self) -> pd.DataFrame:
        """One row per bundle: ``bundle, range, lower, upper, topics, msg_rate, throughput,
        has_non_persistent``."""
        b = self.boundaries
        df = pd.DataFrame({
            "bundle": self.bundle_names(),
            "range": bundle_ranges(b),
            "lower": b[:-1],
            "upper": b[1:],
            "topics": self.counts,
        })
        df["msg_rate"] = self.msg_rate if self.topic_msg_rate is not None else np.nan
        df["throughput"] = self.throughput if self.topic_throughput is not None else np.nan
        df["has_non_persistent"] = self.has_non_persistent
        return df


def _fast_namespace(full: str) -> str:
    """Namespace of a full name without re-validating it (legacy names keep their cluster)."""
    parts = full.split("://", 1)[1].split("/", 3)
    if len(parts) < 3:
        raise InputError(f"invalid topic name {full!r}: expected <domain>://<tenant>/<namespace>/<topic>")
    return "/".join(parts[:-1])


def build_layout(topics: Sequence[str], boundaries: Sequence[int] | np.ndarray | int, *,
                 namespace: str | None = None, msg_rate=None, throughput=None,
                 sessions=None) -> NamespaceLayout:
    """Assign one namespace's topics to its bundles.

    Parameters
    ----------
    topics : sequence of str
        Topic names; short names are completed and validated, names starting with
        ``persistent://``/``non-persistent://`` are trusted as full (speed). One namespace only.
    boundaries : int or array-like of int
        A number of initial bundles or the boundaries.
    namespace : str, optional
        Default: the topics' namespace (required when there are no topics).
    msg_rate, throughput, sessions : sequence, optional
        Per-topic in+out msg/s, in+out bytes/s, producers+consumers.

    Examples
    --------
    >>> lay = build_layout(partition_names("t", 30, namespace="a/b"), 180)
    >>> int(lay.counts.sum()), lay.n_bundles
    (30, 180)
    """
    full = [t if t.startswith(_FULL_PREFIXES) else normalize_topic_name(t) for t in topics]
    nss = {_fast_namespace(t) for t in full}
    if len(nss) > 1:
        raise InputError(f"topics of several namespaces ({', '.join(sorted(nss))}): build one layout per namespace")
    if namespace is None:
        if not nss:
            raise InputError("no topics and no namespace")
        namespace = nss.pop()
    elif nss and namespace not in nss:
        raise InputError(f"topics belong to {nss.pop()}, not {namespace}")
    b = initial_boundaries(boundaries) if isinstance(boundaries, (int, np.integer)) else check_boundaries(boundaries)
    h, idx = assign_bundles(full, b, normalize=False)

    def arr(x, what):
        if x is None:
            return None
        a = np.asarray([np.nan if v is None else v for v in x], dtype=float)
        if a.shape != (len(full),):
            raise InputError(f"{what} must have one value per topic")
        return a

    return NamespaceLayout(namespace, b, tuple(full), h, idx, arr(msg_rate, "msg_rate"),
                           arr(throughput, "throughput"), arr(sessions, "sessions"))
