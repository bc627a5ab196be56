"""What the page shows of finished runs, one call per panel: the results (figures, summary, log kinds),
the field finding's figures, the event log, the sweep, and the two exports (figures zip, HTML report).

Each function takes the cache key the browser holds (checked against the session) and raises
:class:`~engine.errors.InputError` when the results are someone else's, malformed or gone.
"""
from __future__ import annotations

from dataclasses import dataclass

from engine.errors import InputError

from .events import event_rows
from .findings import figure_rows, finding_for
from .report import build_report, figures, report_filename
from .runs import load_result
from .state import MAX_MINUTES
from .summary import summary_rows
from .sweep import load_sweep, sweep_current

__all__ = ["ResultView", "page_figures", "result_view", "finding_view", "event_view", "sweep_view",
           "sweep_or_none", "figures_export", "report_export"]


def page_figures(payload: dict) -> dict:
    """The page's figures of a result (``{"a", "b", "cluster", "std"}``; ``std`` None unless a run is
    extensible)."""
    figs = figures(payload)
    out = {"a": figs["run-a-brokers"][1], "b": figs["run-b-brokers"][1], "cluster": figs["cluster"][1],
           "std": figs["transfershedder-std"][1] if "transfershedder-std" in figs else None}
    rev = payload.get("at", "") + payload["state"]["scenario"]
    for f in out.values():
        if f is not None:
            f.layout.uirevision = rev  # new results: zoom out; the same results: keep the zoom
    return out


@dataclass(frozen=True)
class ResultView:
    """Everything the results panels draw: the payload, its figures, the summary rows, the side labels,
    the log's kinds and the sides that stopped early."""

    payload: dict
    figures: dict
    summary: list
    labels: dict
    kinds: list
    cancelled: tuple


def result_view(key: str, sid) -> ResultView:
    from .events import event_kinds

    payload = load_result(key, sid)
    runs = payload["runs"]
    return ResultView(payload, page_figures(payload), summary_rows(runs), {s: r.label[4:] for s, r in runs.items()},
                      event_kinds(runs), tuple(s.upper() for s, r in runs.items() if r.cancelled))


def finding_view(key: str, sid):
    """``(finding, rows, note)`` when the results are a field finding's one-click A/B, else None."""
    payload = load_result(key, sid)
    f = finding_for(payload["state"])
    if f is None:
        return None
    ran = payload["runs"]["a"].summary.get("minutes")
    full = (payload.get("facts") or {}).get("minutes")
    note = (f"This page runs at most {MAX_MINUTES:,} minutes: these values are over {ran:,} of the scenario's "
            f"{full:,} minutes; `python -m engine findings` runs it in full." if ran and full and ran < full else "")
    return f, figure_rows(f, payload["runs"]), note


def event_view(key: str, sid, kinds=None, which: str = "both", limit: int = 200) -> tuple[list, int]:
    """The event log's rows (filtered by kind and run) and their total."""
    return event_rows(load_result(key, sid)["runs"], kinds or None, which or "both", limit=limit)


def sweep_view(key: str, sid, saved, cached: bool = False) -> tuple[dict, dict | None, str]:
    """``(sweep, run A's current cell, note)`` of a finished sweep."""
    sw = load_sweep(key, sid)
    p = sw["plan"]
    note = (f"{len(sw['cells'])} runs of {sw['strategy']} on {sw['scenario']} ({p['minutes']} minutes each)"
            + (" · from this session's cache" if cached else "") + " · outlined: run A's current setting")
    return sw, sweep_current(sw, saved), note


def sweep_or_none(meta, sid) -> dict | None:
    """The sweep a ``SIM_SWEEP_RESULT`` value points at, None when there is none (or it is gone)."""
    if isinstance(meta, dict) and meta.get("key") and not meta.get("error"):
        try:
            return load_sweep(meta["key"], sid)
        except InputError:
            return None
    return None


def figures_export(key: str, sid, sweep_meta=None) -> tuple[dict, str]:
    """``({name: (title, figure)}, file stem)`` of every figure of the results (and the sweep)."""
    payload = load_result(key, sid)
    stem = f"shedlab-simulation-figures-{payload['state']['scenario'][:40].replace(':', '-')}"
    return figures(payload, sweep_or_none(sweep_meta, sid)), stem


def report_export(key: str, sid, sweep_meta=None, permalink: str | None = None) -> tuple[str, str]:
    """``(HTML text, file name)`` of the self-contained report of the results."""
    payload = load_result(key, sid)
    return (build_report(payload, permalink=permalink or None, sweep=sweep_or_none(sweep_meta, sid)),
            report_filename(payload))
