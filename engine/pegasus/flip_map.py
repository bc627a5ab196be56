"""Order of equal-skew tables in the cluster policy (reference Appendix B, quirk Q2).

``utils::flip_map`` turns ``apps_skew`` (app id -> skew) into a ``std::multimap<skew, app_id>``
through ``std::inserter`` with a moving hint; libstdc++'s hinted insert decides where equal keys
land, so tables with the same skew are not simply visited in app-id order.
"""
from __future__ import annotations

from typing import Iterable

__all__ = ["flip_map_order"]


def flip_map_order(items: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Multimap order of ``(skew, app_id)`` built by ``utils::flip_map``.

    Parameters
    ----------
    items : iterable of (app_id, skew)
        In ascending app id (the iteration order of ``std::map<app_id, skew>``).

    Returns
    -------
    list of (skew, app_id)
        In the multimap's iteration order (ascending skew; equal skews in hinted-insert order).

    Examples
    --------
    >>> flip_map_order([(1, 2), (2, 1), (3, 2)])
    [(1, 2), (2, 3), (2, 1)]

    Notes
    -----
    Transcribes the libstdc++ ``_M_insert_equal_(hint, v)`` decisions given in the reference
    (validated there on 2000 random inputs). Emulated always (quirk Q2 is an ordering rule, not a
    bug).
    """
    seq: list[tuple[int, int]] = []
    hint = 0
    for k, v in items:
        n = len(seq)

        def upper():
            return next((i for i in range(n) if seq[i][0] > v), n)

        def lower():
            return next((i for i in range(n) if seq[i][0] >= v), n)

        if hint == n:
            pos = n if n and seq[-1][0] <= v else upper()
        elif v <= seq[hint][0]:
            if hint == 0:
                pos = 0
            elif seq[hint - 1][0] <= v:
                pos = hint
            else:
                pos = upper()
        else:
            if hint == n - 1:
                pos = n
            elif seq[hint + 1][0] >= v:
                pos = hint + 1
            else:
                pos = lower()
        seq.insert(pos, (v, k))
        hint = pos + 1
    return seq
