"""The Simulator page's field findings: each finding of :mod:`engine.simulator.findings` as a one-click
A/B (the article's two strategy sets on its scenario and seed), and the article's figures beside the
values of the run on screen.

Pure functions: the callbacks pick a finding (:func:`finding_state` gives the page state to run) and,
when results are shown, :func:`figure_rows` reads every figure of the finding whose state matches the
results (the same extractors as ``python -m engine findings``, applied to the page's run tables).
"""
from __future__ import annotations

from engine.simulator import findings as F

from .state import SimState, coerce_state

__all__ = ["finding_options", "finding_state", "finding_for", "figure_rows", "scenario_id"]


def scenario_id(f: F.Finding) -> str:
    """The Simulator's scenario picker value of a finding (``findings/NAME`` or a shipped name)."""
    return f.scenario


def finding_options() -> list[dict]:
    return F.finding_options()


def _side(spec: dict) -> dict:
    shed = spec.get("strategy")
    place = spec.get("placement") or shed
    return {"shed": shed, "place": place, "preset": spec.get("preset", ""), "values": {}}


def finding_state(fid) -> SimState | None:
    """The page state of finding ``fid`` (None for an unknown id: a browser value is never trusted)."""
    f = F.FINDINGS.get(fid) if isinstance(fid, str) else None
    if f is None or F.is_snapshot(f):  # a snapshot finding is one engine cycle, not a simulation
        return None
    state, _ = coerce_state({"scenario": scenario_id(f), "minutes": None, "seed": f.seed,
                               "a": _side(f.a), "b": _side(f.b)})
    return state if state.scenario == scenario_id(f) else None


def finding_for(state_json: dict | None) -> F.Finding | None:
    """The finding whose one-click A/B is exactly this state (same scenario, seed, length and sides)."""
    if not isinstance(state_json, dict):
        return None
    for f in F.FINDINGS.values():
        st = finding_state(f.id)
        if st is not None and st.to_json() == state_json:
            return f
    return None


def figure_rows(f: F.Finding, runs: dict) -> list[dict]:
    """One row per figure: ``{"run", "strategy", "figure", "article", "value", "tolerance", "ok"}``, the
    value read from the page's run (``runs[side]``: tables ``summary``, ``events``, ``brokers``, ``cluster``)."""
    out = []
    for fig in f.figures:
        r = runs.get(fig.side)
        v = F.figure_value(fig, r) if r is not None else None
        out.append({"run": fig.side.upper(), "strategy": getattr(f, fig.side)["label"], "figure": fig.text,
                    "article": F.shown_text(fig), "value": F.value_text(fig, v), "tolerance": fig.tolerance,
                    "ok": F.evaluate(fig, v)})
    return out
