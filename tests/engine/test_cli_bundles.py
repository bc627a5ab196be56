"""``python -m engine bundles``: exit codes, one-line errors, the JSON contract."""
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from engine.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "topics"


def run_json(capsys, *argv):
    rc = main(["bundles", *argv, "--json", "--trials", "200"])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def test_cli001_json_contract_on_generated_partitions(capsys):
    rep = run_json(capsys, "gen:persistent://vivo/ns/t:30", "--bundles", "180")
    assert set(rep) >= {"source", "format", "topics_total", "config", "topics", "namespaces"}
    assert rep["format"] == "generated" and rep["topics_total"] == 30 and len(rep["topics"]) == 30
    t0 = rep["topics"][0]
    assert t0["topic"] == "persistent://vivo/ns/t-partition-0"
    assert t0["hash"] == zlib.crc32(b"persistent://vivo/ns/t-partition-0") and t0["hash_hex"] == f"0x{t0['hash']:08x}"
    (ns,) = rep["namespaces"]
    assert ns["namespace"] == "vivo/ns" and ns["bundles"] == 180 and ns["layout_source"] == "--bundles"
    assert len(ns["per_bundle"]) == 180 and sum(b["topics"] for b in ns["per_bundle"]) == 30
    assert len(ns["boundaries"]) == 181 and ns["boundaries"][-1] == "0xffffffff"
    # each topic's bundle is the per-bundle row whose range holds its hash
    rows = {b["bundle"]: b for b in ns["per_bundle"]}
    for t in rep["topics"]:
        r = rows[t["bundle"]]
        assert r["lower"] <= t["hash"] < r["upper"]
    d = ns["distribution"]["topics"]
    assert d["max"] == max(b["topics"] for b in ns["per_bundle"]) and d["mean"] == pytest.approx(30 / 180)
    assert ns["distribution"]["msg_rate"] is None
    assert ns["expected"]["method"] == "monte-carlo" and ns["expected"]["verdict"] in ("typical", "unlucky", "lucky")
    assert ns["expected"]["model"] == "partition-names"  # one partitioned topic
    assert ns["split"]["algorithm"] == "range_equally_divide" and ns["split"]["label"] == "Split"
    assert len(ns["boundaries_after_split"]) == 182
    assert ns["auto_split"]["to_split"] == [] and ns["partitioned_topics"] == {"persistent://vivo/ns/t": 30}


def test_cli002_broker_stats_sample_reports_traffic_and_checks_reported_bundles(capsys):
    rep = run_json(capsys, str(SAMPLES / "broker-stats-topics.json"))
    (ns,) = rep["namespaces"]
    assert ns["layout_source"] == "input" and ns["bundles"] == 4
    assert ns["reported"] == {"topics": 15, "hash_in_reported_bundle": 15, "same_bundle_as_layout": 15}
    assert ns["distribution"]["msg_rate"]["total"] > 0
    busiest = max(ns["per_bundle"], key=lambda b: b["msg_rate"])
    assert ns["split"]["bundle"] == busiest["bundle"]  # most loaded by msg rate


def test_cli003_flow_split_and_auto_split_follow_set(capsys):
    args = [str(SAMPLES / "broker-stats-topics.json"), "--split", "flow_or_qps_equally_divide"]
    ns = run_json(capsys, *args)["namespaces"][0]
    assert ns["split"]["label"] == "Failure" and "default algorithm" in ns["split"]["reason"]
    ns = run_json(capsys, *args, "--set", "defaultNamespaceBundleSplitAlgorithm=flow_or_qps_equally_divide",
                  "--set", "loadBalancerNamespaceBundleMaxMsgRate=5000",
                  "--set", "loadBalancerNamespaceMaximumBundles=6")["namespaces"][0]
    assert ns["split"]["label"] == "Split" and len(ns["split"]["boundaries"]) >= 1
    rates = [b["msg_rate"] for b in ns["per_bundle"]]
    over = sum(r > 5000 for r in rates)
    assert over >= 3
    # 4 bundles, cap 6: only two of the bundles over 5000 msg/s may be chosen this round
    assert len(ns["auto_split"]["to_split"]) == 2


def test_cli004_split_bundle_and_positions(capsys):
    ns = run_json(capsys, "gen:a/b/t:8", "--bundles", "4", "--split-bundle", "0XC0000000_0XFFFFFFFF")["namespaces"][0]
    assert ns["split"]["range"] == "0xc0000000_0xffffffff" and ns["split"]["boundaries_hex"] == ["0xdfffffff"]
    ns = run_json(capsys, "gen:a/b/t:8", "--split-bundle", "a/b/0x00000000_0x40000000",
                  "--split", "specified_positions_divide", "--positions", "0x10000000,0x30000000",
                  "--force")["namespaces"][0]
    assert ns["split"]["boundaries"] == [0x10000000, 0x30000000]


def test_cli008_config_from_preset_conf_and_set(capsys, tmp_path):
    ns = run_json(capsys, "gen:a/b/t:40", "--preset", "pulsar-5")["namespaces"][0]
    assert ns["bundles"] == 32 and ns["layout_source"] == "defaultNumberOfNamespaceBundles"  # Pulsar 5.0: 32
    conf = tmp_path / "broker.conf"
    conf.write_text("defaultNumberOfNamespaceBundles=2\nloadBalancerNamespaceBundleMaxTopics=10\n")
    rep = run_json(capsys, "gen:a/b/t:40", "--conf", str(conf))
    ns = rep["namespaces"][0]
    assert ns["bundles"] == 2 and rep["config"]["loadBalancerNamespaceBundleMaxTopics"] == 10
    # both bundles hold more than 10 of the 40 partitions unless one holds > 30: check against the counts
    over = [b["bundle"] for b in ns["per_bundle"] if b["topics"] > 10]
    assert ns["auto_split"]["to_split"] == over
    rep = run_json(capsys, "gen:a/b/t:40", "--conf", str(conf), "--set", "loadBalancerNamespaceBundleMaxTopics=1000")
    assert rep["namespaces"][0]["auto_split"]["to_split"] == []


def test_cli005_text_output(capsys):
    assert main(["bundles", str(SAMPLES / "topics-list.txt"), "--trials", "100"]) == 0
    out = capsys.readouterr().out
    assert "namespace public/default: 4 bundles" in out and "max/mean" in out and "split " in out
    assert "persistent://public/default/orders-partition-0" in out


@pytest.mark.parametrize("argv", [
    ["bundles", "gen:a/b/t:3", "--bundles", "0"],
    ["bundles", "gen:a/b/t:3", "--split", "halves"],
    ["bundles", "gen:a/b/t:3", "--split-bundle", "0x0_0x1"],
    ["bundles", "gen:a/b/t:3", "--split-bundle", "x/y/0x00000000_0x40000000"],
    ["bundles", "gen:a/b/t:3", "--set", "nope=1"],
    ["bundles", "gen:a/b/t:3", "--set", "loadBalancerNamespaceBundleMaxTopics=many"],
    ["bundles", "gen:a/b/t:3", "--partitions-of", "t"],
    ["bundles", "gen:a/b/t:3", "--conf", "/nonexistent/broker.conf"],
    ["bundles", "gen:a/b/t:3", "--preset", "pulsar-9"],
    ["bundles", "gen:a/b/t:3", "--positions", "zz", "--split", "specified_positions_divide"],
    ["bundles", "gen:a/b:3"],
    ["bundles", "/nonexistent/topics.txt"],
    ["bundles"],
])
def test_cli006_bad_usage_or_input_exits_2_with_one_line(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error: ") and err.count("\n") == 1


def test_cli007_real_process_exit_codes(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": {"msgRateIn": -3}}}}}')
    p = subprocess.run([sys.executable, "-m", "engine", "bundles", str(bad)], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and "msgRateIn" in p.stderr and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "engine", "bundles", "gen:a/b/t:4", "--json", "--trials", "50"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(p.stdout)["topics_total"] == 4
