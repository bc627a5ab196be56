"""Broker scores as bars with the lines they are compared against, and each resource's share.

The bars are the score the shedding strategy compared (ThresholdShedder: history-smoothed weighted
usage; OverloadShedder / AvgShedder: weighted max usage; UniformLoadShedder: message rate, with a
second row for throughput). Lines: average, average ± threshold, the overload line (which also
drives placement's "retry when overloaded"), UniformLoadShedder's min × (1 + threshold). Markers show
each weighted resource, so one sees *which* resource made a broker hot.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from engine.javacompat import java_double_math
from engine.results import column_of
from engine.strategies.registry import explains

from .theme import (LINE, MB, RESOURCE, axis, base_layout, drag_meta, drag_spec, empty_figure, hline,
                    make_figure, per_column, short_name_map, status_color, status_label, title_ann)

__all__ = ["broker_scores", "LINE_KEYS"]

#: line name -> (colour, dash, slider key moving it, slope of the line in that key)
LINE_KEYS = {
    "average + threshold": (LINE["threshold"], "dash", "loadBalancerBrokerThresholdShedderPercentage", 1.0),
    "average - threshold": (LINE["band"], "dot", "loadBalancerBrokerThresholdShedderPercentage", -1.0),
    "overload": (LINE["overload"], "dashdot", "loadBalancerBrokerOverloadedThresholdPercentage", 1.0),
    "average": (LINE["average"], "dot", None, 0.0),
}
_SKIP = ("(gap)", "max msg rate", "min msg rate")
#: above this many brokers bars are too thin to be read one by one: the figure draws every broker's score
#: as one profile (hover: any broker) and colours in it only the brokers the decision involves (see
#: :func:`_profile`); a thousand bars and two thousand markers, redrawn on every slider release, cost the
#: 1,000-broker page its budget
MANY_BROKERS = 200
_STATES = ("over", "skipped", "pending", "under", "destination", "ok")
_BARGAP = 0.25  # theme.base_layout's bargap: a bar is 0.75 of its category wide


def _order(scores: dict) -> list:
    """The brokers by score, highest first (a score that is not finite first of all), ties in the dict's
    order: one stable sort of the negated scores (as ``sorted`` with that key, without a call per broker)."""
    names = list(scores)
    vals = np.fromiter(scores.values(), dtype=np.float64, count=len(names))
    key = np.where(np.isfinite(vals), -vals, -1e300)
    return [names[i] for i in np.argsort(key, kind="stable").tolist()]


def _bar_traces(order, names, values, status, verdicts, unit, *, xaxis="x", yaxis="y", showlegend=True) -> list:
    """One bar trace coloured per broker state (one trace redraws much faster than one per state), plus
    the legend traces of :func:`_legend_traces`."""
    reasons = dict(zip(column_of(verdicts, "broker"), column_of(verdicts, "reason")))
    fmt = ".2f" if unit == "%" else ",.0f"
    sts = [status.get(b, "ok") for b in order]
    cut = 100 if len(order) > MANY_BROKERS else 240
    out = [dict(
        type="bar", x=[names[b] for b in order], y=[round(float(values[b]), 4) for b in order], name="score",
        marker=dict(color=[status_color(st) for st in sts], line=dict(width=0)), showlegend=False,
        xaxis=xaxis, yaxis=yaxis,
        hovertext=[f"{status_label(st)}<br>{(reasons.get(b) or '')[:cut] if st != 'ok' else ''}"
                   for b, st in zip(order, sts)],
        customdata=list(order),
        hovertemplate="<b>%{customdata}</b><br>score %{y:" + fmt + "} " + unit + "<br>%{hovertext}<extra></extra>",
    )]
    if showlegend:
        out += _legend_traces(set(sts), xaxis=xaxis, yaxis=yaxis)
    return out


def _legend_traces(present, *, xaxis="x", yaxis="y") -> list:
    """An empty bar trace per state carrying its legend, shown for the states ``present`` (always the same
    traces, so a slider release that changes the states only restyles: see :mod:`dashboard.figpatch`)."""
    return [dict(type="bar", x=[None], y=[None], name=status_label(st), xaxis=xaxis, yaxis=yaxis,
                 marker=dict(color=status_color(st)), hoverinfo="skip", showlegend=st in present)
            for st in _STATES]


def _state_shapes(order, values, status) -> list:
    """The binned bars' states (:func:`_binned`): each state's bars as one path shape (filled rectangles
    exactly where the bars stand: category ``k`` ± half the bar width), drawn between the grid and the
    (transparent, hover-only) bar trace. A changed per-bar colour or hover text makes Plotly recalculate
    and redraw every bar on each release; a changed shape redraws only the shapes."""
    half = (1 - _BARGAP) / 2
    by: dict = {}
    for k, b in enumerate(order):
        y = float(values[b])
        if math.isfinite(y) and y > 0:
            by.setdefault(status.get(b, "ok"), []).append(f"M{k - half:g},0V{round(y, 4):g}H{k + half:g}V0Z")
    return [dict(type="path", xref="x", yref="y", layer="between", path="".join(by[st]), fillcolor=status_color(st),
                 line=dict(width=0)) for st in _STATES if st in by]


def _xaxis(x, **kw) -> dict:
    """A category axis in the order of ``x``: the first trace's (the bars, drawn in that order), not a
    ``categoryarray`` — a layout array is a new object in every update ``dcc.Graph`` hands Plotly, and
    Plotly redraws the whole figure for it."""
    many = len(x) > 60
    d = axis(type="category", categoryorder="trace", tickangle=-40 if len(x) > 8 else 0,
             tickfont=dict(size=10 if len(x) > 20 else 11), showgrid=False, showticklabels=not many,
             title=dict(text=f"{len(x)} brokers, highest score first" if many else ""))
    d.update(kw)
    return d


def _group_marks(order, x, groups: dict) -> list:
    """One row of square markers under the bars per isolation group (``engine.policies.broker_groups``:
    "primary: payments", "shared", with the failure domain when there are domains), one legend entry each."""
    palette = ["#6f42c1", "#0a7ea4", "#b35900", "#2f7d32", "#a3336d", "#5c6b7a", "#8a6d00", "#1f6feb"]
    labels = list(dict.fromkeys(groups.get(b, "shared") for b in order))
    out = []
    for i, lab in enumerate(labels):
        sel = [k for k, b in enumerate(order) if groups.get(b, "shared") == lab]
        out.append(dict(type="scatter", x=[x[k] for k in sel], y=[0] * len(sel), mode="markers", name=lab,
                        legendgroup="groups", legendrank=2000 + i,
                        legendgrouptitle=dict(text="isolation group") if i == 0 else None,
                        marker=dict(symbol="square", size=9, color=palette[i % len(palette)],
                                    line=dict(width=0.6, color="white")),
                        cliponaxis=False, customdata=[order[k] for k in sel],
                        hovertemplate="<b>%{customdata}</b><br>" + lab + "<extra></extra>"))
    return out


@java_double_math  # Infinity scores (Double.MAX_VALUE reports) plot without a warning
def broker_scores(view, result, cfg, status: dict, *, rev: str = "", height: int = 380,
                  groups: dict | None = None) -> go.Figure:
    """The scores figure of one shedding result (see the module docstring). ``groups`` (broker → its
    isolation group label) marks each broker's group under its bar."""
    if result is None or not result.scores:
        return empty_figure("No scores: the load balancer or shedding is disabled, or there is at most one broker",
                            rev=rev)
    if result.score_unit == "msg/s":
        return _uniform(view, result, cfg, status, rev=rev, height=height + 110)
    scores = {b: float(s) for b, s in result.scores.items()}
    order = _order(scores)
    if per_column(len(order)) > 1:
        return _binned(result, cfg, status, order, scores, rev=rev, height=height, groups=bool(groups))
    idx = view.broker_index
    known = all(b in idx for b in order)
    if known and len(order) > MANY_BROKERS:
        return _profile(view, result, cfg, status, order, scores, rev=rev, height=height, groups=groups)
    names = short_name_map(order)
    x = [names[b] for b in order]
    data = _bar_traces(order, names, scores, status, result.verdicts, "%")
    if known and len(order) <= MANY_BROKERS:
        pos = np.array([idx[b] for b in order], dtype=np.int64)
        w = cfg.weights
        res = {"cpu": view.cpu, "directMemory": view.direct_memory, "bandwidthIn": view.bandwidth_in,
               "bandwidthOut": view.bandwidth_out}
        many = len(order) > 40
        if not many:  # every weighted resource of every broker
            for i, (key, arr) in enumerate(res.items()):
                if w[i] == 0:
                    continue
                col, sym, lab = RESOURCE[key]
                data.append(dict(
                    type="scatter", x=x, y=np.round(arr[pos] * w[i], 3).tolist(), mode="markers",
                    name=f"{lab} × {w[i]:g}", legendgroup="res",
                    marker=dict(symbol=sym, size=8, color=col, line=dict(width=0.6, color="white")),
                    hovertemplate=f"{lab} × {w[i]:g}: %{{y:.1f}} %<extra></extra>",
                ))
        else:  # many brokers: one marker each, for the resource that sets its max (all four in the hover)
            keys = list(res)
            stack = np.vstack([res[k][pos] * w[i] for i, k in enumerate(keys)])
            top = np.argmax(stack, axis=0)
            for i, key in enumerate(keys):
                sel = np.flatnonzero((top == i) & (w[i] > 0))
                if not len(sel):
                    continue
                col, sym, lab = RESOURCE[key]
                data.append(dict(
                    type="scatter", x=[x[k] for k in sel.tolist()], y=np.round(stack[i, sel], 3).tolist(),
                    mode="markers", name=f"{lab} sets the max", legendgroup="res",
                    marker=dict(symbol=sym, size=6, color=col, line=dict(width=0)),
                    customdata=np.round(stack[:, sel].T, 1).tolist(),
                    hovertemplate=("cpu %{customdata[0]} · direct memory %{customdata[1]} · bandwidth in "
                                   "%{customdata[2]} · out %{customdata[3]} (weighted %)<extra></extra>"),
                ))
        real = view.usage_with_weight(w)[pos] * 100
        if np.nanmax(np.abs(real - np.array([scores[b] for b in order]))) > 0.05:
            data.append(dict(
                type="scatter", x=x, y=np.round(real, 3).tolist(), mode="markers", name="weighted usage now",
                marker=dict(symbol="line-ew", size=8 if many else 16, color="#1f2328", line=dict(width=2.4, color="#1f2328")),
                hovertemplate="weighted usage now: %{y:.1f} %<extra></extra>",
            ))
    if groups:
        data += _group_marks(order, x, groups)
    shapes, anns, drag, lines = _line_marks(result, cfg)
    finite = [scores[b] for b in order if math.isfinite(scores[b])]
    top = max(finite + list(lines.values()) + [10.0])
    ylabel = ("history-smoothed weighted usage (%)" if "score_history" in explains(result.strategy)
              else "weighted max usage (%)")
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      barmode="overlay", hovermode="closest", xaxis=_xaxis(x),
                      yaxis=axis(title=dict(text=ylabel), range=[0, min(max(top * 1.12, 10.0), 400.0)]))
    return make_figure(data, lay)


def _profile(view, result, cfg, status, order, scores, *, rev, height, groups):
    """More than :data:`MANY_BROKERS` brokers (up to :data:`~.theme.MAX_COLUMNS`): too many to read as
    separate bars, and too many to redraw as bars on every slider release.

    Every broker's score is one filled step profile on a rank axis (highest score first, broker ``k`` in
    ``[k - ½, k + ½]``): a single trace, the same for every setting of the thresholds, whose hover names
    any broker with its score and weighted resources. The brokers the decision involves (every state but
    "ok": shed from, skipped, counting hits, cool partners, destinations) are coloured in it, each
    state one path shape over exactly those brokers' steps; the other brokers stay the grey profile.
    The figure says how many brokers are coloured and how many summarised. A slider release then
    re-sends and redraws only shapes (lines and states) and annotations."""
    n = len(order)
    idx = view.broker_index
    pos = np.array([idx[b] for b in order], dtype=np.int64)
    w = cfg.weights
    stack = np.vstack([arr[pos] * w[i] for i, arr in enumerate((view.cpu, view.direct_memory, view.bandwidth_in,
                                                                 view.bandwidth_out))])
    real = view.usage_with_weight(w)[pos] * 100  # the weighted usage now (ThresholdShedder's score is smoothed)
    res = np.round(np.vstack([stack, real]).T, 1).tolist()
    shapes, anns, drag, lines = _line_marks(result, cfg)
    finite = [scores[b] for b in order if math.isfinite(scores[b])]
    ymax = min(max(max(finite + list(lines.values()) + [10.0]) * 1.12, 10.0), 400.0)
    ys = [round(float(scores[b]), 4) if math.isfinite(scores[b]) else ymax for b in order]
    # the ends repeated at the slot edges, so the first and last steps are as wide as the others
    xs = [-0.5, *range(n), n - 0.5]
    yy = [ys[0], *ys, ys[-1]]
    cd = [[b, *r] for b, r in zip(order, res)]
    data = [dict(
        type="scatter", x=xs, y=yy, mode="lines", line=dict(shape="hvh", width=0, color=status_color("ok")),
        fill="tozeroy", fillcolor=status_color("ok"), hoveron="points",
        customdata=[cd[0], *cd, cd[-1]],
        hoverlabel=dict(bgcolor="white", bordercolor="#1b365d", font=dict(color="#1f2328")),
        hovertemplate=("<b>%{customdata[0]}</b><br>score %{y:.2f} %<br>weighted %: cpu %{customdata[1]} · direct "
                       "memory %{customdata[2]} · bandwidth in %{customdata[3]} · out %{customdata[4]}<br>weighted "
                       "usage now %{customdata[5]} %<extra></extra>"))]
    sts = [status.get(b, "ok") for b in order]
    # the legend: the profile is the "ok" entry, the state shapes carry the others (legend-only traces cost
    # each release their defaults and a restyle; a shape's legend entry half of that)
    data[0].update(showlegend="ok" in sts, name=status_label("ok"), legendrank=1000 + _STATES.index("ok"))
    if groups:
        data += _group_marks(order, list(range(n)), groups)
    states = _state_steps(sts, ys)
    # the states under the lines: first in the list, so the lines' drag specs shift by their count
    shapes = states + shapes
    drag = {k: [dict(sp, shape=sp["shape"] + len(states)) for sp in specs] for k, specs in drag.items()}
    involved = sum(st != "ok" for st in sts)
    anns.append(title_ann(f"{n:,} brokers: the {involved:,} the decision involves coloured, the other "
                          f"{n - involved:,} summarised as the grey score profile (hover: any broker; reasons in "
                          "the decision card)", 0, 1.0))
    ylabel = ("history-smoothed weighted usage (%)" if "score_history" in explains(result.strategy)
              else "weighted max usage (%)")
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      hovermode="closest",
                      xaxis=axis(type="linear", range=[-0.5, n - 0.5], showgrid=False, showticklabels=False,
                                 title=dict(text=f"{n:,} brokers, highest score first")),
                      # the axis types given: Plotly otherwise guesses them from the data on every update
                      yaxis=axis(type="linear", title=dict(text=ylabel), range=[0, ymax]))
    return make_figure(data, lay)


def _state_steps(sts, ys) -> list:
    """Per state but "ok" (in :data:`_STATES` order), one path shape filling the profile's steps of the
    brokers in that state (rank ``k``: ``[k - ½, k + ½]`` × ``[0, ys[k]]``), neighbours in the same state
    one polygon."""
    runs: dict = {}
    k, n = 0, len(sts)
    while k < n:
        j = k
        while j + 1 < n and sts[j + 1] == sts[k]:
            j += 1
        if sts[k] != "ok":
            runs.setdefault(sts[k], []).append(
                f"M{k - 0.5:g},0" + "".join(f"V{ys[i]:g}H{i + 0.5:g}" for i in range(k, j + 1)) + "V0Z")
        k = j + 1
    # one shape per state whether present or not ("M0,0Z" draws nothing): the lines after them keep their
    # indices, so the drag specs in ``layout.meta`` stay the same text (a changed meta redraws the figure)
    return [dict(type="path", xref="x", yref="y", layer="above", path="".join(runs.get(st, ())) or "M0,0Z",
                 fillcolor=status_color(st), line=dict(width=0), name=status_label(st), showlegend=st in runs,
                 legendrank=1000 + _STATES.index(st)) for st in _STATES if st != "ok"]


def _line_marks(result, cfg) -> tuple[list, list, dict, dict]:
    """The lines the scores are compared against: (shapes, annotations, drag specs, {name: y})."""
    shapes, anns, drag = [], [], {}
    lines = {k: float(v) for k, v in result.lines.items() if not any(s in k for s in _SKIP)}
    own_overload = "overload" in lines
    if "overload" not in lines and result.score_unit == "%":
        lines["overload"] = float(cfg.loadBalancerBrokerOverloadedThresholdPercentage)
    for name, y in lines.items():
        col, dash, key, slope = LINE_KEYS.get(name, (LINE["other"], "dot", None, 0.0))
        # the overload line is the strategy's own (OverloadShedder's) when its result draws it, else only the
        # line placement's "retry when overloaded" compares with
        label = name if name != "overload" or own_overload else "overload (placement retry)"
        s, a = hline(y, col, f"{label} {y:.1f} %", dash=dash)
        shapes.append(s)
        anns.append(a)
        if key:
            cur = float(getattr(cfg, key))
            drag.setdefault(key, []).append(drag_spec(len(shapes) - 1, len(anns) - 1, y - slope * cur, slope,
                                                      label, " %", 1))
    return shapes, anns, drag, lines


def _binned(result, cfg, status, order, scores, *, rev, height, groups: bool):
    """More brokers than :data:`~.theme.MAX_COLUMNS`: one bar per run of ``k`` neighbouring brokers in
    score order (ranks 1–k, k+1–2k, …), as high as the highest score in it (its first broker's), coloured
    by the most pressing state among its brokers (over, skipped, pending, under, destination, ok) with
    the state shapes of :func:`_state_shapes`. The hover names the run's first and last broker and its
    score range; the figure says what a bar stands for. The bar trace does not change with the
    settings, so a slider release re-sends only the shapes."""
    n = len(order)
    k = per_column(n)
    runs = [order[i:i + k] for i in range(0, n, k)]
    labels = [f"{i * k + 1}–{min(n, (i + 1) * k)}" for i in range(len(runs))]
    rank = {st: r for r, st in enumerate(_STATES)}
    top = {lab: scores[run[0]] for lab, run in zip(labels, runs)}
    # each run's most pressing state: the least rank in it (an unknown state ranks last, as "ok" does not)
    codes = np.fromiter((rank.get(status.get(b, "ok"), len(rank)) for b in order), dtype=np.int64, count=n)
    least = np.minimum.reduceat(codes, np.arange(0, n, k)).tolist() if n else []
    worst = {lab: (_STATES[c] if c < len(_STATES) else min((status.get(b, "ok") for b in run),
                                                            key=lambda st: rank.get(st, len(rank))))
             for lab, run, c in zip(labels, runs, least)}
    data = [dict(
        type="bar", x=labels, y=[round(top[lab], 4) for lab in labels], name="score",
        marker=dict(color="rgba(0,0,0,0)", line=dict(width=0)), showlegend=False,
        hoverlabel=dict(bgcolor="white", bordercolor="#1b365d", font=dict(color="#1f2328")),
        customdata=[[run[0], run[-1], round(scores[run[-1]], 2)] for run in runs],
        hovertemplate=("<b>brokers ranked %{x}</b><br>%{customdata[0]} … %{customdata[1]}<br>scores %{customdata[2]}"
                       " – %{y:.2f} %<extra></extra>"))]
    data += _legend_traces(set(worst.values()))
    shapes, anns, drag, lines = _line_marks(result, cfg)
    shapes += _state_shapes(labels, top, worst)
    anns.append(title_ann(f"{n:,} brokers, {k} per bar: a bar is as high as its highest score, coloured by its most "
                          "pressing state (reasons in the decision card)"
                          + ("; isolation groups not marked at this size" if groups else ""), 0, 1.0))
    finite = [v for v in top.values() if math.isfinite(v)]
    ymax = max(finite + list(lines.values()) + [10.0])
    ylabel = ("history-smoothed weighted usage (%)" if "score_history" in explains(result.strategy)
              else "weighted max usage (%)")
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      barmode="overlay", hovermode="closest",
                      xaxis=_xaxis(labels, title=dict(text=f"{n:,} brokers, highest score first, {k} per bar")),
                      yaxis=axis(title=dict(text=ylabel), range=[0, min(max(ymax * 1.12, 10.0), 400.0)]))
    return make_figure(data, lay)


def _uniform(view, result, cfg, status, *, rev, height):
    """UniformLoadShedder: message rate (row 1) and throughput (row 2) against min-based lines."""
    rates = {b: float(s) for b, s in result.scores.items()}
    order = _order(rates)
    names = short_name_map(order)
    x = [names[b] for b in order]
    idx = view.broker_index
    thr = {b: (float(view.msg_throughput[idx[b]]) / MB if b in idx else 0.0) for b in order}
    data = _bar_traces(order, names, rates, status, result.verdicts, "msg/s", yaxis="y")
    data += _bar_traces(order, names, thr, status, result.verdicts, "MB/s", xaxis="x2", yaxis="y2", showlegend=False)
    shapes, anns, drag = [], [], {}
    rate_th = cfg.loadBalancerMsgRateDifferenceShedderThreshold
    mn = result.lines.get("min msg rate")
    if mn is not None:
        y = float(result.lines.get("min msg rate x (1 + threshold)", mn * (1 + rate_th / 100)))
        s, a = hline(y, LINE["threshold"], f"min × (1 + threshold) = {y:,.0f} msg/s", yref="y")
        shapes.append(s)
        anns.append(a)
        drag["loadBalancerMsgRateDifferenceShedderThreshold"] = [
            drag_spec(0, 0, float(mn), float(mn) / 100.0, "min × (1 + threshold) =", " msg/s", 0)]
    vals = list(thr.values())
    if vals:
        mt = min(vals) if min(vals) > 1e-6 / MB else 1.0 / MB  # Pulsar replaces a ~0 minimum by 1 B/s
        mult = cfg.loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold
        y = mt * mult
        s, a = hline(y, LINE["threshold"], f"min × threshold = {y:,.1f} MB/s", yref="y2")
        shapes.append(s)
        anns.append(a)
        drag["loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold"] = [
            drag_spec(len(shapes) - 1, len(anns) - 1, 0.0, mt, "min × threshold =", " MB/s", 1)]
    anns += [title_ann("message rate (msg/s)", 0, 1.0), title_ann("throughput in + out (MB/s)", 0, 0.44)]
    rmax = max(list(rates.values()) + [1.0])
    tmax = max(vals + [1e-3])
    lay = base_layout(height, shapes=shapes, annotations=anns, editrevision=rev, meta=drag_meta(drag),
                      barmode="overlay", hovermode="closest",
                      xaxis=_xaxis(x, anchor="y", showticklabels=False, title=dict(text="")),
                      xaxis2=_xaxis(x, anchor="y2", matches="x"),
                      yaxis=axis(domain=[0.56, 1.0], range=[0, rmax * 1.15]),
                      yaxis2=axis(domain=[0.0, 0.44], range=[0, tmax * 1.15]))
    return make_figure(data, lay)
