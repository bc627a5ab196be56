"""The one diskcache of the app: server-side session data, cached results, background callbacks.

The directory comes from ``SHEDLAB_CACHE_DIR`` (default ``.shedlab-cache`` in the project); every
gunicorn worker must point at the same absolute path. Nothing is opened at import time: the cache
is created lazily per process (diskcache handles are not shared across fork).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["cache_dir", "get_cache", "background_manager"]

_lock = threading.Lock()
_cache = None
_cache_pid = None
_manager = None


def cache_dir() -> Path:
    d = Path(os.getenv("SHEDLAB_CACHE_DIR") or Path(__file__).resolve().parent.parent / ".shedlab-cache")
    d.mkdir(parents=True, exist_ok=True)
    return d


def get_cache():
    """The process's ``diskcache.Cache`` (created on first use, re-created after a fork)."""
    global _cache, _cache_pid
    import diskcache

    with _lock:
        if _cache is None or _cache_pid != os.getpid():
            _cache = diskcache.Cache(str(cache_dir() / "data"), size_limit=2 * 1024**3)
            _cache_pid = os.getpid()
        return _cache


def background_manager():
    """The ``DiskcacheManager`` for background callbacks (simulations, Spark jobs)."""
    global _manager
    import diskcache
    from dash import DiskcacheManager

    with _lock:
        if _manager is None:
            _manager = DiskcacheManager(diskcache.Cache(str(cache_dir() / "jobs")), expire=3600)
        return _manager
