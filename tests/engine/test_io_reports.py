"""One broker-id rule for load reports however they arrive; ZooKeeper dumps with
legacy v1 bundle-data paths and resource-quota nodes.

Shapes mirror upstream Jackson output:
* ``LocalBrokerData`` (pulsar-common ``policies/data/loadbalancer/LocalBrokerData.java``) as
  ``pulsar-admin broker-stats load-report`` prints it and as ``/loadbalance/brokers/<id>`` holds it —
  a report of a Pulsar version without a ``brokerId`` property, named by ``webServiceUrl``;
* ``BundleData`` / ``TimeAverageMessageData`` (``/loadbalance/bundle-data/<bundle>``,
  ``LoadBalanceResources.BundleDataResources``);
* ``ResourceQuota`` (pulsar-common ``policies/data/ResourceQuota.java``: msgRateIn, msgRateOut,
  bandwidthIn, bandwidthOut, memory, dynamic) at ``/loadbalance/resource-quota/<bundle>``
  (``LoadBalanceResources.QuotaResources``), ``/loadbalance/resource-quota/namespace/<bundle>``
  (Pulsar 2.x ``ResourceQuotaCache``) and ``/loadbalance/resource-quota/default``.
"""
import io
import json
import zipfile

import pytest

from dashboard import sources
from engine.errors import InputError
from engine.io import load_data_from_json, load_snapshot, load_snapshot_bytes, report_broker_id
from engine.model import NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES
from engine.view import LoadView
from tests.dashboard.conftest import data_url

B1 = "public/default/0x00000000_0x80000000"
B2 = "public/default/0x80000000_0xffffffff"
V1 = "sample/use/ns1/0x00000000_0xffffffff"  # a v1 namespace's bundle: prop/cluster/ns/range


def report(host, bundles, rate=100.0):
    """A LocalBrokerData as Jackson writes it (no brokerId property: older Pulsar)."""
    stats = {b: {"msgRateIn": rate, "msgThroughputIn": rate * 1000, "msgRateOut": rate, "msgThroughputOut": rate * 1000,
                 "consumerCount": 1, "producerCount": 1, "topics": 2, "cacheSize": 0} for b in bundles}
    return {
        "webServiceUrl": f"http://{host}:8080", "webServiceUrlTls": f"https://{host}:8443",
        "pulsarServiceUrl": f"pulsar://{host}:6650", "pulsarServiceUrlTls": f"pulsar+ssl://{host}:6651",
        "persistentTopicsEnabled": True, "nonPersistentTopicsEnabled": True,
        "cpu": {"usage": 200.0, "limit": 800.0}, "memory": {"usage": 512.0, "limit": 2048.0},
        "directMemory": {"usage": 64.0, "limit": 4096.0}, "bandwidthIn": {"usage": 100.0, "limit": 1e7},
        "bandwidthOut": {"usage": 100.0, "limit": 1e7},
        "msgThroughputIn": rate * 1000 * len(bundles), "msgThroughputOut": rate * 1000 * len(bundles),
        "msgRateIn": rate * len(bundles), "msgRateOut": rate * len(bundles), "lastUpdate": 1765000000000,
        "lastStats": stats, "numTopics": 2 * len(bundles), "numBundles": len(bundles), "numConsumers": len(bundles),
        "numProducers": len(bundles), "bundles": list(bundles), "lastBundleGains": [], "lastBundleLosses": [],
        "brokerVersionString": "3.0.7", "loadReportType": "LocalBrokerData", "protocols": {},
        "advertisedListeners": {},
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
        "startTimestamp": 1764990000000, "maxResourceUsage": 0.25,
    }


REPORTS = {"broker-a.json": report("10.0.0.1", [B1]), "broker-b.json": report("10.0.0.2", [B2])}
IDS = {"10.0.0.1:8080", "10.0.0.2:8080"}


def test_reports001_rule():
    assert report_broker_id(report("10.0.0.1", [B1]), "broker-a") == "10.0.0.1:8080"
    assert report_broker_id({**report("h", []), "brokerId": "h:9090"}, "x") == "h:9090"  # newer Pulsar: its own id
    tls_only = {k: v for k, v in report("h", []).items() if k != "webServiceUrl"}
    assert report_broker_id(tls_only, "x") == "h:8443"  # webServicePort off: the TLS port names the broker
    only_pulsar = {k: v for k, v in report("h", []).items() if not k.startswith("webServiceUrl")}
    assert report_broker_id(only_pulsar, "broker-x") == "broker-x"  # 6650 is not the id's port
    assert report_broker_id(only_pulsar) is None


def test_reports002_same_ids_every_way(tmp_path):
    """A single report, a directory, a zip and uploads (one and several) give the same broker ids."""
    d = tmp_path / "reports"
    d.mkdir()
    for name, obj in REPORTS.items():
        (d / name).write_text(json.dumps(obj))
    assert set(load_snapshot(d).brokers) == IDS
    assert set(load_snapshot(d / "broker-a.json").brokers) == {"10.0.0.1:8080"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, obj in REPORTS.items():
            z.writestr(name, json.dumps(obj))
    assert set(load_snapshot_bytes(buf.getvalue(), "reports.zip").brokers) == IDS
    # the pages: several reports uploaded together, and one alone
    contents = [data_url(json.dumps(o).encode()) for o in REPORTS.values()]
    got = sources.ingest_files("h4-sess", contents, list(REPORTS))
    assert not got.errors
    assert set(sources.get_snapshot(got.sources[0]["id"]).ld.brokers) == IDS
    one = sources.ingest_files("h4-sess", contents[:1], ["broker-a.json"])
    assert set(sources.get_snapshot(one.sources[0]["id"]).ld.brokers) == {"10.0.0.1:8080"}


def test_reports003_file_name_only_when_the_report_names_none(tmp_path):
    bare = {k: v for k, v in report("h", [B1]).items() if not k.startswith("webServiceUrl")}
    d = tmp_path / "r"
    d.mkdir()
    (d / "broker-7.json").write_text(json.dumps(bare))
    (d / "named.json").write_text(json.dumps(report("10.0.0.9", [B2])))
    assert set(load_snapshot(d).brokers) == {"broker-7", "10.0.0.9:8080"}
    assert set(load_snapshot(d / "broker-7.json").brokers) == {"broker-7"}  # one file: the same rule
    up = sources.ingest_files("h4-sess", [data_url(json.dumps(bare).encode())], ["broker-7.json"])
    assert set(sources.get_snapshot(up.sources[0]["id"]).ld.brokers) == {"broker-7"}
    with pytest.raises(InputError, match="brokerId"):
        load_data_from_json(bare)  # no id, no file name to fall back on


def test_reports004_duplicate_in_a_zip_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.json", json.dumps(report("10.0.0.1", [B1])))
        z.writestr("b.json", json.dumps(report("10.0.0.1", [B2])))  # same broker under two names
    with pytest.raises(InputError, match="10.0.0.1:8080 appears twice"):
        load_snapshot_bytes(buf.getvalue(), "reports.zip")


def _bundle_data(rate):
    def tamd(max_samples, n):
        return {"maxSamples": max_samples, "numSamples": n, "msgThroughputIn": rate * 1000,
                "msgThroughputOut": rate * 1000, "msgRateIn": rate, "msgRateOut": rate}
    return {"shortTermData": tamd(10, 10), "longTermData": tamd(1000, 50), "topics": 2}


QUOTA = {"msgRateIn": 400.0, "msgRateOut": 1200.0, "bandwidthIn": 400000.0, "bandwidthOut": 900000.0,
         "memory": 80.0, "dynamic": True}


def _dump(tmp_path, files):
    root = tmp_path / "dump"
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content if isinstance(content, str) else json.dumps(content))
    return root


def test_zk001_legacy_v1_bundle_data_is_read(tmp_path):
    files = {
        "loadbalance/brokers/10.0.0.1:8080": report("10.0.0.1", [B1, V1]),
        "loadbalance/brokers/10.0.0.2:8080": report("10.0.0.2", [B2]),
        f"loadbalance/bundle-data/{B1}": _bundle_data(100.0),
        f"loadbalance/bundle-data/{V1}": _bundle_data(777.0),
        "loadbalance/bundle-data/sample/use": "",  # parent znodes without data
        "loadbalance/bundle-data/public/default/extra/deep/node": _bundle_data(1.0),
    }
    buf = io.BytesIO()  # a zip: a parent znode with data and its children both fit in one
    with zipfile.ZipFile(buf, "w") as z:
        for rel, content in files.items():
            z.writestr(rel, content if isinstance(content, str) else json.dumps(content))
    ld = load_snapshot_bytes(buf.getvalue(), "dump.zip")
    assert ld.bundle_data[V1].long_term.msg_rate_in == 777.0  # the dump's value, not a derived default
    assert ld.bundle_data[V1].long_term.num_samples == 50
    warn = [w for w in ld.warnings if "ignored 1 node" in w]
    assert warn and "public/default/extra/deep/node" in warn[0]


def test_zk002_resource_quota_seeds_a_bundle_without_bundle_data(tmp_path):
    files = {
        "brokers/10.0.0.1:8080": report("10.0.0.1", [B1], rate=100.0),
        "brokers/10.0.0.2:8080": report("10.0.0.2", [B2], rate=100.0),
        f"resource-quota/{B1}": QUOTA,  # current Pulsar: LoadBalanceResources.QuotaResources
        "resource-quota/default": {**QUOTA, "msgRateIn": 40.0},
    }
    ld = load_snapshot(_dump(tmp_path, files))
    assert ld.resource_quotas[B1]["msgRateOut"] == 1200.0 and ld.default_resource_quota["msgRateIn"] == 40.0
    q = ld.bundle_data[B1]  # quota (10 / 1000 samples, "ample history"), then one update with the report's stats
    assert q.short_term.num_samples == NUM_SHORT_SAMPLES and q.long_term.num_samples == NUM_LONG_SAMPLES
    assert q.short_term.msg_rate_in == pytest.approx(400.0 + (100.0 - 400.0) / NUM_SHORT_SAMPLES)
    assert q.long_term.msg_throughput_out == pytest.approx(900000.0 + (100000.0 - 900000.0) / NUM_LONG_SAMPLES)
    # no quota: Pulsar's default (numSamples 0), replaced by the first sample; the default quota is not used
    d = ld.bundle_data[B2]
    assert d.short_term.num_samples == 1 and d.short_term.msg_rate_in == 100.0
    # a bundle never seen (a first placement) starts from its quota too
    view = LoadView.from_load_data(ld)
    unseen = "public/default/0x40000000_0x80000000"
    ld.resource_quotas[unseen] = QUOTA
    view = LoadView.from_load_data(ld)
    assert view.bundle_data(unseen).long_term.msg_rate_out == 1200.0
    assert view.bundle_data("public/default/0x00000001_0x00000002").long_term.msg_rate_out == 50.0
    # LoadData JSON keeps them
    back = load_data_from_json(json.loads(json.dumps(ld.to_json())), "round")
    assert back.resource_quotas == ld.resource_quotas and back.default_resource_quota == ld.default_resource_quota


def test_zk003_older_quota_path_and_precedence(tmp_path):
    files = {
        "brokers/10.0.0.1:8080": report("10.0.0.1", [B1, V1]),
        "brokers/10.0.0.2:8080": report("10.0.0.2", [B2]),
        f"resource-quota/namespace/{B1}": {**QUOTA, "msgRateIn": 1.0},  # Pulsar 2.x ResourceQuotaCache
        f"resource-quota/namespace/{V1}": QUOTA,
        f"resource-quota/{B1}": QUOTA,  # both: current Pulsar reads only this one
    }
    ld = load_snapshot(_dump(tmp_path, files))
    assert ld.resource_quotas[B1]["msgRateIn"] == 400.0 and ld.resource_quotas[V1]["msgRateOut"] == 1200.0
    assert any("both" in w and B1 in w for w in ld.warnings)


@pytest.mark.parametrize("quota, field", [({"msgRateIn": "fast"}, "msgRateIn"), ({"memory": -1}, "memory"),
                                          ({"dynamic": "yes"}, "dynamic"), ([1, 2], None)])
def test_zk004_bad_quota_names_file_and_field(tmp_path, quota, field):
    files = {"brokers/a:8080": report("a", [B1]), f"resource-quota/{B1}": quota}
    with pytest.raises(InputError) as exc:
        load_snapshot(_dump(tmp_path, files))
    assert f"resource-quota/{B1}" in str(exc.value)
    if field:
        assert exc.value.field == field
