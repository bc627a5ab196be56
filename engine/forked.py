"""Two halves of one computation at once: one in a child process forked for it, one here.

The child shares everything this process holds at the fork (nothing is copied: a big input read here is
read there as it is), computes its half, and hands the result back pickled through an anonymous
in-memory file; then it ends. Meant for work that builds many short-lived Python objects (decoding a big
document), which one interpreter cannot spread over two cores.

The child does only what its function does (no lock another thread held at the fork is taken: decoding,
numpy, pickling and writes), and leaves with ``os._exit``. Linux only (``fork`` and ``memfd_create``);
elsewhere, and whenever the child fails, ends without an answer or takes longer than its time, the caller
gets ``None`` and computes the whole itself.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import warnings
from typing import Callable

__all__ = ["CAN_FORK", "in_two_processes"]

CAN_FORK = sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "memfd_create")


def in_two_processes(child: Callable[[], object], here: Callable[[], object], timeout: float):
    """``(here(), child())``, ``child()`` computed in a forked process while ``here()`` runs in this one;
    ``None`` when that cannot be done (not Linux), or the child raised, died or took longer than
    ``timeout`` seconds after ``here()`` returned. An exception of ``here()`` propagates (the child is
    ended first). ``child()``'s result must pickle."""
    if not CAN_FORK:
        return None
    import mmap

    try:
        fd = os.memfd_create("shedlab-half", os.MFD_CLOEXEC)
    except OSError:
        return None
    r = w = -1
    pid = 0
    try:
        r, w = os.pipe()
        with warnings.catch_warnings():  # (3.12+ warns on fork in a threaded process: the child only computes)
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            _child(child, fd, r, w)  # never returns
        os.close(w)
        w = -1
        mine = here()
        ready, _, _ = select.select([r], [], [], timeout)
        if not ready or os.read(r, 1) != b"K":
            return None
        with mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_READ) as m:
            theirs = pickle.loads(m)
        return mine, theirs
    finally:
        for x in (r, w, fd):
            if x >= 0:
                os.close(x)
        if pid > 0:
            _reap(pid)


def _child(child: Callable[[], object], fd: int, r: int, w: int) -> None:
    status = b"E"
    try:
        os.close(r)
        data = memoryview(pickle.dumps(child(), protocol=pickle.HIGHEST_PROTOCOL))
        while len(data):
            data = data[os.write(fd, data):]
        status = b"K"
    except BaseException:  # noqa: BLE001  (any failure: the caller computes the whole itself)
        pass
    finally:
        try:
            os.write(w, status)
        finally:
            os._exit(0)


def _reap(pid: int) -> None:
    """Wait for the child ``pid``, ended first if it is still running."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except ChildProcessError:
        pass
