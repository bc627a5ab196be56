"""``gunicorn app:server`` serves the app (and the layout) on a free 127.0.0.1 port."""
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
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/", timeout=5) as r:
                    page = r.read().decode()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    out = proc.stdout.read().decode() if proc.poll() is not None else ""
                    pytest.fail(f"gunicorn did not serve: {out[-2000:]}")
                time.sleep(0.3)
        assert "<title>Shedlab</title>" in page
        with urllib.request.urlopen(base + "/_dash-layout", timeout=10) as r:
            layout = r.read().decode()
        assert r.status == 200 and "source-picker" in layout
        with urllib.request.urlopen(base + "/_dash-dependencies", timeout=10) as r:
            assert "tuner-fig-scores" in r.read().decode()
        with urllib.request.urlopen(base + "/tuner", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
