"""Run the engine for the Tuner: one shedding cycle (or N) on a snapshot, plus what the page shows.

:func:`analyze` is the one call the Tuner's callbacks, the report, the image export and "why not?"
share. It builds the load manager on the snapshot's cached columnar view (so only the strategy is
recomputed when a slider moves), runs ``doLoadShedding`` once and derives the per-broker
before/after traffic, max/min ratios, broker states and the unload plan. Results are memoised per
(snapshot, config, seed) in the process.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from engine.config import LoadBalancerConfig, to_broker_conf
from engine.javacompat import java_double_math
from engine.load_manager import ModularLoadManager
from engine.managers import make_manager, manager_kind
from engine.results import Cycle, PlacementDecision, column_of
from engine.strategies.spec import MODULAR

from engine.strategies.registry import explains
from ..sources import Snapshot

__all__ = ["Analysis", "analyze", "build_manager", "run_cycles", "broker_status", "revision", "STATUS_ORDER"]

#: broker states, the order they are listed in legends (colours: dashboard.figures.theme.STATUS)
STATUS_ORDER = ("over", "skipped", "pending", "under", "destination", "ok")


def build_manager(snap: Snapshot, cfg: LoadBalancerConfig, seed: int = 0):
    """A fresh load manager on ``snap`` (its strategy memory seeded from the snapshot).

    The modular manager reuses the snapshot's cached view (``view=``), so a slider move only
    re-runs the strategy; ``tests/dashboard/test_analysis.py`` checks the decisions equal
    ``ModularLoadManager(load_data, ...)``. Any other manager (the extensible one: its strategy's spec
    says ``load_manager``, :func:`engine.managers.manager_kind`) is built by
    :func:`engine.managers.make_manager` from the LoadData. An Extensible Load Manager
    upload (``snap.ld.elm``, :func:`engine.extensible.readers.display_load_data`) always runs the ELM on
    its own data — TransferShedder (a modular shedding strategy falls back to it, as in Pulsar) and the
    ELM's placement — never on the modular-shaped view the page draws.
    """
    ld = snap.ld
    elm = getattr(ld, "elm", None)
    if elm is not None:
        return make_manager(elm, cfg, seed=seed)
    if manager_kind(cfg, ld) != MODULAR:
        return make_manager(ld, cfg, seed=seed)
    return ModularLoadManager(ld, cfg, seed=seed, view=snap.view)


def revision(snap: Snapshot, cfg: LoadBalancerConfig, seed: int) -> str:
    """A short token naming what a figure shows (set as ``layout.meta.rev``; the bench waits on it)."""
    h = hashlib.blake2s(digest_size=6)
    h.update(f"{snap.id}|{snap.step}|{seed}|{cfg.shedding_strategy}|{cfg.placement_strategy}|".encode())
    h.update(to_broker_conf(cfg).encode())
    return h.hexdigest()


@dataclass
class Analysis:
    """One shedding cycle on one snapshot, with everything the Tuner draws."""

    snap: Snapshot
    config: LoadBalancerConfig
    seed: int
    cycle: Cycle
    shedding: str
    placement: str
    rev: str
    before_rate: np.ndarray
    before_thr: np.ndarray
    after_rate: np.ndarray
    after_thr: np.ndarray
    status: dict  # broker -> state (STATUS_ORDER)
    plan: Sequence  # one dict per processed unload (PlanRows: built when read)
    ratios: dict  # {"msg rate": (before, after), "throughput": (before, after)}; None when a min is 0
    notes: list = field(default_factory=list)
    transfer_stats: object = None  # the LoadStats of a strategy explaining its decisions (TransferShedder: std, hits)

    @property
    def view(self):
        return self.snap.view

    @property
    def result(self):
        return self.cycle.shedding

    @property
    def unloaded_bundles(self) -> list:
        return [u.bundle for u in self.cycle.unloads]

    @property
    def unloaded_index(self) -> np.ndarray:
        """The view's index of each issued unload's bundle, in order (-1: not a bundle of the view)."""
        _, k, _, issued = self.cycle.processed_index(self.view)
        return k[issued]

    @property
    def first_placement(self) -> PlacementDecision | None:
        """The placement of the first issued unload, else of the first processed one that has one."""
        for units in (self.cycle.unloads, self.cycle.processed):
            for dec in column_of(units, "placement"):
                if dec is not None:
                    return dec
        return None

    def headline(self) -> str:
        """One line: what the leader does this cycle (with the reason codes of a strategy whose results
        carry its decisions, as TransferShedder's)."""
        text = self._headline()
        res = self.result
        if res is not None and res.decisions and "decisions" in explains(res.strategy):
            codes = []
            for d in res.decisions:
                if d.reason not in codes:
                    codes.append(d.reason)
            text += " · " + " / ".join(codes)
        return text

    def _headline(self) -> str:
        c = self.cycle
        if c.unloads:
            srcs = sorted(set(column_of(c.unloads, "broker")))
            dsts = sorted({d for d in column_of(c.unloads, "destination") if d})
            n = len(c.unloads)

            def who(xs):
                return ", ".join(xs) if len(xs) <= 2 else f"{len(xs)} brokers"
            return f"Unload {n} bundle{'s' if n != 1 else ''} from {who(srcs)} to {who(dsts)}"
        return "Nothing moves"


class PlanRows(Sequence):
    """The unload plan, one dict per processed unload (source, destination, bundle, traffic, its reason,
    the placement's reason and strategy, whether it drew at random, why it was skipped; with
    TransferShedder's decisions, ``why``, also their reason code, swap and numbers), each row built when
    first read: the page shows the first rows and the count, and at 10,000 brokers a low threshold
    processes ~20,000 unloads whose reasons would otherwise all be written on every slider release.
    The report reads every row."""

    __slots__ = ("_units", "_why", "_rows")

    def __init__(self, processed: list, why: dict | None = None):
        self._units, self._why = processed, why
        self._rows: list = [None] * len(processed)

    def __len__(self) -> int:
        return len(self._units)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self._units)))]
        row = self._rows[i]
        if row is None:
            row = self._rows[i] = _plan_row(self._units[i], self._why)
        return row

    def __eq__(self, other):
        if isinstance(other, (PlanRows, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"PlanRows({list(self)!r})"


def _plan_row(u, why: dict | None) -> dict:
    dec = u.placement
    row = {
        "source": u.broker, "destination": u.destination or "", "bundle": u.bundle,
        "msg_rate": float(u.msg_rate), "throughput": float(u.throughput),
        "reason": u.reason, "placement": dec.reason if dec is not None else "",
        "placement_strategy": dec.strategy if dec is not None else "",
        "random": bool(dec.random) if dec is not None else False,
        "skipped": u.skipped or "",
    }
    if why is not None:  # the extensible decision: reason code (Overloaded / Underloaded), swap, the numbers
        d = why.get((u.broker, u.bundle))
        row.update(decision=d.reason if d else u.reason, swap=bool(d.swap) if d else False,
                   detail=d.detail if d else "")
    return row


def broker_status(cycle: Cycle, view=None) -> dict:
    """Each broker's state this cycle, from the verdicts and the issued unloads: a broker an unload leaves is
    "over"; a destination is "destination" unless it is "over" already (by its verdict or as the broker an
    earlier unload left) or an unload leaves it later. With the ``view``, the unloads' brokers come from the
    cycle's indices (:meth:`~engine.results.Cycle.processed_index`): the same states, without a pass over
    every unload."""
    out = {}
    sh = cycle.shedding
    if sh is not None:
        out = dict.fromkeys(sh.scores, "ok")
        vs = sh.verdicts
        for b, st in zip(column_of(vs, "broker"), column_of(vs, "status")):
            out[b] = st if st in STATUS_ORDER else "ok"
    if view is not None and cycle.unloads:
        src, _, dst, issued = cycle.processed_index(view)
        src, dst = src[issued], dst[issued]
        if len(src) == len(cycle.unloads) and (src >= 0).all() and (dst >= 0).all():
            names, left = view.brokers, set(np.unique(src).tolist())
            for j in np.unique(dst).tolist():
                if j not in left and out.get(names[j]) != "over":
                    out[names[j]] = "destination"
            for j in left:
                out[names[j]] = "over"
            return out
    for u in cycle.unloads:
        if u.destination and out.get(u.destination) != "over":
            out[u.destination] = "destination"
        out[u.broker] = "over"
    return out


def _ratio(a: np.ndarray):
    if len(a) == 0:
        return None
    lo, hi = float(np.min(a)), float(np.max(a))
    if lo <= 1e-9:
        return None
    return hi / lo


def _after_moves(idx: dict, unloads: list, br: np.ndarray, bt: np.ndarray, ends=None):
    """Each broker's message rate and throughput after the unloads: each unload's rate and throughput
    taken from its broker and added to its destination (when known), one unload after the other — as one
    ``np.add.at`` over the interleaved operations, which applies them in that order (the same sums, bit
    for bit, as a loop; 20,000 unloads in ~5 ms instead of ~20). ``ends``: the unloads' broker and
    destination indices (-1: none) when known, else looked up in ``idx``."""
    n = len(unloads)
    if not n:
        return br.copy(), bt.copy()
    ks = np.empty(2 * n, dtype=np.int64)
    if ends is not None:
        ks[0::2], ks[1::2] = ends
    else:
        ks[0::2] = np.fromiter(map(idx.get, column_of(unloads, "broker"), repeat(-1)), dtype=np.int64, count=n)
        ks[1::2] = np.fromiter((idx.get(d, -1) if d else -1 for d in column_of(unloads, "destination")),
                               dtype=np.int64, count=n)
    rate, thr = np.empty(2 * n), np.empty(2 * n)
    rate[1::2] = column_of(unloads, "msg_rate")
    thr[1::2] = column_of(unloads, "throughput")
    np.negative(rate[1::2], out=rate[0::2])  # a - x is a + (-x), exactly
    np.negative(thr[1::2], out=thr[0::2])
    keep = ks >= 0
    ks, rate, thr = ks[keep], rate[keep], thr[keep]
    ar, at = br.copy(), bt.copy()
    np.add.at(ar, ks, rate)
    np.add.at(at, ks, thr)
    return ar, at


@java_double_math  # report values up to Double.MAX_VALUE: sums may be Infinity, as in Pulsar
def _derive(snap: Snapshot, cfg, seed, cycle: Cycle, lm) -> Analysis:
    v = snap.view
    br, bt = v.msg_rate.astype(float), v.msg_throughput.astype(float)
    src, _, dst, issued = cycle.processed_index(v)
    ar, at = _after_moves(v.broker_index, cycle.unloads, br, bt, (src[issued], dst[issued]))
    np.maximum(ar, 0, out=ar)
    np.maximum(at, 0, out=at)
    sh = cycle.shedding
    ts = sh is not None and "decisions" in explains(sh.strategy)  # each unload's own decision (TransferShedder)
    plan = PlanRows(cycle.processed, {(d.broker, d.bundle): d for d in sh.decisions} if ts else None)
    ratios = {"msg rate": (_ratio(br), _ratio(ar)), "throughput": (_ratio(bt), _ratio(at))}
    shed = getattr(lm.shedding, "name", cfg.shedding_strategy)
    place = getattr(lm.placement, "name", cfg.placement_strategy)
    notes = list(snap.ld.warnings[:3]) + [n for n in getattr(lm, "notes", [])[:3] if isinstance(n, str)]
    stats = getattr(lm.shedding, "stats", None) if ts else None
    return Analysis(snap, cfg, seed, cycle, shed, place, revision(snap, cfg, seed), br, bt, ar, at,
                    broker_status(cycle, v), plan, ratios, notes, stats)


_lock = threading.Lock()
_memo: "OrderedDict[tuple, Analysis]" = OrderedDict()
_MEMO_MAX = 32


def analyze(snap: Snapshot, cfg: LoadBalancerConfig, seed: int = 0) -> Analysis:
    """One ``doLoadShedding`` on ``snap`` with ``cfg`` (memoised per snapshot, config and seed)."""
    key = (snap.id, snap.step, id(snap.ld), cfg, int(seed))
    with _lock:
        got = _memo.get(key)
        if got is not None:
            _memo.move_to_end(key)
            return got
    lm = build_manager(snap, cfg, seed)
    cycle = lm.do_load_shedding()
    got = _derive(snap, cfg, seed, cycle, lm)
    with _lock:
        _memo[key] = got
        while len(_memo) > _MEMO_MAX:
            _memo.popitem(last=False)
    _prepare_later(lm.shedding, snap.view, cfg)
    return got


def _prepare_later(strategy, view, cfg: LoadBalancerConfig) -> None:
    """Start the strategy's preparation of ``view`` for the next rounds (``prepare``: AvgShedder sorts the
    bundles of every broker that can be hot) in a background thread, once per view and weights: the
    user's next slider release then finds that work done. It changes no decision."""
    prepare = getattr(strategy, "prepare", None)
    if prepare is None or view.nk < _PREPARE_MIN_BUNDLES:
        return
    key = (type(strategy).__name__, tuple(float(x) for x in cfg.weights))
    with _lock:
        done = view.__dict__.setdefault("_prepared", set())  # (kept with the view it is about)
        if key in done:
            return
        done.add(key)
    threading.Thread(target=prepare, args=(view, cfg), name="shedlab-prepare", daemon=True).start()


#: below this many bundles a round sorts its hot brokers' bundles in a few milliseconds: nothing to prepare
_PREPARE_MIN_BUNDLES = 100_000


def run_cycles(snap: Snapshot, cfg: LoadBalancerConfig, seed: int, n: int) -> list[Cycle]:
    """``n`` shedding cycles on the unchanged snapshot, one shedding interval apart (hit counts and
    history build up; recently unloaded bundles are skipped)."""
    lm = build_manager(snap, cfg, seed)
    return lm.run_cycles(max(1, int(n)))
