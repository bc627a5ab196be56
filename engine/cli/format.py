"""Plain-text rendering of cycles and placements for the terminal."""
from __future__ import annotations

from ..results import Cycle, PlacementDecision, fmt_bytes, fmt_rate

__all__ = ["cycle_text", "placement_text"]


def cycle_text(c: Cycle, top: int = 12) -> str:
    sh = c.shedding
    lines = [f"cycle {c.cycle}" + (f" ({c.source})" if c.source else "") + (f" — {sh.strategy}" if sh else "")]
    if sh:
        unit = sh.score_unit
        if sh.lines:
            lines.append("  lines: " + ", ".join(f"{k} {v:,.2f}{'' if unit == '%' else ' '}{unit}"
                                               for k, v in sh.lines.items()))
        ranked = sorted(sh.scores.items(), key=lambda kv: -kv[1])
        shown = ranked[:top]
        lines.append("  scores: " + ", ".join(f"{b} {v:,.2f}" for b, v in shown)
                     + (f" ... ({len(ranked) - top} more)" if len(ranked) > top else ""))
        for p in sh.pairs:
            if p.reason:
                lines.append(f"  pair {p.low} / {p.high}: {p.reason}")
        for v in sh.verdicts:
            if v.status in ("over", "skipped") and v.reason:
                lines.append(f"  {v.broker}: {v.reason}")
        for n in sh.notes[:3]:
            lines.append(f"  note: {n}")
    for u in c.processed:
        how = ""
        if u.placement is not None:
            how = f" [{u.placement.strategy}{', random' if u.placement.random else ''}: {u.placement.reason}]"
        if u.skipped:
            lines.append(f"  skipped {u.bundle} from {u.broker}: {u.skipped}{how}")
        else:
            lines.append(f"  UNLOAD {u.bundle} from {u.broker} -> {u.destination} "
                         f"({fmt_rate(u.msg_rate)}, {fmt_bytes(u.throughput)}){how}")
    if not c.unloads:
        lines.append(f"  nothing unloaded: {c.reason}")
    return "\n".join(lines)


def placement_text(d: PlacementDecision) -> str:
    lines = [f"bundle {d.bundle} -> {d.broker} ({d.strategy}{', random draw' if d.random else ''})",
             f"  why: {d.reason}"]
    for f in d.filters:
        removed = f.removed
        lines.append(f"  filter {f.name}: {len(f.candidates)} candidate(s)"
                     + (f", removed {', '.join(removed[:8])}{' ...' if len(removed) > 8 else ''}" if removed else "")
                     + (f" — {f.note}" if f.note else ""))
        for b, why in list(getattr(f, "reasons", {}).items())[:12]:  # namespace policies (engine.policies)
            lines.append(f"    {b} excluded: {why}")
    sc = d.scores
    if sc:
        ranked = sorted(sc.items(), key=lambda kv: kv[1])[:12]
        lines.append(f"  scores ({d.score_unit}): " + ", ".join(f"{b} {v:,.2f}" for b, v in ranked))
    return "\n".join(lines)
