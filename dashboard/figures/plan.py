"""The unload plan's effect: each broker's traffic before and after, and the max/min ratios.

"After" moves each unloaded bundle's short-term traffic from its broker to its destination — an
estimate of the next load reports (Pulsar measures again after the move). One figure, two panels:
the brokers (those that change first, then the busiest) and the max/min ratios of message rate and
throughput across all brokers (1.0 = perfectly even; BIGO's UniformLoadShedder panels). Above
:data:`~.scores.MANY_BROKERS` brokers the ratios are written in the corner instead of drawn as a second
panel (its axes, bars and their labels redrawn on every slider release cost the page ~25 ms).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.javacompat import java_double_math

from .scores import MANY_BROKERS
from .theme import LINE, MB, STATUS, axis, base_layout, empty_figure, make_figure, short_names, status_color, title_ann

__all__ = ["before_after", "ratio_text"]

_SPLIT = 0.70


def ratio_text(v) -> str:
    return f"{v:,.2f}×" if v is not None else "∞ (a broker has no traffic)"


@java_double_math  # Infinity throughputs (Double.MAX_VALUE reports) plot without a warning
def before_after(view, before_thr, after_thr, before_rate, after_rate, status: dict, ratios: dict | None = None, *,
                 rev: str = "", height: int = 340, top: int = 40) -> go.Figure:
    """Grouped bars of broker throughput before/after (MB/s), and the max/min ratios beside them."""
    if view.nb == 0:
        return empty_figure("No brokers", rev=rev)
    before_thr, after_thr = np.asarray(before_thr, float), np.asarray(after_thr, float)
    order = np.argsort(-before_thr, kind="stable")
    moved = {int(i) for i in np.flatnonzero(np.abs(after_thr - before_thr) > 1e-9)}
    if len(order) > top:  # every broker that changed, then the busiest
        keep = list(dict.fromkeys([int(i) for i in order if int(i) in moved] + [int(i) for i in order]))[:top]
        order = np.array(sorted(keep, key=lambda i: -before_thr[i]))
    full = [view.brokers[i] for i in order]
    x = short_names(full)
    b = before_thr[order] / MB
    a = after_thr[order] / MB
    br = np.asarray(before_rate, float)[order]
    ar = np.asarray(after_rate, float)[order]
    colors = [status_color(status.get(f, "ok")) if abs(a[k] - b[k]) > 1e-9 else "#6e7781" for k, f in enumerate(full)]
    data = [
        dict(type="bar", x=x, y=np.round(b, 4).tolist(), name="before", marker=dict(color="#d0d7de"),
             customdata=[[f, float(r)] for f, r in zip(full, br)], xaxis="x", yaxis="y",
             hovertemplate="<b>%{customdata[0]}</b><br>before %{y:,.2f} MB/s · %{customdata[1]:,.0f} msg/s<extra></extra>"),
        dict(type="bar", x=x, y=np.round(a, 4).tolist(), name="after (estimated)", marker=dict(color=colors),
             showlegend=False,
             customdata=[[f, float(r), float(d)] for f, r, d in zip(full, ar, a - b)], xaxis="x", yaxis="y",
             hovertemplate=("<b>%{customdata[0]}</b><br>after %{y:,.2f} MB/s · %{customdata[1]:,.0f} msg/s"
                            "<br>change %{customdata[2]:+,.2f} MB/s<extra></extra>")),
    ]
    # the legend of the "after" bars (theirs would take the first bar's colour)
    data.append(dict(type="bar", x=[None], y=[None], name="after (estimated; red gives, green takes)",
                     marker=dict(color="#6e7781"), xaxis="x", yaxis="y", hoverinfo="skip"))
    anns = [title_ann(f"throughput per broker (MB/s){'' if len(order) == view.nb else f', {len(order)} of {view.nb}'}", 0)]
    if view.nb <= MANY_BROKERS:
        anns.append(title_ann("max / min across brokers", _SPLIT + 0.08))
    if len(full) <= 24:
        for k in range(len(full)):
            d = a[k] - b[k]
            if abs(d) > 1e-6:
                anns.append(dict(x=x[k], y=float(max(a[k], b[k])), xref="x", yref="y", text=f"{d:+,.1f}",
                                 showarrow=False, yanchor="bottom",
                                 font=dict(size=10, color=STATUS["over"][0] if d < 0 else STATUS["destination"][0])))
    shapes, vals = [], []
    many = view.nb > MANY_BROKERS
    if ratios and many:  # the ratios as text: a second subplot redrawn on every release costs ~25 ms
        anns.append(dict(text="<b>max / min across brokers</b>, before → after (estimated)<br>" + "<br>".join(
            f"{c}: {ratio_text(ratios[c][0])} → {ratio_text(ratios[c][1])}" for c in ratios),
            x=1, xanchor="right", xref="paper", y=1, yanchor="top", yref="paper", showarrow=False, align="right",
            bgcolor="rgba(255,255,255,0.85)", font=dict(size=11, color="#57606a")))
    elif ratios:
        cats = list(ratios)
        for k, (name, col) in enumerate((("before", "#d0d7de"), ("after (estimated)", "#1b365d"))):
            ys = [float(ratios[c][k]) if ratios[c][k] is not None else 0.0 for c in cats]
            vals += [v for v in ys if v]
            data.append(dict(type="bar", x=cats, y=ys, name=name, marker=dict(color=col), showlegend=False,
                             text=[ratio_text(ratios[c][k]) for c in cats], textposition="outside", cliponaxis=False,
                             textfont=dict(size=10.5), xaxis="x2", yaxis="y2",
                             hovertemplate="%{x} " + name + ": %{text}<extra></extra>"))
        shapes.append(dict(type="line", xref="x2 domain", x0=0, x1=1, yref="y2", y0=1, y1=1,
                           line=dict(color=LINE["even"], width=1.2, dash="dot")))
    split = 1.0 if many else _SPLIT
    wide = len(x) > 30
    panels = {} if many else dict(xaxis2=axis(domain=[_SPLIT + 0.08, 1], anchor="y2", type="category", showgrid=False),
                                  yaxis2=axis(anchor="x2", range=[0, max(vals + [1.5]) * 1.3]))
    lay = base_layout(
        height, barmode="group", annotations=anns, shapes=shapes, editrevision=rev, bargap=0.2, bargroupgap=0.05,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=split, font=dict(size=11),
                    bgcolor="rgba(0,0,0,0)", traceorder="normal"),
        # categories in the bars' order, not a categoryarray (see dashboard.figures.scores._xaxis)
        xaxis=axis(domain=[0, split], anchor="y", type="category", categoryorder="trace",
                   showgrid=False, tickangle=-40 if len(x) > 8 else 0, showticklabels=not wide,
                   title=dict(text=f"{len(x)} brokers, busiest first" if wide else "")),
        yaxis=axis(anchor="x", type="linear", title=dict(text="MB/s in + out"), rangemode="tozero"),
        **panels,
    )
    return make_figure(data, lay)
