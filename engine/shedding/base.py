"""What every shedding strategy shares: the interface and Pulsar's bundle-selection helpers.

A strategy's memory (ThresholdShedder history, AvgShedder hit counters and planned destinations, ...)
is a value of its ``state_type`` (:mod:`engine.strategies.state`): ``result, new_state =
strategy.run(view, conf, recently_unloaded, state)``. :meth:`SheddingStrategy.state` gives it as the
dict the command line prints, :meth:`SheddingStrategy.reset` clears it, :func:`copy.deepcopy` copies
the strategy.
"""
from __future__ import annotations

import copy
from typing import Mapping

import numpy as np

from ..config import LoadBalancerConfig
from ..results import BALANCED, OVERLOADED, SKIP, SUCCESS, SheddingResult, column_of
from ..strategies.state import Stateful
from ..view import LoadView

__all__ = ["SheddingStrategy", "candidate_bundles", "sort_desc", "sort_desc_runs", "select_largest_first", "finish_result"]


class SheddingStrategy(Stateful):
    """Interface of a load-shedding strategy (Pulsar's ``LoadSheddingStrategy``)."""

    #: short class name, as in ``broker.conf``
    name: str = ""
    #: keys of :class:`LoadBalancerConfig` the strategy reads (the dashboard shows these sliders)
    config_keys: tuple = ()

    def run(self, view: LoadView, conf: LoadBalancerConfig, recently_unloaded: Mapping[str, int], state=None):
        """``(result, new_state)``: one ``findBundlesForUnloading`` from ``state`` (a ``state_type``
        value; ``None`` = empty)."""
        self._enter(state)
        res = self.find_bundles_for_unloading(view, conf, recently_unloaded)
        return res, self.state_value()

    def find_bundles_for_unloading(self, view: LoadView, conf: LoadBalancerConfig,
                                   recently_unloaded: Mapping[str, int]) -> SheddingResult:
        """Pulsar's ``findBundlesForUnloading(loadData, conf)``; ``recently_unloaded`` is
        ``loadData.getRecentlyUnloadedBundles()`` (bundle → unload time, ms). Goes on from the
        working memory (see :meth:`run`)."""
        raise NotImplementedError

    def on_active_brokers_change(self, active_brokers) -> None:
        """Pulsar's ``onActiveBrokersChange``: forget state of brokers that left."""

    def state(self) -> dict:
        """The strategy's memory as a JSON-friendly dict (what the command line prints)."""
        return self.state_value().to_json()

    def copy(self) -> "SheddingStrategy":
        return copy.deepcopy(self)


def candidate_bundles(view: LoadView, j: int, recent: np.ndarray) -> np.ndarray:
    """Bundles of broker ``j`` that are in ``getBundleDataForLoadShedding()`` and not recently unloaded."""
    idx = view.owned[j]
    if len(idx) == 0:
        return idx
    return idx[view.sheddable[idx] & ~recent[idx]]


def sort_desc(view: LoadView, idx: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``idx`` sorted by ``values`` descending, ties in ``HashMap`` order (Java stable sort): the order
    of :attr:`LoadView.shed_rank`, whose keys (name hashes) are computed for the tied bundles alone."""
    if len(idx) <= 1:
        return idx
    neg = -values[idx]
    order = np.argsort(neg, kind="stable")
    return _ties_in_map_order(view, idx[order], neg[order], None)


def sort_desc_runs(view: LoadView, idx: np.ndarray, counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`sort_desc` of many brokers' bundles at once: ``idx`` is one run of bundles per broker
    (``counts[g]`` long), each run sorted as :func:`sort_desc` sorts it alone; one sort for all.

    Runs of similar lengths are sorted as the rows of one padded table (many short sorts cost less
    than one long one); very uneven runs by one sort on (run, value). When the view's
    :attr:`~engine.view.LoadView.shed_rank` is known already (:meth:`~engine.view.LoadView.known_shed_rank`:
    a backtest's later minutes), each run is first put in rank order, so that sorting it by value
    (stable) leaves every run of ties in rank order at once; else the ties are found and ranked after."""
    n, runs = len(idx), len(counts)
    if n <= 1:
        return idx
    neg = -values[idx]
    width = int(counts.max())
    grp = np.repeat(np.arange(runs), counts)
    rank = view.known_shed_rank()
    if runs * width <= 4 * n:
        first = np.repeat(np.cumsum(counts) - counts, counts)  # each bundle's run start
        at = (grp, np.arange(n) - first)
        live = counts[:, None]
        table = np.full((runs, width), np.inf)
        table[at] = neg
        if rank is not None:  # rows in rank order (ranks differ: any sort), the padding last, then by value
            ranks = np.full((runs, width), np.iinfo(np.int64).max)
            ranks[at] = rank[idx]
            by_rank = np.argsort(ranks, axis=1)
            pos = np.take_along_axis(by_rank, np.argsort(np.take_along_axis(table, by_rank, axis=1), axis=1,
                                                         kind="stable"), axis=1)
            return idx[first + pos[pos < live]]  # (a NaN sorts after the padding: left out by place, not value)
        pos = np.argsort(table, axis=1, kind="stable")  # stable: equal values keep their order in ``idx``
        order = first + pos[pos < live]  # the padding left out, row after row
    elif rank is not None:
        return idx[np.lexsort((rank[idx], neg, grp))]
    else:
        order = np.lexsort((neg, grp))
    return _ties_in_map_order(view, idx[order], neg[order], grp)


def _ties_in_map_order(view: LoadView, out: np.ndarray, s: np.ndarray, g) -> np.ndarray:
    """``out`` (sorted by ``g`` then by the negated values ``s``) with each run of equal values (in one
    group) put in ``HashMap`` order; NaNs sort last and tie with each other."""
    tie = s[1:] == s[:-1]
    nan = np.isnan(s)
    if nan.any():
        tie |= nan[1:] & nan[:-1]
    if g is not None:
        tie &= g[1:] == g[:-1]
    if not tie.any():
        return out
    n = len(out)
    tied = np.zeros(n, dtype=bool)
    tied[1:] = tie
    tied[:-1] |= tie
    # only the tied bundles move, each within its run of equal values: those are sorted alone, by (run,
    # HashMap keys, index), and written back to the run's places
    at = np.flatnonzero(tied)
    run = np.cumsum(~tie[at[1:] - 1]) if len(at) > 1 else np.zeros(0, dtype=np.int64)
    run = np.concatenate(([0], run))  # (a tied place after the first starts a run unless tied to the one before)
    sub = out[at]
    out = out.copy()
    out[at] = sub[np.lexsort((*view.shed_order(sub), run))]
    return out


def select_largest_first(view: LoadView, j: int, recent: np.ndarray, need: float) -> list[tuple[int, float]]:
    """OverloadShedder / ThresholdShedder selection: largest short-term throughput first until the
    marked traffic reaches ``need`` (always at least one bundle; zero-traffic bundles allowed)."""
    if view.even_shares:  # the broker's bundles all tie: their shed-rank order (LoadView.even_shares)
        idx = np.array(view.owned_in_shed_order[j], dtype=np.int64)
        idx = idx[~recent[idx]]
    else:
        idx = sort_desc(view, candidate_bundles(view, j, recent), view.short_throughput)
    out = []
    marked = 0.0
    for k in idx.tolist():
        if marked < need or not out:
            t = float(view.short_throughput[k])
            out.append((k, t))
            marked += t
        else:
            break
    return out


def finish_result(res: SheddingResult, nothing_reason: str, *, success_code: str = OVERLOADED,
                  skip_code: str = BALANCED) -> None:
    """Set label, reason code and reason of a result once the strategy is done: ``success_code`` when
    something was selected, else ``skip_code`` (unless the strategy set a code already)."""
    if res.selected:
        res.label = SUCCESS
        res.reason_code = success_code
        n = len(set(column_of(res.selected, "broker")))
        res.reason = f"{len(res.selected)} bundle(s) from {n} broker(s)"
        return
    res.label = SKIP
    res.reason_code = res.reason_code or skip_code
    if not res.reason:
        over = [v for v in res.verdicts if v.status in ("over", "skipped") and v.reason]
        res.reason = "; ".join(v.reason for v in over) if over else nothing_reason
