"""`python -m engine shed|place|replay`: JSON contract, exit codes, one-line errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.io import save_snapshot
from engine.synth import make_snapshot

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = str(ROOT / "samples" / "snapshots" / "bigo-threshold-first-unload.json")
YAHOO = str(ROOT / "samples" / "snapshots" / "yahoo-japan-3-brokers.json")


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_shed_json_contract(capsys):
    rc, out, err = run(capsys, "shed", SAMPLE, "--placement", "LeastResourceUsageWithWeight",
                       "--set", "loadBalancerDistributeBundlesEvenlyEnabled=false", "--cycles", "2", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert [c["cycle"] for c in d["cycles"]] == [1, 2]
    c1 = d["cycles"][0]
    assert set(c1["scores"]) == {"10.0.0.83:8080", "10.0.0.32:8080", "10.0.0.87:8080", "10.0.0.206:8080", "10.0.0.161:8080"}
    assert all(isinstance(v, float) for v in c1["scores"].values())
    for u in c1["unloads"]:
        assert set(u) >= {"broker", "bundle", "destination", "reason"}
        assert u["broker"] == "10.0.0.206:8080" and u["placement"]["random"] is True
    assert d["config_changes"]["loadBalancerLoadPlacementStrategy"].endswith("LeastResourceUsageWithWeight")


def test_shed_fully_qualified_names_and_avg_default_placement(capsys):
    rc, out, _ = run(capsys, "shed", YAHOO, "--strategy", "org.apache.pulsar.broker.loadbalance.impl.AvgShedder", "--json")
    d = json.loads(out)
    assert rc == 0 and d["strategy"] == "AvgShedder" and d["placement"] == "AvgShedder"
    assert d["cycles"][0]["unloads"] == [] and d["cycles"][0]["pairs"]


def test_shed_text_output(capsys):
    rc, out, _ = run(capsys, "shed", YAHOO, "--strategy", "OverloadShedder")
    assert rc == 0 and "UNLOAD" in out and "broker1:8080" in out


def test_place_json_contract(capsys):
    rc, out, _ = run(capsys, "place", YAHOO, "--bundle", "public/default/0x00000000_0x20000000", "--json",
                     "--set", "loadBalancerDistributeBundlesEvenlyEnabled=false")
    d = json.loads(out)
    assert rc == 0 and d["broker"] == "broker3:8080" and d["random"] is False
    assert set(d["candidates"]) == {"broker1:8080", "broker2:8080", "broker3:8080"}
    rc, out, _ = run(capsys, "place", YAHOO, "--bundle", "x/y/0x00000000_0xffffffff", "--strategy",
                     "LeastResourceUsageWithWeight", "--candidates", "broker1:8080,broker2:8080", "--json")
    d = json.loads(out)
    assert d["candidates"] == ["broker1:8080", "broker2:8080"] and d["strategy"] == "LeastResourceUsageWithWeight"


def test_replay_one_cycle_per_snapshot(tmp_path, capsys):
    for i, u in enumerate([40, 40, 40]):
        ld = make_snapshot({"a:1": dict(cpu=u, bundles={"t/n/a": dict(rate=9000), "t/n/b": dict(rate=8000)}),
                            "b:1": dict(cpu=10, bundles={"t/n/c": dict(rate=100)})}, now_ms=1_000_000 + i * 60_000)
        save_snapshot(ld, tmp_path / f"{i:02d}.json")
    rc, out, _ = run(capsys, "replay", str(tmp_path), "--strategy", "AvgShedder",
                     "--set", "loadBalancerAvgShedderHitCountLowThreshold=3", "--set", "maxUnloadPercentage=0.5", "--json")
    d = json.loads(out)
    assert rc == 0 and len(d["cycles"]) == 3
    assert [bool(c["unloads"]) for c in d["cycles"]] == [False, False, True]  # hit counts carried over
    assert d["cycles"][0]["snapshot"].endswith("00.json")


@pytest.mark.parametrize("argv", [
    ["shed", "/nonexistent.json"],
    ["shed", YAHOO, "--strategy", "NoSuchShedder"],
    ["shed", YAHOO, "--set", "maxUnloadPercentage=lots"],
    ["shed", YAHOO, "--set", "noEquals"],
    ["shed", YAHOO, "--cycles", "0"],
    ["shed", YAHOO, "--conf", "/nonexistent.conf"],
    ["place", YAHOO],  # --bundle missing
    ["place", YAHOO, "--bundle", "x/y/z", "--candidates", "nobody:1"],
    ["bogus"],
])
def test_bad_usage_exits_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) if argv in (["place", YAHOO], ["bogus"]) else _noop():
        rc = main(argv)
        assert rc == 2
    _, err = capsys.readouterr()
    assert err.strip() and len(err.strip().splitlines()) == 1 and "Traceback" not in err


class _noop:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_subprocess_exit_code_and_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.OverloadShedder\n")
    p = subprocess.run([sys.executable, "-m", "engine", "shed", YAHOO, "--conf", str(conf), "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and json.loads(p.stdout)["strategy"] == "OverloadShedder"
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    p = subprocess.run([sys.executable, "-m", "engine", "shed", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "bad.json" in p.stderr and "Traceback" not in p.stderr
