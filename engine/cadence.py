"""When the leader sheds, and when a recently unloaded bundle may move again: one copy for all.

The modular load manager, the extensible load manager, the simulator and the backtest use these two
functions; nothing else in the engine computes the shedding cadence or the grace period.

* :func:`shedding_due` — ``loadBalancerSheddingIntervalMinutes``: Pulsar runs ``doLoadShedding`` from
  a fixed-rate timer started with the leader. With the time of the last check, the check is due once
  the interval has passed since it; without one (a replay of observed minutes, no leader start) it is
  due on the minutes where ``epoch minute % interval == 0`` — ours: the timer's phase is unknown in a
  history, so the epoch is its start.
* :func:`forget_expired` — ``loadBalancerSheddingGracePeriodMinutes``: before each shedding a bundle
  unloaded more than the grace period ago leaves the recently-unloaded map
  (``ModularLoadManagerImpl.doLoadShedding``; the extensible ``UnloadScheduler`` does the same).

Examples
--------
>>> shedding_due(5 * 60_000, None, 1), shedding_due(5 * 60_000, None, 2)
(True, False)
>>> shedding_due(3 * 60_000, 1 * 60_000, 2), shedding_due(2 * 60_000, 1 * 60_000, 2)
(True, False)
>>> forget_expired({"a": 0, "b": 50 * 60_000}, 60 * 60_000, 30)
{'b': 3000000}
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["MINUTE_MS", "shedding_due", "forget_expired", "grace_timeout"]

MINUTE_MS = 60_000


def shedding_due(now_ms: int, last_ms: int | None, interval_min) -> bool:
    """Whether the shedding check runs at ``now_ms`` (see the module docstring).

    ``interval_min`` below 1 counts as 1 (Pulsar's scheduler would not run at a zero period).
    """
    interval = max(1, int(interval_min))
    if last_ms is None:
        return (int(now_ms) // MINUTE_MS) % interval == 0
    return int(now_ms) - int(last_ms) >= interval * MINUTE_MS


def grace_timeout(now_ms: int, grace_min) -> int:
    """The oldest unload time still within the grace period at ``now_ms``."""
    return int(now_ms) - int(grace_min) * MINUTE_MS


def forget_expired(recently: Mapping[str, int], now_ms: int, grace_min) -> dict:
    """``recently`` (bundle → unload time, ms) without the bundles whose grace period is over: kept
    when unloaded at or after ``now_ms − grace``; a new dict, in the original order."""
    timeout = grace_timeout(now_ms, grace_min)
    if not recently or min(recently.values()) >= timeout:  # nothing expired (most minutes): a plain copy
        return dict(recently)
    return {b: t for b, t in recently.items() if t >= timeout}
