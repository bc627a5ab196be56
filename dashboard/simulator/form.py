"""A side's keys as the form shows them: the "other keys" text (``broker.conf`` lines) and value labels."""
from __future__ import annotations

from ..keys import format_value, key_spec
from .state import CONTROLLED_KEYS, RunSpec

__all__ = ["parse_extra", "extra_text", "key_value_text"]


def parse_extra(text: str | None, side: str = "") -> tuple[dict, list[str]]:
    """``KEY=VALUE`` lines (``#`` comments, blank lines) → ``{key: text}`` and one message per bad line."""
    who = f"run {side.upper()}: " if side else ""
    out, errors = {}, []
    for i, line in enumerate((text or "").splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(("#", "!")):
            continue
        k, sep, v = s.partition("=")
        if not sep:
            k, sep, v = s.partition(":")
        k = k.strip()
        if not sep or not k:
            errors.append(f"{who}line {i} {s[:40]!r}: expected KEY=VALUE; ignored")
            continue
        if k in CONTROLLED_KEYS:
            errors.append(f"{who}line {i}: {k} is set by the strategy pickers; ignored")
            continue
        out[k] = v.strip()
    return out, errors


def extra_text(spec: RunSpec, shown: list[str]) -> str:
    """The textarea of a side: its changed keys that have no slider, as ``broker.conf`` lines."""
    return "\n".join(f"{k}={v}" for k, v in spec.values if k not in shown)


def key_value_text(key: str, text: str) -> str:
    """``"loadBalancerAvgShedderLowThreshold"``, ``"15.0"`` → ``"15 pts"`` (the slider's label rule)."""
    spec = key_spec(key)
    try:
        return format_value(spec.to_value(text), spec.fmt)
    except (TypeError, ValueError):
        return text
