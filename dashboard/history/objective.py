"""An operator's objective in words, over the measures Shedlab computes: parse it, compute it, judge it.

An objective is one or more *goals* (``min MEASURE`` / ``max MEASURE``) and any number of *constraints*
(``MEASURE <= NUMBER`` / ``MEASURE >= NUMBER``), written as parts separated by ``;``::

    min unloads_per_day; hot_unanswered(20) <= 5
    min unloads_per_day; usage_range_p99 <= 20          (a scenario: the range stays under 20 points
                                                         in 99 % of minutes)
    min unloads_per_day; min usage_range_above(15)      (two goals: a Pareto front)

A measure is a name, or a name with one number in brackets (``usage_range_above(20)``: points;
``usage_range_p(99)``: a percentile, also written ``usage_range_p99``). No expression is evaluated:
the text is matched against :data:`MEASURES` and anything else is a :class:`UsageError` that names
the part and lists the measures.

Where a measure can be computed: a History backtest replays the shedding decisions over observed
minutes and does **not** move load (:mod:`engine.backtest`), so on a History range only measures of
the unloads themselves and how they answer the observed load exist; the load-spread measures
(ranges, ratios, placements) need a scenario simulation, where load moves.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import UsageError

__all__ = ["MEASURES", "MeasureInfo", "Measure", "Goal", "Constraint", "Objective", "parse_objective",
           "history_measures", "scenario_measures", "usage_range_per_minute", "ANSWER_WINDOW_MINUTES",
           "MAX_OBJECTIVE_CHARS"]

#: a minute is "answered" when some broker unloaded in this many minutes up to and including it
ANSWER_WINDOW_MINUTES = 15
MAX_OBJECTIVE_CHARS = 500
HISTORY, SCENARIO = "history", "scenario"


@dataclass(frozen=True)
class MeasureInfo:
    name: str
    where: frozenset  # {"history", "scenario"}
    arg: str | None  # None, "points" (a threshold) or "percentile"
    unit: str
    words: str  # "{arg}" is replaced by the argument


MEASURES: dict[str, MeasureInfo] = {m.name: m for m in (
    MeasureInfo("unloads_per_day", frozenset({HISTORY, SCENARIO}), None, "bundles/day",
                "bundles unloaded per day"),
    MeasureInfo("unload_minutes_per_day", frozenset({HISTORY, SCENARIO}), None, "minutes/day",
                "minutes with at least one unload, per day"),
    MeasureInfo("unload_events_per_day", frozenset({HISTORY}), None, "events/day",
                "broker unload events (a broker shedding in a minute) per day"),
    MeasureInfo("days_with_unloads", frozenset({HISTORY}), None, "%", "share of days with at least one unload"),
    MeasureInfo("hot_unanswered", frozenset({HISTORY}), "points", "%",
                "share of the minutes with the observed usage range above {arg} points in which no broker had "
                f"unloaded in the last {ANSWER_WINDOW_MINUTES} minutes"),
    MeasureInfo("usage_range_above", frozenset({SCENARIO}), "points", "%",
                "share of minutes with the usage range (hottest − coolest broker) above {arg} points"),
    MeasureInfo("cpu_range_above", frozenset({SCENARIO}), "points", "%",
                "share of minutes with the CPU range above {arg} points"),
    MeasureInfo("usage_range_p", frozenset({SCENARIO}), "percentile", "points",
                "usage range (hottest − coolest broker) not exceeded in {arg} % of minutes"),
    MeasureInfo("cpu_range_p", frozenset({SCENARIO}), "percentile", "points",
                "CPU range not exceeded in {arg} % of minutes"),
    MeasureInfo("msg_rate_ratio_p", frozenset({SCENARIO}), "percentile", "×",
                "max/min message-rate ratio not exceeded in {arg} % of minutes"),
    MeasureInfo("bad_placements", frozenset({SCENARIO}), None, "unloads",
                "unloads placed on a broker above the cluster average"),
    MeasureInfo("random_placements", frozenset({SCENARIO}), None, "unloads", "unloads placed by a random draw"),
    MeasureInfo("unavailable_seconds", frozenset({SCENARIO}), None, "s",
                "seconds topics were unavailable while their bundles moved"),
)}


@dataclass(frozen=True)
class Measure:
    name: str
    arg: float | None = None

    @property
    def info(self) -> MeasureInfo:
        return MEASURES[self.name]

    @property
    def key(self) -> str:
        return self.name if self.arg is None else f"{self.name}({_num(self.arg)})"

    def words(self) -> str:
        return self.info.words.replace("{arg}", _num(self.arg) if self.arg is not None else "")


@dataclass(frozen=True)
class Goal:
    measure: Measure
    direction: str  # "minimize" | "maximize"

    @property
    def text(self) -> str:
        return f"{'min' if self.direction == 'minimize' else 'max'} {self.measure.key}"

    def better(self, a: float, b: float, rel: float = 1e-9) -> bool:
        """``a`` strictly better than ``b``."""
        if a is None or b is None or any(isinstance(x, float) and math.isnan(x) for x in (a, b)):
            return False
        tol = rel * max(1.0, abs(b))
        return a < b - tol if self.direction == "minimize" else a > b + tol


@dataclass(frozen=True)
class Constraint:
    measure: Measure
    op: str  # "<=" | ">="
    bound: float

    @property
    def text(self) -> str:
        return f"{self.measure.key} {self.op} {_num(self.bound)}"

    def violation(self, value: float) -> float:
        """How far ``value`` is past the bound (``<= 0``: met), as Optuna's constraints want."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return float("inf")
        return value - self.bound if self.op == "<=" else self.bound - value


@dataclass(frozen=True)
class Objective:
    goals: tuple
    constraints: tuple = ()

    @property
    def text(self) -> str:
        return "; ".join([g.text for g in self.goals] + [c.text for c in self.constraints])

    @property
    def measures(self) -> list[Measure]:
        out: list[Measure] = []
        for m in [g.measure for g in self.goals] + [c.measure for c in self.constraints]:
            if m not in out:
                out.append(m)
        return out

    @property
    def directions(self) -> list[str]:
        return [g.direction for g in self.goals]

    def words(self) -> str:
        """The objective as a sentence."""
        head = " and ".join(f"{'fewest' if g.direction == 'minimize' else 'most'}: {g.measure.words()}"
                            for g in self.goals)
        if not self.constraints:
            return head
        return head + ", while " + " and ".join(
            f"{c.measure.words()} stays {'at most' if c.op == '<=' else 'at least'} {_num(c.bound)} "
            f"{c.measure.info.unit}" for c in self.constraints)

    def values(self, measures: dict) -> list[float]:
        return [float(measures[g.measure.key]) for g in self.goals]

    def violations(self, measures: dict) -> list[float]:
        return [c.violation(measures.get(c.measure.key)) for c in self.constraints]

    def feasible(self, measures: dict) -> bool:
        return all(v <= 1e-12 for v in self.violations(measures))

    def to_json(self) -> dict:
        return {"text": self.text, "words": self.words(),
                "goals": [{"measure": g.measure.key, "direction": g.direction} for g in self.goals],
                "constraints": [{"measure": c.measure.key, "op": c.op, "bound": c.bound} for c in self.constraints]}


def _num(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


_MEASURE = re.compile(r"^([a-z][a-z_]*?)(?:\(\s*(-?\d+(?:\.\d+)?)\s*\)|_p(\d+(?:\.\d+)?))?$")
_GOAL = re.compile(r"^(min|minimi[sz]e|max|maximi[sz]e)\s+(\S+)$")
_CONSTRAINT = re.compile(r"^(\S+?)\s*(<=|>=|<|>|≤|≥)\s*(-?\d+(?:\.\d+)?)\s*%?$")


def _known(where: str) -> str:
    out = []
    for m in MEASURES.values():
        if where in m.where:
            out.append(m.name + ("(POINTS)" if m.arg == "points" else "(PERCENTILE)" if m.arg == "percentile" else ""))
    return ", ".join(out)


def _measure(text: str, where: str, part: str) -> Measure:
    m = _MEASURE.match(text.strip())
    if not m:
        raise UsageError(f"objective part {part!r}: {text!r} is not a measure; measures here: {_known(where)}")
    name, arg = m.group(1), m.group(2) or m.group(3)
    if m.group(3) is not None:  # usage_range_p99 -> usage_range_p(99)
        name += "_p"
    info = MEASURES.get(name)
    if info is None:
        raise UsageError(f"objective part {part!r}: unknown measure {name!r}; measures here: {_known(where)}")
    if where not in info.where:
        other = "a scenario simulation" if where == HISTORY else "a History backtest"
        why = (" (a backtest replays decisions over the observed load and does not move it, so the load "
               "spread does not depend on the setting)") if where == HISTORY else ""
        raise UsageError(f"objective part {part!r}: {name} needs {other}{why}; measures here: {_known(where)}")
    if info.arg is None and arg is not None:
        raise UsageError(f"objective part {part!r}: {name} takes no number")
    if info.arg is not None and arg is None:
        raise UsageError(f"objective part {part!r}: {name} needs a number, e.g. {name}(20)")
    val = float(arg) if arg is not None else None
    if info.arg == "percentile" and not 0 < val <= 100:
        raise UsageError(f"objective part {part!r}: a percentile is in (0, 100], got {_num(val)}")
    if info.arg == "points" and not 0 <= val <= 100_000:
        raise UsageError(f"objective part {part!r}: points must be in 0..100000, got {_num(val)}")
    return Measure(name, val)


def parse_objective(text: str | list | tuple | None, where: str = HISTORY) -> Objective:
    """The objective in ``text`` (parts separated by ``;``; a list of such texts is joined), for a
    History backtest (``where="history"``) or a scenario (``"scenario"``). :class:`UsageError` naming the
    part on anything it cannot read; at least one goal, at most four goals and eight constraints."""
    if isinstance(text, (list, tuple)):
        text = "; ".join(str(t) for t in text if t is not None)
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the objective is empty: say what to minimise, e.g. 'min unloads_per_day'")
    if len(text) > MAX_OBJECTIVE_CHARS:
        raise UsageError(f"the objective is longer than {MAX_OBJECTIVE_CHARS} characters")
    goals, cons = [], []
    for raw in re.split(r"[;\n]", text):
        part = " ".join(raw.strip().split())
        if not part:
            continue
        g = _GOAL.match(part.lower())
        if g:
            direction = "minimize" if g.group(1).startswith("min") else "maximize"
            goals.append(Goal(_measure(g.group(2), where, part), direction))
            continue
        c = _CONSTRAINT.match(part.lower())
        if c:
            op = {"<": "<=", "≤": "<=", ">": ">=", "≥": ">="}.get(c.group(2), c.group(2))
            cons.append(Constraint(_measure(c.group(1), where, part), op, float(c.group(3))))
            continue
        raise UsageError(f"objective part {part!r}: write 'min MEASURE', 'max MEASURE' or 'MEASURE <= NUMBER'; "
                         f"measures here: {_known(where)}")
    if not goals:
        raise UsageError("the objective has no goal: add 'min MEASURE' (or 'max MEASURE')")
    if len(goals) > 4 or len(cons) > 8:
        raise UsageError("at most 4 goals and 8 constraints")
    keys = [g.measure.key for g in goals]
    if len(set(keys)) != len(keys):
        raise UsageError("the same measure is a goal twice")
    return Objective(tuple(goals), tuple(cons))


# ---------------------------------------------------------------------------------------------- computing
def usage_range_per_minute(bw: pd.DataFrame, weights) -> tuple[np.ndarray, np.ndarray]:
    """``(minute epoch ms, usage range in points)`` of a broker-minute table: per minute the hottest minus
    the coolest broker's weighted max usage (cpu, direct memory, bandwidth in, out; as the History
    aggregates define it)."""
    from engine.backtest import _ms

    wc, wd, wi, wo = (float(x) for x in weights)
    usage = np.maximum.reduce([bw["cpu"].to_numpy(dtype=float) * wc, bw["direct_memory"].to_numpy(dtype=float) * wd,
                               bw["bandwidth_in"].to_numpy(dtype=float) * wi,
                               bw["bandwidth_out"].to_numpy(dtype=float) * wo])
    f = pd.DataFrame({"t": _ms(bw["timestamp"]), "u": usage})
    g = f.groupby("t", sort=True)["u"]
    rng = (g.max() - g.min())
    return rng.index.to_numpy(dtype=np.int64), rng.to_numpy(dtype=float)


def history_measures(events: pd.DataFrame, minutes_ms: np.ndarray, usage_range: np.ndarray, days: float,
                     measures: list[Measure]) -> dict:
    """The ``measures`` of one backtest: its ``events`` (:data:`engine.backtest.EVENT_COLUMNS`) over a
    range of ``days`` whose observed minutes are ``minutes_ms`` with ``usage_range`` (points)."""
    from engine.backtest import _ms

    ts = np.sort(_ms(events["timestamp"])) if len(events) else np.zeros(0, dtype=np.int64)
    days = max(float(days), 1e-9)
    out = {}
    for m in measures:
        if m.name == "unloads_per_day":
            v = float(events["n_bundles"].sum()) / days if len(events) else 0.0
        elif m.name == "unload_minutes_per_day":
            v = len(np.unique(ts)) / days
        elif m.name == "unload_events_per_day":
            v = len(events) / days
        elif m.name == "days_with_unloads":
            n = len(np.unique(ts // 86_400_000))
            v = 100.0 * n / max(1.0, math.ceil(days - 1e-9))
        elif m.name == "hot_unanswered":
            hot = minutes_ms[usage_range > m.arg]
            if not len(hot):
                v = 0.0
            elif not len(ts):
                v = 100.0
            else:
                i = np.searchsorted(ts, hot, "right")
                last = np.where(i > 0, ts[np.maximum(i - 1, 0)], np.iinfo(np.int64).min)
                answered = (i > 0) & (last > hot - ANSWER_WINDOW_MINUTES * 60_000)
                v = 100.0 * float((~answered).sum()) / len(hot)
        else:
            raise UsageError(f"{m.key} is not a History measure")
        out[m.key] = float(v)
    return out


def scenario_measures(result, measures: list[Measure]) -> dict:
    """The ``measures`` of one simulation (:class:`engine.simulator.SimulationResult`)."""
    cl, s = result.cluster, result.summary
    minutes = max(int(s.get("minutes") or len(cl)), 1)
    ev = result.events
    unl = ev[ev["kind"] == "unload"] if len(ev) else ev
    out = {}
    for m in measures:
        n = m.name
        if n == "unloads_per_day":
            v = float(s.get("unloads", 0)) * 1440.0 / minutes
        elif n == "unload_minutes_per_day":
            v = float(unl["minute"].nunique() if len(unl) else 0) * 1440.0 / minutes
        elif n in ("usage_range_above", "cpu_range_above"):
            col = cl["usage_range" if n.startswith("usage") else "cpu_range"].to_numpy(dtype=float)
            col = col[~np.isnan(col)]
            v = 100.0 * float((col > m.arg).sum()) / max(len(col), 1)
        elif n in ("usage_range_p", "cpu_range_p", "msg_rate_ratio_p"):
            col = cl[{"usage_range_p": "usage_range", "cpu_range_p": "cpu_range",
                      "msg_rate_ratio_p": "msg_rate_ratio"}[n]].to_numpy(dtype=float)
            col = col[~np.isnan(col)]
            col = np.where(np.isinf(col), 1e9, col)  # a broker carrying nothing: an "infinite" ratio, kept finite
            v = float(np.percentile(col, m.arg)) if len(col) else float("nan")
        elif n in ("bad_placements", "random_placements", "unavailable_seconds"):
            v = float(s.get(n) or 0.0)
        else:
            raise UsageError(f"{m.key} is not a scenario measure")
        out[m.key] = float(v)
    return out
