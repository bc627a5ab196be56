"""The server starts again with glibc's allocator asked for transparent huge pages
(``dashboard.hugepages``): the environment it computes, and a process that really restarts in it (its big
buffers then mapped 2 MiB at a time). ``python app.py`` serving from the restarted process: test_serving."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.hugepages import TUNABLE, huge_pages_env, thp_mode

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED = huge_pages_env({}) is not None  # this machine: Linux, glibc >= 2.35, THP always/madvise

CHILD = """
import os, sys
sys.path.insert(0, os.getcwd())
from dashboard.hugepages import reexec_with_huge_pages
print("before", os.getpid(), flush=True)
reexec_with_huge_pages()
buf = bytearray(b"\\x01") * (64 << 20)  # a 64 MiB buffer from malloc, every page touched
kb = 0
with open("/proc/self/smaps_rollup") as f:
    for line in f:
        if line.startswith("AnonHugePages:"):
            kb = int(line.split()[1])
print("after", os.getpid(), os.environ.get("GLIBC_TUNABLES", ""), kb, flush=True)
"""


def test_the_tunable_is_added_to_the_environment_and_nothing_else_changes():
    env = huge_pages_env({"PATH": "/usr/bin", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, mode="madvise",
                         glibc_ok=True)
    assert env == {"PATH": "/usr/bin", "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:" + TUNABLE}
    assert huge_pages_env({}, mode="always", glibc_ok=True) == {"GLIBC_TUNABLES": TUNABLE}


@pytest.mark.parametrize("environ,mode,glibc_ok", [
    ({"SHEDLAB_HUGE_PAGES": "0"}, "madvise", True),  # switched off by the operator
    ({"SHEDLAB_HUGE_PAGES": "off"}, "madvise", True),
    ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, "madvise", True),  # the operator's own choice stays
    ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, "madvise", True),  # set already: no second start
    ({}, "never", True),  # the kernel's huge pages switched off
    ({}, "", True),  # unknown
    ({}, "madvise", False),  # not glibc, or older than 2.35
])
def test_no_restart_where_it_cannot_matter_or_is_not_wanted(environ, mode, glibc_ok):
    assert huge_pages_env(environ, mode=mode, glibc_ok=glibc_ok) is None


def test_the_kernel_mode_is_the_bracketed_word(tmp_path):
    f = tmp_path / "enabled"
    f.write_text("always defer defer+madvise [madvise] never\n")
    assert thp_mode(f) == "madvise"
    f.write_text("always [never]\n")
    assert thp_mode(f) == "never"
    assert thp_mode(tmp_path / "missing") is None


def _run_child(extra: dict) -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "SHEDLAB_HUGE_PAGES")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return [line.split() for line in out.splitlines()]


def test_the_process_starts_again_in_it_and_its_big_buffers_get_huge_pages():
    lines = _run_child({})
    before, after = lines[0], lines[-1]
    assert before[1] == after[1]  # the same process (execve), started again
    if not SUPPORTED:  # (a machine where it cannot matter: the process goes on as it is)
        assert [x[0] for x in lines] == ["before", "after"] and TUNABLE not in after
        return
    assert [x[0] for x in lines] == ["before", "before", "after"]  # the command line ran again, from the top
    assert after[2] == TUNABLE
    huge_kb = int(after[3])
    off = _run_child({"SHEDLAB_HUGE_PAGES": "0"})
    assert [x[0] for x in off] == ["before", "after"]  # switched off: no second start
    if thp_mode() == "madvise":  # only what is asked for gets huge pages: the buffer did, because of the tunable
        assert huge_kb >= 32 * 1024
        assert int(off[-1][-1]) < huge_kb
