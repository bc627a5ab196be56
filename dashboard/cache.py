"""The one diskcache of the app: server-side session data, cached results, background callbacks.

The directory comes from ``SHEDLAB_CACHE_DIR`` (default ``.shedlab-cache`` in the project); every
gunicorn worker must point at the same absolute path. Nothing is opened at import time: the cache
is created lazily per process (diskcache handles are not shared across fork).

The cache stores pickles (diskcache's format, and Dash's background-callback results), so whoever can
write into the directory can make the app run code. :func:`private_dir` therefore creates every
directory the app writes (cache, results, the default history root) with mode ``0700``, tightens one
it owns that others can read, and refuses — :class:`UnsafeDirectory`, a clear start-up error — a
directory that another user owns or that group/others may write (``docs/security.md``).

Background callbacks run in processes forked by a fork server (:class:`ReapingDiskcacheManager`), never
by the web server itself: the web server has threads that use SQLite at any moment (requests, the
reaping below, results being deleted), and a process forked from it inherits whatever lock one of them
held at that instant, locked for good (the job then waits forever inside diskcache). The fork server is
a fresh single-threaded process (started once, on the first job, with ``callbacks`` imported so a job
starts at once); each job is forked from it with no lock held. Each job is joined by a small thread of
the web process, so a finished job never lingers as a zombie.

A big value can be written behind the request that made it (:func:`set_behind`): a child forked for it
(on Linux; elsewhere a thread) pickles it into its file while the request goes on (the process that made
it keeps it in memory), and a marker entry ``writing:<key>`` tells the other processes it is coming —
:func:`get_waiting` waits for it, and :func:`is_stored` counts it as stored.
"""
from __future__ import annotations

import contextlib
import logging
import os
import pickle
import stat
import threading
import time
from pathlib import Path

__all__ = ["cache_dir", "get_cache", "background_manager", "private_dir", "UnsafeDirectory",
           "ReapingDiskcacheManager", "disk_class", "set_behind", "get_waiting", "is_stored", "WRITE_BEHIND_S"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_cache = None
_cache_pid = None
_manager = None


class UnsafeDirectory(RuntimeError):
    """A cache / results directory other users could write (or do own): the app refuses to start."""


def private_dir(path) -> Path:
    """``path`` as a directory only this user can use: created ``0700`` (parents too, when missing),
    an existing one of ours with group/other read bits tightened to ``0700``; raises
    :class:`UnsafeDirectory` when it is owned by another user or writable by group/others, or is a symlink."""
    p = Path(path)
    if not p.exists():
        old = os.umask(0o077)
        try:
            p.mkdir(parents=True, exist_ok=True, mode=0o700)
        finally:
            os.umask(old)
    try:
        st = p.lstat()
    except OSError as exc:
        raise UnsafeDirectory(f"cannot use {p}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDirectory(f"{p} is a symbolic link; point SHEDLAB_CACHE_DIR at the real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{p} is not a directory")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise UnsafeDirectory(f"{p} belongs to another user (uid {st.st_uid}); the cache stores pickles, so use a "
                              "directory of the user running Shedlab (SHEDLAB_CACHE_DIR)")
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeDirectory(f"{p} is writable by other users (mode {mode:04o}); the cache stores pickles, so a "
                              f"writable cache directory lets them run code as this server: chmod 700 {p}")
    if mode & 0o077:
        os.chmod(p, 0o700)
        log.warning("%s was readable by other users (mode %04o): tightened to 0700", p, mode)
    return p


def cache_dir() -> Path:
    """The app's cache directory (created ``0700``; :class:`UnsafeDirectory` when others may write it)."""
    d = Path(os.getenv("SHEDLAB_CACHE_DIR") or Path(__file__).resolve().parent.parent / ".shedlab-cache")
    return private_dir(d)


_DISK = None


def disk_class():
    """diskcache's ``Disk`` writing a value file in one call. Its own writer walks the in-memory value
    line by line (``for chunk in BytesIO(...)``): a big snapshot's pickle holds millions of newline bytes,
    so a 500 MB upload was stored in millions of small writes (2.4 s of a 10,000-broker upload).

    A value :func:`set_behind` stores is pickled straight into its file (diskcache's own file format for a
    pickled value, read back by diskcache as any other), no copy of it in memory: by a forked child, the
    file then entered as it is (``_Prewritten``), or by the writing thread (``_Streamed``; each ~64 KB
    frame is written by a system call that lets the interpreter's other threads run)."""
    global _DISK
    if _DISK is None:
        import io

        import diskcache

        class WholeDisk(diskcache.Disk):
            def _write(self, full_path, iterator, mode, encoding=None):
                if isinstance(iterator, io.BytesIO):
                    iterator = iter((iterator.getbuffer(),))
                elif isinstance(iterator, io.StringIO):
                    iterator = iter((iterator.getvalue(),))
                return super()._write(full_path, iterator, mode, encoding)

            def store(self, value, read, key=diskcache.core.UNKNOWN):
                if type(value) is _Prewritten:  # pickled into its file already (by a forked child)
                    return value.size, diskcache.core.MODE_PICKLE, value.filename, None
                if type(value) is not _Streamed:
                    return super().store(value, read, key=key)
                filename, full_path = self.filename(key, value)  # as diskcache's own pickled value file
                os.makedirs(os.path.dirname(full_path), exist_ok=True)
                try:
                    with open(full_path, "xb", buffering=0) as f:
                        pickle.Pickler(f, protocol=self.pickle_protocol).dump(value.obj)
                        size = f.tell()
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.remove(full_path)  # (no half-written file left behind)
                    raise
                return size, diskcache.core.MODE_PICKLE, filename, None

        _DISK = WholeDisk
    return _DISK


def get_cache():
    """The process's ``diskcache.Cache`` (created on first use, re-created after a fork)."""
    global _cache, _cache_pid
    import diskcache

    with _lock:
        if _cache is None or _cache_pid != os.getpid():
            _cache = diskcache.Cache(str(private_dir(cache_dir() / "data")), size_limit=2 * 1024**3,
                                     disk=disk_class())
            _cache_pid = os.getpid()
        return _cache


#: the marker of a value being written behind: this prefix + its key
_WRITING = "writing:"
#: seconds a write-behind marker lasts: the longest another process waits for the value (a write that
#: fails removes its marker at once)
WRITE_BEHIND_S = 300.0


def set_behind(key: str, value, expire: float | None = None) -> threading.Thread:
    """``get_cache().set(key, value, expire=expire)`` in a background thread, the marker set first.

    For a value whose pickle and write take seconds (a million-bundle snapshot: ~0.8 s of pickling, then
    ~1.5 s in the kernel writing 260 MB): the caller, which keeps the value in memory, answers at once.
    On Linux the thread forks a child that pickles the value straight into diskcache's value file and
    ends (the child shares the value with this process: nothing is copied, and its pickling does not hold
    this interpreter, so the requests that come meanwhile — the first decision on an upload — run at full
    speed); the thread waits for it and enters the file in the cache. The child takes no lock (it pickles
    and writes a file, and leaves with ``os._exit``). Elsewhere the thread pickles the value into the file
    itself, frame by frame (the interpreter is free for the other threads during each frame's write). A
    failed write is logged and its marker removed, so readers stop waiting; the value then lives only in
    the caller's memory. The thread is not a daemon: a process that exits first waits for the write."""
    cache = get_cache()
    cache.set(_WRITING + key, os.getpid(), expire=WRITE_BEHIND_S)
    t = threading.Thread(target=_write_behind, args=(key, value, expire), name="cache-write-behind")
    t.start()
    return t


class _Streamed:
    """A value to pickle straight into its file (:func:`disk_class`)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj


class _Prewritten:
    """A value pickled into the cache's value file ``filename`` (``size`` bytes) already."""
    __slots__ = ("filename", "size")

    def __init__(self, filename: str, size: int):
        self.filename, self.size = filename, size


def _pickled_by_child(disk, value) -> _Prewritten:
    """``value`` pickled into a new value file of ``disk`` by a child forked for it (ended when it runs
    longer than :data:`WRITE_BEHIND_S`: a child stuck for good must not keep the process from exiting,
    which waits for the writing thread)."""
    from engine.forked import in_child

    filename, full_path = disk.filename()
    os.makedirs(os.path.dirname(full_path), exist_ok=True)

    def pickle_it():
        import gc

        gc.disable()
        with open(full_path, "xb") as f:
            pickle.Pickler(f, protocol=disk.pickle_protocol).dump(value)

    code = in_child(pickle_it, WRITE_BEHIND_S)
    if code != 0:
        with contextlib.suppress(OSError):
            os.remove(full_path)  # (no half-written file left behind)
        raise RuntimeError(f"the process pickling it ended with status {code}")
    return _Prewritten(filename, os.path.getsize(full_path))


def _write_behind(key: str, value, expire) -> None:
    from engine.forked import CAN_FORK

    cache = get_cache()
    try:
        cache.set(key, _pickled_by_child(cache.disk, value) if CAN_FORK else _Streamed(value), expire=expire)
    except Exception:  # noqa: BLE001  (a full disk, a removed directory: the caller still has the value)
        log.exception("could not store %s in the cache", key.split(":", 1)[0])
    finally:
        try:
            cache.delete(_WRITING + key)
        except Exception:  # noqa: BLE001
            log.exception("could not remove a write-behind marker")


def is_stored(key: str) -> bool:
    """``key`` is in the cache, or being written behind."""
    cache = get_cache()
    return key in cache or _WRITING + key in cache


def get_waiting(key: str, wait: float = WRITE_BEHIND_S):
    """``get_cache().get(key)``, waiting up to ``wait`` seconds while it is being written behind."""
    cache = get_cache()
    got = cache.get(key)
    deadline = time.monotonic() + wait
    while got is None and _WRITING + key in cache and time.monotonic() < deadline:
        time.sleep(0.05)
        got = cache.get(key)
    return got if got is not None else cache.get(key)  # (the write may end between the two reads)


def _job_key(pid: int) -> str:
    return f"shedlab:job-started:{int(pid)}"


def _manager_class():
    from dash import DiskcacheManager

    class _Reaping(DiskcacheManager):
        """Dash's ``DiskcacheManager``, with each job started by a fork server and joined (reaped).

        Dash starts each job with ``multiprocess.Process(...).start()`` — a fork of the web server,
        which copies every lock another of its threads holds at that moment (a SQLite lock inside
        diskcache: the job hangs for good) — and keeps only its pid, so finished jobs stayed as zombies.
        Here the job is started from the ``forkserver`` context (the job function and its arguments are
        pickled with dill, as multiprocess does; the callback itself by reference to its module), and
        the process object is joined by a daemon thread.

        ``preload``: modules the fork server imports once when it starts (each job then has them).
        """

        def __init__(self, cache=None, cache_by=None, expire=None, preload=()):
            super().__init__(cache, cache_by=cache_by, expire=expire)
            self.preload = tuple(preload)

        def call_job_fn(self, key, job_fn, args, context):
            import psutil

            proc = _job_context(self.preload).Process(target=job_fn,
                                                      args=(key, self._make_progress_key(key), args, context))
            proc.start()
            # Remember which process this pid is (its start time), in the cache every worker shares:
            # once a job is reaped its pid is free, and the system may give it to an unrelated process.
            try:
                self.handle.set(_job_key(proc.pid), psutil.Process(proc.pid).create_time(), expire=7 * 86400)
            except psutil.NoSuchProcess:  # pragma: no cover - gone before it could be looked at
                pass
            threading.Thread(target=self._reap, args=(proc,), name=f"reap-job-{proc.pid}", daemon=True).start()
            return proc.pid

        def _reap(self, proc):
            proc.join()
            self.handle.delete(_job_key(proc.pid))  # finished: its pid is no longer ours to signal

        def _ours(self, job) -> bool:
            """Whether ``job`` is the pid of a job of ours that has not been reaped (same start time)."""
            import psutil

            try:
                job = int(job)
            except (TypeError, ValueError):
                return False
            started = self.handle.get(_job_key(job))
            if job <= 0 or started is None:
                return False
            try:
                return abs(psutil.Process(job).create_time() - started) < 1e-3
            except psutil.Error:
                return False

        def terminate_job(self, job):
            """Dash's Cancel (and its clean-up after a result is read, and the replacement of a running
            job): only a running job of ours is signalled — Dash calls this with the pid of jobs that
            have already finished, whose pid the reaping has freed and may now belong to another
            process. A job that ends while it is being stopped is not an error."""
            import psutil

            if self._ours(job):
                try:
                    super().terminate_job(job)
                except psutil.NoSuchProcess:
                    pass

        def job_running(self, job):
            import psutil

            try:
                return self._ours(job) and super().job_running(job)
            except psutil.NoSuchProcess:  # reaped between Dash's pid_exists and its Process(): finished
                return False

    return _Reaping


_context_lock = threading.Lock()


def _job_context(preload=()):
    """multiprocess's ``forkserver`` context. The fork server imports ``dash`` and ``preload`` when it starts
    (the first job of the process starts it; later calls keep the first list)."""
    import multiprocess

    ctx = multiprocess.get_context("forkserver")
    with _context_lock:
        if not getattr(_job_context, "started", False):  # dash: where the job function of every job lives
            ctx.set_forkserver_preload(["dash", *preload])
        _job_context.started = True
    return ctx


def __getattr__(name):  # ReapingDiskcacheManager is built lazily (importing dash is not free)
    if name == "ReapingDiskcacheManager":
        return _manager_class()
    raise AttributeError(name)


def background_manager():
    """The manager of background callbacks (simulations, Spark jobs): a reaping ``DiskcacheManager``."""
    global _manager
    import diskcache

    with _lock:
        if _manager is None:
            jobs = private_dir(cache_dir() / "jobs")
            _manager = _manager_class()(diskcache.Cache(str(jobs), disk=disk_class()), expire=3600,
                                        preload=("callbacks",))
        return _manager
