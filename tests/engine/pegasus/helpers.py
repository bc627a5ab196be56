"""Small hand-built Pegasus clusters for the tests.

Nodes are ``n1``..``nK`` = ``10.0.0.1:34801``..; a partition is written ``"1>2,3"`` (primary on
n1, secondaries on n2 and n3), ``"-"`` for no replica, ``">2,3"`` for no primary.
"""
from __future__ import annotations

from engine.pegasus.model import DroppedReplica, HostPort, Node, Partition, Table
from engine.pegasus.parse import build_snapshot
from engine.pegasus.state import ClusterState


def n(i: int) -> HostPort:
    return HostPort(f"10.0.0.{i}", 34801)


def part(pidx: int, spec: str, disks: dict | None = None, **kw) -> Partition:
    spec = spec.strip()
    pri = None
    secs: tuple = ()
    if spec != "-":
        p, _, s = spec.partition(">")
        pri = n(int(p)) if p else None
        secs = tuple(n(int(x)) for x in s.split(",") if x)
    pairs = tuple((n(k), v) for k, v in (disks or {}).items())
    return Partition(pidx, pri, secs, kw.pop("ballot", 3), disks=pairs, **kw)


def table(app_id: int, name: str, specs, max_rc: int = 3, disks=None, **kw) -> Table:
    disks = disks or {}
    parts = tuple(part(i, s, disks.get(i)) if isinstance(s, str) else s for i, s in enumerate(specs))
    return Table(app_id, name, len(parts), parts, max_rc, **kw)


def cluster(tables, nodes: int, dead=(), node_disks=None, order=None, now_ms: int = 0):
    """A snapshot with nodes n1..n``nodes`` (``dead``: node numbers that are UNALIVE)."""
    node_disks = node_disks or {}
    ns = [Node(n(i), i not in dead, tuple(node_disks.get(i, ("default",)))) for i in range(1, nodes + 1)]
    ins = [n(i) for i in order] if order else None
    return build_snapshot(tables, ns, now_ms=now_ms, insertion_order=ins)


def state(snap) -> ClusterState:
    return ClusterState(snap)


def dropped(i, time_ms=0, ballot=-1, lcd=-1, lpd=-1) -> DroppedReplica:
    return DroppedReplica(n(i), time_ms, ballot, lcd, lpd)


def moves(proposals):
    """``[(type, "app.pidx", from_node_no, to_node_no)]`` with node numbers (None if absent)."""
    def no(hp):
        return int(hp.host.rsplit(".", 1)[1]) if hp else None
    return [(p.type, str(p.gpid), no(p.from_node), no(p.to_node)) for p in proposals]
