"""Iteration order of the meta server's node map (reference Appendix A).

Pegasus keeps its replica servers in a ``std::unordered_map<host_port, node_state>``
(``node_mapper``). The balancer numbers the nodes ``1..N`` in that map's iteration order and every
tie-break (Ford-Fulkerson vertex choice, copy ordering, cure candidate scans) depends on it. This
module emulates libstdc++'s order exactly: the string hash (``_Hash_bytes``), the prime bucket
counts and the "insert before the first element of the bucket, else at the front" rule.
"""
from __future__ import annotations

from typing import Iterable

__all__ = [
    "hash_bytes",
    "hp_hash",
    "BUCKETS",
    "MAX_NODES",
    "iteration_order",
    "NodeMap",
]

_M64 = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
_SEED = 0xC70F6907

#: bucket counts libstdc++ grows through (observed sequence of the reference, Appendix A)
BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357)
#: largest node map the emulation covers (the last verified bucket count)
MAX_NODES = BUCKETS[-1]


def _mix(v: int) -> int:
    return v ^ (v >> 47)


def hash_bytes(data: bytes, seed: int = _SEED) -> int:
    """libstdc++ ``std::_Hash_bytes`` (64-bit), the hash behind ``std::hash<std::string>``.

    Parameters
    ----------
    data : bytes
        The bytes to hash (a host name, UTF-8 encoded).
    seed : int, optional
        libstdc++ uses ``0xc70f6907``.

    Returns
    -------
    int
        The unsigned 64-bit hash.

    Examples
    --------
    >>> hash_bytes(b"localhost")
    6216385685797311468
    >>> hash_bytes(b"127.0.0.1")
    14224256174011989824
    """
    n = len(data)
    aligned = n & ~7
    h = (seed ^ (n * _MUL)) & _M64
    for i in range(0, aligned, 8):
        d = int.from_bytes(data[i:i + 8], "little")
        d = (_mix((d * _MUL) & _M64) * _MUL) & _M64
        h = ((h ^ d) * _MUL) & _M64
    if n & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _M64
    h = (_mix(h) * _MUL) & _M64
    return _mix(h)


def hp_hash(host: str, port: int) -> int:
    """Hash of a ``host_port``: ``std::hash<std::string>(host) XOR port``."""
    return hash_bytes(host.encode("utf-8")) ^ int(port)


class NodeMap:
    """An emulated ``std::unordered_map<host_port, ...>``: keys in libstdc++ iteration order.

    Supports what the meta server does to its node map: insert (a node seen for the first time),
    erase (``can_run_balancer`` drops dead, empty nodes) and iteration.

    Parameters
    ----------
    keys : iterable of (host, port) tuples, optional
        Keys inserted in this order.

    Notes
    -----
    Rules (Appendix A of the reference): the bucket count starts at 1 and grows through
    :data:`BUCKETS` when the ``k``-th element is inserted with ``k > bucket_count``; a rehash
    re-inserts the current elements in their current iteration order; an insert goes immediately
    before the first element of its bucket's run, or at the front of the list when the bucket is
    empty; erase only unlinks. Beyond :data:`MAX_NODES` keys the growth sequence is not verified,
    so :class:`ValueError` is raised.
    """

    def __init__(self, keys: Iterable[tuple[str, int]] = ()):
        self._seq: list = []
        self._hash: dict = {}
        self._nb = 1
        for k in keys:
            self.insert(k)

    def __iter__(self):
        return iter(list(self._seq))

    def __len__(self) -> int:
        return len(self._seq)

    def __contains__(self, key) -> bool:
        return key in self._hash

    @property
    def bucket_count(self) -> int:
        """Current number of buckets."""
        return self._nb

    def _put(self, seq: list, key, nb: int) -> None:
        b = self._hash[key] % nb
        for i, k in enumerate(seq):
            if self._hash[k] % nb == b:
                seq.insert(i, key)
                return
        seq.insert(0, key)

    def insert(self, key) -> None:
        """Insert ``key`` (a ``(host, port)`` tuple); inserting an existing key changes nothing."""
        if key in self._hash:
            return
        if len(self._seq) + 1 > self._nb:
            bigger = [x for x in BUCKETS if x > self._nb]
            if not bigger:
                raise ValueError(f"more than {MAX_NODES} nodes: node order emulation not verified")
            self._nb = bigger[0]
            old, self._seq = self._seq, []
            self._hash[key] = hp_hash(key[0], key[1])
            for k in old:
                self._put(self._seq, k, self._nb)
        else:
            self._hash[key] = hp_hash(key[0], key[1])
        self._put(self._seq, key, self._nb)

    def erase(self, key) -> None:
        """Remove ``key`` if present; the others keep their relative order."""
        if key in self._hash:
            self._seq.remove(key)
            del self._hash[key]


def iteration_order(insertions: Iterable[tuple[str, int]]) -> list:
    """Iteration order of a node map after inserting ``insertions`` in order.

    Parameters
    ----------
    insertions : iterable of (host, port)
        Keys in insertion order (duplicates are ignored, as ``std::unordered_map`` does).

    Returns
    -------
    list
        The keys (same objects) in iteration order.

    Examples
    --------
    >>> [k[1] for k in iteration_order([("localhost", p) for p in range(1, 13)])]
    [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 12, 1]
    """
    return list(NodeMap(insertions))
