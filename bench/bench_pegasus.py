"""Benchmark: planning a 100-node, 10-table, 4096-partition Pegasus cluster.

Prints a table (what, size, median wall time of a few runs, budget). The issue sets no budget,
so the budget column shows "—". Not a test: nothing here asserts on time.

Run: ``.venv/bin/python bench/bench_pegasus.py [--repeat N]``
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.pegasus import (HostPort, Node, Partition, PegasusConfig, Table, build_snapshot,  # noqa: E402
                            check, parse_snapshot_text, run_plan)
from engine.pegasus.shell_text import format_snapshot_text  # noqa: E402
from engine.pegasus.state import ClusterState  # noqa: E402


def make_cluster(nodes=100, tables=10, partitions=4096, seed=2024):
    """Skewed random placement: 3 replicas per partition, the last 10 nodes just added (empty)."""
    rng = np.random.default_rng(seed)
    hosts = [HostPort(f"10.{i // 250}.{(i // 50) % 5}.{i % 250 + 1}", 34801) for i in range(nodes)]
    hosting = hosts[: nodes - 10]
    sizes = [partitions // tables + (1 if i < partitions % tables else 0) for i in range(tables)]
    out = []
    for t, size in enumerate(sizes):
        w = rng.random(len(hosting)) ** 3 + 0.02
        w /= w.sum()
        parts = []
        for p in range(size):
            idx = rng.choice(len(hosting), size=3, replace=False, p=w)
            m = [hosting[int(i)] for i in idx]
            parts.append(Partition(p, m[0], (m[1], m[2]), 3))
        out.append(Table(t + 1, f"table{t + 1}", size, tuple(parts)))
    return build_snapshot(out, [Node(h) for h in hosts], source="bench")


def timed(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    snap = make_cluster()
    text = format_snapshot_text(snap)
    size = f"{len(snap.nodes)} nodes, {len(snap.tables)} tables, {snap.partition_total} partitions"
    rows = []
    t, _ = timed(lambda: parse_snapshot_text(text, "bench.txt"), args.repeat)
    rows.append(("parse app -d / nodes -d text", f"{len(text) // 1024} KB", t, ""))
    t, oc = timed(lambda: check(ClusterState(snap)), args.repeat)
    rows.append(("balance checker (one count)", size, t, f"total={oc.total}"))
    for label, cfg in (("plan, per-table balance", PegasusConfig()),
                       ("plan, cluster balance", PegasusConfig(balance_cluster=True))):
        t, plan = timed(lambda: run_plan(snap, cfg), args.repeat)
        bal = plan.operation_count_plan
        rows.append((label, size, t, f"{len(plan.rounds)} rounds, {bal.total} proposals"))
    w = max(len(r[0]) for r in rows)
    ws = max(len(r[1]) for r in rows)
    print(f"{'what':<{w}}  {'size':<{ws}}  {'median':>9}  {'budget':>6}  result")
    for what, sz, t, note in rows:
        print(f"{what:<{w}}  {sz:<{ws}}  {t * 1000:>7.0f}ms  {'—':>6}  {note}")


if __name__ == "__main__":
    main()
