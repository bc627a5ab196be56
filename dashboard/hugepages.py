"""The server's memory: glibc's allocator asked for transparent huge pages.

Reading a big upload builds gigabytes of fresh memory in seconds (a 591 MB LoadData JSON of 10,000
brokers and a million bundles: the data URL decoded, the parsed document, the columns, the pickle the
cache stores). Every 4 KiB page of it is zeroed and mapped by the kernel on first touch; on a virtual
machine that is 40-50 % of the upload's time (measured: 4-7 s of system time in a 11-15 s upload).
With glibc's ``glibc.malloc.hugetlb=1`` tunable, ``malloc`` asks for transparent huge pages
(``madvise(MADV_HUGEPAGE)``) on the memory it maps, so a big buffer or array is mapped 2 MiB at a time:
on the same upload ~2.5 s less system time, half the page faults (what Python's small-object arenas
hold is unchanged). Decisions and every value are unchanged: only where the bytes live.

A tunable is read when the process starts, so :func:`reexec_with_huge_pages` starts the server again with
it set (``python app.py`` does this first), and only where it can matter: Linux with glibc 2.35 or later
and transparent huge pages not switched off. ``SHEDLAB_HUGE_PAGES=0`` keeps the process as it is; a
``GLIBC_TUNABLES`` that already names the tunable is left alone. Under ``gunicorn``, set the variable in
its environment (the README shows how).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["TUNABLE", "huge_pages_env", "reexec_with_huge_pages", "thp_mode"]

TUNABLE = "glibc.malloc.hugetlb=1"
_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def thp_mode(path: Path = _THP) -> str | None:
    """The kernel's transparent-huge-page mode (``always``, ``madvise``, ``never``), ``None`` if unknown."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else None


def _glibc_at_least(major: int, minor: int) -> bool:
    try:
        got = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return False
    name, _, version = got.partition(" ")
    try:
        parts = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return name == "glibc" and parts >= (major, minor)


def huge_pages_env(environ=None, *, mode: str | None = None, glibc_ok: bool | None = None) -> dict | None:
    """The environment to start the server in: ``environ`` with :data:`TUNABLE` added to
    ``GLIBC_TUNABLES`` (its other entries kept), or ``None`` when nothing is to change (switched off by
    ``SHEDLAB_HUGE_PAGES=0``, the tunable named already, not Linux with glibc >= 2.35, or transparent huge
    pages ``never``/unknown). ``mode`` and ``glibc_ok`` default to this machine's."""
    env = dict(os.environ if environ is None else environ)
    if env.get("SHEDLAB_HUGE_PAGES", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    current = env.get("GLIBC_TUNABLES", "")
    if any(entry.split("=", 1)[0] == "glibc.malloc.hugetlb" for entry in current.split(":")):
        return None
    if not sys.platform.startswith("linux"):
        return None
    if not (_glibc_at_least(2, 35) if glibc_ok is None else glibc_ok):
        return None
    if (thp_mode() if mode is None else mode) not in ("always", "madvise"):
        return None
    env["GLIBC_TUNABLES"] = f"{current}:{TUNABLE}" if current else TUNABLE
    return env


def reexec_with_huge_pages() -> None:
    """Start this process again, with the same command line, in :func:`huge_pages_env` (returns
    without doing anything when that is ``None``). Call it first thing: nothing done before survives."""
    env = huge_pages_env()
    if env is None:
        return
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *argv[1:]], env)
    except OSError:  # (not allowed here, e.g. a sandbox): go on as we are
        return
