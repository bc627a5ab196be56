"""Policy files uploaded beside the Extensible Load Manager's files: one consume-output file or
both topics' files, with ``ns-isolation-policy list`` JSON (``NamespaceIsolationDataImpl``) beside them,
make one ELM snapshot carrying the policies; the Tuner's TransferShedder + ELM placement honour them.
ELM data: ``tests/engine/extensible/data`` (``pulsar-client consume`` output, as ``CmdConsume`` prints it)."""
import json
from pathlib import Path

from dashboard import sources
from dashboard.analysis import analyze
from engine.config import LoadBalancerConfig

from .conftest import data_url

DATA = Path(__file__).resolve().parents[1] / "engine" / "extensible" / "data"
BLD = (DATA / "broker-load-data.consume.txt").read_bytes()
TOP = (DATA / "top-bundles-load-data.consume.txt").read_bytes()
ISO = {"pin": {"namespaces": ["public/default"], "primary": ["broker-[12]"], "secondary": [],
               "auto_failover_policy": {"policy_type": "min_available",
                                        "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}


def _cfg(src):
    return LoadBalancerConfig().with_values({**sources.sample_state(src)["values"],
                                             "loadBalancerSheddingConditionHitCountThreshold": "0",
                                             "loadBalancerSheddingBundlesWithPoliciesEnabled": "true"})


def test_policy_files_beside_the_elm_files(sid):
    got = sources.ingest_files(sid, [data_url(BLD), data_url(TOP), data_url(json.dumps(ISO).encode())],
                               ["bld.txt", "top.txt", "isolation.json"])
    assert not got.errors and len(got.sources) == 1, got.errors
    info = got.sources[0]
    assert info["elm"] and info["policies"] == "1 isolation policy"
    snap = sources.get_snapshot(info["id"])
    assert snap.ld.elm.cluster_policies.policy_for("public/default").name == "pin"
    a = analyze(snap, _cfg(info["id"]))
    assert a.shedding == "TransferShedder"
    moved = [(u.bundle, u.destination) for u in a.cycle.unloads if u.bundle.startswith("public/default/")]
    assert not any(d == "broker-3:8080" for _, d in moved), moved
    # without the policy file, the same data sends public/default to broker-3 (the min broker)
    plain = sources.ingest_files(sid, [data_url(BLD), data_url(TOP)], ["bld.txt", "top.txt"]).sources[0]
    b = analyze(sources.get_snapshot(plain["id"]), _cfg(plain["id"]))
    assert any(u.destination == "broker-3:8080" and u.bundle.startswith("public/default/") for u in b.cycle.unloads)
    # one consume file with the policy file beside it
    one = sources.ingest_files(sid, [data_url(TOP), data_url(json.dumps(ISO).encode())], ["top.txt", "isolation.json"])
    assert not one.errors and one.sources[0]["elm"] and one.sources[0]["policies"] == "1 isolation policy"
