"""Extensible Load Manager uploads open in the pages: the Tuner runs TransferShedder and
the ELM's placement on the uploaded ELM data itself, not on a view derived from a modular snapshot.

The files are ``tests/engine/extensible/data`` (``pulsar-client consume`` output of the two ELM load-data
topics as ``CmdConsume`` / ``AbstractCmdConsume`` print it, ``BrokerLoadData`` / ``TopBundlesLoadData``
values as Jackson writes them; see ``tests/engine/extensible/test_readers.py``).
"""
import io
import json
import zipfile
from pathlib import Path

from dashboard import sources
from dashboard.analysis import analyze, build_manager
from dashboard.state import coerce_state
from engine.config import LoadBalancerConfig
from engine.extensible import EXTENSIBLE_LRUWW_FQN, ExtensibleLoadManager
from engine.extensible.samples import EXTENSIBLE_SAMPLES, extensible_sample_json
from engine.io import load_snapshot_bytes

from .conftest import data_url

DATA = Path(__file__).resolve().parents[1] / "engine" / "extensible" / "data"
BLD = (DATA / "broker-load-data.consume.txt").read_bytes()
TOP = (DATA / "top-bundles-load-data.consume.txt").read_bytes()


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("broker-load-data.txt", BLD)
        zf.writestr("top-bundles-load-data.txt", TOP)
    return buf.getvalue()


def _cfg(src):
    return LoadBalancerConfig().with_values(sources.sample_state(src)["values"])


def test_consume_zip_upload_runs_transfer_shedder_on_the_elm_data(sid):
    got = sources.ingest_files(sid, [data_url(_zip())], ["elm.zip"])
    assert not got.errors, got.errors
    info = got.sources[0]
    assert info["elm"] and (info["brokers"], info["bundles"]) == (3, 6)
    # the pairing rule: TransferShedder + the extensible LeastResourceUsageWithWeight
    cfg = _cfg(info["id"])
    assert cfg.shedding_strategy == "TransferShedder" and cfg.loadBalancerLoadPlacementStrategy == EXTENSIBLE_LRUWW_FQN
    state, errors = coerce_state({"values": sources.sample_state(info["id"])["values"]})  # what the Tuner opens
    assert (state.shed, state.place, errors) == ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight", [])
    snap = sources.get_snapshot(info["id"])
    lm = build_manager(snap, cfg)
    assert isinstance(lm, ExtensibleLoadManager)
    # the manager holds the uploaded BrokerLoadData itself (weightedMaxEMA 0.8 was published, not derived)
    assert lm.view.broker_load_data["broker-1:8080"].weighted_max_ema == 0.8
    a = analyze(snap, cfg.with_values({"loadBalancerSheddingConditionHitCountThreshold": "0"}))
    assert a.shedding == "TransferShedder" and a.result.decisions[0].reason == "Overloaded"
    assert {u.broker for u in a.cycle.unloads} >= {"broker-1:8080"}
    # a modular strategy chosen on an ELM snapshot still runs the ELM (Pulsar's fallback), said in the notes
    b = analyze(snap, cfg.with_values({"loadBalancerLoadSheddingStrategy": "ThresholdShedder"}))
    assert b.shedding == "TransferShedder" and any("TransferShedder is used" in n for n in b.notes)


def test_both_consume_files_uploaded_together_make_one_snapshot(sid):
    got = sources.ingest_files(sid, [data_url(BLD), data_url(TOP)], ["bld.txt", "top.txt"])
    assert not got.errors and len(got.sources) == 1 and got.sources[0]["bundles"] == 6
    same = load_snapshot_bytes(_zip(), "z.zip")
    assert sources.get_snapshot(got.sources[0]["id"]).ld.elm.to_json() == same.to_json()


def test_container_and_single_value_uploads_are_accepted(sid):
    name = next(iter(EXTENSIBLE_SAMPLES))
    got = sources.ingest_files(sid, [data_url(json.dumps(extensible_sample_json(name)).encode())], ["ts.json"])
    assert not got.errors and got.sources[0]["elm"]
    one = (DATA / "broker-2:8080.json").read_bytes()
    got = sources.ingest_files(sid, [data_url(one)], ["broker-2:8080.json"])
    assert not got.errors
    snap = sources.get_snapshot(got.sources[0]["id"])
    assert list(snap.ld.elm.broker_load_data) == ["broker-2:8080"] and list(snap.ld.brokers) == ["broker-2:8080"]


def test_a_file_of_neither_shape_names_the_shapes_tried(sid):
    got = sources.ingest_files(sid, [data_url(b'{"hosts": [], "version": 3}')], ["odd.json"])
    assert not got.sources and len(got.errors) == 1
    assert "odd.json" in got.errors[0] and "tried" in got.errors[0] and "BrokerLoadData" in got.errors[0]
