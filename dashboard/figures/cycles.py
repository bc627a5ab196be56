""""Run N cycles" on the same snapshot: how scores, hit counts and history build up.

Row 1: the score each broker gets per cycle (ThresholdShedder's history creeps toward the real
usage; AvgShedder's and OverloadShedder's scores stay put), unloads marked ×. Row 2: unloads per
cycle. Row 3 (AvgShedder): the hit counters against the hit-count thresholds; (TransferShedder, with
``hits``): the hit count each cycle compared against ``loadBalancerSheddingConditionHitCountThreshold``.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.strategies.registry import explains
from .theme import LINE, STATUS, axis, base_layout, empty_figure, make_figure, short_names, title_ann

__all__ = ["cycles_figure", "PALETTE"]

PALETTE = ["#1b365d", "#3c7dd9", "#0f766e", "#b45309", "#8e6bbf", "#d1495b", "#239a6b", "#57606a", "#e49b2f",
           "#0e7490", "#9a3412", "#4c1d95"]


def _nan(v):
    return None if v is None or (isinstance(v, float) and not np.isfinite(v)) else float(v)


def cycles_figure(cycles, cfg, *, rev: str = "", top: int = 10, height: int = 470, hits: list | None = None) -> go.Figure:
    """The figure of a list of :class:`engine.results.Cycle` (``hits``: TransferShedder's hit count per cycle,
    :func:`dashboard.tuner.transfer.hit_counts`). A third row of hit counters is drawn for a strategy
    whose results carry pairs (its spec's ``explains``: AvgShedder) or when ``hits`` are given."""
    if hits is not None:
        hits = [k for c, k in zip(cycles, hits) if c.shedding is not None]
    cycles = [c for c in cycles if c.shedding is not None]
    if not cycles:
        return empty_figure("No shedding ran (disabled, or at most one broker)", rev=rev)
    avg = "pairs" in explains(cycles[0].shedding.strategy) or hits is not None
    if avg:
        domains = {"y": [0.50, 1.0], "y2": [0.33, 0.44], "y3": [0.0, 0.25]}
    else:
        domains = {"y": [0.30, 1.0], "y2": [0.0, 0.20]}
    xs = [c.cycle for c in cycles]
    brokers = list(cycles[-1].shedding.scores)
    series = {b: [c.shedding.scores.get(b, np.nan) for c in cycles] for b in brokers}
    movers = {u.broker for c in cycles for u in c.unloads} | {u.destination for c in cycles for u in c.unloads}
    last_avg = float(np.nanmean([s[-1] for s in series.values()])) if series else 0.0
    spread = {b: (float(np.nanmax(v) - np.nanmin(v)), abs(v[-1] - last_avg)) for b, v in series.items()}
    pick = sorted(brokers, key=lambda b: (b not in movers, -spread[b][1], -spread[b][0]))[:top]
    short = dict(zip(pick, short_names(pick)))
    unit = cycles[0].shedding.score_unit
    data = []
    for k, b in enumerate(pick):
        col = PALETTE[k % len(PALETTE)]
        data.append(dict(type="scatter", x=xs, y=[_nan(v) for v in series[b]], mode="lines+markers", name=short[b],
                         legendgroup=b, line=dict(color=col, width=2), marker=dict(size=5), xaxis="x", yaxis="y",
                         hovertemplate=f"<b>{b}</b><br>cycle %{{x}}: %{{y:,.2f}} {unit}<extra></extra>"))
    for n in [n for n in cycles[-1].shedding.lines if "(gap)" not in n and "msg rate" not in n]:
        col = LINE["threshold"] if "+" in n else (LINE["overload"] if n == "overload" else LINE["average"])
        data.append(dict(type="scatter", x=xs, y=[_nan(c.shedding.lines.get(n)) for c in cycles], mode="lines",
                         name=n, line=dict(color=col, dash="dash", width=1.4), xaxis="x", yaxis="y",
                         hovertemplate=f"{n}: %{{y:,.2f}}<extra></extra>"))
    ux, uy, ut = [], [], []
    for c in cycles:
        for u in c.unloads:
            ux.append(c.cycle)
            uy.append(_nan(c.shedding.scores.get(u.broker)))
            ut.append(f"{u.bundle}<br>{u.broker} → {u.destination}")
    if ux:
        data.append(dict(type="scatter", x=ux, y=uy, mode="markers", name="unload", text=ut, xaxis="x", yaxis="y",
                         marker=dict(symbol="x-thin", size=13, color=STATUS["over"][0],
                                     line=dict(width=2.5, color=STATUS["over"][0])),
                         hovertemplate="cycle %{x}: %{text}<extra></extra>"))
    data.append(dict(type="bar", x=xs, y=[len(c.unloads) for c in cycles], marker=dict(color=STATUS["over"][0]),
                     showlegend=False, xaxis="x", yaxis="y2", hovertemplate="cycle %{x}: %{y} unloads<extra></extra>"))
    shapes, anns = [], [title_ann("score per cycle", 0, domains["y"][1]),
                        title_ann("unloads per cycle", 0, domains["y2"][1])]
    if hits is not None:
        th = cfg.loadBalancerSheddingConditionHitCountThreshold
        data.append(dict(type="scatter", x=xs, y=hits, mode="lines+markers", name="hit count", line=dict(
            color=STATUS["pending"][0], width=2, shape="hv"), marker=dict(size=7, color=[
                STATUS["over"][0] if c.shedding.label == "Success" else STATUS["pending"][0] for c in cycles]),
            xaxis="x", yaxis="y3", customdata=[c.shedding.decisions[0].reason if c.shedding.decisions else ""
                                               for c in cycles],
            hovertemplate=f"cycle %{{x}}: hit count %{{y}} of {th + 1} · %{{customdata}}<extra></extra>"))
        shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y3", y0=th + 0.5, y1=th + 0.5,
                           line=dict(color=LINE["high"], dash="dash", width=1.2)))
        anns.append(dict(xref="paper", x=0, xanchor="left", yref="y3", y=th + 0.5, yanchor="bottom", showarrow=False,
                         text=f"sheds above loadBalancerSheddingConditionHitCountThreshold {th}",
                         font=dict(size=10, color=LINE["high"])))
        anns.append(title_ann(f"hit count k of {th + 1} (unloadConditionHitCount; ● red: shed, back to 0)", 0,
                              domains["y3"][1]))
    elif avg:
        n_low = cfg.loadBalancerAvgShedderHitCountLowThreshold
        n_high = cfg.loadBalancerAvgShedderHitCountHighThreshold
        for k, b in enumerate(pick[:6]):
            col = PALETTE[k % len(PALETTE)]
            lows, highs = [], []
            for c in cycles:
                hl = hh = 0
                for p in c.shedding.pairs:
                    if b in (p.low, p.high):
                        hl, hh = p.hit_low.get(b, 0), p.hit_high.get(b, 0)
                lows.append(hl)
                highs.append(hh)
            data.append(dict(type="scatter", x=xs, y=lows, mode="lines", line=dict(color=col, width=1.8),
                             legendgroup=b, showlegend=False, xaxis="x", yaxis="y3",
                             hovertemplate=f"{b}: low hits %{{y}}<extra></extra>"))
            data.append(dict(type="scatter", x=xs, y=highs, mode="lines", line=dict(color=col, width=1.8, dash="dot"),
                             legendgroup=b, showlegend=False, xaxis="x", yaxis="y3",
                             hovertemplate=f"{b}: high hits %{{y}}<extra></extra>"))
        for val, name, col in ((n_low, "HitCountLow", LINE["low"]), (n_high, "HitCountHigh", LINE["high"])):
            shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y3", y0=val, y1=val,
                               line=dict(color=col, dash="dash", width=1.2)))
            anns.append(dict(xref="paper", x=0, xanchor="left", yref="y3", y=val, yanchor="bottom", showarrow=False,
                             text=f"{name} {val}", font=dict(size=10, color=col)))
        anns.append(title_ann("hit counters (solid: low, dotted: high)", 0, domains["y3"][1]))
    lay = base_layout(
        height, editrevision=rev, hovermode="closest", shapes=shapes, annotations=anns,
        legend=dict(orientation="v", x=1.01, y=1, xanchor="left", yanchor="top", font=dict(size=10)),
        margin=dict(l=56, r=160, t=36, b=44),
        xaxis=axis(anchor="y2" if not avg else "y3", showgrid=False, dtick=max(1, len(xs) // 12),
                   title=dict(text="cycle (one shedding interval each)")),
        yaxis=axis(domain=domains["y"], anchor="x", title=dict(text=unit)),
        yaxis2=axis(domain=domains["y2"], anchor="x", rangemode="tozero", dtick=1 if len(cycles) < 30 else None),
    )
    if avg:
        lay["yaxis3"] = axis(domain=domains["y3"], anchor="x", rangemode="tozero")
        if hits is not None:
            lay["yaxis3"].update(range=[0, max(hits + [cfg.loadBalancerSheddingConditionHitCountThreshold + 1]) + 0.6],
                                 dtick=1 if max(hits + [0]) < 12 else None)
    return make_figure(data, lay)
