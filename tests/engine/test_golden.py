"""Golden outputs: the command line's answers pinned before the strategy restructuring (tag ``pre15``).

``tests/golden/simulate.json`` holds, for each shipped scenario (``samples/scenarios/*.yaml``, not
``findings/``), the run with the scenario's own config and one run per shedding strategy the simulator
runs: the summary (without its wall-clock ``elapsed_s``) and, per event kind, the count and a digest of
the ``(minute, broker, bundle, destination)`` rows. ``tests/golden/shed.json`` holds, for each sample
snapshot (``samples/snapshots/*.json``, ``samples/extensible/*.json``), three shedding cycles of the
default config and of each strategy the command runs on it: label, reason, scores, unloads with their
destination, the Extensible Load Manager's decisions.

Each golden case is its own argv: the test replays it in-process through :func:`engine.cli.main` (what
``python -m engine`` calls) and compares the same projection exactly. Only the fields listed here are
pinned, so new fields in the JSON (a reason code, a typed detail) do not break it; a changed value does.
The shortened runs (the 100-broker day) carry their ``--minutes`` in their argv.

Regenerate only from the tree whose behaviour is the reference (a checkout of ``pre15``), never to make
a failing comparison pass::

    PYTHONPATH=<checkout> python tests/engine/test_golden.py --write tests/golden
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"

#: the shedding strategies the golden runs cover (data for the generator; the test replays argv)
MODULAR = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")
EXTENSIBLE = ("TransferShedder",)
#: scenarios whose full run is too long for the test budget: the minutes they are cut to, per strategy
#: (None: the scenario's own config and every strategy not named). The 100-broker day runs past its peak
#: (AvgShedder's first unload is at minute 742); TransferShedder's day alone takes ~20 s, so it runs 4 hours.
SHORTEN = {"diurnal-100-brokers": {None: 900, "TransferShedder": 240}}
SHED_CYCLES = "3"


def _run_cli(argv: list[str]) -> dict:
    from engine.cli import main

    argv = [str(ROOT / a) if a.startswith("samples/") else a for a in argv]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    assert rc == 0, f"python -m engine {' '.join(argv)} exited {rc}"
    return json.loads(out.getvalue())


def _digest(rows) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def project_simulate(doc: dict) -> dict:
    summary = {k: v for k, v in doc["summary"].items() if k != "elapsed_s"}
    kinds: dict[str, list] = {}
    for ev in doc["events"]:
        kinds.setdefault(ev["kind"], []).append(
            [ev.get("minute"), ev.get("broker"), ev.get("bundle"), ev.get("destination")])
    events = {k: {"count": len(rows), "digest": _digest(rows)} for k, rows in sorted(kinds.items())}
    return {"strategy": doc["strategy"], "placement": doc["placement"], "summary": summary, "events": events}


def _unload(u: dict) -> dict:
    p = u.get("placement")
    if p is not None:
        p = {k: p.get(k) for k in ("broker", "score", "random", "from_plan")}
    return {"broker": u["broker"], "bundle": u["bundle"], "destination": u.get("destination"),
            "reason": u.get("reason"), "msg_rate": u.get("msg_rate"), "throughput": u.get("throughput"),
            "placement": p}


def project_shed(doc: dict) -> dict:
    cycles = []
    for c in doc["cycles"]:
        cyc = {k: c.get(k) for k in ("cycle", "now", "strategy", "label", "reason", "scores", "score_unit",
                                     "skipped")}
        cyc["unloads"] = [_unload(u) for u in c.get("unloads", [])]
        if "decisions" in c:
            cyc["decisions"] = [{k: d.get(k) for k in ("label", "reason", "broker", "bundle", "destination",
                                                       "swap")} for d in c["decisions"]]
        cycles.append(cyc)
    return {"strategy": doc["strategy"], "placement": doc["placement"],
            "config_changes": doc.get("config_changes"), "warnings": doc.get("warnings"), "cycles": cycles}


def _load(name: str) -> list[dict]:
    return json.loads((GOLDEN / f"{name}.json").read_text())


def _ids(cases):
    return [" ".join(c["argv"][1:]).replace("samples/", "") for c in cases]


SIMULATE = _load("simulate") if (GOLDEN / "simulate.json").exists() else []
SHED = _load("shed") if (GOLDEN / "shed.json").exists() else []


def test_golden_files_cover_the_samples():
    scenarios = {p.stem for p in (ROOT / "samples" / "scenarios").glob("*.yaml")}
    snapshots = {str(p.relative_to(ROOT)) for d in ("snapshots", "extensible")
                 for p in (ROOT / "samples" / d).glob("*.json")}
    assert {Path(c["argv"][1]).stem for c in SIMULATE} == scenarios
    assert {c["argv"][1] for c in SHED} == snapshots


@pytest.mark.parametrize("case", SIMULATE, ids=_ids(SIMULATE))
def test_simulate_matches_golden(case):
    assert project_simulate(_run_cli(case["argv"])) == case["expect"]


@pytest.mark.parametrize("case", SHED, ids=_ids(SHED))
def test_shed_matches_golden(case):
    assert project_shed(_run_cli(case["argv"])) == case["expect"]


# --- generator (run against the reference tree only) ---------------------------------------------------

def _simulate_cases() -> list[dict]:
    cases = []
    for path in sorted((ROOT / "samples" / "scenarios").glob("*.yaml")):
        rel = str(path.relative_to(ROOT))
        for strategy in (None, *MODULAR, *EXTENSIBLE):
            cut = SHORTEN.get(path.stem, {})
            minutes = cut.get(strategy, cut.get(None))
            extra = ["--minutes", str(minutes)] if minutes else []
            argv = ["simulate", rel, "--json", "--events", "all", "--seed", "0", *extra]
            if strategy:
                argv += ["--strategy", strategy]
            cases.append({"argv": argv, "expect": project_simulate(_run_cli(argv))})
    return cases


def _shed_cases() -> list[dict]:
    cases = []
    for folder in ("snapshots", "extensible"):
        for path in sorted((ROOT / "samples" / folder).glob("*.json")):
            rel = str(path.relative_to(ROOT))
            # a modular snapshot runs each modular strategy, and TransferShedder through the Extensible
            # Load Manager; the Extensible Load Manager's snapshot runs TransferShedder only
            strategies = EXTENSIBLE if folder == "extensible" else (*MODULAR, *EXTENSIBLE)
            for strategy in (None, *strategies):
                argv = ["shed", rel, "--json", "--cycles", SHED_CYCLES, "--seed", "0"]
                if strategy:
                    argv += ["--strategy", strategy]
                cases.append({"argv": argv, "expect": project_shed(_run_cli(argv))})
    return cases


def _write(path: Path, cases: list[dict]) -> None:
    lines = [json.dumps(c, sort_keys=True, separators=(",", ":")) for c in cases]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n")


if __name__ == "__main__":  # pragma: no cover - the generator
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        sys.exit(__doc__)
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "shed.json", _shed_cases())
    _write(out / "simulate.json", _simulate_cases())
