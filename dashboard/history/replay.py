"""The History backtest's replay: the engine's one driver (:mod:`engine.backtest`) over dataset frames.

Kept as the History package's name for it; the loop itself lives in :mod:`engine.backtest` (called
by the pandas path, the Spark job's pandas UDFs and the sweep alike).
"""
from __future__ import annotations

from engine.backtest import EVENT_COLUMNS, backtest_frames, events_frame, shedding_strategies, synthetic_names, \
    typed_value

__all__ = ["replay", "EVENT_COLUMNS", "strategies", "typed_value", "events_frame", "synthetic_names"]

#: the History backtest's replay (see :func:`engine.backtest.backtest_frames`)
replay = backtest_frames
#: the shedding strategies a backtest runs (the registry's modular shedding strategies, plug-ins included)
strategies = shedding_strategies
