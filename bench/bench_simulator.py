"""Simulation speed: 10, 100 and 1,000 brokers (100 bundles each) for one simulated hour and one day.

Prints a table (size, simulated span, median wall time, per simulated minute, budget). The budget of
``design.md``: 100 brokers × 10,000 bundles × 1 day of 1-minute cycles with AvgShedder in ≤ 10 s on a
2-core machine. The cluster is the shipped ``diurnal-100-brokers`` scenario scaled to N brokers
(N namespaces of 100 bundles, 400 topics each, a daily traffic cycle, BIGO's AvgShedder settings).

The second budget: 1,000 brokers × 100,000 bundles × 1 day in ≤ 60 s.

Run: ``.venv/bin/python bench/bench_simulator.py`` (about 2 minutes; ``--quick`` skips 1,000 × 1 day;
``--large`` runs only the 1,000-broker rows).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))

import rows as rows_out  # noqa: E402  (bench/rows.py: the one-table rows)

from engine.config import PRESETS  # noqa: E402
from engine.simulator import parse_scenario, simulate  # noqa: E402


def scenario(n_brokers: int, minutes: int):
    return parse_scenario({
        "name": f"bench-{n_brokers}", "minutes": minutes, "seed": 0,
        "config": {"loadBalancerDistributeBundlesEvenlyEnabled": False, "loadBalancerAutoBundleSplitEnabled": False},
        "brokers": [{"id": "10.1.{i}.10:8080", "count": n_brokers, "cores": 16, "nic_gbps": 25, "background_cpu": 6}],
        "cost": {"cpu_per_msg_in": 4.0e-6, "cpu_per_msg_out": 2.0e-6, "cpu_per_mib": 0.01},
        "noise": {"traffic": 0.03, "cpu": 1.0},
        "namespaces": [{"name": "tenant-{i}/events", "count": n_brokers, "bundles": 100, "owners": "random"}],
        "workloads": [{"name": "app-{i}", "count": n_brokers, "namespace": "tenant-{i}/events", "topic": "events",
                       "topics": 400, "rate": 60000, "msg_size": 1024, "subscriptions": 2, "skew": 1.0,
                       "producers": {"kind": "diurnal", "base": 1.0, "amplitude": 0.5, "peak": 840,
                                     "jitter": 120}}],
    }, source=f"bench-{n_brokers}")


def measure(n_brokers: int, minutes: int, repeat: int) -> tuple[float, dict]:
    sc = scenario(n_brokers, minutes)
    cfg = sc.lb_config(PRESETS["bigo-avgshedder"])
    times, res = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = simulate(sc, cfg)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res.summary


def main(argv=None) -> int:
    args = argv or sys.argv[1:]
    quick = "--quick" in args
    rows = []
    plan = [(10, 60, 3), (10, 1440, 3), (100, 60, 3), (100, 1440, 3), (1000, 60, 1)]
    if "--large" in args:
        plan = [(1000, 60, 1)]
    if not quick:
        plan.append((1000, 1440, 1))
    for nb, minutes, rep in plan:
        t, s = measure(nb, minutes, rep)
        budget = ""
        if nb == 100 and minutes == 1440:
            budget = f"<= 10 s: {'OK' if t <= 10 else 'OVER'}"
        if nb == 1000 and minutes == 1440:
            budget = f"<= 60 s: {'OK' if t <= 60 else 'OVER'}"
        rows.append((f"{nb} brokers x {nb * 100:,} bundles", "1 hour" if minutes == 60 else "1 day", rep, t,
                     t / minutes * 1000, s["unloads"], budget))
    print(f"simulator speed, AvgShedder (BIGO settings), 1-minute cycles, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    hdr = ("size", "span", "runs", "median s", "ms/minute", "unloads", "budget")
    print(f"{hdr[0]:<30} {hdr[1]:<7} {hdr[2]:>4} {hdr[3]:>9} {hdr[4]:>10} {hdr[5]:>8}  {hdr[6]}")
    for size, span, rep, t, per, unl, budget in rows:
        print(f"{size:<30} {span:<7} {rep:>4} {t:>9.2f} {per:>10.2f} {unl:>8}  {budget}")
        nb = int(size.split()[0])
        rows_out.emit("simulator", f"simulate AvgShedder (BIGO settings), {span}", f"{nb:,} x 100", t, "s",
                      budget=budget.split(":")[0], ok=None if not budget else budget.endswith("OK"),
                      note=f"1-minute cycles: {per:.2f} ms per simulated minute, {unl} unloads")
    if quick:
        print("(--quick: 1,000 brokers x 1 day skipped; it takes about 24 x the 1-hour time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
