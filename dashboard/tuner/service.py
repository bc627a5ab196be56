"""The Tuner's one service call per user action: snapshot → config → engine, in one place.

Every callback of the page (a slider release, "Run N cycles", "Why not?", the exports) used to
repeat the same sequence — fetch the snapshot, build the config from the state, run the engine.
Each is one call here; the callbacks parse their inputs, call one function and hand the result to
the pure figure builders.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from engine.config import LoadBalancerConfig
from engine.releases import VersionReading, broker_versions, version_from_reports
from engine.results import column_of

from .. import sources
from ..memo import Memo
from ..sources import Snapshot
from .analysis import Analysis, analyze, revision, run_cycles
from .state import TunerState, build_config
from .transfer import hit_counts, is_transfer, start_hit_count
from .whynot import WhyNot, explain, target_kind

__all__ = ["Loaded", "Tuned", "CyclesRun", "load", "tune", "cycles", "why_not", "revisions", "token", "PLAN_ROWS",
           "MAX_CYCLES"]

#: rows of the unload plan the page shows (the report lists every one)
PLAN_ROWS = 12
#: "Run N cycles" runs at most this many
MAX_CYCLES = 200


@dataclass(frozen=True)
class Loaded:
    """A state's snapshot and engine config (``errors``: one line per key or value dropped)."""

    state: TunerState
    snap: Snapshot
    config: LoadBalancerConfig
    errors: tuple = ()


@dataclass(frozen=True)
class Tuned(Loaded):
    """:class:`Loaded` plus one shedding cycle on it (:class:`~dashboard.tuner.analysis.Analysis`)."""

    analysis: Analysis = None


@dataclass(frozen=True)
class CyclesRun:
    """"Run N cycles": the cycles, the hit count each compared (TransferShedder, else None) and the
    revision of the settings they ran with."""

    cycles: list
    config: LoadBalancerConfig
    rev: str
    hits: list | None = field(default=None)


def load(state: TunerState) -> Loaded:
    """The snapshot and the config of ``state`` (raises :class:`~engine.errors.ShedlabError` for an
    unknown or expired source)."""
    snap = sources.get_snapshot(state.src, state.step)
    versions, reading = _versions(snap)
    cfg, errors = build_config(state, versions, reading)
    return Loaded(state, snap, cfg, tuple(errors))


_versions_memo = Memo(8)  # the brokers' reported versions of the last snapshots


def _versions(snap: Snapshot) -> tuple[dict, VersionReading]:
    """The brokers' reported versions of ``snap`` and the release read from them, read once per snapshot
    (10,000 reports: ~30 ms a release). Keyed as the analyses are; a source id names its content, so even
    a new object under the same key reports the same versions. The snapshot itself is not held."""
    key = (snap.id, snap.step, id(snap.ld))
    got = _versions_memo.get(key)
    if got is None:
        versions = broker_versions(snap.ld)
        got = (versions, version_from_reports(versions))
        _versions_memo.put(key, got)
    return dict(got[0]), got[1]


def tune(state: TunerState) -> Tuned:
    """One shedding cycle for ``state`` (memoised per snapshot, config and seed)."""
    got = load(state)
    return Tuned(got.state, got.snap, got.config, got.errors, analyze(got.snap, got.config, state.seed))


def cycles(state: TunerState, n) -> CyclesRun:
    """``n`` (1 … :data:`MAX_CYCLES`; 10 when not given) shedding cycles on the state's unchanged snapshot."""
    got = load(state)
    n = max(1, min(MAX_CYCLES, int(n or 10)))
    run = run_cycles(got.snap, got.config, state.seed, n)
    hits = None
    if any(is_transfer(c.shedding) for c in run):  # the hit count building up
        hits = hit_counts(run, start_hit_count(got.snap.ld))
    return CyclesRun(run, got.config, revision(got.snap, got.config, state.seed), hits)


def why_not(state: TunerState, target: str, *, budget_s: float = 2.5) -> WhyNot | None:
    """"Why not?" for a broker or a bundle; None when the snapshot has no such target."""
    a = tune(state).analysis
    if target_kind(a.view, target) is None:
        return None
    return explain(a, target, budget_s=budget_s)


def token(*parts) -> str:
    """A short content token of ``parts`` (what a part of the page shows)."""
    return hashlib.blake2s(repr(parts).encode(), digest_size=6).hexdigest()


#: what the decided moves' token reads of each processed unload
_DECIDED = attrgetter("broker", "bundle", "destination", "skipped")


def _rows_token(key: str, rows) -> str:
    """:func:`token` of many rows of four texts (or ``None``): each field's ``repr`` (which delimits
    itself), without the list's and tuples' ``repr`` — ~25% less at 20,000 processed unloads."""
    text = ",".join([f"{b!r}{k!r}{d!r}{s!r}" for b, k, d, s in rows])
    return hashlib.blake2s(f"{key!r}{text}".encode(), digest_size=6).hexdigest()


def _arrays_token(key: str, arrays: tuple, rest) -> str:
    """:func:`token` of index arrays (their bytes) and ``rest``."""
    h = hashlib.blake2s(f"{key!r}{rest!r}".encode(), digest_size=6)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(b"|")
    return h.hexdigest()


def revisions(a: Analysis) -> dict:
    """What each part of the page shows for analysis ``a``, as short tokens: a part whose token the
    page already shows is neither rebuilt nor re-sent.

    ``snapshot`` names the snapshot (a new one redraws everything); ``scores``/``pairs`` follow the
    config; the placement, before/after and topic figures and the plan table follow only what they
    draw (the decided moves, the first placement's candidates, the unloaded bundles, the plan's first
    :data:`PLAN_ROWS` rows and its length).
    """
    snap = a.snap
    key = f"{snap.id}|{snap.step}"
    src, k, dst, issued = a.cycle.processed_index(a.view)
    p, sk = a.cycle.processed, a.cycle.skipped
    if len(k) and (k.min() < 0 or src.min() < 0 or any(p[i].destination for i in np.flatnonzero(dst < 0).tolist())):
        decided = _rows_token(key, map(_DECIDED, p))  # (a name the view does not have)
    else:  # the same moves by the view's indices, with the texts of the skipped ones
        decided = _arrays_token(key, (src, k, dst, issued),
                                list(zip(column_of(sk, "bundle"), column_of(sk, "skipped"))))
    dec = a.first_placement
    return {"snapshot": key, "scores": a.rev, "pairs": a.rev,
            # what the placement figure draws (the full JSON lists every filter's candidates: 10 ms at 1,000)
            "placement": token(decided, (dec.to_json(candidates=False), dec.scores, dec.best) if dec is not None
                               else None),
            "before_after": decided, "topics": _arrays_token(key, (k[issued],), ()),
            # what the plan table shows: its first rows and the count (hashing all ~1,400 rows cost 10 ms)
            "plan": token(a.plan[:PLAN_ROWS], len(a.plan), a.cycle.reason if is_transfer(a.result) else "")}
