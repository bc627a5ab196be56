"""Several runs of one scenario side by side: :func:`compare` and its :class:`Comparison`.

Kept apart from :mod:`engine.simulator.metrics` (which the loop imports for its tables), so the
tables never import the loop.
"""
from __future__ import annotations

import pandas as pd

from .metrics import json_clean
from .run import run_scenario
from .scenario import Scenario, load_scenario

__all__ = ["compare", "Comparison"]


def compare(scenario, variants: dict, *, seed: int | None = None, minutes: int | None = None,
            progress=None, cancel=None):
    """Run ``scenario`` once per variant and put the summaries side by side.

    Parameters
    ----------
    scenario : Scenario, path or shipped name
    variants : dict
        ``label -> dict`` of :func:`engine.simulator.run.run_scenario` keyword arguments
        (``strategy``, ``placement``, ``set``, ``preset``, ``config``, ``seed``, ``minutes``).
    seed, minutes : optional
        Defaults for every variant.
    progress : callable, optional
        ``progress(done, total)`` over all variants' minutes.

    Returns
    -------
    Comparison
        ``.table``: one column per variant, one row per summary key; ``.summaries``: one row per
        variant; ``.results``: ``label -> SimulationResult``.

    Examples
    --------
    >>> c = compare("bigo-homogeneous-start", {"threshold": {"strategy": "ThresholdShedder",
    ...             "placement": "LeastResourceUsageWithWeight"}, "avg": {"preset": "bigo-avgshedder"}})  # doctest: +SKIP
    >>> c.table.loc[["unloads", "settled_minute"]]  # doctest: +SKIP
    """
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    results = {}
    total = len(variants) * (minutes or sc.minutes)
    offset = 0
    for label, kw in variants.items():
        kw = dict(kw)
        kw.setdefault("seed", seed)
        kw.setdefault("minutes", minutes)
        n = kw["minutes"] or sc.minutes
        cb = None
        if progress is not None:
            cb = _offset_progress(progress, offset, total)
        results[label] = run_scenario(sc, progress=cb, cancel=cancel, **kw)
        offset += n
    summaries = pd.DataFrame([r.summary for r in results.values()], index=list(results))
    return Comparison(summaries.T, summaries, results)


def _offset_progress(progress, base, total):
    return lambda done, _tot: progress(base + done, total)


class Comparison:
    """Side-by-side summaries of several runs of one scenario (see :func:`compare`)."""

    def __init__(self, table: pd.DataFrame, summaries: pd.DataFrame, results: dict):
        self.table = table
        self.summaries = summaries
        self.results = results

    def to_json(self) -> dict:
        return {label: json_clean(r.summary) for label, r in self.results.items()}

    def __repr__(self) -> str:  # pragma: no cover - display helper
        return f"Comparison({list(self.results)})\n{self.table}"

