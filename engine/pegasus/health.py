"""Partition health (``partition_health_status``) and the ``[healthy]`` summary of ``app -d``."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HEALTHY",
    "WRITABLE_ILL",
    "UNWRITABLE",
    "UNREADABLE",
    "DEAD",
    "min_2pc_replica_count",
    "partition_health",
    "HealthSummary",
    "table_health",
]

HEALTHY = "HEALTHY"
WRITABLE_ILL = "WRITABLE_ILL"
UNWRITABLE = "UNWRITABLE"
UNREADABLE = "UNREADABLE"
DEAD = "DEAD"


def min_2pc_replica_count(max_replica_count: int, flag: int = 2) -> int:
    """``app_mutation_2pc_min_replica_count``: replicas needed for a write.

    Parameters
    ----------
    max_replica_count : int
    flag : int
        ``[replication] mutation_2pc_min_replica_count`` (default 2); ``<= 0`` derives it.

    Examples
    --------
    >>> min_2pc_replica_count(3), min_2pc_replica_count(5, 0), min_2pc_replica_count(2, 0)
    (2, 3, 1)
    """
    if flag > 0:
        return flag
    return 1 if max_replica_count <= 2 else max_replica_count // 2 + 1


def partition_health(has_primary: bool, secondaries: int, max_replica_count: int,
                     min2pc_flag: int = 2) -> str:
    """Health of one partition (``meta_data.h partition_health_status``).

    Examples
    --------
    >>> partition_health(True, 2, 3), partition_health(True, 1, 3), partition_health(True, 0, 3)
    ('HEALTHY', 'WRITABLE_ILL', 'UNWRITABLE')
    >>> partition_health(False, 1, 3), partition_health(False, 0, 3)
    ('UNREADABLE', 'DEAD')
    """
    if not has_primary:
        return UNREADABLE if secondaries else DEAD
    n = 1 + secondaries
    if n < min_2pc_replica_count(max_replica_count, min2pc_flag):
        return UNWRITABLE
    if n < max_replica_count:
        return WRITABLE_ILL
    return HEALTHY


@dataclass(frozen=True)
class HealthSummary:
    """The ``[healthy]`` section of ``app NAME -d`` for one table (or summed over tables).

    ``write_unhealthy`` = no primary or fewer than 2 replicas; ``read_unhealthy`` = no primary.
    ``by_status`` counts :func:`partition_health` statuses.
    """

    table: str
    partition_count: int
    fully_healthy: int
    unhealthy: int
    write_unhealthy: int
    read_unhealthy: int
    by_status: tuple = ()

    def to_json(self) -> dict:
        return {
            "table": self.table,
            "partition_count": self.partition_count,
            "fully_healthy_partition_count": self.fully_healthy,
            "unhealthy_partition_count": self.unhealthy,
            "write_unhealthy_partition_count": self.write_unhealthy,
            "read_unhealthy_partition_count": self.read_unhealthy,
            "by_status": dict(self.by_status),
        }


def table_health(name: str, partitions, max_replica_count: int, min2pc_flag: int = 2) -> HealthSummary:
    """Summarise ``partitions`` (objects with ``primary`` and ``secondaries``) like ``app -d``."""
    full = write_bad = read_bad = 0
    counts = {s: 0 for s in (HEALTHY, WRITABLE_ILL, UNWRITABLE, UNREADABLE, DEAD)}
    n = 0
    for p in partitions:
        n += 1
        rc = (1 if p.primary else 0) + len(p.secondaries)
        if p.primary and rc >= max_replica_count:
            full += 1
        if not p.primary or rc < 2:
            write_bad += 1
        if not p.primary:
            read_bad += 1
        counts[partition_health(bool(p.primary), len(p.secondaries), max_replica_count,
                                min2pc_flag)] += 1
    return HealthSummary(name, n, full, n - full, write_bad, read_bad, tuple(counts.items()))
