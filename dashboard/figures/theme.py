"""Colours, fonts and small helpers shared by every figure (and mirrored in ``assets/shedlab.css``).

Broker states have one colour everywhere — bars, links, tables, the report — so a screenshot reads
the same in an incident review as on screen.
"""
from __future__ import annotations

import contextvars
import json
import math
import os
import re
from contextlib import contextmanager
from functools import lru_cache

import plotly.graph_objects as go

__all__ = ["STATUS", "LINE", "RESOURCE", "FONT", "base_layout", "graph_config", "hline", "short_names", "short_name_map",
           "empty_figure", "status_color", "status_label", "drag_spec", "MB", "make_figure", "axis", "title_ann",
           "GRID", "drag_meta", "drag_of", "inline_template", "MAX_COLUMNS", "per_column"]

GRID = "#eef1f4"

MB = 1024 * 1024
FONT = "Inter, -apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

#: broker state -> (colour, legend label)
STATUS = {
    "over": ("#d1495b", "sheds load"),
    "skipped": ("#8e6bbf", "over the line, nothing moved"),
    "pending": ("#e49b2f", "counting hits"),
    "under": ("#3c7dd9", "cool partner"),
    "destination": ("#239a6b", "receives a bundle"),
    "ok": ("#a9b4c4", "within the lines"),
}
#: reference lines
LINE = {"average": "#57606a", "threshold": "#d1495b", "overload": "#1f2328", "band": "#3c7dd9",
        "low": "#e49b2f", "high": "#d1495b", "even": "#8c959f", "other": "#6e7781"}
#: resource -> (colour, marker symbol, label)
RESOURCE = {
    "cpu": ("#1b365d", "circle", "CPU"),
    "directMemory": ("#7d8da6", "diamond", "direct memory"),
    "bandwidthIn": ("#0f766e", "triangle-up", "bandwidth in"),
    "bandwidthOut": ("#b45309", "triangle-down", "bandwidth out"),
}


def status_color(status: str) -> str:
    return STATUS.get(status, STATUS["ok"])[0]


def status_label(status: str) -> str:
    return STATUS.get(status, STATUS["ok"])[1]


_AXIS = dict(gridcolor=GRID, linecolor="#d0d7de", zeroline=False, automargin=True, ticks="",
             title=dict(standoff=8, font=dict(size=12, color="#57606a")), tickfont=dict(size=11, color="#424a53"))
#: a small explicit template (a template *name* would need plotly's validation to be resolved)
TEMPLATE = {"layout": {"xaxis": _AXIS, "yaxis": _AXIS,
                       "colorway": ["#1b365d", "#3c7dd9", "#0f766e", "#b45309", "#8e6bbf", "#d1495b", "#239a6b"]}}


def base_layout(height: int = 360, **kw) -> dict:
    """The common layout: white, light grid, compact margins, horizontal legend on top.

    A figure's content revision (what the page's stores, the tests and the bench compare) goes in
    ``editrevision``, an attribute Plotly never redraws for, not in ``meta``: a changed ``meta`` makes
    ``Plotly.react`` redraw the whole figure. None of our figures is editable, so ``editrevision`` has
    no other effect. (With :func:`dashboard.figpatch.figure_patch` a slider release then redraws
    only what changed: colours and lines, not every bar.)
    """
    lay = dict(
        template=TEMPLATE,
        height=height,
        font=dict(family=FONT, size=12, color="#1f2328"),
        margin=dict(l=56, r=24, t=56, b=48),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, font=dict(size=11),
                    bgcolor="rgba(0,0,0,0)", traceorder="normal"),
        hoverlabel=dict(font=dict(family=FONT, size=12), bgcolor="white", bordercolor="#d0d7de"),
        paper_bgcolor="white",
        plot_bgcolor="white",
        bargap=0.25,
        uirevision="shedlab",
    )
    lay.update(kw)
    return lay


def graph_config(filename: str) -> dict:
    """``dcc.Graph(config=...)``: modebar camera downloads an SVG (scale 2) named after the figure."""
    return {
        "displaylogo": False,
        "displayModeBar": "hover",
        "toImageButtonOptions": {"format": "svg", "filename": filename, "scale": 2},
        "modeBarButtonsToRemove": ["lasso2d", "select2d", "autoScale2d", "toggleSpikelines"],
    }


def hline(y: float, color: str, label: str, *, dash: str = "dash", yref: str = "y", xref: str = "paper",
          width: float = 1.6, side: str = "right") -> tuple[dict, dict]:
    """A horizontal reference line across the plot and its label (shape, annotation)."""
    shape = dict(type="line", xref=xref, x0=0, x1=1, yref=yref, y0=y, y1=y,
                 line=dict(color=color, width=width, dash=dash), layer="above")
    ann = dict(xref="paper", x=1 if side == "right" else 0, xanchor="right" if side == "right" else "left",
               yref=yref, y=y, yanchor="bottom", text=label, showarrow=False,
               font=dict(size=11, color=color), bgcolor="rgba(255,255,255,0.85)", borderpad=1)
    return shape, ann


def drag_meta(drag: dict) -> str:
    """``layout.meta`` of a figure whose lines follow sliders: ``{"drag": drag}`` as JSON text.

    Text, not an object: ``dcc.Graph`` hands Plotly a deep copy of the layout on every update, and an
    object ``meta`` that is not the very same object makes ``Plotly.react`` redraw the whole figure
    (~90 ms for the 1,000-broker scores figure, on every release and every drag step); equal text is
    equal. :func:`drag_of` reads it back; the Tuner's clientside ``dragLines`` adapter parses it.
    """
    return json.dumps({"drag": drag}, separators=(",", ":"), sort_keys=True)


def drag_of(layout) -> dict:
    """The drag specs (``{key: [spec, ...]}``) of a figure's layout (``meta`` as :func:`drag_meta`
    writes it, or an object)."""
    meta = (layout or {}).get("meta") if isinstance(layout, dict) else getattr(layout, "meta", None)
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return {}
    return dict((meta or {}).get("drag") or {}) if isinstance(meta, dict) else {}


def drag_spec(shape: int, ann: int, a: float, b: float, label: str, unit: str = "", digits: int = 1) -> dict:
    """One entry of ``layout.meta.drag`` (see :mod:`dashboard.figures`).

    ``a`` and ``b`` are kept to 12 significant digits: the same line computed twice (``average +
    threshold - threshold``) differs in the last bit, and a changed ``layout.meta`` makes Plotly redraw
    the whole figure (a 1,000-broker scores figure: ~60 ms of every slider release)."""
    return {"shape": shape, "ann": ann, "a": _sig(a), "b": _sig(b), "label": label, "unit": unit, "digits": digits}


def _sig(x, digits: int = 12) -> float:
    x = float(x)
    return float(f"{x:.{digits}g}") if math.isfinite(x) else x


#: the per-broker figures (scores, topic distribution) draw at most this many columns: above it, each
#: column stands for a run of neighbouring brokers in the figure's order and the figure says so (ten
#: thousand bars or boxes are more than the plot has pixels, and too slow to redraw on a slider release)
MAX_COLUMNS = 1000


def per_column(n_brokers: int) -> int:
    """How many brokers one column stands for when ``n_brokers`` are drawn (1 up to :data:`MAX_COLUMNS`)."""
    return max(1, -(-int(n_brokers) // MAX_COLUMNS))


def short_name_map(brokers) -> dict:
    """``{broker: short name}`` as :func:`short_names` writes them (each name's short form depends only on
    the set of names), kept for the last few broker sets: every slider release draws the same brokers
    (10,000 of them: ~20 ms a figure). The dict is shared: read it, do not change it."""
    return _short_map(frozenset(brokers))


@lru_cache(maxsize=16)
def _short_map(names: frozenset) -> dict:
    listed = list(names)
    return dict(zip(listed, short_names(listed)))


def short_names(brokers) -> list[str]:
    """Broker ids without the common port and domain suffix (``10.0.0.83:8080`` → ``10.0.0.83``)."""
    names = list(brokers)
    if not names:
        return names
    ports = {n.rsplit(":", 1)[1] for n in names if ":" in n}
    if len(ports) == 1 and all(":" in n for n in names):
        names = [n.rsplit(":", 1)[0] for n in names]
    common = os.path.commonprefix([n[::-1] for n in names])[::-1]
    if "." in common and len(names) > 1:
        suffix = common[common.index("."):]
        if all(len(n) > len(suffix) for n in names):
            names = [n[: -len(suffix)] for n in names]
    return names


#: set by :func:`plain_figures`: make_figure returns plain dicts
_PLAIN = contextvars.ContextVar("shedlab_plain_figures", default=False)


@contextmanager
def plain_figures():
    """Within this block :func:`make_figure` returns the plain ``{"data", "layout"}`` dict, its template
    written into the layout (:func:`inline_template`).

    For the Tuner, whose figures are sent as plain dicts or diffed against the one on screen and sent
    as a patch (:mod:`dashboard.figpatch`): wrapping them in a ``go.Figure`` and converting back cost
    ~5 ms per figure, half of the server's share of a release; and a layout without a template object
    is one ``Plotly.react`` does not redraw whole on every update.
    """
    token = _PLAIN.set(True)
    try:
        yield
    finally:
        _PLAIN.reset(token)


def make_figure(data: list, layout: dict) -> go.Figure | dict:
    """A figure from plain dicts, without plotly's per-property validation; within
    :func:`plain_figures` the plain dict, its layout self-contained (:func:`inline_template`).

    Validation costs ~40 ms per figure, most of the Tuner's budget for a slider move; the builders
    are unit-tested by re-building their output *with* validation instead
    (``tests/dashboard/test_figures.py``).
    """
    if _PLAIN.get():
        return {"data": _no_none(data), "layout": _no_none(inline_template(data, layout))}
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _no_none(obj):
    """``obj`` without the ``None``-valued properties (as plotly.py drops them; plotly.js rejects some,
    e.g. a layout container set to null). Lists of numbers or strings are kept as they are (a ``None``
    there is a gap in the data)."""
    if isinstance(obj, dict):
        return {k: _no_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list) and obj and isinstance(obj[0], dict):
        return [_no_none(v) for v in obj]
    return obj


_AXIS_KEY = re.compile(r"^[xy]axis\d*$")


def _under(defaults: dict, given) -> dict:
    """``given`` over ``defaults``, nested dicts merged (as Plotly applies a template)."""
    if not isinstance(given, dict):
        return dict(defaults, text=given) if isinstance(given, str) and "text" not in defaults else given
    out = dict(defaults)
    for k, v in given.items():
        out[k] = _under(defaults[k], v) if isinstance(defaults.get(k), dict) else v
    return out


def inline_template(data: list, layout: dict) -> dict:
    """``layout`` with :data:`TEMPLATE` written into it instead of referenced: each axis the layout or a
    trace uses gets the template's axis defaults under its own settings, the layout the colorway.

    The same look, but no template object: ``dcc.Graph`` hands Plotly a deep copy of the layout on
    every update, and a template (like ``meta`` or a layout array such as ``categoryarray``) that is
    not the very same object makes ``Plotly.react`` recalculate and redraw the whole figure — on a
    1,000-broker Tuner ~40–100 ms per figure per slider release, instead of ~5 ms for its shapes.
    Only for figures sent as plain dicts (:func:`plain_figures`): plotly.py puts its default template
    into a ``go.Figure`` without one.
    """
    if layout.get("template") is not TEMPLATE and layout.get("template") != TEMPLATE:
        return layout
    tpl = TEMPLATE["layout"]
    out = {k: v for k, v in layout.items() if k != "template"}
    out.setdefault("colorway", tpl["colorway"])
    used = {"xaxis", "yaxis"} | {k for k in out if _AXIS_KEY.match(k)}
    for tr in data or ():
        if isinstance(tr, dict):
            for side in ("x", "y"):
                ref = tr.get(f"{side}axis") or side
                if isinstance(ref, str) and ref[:1] == side:
                    used.add(f"{side}axis{ref[1:]}")
    for k in sorted(used):
        out[k] = _under(tpl[k[0] + "axis"], out.get(k) or {})
    return out


def axis(**kw) -> dict:
    """An axis dict with the house grid style."""
    out = dict(gridcolor=GRID, zeroline=False, automargin=True)
    out.update(kw)
    return out


def title_ann(text: str, x: float, y: float = 1.0) -> dict:
    """A small grey sub-title above a subplot (``x`` in paper coordinates, left-aligned)."""
    return dict(text=text, x=x, xanchor="left", xref="paper", y=y, yanchor="bottom", yref="paper",
                showarrow=False, font=dict(size=12, color="#57606a"))


def empty_figure(message: str, height: int = 220, rev: str = "") -> go.Figure:
    """A blank figure with a centred note (nothing to draw is a result too)."""
    lay = base_layout(height, editrevision=rev, xaxis=dict(visible=False), yaxis=dict(visible=False),
                      annotations=[dict(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                                        font=dict(size=13, color="#57606a"))])
    return make_figure([], lay)
