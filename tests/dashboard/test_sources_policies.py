"""Uploads with the cluster's policies beside the snapshot: separate files, or one zip
holding a ZooKeeper dump with the /admin nodes. Shapes: ``ns-isolation-policy list`` (NamespaceIsolationDataImpl),
``clusters list-failure-domains`` (FailureDomainImpl), ``{"tenant/ns": group}`` from
``namespaces get-anti-affinity-group``, ``LocalPolicies.namespaceAntiAffinityGroup`` at
``/admin/local-policies/<tenant>/<ns>``."""
import io
import json
import zipfile

from dashboard import sources
from engine.samples import ISOLATION_SAMPLE_POLICIES, load_sample

from .conftest import data_url


def _snapshot_bytes():
    return json.dumps(load_sample("yahoo-japan-3-brokers").to_json()).encode()


ISO = {"pinned": {"namespaces": ["public/default"], "primary": ["broker3"], "secondary": [],
                  "auto_failover_policy": {"policy_type": "min_available",
                                           "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}


def test_policy_files_beside_a_snapshot(sid):
    raws = [_snapshot_bytes(), json.dumps(ISO).encode(), json.dumps({"public/default": "g1"}).encode(),
            json.dumps({"zone-a": {"brokers": ["broker1:8080"]}}).encode()]
    got = sources.ingest_files(sid, [data_url(r) for r in raws],
                               ["snap.json", "isolation.json", "anti-affinity.json", "domains.json"])
    assert not got.errors and len(got.sources) == 1
    info = got.sources[0]
    assert info["policies"].startswith("1 isolation policy, 1 anti-affinity group")
    snap = sources.get_snapshot(info["id"])
    cp = snap.ld.cluster_policies
    assert cp.policy_for("public/default").name == "pinned" and cp.failure_domains == {"zone-a": ["broker1:8080"]}
    # the same snapshot without the policies is another source
    plain = sources.ingest_files(sid, [data_url(raws[0])], ["snap.json"]).sources[0]
    assert plain["id"] != info["id"] and "policies" not in plain


def test_policies_in_a_zookeeper_zip(sid):
    ld = load_sample("yahoo-japan-3-brokers")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for b, bd in ld.brokers.items():
            z.writestr(f"loadbalance/brokers/{b}", json.dumps(bd.local.to_json()))
        z.writestr("admin/clusters/c1/namespaceIsolationPolicies",
                   json.dumps(ISOLATION_SAMPLE_POLICIES["namespaceIsolationPolicies"]))
        z.writestr("admin/local-policies/acme/payments-a", json.dumps({"namespaceAntiAffinityGroup": "payments-ha"}))
    got = sources.ingest_files(sid, [data_url(buf.getvalue())], ["zk.zip"])
    assert not got.errors
    cp = sources.get_snapshot(got.sources[0]["id"]).ld.cluster_policies
    assert set(cp.isolation) == {"payments", "analytics"} and cp.group_of("acme/payments-a") == "payments-ha"


def test_bad_or_lonely_policy_files_are_reported(sid):
    bad = json.loads(json.dumps(ISO))
    bad["pinned"]["primary"] = ["broker[1-"]
    got = sources.ingest_files(sid, [data_url(_snapshot_bytes()), data_url(json.dumps(bad).encode())],
                               ["snap.json", "iso.json"])
    assert any("iso.json" in e and "invalid regex" in e for e in got.errors)
    got = sources.ingest_files(sid, [data_url(json.dumps(ISO).encode())], ["iso.json"])
    assert got.errors and "need a snapshot" in got.errors[0] and not got.sources
