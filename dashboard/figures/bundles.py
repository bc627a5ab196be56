"""Bundles page figures: the namespace layout, a split preview, the vivo occupancy comparison.

Pure functions of plain values (counts, ranges, owners, statuses, engine results) returning a
``go.Figure``; nothing here reads files, caches or Dash state.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.bundles import format_bound

from .theme import LINE, STATUS, base_layout, empty_figure, short_names

__all__ = ["namespace_layout", "split_preview", "occupancy_comparison", "OWNER_COLORS", "MARK"]

#: owner broker colours (cycled); bundles without a listed owner are grey
OWNER_COLORS = ("#3c7dd9", "#0f766e", "#b45309", "#8e6bbf", "#1b365d", "#c2410c", "#4d7c0f", "#be185d",
                "#0369a1", "#854d0e")
_NO_OWNER = "#a9b4c4"
_BAR = "#3c7dd9"
#: auto-split status -> (marker colour, legend label)
MARK = {"split": (STATUS["over"][0], "would auto-split"),
        "capped": (STATUS["pending"][0], "over a threshold, not split")}
_LABEL_COLORS = {"Split": STATUS["destination"][0], "Skip": "#8c959f", "Failure": STATUS["over"][0]}


def _fmt(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 or float(x).is_integer() else f"{x:,.2f}"


def namespace_layout(counts: Sequence[int], ranges: Sequence[str], *, owners: Sequence[str | None] | None = None,
                     msg_rate: Sequence[float] | None = None, status: Sequence[str] | None = None,
                     reasons: Sequence[str] | None = None, quantity: str = "topics",
                     rate_limit: float | None = None, topic_limit: float | None = None,
                     title: str = "", height: int = 420) -> go.Figure:
    """One bar per bundle (hash order): topics per bundle, traffic below when known.

    Parameters
    ----------
    counts : sequence of int
        Topics (partitions) per bundle.
    ranges : sequence of str
        ``0x..._0x...`` of each bundle (hover).
    owners : sequence of str or None, optional
        Owner broker per bundle: bars are coloured by owner (one legend entry each).
    msg_rate : sequence of float, optional
        msg/s per bundle: a second row of bars.
    status : sequence of str, optional
        Per bundle ``"split"`` / ``"capped"`` / ``"ok"`` (:func:`dashboard.bundles.bundle_status`):
        split candidates get a marker above their bar.
    reasons : sequence of str, optional
        Per bundle auto-split reason (hover).
    quantity : str
        What ``counts`` count ("partitions" or "topics"), for the axis.
    rate_limit, topic_limit : float, optional
        ``loadBalancerNamespaceBundleMaxMsgRate`` / ``...MaxTopics``: drawn when near the bars.
    title : str
    """
    counts = np.asarray(counts, dtype=float)
    n = counts.size
    if n == 0:
        return empty_figure("No bundles")
    x = np.arange(n)
    has_rate = msg_rate is not None
    rate = np.nan_to_num(np.asarray(msg_rate, dtype=float)) if has_rate else None
    fig = make_subplots(rows=2 if has_rate else 1, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[0.62, 0.38] if has_rate else None)
    reasons = list(reasons) if reasons is not None else [""] * n
    own = list(owners) if owners is not None else None
    hover = []
    for i in range(n):
        h = f"bundle #{i}<br>{ranges[i]}<br>{int(counts[i])} {quantity}"
        if has_rate:
            h += f"<br>{_fmt(rate[i])} msg/s"
        if own is not None:
            h += f"<br>owner: {own[i] or 'none listed'}"
        if reasons[i]:
            h += f"<br>auto split: {reasons[i]}"
        hover.append(h)
    hover = np.asarray(hover, dtype=object)

    if own is None:
        groups = [(f"{quantity} per bundle", _BAR, np.ones(n, dtype=bool))]
    else:
        brokers = sorted({o for o in own if o})
        labels = dict(zip(brokers, short_names(brokers)))
        groups = [(labels[b], OWNER_COLORS[k % len(OWNER_COLORS)], np.array([o == b for o in own]))
                  for k, b in enumerate(brokers)]
        none = np.array([not o for o in own])
        if none.any():
            groups.append(("no owner listed", _NO_OWNER, none))
    for name, color, sel in groups:
        # explicit width: in overlay mode each trace would size its bars from its own x spacing
        fig.add_bar(x=x[sel], y=counts[sel], name=name, marker_color=color, legendgroup=name, width=0.8,
                    hovertext=hover[sel], hoverinfo="text", row=1, col=1)
        if has_rate:
            fig.add_bar(x=x[sel], y=rate[sel], name=name, marker_color=color, legendgroup=name, showlegend=False,
                        width=0.8, hovertext=hover[sel], hoverinfo="text", row=2, col=1)

    top = float(counts.max()) if n else 0.0
    if status is not None:
        st = np.asarray(list(status), dtype=object)
        for key, (color, label) in MARK.items():
            sel = st == key
            if sel.any():
                fig.add_scatter(x=x[sel], y=counts[sel] + max(top, 1.0) * 0.06, mode="markers", name=label,
                                marker=dict(symbol="triangle-down", size=10, color=color,
                                            line=dict(width=1, color="white")),
                                hovertext=hover[sel], hoverinfo="text", row=1, col=1)
    mean = float(counts.mean())
    fig.add_hline(y=mean, line=dict(color=LINE["average"], dash="dot", width=1.4), row=1, col=1,
                  annotation_text=f"mean {mean:.2f}", annotation_position="top right",
                  annotation_font=dict(size=11, color=LINE["average"]), annotation_bgcolor="rgba(255,255,255,0.85)")
    if topic_limit is not None and 0 < topic_limit <= 1.5 * max(top, 1.0):
        fig.add_hline(y=topic_limit, line=dict(color=LINE["threshold"], dash="dash", width=1.4), row=1, col=1,
                      annotation_text=f"MaxTopics {topic_limit:,g}", annotation_position="top left",
                      annotation_font=dict(size=11, color=LINE["threshold"]),
                      annotation_bgcolor="rgba(255,255,255,0.85)")
    if has_rate and rate_limit is not None and rate.size and 0 < rate_limit <= 1.5 * max(float(rate.max()), 1.0):
        fig.add_hline(y=rate_limit, line=dict(color=LINE["threshold"], dash="dash", width=1.4), row=2, col=1,
                      annotation_text=f"MaxMsgRate {rate_limit:,g}", annotation_position="top right",
                      annotation_font=dict(size=11, color=LINE["threshold"]),
                      annotation_bgcolor="rgba(255,255,255,0.85)")
    fig.update_layout(**base_layout(height if has_rate else int(height * 0.8), barmode="overlay", bargap=0.12,
                                    meta={"rev": "bundles-layout"}, clickmode="event",
                                    title=dict(text=title, x=0, font=dict(size=13)) if title else None,
                                    margin=dict(l=56, r=24, t=64 if title else 36, b=44)))
    fig.update_yaxes(title_text=quantity, rangemode="tozero", row=1, col=1,
                     **({"tick0": 0, "dtick": 1} if top <= 8 else {}))
    if has_rate:
        fig.update_yaxes(title_text="msg/s", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="bundle (index in hash order; click a bar to preview its split)",
                     row=2 if has_rate else 1, col=1)
    fig.update_xaxes(range=[-0.7, n - 0.3])
    return fig


def split_preview(lower: int, upper: int, hashes: Sequence[int], results: Sequence, *, height: int = 280) -> go.Figure:
    """The bundle's hash range with its topics' hashes and each algorithm's split points.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    hashes : sequence of int
        CRC-32 of the topics in the bundle.
    results : sequence of engine.bundles.SplitResult
        One per algorithm; refused boundaries (``Failure``) are drawn hollow.
    """
    rows = ["topics"] + [f"{r.algorithm} · {r.label}" for r in results]
    fig = go.Figure()
    h = [int(v) for v in hashes]
    fig.add_scatter(x=h, y=["topics"] * len(h), mode="markers", name="topic hash",
                    marker=dict(symbol="line-ns-open", size=16, color="#1f2328", line=dict(width=2)),
                    hovertext=[format_bound(v) for v in h], hoverinfo="text", showlegend=False)
    for r, row in zip(results, rows[1:]):
        color = _LABEL_COLORS.get(r.label, "#8c959f")
        pts = [int(p) for p in r.boundaries]
        if pts:
            fig.add_scatter(x=pts, y=[row] * len(pts), mode="markers", showlegend=False,
                            marker=dict(symbol="diamond" if r.ok else "diamond-open", size=12, color=color,
                                        line=dict(width=2, color=color)),
                            hovertext=[f"{r.algorithm}: {format_bound(p)}" for p in pts], hoverinfo="text")
            if r.ok:
                for p in pts:
                    fig.add_shape(type="line", x0=p, x1=p, y0=0, y1=1, yref="paper",
                                  line=dict(color=color, width=1, dash="dot"), layer="below")
        else:
            # at the left edge: the middle is where range_equally_divide cuts
            fig.add_scatter(x=[lower + (upper - lower) * 0.01], y=[row], mode="text", text=["no boundary"],
                            textposition="middle right",
                            textfont=dict(color=color, size=11), showlegend=False, hoverinfo="skip")
    ticks = np.linspace(lower, upper, 5)
    fig.update_layout(**base_layout(height, meta={"rev": "bundles-split"},
                                    margin=dict(l=230, r=24, t=16, b=40)))
    fig.update_xaxes(range=[lower, upper], tickvals=ticks.tolist(), ticktext=[format_bound(int(t)) for t in ticks],
                     title_text=f"hash range of bundle {format_bound(lower)}_{format_bound(upper)}",
                     showgrid=True)
    fig.update_yaxes(categoryorder="array", categoryarray=rows[::-1], type="category")
    return fig


def occupancy_comparison(rows: Sequence, *, height: int = 300) -> go.Figure:
    """Bundles by load relative to the mean, for each partition count of the vivo comparison.

    With every partition carrying the same traffic, a bundle holding ``k`` partitions carries
    ``k / mean`` times the average bundle load; the farther right the last bar, the harder the
    namespace is to balance. ``rows`` are :class:`dashboard.bundles.ComparisonRow`
    (``partitions``, ``bundles``, ``occupancy``, ``distribution``).
    """
    if not rows:
        return empty_figure("Nothing to compare")
    fig = go.Figure()
    colors = (STATUS["over"][0], STATUS["destination"][0], _BAR, STATUS["pending"][0])
    top = 0.0
    for j, r in enumerate(rows):
        mean = r.distribution.mean
        ks = [k for k, v in enumerate(r.occupancy) if v]
        xs = [k / mean if mean else 0.0 for k in ks]
        ys = [r.occupancy[k] for k in ks]
        top = max(top, max(xs, default=0.0))
        fig.add_bar(x=xs, y=ys, width=0.42, offset=-0.44 + 0.44 * j,
                    name=f"{r.partitions} partitions (max/mean {r.distribution.max_over_mean:.2f})",
                    marker_color=colors[j % len(colors)], text=[str(v) for v in ys], textposition="outside",
                    cliponaxis=False,
                    hovertext=[f"{v} bundle{'s' if v != 1 else ''} with {k} partition{'s' if k != 1 else ''} "
                               f"= {x:.2f} × mean" for k, x, v in zip(ks, xs, ys)], hoverinfo="text")
    fig.update_layout(**base_layout(height, meta={"rev": "bundles-occupancy"}, margin=dict(l=56, r=24, t=40, b=44)))
    fig.update_xaxes(title_text="bundle load ÷ mean bundle load (every partition carrying the same traffic)",
                     range=[-0.8, top + 1.0], dtick=1.5 if top <= 15 else None, zeroline=False)
    fig.update_yaxes(title_text="bundles", rangemode="tozero")
    return fig
