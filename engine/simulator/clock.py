"""The simulated clock: minute ``t`` of a run is ``EPOCH_MS + t · 60,000`` ms.

Shared by the loop (:mod:`engine.simulator.run`) and its tables (:mod:`engine.simulator.metrics`),
so neither imports the other for it.

>>> now_ms(0) == EPOCH_MS, now_ms(2) - now_ms(1)
(True, 60000)
"""
from __future__ import annotations

__all__ = ["EPOCH_MS", "MINUTE_MS", "MIB", "now_ms"]

#: simulated minute 0 (2025-12-06T05:46:40Z, the engine's fixed "now")
EPOCH_MS = 1_765_000_000_000
#: one simulated minute (the tick) in milliseconds
MINUTE_MS = 60_000
MIB = 1024.0 * 1024.0


def now_ms(t: int) -> int:
    """The time of minute ``t`` in epoch milliseconds."""
    return EPOCH_MS + t * MINUTE_MS
