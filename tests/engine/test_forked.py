"""engine.forked: one half computed in a forked child while the other runs here."""
from __future__ import annotations

import os

import numpy as np
import pytest

from engine.forked import CAN_FORK, in_two_processes

pytestmark = pytest.mark.skipif(not CAN_FORK, reason="fork and memfd_create are Linux's")


def test_both_halves_come_back_and_the_child_reads_what_this_process_held():
    big = np.arange(2_000_000, dtype=np.int64)  # held here before the fork: the child reads it, nothing is sent
    got = in_two_processes(lambda: (os.getpid(), int(big.sum()), big[::2].copy()), lambda: os.getpid(), 30.0)
    assert got is not None
    here_pid, (child_pid, total, half) = got
    assert here_pid == os.getpid() != child_pid
    assert total == int(big.sum()) and np.array_equal(half, big[::2])


def test_a_failing_child_gives_no_answer_and_a_failing_half_here_raises():
    def boom():
        raise ValueError("child")

    assert in_two_processes(boom, lambda: 1, 30.0) is None
    assert in_two_processes(lambda: os._exit(3), lambda: 1, 30.0) is None  # a child that dies
    with pytest.raises(KeyError):
        in_two_processes(lambda: 1, lambda: {}["x"], 30.0)
    assert in_two_processes(lambda: 2, lambda: 1, 30.0) == (1, 2)  # and the next call works


def test_arrays_come_back_equal_aligned_and_writable_beside_the_rest():
    """The child's arrays travel beside the pickle (read in place from the shared file): every dtype and
    shape comes back equal and writable, a non-contiguous one too, with the other objects around them."""
    rng = np.random.default_rng(5)
    arrays = {"f": rng.random((1000, 5)), "i": np.arange(7, dtype=np.int32), "b": rng.random(999) > 0.5,
              "u": np.array(["a", "bé"]), "empty": np.zeros((0, 3)), "strided": np.arange(40.0)[::3]}
    got = in_two_processes(lambda: ({"names": ["x/y/0x0_0x1", "é"], "arrays": arrays}, 5), lambda: None, 30.0)
    assert got is not None
    back, n = got[1]
    assert n == 5 and back["names"] == ["x/y/0x0_0x1", "é"]
    for k, a in arrays.items():
        b = back["arrays"][k]
        assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b), k
        assert b.flags.writeable, k
        if b.size and b.flags.c_contiguous:
            assert b.ctypes.data % b.dtype.alignment == 0, k
    back["arrays"]["f"][0, 0] = -1.0  # written here only (the map is private)
    assert back["arrays"]["f"][0, 0] == -1.0 and arrays["f"][0, 0] != -1.0


def test_a_second_result_comes_later_from_the_same_child():
    """With ``then`` the child hands its first result back at once, goes on from its own copy of it,
    and the second result arrives when asked for; a failing or dying second stage gives (False, None)
    after the first was used, and ``close`` ends a child nobody waits for."""
    import time

    big = np.arange(1_000_000, dtype=np.int64)
    got = in_two_processes(lambda: big[:10].copy(), lambda: "here", 30.0,
                           then=lambda first: (os.getpid(), first * 2, big[::1000].copy()))
    assert got is not None
    mine, first, later = got
    assert mine == "here" and np.array_equal(first, big[:10])
    first[0] = 99  # this process's copy: the child's is its own
    ok, (pid, doubled, sampled) = later()
    assert ok and pid != os.getpid()
    assert np.array_equal(doubled, big[:10] * 2) and np.array_equal(sampled, big[::1000])
    assert later() == (False, None)  # asked once

    def boom(_):
        raise ValueError("then")

    for bad in (boom, lambda _: os._exit(4)):
        got = in_two_processes(lambda: 1, lambda: 2, 30.0, then=bad)
        assert got[:2] == (2, 1) and got[2]() == (False, None)

    slow = in_two_processes(lambda: 1, lambda: 2, 30.0, then=lambda _: time.sleep(60))
    slow[2].close()  # not waited for: ended at once (not after its minute)
    assert slow[2]() == (False, None)
    assert in_two_processes(lambda: 3, lambda: 4, 30.0) == (4, 3)  # and the next call works
