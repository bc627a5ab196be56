"""Seeded random Pegasus clusters for the invariant tests (not a test module itself)."""
from __future__ import annotations

import numpy as np

from engine.pegasus.model import DEFAULT_DISK, HostPort, Node, Partition, Table
from engine.pegasus.parse import build_snapshot


def random_snapshot(seed: int, max_nodes: int = 10, max_tables: int = 3, max_partitions: int = 24,
                    empty_nodes: bool = True, multi_disk: bool = True, healthy: bool = True):
    """A healthy (every partition fully replicated) random cluster, reproducible from ``seed``.

    Nodes get 1-3 disks, some nodes host nothing (just added), tables have skewed placements
    (a per-table weight per node) so that all balancer stages have work to do.
    """
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(3, max_nodes + 1))
    hosts = [HostPort(f"10.1.{int(rng.integers(0, 4))}.{i + 1}", int(rng.choice([34801, 34802])))
             for i in range(n_nodes)]
    hosts = list(dict.fromkeys(hosts))
    disks = {hp: (tuple(f"data{k}" for k in range(int(rng.integers(1, 4)))) if multi_disk
                  else (DEFAULT_DISK,)) for hp in hosts}
    n_empty = int(rng.integers(0, max(1, len(hosts) - 3))) if empty_nodes else 0
    hosting = hosts[: len(hosts) - n_empty] if len(hosts) - n_empty >= 3 else hosts
    tables = []
    for t in range(int(rng.integers(1, max_tables + 1))):
        max_rc = 3
        pcount = int(rng.integers(1, max_partitions + 1))
        weight = rng.random(len(hosting)) ** 2 + 0.05
        weight /= weight.sum()
        parts = []
        for pidx in range(pcount):
            members = rng.choice(len(hosting), size=max_rc, replace=False, p=weight)
            nodes = [hosting[int(i)] for i in members]
            pairs = tuple((hp, disks[hp][int(rng.integers(len(disks[hp])))]) for hp in nodes)
            parts.append(Partition(pidx, nodes[0], tuple(nodes[1:]), 3, (), 0, pairs))
        tables.append(Table(t + 1, f"t{t + 1}", pcount, tuple(parts), max_rc))
    return build_snapshot(tables, [Node(hp, True, disks[hp]) for hp in hosts])
