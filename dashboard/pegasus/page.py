"""What the Pegasus page draws, one call per panel: the plan of a source (summary, tables, slider range),
one step of it (counts, skew line), and the plan as a download."""
from __future__ import annotations

from dataclasses import dataclass

from .export import plan_csv, plan_json
from .plan import PageOptions, plan_for
from .sources import source_digest
from .views import health_rows, skew_points, step_rows

__all__ = ["PlanView", "StepView", "plan_view", "step_view", "plan_file"]


@dataclass(frozen=True)
class PlanView:
    """The plan panel: the plan, its health rows, the table picker's options, the warnings and its length."""

    plan: object
    health: list
    table_options: list
    tables: list
    warnings: list
    steps: int


@dataclass(frozen=True)
class StepView:
    """One step of the plan: the step (clamped), the plan's length, what is shown (cluster or a table),
    the per-node rows at that step and the skew line."""

    plan: object
    step: int
    steps: int
    title: str
    rows: list
    skew: list


def plan_view(source: dict, options: PageOptions) -> PlanView:
    """The plan of a source store value under the page's toggles (raises :class:`~engine.errors.InputError`)."""
    plan = plan_for(source, options)
    names = [t.app_name for t in plan.snapshot.tables]
    table_options = [{"label": "cluster", "value": ""}] + [{"label": f"table {n}", "value": n} for n in names]
    warnings = (source or {}).get("warnings") or list(plan.snapshot.warnings)
    return PlanView(plan, health_rows(plan), table_options, names, warnings, len(plan.proposals))


def step_view(source: dict, options: PageOptions, step, table: str | None) -> StepView:
    """The plan at ``step`` proposals (clamped to the plan), for one table or the cluster (``table`` None)."""
    plan = plan_for(source, options)
    steps = len(plan.proposals)
    step = max(0, min(int(step or 0), steps))
    title = f"table {table}" if table else "cluster"
    return StepView(plan, step, steps, title, step_rows(plan, step, table), skew_points(plan, table))


def plan_file(source: dict, options: PageOptions, fmt: str) -> tuple[str, str]:
    """``(text, file name)`` of the plan: ``fmt`` ``"json"`` (the CLI's contract) or ``"csv"`` (the proposals)."""
    plan = plan_for(source, options)
    stem = f"pegasus-plan-{source_digest(source)}"
    if fmt == "json":
        return plan_json(plan), f"{stem}.json"
    return plan_csv(plan), f"{stem}.csv"
