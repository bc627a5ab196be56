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
