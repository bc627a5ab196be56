"""Checks of a LoadData JSON read as columns (:mod:`engine.fastload`): whatever the fast reader cannot
prove the ordinary reader accepts in the same way raises :class:`_Fallback`, and the caller reads the
document the ordinary way.

* :func:`_depth`: the nesting of a parsed value, as :func:`engine.bounded.json_depth` counts it, and the
  floats that may have been integers beyond 64 bits.
* :func:`_rows` / :func:`_numbers`: entries holding exactly the known keys, as JSON numbers, as an array.
* :func:`_check_stats`, :func:`_check_bundle_data`: the reader's ranges (:mod:`engine.limits`) on the lastStats and
  bundleData columns.
"""
from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

from .limits import MAX_COUNT, MAX_QUANTITY

__all__: list = []  # the fast reader's own helpers

_TWO63 = 2.0 ** 63  # the first float above Long.MAX_VALUE


class _Fallback(Exception):
    """The fast path cannot prove the ordinary reader's answer: use the ordinary reader."""


def _depth(obj, stop: int) -> int:
    """Nesting depth of a parsed JSON value as :func:`engine.bounded.json_depth` counts brackets
    (an object or array is one level), iterative; stops once above ``stop``.

    Also refuses (``_Fallback``) a float of magnitude 2**63 or more: orjson turns an integer beyond 64
    bits into a float where ``json`` keeps the int, which a reader message or a kept field would show."""
    best = 0
    todo = [(obj, 1)] if isinstance(obj, (dict, list)) else []
    while todo:
        o, d = todo.pop()
        if d > best:
            best = d
            if best > stop:
                return best
        vals = o.values() if isinstance(o, dict) else o
        kinds = set(map(type, vals))
        # |v| < 2**63 for every float (a NaN fails it too), compared in C
        if float in kinds and not all(map(_TWO63.__gt__, map(abs, [v for v in vals if type(v) is float]))):
            raise _Fallback("a number that may have been an integer beyond 64 bits")
        if dict in kinds or list in kinds:
            for v in vals:
                if isinstance(v, (dict, list)):
                    todo.append((v, d + 1))
    return best



def _rows(dicts: list, keys: tuple, n_known: int) -> list:
    """Each dict's values of ``keys`` (tuples), every dict holding exactly those keys; else _Fallback."""
    if not dicts:
        return []
    if set(map(len, dicts)) != {n_known}:
        raise _Fallback("entries with missing or unknown keys")
    try:
        rows = list(map(itemgetter(*keys), dicts))
    except (KeyError, TypeError):
        raise _Fallback("entries without the known keys") from None
    return rows


def _numbers(rows: list, width: int) -> np.ndarray:
    """``rows`` (tuples of JSON numbers) as an ``(n, width)`` float64 array; _Fallback on any other type."""
    if not rows:
        return np.zeros((0, width))
    types = set(map(type, chain.from_iterable(rows)))
    if not types <= {int, float}:
        raise _Fallback("a value that is not a JSON number")
    try:
        return np.fromiter(chain.from_iterable(rows), dtype=np.float64, count=len(rows) * width).reshape(-1, width)
    except OverflowError:  # an integer beyond every double: the reader's message names it
        raise _Fallback("a number beyond a double") from None


# the ranges by each array's least and greatest value (a NaN makes both NaN, and fails every comparison)
def _check_quantity(a: np.ndarray) -> None:
    if a.size and not (a.min() >= 0 and a.max() <= MAX_QUANTITY):  # finite and not negative
        raise _Fallback("a quantity out of range")


def _check_count(a: np.ndarray, top: float = MAX_COUNT) -> None:
    if a.size and not (a.min() >= 0 and a.max() <= top and (np.floor(a) == a).all()):
        raise _Fallback("a count out of range")


def _check_long(a: np.ndarray) -> None:
    if a.size and not (a.min() >= 0 and a.max() < _TWO63 and (np.floor(a) == a).all()):
        raise _Fallback("a long out of range")


def _check_stats(stats_a: np.ndarray) -> None:
    """The reader's ranges on the lastStats values (``_STAT_KEYS`` columns); _Fallback on any out of range."""
    _check_quantity(stats_a[:, :4])
    _check_count(stats_a[:, 4:7])
    _check_long(stats_a[:, 7])


def _check_bundle_data(st_a: np.ndarray, lt_a: np.ndarray, top_a: np.ndarray) -> None:
    """The reader's ranges on the bundleData values (``_TAMD_KEYS`` columns, topics)."""
    for a in (st_a, lt_a):
        _check_count(a[:, :2])
        _check_quantity(a[:, 2:])
        if a.size and not (a[:, 0] >= 1).all():
            raise _Fallback("maxSamples below 1")
    _check_count(top_a)

