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
