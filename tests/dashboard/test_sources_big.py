"""A big LoadData JSON upload (engine.fastload): read as columns, same decisions, limit message.

The snapshot is LoadData JSON as ``ModularLoadManagerImpl`` keeps it (Jackson field names; written by
:meth:`engine.model.LoadData.to_json` from a seeded random cluster), over the 1 MB the fast path
starts at.
"""
import json

from dashboard import sources
from dashboard.tuner.analysis import analyze
from engine.config import LoadBalancerConfig
from engine.fastload import FAST_MIN_BYTES, ColumnarLoadData
from engine.io import load_data_from_json
from engine.load_manager import ModularLoadManager
from engine.synth import random_snapshot

from .conftest import data_url


def test_big_upload_is_read_as_columns_with_the_same_decisions(sid):
    obj = random_snapshot(40, 60, seed=8, namespaces=4).to_json()
    raw = json.dumps(obj).encode()
    assert len(raw) >= FAST_MIN_BYTES
    got = sources.ingest_files(sid, [data_url(raw)], ["cluster.json"])
    assert not got.errors and len(got.sources) == 1
    info = got.sources[0]
    assert (info["brokers"], info["bundles"]) == (40, 2400)
    sources.clear_memory()  # from the diskcache, as another worker would read it
    snap = sources.get_snapshot(info["id"])
    assert isinstance(snap.ld, ColumnarLoadData)
    cfg = LoadBalancerConfig()
    a = analyze(snap, cfg, 0)
    assert not snap.ld.materialised  # the Tuner ran on the arrays
    want = ModularLoadManager(load_data_from_json(obj, "cluster.json"), cfg, seed=0).do_load_shedding()
    assert a.cycle.to_json() == want.to_json() and want.unloads


def test_default_limit_fits_a_1000_broker_snapshot_and_says_how_to_raise(sid, monkeypatch):
    assert sources.MAX_UPLOAD_BYTES >= 64 * 1024 * 1024  # the 1,000 x 100,000 bench snapshot
    monkeypatch.setattr(sources, "MAX_UPLOAD_BYTES", 1000)
    got = sources.ingest_files(sid, [data_url(b"{" + b" " * 2000 + b"}")], ["big.json"])
    assert "upload limit" in got.errors[0] and "SHEDLAB_MAX_UPLOAD_MB" in got.errors[0]


def test_a_snapshot_over_the_write_behind_size_is_listed_at_once_and_read_by_another_process(sid, monkeypatch):
    """The server answers before the diskcache has the snapshot; the session lists it at once and
    another worker process opens it (waiting for the write if it is still under way), with the same
    decisions as the process that parsed it."""
    import subprocess
    import sys
    from pathlib import Path

    monkeypatch.setattr(sources, "BEHIND_BUNDLES", 1_000)
    obj = random_snapshot(12, 100, seed=3, namespaces=3).to_json()
    got = sources.ingest_files(sid, [data_url(json.dumps(obj).encode())], ["cluster.json"])
    assert not got.errors
    sid_src = got.sources[0]["id"]
    assert [x["id"] for x in sources.list_session_sources(sid)] == [sid_src]
    cfg = LoadBalancerConfig()
    here = analyze(sources.get_snapshot(sid_src), cfg, 0).cycle.to_json()
    code = ("import json, sys\n"
            "from dashboard import sources\n"
            "from dashboard.tuner.analysis import analyze\n"
            "from engine.config import LoadBalancerConfig\n"
            f"snap = sources.get_snapshot({sid_src!r})\n"
            "print(json.dumps(analyze(snap, LoadBalancerConfig(), 0).cycle.to_json()))\n")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(here)) and here["unloads"]
