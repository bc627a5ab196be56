"""Java semantics that Pulsar's results depend on, emulated bit for bit.

* float32 resource percentages (``ResourceUsage.percentUsage()``), scalar and vectorised;
* ``String.hashCode()`` and ``HashMap`` / ``ConcurrentHashMap`` iteration order, which break ties
  everywhere in Pulsar (stable sorts keep map order);
* Java ``(int)`` casts (truncation toward zero, saturating, NaN → 0);
* ``LocalBrokerData.max(...)``: a loop of ``d > max`` from ``-Infinity``, so a NaN never wins;
* Guava ``Hashing.crc32().hashString(s).asInt()`` and ``Math.abs`` on ``int``;
* a ``double`` sum in iteration order, as a Java ``for`` loop adds (:func:`seq_sum`).

Examples
--------
>>> percent_usage(30, 100)
30.000001907348633
>>> percent_usage(999, 1000)
99.9000015258789
>>> java_string_hash("broker-1")
372697917
>>> java_int(-2.7), java_int(float("nan")), java_int(1e20)
(-2, 0, 2147483647)
"""
from __future__ import annotations

import functools
import gc
import math
import re
import threading
import zlib
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "seq_sum",
    "percent_usage",
    "percent_usage_array",
    "java_string_hash",
    "java_string_hashes",
    "hashmap_capacity",
    "hashmap_bucket",
    "java_map_order",
    "java_map_rank",
    "chm_group_ranks",
    "java_semver",
    "java_int",
    "java_long",
    "java_abs_int",
    "java_max",
    "java_double_math",
    "java_max_rows",
    "guava_crc32_as_int",
    "INT_MAX",
    "INT_MIN",
]

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
_F100 = np.float32(100.0)


def percent_usage(usage: float, limit: float) -> float:
    """``ResourceUsage.percentUsage()``: ``(float)usage / (float)limit * 100`` in float32, widened.

    Returns 0.0 when ``limit <= 0`` (Pulsar's guard); values over 100 are allowed.
    """
    if not limit > 0:  # also catches NaN limit (Java: NaN > 0 is false)
        return 0.0
    if getattr(_quiet, "on", False):  # inside a load manager entry point: numpy's warnings are off already
        return _percent32(usage, limit)
    with np.errstate(all="ignore"):
        return _percent32(usage, limit)


def _percent32(usage: float, limit: float) -> float:
    q = np.float32(np.float32(usage) / np.float32(limit))
    return float(np.float32(q * _F100))


def percent_usage_array(usage, limit) -> np.ndarray:
    """Vectorised :func:`percent_usage` over arrays (float64 result of float32 arithmetic)."""
    with np.errstate(all="ignore"):  # (float) of a double above Float.MAX_VALUE is Infinity, as in Java
        u = np.asarray(usage, dtype=np.float64).astype(np.float32)
        lim = np.asarray(limit, dtype=np.float64)
        l32 = lim.astype(np.float32)
        q = (u / np.where(lim > 0, l32, np.float32(1.0))).astype(np.float32)
        p = (q * _F100).astype(np.float32)
    return np.where(lim > 0, p.astype(np.float64), 0.0)


_hash_cache: dict[str, int] = {}


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()`` (UTF-16 code units, ``h = 31*h + c``, 32-bit signed wrap)."""
    h = _hash_cache.get(s)
    if h is not None:
        return h
    v = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        v = (31 * v + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    h = v - (1 << 32) if v & 0x80000000 else v
    if len(_hash_cache) < 2_000_000:
        _hash_cache[s] = h
    return h


def java_string_hashes(strings: Sequence[str]) -> np.ndarray:
    """Vectorised ``String.hashCode()`` of many strings (int64 array of signed 32-bit values).

    Left-padding with zero code units does not change a Java string hash (``31*0 + 0 = 0``), so the
    strings are padded to one width and reduced with wrapping uint32 arithmetic.
    """
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    known = list(map(_hash_cache.get, strings))
    if None not in known:  # every name hashed before (a snapshot read again, a replay's next minute)
        return np.array(known, dtype=np.int64)
    missing = [s for s, h in zip(strings, known) if h is None]
    if len(missing) > 4:  # (the vectorised hash costs about four per-string ones)
        vals = _hashes_of(missing)
        if len(_hash_cache) < 2_000_000:
            _hash_cache.update(zip(missing, vals.tolist()))
        if len(missing) == n:  # none was cached: ``missing`` is ``strings``, in order
            return vals
        got = dict(zip(missing, vals.tolist()))
        return np.fromiter((got[s] if h is None else h for s, h in zip(strings, known)), dtype=np.int64, count=n)
    return np.fromiter((java_string_hash(s) if h is None else h for s, h in zip(strings, known)), dtype=np.int64,
                       count=n)


_POW31 = np.ones(64, dtype=np.uint32)
_POW31[1:] = np.cumprod(np.full(63, 31, dtype=np.uint32), dtype=np.uint32)


def _pow31(width: int) -> np.ndarray:
    """``31**k`` in wrapping uint32 arithmetic for ``k < width`` (at least; a table grown on demand)."""
    global _POW31
    if len(_POW31) < width:
        n = max(width, 2 * len(_POW31))
        p = np.ones(n, dtype=np.uint32)
        p[1:] = np.cumprod(np.full(n - 1, 31, dtype=np.uint32), dtype=np.uint32)
        _POW31 = p
    return _POW31


def _hashes_of(strings: list, chunk: int = 8192) -> np.ndarray:
    """``String.hashCode()`` of each string, all at once: ``h = sum(c[i] * 31**(n-1-i))`` over the UTF-16
    code units of all strings in one buffer, in wrapping uint32 arithmetic, summed per string (in
    pieces of ``chunk`` strings, so the temporaries stay small)."""
    if len(strings) > chunk:
        return np.concatenate([_hashes_of(strings[i:i + chunk], chunk) for i in range(0, len(strings), chunk)])
    joined = "".join(strings)
    if joined.isascii():  # one code unit per character: one encoding for all strings
        lens = np.fromiter(map(len, strings), dtype=np.int32, count=len(strings))
        flat = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.uint32)
    else:
        enc = [s.encode("utf-16-be") for s in strings]
        lens = np.fromiter(map(len, enc), dtype=np.int32, count=len(enc)) // 2
        flat = np.frombuffer(b"".join(enc), dtype=">u2").astype(np.uint32)
    h = np.zeros(len(strings), dtype=np.uint32)
    if len(flat):
        pow31 = _pow31(int(lens.max()))
        ends = np.cumsum(lens, dtype=np.int32)
        exps = np.repeat(ends - 1, lens) - np.arange(len(flat), dtype=np.int32)  # unit i of n: n-1-i
        terms = flat * pow31[exps]  # (integer arrays wrap silently)
        nz = lens > 0
        h[nz] = np.add.reduceat(terms, (ends - lens)[nz], dtype=np.uint32)
    return h.view(np.int32).astype(np.int64)  # the signed 32-bit value


def hashmap_capacity(size: int, concurrent: bool = False, initial: int = 16) -> int:
    """Table size of a ``java.util.HashMap`` (or ``ConcurrentHashMap``) grown from ``initial`` (16).

    ``HashMap`` resizes when ``++size > 0.75*cap``; ``ConcurrentHashMap`` when ``count >= 0.75*cap``.
    Guava's ``ArrayListMultimap.create()`` backs its keys with a ``HashMap`` sized for 12 keys: a table of
    ``ceil(12 / 0.75)`` = 16 in the Guava every supported Pulsar line ships (32.1 and later).
    """
    cap = initial
    if concurrent:
        while size >= cap * 3 // 4:
            cap *= 2
    else:
        while size > cap * 3 // 4:
            cap *= 2
    return cap


def hashmap_bucket(h: int, capacity: int) -> int:
    """Bucket index of a key with hash ``h``: ``(h ^ (h >>> 16)) & (capacity - 1)``."""
    u = h & 0xFFFFFFFF
    return (u ^ (u >> 16)) & (capacity - 1)


def java_map_rank(keys: Sequence[str], concurrent: bool = False, initial: int = 16) -> np.ndarray:
    """Position of each key in the iteration order of a Java hash map built by inserting ``keys``
    in the given order (bucket ascending; insertion order inside a bucket, except where a
    ``ConcurrentHashMap`` resized over keys sharing a bin: its ``transfer`` reorders them, followed exactly).

    Returns an int array ``rank`` with ``rank[i]`` = iteration position of ``keys[i]``.
    Treeified bins (8+ colliding keys) are not modelled.
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # broker lists come back minute after minute (a replay, a simulator): remembered up to _RANK_MEMO_KEYS keys
    memo_key = (tuple(keys), concurrent, initial) if n <= _RANK_MEMO_KEYS else None
    got = _rank_memo.get(memo_key) if memo_key is not None else None
    if got is not None:
        return got.copy()
    cap = hashmap_capacity(n, concurrent, initial)
    h = java_string_hashes(keys) & 0xFFFFFFFF
    h = h ^ (h >> 16)
    b = h & (cap - 1)
    order = np.lexsort((np.arange(n), b))
    if concurrent and cap > initial and int(np.bincount(b, minlength=cap).max()) > 1:
        # keys share a bin and the table was resized: ConcurrentHashMap's transfer does not keep a bin's
        # order (see _chm_order)
        order = np.asarray(_chm_order((h & 0x7FFFFFFF).tolist(), initial), dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    if memo_key is not None:
        if len(_rank_memo) >= 64:
            _rank_memo.clear()  # (no iteration: safe beside another thread's lookups)
        _rank_memo[memo_key] = rank.copy()
    return rank


def _chm_order(spread: list, initial: int = 16) -> list:
    """Iteration order (indices) of a ``ConcurrentHashMap`` filled with keys of these spread hashes in
    this order: each put appends to its bin; when the count reaches ``sizeCtl`` (0.75 of the table) the
    table doubles and ``transfer`` splits each bin by the new hash bit, keeping the bin's last run of
    same-bit nodes as it is and putting every node before it, in reverse order, in front of it."""
    cap = initial
    bins: list = [None] * cap
    ctl = cap - (cap >> 2)
    for count, hv in enumerate(spread, start=1):
        i = count - 1
        slot = hv & (cap - 1)
        got = bins[slot]
        if got is None:
            bins[slot] = [i]
        else:
            got.append(i)
        if count >= ctl:
            moved: list = [None] * (cap * 2)
            for idx, nodes in enumerate(bins):
                if nodes is None:
                    continue
                if len(nodes) == 1:
                    moved[idx + cap if spread[nodes[0]] & cap else idx] = nodes
                    continue
                bits = [spread[k] & cap for k in nodes]
                last = len(nodes) - 1
                while last > 0 and bits[last - 1] == bits[-1]:
                    last -= 1
                lo = nodes[last:] if bits[-1] == 0 else []
                hi = nodes[last:] if bits[-1] else []
                for k, bit in zip(nodes[:last], bits[:last]):
                    (hi if bit else lo).insert(0, k)
                if lo:
                    moved[idx] = lo
                if hi:
                    moved[idx + cap] = hi
            bins = moved
            cap <<= 1
            ctl = cap - (cap >> 2)
    return [k for nodes in bins if nodes is not None for k in nodes]


def chm_group_ranks(spread: np.ndarray, group: np.ndarray, n_groups: int, initial: int = 16) -> np.ndarray:
    """Iteration position of each key in its own ``ConcurrentHashMap``, for many maps at once: the order
    of :func:`_chm_order` (the table grown from ``initial``, each resize's ``transfer`` followed), in array
    operations over all maps together.

    ``spread``: each key's spread hash ``(h ^ (h >>> 16)) & 0x7FFFFFFF``; ``group``: the map of each key
    (``0 .. n_groups-1``), the keys of one map in their insertion order. Returns ``rank`` with
    ``rank[i]`` = position of key ``i`` in its map's iteration order.

    Each resize a map reaches is replayed on the keys it holds by then: per bin (in bin order), the last
    run of nodes with the same new-hash bit keeps its order and every node before it goes, reversed, in
    front of it in its new bin; keys put after a resize are appended to their bin in the bigger table.
    """
    spread = np.asarray(spread, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    n = len(spread)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sizes = np.bincount(group, minlength=n_groups)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    by_group = np.argsort(group, kind="stable")
    idx = np.empty(n, dtype=np.int64)  # insertion index of each key inside its map
    idx[by_group] = np.arange(n) - np.repeat(first, sizes)
    msize = sizes[group]
    cap = initial
    bins = spread & (cap - 1)
    pos = idx + 4 * n + 8  # a key put into a bin goes after every node already there
    while True:
        ctl = cap - (cap >> 2)
        sel = np.flatnonzero((idx < ctl) & (msize >= ctl))  # the maps that reach this resize, their keys so far
        if len(sel) == 0:
            break
        sel = sel[_order3(group[sel], bins[sel], pos[sel], n)]
        g, b = group[sel], bins[sel]
        bit = (spread[sel] & cap) != 0
        m = len(sel)
        starts = np.flatnonzero(np.concatenate(([True], (g[1:] != g[:-1]) | (b[1:] != b[:-1]))))
        bin_of = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, m)))
        at = np.arange(m)
        last_bit = bit[np.append(starts[1:], m) - 1][bin_of]
        last_other = np.maximum.reduceat(np.where(bit != last_bit, at, -1), starts)[bin_of]
        within = at - starts[bin_of]
        # the last run keeps its order after the others, which come reversed
        pos[sel] = np.where(at > last_other, within + n, -within)
        bins[sel] = b + np.where(bit, cap, 0)
        cap <<= 1
        later = (idx >= ctl) & (msize >= ctl)
        bins[later] = spread[later] & (cap - 1)
    o = _order3(group, bins, pos, n)
    rank = np.empty(n, dtype=np.int64)
    rank[o] = np.arange(n) - first[group[o]]
    return rank


def _order3(g: np.ndarray, b: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
    """Indices sorting by (g, b, p) (all distinct triples): one int64 key when it fits, else a lexsort."""
    if len(g) == 0:
        return np.zeros(0, dtype=np.int64)
    gmax, bmax, prange = int(g.max()) + 1, int(b.max()) + 1, 6 * n + 16  # p in [-n, 5n + 8]
    if gmax * bmax * prange < 2**62:
        return np.argsort((g * bmax + b) * prange + (p + n))
    return np.lexsort((p, b, g))


#: java_map_rank of recent key lists, for lists of at most _RANK_MEMO_KEYS keys
_rank_memo: dict = {}
_RANK_MEMO_KEYS = 5000


def java_map_order(keys: Iterable[str], concurrent: bool = False, initial: int = 16) -> list[str]:
    """The keys in the order a Java ``HashMap`` (or ``ConcurrentHashMap``) iterates them.

    >>> java_map_order([f"bundle-{i}" for i in range(11)])[:4]
    ['bundle-0', 'bundle-2', 'bundle-1', 'bundle-10']
    """
    seen: dict[str, None] = dict.fromkeys(keys)
    ks = list(seen)
    rank = java_map_rank(ks, concurrent, initial)
    out: list[str] = [""] * len(ks)
    for k, r in zip(ks, rank.tolist()):
        out[r] = k
    return out


def java_int(x: float) -> int:
    """Java ``(int) x`` for a double: truncation toward zero, NaN → 0, saturating at int range."""
    if isinstance(x, float) and math.isnan(x):
        return 0
    if x >= INT_MAX:
        return INT_MAX
    if x <= INT_MIN:
        return INT_MIN
    return int(x)


def java_long(x: float) -> int:
    """Java ``(long) x`` for a double (truncation, NaN → 0, saturating)."""
    if isinstance(x, float) and math.isnan(x):
        return 0
    if x >= 2**63 - 1:
        return 2**63 - 1
    if x <= -(2**63):
        return -(2**63)
    return int(x)


#: per thread: inside a load manager entry point already (numpy's error state set once for nested calls)
_quiet = threading.local()

try:  # numpy 2: the floating-point error state is a context variable; np.errstate builds a new value for
    # it on every entry (most of a small entry point's cost), this one is built once
    from numpy._core._multiarray_umath import _make_extobj
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_STATE

    _QUIET = _make_extobj(over="ignore", invalid="ignore", divide="ignore", under="ignore")
except (ImportError, AttributeError, TypeError):  # another numpy: np.errstate itself
    _ERR_STATE = _QUIET = None


def java_double_math(fn):
    """Run ``fn`` with numpy's floating-point warnings off: Java's double arithmetic overflows to
    Infinity, gives NaN for ``Infinity - Infinity`` and Infinity for ``x / 0`` without a word, and
    Pulsar decides on those values; the load managers' entry points decide the same way, quietly.

    Cyclic garbage collection waits until the outermost entry point returns: a cycle's decisions are
    thousands of young records without reference cycles, and a collection pass inside it would walk
    every object of the process (a snapshot's, a page's) for nothing."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_quiet, "on", False):  # already inside an entry point of this thread (e.g. a cycle's placements)
            return fn(*args, **kwargs)
        _quiet.on = True
        collect = gc.isenabled()
        if collect:
            gc.disable()
        try:
            if _ERR_STATE is not None:
                token = _ERR_STATE.set(_QUIET)
                try:
                    return fn(*args, **kwargs)
                finally:
                    _ERR_STATE.reset(token)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                return fn(*args, **kwargs)
        finally:
            _quiet.on = False
            if collect:
                gc.enable()
    return wrapper



def java_max(values: Iterable[float]) -> float:
    """``LocalBrokerData.max(double...)``: the largest value by ``d > max`` starting from ``-Infinity``.

    A NaN (``Infinity / Infinity``, ``Infinity * 0`` weight) is never larger, so it is skipped, and
    all NaN gives ``-Infinity``; Python's ``max`` would return a NaN in first place.

    >>> java_max([float("nan"), 30.0, 20.0]), java_max([float("nan")])
    (30.0, -inf)
    """
    m = -math.inf
    for d in values:
        if d > m:
            m = d
    return m


def java_max_rows(columns: Sequence[np.ndarray]) -> np.ndarray:
    """:func:`java_max` element-wise over equal-length arrays (one per argument)."""
    stacked = np.stack([np.asarray(c, dtype=np.float64) for c in columns])
    return np.where(np.isnan(stacked), -np.inf, stacked).max(axis=0)


def java_abs_int(v: int) -> int:
    """``Math.abs(int)``: ``Integer.MIN_VALUE`` stays negative, as in Java."""
    return v if v == INT_MIN else abs(v)


def guava_crc32_as_int(s: str) -> int:
    """``Hashing.crc32().hashString(s, UTF_8).asInt()`` as a signed Java int."""
    v = zlib.crc32(s.encode("utf-8")) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def seq_sum(values) -> float:
    """Sum in iteration order, as a Java ``for`` loop does (numpy's pairwise ``sum`` rounds differently;
    ``cumsum`` accumulates left to right, so its last element is the loop's result).

    >>> seq_sum([0.1] * 10), seq_sum([])
    (0.9999999999999999, 0.0)
    """
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return 0.0
    return float(np.cumsum(a)[-1])


# ------------------------------------------------------------------ java-semver (BrokerVersionFilter)
_NUM = r"(0|[1-9][0-9]*)"
_IDENT = r"[0-9A-Za-z-]+"
#: a semantic version as java-semver reads it: major.minor.patch, an optional pre-release and build metadata
_SEMVER_RE = re.compile(rf"{_NUM}\.{_NUM}\.{_NUM}(?:-({_IDENT}(?:\.{_IDENT})*))?(?:\+({_IDENT}(?:\.{_IDENT})*))?")


def _ids_key(ids: str | None) -> tuple:
    """Precedence of dot-separated identifiers (SemVer §11): numeric ones numerically and below alphanumeric
    ones, a shorter list below a longer one it prefixes. ``None`` (none given) sorts above any list."""
    if ids is None:
        return (1,)
    return (0, tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in ids.split(".")))


def java_semver(v: str) -> tuple | None:
    """``(precedence, build)`` of a version string, or None when java-semver cannot parse it (the whole
    string must match; numeric identifiers have no leading zero). ``precedence`` orders versions as java-semver
    does without build metadata (a pre-release below its release); ``build`` breaks ties as its build-aware
    order does (a version with build metadata above the same one without, two build lists by identifiers)."""
    m = _SEMVER_RE.fullmatch(v)
    if not m:
        return None
    pre = m.group(4)
    if pre is not None and any(x.isdigit() and len(x) > 1 and x[0] == "0" for x in pre.split(".")):
        return None
    build = m.group(5)
    return ((int(m.group(1)), int(m.group(2)), int(m.group(3)), _ids_key(pre)),
            (0,) if build is None else (1, _ids_key(build)))
