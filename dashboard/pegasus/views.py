"""What the Pegasus page shows of a plan: per-node counts at a step, the skew line, health per table."""
from __future__ import annotations

from engine.pegasus import skews

__all__ = ["step_rows", "skew_points", "health_rows"]


def step_rows(plan, step: int, table: str | None = None) -> list:
    """Per node: primaries / secondaries / totals before and after ``step`` proposals.

    ``table`` = a table name, or ``None`` for the cluster (sum over tables).
    """
    before, after = plan.initial_counts, plan.counts_at(step)
    names = plan.table_names()
    app_ids = [a for a in before if table is None or names[a] == table]
    rows = []
    for hp in sorted({hp for a in app_ids for hp in before[a]}):
        pb = sum(before[a][hp][0] for a in app_ids)
        sb = sum(before[a][hp][1] for a in app_ids)
        pa = sum(after[a][hp][0] for a in app_ids)
        sa = sum(after[a][hp][1] for a in app_ids)
        rows.append({"node": str(hp), "primary_before": pb, "secondary_before": sb,
                     "total_before": pb + sb, "primary": pa, "secondary": sa, "total": pa + sa})
    return rows


def skew_points(plan, table: str | None = None) -> list:
    """``[{"step", "primary", "secondary", "total"}]`` at the start and after every round."""
    names = plan.table_names()
    out, step = [], 0

    def point(counts, step):
        s = skews(counts, plan.alive_nodes)
        if table is None:
            v = s["cluster"]
        else:
            app_id = next(a for a, nm in names.items() if nm == table)
            v = s["tables"][app_id]
        return {"step": step, **v}

    out.append(point(plan.initial_counts, 0))
    for r in plan.rounds:
        step += len(r.proposals)
        if r.proposals:
            out.append(point(r.counts, step))
    return out


def health_rows(plan) -> list:
    """Health per table, before and after the plan (the ``[healthy]`` section of ``app -d``)."""
    rows = []
    for b, a in zip(plan.health("before"), plan.health("after")):
        rows.append({"table": b.table, "partitions": b.partition_count,
                     "fully_healthy": (b.fully_healthy, a.fully_healthy),
                     "unhealthy": (b.unhealthy, a.unhealthy),
                     "write_unhealthy": (b.write_unhealthy, a.write_unhealthy),
                     "read_unhealthy": (b.read_unhealthy, a.read_unhealthy)})
    return rows
