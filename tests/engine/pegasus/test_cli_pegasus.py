"""``python -m engine pegasus``: exit codes, text and the JSON contract."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main

ROOT = Path(__file__).resolve().parents[3]
UNBALANCED = str(ROOT / "samples/pegasus/unbalanced.txt")


def run(capsys, *argv):
    try:
        code = main(["pegasus", *argv])
    except SystemExit as exc:          # argparse usage errors exit 2 with one line
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli001_text_lists_rounds_and_final_counts(capsys):
    code, out, err = run(capsys, UNBALANCED, "--brief")
    assert code == 0 and err == ""
    assert "round 1  balance (primary)" in out
    assert "move_pri    2.0            10.0.0.1:34801 -> 10.0.0.3:34801        temp" in out
    assert "copy_pri    2.1" in out and "copy_sec    2.0" in out
    assert "final per-node counts" in out and "cluster\n" in out
    assert "  10.0.0.4:34801        6         12     18  (1/8/9)" in out


def test_cli002_json_shape(capsys):
    code, out, _ = run(capsys, UNBALANCED, "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"format", "source", "config", "disk_choice", "nodes", "tables", "rounds",
                         "operation_count", "counts", "skew", "health", "stop_reason", "warnings"}
    assert data["format"] == "shedlab-pegasus-plan/1"
    r1 = data["rounds"][0]
    assert set(r1) == {"round", "kind", "stage", "now_ms", "note", "operation_count", "proposals"}
    p = r1["proposals"][0]
    assert set(p) == {"round", "seq", "type", "gpid", "app_id", "pidx", "table", "from", "to",
                      "stage", "reason", "details", "actions"}
    assert (p["type"], p["gpid"], p["from"], p["to"]) == ("move_pri", "2.0", "10.0.0.1:34801",
                                                          "10.0.0.3:34801")
    assert set(data["counts"]["after"]) == {"tables", "cluster"}
    assert data["counts"]["after"]["tables"]["temp"][3] == {"node": "10.0.0.4:34801", "primary": 2,
                                                            "secondary": 4, "total": 6}
    assert data["operation_count"]["before"]["total"] == 17


@pytest.mark.parametrize("flag,key", [("--cluster-balance", "balance_cluster"),
                                      ("--only-primary", "only_primary_balancer"),
                                      ("--only-move-primary", "only_move_primary"),
                                      ("--balancer-in-turn", "balancer_in_turn")])
def test_cli003_flags_map_to_pegasus_keys(capsys, flag, key):
    code, out, _ = run(capsys, UNBALANCED, flag, "--json")
    assert code == 0 and json.loads(out)["config"][key] is True


def test_cli004_only_primary_leaves_secondaries(capsys):
    code, out, _ = run(capsys, UNBALANCED, "--only-primary", "--json")
    types = {p["type"] for r in json.loads(out)["rounds"] for p in r["proposals"]}
    assert types == {"move_pri", "copy_pri"}


def test_cli005_no_quirks_and_seed(capsys):
    code, out, _ = run(capsys, UNBALANCED, "--cluster-balance", "--seed", "4", "--no-quirks", "--json")
    data = json.loads(out)
    assert code == 0 and data["config"]["fixed_quirks"] == ["Q1", "Q13", "Q7"]
    assert data["disk_choice"] == "random(seed=4)"
    code, out, _ = run(capsys, UNBALANCED, "--no-quirks=Q13", "--json")
    assert json.loads(out)["config"]["fixed_quirks"] == ["Q13"]
    code, out, _ = run(capsys, "--no-quirks", UNBALANCED, "--json")    # the file is not a LIST
    assert code == 0 and json.loads(out)["config"]["fixed_quirks"] == ["Q1", "Q13", "Q7"]
    code, _, err = run(capsys, "--json")
    assert code == 2 and "SNAPSHOT file is required" in err


def test_cli006_bad_input_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("[general]\napp_name : t\napp_id : 1\npartition_count : 2\nmax_replica_count : 3\n"
                   "\n[replicas]\npidx ballot replica_count primary secondaries\n0 1 1/3 a:1 []\n")
    for argv in ([str(bad)], [str(tmp_path / "missing.txt")], [UNBALANCED, "--no-quirks=Q5"],
                 [UNBALANCED, "--level", "sleepy"], [UNBALANCED, "--max-rounds", "0"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.startswith("error: ") and err.count("\n") == 1, err
    code, _, err = run(capsys, str(bad))
    assert "lists 1 of 2 partitions" in err


def test_cli007_config_ini(tmp_path, capsys):
    ini = tmp_path / "config.ini"
    ini.write_text("[meta_server]\nbalance_cluster = true\nbalance_op_count_per_round = 2\n"
                   "[replication]\nlb_interval_ms = 5000\n")
    code, out, _ = run(capsys, UNBALANCED, "--config", str(ini), "--json")
    cfg = json.loads(out)["config"]
    assert code == 0 and cfg["balance_cluster"] is True and cfg["balance_op_count_per_round"] == 2
    ini.write_text("[meta_server]\nbalance_cluster = maybe\n")
    code, _, err = run(capsys, UNBALANCED, "--config", str(ini))
    assert code == 2 and "meta_server.balance_cluster" in err


def test_cli008_subprocess_round_trip():
    proc = subprocess.run([sys.executable, "-m", "engine", "pegasus", UNBALANCED, "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stop_reason"].startswith("balanced")
    proc = subprocess.run([sys.executable, "-m", "engine", "pegasus", "nope.txt"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: nope.txt")
    assert "Traceback" not in proc.stderr
