"""AvgShedder's pairs: hottest with coolest, second with second-to-last, … drawn as links.

Left: brokers on a score axis, each pair an arc from the cool to the hot broker labelled with its
gap and hit counts "k of n". Right: the gaps as bars against the low and high thresholds (the lines
move while their sliders are dragged). Above :data:`MANY_PAIRS` pairs the arcs of each state are one
path shape (exact quadratic curves; the state's line trace stays, empty, for the legend), and so are the
gap bars of each state (:func:`_gap_shapes`).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from engine.strategies import registry

from engine.strategies.registry import explains
from .theme import (LINE, STATUS, axis, base_layout, drag_meta, drag_spec, empty_figure, make_figure,
                    short_name_map, status_color, title_ann)

__all__ = ["avg_pairs", "pair_state", "PAIR_STYLE"]

#: pair state -> (colour, dash, width)
PAIR_STYLE = {"triggered": (STATUS["over"][0], "solid", 3.0), "counting": (STATUS["pending"][0], "solid", 2.2),
              "below": ("#b8c0cc", "dot", 1.4)}
_SPLIT = 0.60  # left panel width (paper)


_T = np.linspace(0.0, 1.0, 13)  # 12 segments: smooth at this size, few points to draw
#: above this many pairs the arcs of each state are one path shape of quadratic curves (a thousand-broker
#: cluster has 500 pairs: as line traces they were 500 SVG paths, all redrawn on every slider release), the
#: gap panel shows the largest gaps and no dot is drawn per broker
MANY_PAIRS = 60
#: the gap panel shows at most this many pairs, the largest gaps (those that shed or count hits first)
MANY_PAIRS_BARS = 100
#: at most this many arcs are drawn, the largest gaps; the panel's title says how many of how many. Every
#: point of an arc is converted to pixels on each slider release that moves pairs between states (500 arcs,
#: a 1,000-broker cluster's pairs: ~20 ms of the release), and hundreds of arcs overlap into one band anyway
MAX_ARCS = 150


def _bezier(x0, y0, cx, cy, x1, y1, t=_T):
    """Points of the quadratic Bezier curve from (x0, y0) to (x1, y1) with control point (cx, cy)."""
    a, b, c = (1 - t) ** 2, 2 * (1 - t) * t, t ** 2
    return (np.round(a * x0 + b * cx + c * x1, 3).tolist(), np.round(a * y0 + b * cy + c * y1, 4).tolist())


def pair_state(p, cfg) -> str:
    """``"triggered"`` (sheds this cycle) | ``"counting"`` (gap >= low) | ``"below"`` (gap < low)."""
    if p.triggered:
        return "triggered"
    if p.gap < cfg.loadBalancerAvgShedderLowThreshold:
        return "below"
    return "counting"


def hits_text(p, n_low: int, n_high: int) -> str:
    """``"high 2 of 2 · low 2 of 8"`` — the larger counter of the pair's two brokers."""
    hl = max(p.hit_low.values()) if p.hit_low else 0
    hh = max(p.hit_high.values()) if p.hit_high else 0
    return f"high {hh} of {n_high} · low {hl} of {n_low}"


def _gap_shapes(pairs, cfg) -> list:
    """Above :data:`MANY_PAIRS` pairs, the gap bars' states: per pair state one path shape of rectangles
    exactly where its bars stand (category ``k`` ± half the bar width) under the transparent, hover-only
    bar trace. The bars' values do not change with the thresholds, their states do: a changed colour or
    hover array makes Plotly recalculate and redraw the whole figure on every release, a changed shape
    redraws only the shapes. Always one shape per state ("M0,0Z" draws nothing)."""
    half = (1 - 0.25) / 2  # theme.base_layout's bargap
    by: dict = {}
    for k, p in enumerate(pairs):
        if p.gap > 0:
            by.setdefault(pair_state(p, cfg), []).append(f"M{k - half:g},0V{round(float(p.gap), 4):g}H{k + half:g}V0Z")
    return [dict(type="path", xref="x2", yref="y2", layer="between", path="".join(by.get(st, ())) or "M0,0Z",
                 fillcolor=PAIR_STYLE[st][0], line=dict(width=0)) for st in PAIR_STYLE]


def avg_pairs(result, cfg, status: dict, *, rev: str = "", height: int = 360) -> go.Figure:
    """The pairs figure of a result whose strategy pairs brokers (its spec's ``explains`` has
    ``"pairs"``: AvgShedder); an explanatory blank for other strategies."""
    if result is None or "pairs" not in explains(result.strategy):
        who = ", ".join(s.name for s in registry.specs(role="shedding") if "pairs" in s.explains)
        return empty_figure(f"Pairs are drawn for {who or 'strategies that pair brokers'}", rev=rev)
    pairs = list(result.pairs)
    scores = {b: float(s) for b, s in result.scores.items()}
    low, high = cfg.loadBalancerAvgShedderLowThreshold, cfg.loadBalancerAvgShedderHighThreshold
    n_low, n_high = cfg.loadBalancerAvgShedderHitCountLowThreshold, cfg.loadBalancerAvgShedderHitCountHighThreshold
    names = list(scores)  # by score, lowest first, ties in the dict's order (a stable sort)
    brokers = [names[i] for i in np.argsort(np.fromiter(scores.values(), dtype=np.float64, count=len(names)),
                                            kind="stable").tolist()]
    short = short_name_map(brokers)
    max_gap = max([p.gap for p in pairs] + [1.0])
    span0 = max(1.0, (max(scores.values()) - min(scores.values())) if scores else 1.0)
    ypos, stacked, prev, rank = {}, set(), None, 0
    if len(brokers) > 12:
        ypos = dict.fromkeys(brokers, 0.0)
    for b in brokers if len(brokers) <= 12 else ():  # brokers with (nearly) the same score are stacked
        if prev is not None and scores[b] - scores[prev] < 0.03 * span0:  # downwards, names to the right
            rank += 1
            stacked.update({b, prev})
        else:
            rank = 0
        ypos[b] = -0.1 * rank
        prev = b
    data, anns = [], []
    label_all = len(pairs) <= 8
    label_any = len(pairs) <= 12  # beyond that the labels would pile up: hover and the gap panel tell
    span = max(1.0, (max(scores.values()) - min(scores.values())) if scores else 1.0)
    placed = []  # (centre x, height) of the labels so far: similar arcs get their labels stacked
    # each pair a quadratic Bezier curve, sampled; one line trace per pair state (its legend entry too):
    # three SVG paths instead of a path shape per pair, which Plotly lays out and draws one by one
    ends = {st: [] for st in PAIR_STYLE}  # per state: each arc's (x0, y0, control x, control y, x1, y1)
    t = _T
    drawn = pairs if len(pairs) <= MAX_ARCS else sorted(pairs, key=lambda p: -p.gap)[:MAX_ARCS]
    for p in drawn:
        st = pair_state(p, cfg)
        col, dash, width = PAIR_STYLE[st]
        x0, x1 = p.low_score, p.high_score
        y0, y1 = ypos.get(p.low, 0.0), ypos.get(p.high, 0.0)
        h = 0.25 + 0.75 * (p.gap / max_gap)
        cx = (x0 + x1) / 2
        lh = h
        labelled = label_any and (label_all or st != "below")
        while labelled and any(abs(cx - px) < 0.35 * span and abs(lh - ph) < 0.11 for px, ph in placed):
            lh += 0.11
        if labelled:
            placed.append((cx, lh))
        ctrl = (y0 + y1) / 2 + 2 * h  # the curve peaks at (y0 + y1) / 2 + h
        ends[st].append((x0, y0, cx, ctrl, x1, y1))
        if labelled:
            label = f"gap {p.gap:.1f} · {hits_text(p, n_low, n_high)}"
            anns.append(dict(x=cx, y=lh, xref="x", yref="y", text=label, showarrow=False, yanchor="bottom",
                             font=dict(size=10.5, color=col if st != "below" else "#6e7781"),
                             bgcolor="rgba(255,255,255,0.85)"))
    arcs = {st: ([], []) for st in PAIR_STYLE}
    arc_shapes = []  # above MANY_PAIRS: one path shape per state (see below)
    for st, e in ends.items():  # all arcs of a state at once (the points _bezier gives each), a gap after each
        if len(pairs) > MANY_PAIRS:
            # hundreds of arcs: each state's arcs as one SVG path of quadratic curves (the same curve _bezier
            # samples, drawn exactly). A line trace with gaps is one SVG path per arc (500 at 1,000 brokers,
            # all redrawn on every release); the state's trace stays, empty, for its legend entry
            col, dash, width = PAIR_STYLE[st]
            arc_shapes.append(dict(
                type="path", xref="x", yref="y", layer="above", fillcolor="rgba(0,0,0,0)",
                line=dict(color=col, width=width if dash == "solid" else 0.8),
                # a shape per state even without arcs ("M0,0Z" draws nothing): a release that changes the
                # number of shapes makes Plotly recalculate and redraw the whole figure
                path="".join(f"M{x0:.3f},{y0:.4f}Q{c0:.3f},{c1:.4f} {x1:.3f},{y1:.4f}"
                             for x0, y0, c0, c1, x1, y1 in e) or "M0,0Z"))
        elif e:
            xs, ys = _bezier(*np.asarray(e, dtype=float).T[:, :, None], t)
            arcs[st] = ([v for row in xs for v in (*row, None)], [v for row in ys for v in (*row, None)])
    # the arcs first, so the broker markers are drawn over them
    for name, st in (("triggered: sheds this cycle", "triggered"), ("gap ≥ low: counting hits", "counting"),
                     ("gap < low: counters reset", "below")):
        col, dash, width = PAIR_STYLE[st]
        if len(pairs) > MANY_PAIRS and dash != "solid":  # hundreds of dotted arcs: slow to stroke, a thin line
            dash, width = "solid", 0.8
        ax, ay = arcs[st] if arcs[st][0] else ([None], [None])
        data.append(dict(type="scatter", x=ax, y=ay, mode="lines", name=name, hoverinfo="skip",
                         line=dict(color=col, dash=dash, width=width), xaxis="x", yaxis="y"))
    few = len(brokers) <= 12
    positions = ["middle right" if b in stacked else "bottom center" for b in brokers]
    # above MANY_PAIRS pairs no dot per broker (a thousand, recoloured on every release): the arcs end at them
    if len(pairs) <= MANY_PAIRS:
        data.append(dict(
            type="scatter", x=[scores[b] for b in brokers], y=[ypos[b] for b in brokers], xaxis="x", yaxis="y",
            mode="markers+text" if few else "markers", text=[short[b] for b in brokers], textposition=positions,
            textfont=dict(size=10), showlegend=False, customdata=brokers,
            marker=dict(size=12 if len(brokers) <= 30 else 7,
                        color=[status_color(status.get(b, "ok")) for b in brokers], line=dict(width=1, color="white")),
            hovertemplate="<b>%{customdata}</b><br>score %{x:.2f} %<extra></extra>",
        ))
    n_pairs = len(pairs)
    pairs = sorted(pairs, key=lambda p: -p.gap)[:MANY_PAIRS_BARS]  # the gap panel: largest gap first
    labels = [f"{short.get(p.high, p.high)} → {short.get(p.low, p.low)}" for p in pairs]
    gap_states = n_pairs > MANY_PAIRS  # the bars' states as shapes (see _gap_shapes)
    if gap_states:
        data.append(dict(
            type="bar", x=labels, y=[p.gap for p in pairs], xaxis="x2", yaxis="y2", showlegend=False,
            marker=dict(color="rgba(0,0,0,0)", line=dict(width=0)), cliponaxis=False,
            hovertemplate="<b>%{x}</b><br>gap %{y:.2f}<br>state: colour (reasons in the decision card)<extra></extra>",
        ))
    else:
        data.append(dict(
            type="bar", x=labels, y=[p.gap for p in pairs], xaxis="x2", yaxis="y2", showlegend=False,
            marker=dict(color=[PAIR_STYLE[pair_state(p, cfg)][0] for p in pairs]),
            text=[hits_text(p, n_low, n_high).replace("high ", "H ").replace("low ", "L ").replace(" of ", "/")
                  for p in pairs] if label_any else None, textposition="outside", textfont=dict(size=10),
            cliponaxis=False,
            hovertext=[(p.reason or "")[:160] if pair_state(p, cfg) != "below" else "gap below the low threshold"
                       for p in pairs],
            hovertemplate="<b>%{x}</b><br>gap %{y:.2f}<br>%{hovertext}<extra></extra>",
        ))
    shapes, drag = [], {}
    for key, val, col, text in (("loadBalancerAvgShedderLowThreshold", low, LINE["low"], "low"),
                                ("loadBalancerAvgShedderHighThreshold", high, LINE["high"], "high")):
        shapes.append(dict(type="line", xref="x2 domain", x0=0, x1=1, yref="y2", y0=val, y1=val, layer="above",
                           line=dict(color=col, width=1.6, dash="dash")))  # shapes 0 and 1: their drag specs
        anns.append(dict(xref="x2 domain", x=1, xanchor="left", xshift=4, yref="y2", y=val, yanchor="middle",
                         text=f"{text} {val:g}", showarrow=False, font=dict(size=11, color=col)))
        if n_pairs <= MANY_PAIRS:  # the lines follow the slider while it is dragged (assets/shedlab.js)
            drag[key] = [drag_spec(len(shapes) - 1, len(anns) - 1, 0.0, 1.0, text, "", 0)]
        # above MANY_PAIRS pairs they move on release only: each move redraws the figure (~50 ms at 500
        # pairs), and the moves of a quick drag were still being drawn after the release
    shapes += arc_shapes
    if gap_states:
        shapes += _gap_shapes(pairs, cfg)
    anns += [title_ann("pairs on the score axis (arc = pair, label = gap and hit counts)" if len(drawn) == n_pairs
                       else f"the {len(drawn)} largest-gap pairs of {n_pairs:,} on the score axis (arc = pair)", 0),
             title_ann("score gap per pair", _SPLIT + 0.08)]
    lo_x = min(scores.values()) if scores else 0.0
    hi_x = max(scores.values()) if scores else 100.0
    pad = max(3.0, (hi_x - lo_x) * 0.1)
    rpad = pad + (0.12 * span0 if stacked else 0)  # room for names written to the right
    gmax = max([p.gap for p in pairs] + [high, low, 1.0])
    lay = base_layout(
        height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag), hovermode="closest",
        margin=dict(l=40, r=64, t=40, b=86),
        legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0, font=dict(size=11),
                    traceorder="normal"),
        # the axis types given: Plotly otherwise guesses them from the data on every update
        xaxis=axis(domain=[0, _SPLIT], anchor="y", type="linear", range=[lo_x - pad, hi_x + rpad],
                   title=dict(text="score = weighted max usage (%), no history")),
        yaxis=axis(domain=[0, 1], anchor="x", type="linear", visible=False,
                   range=[min([-0.28] + [y - 0.2 for y in ypos.values()]), max([1.3] + [ph + 0.2 for _, ph in placed])]),
        # the range given, as Plotly would compute it: a range Plotly computed itself is written into the layout
        # it was given, and the next update's layout (from Dash's store, without it) then reads as changed: the
        # whole figure recalculated and redrawn on every release
        xaxis2=axis(domain=[_SPLIT + 0.08, 1], anchor="y2", type="category", showgrid=False,
                    range=[-0.5, max(len(pairs), 1) - 0.5],
                    tickangle=-30 if len(pairs) > 3 else 0, tickfont=dict(size=10), showticklabels=label_any,
                    title=dict(text="" if label_any else (f"{len(pairs)} pairs, largest gap first" if len(pairs) == n_pairs
                                                          else f"the {len(pairs)} largest gaps of {n_pairs} pairs"))),
        yaxis2=axis(domain=[0, 1], anchor="x2", type="linear", range=[0, gmax * 1.3], title=dict(text="gap (points)")),
    )
    return make_figure(data, lay)
