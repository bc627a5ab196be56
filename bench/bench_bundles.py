"""Benchmark: assigning topics to 4,096 bundles (CRC-32 of each full name + vectorised lookup).

Budget (design.md): 1,000,000 topics → 4,096 bundles in ≤ 2 s. Prints a table; never asserts.
Run: ``.venv/bin/python bench/bench_bundles.py``.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.bundles import assign_bundles, build_layout, initial_boundaries  # noqa: E402

BUNDLES = 4096
SIZES = [(10_000, 7, None), (100_000, 5, None), (1_000_000, 3, 2.0)]


def names_for(n: int) -> list[str]:
    # 1,000 partitioned topics of n/1000 partitions each, in one namespace (not timed)
    per = max(1, n // 1000)
    return [f"persistent://bench/ns/topic-{i // per}-partition-{i % per}" for i in range(n)]


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    b = initial_boundaries(BUNDLES)
    rows = []
    for n, repeat, budget in SIZES:
        names = names_for(n)
        t_assign = timed(lambda: assign_bundles(names, b), repeat)
        t_layout = timed(lambda: build_layout(names, b).counts, repeat)
        rows.append((n, t_assign, t_layout, budget))
    print(f"assign topics to {BUNDLES:,} bundles (median of repeats; CRC-32 + searchsorted)")
    print(f"{'topics':>10}  {'assign_bundles':>14}  {'build_layout+counts':>19}  {'budget':>7}  verdict")
    for n, ta, tl, budget in rows:
        verdict = "" if budget is None else ("ok" if ta <= budget else "OVER BUDGET")
        bud = "" if budget is None else f"{budget:.1f} s"
        print(f"{n:>10,}  {ta:>12.3f} s  {tl:>17.3f} s  {bud:>7}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
