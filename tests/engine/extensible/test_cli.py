"""`python -m engine shed|place|replay --strategy TransferShedder`: JSON shape and exit codes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.cli.common import build_config
from engine.cli.shed import make_manager
from engine.config import LoadBalancerConfig
from engine.extensible import EXTENSIBLE_LOAD_MANAGER, EXTENSIBLE_LRUWW_FQN, ExtensibleLoadManager
from engine.load_manager import ModularLoadManager
from engine.samples import load_sample

ROOT = Path(__file__).resolve().parents[3]
YAHOO = str(ROOT / "samples" / "snapshots" / "yahoo-japan-3-brokers.json")
EXT = str(ROOT / "samples" / "extensible" / "transfer-shedder-5-brokers.json")


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_shed_transfer_shedder_json_shape(capsys):
    rc, out, err = run(capsys, "shed", YAHOO, "--strategy", "TransferShedder", "--cycles", "4", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert (d["strategy"], d["placement"]) == ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight")
    assert d["config_changes"]["loadManagerClassName"] == EXTENSIBLE_LOAD_MANAGER
    assert d["config_changes"]["loadBalancerLoadSheddingStrategy"].endswith("extensions.scheduler.TransferShedder")
    assert d["config_changes"]["loadBalancerLoadPlacementStrategy"] == EXTENSIBLE_LRUWW_FQN
    cycles = d["cycles"]
    assert [c["label"] for c in cycles] == ["Skip", "Skip", "Skip", "Success"]
    for c in cycles:
        assert set(c) >= {"cycle", "now", "strategy", "label", "reason", "unloads", "skipped", "scores", "score_unit",
                          "lines", "verdicts", "notes", "state", "decisions"}
        assert c["strategy"] == "TransferShedder" and c["score_unit"] == "%"
        assert set(c["scores"]) == {"broker1:8080", "broker2:8080", "broker3:8080"}
        assert {"average", "std", "target std"} <= set(c["lines"])
        for x in c["decisions"]:
            assert set(x) == {"label", "reason", "broker", "bundle", "destination", "detail", "swap"}
    assert [c["decisions"][0]["reason"] for c in cycles[:3]] == ["HitCount"] * 3
    assert [c["state"]["unloadConditionHitCount"] for c in cycles] == [1, 2, 3, 0]
    last = cycles[-1]
    assert last["unloads"] and all(u["broker"] == "broker1:8080" and u["destination"] == "broker3:8080"
                                   and u["reason"] == "Overloaded" for u in last["unloads"])
    assert len(last["decisions"]) == len(last["unloads"])


def test_shed_extensible_snapshot_and_text(capsys):
    rc, out, err = run(capsys, "shed", EXT, "--strategy", "TransferShedder")
    assert rc == 0, err
    assert "UNLOAD" in out and "broker-e:8080 -> broker-a:8080" in out  # a swap
    rc, out, err = run(capsys, "shed", EXT, "--json")  # an extensible snapshot selects the extensible manager
    assert rc == 0 and json.loads(out)["strategy"] == "TransferShedder"


def test_shed_transfer_disabled_places(capsys):
    rc, out, err = run(capsys, "shed", EXT, "--strategy", "TransferShedder", "--set",
                       "loadBalancerTransferEnabled=false", "--json")
    assert rc == 0, err
    for u in json.loads(out)["cycles"][0]["unloads"]:
        assert u["placement"]["strategy"] == "ExtensibleLeastResourceUsageWithWeight"
        assert u["destination"] == u["placement"]["broker"]


def test_place_and_replay(capsys, tmp_path):
    rc, out, err = run(capsys, "place", EXT, "--strategy", "TransferShedder", "--bundle", "new/ns/0x00000000_0xffffffff",
                       "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["strategy"] == "ExtensibleLeastResourceUsageWithWeight"
    assert d["broker"] in ("broker-d:8080", "broker-e:8080")  # average 49 %: only 20 % and 8 % are 10 % below
    rc, out, err = run(capsys, "place", YAHOO, "--placement", "ExtensibleLeastResourceUsageWithWeight",
                       "--bundle", "x/y/0x00000000_0xffffffff", "--json")
    assert rc == 0, err
    assert json.loads(out)["broker"] == "broker3:8080"  # average 52 %: only 3 % is 10 % below it
    tl = tmp_path / "tl.json"
    tl.write_text(json.dumps([json.loads(Path(EXT).read_text())] * 2))
    rc, out, err = run(capsys, "replay", str(tl), "--strategy", "TransferShedder", "--json")
    assert rc == 0, err
    labels = [c["decisions"][0]["reason"] for c in json.loads(out)["cycles"]]
    assert labels == ["Overloaded", "CoolDown"]  # the second snapshot is not newer than the unload


@pytest.mark.parametrize("doc, needle", [
    ({"brokerLoadData": {"a:8080": {"weightedMaxEMA": -1}}}, "field brokerLoadData['a:8080'].weightedMaxEMA"),
    ({"brokerLoadData": {"a:8080": {}}, "topBundlesLoadData": {"a:8080": [{"stats": {}}]}},
     "field topBundlesLoadData['a:8080'][0].bundleName"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, doc, needle):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "engine", "shed", str(p), "--strategy", "TransferShedder", "--json"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and str(p) in r.stderr and needle in r.stderr


def test_modular_strategy_on_an_extensible_snapshot_still_runs_transfer_shedder(capsys):
    rc, out, err = run(capsys, "shed", EXT, "--strategy", "ThresholdShedder", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["strategy"] == "TransferShedder"
    assert any("ThresholdShedder" in n for n in d["cycles"][0]["notes"])


def test_build_config_and_make_manager():
    class A:
        strategy, placement, preset, conf, set = "TransferShedder", None, None, None, []

    cfg = build_config(A())
    assert cfg.extensible and cfg.loadBalancerLoadPlacementStrategy == EXTENSIBLE_LRUWW_FQN
    A.placement = "RoundRobinBrokerSelector"
    assert build_config(A()).placement_strategy == "RoundRobinBrokerSelector"
    ld = load_sample("yahoo-japan-3-brokers")
    assert isinstance(make_manager(ld, cfg, 0), ExtensibleLoadManager)
    assert isinstance(make_manager(ld, LoadBalancerConfig(), 0), ModularLoadManager)
    ext_only = LoadBalancerConfig().with_values({"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER})
    assert isinstance(make_manager(ld, ext_only, 0), ExtensibleLoadManager)
