"""The engine against a recording of a real leader: ``python -m realcluster.compare RUN_DIR...``.

Two comparisons per recorded run (see :mod:`realcluster.record` for the layout):

* the engine's own predicted-vs-actual (:func:`engine.agreement.compare_timeline`): the replay's
  unloads against the ownership changes between consecutive snapshots;
* cycle by cycle against the leader's log: for each leader cycle (a snapshot), the unloads the leader
  logged in that cycle (``actions.jsonl``: bundle, from, to) beside the unloads the engine's replay
  issues at the same snapshot. ``exact`` = same bundles, same sources, same destinations.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.agreement import compare_timeline
from engine.cli.replay import replay_timeline
from engine.config import parse_broker_conf
from engine.io import load_timeline


def load_run(run: Path):
    run = Path(run)
    meta = json.loads((run / "run.json").read_text())
    cfg = parse_broker_conf((run / "broker.conf").read_text(), source=str(run / "broker.conf")).config
    snaps = load_timeline(run / "timeline")
    actions = [json.loads(x) for x in (run / "actions.jsonl").read_text().splitlines() if x.strip()]
    return meta, cfg, snaps, actions


def leader_cycles(meta: dict, actions: list) -> dict:
    """snapshot name -> the leader's unloads ``(bundle, broker, destination)`` logged in that cycle
    (after the cycle's first line, before the next cycle's)."""
    cycles = [c for c in meta["cycles"]]
    out = {}
    for i, c in enumerate(cycles):
        if not c.get("snapshot"):
            continue
        end = cycles[i + 1]["time"] if i + 1 < len(cycles) else float("inf")
        out[c["snapshot"]] = sorted((a["bundle"], a["broker"], a["destination"]) for a in actions
                                    if c["time"] <= a["time"] < end)
    return out


def compare_run(run: Path, seed: int = 0) -> dict:
    meta, cfg, snaps, actions = load_run(run)
    lm, cycles, warnings = replay_timeline(snaps, cfg, seed)
    ag = compare_timeline(snaps, cycles, source=str(run), strategy=lm.shedding.name)
    led = leader_cycles(meta, actions)
    inputs = {c["snapshot"]: c.get("inputs", {}) for c in meta["cycles"] if c.get("snapshot")}
    rows = []
    for snap, cyc in zip(snaps, cycles):
        name = Path(snap.source).name
        eng = sorted((u.bundle, u.broker, u.destination) for u in cyc.unloads)
        real = led.get(name, [])
        rows.append({"snapshot": name, "leader": real, "engine": eng,
                     "bundles_match": sorted(x[:2] for x in real) == sorted(x[:2] for x in eng),
                     "exact": real == eng, "inputs": inputs.get(name, {})})
    acted = [r for r in rows if r["leader"] or r["engine"]]
    return {"run": str(run), "scenario": meta["scenario"], "title": meta["title"], "strategy": lm.shedding.name,
            "placement": lm.placement.name, "snapshots": len(snaps), "leader_unloads": len(actions),
            "cycles": rows, "cycles_with_unloads": len(acted),
            "cycles_exact": sum(r["exact"] for r in rows), "agreement": ag.metrics, "agreement_obj": ag,
            "warnings": warnings}


def summary_text(res: dict) -> str:
    from engine.agreement import agreement_text

    lines = [f"{res['run']}: {res['title']} ({res['snapshots']} leader cycles, {res['leader_unloads']} unloads "
             f"logged by the leader)",
             f"cycles where engine and leader did exactly the same: {res['cycles_exact']} of {len(res['cycles'])}"]
    for r in res["cycles"]:
        if r["leader"] or r["engine"]:
            lines.append(f"  {r['snapshot']}: leader {r['leader']} | engine {r['engine']}"
                         + ("" if r["exact"] else "   <- differs"))
        unmatched = sorted(b for b, how in r["inputs"].items() if how == "no-match")
        if unmatched:
            lines.append(f"  {r['snapshot']}: no recorded report of {', '.join(unmatched)} prints the usage "
                         "the leader printed: the snapshot is not what the leader read")
    lines.append(agreement_text(res["agreement_obj"]))
    return "\n".join(lines)


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


def markdown_table(results: list) -> str:
    """One row per run: the README's table."""
    rows = ["| run | leader cycles | leader unloads | engine unloads | cycles exact | agreement (interval, bundle) "
            "| bundle precision / recall |", "|---|---|---|---|---|---|---|"]
    for r in results:
        m = r["agreement"]
        rows.append(f"| `{Path(r['run']).name}` ({r['title']}) | {r['snapshots']} | {r['leader_unloads']} "
                    f"| {sum(len(c['engine']) for c in r['cycles'])} | {r['cycles_exact']} of {len(r['cycles'])} "
                    f"| {_pct(m['agreement'])} | {_pct(m['bundle_precision'])} / {_pct(m['bundle_recall'])} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    md = "--markdown" in args
    args = [a for a in args if a != "--markdown"]
    if not args:
        print("usage: python -m realcluster.compare [--markdown] RUN_DIR...", file=sys.stderr)
        return 2
    results = [compare_run(Path(a)) for a in args]
    if md:
        print(markdown_table(results))
        return 0
    for r in results:
        print(summary_text(r))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
