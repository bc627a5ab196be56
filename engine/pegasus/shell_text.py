"""Write a snapshot the way the Pegasus shell prints it (``app NAME -d``, ``nodes -d``).

The inverse of :func:`engine.pegasus.parse.parse_snapshot_text`: used to export a planned state
as text an operator can diff against the real shell output, and to build test inputs. Layout of
``table_printer`` (reference §6): a ``[name]`` line, columns padded to their widest cell + 2
(numbers right-aligned in ``nodes -d``), ``key : value`` rows for key/value sections, a blank
line after each section.
"""
from __future__ import annotations

from .model import Snapshot, Table

__all__ = ["format_app_detail", "format_nodes_detail", "format_snapshot_text"]


def _table(name: str, rows: list, right: set = frozenset()) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    out = [f"[{name}]"]
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            w = widths[i] + (2 if i < len(r) - 1 else 0)
            s = str(c)
            if i in right:
                s = s.rjust(widths[i]) + " " * (w - widths[i])
            else:
                s = s.ljust(w)
            cells.append(s)
        out.append("".join(cells).rstrip())
    return "\n".join(out) + "\n\n"


def _kv(name: str, pairs: list) -> str:
    w = max(len(k) for k, _ in pairs)
    return f"[{name}]\n" + "".join(f"{k.ljust(w)} : {v}\n" for k, v in pairs) + "\n"


def format_app_detail(table: Table) -> str:
    """``app NAME -d`` for one table."""
    out = _kv("parameters", [("app_name", table.app_name), ("detailed", "true")])
    out += _kv("general", [("app_name", table.app_name), ("app_id", table.app_id),
                           ("partition_count", table.partition_count),
                           ("max_replica_count", table.max_replica_count)])
    rows = [("pidx", "ballot", "replica_count", "primary", "secondaries")]
    per: dict = {}
    for p in table.partitions:
        rows.append((p.pidx, p.ballot, f"{p.replica_count}/{table.max_replica_count}",
                     str(p.primary) if p.primary else "-",
                     "[" + ",".join(str(s) for s in p.secondaries) + "]"))
        if p.primary:
            per.setdefault(p.primary, [0, 0])[0] += 1
        for s in p.secondaries:
            per.setdefault(s, [0, 0])[1] += 1
    out += _table("replicas", rows)
    nrows = [("node", "primary", "secondary", "total")]
    tp = ts = 0
    for hp in sorted(per):
        a, b = per[hp]
        tp, ts = tp + a, ts + b
        nrows.append((str(hp), a, b, a + b))
    nrows.append(("", tp, ts, tp + ts))
    out += _table("nodes", nrows)
    full = sum(1 for p in table.partitions if p.primary and p.replica_count >= table.max_replica_count)
    wbad = sum(1 for p in table.partitions if not p.primary or p.replica_count < 2)
    rbad = sum(1 for p in table.partitions if not p.primary)
    out += _kv("healthy", [("fully_healthy_partition_count", full),
                           ("unhealthy_partition_count", table.partition_count - full),
                           ("write_unhealthy_partition_count", wbad),
                           ("read_unhealthy_partition_count", rbad)])
    return out


def format_nodes_detail(snap: Snapshot) -> str:
    """``nodes -d``: every node with its status and replica counts over the snapshot's tables."""
    per = {n.address: [0, 0] for n in snap.nodes}
    for t in snap.tables:
        for p in t.partitions:
            if p.primary:
                per[p.primary][0] += 1
            for s in p.secondaries:
                per[s][1] += 1
    rows = [("address", "status", "replica_count", "primary_count", "secondary_count")]
    for n in snap.nodes:
        a, b = per[n.address]
        rows.append((str(n.address), "ALIVE" if n.alive else "UNALIVE", a + b, a, b))
    out = _table("details", rows, right={2, 3, 4})
    alive = sum(1 for n in snap.nodes if n.alive)
    out += _kv("summary", [("total_node_count", len(snap.nodes)), ("alive_node_count", alive),
                           ("unalive_node_count", len(snap.nodes) - alive)])
    return out


def format_snapshot_text(snap: Snapshot, with_nodes: bool = True) -> str:
    """``nodes -d`` (optional) followed by ``app NAME -d`` of every table."""
    parts = [format_nodes_detail(snap)] if with_nodes else []
    parts += [format_app_detail(t) for t in snap.tables]
    return "".join(parts)
