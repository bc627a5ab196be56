"""Pegasus cluster snapshot: tables, partitions, primaries/secondaries, nodes, disks, last drops.

The snapshot is an immutable value (frozen dataclasses, tuples). The balancer works on a mutable
copy (:class:`engine.pegasus.state.ClusterState`); nothing here changes after construction.

Identifiers follow the reference (§1.1): a :class:`Gpid` orders by ``(app_id, pidx)``, a
:class:`HostPort` by ``(host, port)`` with the host compared as a string and the port as a number.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

__all__ = [
    "HostPort",
    "Gpid",
    "DroppedReplica",
    "Partition",
    "Table",
    "Node",
    "Snapshot",
    "DEFAULT_DISK",
    "APP_STATUSES",
    "default_insertion_order",
]

#: disk tag used when the input names none (one data_dir per node)
DEFAULT_DISK = "default"

#: ``app_status`` values (``AS_`` prefix as in the IDL); only ``AS_AVAILABLE`` tables are balanced
APP_STATUSES = ("AS_AVAILABLE", "AS_CREATING", "AS_DROPPING", "AS_DROPPED", "AS_RECALLING")


class HostPort(NamedTuple):
    """A replica server address ``host:port`` (IPv4 or host name).

    Examples
    --------
    >>> HostPort.parse("10.0.0.1:34801")
    HostPort(host='10.0.0.1', port=34801)
    >>> str(HostPort("n1", 9)) < str(HostPort("n1", 10)), HostPort("n1", 9) < HostPort("n1", 10)
    (False, True)
    """

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> "HostPort":
        """Parse ``host:port``; :class:`ValueError` with a readable message when malformed."""
        if not isinstance(text, str):
            raise ValueError(f"address must be a string 'host:port', got {type(text).__name__}")
        s = text.strip()
        host, sep, port = s.rpartition(":")
        if not sep or not host or not port:
            raise ValueError(f"address {s!r} is not 'host:port'")
        if any(c.isspace() for c in host) or "[" in host or "]" in host or "," in host:
            raise ValueError(f"address {s!r} has an invalid host")
        if not port.isdigit() or not (0 < int(port) <= 65535):
            raise ValueError(f"address {s!r} has an invalid port (1..65535)")
        return cls(host, int(port))


class Gpid(NamedTuple):
    """Partition id ``(app_id, partition_index)``; printed as ``app_id.pidx``."""

    app_id: int
    pidx: int

    def __str__(self) -> str:
        return f"{self.app_id}.{self.pidx}"


@dataclass(frozen=True)
class DroppedReplica:
    """An entry of ``config_context.dropped`` (a replica that left the partition).

    ``time_ms == 0`` means "unknown time"; ``ballot == -1`` means "unknown ballot".
    """

    node: HostPort
    time_ms: int = 0
    ballot: int = -1
    last_committed_decree: int = -1
    last_prepared_decree: int = -1

    def sort_key(self):
        return (self.time_ms, self.ballot, self.last_committed_decree, self.last_prepared_decree)


@dataclass(frozen=True)
class Partition:
    """One ``partition_configuration`` plus its disk tags (the ``serving`` list).

    Attributes
    ----------
    pidx : int
        Partition index.
    primary : HostPort or None
        The primary (``None`` = no primary).
    secondaries : tuple of HostPort
        In configuration order.
    ballot : int
        ``-1`` = invalid ballot (the meta server skips such a partition).
    last_drops : tuple of HostPort
        ``hp_last_drops``, newest last.
    last_committed_decree : int
    disks : tuple of (HostPort, str)
        Disk tag (data_dir) of each member's replica.
    dropped : tuple of DroppedReplica
        ``config_context.dropped``, sorted oldest first.
    """

    pidx: int
    primary: HostPort | None
    secondaries: tuple = ()
    ballot: int = 1
    last_drops: tuple = ()
    last_committed_decree: int = 0
    disks: tuple = ()
    dropped: tuple = ()

    @property
    def members(self) -> tuple:
        """Primary (if any) then secondaries."""
        return ((self.primary,) if self.primary else ()) + tuple(self.secondaries)

    @property
    def replica_count(self) -> int:
        return (1 if self.primary else 0) + len(self.secondaries)

    def disk_of(self, node: HostPort) -> str | None:
        """Disk tag of ``node``'s replica, ``None`` when unknown."""
        for hp, tag in self.disks:
            if hp == node:
                return tag
        return None


@dataclass(frozen=True)
class Table:
    """A table (``app_state``): its partitions and the flags the balancer looks at."""

    app_id: int
    app_name: str
    partition_count: int
    partitions: tuple
    max_replica_count: int = 3
    status: str = "AS_AVAILABLE"
    is_bulk_loading: bool = False
    splitting: bool = False

    @property
    def eligible(self) -> bool:
        """Balanced at all: available, not bulk-loading, not splitting (ignored list aside)."""
        return self.status == "AS_AVAILABLE" and not self.is_bulk_loading and not self.splitting


@dataclass(frozen=True)
class Node:
    """A replica server: address, liveness, data_dirs (disk tags)."""

    address: HostPort
    alive: bool = True
    disks: tuple = (DEFAULT_DISK,)
    has_collected_replicas: bool = True


@dataclass(frozen=True)
class Snapshot:
    """A cluster as the meta server sees it.

    Attributes
    ----------
    tables : tuple of Table
        Ascending ``app_id``.
    nodes : tuple of Node
        Every replica server (sorted by address).
    insertion_order : tuple of HostPort
        Order in which the meta server inserted the nodes into its node map (decides the node
        ids; see :func:`default_insertion_order`).
    now_ms : int
        Wall clock of the snapshot (for ``dropped`` times and ``assign_delay_ms``).
    source : str or None
        Where it came from (file name), for messages.
    warnings : tuple of str
        Things the parser noticed that do not stop the balancer.
    """

    tables: tuple
    nodes: tuple
    insertion_order: tuple = ()
    now_ms: int = 0
    source: str | None = None
    warnings: tuple = field(default=())

    def table(self, key) -> Table:
        """Table by app id or name (``KeyError`` when absent)."""
        for t in self.tables:
            if t.app_id == key or t.app_name == key:
                return t
        raise KeyError(key)

    def node(self, hp: HostPort) -> Node:
        for n in self.nodes:
            if n.address == hp:
                return n
        raise KeyError(hp)

    @property
    def partition_total(self) -> int:
        return sum(t.partition_count for t in self.tables)


def default_insertion_order(tables: Iterable[Table], nodes: Iterable[Node]) -> tuple:
    """Node-map insertion order of a meta server that just started on this state.

    ``initialize_node_state`` scans tables by ascending app id, partitions by index, the primary
    then the secondaries; nodes hosting nothing are inserted afterwards (first heartbeat), here in
    the order of ``nodes``.
    """
    seen: dict = {}
    for t in sorted(tables, key=lambda t: t.app_id):
        for p in t.partitions:
            for hp in p.members:
                seen.setdefault(hp, None)
    for n in nodes:
        seen.setdefault(n.address, None)
    return tuple(seen)
