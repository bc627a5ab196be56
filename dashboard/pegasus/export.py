"""The Pegasus plan as files: the proposal list as CSV, the whole plan as JSON (the CLI's contract)."""
from __future__ import annotations

import io
import json

__all__ = ["plan_csv", "plan_json"]


def plan_csv(plan) -> str:
    """The proposal list as CSV (step, round, type, gpid, table, from, to, stage, reason)."""
    buf = io.StringIO()
    plan.proposals_frame().to_csv(buf, index=False)
    return buf.getvalue()


def plan_json(plan) -> str:
    """The whole plan as JSON (the contract of ``python -m engine pegasus --json``)."""
    return json.dumps(plan.to_json(), indent=2, allow_nan=False)
