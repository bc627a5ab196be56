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
    match: Callable  # (case, oracle answer, engine answer) -> bool; or (line, case, ...) when it takes four


def _null_class_name(line: str, case: dict, oracle_ans: dict, engine_ans: dict) -> bool:
    """Some report has no loadManagerClassName, and the engine agrees once those brokers report another load
    manager's class (which both sides filter out)."""
    if case.get("kind") != "filters":
        return False
    brokers = case["data"]["brokers"]
    if not any(r.get("loadManagerClassName") is None for r in brokers.values()):
        return False
    import copy

    from . import compare, engine_side
    from .lines import LINES

    alt = copy.deepcopy(case)
    for r in alt["data"]["brokers"].values():
        if r.get("loadManagerClassName") is None:
            r["loadManagerClassName"] = "org.shedlab.NoLoadManagerClassReported"
    return compare.agree(case, oracle_ans, engine_side.answer(alt, LINES.get(line)))


#: the broker order of a cycle's unloads (the strategy's multimap order) was one until the engine followed
#: Guava's table of 16 and its growth (engine.load_manager.unload_broker_rank)
DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "a report without loadManagerClassName keeps its broker a placement candidate",
        ("*",), ("filters",),
        "Pulsar's BrokerLoadManagerClassFilter drops every broker whose report's loadManagerClassName differs from "
        "the leader's, a missing one included (and when that empties the candidates, selectBroker falls back to "
        "the namespace-policy set, ignoring the max-topics, anti-affinity and even-distribution filters). Brokers "
        "have reported the field for years; a snapshot without it is a hand-made or converted one, so Shedlab "
        "reads a missing class name as \"not known to differ\" and keeps the broker, which keeps every filter "
        "meaningful on such inputs.",
        _null_class_name),
)


def _matches(d: Departure, line, case, oracle_ans, engine_ans) -> bool:
    import inspect

    if len(inspect.signature(d.match).parameters) == 4:
        return d.match(line, case, oracle_ans, engine_ans)
    return d.match(case, oracle_ans, engine_ans)


def explain(line: str, case: dict, oracle_ans: dict, engine_ans: dict) -> str | None:
    """The name of the listed departure this disagreement is, or None."""
    for d in DEPARTURES:
        if ("*" in d.lines or line in d.lines) and case["strategy"] in d.strategies and _matches(d, line, case,
                                                                                                  oracle_ans, engine_ans):
            return d.name
    return None
