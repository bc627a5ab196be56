"""Hash ranges and boundaries: CRC-32 topic hashing, range strings, bundle lookup, boundary edits.

A namespace's boundaries ``0 = p0 < … < pn = 0xffffffff`` cut the hash range into bundles; this module
builds them (``PoliciesUtil.getBundles``), parses and formats ranges, finds the bundle of a hash
(``NamespaceBundles.getBundle``) and replaces a bundle by its children (``NamespaceBundleFactory.splitBundles``).
"""
from __future__ import annotations

import re
import zlib
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from .constants import _LONG_MAX, _LONG_MIN, FULL_LOWER_BOUND, FULL_UPPER_BOUND, BundleLookupError
from .topics import _FULL_PREFIXES, _NAMED, normalize_topic_name, parse_topic_name

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


def can_split_bundle(lower: int, upper: int) -> bool:
    """``NamespaceBundleFactory.canSplitBundle``: ``upper − lower > 1``."""
    return int(upper) - int(lower) > 1


def _check_range(lower: int, upper: int) -> tuple[int, int]:
    lower, upper = int(lower), int(upper)
    if not FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND:
        raise InputError(f"invalid bundle range [{lower}, {upper}]: need 0 <= lower < upper <= 0xffffffff")
    return lower, upper


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
