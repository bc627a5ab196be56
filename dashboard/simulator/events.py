"""The event log of A and B: the kinds present with their counts, and the rows filtered by kind and run."""
from __future__ import annotations

import math
from typing import Mapping

import pandas as pd

from .runs import RunData

__all__ = ["DEFAULT_KINDS", "event_kinds", "event_rows"]

#: event kinds shown by default in the log (checks and lookups are many; they are one click away)
DEFAULT_KINDS = ["unload", "unload-skipped", "broker-added", "broker-removed", "leader-change", "config-change",
                 "cpu", "split"]


def event_kinds(runs: Mapping[str, RunData]) -> list[dict]:
    """Dropdown options of the kinds present, with their counts per run."""
    counts: dict = {}
    for s, r in runs.items():
        for k, n in r.events["kind"].value_counts().items():
            counts.setdefault(k, {})[s] = int(n)
    order = DEFAULT_KINDS + ["check", "assign"]
    kinds = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return [{"label": f"{k} (" + " / ".join(f"{s.upper()} {counts[k].get(s, 0)}" for s in runs) + ")", "value": k}
            for k in kinds]


def event_rows(runs: Mapping[str, RunData], kinds=None, which: str = "both", limit: int | None = 200) -> tuple[list, int]:
    """Rows of the event log (``run, minute, kind, broker, destination, bundle, reason``, and the decision's
    ``label`` and ``code`` — Pulsar's ``UnloadDecision`` label and reason, as the engine gives them; empty
    for other events) and the total before ``limit``; ordered by minute, A before B within a minute."""
    frames = []
    for s, r in runs.items():
        if which in ("a", "b") and s != which:
            continue
        ev = r.events
        if kinds:
            ev = ev[ev["kind"].isin(list(kinds))]
        if ev.empty:
            continue
        f = ev[["minute", "kind", "broker", "destination", "bundle", "reason", "placement", "random",
                "bad_placement"] + [c for c in ("label", "reason_code") if c in ev]].copy()
        f.insert(0, "run", s.upper())
        frames.append(f)
    if not frames:
        return [], 0
    df = pd.concat(frames, ignore_index=True).sort_values(["minute", "run"], kind="stable")
    total = len(df)
    if limit is not None:
        df = df.head(limit)
    rows = []
    for r in df.itertuples(index=False):
        rows.append({"run": r.run, "minute": int(r.minute), "kind": r.kind, "broker": _s(r.broker),
                     "destination": _s(r.destination), "bundle": _s(r.bundle), "reason": _s(r.reason),
                     "placement": _s(r.placement), "random": bool(r.random), "bad": bool(r.bad_placement),
                     "label": _s(getattr(r, "label", "")), "code": _s(getattr(r, "reason_code", ""))})
    return rows, total


def _s(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)
