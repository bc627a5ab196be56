"""Traffic over time: pattern multipliers per workload, and the topics a workload produces to.

Everything is precomputed as arrays: :func:`workload_series` gives, for every minute, the producer
multiplier ``P`` (scales msg/s in, and therefore what consumers can read), the consumer multiplier
``C`` (scales msg/s out only) and whether the workload's topics exist (``active``).

Examples
--------
>>> from engine.simulator.scenario import PatternSpec
>>> on_off = PatternSpec("on_off", (("on", 1), ("off", 1), ("start", 0), ("high", 1.0), ("low", 0.0)))
>>> pattern_series(on_off, 6).tolist()
[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
>>> ramp = PatternSpec("ramp", (("from", 0.0), ("to", 1.0), ("start", 2), ("end", 4)))
>>> pattern_series(ramp, 6).tolist()
[0.0, 0.0, 0.0, 0.5, 1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from .scenario_spec import PatternSpec, WorkloadSpec

__all__ = ["pattern_series", "workload_series", "topic_names", "topic_rates"]


def pattern_series(p: PatternSpec, minutes: int, offset: float = 0.0) -> np.ndarray:
    """The multiplier of pattern ``p`` at minutes ``0..minutes-1`` (``offset`` shifts a diurnal peak)."""
    t = np.arange(minutes, dtype=np.float64)
    g = p.get
    if p.kind == "constant":
        return np.full(minutes, float(g("level", 1.0)))
    if p.kind == "ramp":
        a, b, s, e = float(g("from")), float(g("to")), float(g("start")), float(g("end"))
        x = np.clip((t - s) / (e - s), 0.0, 1.0)
        return a + (b - a) * x
    if p.kind == "diurnal":
        base, amp, period = float(g("base")), float(g("amplitude")), float(g("period"))
        peak = float(g("peak")) + offset
        return base + amp * np.cos(2 * np.pi * (t - peak) / period)
    if p.kind == "on_off":
        on, off, start = int(g("on")), int(g("off")), int(g("start"))
        phase = np.mod(t - start, on + off)
        out = np.where(phase < on, float(g("high")), float(g("low")))
        return np.where(t < start, float(g("high")), out)
    if p.kind == "steps":
        out = np.full(minutes, float(g("initial", 1.0)))
        for m, lv in g("steps"):
            out[int(m):] = float(lv)
        return out
    raise ValueError(f"unknown pattern {p.kind}")  # pragma: no cover - validated earlier


def workload_series(w: WorkloadSpec, minutes: int, rng: np.random.Generator, steps=()) -> tuple:
    """``(P, C, active)`` arrays of length ``minutes`` for workload ``w``.

    ``steps`` are ``(minute, factor_or_None, rate_or_None)`` traffic events: a factor multiplies the
    producer rate from that minute on; a rate sets the total produced rate (relative to ``w.rate``).
    A diurnal pattern's ``jitter`` shifts its peak by a uniform draw in ``±jitter`` minutes.
    """
    t = np.arange(minutes)
    active = (t >= w.start) & ((t < w.stop) if w.stop is not None else True)
    P = np.ones(minutes)
    for p in w.producers:
        off = float(rng.uniform(-p.get("jitter"), p.get("jitter"))) if p.kind == "diurnal" and p.get("jitter") else 0.0
        P = P * pattern_series(p, minutes, off)
    C = np.ones(minutes)
    for p in w.consumers:
        off = float(rng.uniform(-p.get("jitter"), p.get("jitter"))) if p.kind == "diurnal" and p.get("jitter") else 0.0
        C = C * pattern_series(p, minutes, off)
    level = np.ones(minutes)
    for m, factor, rate in steps:
        if factor is not None:
            level[m:] = level[m:] * factor
        else:
            level[m:] = (rate / w.rate) if w.rate > 0 else 0.0
    P = P * level * active
    return P, C, np.asarray(active, dtype=bool)


def topic_names(w: WorkloadSpec) -> list[str]:
    """Full topic names: ``persistent://NS/TOPIC-i`` or the partitions ``persistent://NS/TOPIC-partition-i``."""
    base = f"persistent://{w.namespace}/{w.topic}"
    if w.partitions:
        return [f"{base}-partition-{i}" for i in range(w.partitions)]
    if w.topics == 1:
        return [base]
    return [f"{base}-{i}" for i in range(w.topics)]


def topic_rates(w: WorkloadSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """Produced msg/s of each of the ``n`` topics at level 1: ``w.rate`` split evenly, or with
    lognormal shares when ``w.skew`` > 0."""
    if n == 0:
        return np.zeros(0)
    if w.skew > 0:
        s = rng.lognormal(0.0, w.skew, size=n)
        return w.rate * s / s.sum()
    return np.full(n, w.rate / n)
