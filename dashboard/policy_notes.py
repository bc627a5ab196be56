"""What the cluster's own policies did to a placement, in words (the Tuner's decision card).

Pure functions of engine results: each filter step of a placement may carry ``reasons`` (broker ->
why a namespace isolation policy, an anti-affinity group or a failure domain removed it; see
:mod:`engine.policies`). A removal reads "broker-7 excluded: namespace tenant/ns is isolated by
policy `p` to primary brokers `broker-[0-3].*` ...".
"""
from __future__ import annotations

from itertools import islice

from engine.policies import policies_of

__all__ = ["policy_steps", "policy_lines", "policy_summary", "cycle_placements", "placements_policy_text"]


def _policy_filters(decision) -> list:
    """``[(step name, reasons)]``: the steps of ``decision`` that carry policy reasons (broker -> why), or
    that name a policy (an isolation policy that kept every broker is still shown)."""
    if decision is None:
        return []
    out = []
    for f in decision.filters or []:
        reasons = getattr(f, "reasons", None) or {}
        named = any(w in f.name for w in ("isolation", "anti-affinity", "shared brokers", "failure domain"))
        if reasons or named:
            out.append((f.name, reasons))
    return out


def policy_steps(decision) -> list:
    """``[(step name, [line, ...])]`` for the steps of ``decision`` that carry policy reasons, or that
    name a policy (an isolation policy that kept every broker is still shown)."""
    return [(name, [f"{b} excluded: {why}" for b, why in reasons.items()])
            for name, reasons in _policy_filters(decision)]


def policy_lines(decision) -> list:
    """Every "excluded" line of a placement, in step order."""
    return [ln for _, lines in policy_steps(decision) for ln in lines]


def cycle_placements(cycle) -> list:
    """``[(bundle, PlacementDecision)]`` of a shedding cycle, in the order the leader placed them (each
    placement once)."""
    out, seen = [], set()
    for u in list(getattr(cycle, "unloads", None) or []) + list(getattr(cycle, "processed", None) or []):
        dec = getattr(u, "placement", None)
        if dec is None or id(dec) in seen:
            continue
        seen.add(id(dec))
        out.append((u.bundle, dec))
    return out


def placements_policy_text(placements, limit: int = 20, per_step: int = 8) -> str:
    """Every placement's policy steps as one text block (one line each; the card shows it with
    ``white-space: pre-line``): the bundle and its destination, each policy step, the brokers it excluded
    and why. Bounded: the first ``limit`` placements ("… and N more placements") and ``per_step``
    exclusions per step ("… N more excluded"), so a cycle of hundreds of unloads on 1,000 brokers stays
    a few KB and the slider release builds one component, not one per line."""
    lines = []
    for bundle, dec in placements[:limit]:
        lines.append(f"{bundle} → {getattr(dec, 'broker', None) or '—'}")
        steps = _policy_filters(dec)
        if not steps:
            lines.append("   no policy step")
        for name, reasons in steps:  # only the shown exclusions become text (1,000 brokers' reasons do not)
            lines.append(f"   • {name}")
            lines += [f"      ✗ {b} excluded: {why}" for b, why in islice(reasons.items(), per_step)]
            if len(reasons) > per_step:
                lines.append(f"      … {len(reasons) - per_step} more excluded")
    if len(placements) > limit:
        lines.append(f"… and {len(placements) - limit} more placements (the report lists everything)")
    return "\n".join(lines)


def policy_summary(ld) -> str | None:
    """One line naming the policies a snapshot carries, or ``None``."""
    cp = policies_of(ld)
    return None if cp is None else f"Cluster policies: {cp.summary()}"
