"""The shipped recordings of a real 3-broker Pulsar 4.0.7 cluster (samples/realcluster/, made by
`make realcluster`) replayed by the engine: at every leader cycle the engine, given the snapshot the
leader had, unloads what the real leader unloaded (bundle, source and destination) — except the cycles
samples/realcluster/expected.json lists with their cause (the README's table) — and the ownership
changes the snapshots show are the leader's logged unloads."""
import json
from pathlib import Path

import pytest

from realcluster.compare import compare_run, leader_cycles, load_run

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted(p.parent for p in (ROOT / "samples" / "realcluster").glob("*/run.json"))
EXPECTED = json.loads((ROOT / "samples" / "realcluster" / "expected.json").read_text())


def test_every_scenario_is_shipped():
    assert {p.name for p in RUNS} == set(EXPECTED) == {"threshold", "avgshedder", "transfer"}


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_engine_does_what_the_real_leader_did(run):
    res = compare_run(run)
    exp = EXPECTED[run.name]
    assert res["leader_unloads"] == exp["leader_unloads"] and res["leader_unloads"] > 0
    differing = {r["snapshot"] for r in res["cycles"] if not r["exact"]}
    # every cycle agrees exactly (bundle, source, destination), but the ones explained in expected.json
    assert differing == set(exp["known_differences"]), [r for r in res["cycles"] if not r["exact"]]
    m = res["agreement"]
    assert (m["predicted_unloads"], m["observed_unloads"]) == (exp["predicted_unloads"], exp["observed_unloads"])
    assert round(m["agreement"], 4) == exp["agreement"]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_snapshots_show_the_leaders_unloads(run):
    """The recording is consistent: each bundle the leader logged unloading shows up, in the timeline,
    owned by the destination it named (the engine's observed moves)."""
    meta, _cfg, _snaps, actions = load_run(run)
    res = compare_run(run)
    observed = {(r["bundle"], r["broker"], r["observed_destination"]) for r in res["agreement_obj"].moves.to_dict("records")
                if r["status"] in ("both", "observed only")}
    logged = {x for v in leader_cycles(meta, actions).values() for x in v}
    assert logged and logged <= observed
