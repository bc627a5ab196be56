"""What the cluster's own policies did to a placement, in words (the Tuner's decision card).

Pure functions of engine results: each filter step of a placement may carry ``reasons`` (broker ->
why a namespace isolation policy, an anti-affinity group or a failure domain removed it; see
:mod:`engine.policies`). A removal reads "broker-7 excluded: namespace tenant/ns is isolated by
policy `p` to primary brokers `broker-[0-3].*` ...".
"""
from __future__ import annotations

from engine.policies import policies_of

__all__ = ["policy_steps", "policy_lines", "policy_summary"]


def policy_steps(decision) -> list:
    """``[(step name, [line, ...])]`` for the steps of ``decision`` that carry policy reasons, or that
    name a policy (an isolation policy that kept every broker is still shown)."""
    if decision is None:
        return []
    out = []
    for f in decision.filters or []:
        reasons = getattr(f, "reasons", None) or {}
        named = any(w in f.name for w in ("isolation", "anti-affinity", "shared brokers", "failure domain"))
        if not reasons and not named:
            continue
        out.append((f.name, [f"{b} excluded: {why}" for b, why in reasons.items()]))
    return out


def policy_lines(decision) -> list:
    """Every "excluded" line of a placement, in step order."""
    return [ln for _, lines in policy_steps(decision) for ln in lines]


def policy_summary(ld) -> str | None:
    """One line naming the policies a snapshot carries, or ``None``."""
    cp = policies_of(ld)
    return None if cp is None else f"Cluster policies: {cp.summary()}"
