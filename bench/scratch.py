"""Scratch directories of a bench run: removed when the run ends (a big run stores snapshots of hundreds of
megabytes in its cache; left behind, runs fill the disk)."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def scratch_dir(prefix: str) -> str:
    """A new temporary directory, removed when this process exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def use_cache_dir(prefix: str) -> None:
    """``SHEDLAB_CACHE_DIR`` for this run: the one given in the environment (kept), else a scratch one."""
    if not os.environ.get("SHEDLAB_CACHE_DIR"):
        os.environ["SHEDLAB_CACHE_DIR"] = scratch_dir(prefix)
