"""TransferShedder: each broker's load against the average and the target std, and the std itself.

Left: one bar per broker, its load as TransferShedder sees it (the EMA of the weighted max resource
usage, ``weightedMaxEMA`` × 100), highest first, coloured by what happens to it; lines at the
average, average ± ``loadBalancerBrokerLoadTargetStd`` (they follow the slider while it is dragged),
the overload threshold a max broker must exceed (with average + target) and the underload line.
Right: the std of the loads now, after the planned unloads (TransferShedder's own estimate) and
the target it is compared with. The title says the verdict (``std 18.00 % > target 10.00 % →
shedding`` / ``std under target: no unloads``) and the hit count "k of n".
"""
from __future__ import annotations

import math

import plotly.graph_objects as go

from .scores import _bar_traces, _xaxis
from .theme import (LINE, STATUS, axis, base_layout, drag_meta, drag_spec, empty_figure, hline, make_figure,
                    short_names)

__all__ = ["broker_load", "TARGET_KEY"]

TARGET_KEY = "loadBalancerBrokerLoadTargetStd"
OVERLOAD_KEY = "loadBalancerBrokerOverloadedThresholdPercentage"


def _title(tv) -> tuple[dict, dict]:
    """The verdict as the title, and the hit count "k of n" as a sub-title annotation."""
    col = STATUS["over"][0] if tv.sheds else (STATUS["pending"][0] if tv.condition else "#1f2328")
    hits = "●" * min(tv.hit, tv.needed) + "○" * max(0, tv.needed - tv.hit)
    title = dict(text=f"<b>{tv.verdict(short=True)}</b>", x=0.01, xanchor="left", xref="container", y=0.985,
                 yanchor="top", yref="container", font=dict(size=14, color=col))
    sub = dict(xref="paper", x=0, xanchor="left", yref="paper", y=1, yanchor="bottom", yshift=34, showarrow=False,
               align="left", font=dict(size=12, color="#57606a"),
               text=(f"{tv.hit_text()} {hits if tv.needed <= 12 else ''} (sheds when it exceeds "
                     f"loadBalancerSheddingConditionHitCountThreshold {tv.threshold}) · {tv.label} {tv.code}"))
    return title, sub


def broker_load(tv, status: dict, verdicts, *, rev: str = "", height: int = 420) -> go.Figure:
    """The figure of a :class:`dashboard.tuner.transfer.TransferView` (see the module docstring)."""
    if tv is None or not tv.load:
        return empty_figure("No TransferShedder result: the load balancer or shedding is disabled, or there is at "
                            "most one broker", rev=rev)
    order = list(tv.load)
    names = dict(zip(order, short_names(order)))
    x = [names[b] for b in order]
    data = _bar_traces(order, names, tv.load, status, verdicts, "%")
    shapes, anns, drag = [], [], {}

    def line(y, col, label, dash, key=None, a=0.0, b=0.0, yref="y", unit=" %"):
        s, an = hline(y, col, f"{label} {y:.1f} %", dash=dash, yref=yref)
        if yref == "y":
            s["xref"], s["x0"], s["x1"] = "x domain", 0, 1
            an["xref"], an["x"] = "x domain", 1
        shapes.append(s)
        anns.append(an)
        if key:
            drag.setdefault(key, []).append(drag_spec(len(shapes) - 1, len(anns) - 1, a, b, label, unit, 1))

    avg, target = tv.average, tv.target
    if avg is not None and math.isfinite(avg):
        line(avg, LINE["average"], "average", "dot")
        line(avg + target, LINE["threshold"], "average + target std", "dash", TARGET_KEY, avg, 100.0)
        if avg - target > 0:
            line(avg - target, LINE["band"], "average − target std", "dash", TARGET_KEY, avg, -100.0)
        if tv.underload is not None and tv.underload > 0:
            line(float(tv.underload), LINE["other"], "underloaded below", "dot")
    line(tv.overload, LINE["overload"], "overload threshold", "dashdot", OVERLOAD_KEY, 0.0, 1.0)
    # right panel: std now / after vs the target
    bars_x, bars_y, cols = [], [], []
    if tv.std is not None and math.isfinite(tv.std):
        bars_x.append("std now")
        bars_y.append(round(float(tv.std), 3))
        cols.append(STATUS["over"][0] if tv.std_over_target else STATUS["ok"][0])
    if tv.std_after is not None and math.isfinite(tv.std_after) and tv.sheds:
        bars_x.append("std after")
        bars_y.append(round(float(tv.std_after), 3))
        cols.append(STATUS["destination"][0])
    if bars_x:
        data.append(dict(type="bar", x=bars_x, y=bars_y, xaxis="x2", yaxis="y2", showlegend=False, name="std",
                         marker=dict(color=cols, line=dict(width=0)), text=[f"{v:.2f} %" for v in bars_y],
                         textposition="outside", cliponaxis=False,
                         hovertemplate="%{x}: %{y:.2f} %<extra></extra>"))
    s, an = hline(target, LINE["threshold"], f"target {target:.1f} %", dash="dash", yref="y2")
    s["xref"], s["x0"], s["x1"] = "x2 domain", 0, 1
    an["xref"], an["x"] = "x2 domain", 1
    shapes.append(s)
    anns.append(an)
    drag.setdefault(TARGET_KEY, []).append(drag_spec(len(shapes) - 1, len(anns) - 1, 0.0, 100.0, "target", " %", 1))
    title, sub = _title(tv)
    anns.append(sub)
    finite = [v for v in tv.load.values() if math.isfinite(v)]
    top = max(finite + [tv.overload, (avg or 0) + target, 10.0])
    stop = max(bars_y + [target, 5.0])
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      barmode="overlay", hovermode="closest", title=title, margin=dict(l=56, r=24, t=100, b=48),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1, font=dict(size=11),
                                  bgcolor="rgba(0,0,0,0)"),
                      xaxis=_xaxis(x, domain=[0, 0.78]),
                      yaxis=axis(title=dict(text="load: EMA of weighted max usage (%)"),
                                 range=[0, min(max(top * 1.12, 10.0), 400.0)]),
                      xaxis2=axis(domain=[0.85, 1.0], anchor="y2", type="category", showgrid=False),
                      yaxis2=axis(anchor="x2", side="right", title=dict(text="std of the loads (%)"),
                                  range=[0, stop * 1.3]))
    return make_figure(data, lay)
