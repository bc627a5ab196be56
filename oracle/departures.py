"""Listed departures: disagreements between the engine and Pulsar's classes that are understood, each with its
reason. :func:`explain` names the departure a disagreement is, or returns None (an unexplained
disagreement: ``make test`` fails on it). ``docs/fidelity.md`` lists every departure below."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Departure:
    name: str
    lines: tuple  # release lines it applies to ("*" = every line)
    strategies: tuple
    reason: str
    match: Callable  # (case, oracle answer, engine answer) -> bool


#: none today: the broker order of a cycle's unloads (the strategy's multimap order) was one until the engine
#: followed Guava's table of 16 and its growth (engine.load_manager.unload_broker_rank)
DEPARTURES: tuple[Departure, ...] = ()


def explain(line: str, case: dict, oracle_ans: dict, engine_ans: dict) -> str | None:
    """The name of the listed departure this disagreement is, or None."""
    for d in DEPARTURES:
        if ("*" in d.lines or line in d.lines) and case["strategy"] in d.strategies and d.match(case, oracle_ans,
                                                                                                 engine_ans):
            return d.name
    return None
