"""Two halves of one computation at once: one in a child process forked for it, one here.

The child shares everything this process holds at the fork (nothing is copied: a big input read here is
read there as it is), computes its half, and hands the result back pickled through an anonymous
in-memory file, the data of its numpy arrays beside the pickle (protocol 5's out-of-band buffers): this
process maps the file, and the arrays it unpickles use that memory as it is. The child may go on to a
second stage from its result, handed back when asked for; then it ends. Meant for work that builds many
short-lived Python objects (decoding a big document), which one interpreter cannot spread over two cores.

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
import struct
import sys
import time
import warnings
from typing import Callable

__all__ = ["CAN_FORK", "in_two_processes", "in_child"]

CAN_FORK = sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(os, "memfd_create")


def in_two_processes(child: Callable[[], object], here: Callable[[], object], timeout: float,
                     then: Callable[[object], object] | None = None):
    """``(here(), child())``, ``child()`` computed in a forked process while ``here()`` runs in this one;
    ``None`` when that cannot be done (not Linux), or the child raised, died or took longer than
    ``timeout`` seconds after ``here()`` returned. An exception of ``here()`` propagates (the child is
    ended first). ``child()``'s result must pickle.

    With ``then``, the child goes on after handing ``child()``'s result back: it computes
    ``then(result)`` (its own copy of the result) while this process uses the first result, and the answer
    is ``(here(), child(), later)``: ``later()`` waits for that second result (at most ``timeout`` seconds)
    and returns ``(True, value)``, or ``(False, None)`` when the child failed or was late. Call ``later()``
    or ``later.close()`` (which ends the child) exactly once, also when an exception intervenes."""
    if not CAN_FORK:
        return None
    fds: list = []
    pid = 0
    later = None
    try:
        try:
            fds.append(os.memfd_create("shedlab-half", os.MFD_CLOEXEC))
            if then is not None:
                fds.append(os.memfd_create("shedlab-then", os.MFD_CLOEXEC))
            r, w = os.pipe()
            fds += [r, w]
            pid = _fork()
        except OSError:
            return None
        if pid == 0:
            _child(child, then, fds[0], fds[1] if then is not None else -1, r, w)  # never returns
        os.close(w)
        fds.remove(w)
        mine = here()
        if _status(r, timeout) != b"K":
            return None
        theirs = _read_back(fds[0])
        if then is None:
            return mine, theirs
        later = _Later(pid, r, fds[1], timeout)
        fds.remove(r)
        fds.remove(later.fd)
        return mine, theirs, later
    finally:
        for x in fds:
            os.close(x)
        if pid > 0 and later is None:
            _reap(pid)


class _Later:
    """The child's second result (:func:`in_two_processes` with ``then``)."""

    def __init__(self, pid: int, r: int, fd: int, timeout: float):
        self.pid, self.r, self.fd, self.timeout = pid, r, fd, timeout

    def __call__(self) -> tuple:
        if self.pid == 0:
            return False, None
        try:
            if _status(self.r, self.timeout) == b"L":
                return True, _read_back(self.fd)
            return False, None
        finally:
            self.close()

    def close(self) -> None:
        """End the child (if it still runs) and free what it held; the second result is then lost."""
        if self.pid:
            pid, self.pid = self.pid, 0
            os.close(self.r)
            os.close(self.fd)
            _reap(pid)

    __del__ = close


def _status(r: int, timeout: float) -> bytes:
    ready, _, _ = select.select([r], [], [], timeout)
    return os.read(r, 1) if ready else b""


def _child(child: Callable[[], object], then, fd: int, fd2: int, r: int, w: int) -> None:
    status = b"E"
    try:
        os.close(r)
        first = child()
        _hand_back(fd, first)
        status = b"K"
        if then is not None:
            os.write(w, status)
            status = b"E"
            _hand_back(fd2, then(first))
            status = b"L"
    except BaseException:  # noqa: BLE001  (any failure: the caller computes the whole itself)
        pass
    finally:
        try:
            os.write(w, status)
        finally:
            os._exit(0)


#: the hand-back's header: the pickle's length and the number of buffers, then each buffer's length
_HEAD = struct.Struct("<QQ")
_LEN = struct.Struct("<Q")
#: buffers start at multiples of this in the file (aligned for any array type)
_ALIGN = 64


def _hand_back(fd: int, result) -> None:
    """``result`` pickled into the file ``fd`` with its big buffers (numpy arrays' data) out of band: the
    header, the pickle, then each buffer at an aligned offset — written as they are, never copied into the
    pickle."""
    bufs: list = []
    stream = pickle.dumps(result, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    head = _HEAD.pack(len(stream), len(raws)) + b"".join(_LEN.pack(r.nbytes) for r in raws)
    _write_all(fd, head)
    _write_all(fd, stream)
    at = len(head) + len(stream)
    for r in raws:
        pad = -at % _ALIGN
        _write_all(fd, b"\0" * pad)
        _write_all(fd, r)
        at += pad + r.nbytes


def _write_all(fd: int, data) -> None:
    data = memoryview(data).cast("B")
    while len(data):
        data = data[os.write(fd, data):]


def _read_back(fd: int):
    """What :func:`_hand_back` wrote: the buffers are read in place from a private (copy-on-write) map of
    the file, so the arrays over them are neither copied nor read-only."""
    import mmap

    m = mmap.mmap(fd, os.fstat(fd).st_size, access=mmap.ACCESS_COPY)  # (kept open by the arrays using it)
    view = memoryview(m)
    n_stream, n_bufs = _HEAD.unpack_from(view)
    at = _HEAD.size
    lens = [_LEN.unpack_from(view, at + i * _LEN.size)[0] for i in range(n_bufs)]
    at += n_bufs * _LEN.size
    stream = view[at:at + n_stream]
    at += n_stream
    bufs = []
    for n in lens:
        at += -at % _ALIGN
        bufs.append(view[at:at + n])
        at += n
    return pickle.loads(stream, buffers=bufs)


def in_child(work: Callable[[], None], timeout: float) -> int:
    """``work()`` in a child forked for it, which then leaves with ``os._exit``; the child's exit code: 0
    when ``work()`` returned, 1 when it raised, -9 when it ran longer than ``timeout`` seconds (ended then).
    The child shares what this process holds (nothing is copied), and must take no lock another thread may
    have held at the fork. Linux only (:data:`CAN_FORK`)."""
    pid = _fork()
    if pid == 0:
        code = 1
        try:
            work()
            code = 0
        finally:
            os._exit(code)
    return _reap(pid, timeout)


def _fork() -> int:
    with warnings.catch_warnings():  # (3.12+ warns on fork in a threaded process: the child only computes)
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _reap(pid: int, timeout: float = 0.0) -> int:
    """The exit code of the child ``pid``, waited for at most ``timeout`` seconds, then ended (-9)."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            time.sleep(0.02)
    except ChildProcessError:
        return -1
