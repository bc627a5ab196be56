"""``python -m oracle``: build check, campaigns and ``docs/fidelity.md``.

    python -m oracle campaign [--n N] [--lines 3.0,4.2] [--strategies bundle,...] [--seed S] [--out FILE]
        N cases per strategy per line through the engine and Pulsar's classes; writes the tallies (JSON) and
        exits 1 when a disagreement is not a listed departure (printing its shrunk input).
    python -m oracle merge FILE... [--out FILE]
        one campaign from campaigns of separate lines or strategies run apart (same N and seed): a line in
        several files gets the strategies of all of them (a later file's tally of a strategy wins).
    python -m oracle docs [--campaign FILE]
        regenerate docs/fidelity.md from a campaign's tallies.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from . import compare, fidelity, gen
from .jvm import Oracle
from .lines import available, classpath


def campaign(args) -> int:
    lines = available()
    if args.lines:
        lines = {k: v for k, v in lines.items() if k in args.lines.split(",")}
    strategies = tuple(args.strategies.split(",")) if args.strategies else gen.STRATEGIES
    unknown = [s for s in strategies if s not in gen.STRATEGIES]
    if unknown:
        print(f"campaign: unknown strategies {', '.join(unknown)} (known: {', '.join(gen.STRATEGIES)})",
              file=sys.stderr)
        return 2
    result = {"n": args.n, "seed": args.seed, "lines": {}}
    bad = 0
    for line, version in lines.items():
        if classpath(version) is None:
            print(f"line {line}: oracle not built (make oracle-build)", file=sys.stderr)
            result["lines"][line] = {"version": version, "error": "not built"}
            continue
        t0 = time.time()
        with Oracle(version, quick_jit=args.n <= 5000) as o:  # a long run: the server compiler pays
            tallies = compare.run(line, version, strategies, args.n, seed=args.seed, oracle=o,
                                  engine_version=version)
            entry = {"version": version, "strategies": {}}
            for s, t in tallies.items():
                deps = {}
                for name, (count, case, oa, ea) in t.departures.items():
                    small = compare.shrink(case, o, line, version, budget=60,
                                           departure=name)
                    deps[name] = {"count": count, "case": small, "oracle": o.ask([small])[0],
                                  "engine": compare.engine_side.answer(small, version)}
                unexpl = []
                for _, case, oa, ea in t.unexplained[:1]:
                    small = compare.shrink(case, o, line, version)
                    unexpl.append({"case": small, "oracle": o.ask([small])[0],
                                   "engine": compare.engine_side.answer(small, version)})
                    bad += 1
                entry["strategies"][s] = {"tried": t.tried, "agreed": t.agreed, "departures": deps,
                                          "unexplained": t.unexplained_count, "unexplained_examples": unexpl}
                print(f"line {line} {s}: {t.tried} tried, {t.agreed} agreed, "
                      f"{sum(d['count'] for d in deps.values())} listed departures, {t.unexplained_count} unexplained",
                      file=sys.stderr)
        entry["seconds"] = round(time.time() - t0, 1)
        result["lines"][line] = entry
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    for line, entry in result["lines"].items():
        for s, st in entry.get("strategies", {}).items():
            for ex in st["unexplained_examples"]:
                print(f"UNEXPLAINED {line} {s}: {json.dumps(ex)}")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m oracle")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("campaign")
    c.add_argument("--n", type=int, default=2000)
    c.add_argument("--lines", default="")
    c.add_argument("--strategies", default="")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", default=str(fidelity.CAMPAIGN))
    m = sub.add_parser("merge")
    m.add_argument("files", nargs="+")
    m.add_argument("--out", default=str(fidelity.CAMPAIGN))
    d = sub.add_parser("docs")
    d.add_argument("--campaign", default=str(fidelity.CAMPAIGN))
    args = p.parse_args(argv)
    if args.cmd == "campaign":
        return campaign(args)
    if args.cmd == "merge":
        parts = [json.loads(open(f).read()) for f in args.files]
        if len({(p["n"], p["seed"]) for p in parts}) != 1:
            print("merge: the campaigns differ in N or seed", file=sys.stderr)
            return 2
        merged = {"n": parts[0]["n"], "seed": parts[0]["seed"], "lines": {}}
        for p in parts:
            for line, entry in p["lines"].items():
                have = merged["lines"].get(line)
                if have is None or "strategies" not in have or "strategies" not in entry:
                    merged["lines"][line] = json.loads(json.dumps(entry))
                    continue
                have["strategies"].update(entry["strategies"])
                have["seconds"] = round(have.get("seconds", 0) + entry.get("seconds", 0), 1)
        with open(args.out, "w") as f:
            json.dump(merged, f, indent=1, sort_keys=True)
        return 0
    fidelity.write(json.loads(open(args.campaign).read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
