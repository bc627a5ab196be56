"""Field findings: wall time of each finding's runs (what ``python -m engine findings`` and its test cost).

Prints a table (finding, scenario, simulated minutes, median wall time of the runs its figures need,
per simulated minute). vivo's case is a simulated day of one-minute cycles (13 brokers, 180 bundles);
BIGO's production finding a month (5 brokers, 128 bundles).

Run: ``.venv/bin/python bench/bench_findings.py`` (about a minute; ``--repeat N``, default 1).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from engine.simulator.findings import FINDINGS, is_snapshot, run_finding  # noqa: E402
from engine.simulator.scenario import load_scenario  # noqa: E402
from engine.simulator.findings import finding_path  # noqa: E402


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 1
    rows, total = [], 0.0
    for f in FINDINGS.values():
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run_finding(f)
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        total += t
        minutes = 0 if is_snapshot(f) else load_scenario(finding_path(f)).minutes
        sides = len({fig.side for fig in f.figures})
        per = f"{1000 * t / (minutes * sides):.2f} ms" if minutes else "one cycle"
        rows.append((f.id, f.scenario, minutes, t, per))
    print(f"{'finding':36s} {'scenario':42s} {'minutes':>8s} {'wall':>8s} {'per sim. minute':>16s}")
    for fid, sc, m, t, per in rows:
        print(f"{fid:36s} {sc:42s} {m:8,d} {t:7.2f}s {per:>16s}")
    print(f"{'total':36s} {'':42s} {'':8s} {total:7.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
