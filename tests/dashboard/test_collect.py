"""The live-cluster collector against a local replay of Pulsar's admin REST API."""
import json
import zlib

import pytest

from dashboard import collect, sources
from dashboard.collect import CollectError, Collector, collect_snapshot, parse_every
from engine.io import load_data_from_json, load_timeline
from engine.load_manager import ModularLoadManager

from .pulsar_replay import PulsarReplay


def test_collect001_snapshot_with_token():
    with PulsarReplay(token="s3cret") as p:
        snap = collect_snapshot(p.admin_url, "s3cret")
        assert sorted(snap["brokers"]) == sorted(p.addr)
        assert all(auth == "Bearer s3cret" for _, _, auth in p.requests)
        paths = {(i, path) for i, path, _ in p.requests}
        for i in range(3):  # every broker asked for its own load report and topics
            assert (i, "/admin/v2/broker-stats/load-report") in paths
            assert (i, "/admin/v2/broker-stats/topics") in paths
    # the output is LoadData JSON with Pulsar's field names, readable by the engine
    rep = snap["brokers"][p.addr[0]]
    assert rep["loadReportType"] == "LocalBrokerData" and "lastStats" in rep and rep["cpu"]["limit"] == 800.0
    assert len(snap["bundleTopics"]) == 6
    for bundle, topics in snap["bundleTopics"].items():  # every topic hashes (CRC-32) into its bundle
        lo, hi = (int(x, 16) for x in bundle.rsplit("/", 1)[1].split("_"))
        assert topics and all(lo <= zlib.crc32(t.encode()) < hi for t in topics)
    ld = load_data_from_json(json.loads(json.dumps(snap)), "collected")
    assert len(ld.brokers) == 3 and len(ld.bundle_data) == 6
    cyc = ModularLoadManager(ld).do_load_shedding()
    assert cyc.shedding is not None


def test_collect002_missing_token_is_a_clear_error():
    with PulsarReplay(token="s3cret") as p:
        with pytest.raises(CollectError) as e:
            collect_snapshot(p.admin_url, None)
    msg = str(e.value)
    assert "HTTP 401" in msg and "/admin/v2/clusters" in msg and "Authentication required" in msg and "--token" in msg


def test_collect003_failing_broker_is_listed_missing_snapshot_still_written(tmp_path, capsys):
    fail = {(2, "/admin/v2/broker-stats/load-report"): 500}
    with PulsarReplay(fail=fail) as p:
        snap = collect_snapshot(p.admin_url, retries=1, backoff=0.01)
        # retried once (2 attempts) on the 500, then left out; the two others are in
        assert sum(1 for i, path, _ in p.requests if (i, path) == (2, "/admin/v2/broker-stats/load-report")) == 2
        assert sorted(snap["brokers"]) == sorted(p.addr[:2])
        assert list(snap["shedlabMissingBrokers"]) == [p.addr[2]]
        assert "HTTP 500" in snap["shedlabMissingBrokers"][p.addr[2]] and snap["shedlabCollected"]["missing"] == 1
        ld = load_data_from_json(json.loads(json.dumps(snap)), "partial")
        assert len(ld.brokers) == 2
        # the command line writes it and says which broker is missing
        rc = collect.main(["--admin-url", p.admin_url, "--retries", "0", "--out", str(tmp_path / "s.json")])
    assert rc == 0 and (tmp_path / "s.json").exists()
    err = capsys.readouterr().err
    assert "1 of 3 brokers missing" in err and p.addr[2] in err


def test_collect004_not_json_and_unreachable():
    with PulsarReplay(garbage={(1, "/admin/v2/broker-stats/topics")}) as p:
        snap = collect_snapshot(p.admin_url)  # broker 2 answers HTML: left out, named, the others kept
        assert "not JSON" in snap["shedlabMissingBrokers"][p.addr[1]] and len(snap["brokers"]) == 2
        url = p.admin_url
    with pytest.raises(CollectError, match="cannot connect"):
        collect_snapshot(url, timeout=2, retries=1, backoff=0.01)  # the servers are gone
    with pytest.raises(CollectError, match="http"):
        Collector("ftp://x")


def test_collect005_several_clusters_need_a_name(monkeypatch):
    with PulsarReplay() as p:
        col = Collector(p.admin_url)
        monkeypatch.setattr(col, "clusters", lambda: ["east", "west"])
        with pytest.raises(CollectError, match="--cluster"):
            col.snapshot()
        with pytest.raises(CollectError, match="not in"):
            col.snapshot("north")


def test_collect006_cli_timeline(tmp_path, capsys):
    with PulsarReplay(token="t") as p:
        (tmp_path / "tok").write_text("t\n")
        rc = collect.main(["--admin-url", p.admin_url, "--token-file", str(tmp_path / "tok"), "--every", "0s",
                           "--count", "2", "--out", str(tmp_path / "incident")])
    assert rc == 0
    files = sorted((tmp_path / "incident").glob("snapshot-*.json"))
    assert [f.name[:13] for f in files] == ["snapshot-0001", "snapshot-0002"]
    tl = load_timeline(tmp_path / "incident")
    assert len(tl) == 2 and all(len(x.brokers) == 3 for x in tl)
    assert "timeline of 2 snapshots" in capsys.readouterr().out


def test_collect007_cli_errors_exit_2(tmp_path, capsys):
    with PulsarReplay(token="t") as p:
        rc = collect.main(["--admin-url", p.admin_url, "--out", str(tmp_path / "x.json")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "401" in err and len(err.strip().splitlines()) == 1
    assert collect.main(["--admin-url", "nope", "--out", str(tmp_path / "x.json")]) == 2


def test_collect008_single_file_and_store(tmp_path):
    with PulsarReplay() as p:
        assert collect.main(["--admin-url", p.admin_url, "--out", str(tmp_path / "snap.json")]) == 0
    obj = json.loads((tmp_path / "snap.json").read_text())
    info = sources.store_load_data("a" * 32, obj, "live test", kind="live")
    assert info["id"].startswith("live:") and info["brokers"] == 3
    assert sources.get_snapshot(info["id"]).view.nb == 3


def test_collect009_parse_every():
    assert parse_every("60s") == 60 and parse_every("5m") == 300 and parse_every("1h") == 3600 and parse_every("2") == 2
    with pytest.raises(CollectError):
        parse_every("soon")
