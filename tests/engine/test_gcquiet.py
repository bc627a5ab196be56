"""Collection kept away from kept results: frozen after the block, cyclic garbage still reclaimed."""
import gc
import time
import weakref

from engine import gcquiet


class _Node:
    pass


def _cycle():
    """A self-referencing object and a weak reference to it (dead once the cycle is collected)."""
    a = _Node()
    a.me = a
    return weakref.ref(a)


def test_kept_results_freezes_what_the_block_built_and_collects_garbage_left_before():
    gc.unfreeze()
    before = _cycle()  # garbage another part of the process left, not collected yet
    gc.disable()
    try:
        assert before() is not None
    finally:
        gc.enable()
    with gcquiet.kept_results():
        assert not gc.isenabled()
        assert before() is None  # collected before the block: not frozen with the results
        kept = _Node()
        inner = _cycle()
    assert gc.isenabled()
    assert not any(o is kept for o in gc.get_objects())  # frozen: later passes skip it
    r = weakref.ref(kept)
    del kept
    assert r() is None  # reference counting still frees a frozen object
    assert inner() is not None  # a cycle the block made stays while frozen ...
    gcquiet.reclaim()
    assert inner() is None  # ... until the full collection over everything


def test_grown_frozen_count_is_reclaimed_when_idle_or_at_once(monkeypatch):
    gcquiet.freeze_all(collect=False)
    n0 = gc.get_freeze_count()
    monkeypatch.setitem(gcquiet._st, "base", 0)
    monkeypatch.setattr(gcquiet, "IDLE_S", 0.05)
    # past twice the base plus the floor, not past four times: in the background, once idle
    monkeypatch.setattr(gcquiet, "RECLAIM_FLOOR", n0 * 2 // 3)
    with gcquiet.kept_results():
        left = _cycle()
    assert left() is not None and gcquiet._st["waiting"]
    end = time.monotonic() + 10
    while gcquiet._st["waiting"] and time.monotonic() < end:  # the background collection, done
        time.sleep(0.02)
    assert left() is None and gcquiet._st["base"] > 0
    # past four times the base plus twice the floor: at once, before the block returns
    monkeypatch.setitem(gcquiet._st, "base", 0)
    monkeypatch.setattr(gcquiet, "RECLAIM_FLOOR", 10)
    with gcquiet.kept_results():
        now = _cycle()
    assert now() is None
    # under the floor: nothing
    monkeypatch.setattr(gcquiet, "RECLAIM_FLOOR", 10 ** 9)
    with gcquiet.kept_results():
        stays = _cycle()
    assert stays() is not None
    gcquiet.reclaim()
    assert stays() is None


def test_the_frozen_generation_is_counted_only_once_the_estimate_passes_the_threshold(monkeypatch):
    """Counting the permanent generation walks all of it: a release that leaves the estimate under the
    threshold must not do it; past the threshold the exact count replaces the estimate."""
    calls = []
    real = gc.get_freeze_count

    def counting():
        calls.append(1)
        return real()

    gcquiet.freeze_all(collect=False)
    n0 = gc.get_freeze_count()
    monkeypatch.setattr(gcquiet.gc, "get_freeze_count", counting)
    monkeypatch.setattr(gcquiet, "RECLAIM_FLOOR", 10 ** 9)
    kept = []
    for _ in range(3):
        with gcquiet.kept_results():
            kept.append([_Node() for _ in range(1000)])
    assert calls == []
    assert gcquiet._st["est"] >= n0 + 3000  # what the blocks froze, added up
    # the estimate over the threshold: one exact count, which becomes the estimate
    monkeypatch.setattr(gcquiet, "RECLAIM_FLOOR", 0)
    monkeypatch.setitem(gcquiet._st, "base", 10 ** 9)  # far below 2 * base: no collection, only the count
    monkeypatch.setitem(gcquiet._st, "est", 3 * 10 ** 9)
    with gcquiet.kept_results():
        kept.append(_Node())
    assert len(calls) == 1 and abs(gcquiet._st["est"] - real()) < 100  # the count, not the estimate
