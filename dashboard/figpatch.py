"""Send a figure as the difference from the one the page shows, so Plotly redraws only that.

``Plotly.react`` decides how much to redraw by comparing the new figure with the old one: an array
of a new identity counts as new data (recalculate and redraw everything), a changed colour array or
shape only restyles. A figure sent whole always has new arrays. A Dash :class:`~dash.Patch` changes
only the paths it names, so the unchanged arrays keep their identity in the browser: on a slider
release that only recolours bars and moves lines, the Tuner's figures redraw in a few milliseconds
each instead of 30–70 ms.

The server is stateless, so the figures it sent are remembered here by content revision (the
``editrevision`` every figure carries, which the page echoes back in its ``shown`` store). A
revision not remembered (another worker, an evicted entry) means: send the whole figure — the result
on screen is the same, only slower.
"""
from __future__ import annotations

from dash import Patch

from .memo import Memo

__all__ = ["figure_patch", "remember", "as_dict", "can_patch"]

#: figures sent, by (figure name, revision): the builders' output as plain dicts
_SENT = Memo(48)
#: layout keys always re-sent when patching: the browser may have moved them while a slider was dragged
_ALWAYS = ("shapes", "annotations")


def as_dict(fig) -> dict:
    """A figure (``go.Figure`` or dict) as ``{"data": [...], "layout": {...}}``."""
    if hasattr(fig, "to_plotly_json"):
        fig = fig.to_plotly_json()
    return {"data": list(fig.get("data") or []), "layout": dict(fig.get("layout") or {})}


def remember(name: str, rev: str, fig) -> dict:
    """Keep ``fig`` as the figure ``name`` shown at revision ``rev``; returns it as a dict."""
    d = as_dict(fig)
    _SENT.put((name, rev), d)
    return d


def can_patch(name: str, shown_rev) -> bool:
    """Whether the figure the page shows as ``(name, shown_rev)`` is remembered (a patch is likely)."""
    return isinstance(shown_rev, str) and _SENT.get((name, shown_rev)) is not None


def figure_patch(name: str, shown_rev, new) -> Patch | None:
    """A Patch turning the figure remembered as ``(name, shown_rev)`` into ``new`` (a dict from
    :func:`as_dict`), or ``None`` when the whole figure must be sent: nothing remembered, or the
    traces differ in number or type (Plotly would rebuild them anyway)."""
    old = _SENT.get((name, shown_rev)) if isinstance(shown_rev, str) else None
    if old is None:
        return None
    od, nd = old["data"], new["data"]
    if len(od) != len(nd) or any(a.get("type") != b.get("type") for a, b in zip(od, nd)):
        return None
    p = Patch()
    for i, (a, b) in enumerate(zip(od, nd)):
        if set(a) != set(b):
            p["data"][i] = b
            continue
        for k, v in b.items():
            if _differs(a[k], v):
                p["data"][i][k] = v
    ol, nl = old["layout"], new["layout"]
    if set(ol) - set(nl):
        return None
    for k, v in nl.items():
        if k in _ALWAYS or _differs(ol.get(k), v):
            p["layout"][k] = v
    return p


def _differs(a, b) -> bool:
    try:
        return bool(a != b)
    except (ValueError, TypeError):  # arrays: compare as lists
        return getattr(a, "tolist", lambda: a)() != getattr(b, "tolist", lambda: b)()
