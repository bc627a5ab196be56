"""AvgShedder's pick of a hot broker's bundles: largest first, each that fits what is left to move.

Pulsar's ``AvgShedder.findBundlesForUnloading`` walks ``getBundleDataForLoadShedding()`` of the pair's
hot broker sorted by short-term message rate (or throughput) descending and takes each bundle whose
traffic is above zero and at most what is left of the amount, skipping the recently unloaded ones. Here
the sorted lists of a broker are made once per view (a sweep's cells share a view, so they share them),
and the walk jumps from one bundle that fits to the next. A backtest's synthetic bundles split their
broker's load evenly: their order is fixed for the broker list and they share one value, so nothing is
sorted or listed per broker, and the walk takes bundles of that value while they fit.
"""
from __future__ import annotations

import math
from bisect import bisect_left
from itertools import repeat

import numpy as np

from .base import sort_desc, sort_desc_runs


def _largest_first(view, j, mode: str) -> tuple:
    """Broker ``j``'s bundles that ``getBundleDataForLoadShedding()`` offers, largest short-term message
    rate (``mode`` ``"rate"``) or throughput first, ties in ``HashMap`` order: ``(indices, values, negated
    values, start, end)``, the broker's bundles being ``[start, end)`` of the lists. The negated values
    (ascending) serve to jump to the first one that fits a budget; they are ``None`` when some value of
    the broker is not finite (NaN breaks the order a jump relies on). Kept on the view (one view may serve
    several settings, e.g. a sweep's cells); the recently unloaded ones are skipped by the caller, which
    keeps the order. A broker sorted with others (:func:`_prefill_largest`) gets its lists when first asked.

    A view with :attr:`~engine.view.LoadView.even_shares` (each broker's bundles tie): ``(indices, value,
    count)`` instead — the broker's bundles in shed-rank order, the one value they all have (0.0 for a
    broker without any), nothing sorted or listed per broker (:func:`_fill` walks them as the lists)."""
    if view.even_shares:  # the broker's bundles all tie: shed-rank order, one value
        idx = view.owned_in_shed_order[j]
        return idx, _even_values(view, mode)[j], len(idx)
    cache = view.__dict__.setdefault("_avg_largest", {})
    got = cache.get((mode, j))
    if got is None:
        vals = view.short_rate if mode == "rate" else view.short_throughput
        idx = view.owned[j]
        if len(idx):
            idx = sort_desc(view, idx[view.sheddable[idx]], vals)
        v = vals[idx]
        neg = (-v).tolist() if np.isfinite(v).all() else None
        got = cache[(mode, j)] = (idx.tolist(), v.tolist(), neg, 0, len(idx))
    elif len(got) == 4:  # ((sorted indices, their values), start, end, all finite) of a batch: this broker's part
        (idx, v), a, b, finite = got
        v = v[a:b]
        got = cache[(mode, j)] = (idx[a:b].tolist(), v.tolist(), (-v).tolist() if finite else None, 0, b - a)
    return got


def _even_values(view, mode: str) -> list:
    """Per broker of an even-shares view, the value each of its bundles has (its first bundle's short-term
    message rate or throughput; 0.0 without one): one gather per view and mode, kept on the view."""
    key = "_avg_even_rate" if mode == "rate" else "_avg_even_throughput"
    got = view.__dict__.get(key)
    if got is None:
        vals = view.short_rate if mode == "rate" else view.short_throughput
        first = view.first_in_shed_order
        if len(vals):
            got = np.where(first >= 0, vals[np.maximum(first, 0)], 0.0).tolist()
        else:  # (no bundle at all)
            got = [0.0] * len(first)
        view.__dict__[key] = got
    return got


def _prefill_largest(view, mode: str, js: list, *, whole: bool = False) -> None:
    """:func:`_largest_first` of the brokers ``js`` not known yet, with one sort for all of them (the
    same bundles in the same order as sorting each broker's alone); each broker's lists are made when
    first asked (a round asks for the brokers of the pairs it fires, a few of those sorted).

    ``whole``: ``js`` is a list kept with the view (the pairing's hot side) — once it is sorted, asking
    again costs nothing (a sweep's cells ask for it in turn)."""
    if view.even_shares:
        return  # nothing to sort (see _largest_first)
    given = js
    if whole:
        done = view.__dict__.setdefault("_avg_whole", {})
        if done.get((mode, id(given))) is given:
            return
    cache = view.__dict__.setdefault("_avg_largest", {})
    js = [j for j in dict.fromkeys(given) if (mode, j) not in cache]
    if len(js) >= 2:  # (one broker: sorted alone when asked)
        vals = view.short_rate if mode == "rate" else view.short_throughput
        owned = [view.owned[j] for j in js]
        counts = np.fromiter(map(len, owned), dtype=np.int64, count=len(js))
        idx = np.concatenate(owned) if counts.sum() else np.zeros(0, dtype=np.int64)
        keep = view.sheddable[idx]
        if not keep.all():
            counts = np.bincount(np.repeat(np.arange(len(js)), counts)[keep], minlength=len(js))
            idx = idx[keep]
        if len(idx):
            idx = sort_desc_runs(view, idx, counts, vals)
        v = vals[idx]
        ends = np.cumsum(counts)
        finite = np.ones(len(js), dtype=bool)
        bad = np.flatnonzero(~np.isfinite(v))
        if len(bad):
            finite[np.searchsorted(ends, bad, side="right")] = False
        cache.update(zip(zip(repeat(mode), js), zip(repeat((idx, v)), (ends - counts).tolist(), ends.tolist(),
                                                     finite.tolist())))
    if whole:
        done[(mode, id(given))] = given  # (the list itself kept: its id names no other list meanwhile)


def _fill(largest: tuple, budget: float, names: list, recent) -> list:
    """The bundles AvgShedder takes from a hot broker, ``(index, value)``: largest first, each one that
    fits what is left of ``budget`` (``0 < value <= budget``) and was not unloaded recently, until
    the budget is spent. Values come sorted largest first, so every bundle passed over because it did
    not fit stays too big: the walk jumps from one that fits to the next (a bisection), the same picks
    as looking at each bundle. ``largest``: see :func:`_largest_first` (an even-shares broker's bundles
    all have one value: each fits while the budget lasts, the same picks as walking the lists)."""
    if len(largest) == 3:
        return _fill_even(largest[0], largest[1], budget, names, recent)
    idx, vals, neg, p, n = largest
    picked = []
    if neg is None:
        for q in range(p, n):
            if budget <= 0:
                break  # no value fits any more (the same picks as looking at every bundle)
            t = vals[q]
            if 0 < t <= budget and names[idx[q]] not in recent:
                budget -= t
                picked.append((idx[q], t))
        return picked
    while budget > 0:
        p = bisect_left(neg, -budget, p, n)  # the first value <= budget
        if p >= n or not vals[p] > 0:
            break  # none left, or only values <= 0 (sorted: all after it too)
        k = idx[p]
        if not recent or names[k] not in recent:  # (no name read when nothing was unloaded recently)
            budget -= vals[p]
            picked.append((k, vals[p]))
        p += 1
    return picked


def _fill_even(idx, v: float, budget: float, names: list, recent) -> list:
    """:func:`_fill` of bundles ``idx`` that all have the value ``v``."""
    picked = []
    if not math.isfinite(v):  # (as the walk without jumps: NaN never fits, infinity only an infinite budget)
        for k in idx:
            if budget <= 0:
                break
            if 0 < v <= budget and names[k] not in recent:
                budget -= v
                picked.append((k, v))
        return picked
    if not v > 0:
        return picked
    for k in idx:
        if not (budget > 0 and v <= budget):
            break  # spent, or less than one more: no later bundle fits either
        if not recent or names[k] not in recent:
            budget -= v
            picked.append((k, v))
    return picked
