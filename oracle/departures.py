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


def _same_but_broker_order(case, o, e) -> bool:
    """Each cycle unloads the same bundles, each broker's in the same order; only the order of the brokers
    differs."""
    if "cycles" not in o or "cycles" not in e or len(o["cycles"]) != len(e["cycles"]):
        return False
    for a, b in zip(o["cycles"], e["cycles"]):
        ga, gb = {}, {}
        for br, bu in a:
            ga.setdefault(br, []).append(bu)
        for br, bu in b:
            gb.setdefault(br, []).append(bu)
        if ga != gb:
            return False
    return True


DEPARTURES: tuple[Departure, ...] = (
    Departure(
        "unload-broker-order", ("4.2", "5.0"), ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"),
        "The unloads of a cycle are issued broker by broker in the key order of the strategy's Guava "
        "ArrayListMultimap, a java.util.HashMap sized by Guava's Maps.newHashMapWithExpectedSize(12): a table of "
        "32 with the Guava 32.1 of Pulsar 3.0 to 4.0 (12 / 0.75 + 1 = 17, rounded up to 32), of 16 with the "
        "Guava 33.4 / 33.7 of Pulsar 4.2 and 5.0 (ceil(12 / 0.75) = 16). The engine orders brokers as a table "
        "of 32 on every line: on 4.2 and 5.0 the same bundles are unloaded, each broker's in the same order, "
        "but brokers whose hashes fall in different halves of the larger table come out in another order.",
        _same_but_broker_order),
)


def explain(line: str, case: dict, oracle_ans: dict, engine_ans: dict) -> str | None:
    for d in DEPARTURES:
        if ("*" in d.lines or line in d.lines) and case["strategy"] in d.strategies and d.match(case, oracle_ans,
                                                                                                 engine_ans):
            return d.name
    return None
