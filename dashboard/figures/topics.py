"""Per-bundle topic distribution: topics and traffic of every bundle, per broker.

Left: one column per broker (busiest first), one dot per bundle at its short-term throughput, dot
size by topic count, the bundles this cycle unloads ringed in red. Right: how many bundles hold how
many topics — lumpy hashing of few partitions into many bundles (field findings §4) shows at once.
The rings are layout shapes, updated with a ``Patch`` when only the decision changed.
"""
from __future__ import annotations

from itertools import repeat

import numpy as np
import plotly.graph_objects as go

from ..memo import Memo
from .scores import MANY_BROKERS
from .theme import MB, STATUS, axis, base_layout, empty_figure, make_figure, per_column, short_names, title_ann

__all__ = ["topic_distribution", "selected_overlay", "ring_shapes", "y_span", "dots_title", "OVERLAY_TRACE", "MANY",
           "MANY_RINGS", "MANY_RINGS_LARGE", "rings_limit"]

OVERLAY_TRACE = 1
_MAX_NAMES = 3
#: above this many bundles each broker's bundles are summarised as a box (quartiles, min-max): thousands
#: of dots are unreadable, and redrawing them on every slider release would cost the page its budget
MANY = 2000
#: at most this many unloaded bundles are ringed, the busiest (the title says how many of how many):
#: 1,800 rings re-drawn on every slider release cost the 1,000-broker page ~40 ms
MANY_RINGS = 300
#: above :data:`~.scores.MANY_BROKERS` brokers at most this many: every corner of every ring is converted to
#: pixels on each release (~10 ms for 300 rings on the 1,000-broker page)
MANY_RINGS_LARGE = 100


def rings_limit(n_brokers: int) -> int:
    """How many unloaded bundles are ringed at most on a cluster of ``n_brokers``."""
    return MANY_RINGS_LARGE if n_brokers > MANY_BROKERS else MANY_RINGS


def _dots(view, x, owner, thr, rate, size, bundle_topics) -> dict:
    """One dot per bundle (small clusters)."""
    bt = bundle_topics or {}
    bundles = view.bundles
    sel = np.flatnonzero(owner >= 0)
    cd = []
    for k in sel.tolist():
        tn = bt.get(bundles[k])
        tn_txt = ""
        if tn:
            tn_txt = "<br>" + "<br>".join(t[-60:] for t in tn[:_MAX_NAMES]) + (f"<br>… {len(tn) - _MAX_NAMES} more"
                                                                                if len(tn) > _MAX_NAMES else "")
        cd.append([bundles[k], int(view.topics[k]), float(rate[k]), view.brokers[owner[k]], tn_txt])
    return dict(
        type="scatter", x=np.round(x[sel], 4).tolist(), y=np.round(thr[sel], 4).tolist(), mode="markers",
        name="bundle", xaxis="x", yaxis="y", showlegend=False, customdata=cd,
        marker=dict(size=np.round(size[sel], 2).tolist(), color="#3c7dd9", opacity=0.7, line=dict(width=0)),
        hovertemplate=("<b>%{customdata[0]}</b><br>on %{customdata[3]}<br>%{y:,.2f} MB/s · %{customdata[2]:,.0f} msg/s"
                       "<br>%{customdata[1]} topics%{customdata[4]}<extra></extra>"),
    )


def _boxes(view, order, owner, thr, topics, col) -> dict:
    """Per column (a broker, or a run of :func:`~.theme.per_column` neighbouring brokers in throughput
    order): quartiles and min-max of its bundles' throughput (large clusters). The bundles are grouped
    by column (a radix sort of the column as a small integer), then each column's throughputs are sorted in
    place; the quantiles are read off the sorted runs with numpy's linear interpolation. (Only the values'
    order within a column matters, not which bundle has which: at a million bundles this is ~0.12 s less
    than one sort of every bundle by (column, throughput).)"""
    ncol = int(col.max()) + 1 if len(col) else 0
    ok = owner >= 0
    kc = col[owner[ok]]
    tsum = np.bincount(kc, topics[ok], minlength=ncol)
    srt = np.argsort(kc.astype(np.int16 if ncol <= np.iinfo(np.int16).max else np.int64), kind="stable")
    v, kc = thr[ok][srt], kc[srt]
    n = np.bincount(kc, minlength=ncol)
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    for c in np.flatnonzero(n > 1).tolist():
        v[start[c]:start[c] + n[c]].sort()
    has = n > 0
    vv = np.concatenate([v, [0.0]])  # a column without bundles reads 0

    def q(p):
        pos = start + p * np.maximum(n - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, start + np.maximum(n - 1, 0))
        w = pos - lo
        a, b = vv[np.where(has, lo, len(v))], vv[np.where(has, hi, len(v))]
        out = np.where(w >= 0.5, b - (b - a) * (1 - w), a + (b - a) * w)  # numpy.percentile's interpolation
        return np.round(out, 4).tolist()

    mt = np.round(np.divide(tsum, n, out=np.zeros(ncol), where=has), 1).tolist()
    per = per_column(view.nb)
    if per == 1:
        text = [f"{view.brokers[j]}: {k} bundles, {m} topics each on average"
                for j, k, m in zip(order.tolist(), n.tolist(), mt)]
    else:
        runs = [order[i:i + per] for i in range(0, len(order), per)]
        text = [f"brokers {i * per + 1}–{i * per + len(r)} by throughput ({view.brokers[r[0]]} … "
                f"{view.brokers[r[-1]]}): {k:,} bundles, {m} topics each on average"
                for i, (r, k, m) in enumerate(zip(runs, n.tolist(), mt))]
    return dict(type="box", x=list(range(ncol)), q1=q(0.25), median=q(0.5), q3=q(0.75), lowerfence=q(0.0),
                upperfence=q(1.0), name="bundles", xaxis="x", yaxis="y", showlegend=False,
                fillcolor="rgba(60,125,217,0.25)", line=dict(color="#3c7dd9", width=1), width=0.7, text=text,
                hoverinfo="y+text")


_POSITIONS = Memo(4)


def _layout_positions(view):
    """(broker order by throughput, bundle -> x position array, owner array, broker -> column array); kept
    per view (a view does not change, and the ringed overlay needs them on every slider release: 7 ms at
    100,000 bundles). A column is a broker, or a run of :func:`~.theme.per_column` brokers in that order."""
    got = _POSITIONS.get(id(view))
    if got is not None and got[0] is view:
        return got[1]
    out = _positions(view)
    for arr in out:
        arr.setflags(write=False)  # shared between calls
    _POSITIONS.put(id(view), (view, out))
    return out


def _positions(view):
    order = np.argsort(-view.msg_throughput, kind="stable")
    col = np.empty(view.nb, dtype=np.int64)
    col[order] = np.arange(view.nb) // per_column(view.nb)
    pos = col.astype(float)
    owner = np.full(view.nk, -1, dtype=np.int64)
    for j in range(view.nb - 1, -1, -1):
        o = view.owned[j]
        if len(o):
            owner[o] = j
    k = np.arange(view.nk, dtype=np.int64)
    jitter = (((k * 2654435761) % 1000) / 1000.0 - 0.5) * 0.62
    x = np.where(owner >= 0, pos[np.maximum(owner, 0)] + jitter, np.nan)
    return order, x, owner, col


def ring_shapes(overlay: dict, y_span: float = 1.0, n_brokers: int = 10) -> list:
    """The marks around the unloaded bundles: one path shape of small diamonds (about 8 px each way).
    A slider release then only redraws a shape (cheap, and a few bytes per bundle) instead of the
    figure's data."""
    if not overlay["x"]:  # still one shape, drawing nothing: a change in the number of shapes makes Plotly
        # recalculate and redraw the whole figure (a thousand boxes) on the release that changes it
        return [dict(type="path", xref="x", yref="y", path="M0,0Z", layer="above",
                     line=dict(color=STATUS["over"][0], width=2.2))]
    n_cols = -(-max(n_brokers, 1) // per_column(n_brokers))
    dx, dy = 0.012 * n_cols, 0.035 * max(y_span, 1e-9)
    if len(overlay["x"]) > 200:
        # a thousand marks re-sent on every release: each corner to about a tenth of a pixel (x: one broker
        # column is under a pixel wide at 1,000 brokers; y: a thousandth of the axis), half the bytes
        xd = 1 if n_cols > 100 else 2
        yd = max(0, min(6, 3 - int(np.floor(np.log10(max(y_span, 1e-9))))))
        path = "".join(f"M{x - dx:.{xd}f},{y:.{yd}f}L{x:.{xd}f},{y + dy:.{yd}f}L{x + dx:.{xd}f},{y:.{yd}f}"
                       f"L{x:.{xd}f},{y - dy:.{yd}f}Z" for x, y in zip(overlay["x"], overlay["y"]))
    else:
        path = "".join(f"M{x - dx:.3f},{y:.4f}L{x:.3f},{y + dy:.4f}L{x + dx:.3f},{y:.4f}L{x:.3f},{y - dy:.4f}Z"
                       for x, y in zip(overlay["x"], overlay["y"]))
    return [dict(type="path", xref="x", yref="y", path=path, layer="above",
                 line=dict(color=STATUS["over"][0], width=2.2))]


def y_span(view) -> float:
    """The height of the strip's y axis (MB/s), for sizing the marks."""
    return float(view.short_throughput.max() / MB) if view.nk else 1.0


def selected_overlay(view, selected) -> dict:
    """``{"x", "y", "customdata"}`` of the ringed overlay for the bundles ``selected`` (names, or their
    indices in the view as an integer array, -1 for a bundle it does not have)."""
    if isinstance(selected, np.ndarray):
        ks = selected.astype(np.int64, copy=False)
    else:
        ks = np.fromiter(map(view.bundle_index.get, selected, repeat(-1)), dtype=np.int64) if len(selected) else \
            np.zeros(0, dtype=np.int64)
    if len(ks):  # the selected bundles drawn in the strip (known, with an owner), read at once
        _, x, owner, _ = _layout_positions(view)
        ks = ks[ks >= 0]
        ks = ks[owner[ks] >= 0]
    total = len(ks)
    if not total:
        return {"x": [], "y": [], "customdata": [], "total": 0}
    ys = view.short_throughput[ks] / MB
    limit = rings_limit(view.nb)
    if total > limit:  # the busiest, in their order
        ks = ks[np.sort(np.argsort(-ys, kind="stable")[:limit])]
        ys = view.short_throughput[ks] / MB
    names = view.bundles
    return {"x": x[ks].astype(float).tolist(), "y": ys.tolist(), "customdata": [names[k] for k in ks.tolist()],
            "total": total}


def dots_title(many: bool, overlay: dict | None = None, n_brokers: int = 0) -> str:
    """The strip's title; it says when a box stands for several brokers and when only the busiest
    unloaded bundles are ringed."""
    per = per_column(n_brokers)
    who = "broker" if per == 1 else f"{per} brokers"
    t = (f"bundle throughput per {who}, busiest first (box: quartiles, whiskers: min–max)" if many
         else "bundles per broker, busiest broker first (dot size = topics)")
    if overlay and overlay.get("total", 0) > len(overlay["x"]):
        t = (f"throughput per {who} (boxes: quartiles, min–max); the {len(overlay['x'])} busiest of "
             f"{overlay['total']:,} unloaded bundles ringed")
    return t


def topic_distribution(view, bundle_topics: dict | None = None, *, selected=(), rev: str = "",
                       height: int = 380) -> go.Figure:
    """The topic-distribution figure of a snapshot (see the module docstring)."""
    if view.nb == 0 or view.nk == 0:
        return empty_figure("No bundles in this snapshot", rev=rev)
    order, x, owner, col = _layout_positions(view)
    per = per_column(view.nb)
    names = short_names([view.brokers[j] for j in order]) if per == 1 else [str(i) for i in range(int(col.max()) + 1)]
    ok = owner >= 0
    thr = view.short_throughput / MB
    rate = view.short_rate
    topics = view.topics.astype(float)
    size = 4 + 10 * np.sqrt(topics / max(1.0, float(topics.max())))
    many = view.nk > MANY
    if many:
        data = [_boxes(view, order, owner, thr, topics, col)]
    else:
        data = [_dots(view, x, owner, thr, rate, size, bundle_topics)]
    ov = selected_overlay(view, selected)
    title = dots_title(many, ov, view.nb)
    data.append(dict(  # the legend entry of the rings (the rings themselves are shapes)
        type="scatter", x=[None], y=[None], mode="markers", name="unloaded this cycle", xaxis="x", yaxis="y",
        marker=dict(size=11, symbol="diamond-open", color=STATUS["over"][0], line=dict(width=2.2)),
        hoverinfo="skip"))
    counts = np.bincount(view.topics[ok].astype(np.int64)) if ok.any() else np.zeros(1, dtype=np.int64)
    tx = np.flatnonzero(counts)
    data.append(dict(type="bar", x=tx.tolist(), y=counts[tx].tolist(), marker=dict(color="#1b365d"), showlegend=False,
                     width=0.8 if len(tx) < 3 else None,
                     xaxis="x2", yaxis="y2", hovertemplate="%{y} bundles with %{x} topics<extra></extra>"))
    show = len(names) <= 40
    split = 0.70
    lay = base_layout(
        height, editrevision=rev, hovermode="closest", shapes=ring_shapes(ov, y_span(view), view.nb),
        legend=dict(orientation="h", yanchor="bottom", y=1.06, x=split, xanchor="right", font=dict(size=11)),
        annotations=[title_ann(title, 0, 1.0),
                     title_ann("bundles by topic count", split + 0.07, 1.0)],
        # tick labels only when shown: a layout array is a new object in every update dcc.Graph hands
        # Plotly, which then redraws the whole figure (~40 ms at 1,000 brokers)
        # the axis types given: Plotly otherwise guesses each from the data (a thousand boxes) on every update
        xaxis=axis(domain=[0, split], anchor="y", type="linear", **(dict(tickmode="array", tickvals=list(range(len(names))),
                                                          ticktext=names) if show else dict(showticklabels=False)),
                   tickangle=-40 if len(names) > 8 else 0,
                   range=[-0.6, len(names) - 0.4], showgrid=False,
                   title=dict(text="" if show else f"{view.nb:,} brokers, busiest first"
                              + ("" if per == 1 else f", {per} per box"))),
        yaxis=axis(anchor="x", type="linear", title=dict(text="bundle throughput (MB/s)"), rangemode="tozero"),
        xaxis2=axis(domain=[split + 0.07, 1], anchor="y2", type="linear", title=dict(text="topics in the bundle"), showgrid=False,
                    range=[float(tx.min()) - 2.5, float(tx.max()) + 2.5] if 0 < len(tx) < 3 else None),
        yaxis2=axis(anchor="x2", type="linear", title=dict(text="bundles"), rangemode="tozero"),
    )
    return make_figure(data, lay)
