"""Where an unloaded bundle goes: the placement strategy's scores of the candidate brokers.

LeastResourceUsageWithWeight: history-smoothed usage against average − band (only brokers below it
are drawn from; none → a random draw among all, the over-loading BIGO saw). LeastLongTermMessageRate:
long-term message rate, overloaded brokers at +∞. AvgShedder / round robin have no scores: the
reason is written instead.
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from .theme import (LINE, STATUS, axis, base_layout, drag_meta, drag_spec, empty_figure, hline, make_figure,
                    short_names)

__all__ = ["placement_scores"]

_BAND_KEY = "loadBalancerAverageResourceUsageDifferenceThresholdPercentage"
#: above this many candidates only the lowest-scored ones (those the strategies pick from) and the chosen
#: broker are drawn; the lines are still the strategy's, over every candidate (a thousand bars redrawn on
#: every slider release cost the 1,000-broker page its budget)
MANY_CANDIDATES = 150


def placement_scores(decision, cfg, *, rev: str = "", height: int = 320) -> go.Figure:
    """The candidates' scores of one ``selectBroker`` call (the first unload of the cycle)."""
    if decision is None:
        return empty_figure("No bundle is placed this cycle", height=120, rev=rev)
    scores = decision.scores
    if not scores:
        return empty_figure(_wrap(f"<b>{decision.bundle}</b> → <b>{decision.broker}</b><br>"
                                  f"{decision.strategy}: {decision.reason}"), height=150, rev=rev)
    finite = [v for v in scores.values() if math.isfinite(v)]
    cap = (max(finite) * 1.15 if finite else 1.0) or 1.0
    order = sorted(scores, key=lambda b: (scores[b] if math.isfinite(scores[b]) else float("inf")))
    n_all = len(order)
    if n_all > MANY_CANDIDATES:
        keep = order[:MANY_CANDIDATES]
        if decision.broker in scores and decision.broker not in keep:
            keep.append(decision.broker)
        order = keep
    names = dict(zip(order, short_names(order)))
    best = set(decision.best)
    colors, texts, ys = [], [], []
    for b in order:
        v = scores[b]
        if b == decision.broker:
            colors.append(STATUS["destination"][0])
            texts.append("chosen")
        elif b in best:
            colors.append("#8fd0b4")
            texts.append("")
        else:
            colors.append(STATUS["ok"][0])
            texts.append("")
        if math.isfinite(v):
            ys.append(v)
        else:
            ys.append(cap)
            texts[-1] = "overloaded (+∞)"
            colors[-1] = STATUS["over"][0] if b != decision.broker else colors[-1]
    unit = decision.score_unit or ""
    fmt = ".2f" if unit == "%" else ",.0f"
    x = [names[b] for b in order]
    data = [dict(
        type="bar", x=x, y=[round(float(v), 4) for v in ys], marker=dict(color=colors), text=texts,
        textposition="outside", textfont=dict(size=10), customdata=order, showlegend=False, cliponaxis=False,
        hovertemplate="<b>%{customdata}</b><br>%{y:" + fmt + "} " + unit + "<extra></extra>",
    )]
    shapes, anns, drag = [], [], {}
    for name, y in (decision.lines or {}).items():
        col = LINE["band"] if "threshold" in name else LINE["average"]
        s, a = hline(float(y), col, f"{name} {float(y):.1f} {unit}".strip(), dash="dash" if "threshold" in name else "dot")
        shapes.append(s)
        anns.append(a)
        if name == "average - threshold":
            cur = float(getattr(cfg, _BAND_KEY))
            drag[_BAND_KEY] = [drag_spec(len(shapes) - 1, len(anns) - 1, float(y) + cur, -1.0, "average - threshold",
                                         " %", 1)]
    filt = [f for f in decision.filters if f.removed]
    sub = "; ".join(f"{f.name}: removed {len(f.removed)}" for f in filt[:3])
    if len(order) < n_all:
        sub = (f"the {MANY_CANDIDATES} lowest-scored of {n_all} candidates" + (" and the chosen broker"
               if len(order) > MANY_CANDIDATES else "") + (f"; {sub}" if sub else ""))
    title = (f"<b>{decision.bundle}</b> → <b>{decision.broker}</b>"
             + (f"<br>random draw among {len(best)}" if decision.random else "")
             + (f"<br><span style='font-size:11px;color:#57606a'>{sub}</span>" if sub else ""))
    ymax = max(ys + [float(v) for v in (decision.lines or {}).values()] + [1.0])
    top = 36 + 16 * (bool(sub) + bool(decision.random))
    anns.append(dict(text=title, x=0, xanchor="left", xref="paper", y=1, yanchor="bottom", yref="paper", yshift=6,
                     showarrow=False, align="left", font=dict(size=12, color="#1f2328")))
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      margin=dict(l=56, r=24, t=top, b=48),
                      # categories in the bars' order, not a categoryarray (see dashboard.figures.scores._xaxis)
                      xaxis=axis(type="category", categoryorder="trace", showgrid=False,
                                 tickangle=-40 if len(order) > 8 else 0, showticklabels=len(order) <= 60),
                      yaxis=axis(title=dict(text=f"placement score ({unit})"), range=[0, ymax * 1.18]))
    return make_figure(data, lay)


def _wrap(text: str, width: int = 110) -> str:
    out, line = [], ""
    for word in text.split(" "):
        if len(line) + len(word) > width and line:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    out.append(line)
    return "<br>".join(out)
