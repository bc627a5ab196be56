"""``gunicorn app:server`` and ``python app.py`` serve the app (and the layout) on a free 127.0.0.1 port."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gunicorn():
    exe = Path(sys.executable).with_name("gunicorn")
    return str(exe) if exe.exists() else shutil.which("gunicorn")


@pytest.mark.skipif(_gunicorn() is None, reason="gunicorn not installed")
def test_serving001_gunicorn(tmp_path):
    port = _free_port()
    env = dict(os.environ, SHEDLAB_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([_gunicorn(), "app:server", "-b", f"127.0.0.1:{port}", "-w", "2", "--threads", "2",
                             "-t", "60"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        page = _first_page(base, proc, 60)
        assert "<title>Shedlab</title>" in page
        with urllib.request.urlopen(base + "/_dash-layout", timeout=10) as r:
            layout = r.read().decode()
        assert r.status == 200 and "source-picker" in layout
        with urllib.request.urlopen(base + "/_dash-dependencies", timeout=10) as r:
            assert "tuner-fig-scores" in r.read().decode()
        with urllib.request.urlopen(base + "/tuner", timeout=10) as r:
            assert r.status == 200
    finally:
        _stop(proc)


def _first_page(base: str, proc, seconds: float) -> str:
    """The page at ``base`` once the server ``proc`` (its output piped) answers; fails with its output."""
    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(base + "/", timeout=5) as r:
                return r.read().decode()
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.poll() is not None else ""
                pytest.fail(f"the server did not serve: {out[-2000:]}")
            time.sleep(0.3)


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_python_app_py_serves_from_the_process_started_again_with_huge_pages(tmp_path):
    """``python app.py`` (what ``make run`` runs) first starts itself again with glibc asked for huge pages
    (dashboard.hugepages), where this machine supports them; the process that serves is that one."""
    from dashboard.hugepages import TUNABLE, huge_pages_env

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "SHEDLAB_HUGE_PAGES")}
    env.update(HOST="127.0.0.1", PORT=str(port), SHEDLAB_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        assert "Shedlab" in _first_page(f"http://127.0.0.1:{port}", proc, 90)
        served = dict(x.split("=", 1) for x in Path(f"/proc/{proc.pid}/environ").read_bytes().decode()
                      .split("\0") if "=" in x)
        assert (TUNABLE in served.get("GLIBC_TUNABLES", "")) == (huge_pages_env({}) is not None)
    finally:
        _stop(proc)
