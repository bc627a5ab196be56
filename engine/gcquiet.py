"""Cyclic garbage collection kept away from the work that builds many long-lived objects.

A burst of allocations (a parsed document, a view's per-broker records) triggers collection passes
over every object the process holds; when the burst makes no reference cycles, waiting until it is
done changes nothing but the number of passes (:func:`no_gc`).

Results that stay in memory for later requests (a slider release's analysis, kept for the next move
back) are worse: every one of them is traversed again by each older-generation pass. At 10,000
brokers an analysis is ~10^5 records; the tenth release after a few others paid a 0.5-1 s pass over
all the kept ones. :func:`kept_results` moves what a block built out of the collector's reach (CPython's
permanent generation, :func:`gc.freeze`): frozen objects are still freed by reference counting when
nothing holds them, so results without reference cycles cost nothing to keep or to drop. Cyclic
garbage frozen by mistake would stay; the block collects what is not frozen yet before it starts
(cheap: only the objects made since the last freeze), and a full collection over everything
(:func:`reclaim`) runs when the frozen count outgrows twice what the last one, or the last load, left
plus :data:`RECLAIM_FLOOR` objects: in the background once no block has run for :data:`IDLE_S`, or at
once past four times.

The frozen count is not measured after every block: counting the permanent generation walks all of it
(~50 ms once 32 analyses of a 10,000-broker cluster are kept, on every release). Each block adds what it
freezes (the young generations' sizes, proportional to what it built) to an estimate that can only be
too high, since objects freed from the permanent generation are not subtracted; the exact count is taken
only when the estimate passes the threshold, and becomes the new estimate.
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager

__all__ = ["no_gc", "kept_results", "freeze_all", "reclaim", "RECLAIM_FLOOR"]

#: frozen objects allowed beyond twice the count a full collection (or a load) left, before the next one
RECLAIM_FLOOR = 2_000_000
#: seconds without a :func:`kept_results` block before the full collection runs in the background. The
#: collection holds the interpreter (1.3 s over the ~2 M objects 32 kept analyses of a 10,000-broker cluster
#: make), so a release that comes during it waits: it waits for a pause in which the user reads, not for
#: the second between two slider moves
IDLE_S = 5.0

_lock = threading.RLock()  # reentrant: a finaliser run by a collection may enter a block
#: base: the frozen count the last load or full collection left; est: at least the frozen count now
_st = {"base": 0, "est": 0, "active": 0, "last": 0.0, "waiting": False}


@contextmanager
def no_gc():
    """Collection off for the ``with`` block (nested blocks leave it to the outermost)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def kept_results():
    """Collection off for the block; what it built (and every other live object) frozen after it.

    For work whose results are kept and whose garbage has no reference cycles (a test checks the
    Tuner's releases). Before the block, the objects not frozen yet are collected, so garbage other
    code left behind is not kept with the results.
    """
    with _lock:
        _st["active"] += 1
    try:
        if gc.isenabled():
            gc.collect()
        with no_gc():
            yield
            built = _young_count()
            gc.freeze()
            with _lock:
                _st["est"] += built
    finally:
        with _lock:
            _st["active"] -= 1
            _st["last"] = time.monotonic()
    _reclaim_if_grown()


def freeze_all(collect: bool = True) -> None:
    """Collect (unless ``collect`` is false), then freeze every live object: after loading a big input,
    whose objects stay. The count frozen now is the base the next full collection waits on."""
    if collect:
        gc.collect()
    gc.freeze()
    with _lock:
        _st["est"] = n = gc.get_freeze_count()
        _st["base"] = max(_st["base"], n)


def reclaim() -> int:
    """A full collection over everything, the frozen objects included; then all is frozen again.
    Returns the frozen count left."""
    with _lock:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _st["base"] = _st["est"] = n = gc.get_freeze_count()
    return n


def _young_count() -> int:
    """How many tracked objects are not frozen yet (what a :func:`gc.freeze` now would add)."""
    return sum(len(gc.get_objects(g)) for g in range(3))


def _reclaim_if_grown() -> None:
    """Past twice the base plus the floor, a full collection when the process is idle; past four
    times, at once. The count is taken only once the estimate passes twice the base plus the floor."""
    base = _st["base"]
    if _st["est"] <= 2 * base + RECLAIM_FLOOR:
        return
    n = gc.get_freeze_count()
    with _lock:
        _st["est"] = n
    if n > 4 * base + 2 * RECLAIM_FLOOR:
        reclaim()
    elif n > 2 * base + RECLAIM_FLOOR:
        with _lock:
            if _st["waiting"]:
                return
            _st["waiting"] = True
        threading.Thread(target=_idle_reclaim, name="gc-reclaim", daemon=True).start()


def _idle_reclaim() -> None:
    try:
        while True:
            time.sleep(IDLE_S)
            with _lock:
                idle = _st["active"] == 0 and time.monotonic() - _st["last"] >= IDLE_S
            if idle:
                reclaim()
                return
    finally:
        with _lock:
            _st["waiting"] = False
