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
        "unload-broker-order", ("*",), ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder"),
        "The unloads of a cycle are issued broker by broker in the key order of the strategy's Guava "
        "ArrayListMultimap: a java.util.HashMap sized by Guava's Maps.newHashMapWithExpectedSize(12), which in "
        "the Guava every line ships (32.1.1 in 3.0.7, 32.1.2 in 3.3.6 and 4.0.8, 33.4.8 in 4.2.4, 33.7.1 in "
        "5.0.1) is a table of ceil(12 / 0.75) = 16, doubling past 12 keys; OverloadShedder, ThresholdShedder "
        "and UniformLoadShedder keep their multimap and clear() it every cycle, so its table never shrinks. "
        "The engine's doLoadShedding orders the brokers as a table of 32 (engine/load_manager.py): the same "
        "bundles are unloaded, each broker's in the same order, but two brokers whose buckets "
        "compare one way in a table of 16 and the other way in a table of 32 are issued in the other order. Kept until the engine's order changes: that "
        "changes pinned golden outputs (tests/golden), which is the maintainers' call.",
        _same_but_broker_order),
)


def explain(line: str, case: dict, oracle_ans: dict, engine_ans: dict) -> str | None:
    """The name of the listed departure this disagreement is, or None."""
    for d in DEPARTURES:
        if ("*" in d.lines or line in d.lines) and case["strategy"] in d.strategies and d.match(case, oracle_ans,
                                                                                                 engine_ans):
            return d.name
    return None
