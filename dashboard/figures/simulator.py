"""The Simulator page's figures: one run per broker over time, A and B's cluster metrics, TransferShedder's
std against its target, and the parameter-sweep heatmaps.

Pure functions of the engine's tables (:class:`engine.simulator.SimulationResult` ``brokers``,
``cluster``, ``events``); x is the simulated minute everywhere, so the page can keep every figure's
zoom in step (``layout.meta.sync = True`` marks the ones that follow).
"""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .theme import LINE, STATUS, axis, base_layout, empty_figure, make_figure, short_names, title_ann

__all__ = ["RUN_COLORS", "BROKER_PALETTE", "broker_series", "cluster_figure", "std_figure", "sweep_heatmaps",
           "pick_brokers", "wrap", "CODE_ORDER"]

#: run A / run B, everywhere on the page and in the report
RUN_COLORS = {"a": "#1f6feb", "b": "#e36209"}
BROKER_PALETTE = ["#1b365d", "#3c7dd9", "#0f766e", "#b45309", "#8e6bbf", "#2a9d8f", "#e49b2f", "#6e7781", "#c2185b",
                  "#5b8c00", "#0e7490", "#9a3412"]
_UNLOAD = STATUS["over"][0]
_DEST = STATUS["destination"][0]
_SKIPPED = STATUS["skipped"][0]


def wrap(text, width: int = 90) -> str:
    """A long reason as hover text (``<br>`` every ``width`` characters, at word boundaries)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    return "<br>".join(textwrap.wrap(str(text), width=width, break_long_words=True)) or ""


def _list(v) -> list:
    """A float series as a JSON-friendly list (NaN / inf → None: a gap)."""
    a = np.asarray(v, dtype=float)
    return [None if not math.isfinite(x) else float(x) for x in a.tolist()]


def pick_brokers(brokers: pd.DataFrame, events: pd.DataFrame, limit: int = 10) -> list[str]:
    """The brokers a per-broker figure shows: all when few, else those that unloaded or received most,
    then the busiest (highest peak usage)."""
    names = list(dict.fromkeys(brokers["broker"].tolist()))
    if len(names) <= limit:
        return sorted(names, key=_natural)
    u = events[events["kind"] == "unload"]
    moves = pd.concat([u["broker"], u["destination"]]).dropna().value_counts()
    peak = brokers.groupby("broker")["usage"].max()
    ranked = sorted(names, key=lambda b: (-int(moves.get(b, 0)), -float(peak.get(b, 0.0))))
    return sorted(ranked[:limit], key=_natural)


def _natural(s: str):
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(s))]


def broker_series(brokers: pd.DataFrame, events: pd.DataFrame, *, label: str = "", color: str = "#1f6feb",
                  limit: int = 10, height: int = 390, rev: str = "") -> go.Figure:
    """Per broker: real weighted usage (solid) and the score the shedding strategy saw at each check
    (dotted), unloads marked ▼ on the source (hover: the engine's reason) and ▲ on the destination."""
    if brokers is None or brokers.empty:
        return empty_figure("No broker ran in this simulation", rev=rev)
    pick = pick_brokers(brokers, events, limit)
    n_all = brokers["broker"].nunique()
    short = dict(zip(pick, short_names(pick)))
    data = []
    usage_at = {}
    for k, b in enumerate(pick):
        col = BROKER_PALETTE[k % len(BROKER_PALETTE)]
        df = brokers[brokers["broker"] == b]
        usage_at[b] = dict(zip(df["minute"].tolist(), df["usage"].tolist()))
        data.append(dict(type="scatter", x=df["minute"].tolist(), y=_list(df["usage"]), mode="lines", name=short[b],
                         legendgroup=b, line=dict(color=col, width=1.9),
                         hovertemplate=f"<b>{b}</b><br>minute %{{x}} · real usage %{{y:.1f}} %<extra></extra>"))
        sc = df[df["score"].notna()]
        if len(sc):
            data.append(dict(type="scatter", x=sc["minute"].tolist(), y=_list(sc["score"]), mode="lines",
                             name=f"{short[b]} score", legendgroup=b, showlegend=False,
                             line=dict(color=col, width=1.4, dash="dot"),
                             hovertemplate=f"<b>{b}</b><br>minute %{{x}} · score seen %{{y:.1f}}<extra></extra>"))
    # legend keys for the two line styles
    for name, dash in (("real usage", "solid"), ("score the strategy saw", "dot")):
        data.append(dict(type="scatter", x=[None], y=[None], mode="lines", name=name, legendgroup=f"style-{dash}",
                         line=dict(color="#57606a", width=1.6, dash=dash), hoverinfo="skip"))
    u = events[events["kind"] == "unload"]
    if len(u):
        text = [f"<b>minute {int(r.minute)} · unload</b> {r.bundle}<br>{r.broker} → {r.destination}<br>"
                f"{wrap(r.reason)}" + (f"<br><i>placement: {wrap(r.placement)}</i>" if r.placement else "")
                for r in u.itertuples()]
        ys = [usage_at.get(r.broker, {}).get(int(r.minute)) for r in u.itertuples()]
        ys = [None if y is None or not math.isfinite(y) else float(y) for y in ys]
        data.append(dict(type="scatter", x=u["minute"].tolist(), y=ys, mode="markers", name="unload (source)",
                         text=text, marker=dict(symbol="triangle-down", size=11, color=_UNLOAD,
                                                line=dict(width=1, color="white")),
                         hovertemplate="%{text}<extra></extra>"))
        yd = [usage_at.get(r.destination, {}).get(int(r.minute)) for r in u.itertuples()]
        yd = [None if y is None or not math.isfinite(y) else float(y) for y in yd]
        data.append(dict(type="scatter", x=u["minute"].tolist(), y=yd, mode="markers", name="destination",
                         text=[f"minute {int(r.minute)}: {r.bundle} → <b>{r.destination}</b>" for r in u.itertuples()],
                         marker=dict(symbol="triangle-up", size=9, color=_DEST, line=dict(width=1, color="white")),
                         hovertemplate="%{text}<extra></extra>"))
    sk = events[events["kind"] == "unload-skipped"]
    if len(sk):
        ys = [usage_at.get(r.broker, {}).get(int(r.minute)) for r in sk.itertuples()]
        data.append(dict(type="scatter", x=sk["minute"].tolist(),
                         y=[None if y is None or not math.isfinite(y) else float(y) for y in ys], mode="markers",
                         name="unload skipped", text=[f"minute {int(r.minute)} · {r.bundle}<br>{wrap(r.reason)}"
                                                      for r in sk.itertuples()],
                         marker=dict(symbol="x-thin", size=10, color=_SKIPPED, line=dict(width=2, color=_SKIPPED)),
                         hovertemplate="%{text}<extra></extra>"))
    note = f"{len(pick)} of {n_all} brokers: those that moved bundles, then the busiest" if n_all > len(pick) else ""
    # the run's name top left (the modebar lives top right), the legend in its own column on the right:
    # nothing is drawn over the plot area, and A and B stacked keep the same plot width
    lay = base_layout(height, xaxis=axis(title=dict(text="minute"), rangemode="tozero"),
                      yaxis=axis(title=dict(text="usage / score (%)"), rangemode="tozero"),
                      hovermode="closest", margin=dict(l=56, r=16, t=44, b=44),
                      meta={"rev": rev, "run": label, "sync": True, "brokers": pick})
    lay["legend"] = dict(orientation="v", x=1.01, xanchor="left", y=1.0, yanchor="top", font=dict(size=10.5),
                         bgcolor="rgba(0,0,0,0)", traceorder="normal", tracegroupgap=2, itemwidth=30)
    lay["title"] = dict(text=f"<b>{label}</b>" if label else "", x=0, xref="paper", xanchor="left", y=1,
                        yref="paper", yanchor="bottom", pad=dict(b=10), font=dict(size=13, color=color))
    if note:
        lay["title"]["subtitle"] = dict(text=note, font=dict(size=11, color="#57606a"))
    return make_figure(data, lay)


def cluster_figure(clusters: dict, colors: dict, *, height: int = 560, rev: str = "") -> go.Figure:
    """A and B on shared minutes: max/min ratios of msg rate (solid) and throughput (dashed, log scale,
    1 = even), CPU range (points), cumulative unloads."""
    clusters = {k: v for k, v in clusters.items() if v is not None and len(v)}
    if not clusters:
        return empty_figure("No cluster metrics", rev=rev)
    dom = {"y": [0.64, 1.0], "y2": [0.34, 0.56], "y3": [0.0, 0.26]}
    data = []
    for label, cl in clusters.items():
        col = colors.get(label, "#1f6feb")
        x = cl["minute"].tolist()
        data.append(dict(type="scatter", x=x, y=_list(cl["msg_rate_ratio"]), mode="lines", name=label,
                         legendgroup=label, line=dict(color=col, width=2), xaxis="x", yaxis="y",
                         hovertemplate=f"{label}<br>minute %{{x}} · msg-rate max/min %{{y:.2f}}×<extra></extra>"))
        data.append(dict(type="scatter", x=x, y=_list(cl["throughput_ratio"]), mode="lines",
                         name=f"{label} throughput", legendgroup=label, showlegend=False,
                         line=dict(color=col, width=1.6, dash="dash"), xaxis="x", yaxis="y",
                         hovertemplate=f"{label}<br>minute %{{x}} · throughput max/min %{{y:.2f}}×<extra></extra>"))
        data.append(dict(type="scatter", x=x, y=_list(cl["cpu_range"]), mode="lines", name=f"{label} CPU range",
                         legendgroup=label, showlegend=False, line=dict(color=col, width=1.8), xaxis="x2",
                         yaxis="y2", hovertemplate=f"{label}<br>minute %{{x}} · CPU max − min %{{y:.1f}} points"
                                                   "<extra></extra>"))
        data.append(dict(type="scatter", x=x, y=cl["unloads_total"].astype(int).tolist(), mode="lines",
                         name=f"{label} unloads", legendgroup=label, showlegend=False,
                         line=dict(color=col, width=2, shape="hv"), xaxis="x3", yaxis="y3",
                         hovertemplate=f"{label}<br>minute %{{x}} · %{{y}} unloads so far<extra></extra>"))
    for name, dash in (("msg rate", "solid"), ("throughput", "dash")):
        data.append(dict(type="scatter", x=[None], y=[None], mode="lines", name=name, line=dict(color="#57606a",
                         width=1.6, dash=dash), xaxis="x", yaxis="y", hoverinfo="skip"))
    shapes = [dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=1, y1=1,
                   line=dict(color=LINE["even"], width=1, dash="dot"), layer="below")]
    anns = [title_ann("max / min across brokers (log; 1 = even)", 0, dom["y"][1]),
            title_ann("CPU range: max − min (points)", 0, dom["y2"][1]),
            title_ann("unloads so far", 0, dom["y3"][1])]
    lay = base_layout(height, hovermode="x unified", shapes=shapes, annotations=anns,
                      margin=dict(l=56, r=16, t=52, b=44), meta={"rev": rev, "sync": True},
                      xaxis=axis(anchor="y", showticklabels=False),
                      xaxis2=axis(anchor="y2", matches="x", showticklabels=False),
                      xaxis3=axis(anchor="y3", matches="x", title=dict(text="minute")),
                      yaxis=axis(domain=dom["y"], type="log", title=dict(text="ratio")),
                      yaxis2=axis(domain=dom["y2"], rangemode="tozero", title=dict(text="points")),
                      yaxis3=axis(domain=dom["y3"], rangemode="tozero", title=dict(text="unloads")))
    return make_figure(data, lay)


#: TransferShedder's decision codes (Pulsar's ``UnloadDecision.Reason``), bottom to top in the code strip
CODE_ORDER = ["Unknown", "OutDatedData", "NoLoadData", "NoBundles", "NoBrokers", "CoolDown", "HitCount", "Balanced",
              "Underloaded", "Overloaded"]
_CODE_SYMBOL = {"Overloaded": "triangle-down", "Underloaded": "triangle-up", "HitCount": "circle",
                "CoolDown": "square", "NoBundles": "x", "OutDatedData": "diamond", "Balanced": "circle-open"}


def _tag(label: str) -> str:
    """``"A · TransferShedder + …"`` → ``"A"`` (legend entries stay short; the card says which run is which)."""
    return label.split(" · ", 1)[0] if " · " in label else label


def std_figure(ext: dict, clusters: dict, colors: dict, *, height: int = 460, rev: str = "") -> go.Figure:
    """TransferShedder runs: the load std it computes (%, at each check) against
    ``loadBalancerBrokerLoadTargetStd`` (dashed), its hit count (bars, right axis), transfers (▼) and,
    in a strip below, each check's decision code (Overloaded, Underloaded, HitCount, CoolDown,
    NoBundles, OutDatedData, …; hover: the full reason); every run's real usage std (dotted) for
    comparison.

    ``ext``: ``{label: (cluster table, checks frame)}`` of the TransferShedder runs
    (:func:`dashboard.simulator.checks_frame`); ``clusters``: every run's cluster table.
    """
    if not ext:
        return empty_figure("Neither run uses TransferShedder", rev=rev)
    data, anns = [], []
    hit_max = 1.0
    codes_seen: set = set()
    for label, (cl, checks) in ext.items():
        col = colors.get(label, "#1f6feb")
        tag = _tag(label)
        c = cl[cl["load_std"].notna()]
        by_minute = {int(m): (str(code), str(reason)) for m, code, reason in
                     zip(checks["minute"], checks["code"], checks["reason"])} if len(checks) else {}
        custom = [[by_minute.get(int(m), ("", ""))[0], wrap(by_minute.get(int(m), ("", ""))[1])]
                  for m in c["minute"].tolist()]
        data.append(dict(type="scatter", x=c["minute"].tolist(), y=_list(c["load_std"]), mode="lines+markers",
                         name=f"{tag} load std", legendgroup=label, line=dict(color=col, width=2.4),
                         marker=dict(size=5), customdata=custom, xaxis="x", yaxis="y",
                         hovertemplate=f"<b>{label}</b> minute %{{x}}: std %{{y:.2f}} %<br><b>%{{customdata[0]}}</b> "
                                       "%{customdata[1]}<extra></extra>"))
        tgt = cl[cl["target_std"].notna()]
        data.append(dict(type="scatter", x=tgt["minute"].tolist(), y=_list(tgt["target_std"]), mode="lines",
                         name=f"{tag} target (loadBalancerBrokerLoadTargetStd)", legendgroup=label, xaxis="x",
                         yaxis="y", line=dict(color=LINE["threshold"], width=1.6, dash="dash"),
                         hovertemplate=f"{label}<br>loadBalancerBrokerLoadTargetStd %{{y:.2f}} %<extra></extra>"))
        if len(tgt):
            last = float(tgt["target_std"].iloc[-1])
            anns.append(dict(xref="paper", x=1, xanchor="right", yref="y", y=last, yanchor="bottom", showarrow=False,
                             text=f"{tag} target {last:.0f} %", font=dict(size=11, color=LINE["threshold"]),
                             bgcolor="rgba(255,255,255,0.85)"))
        h = checks[checks["hit"].notna()] if len(checks) else checks
        if len(h):
            hit_max = max(hit_max, float(h["hit"].max()))
            data.append(dict(type="bar", x=h["minute"].tolist(), y=h["hit"].astype(int).tolist(), xaxis="x",
                             yaxis="y2", name=f"{tag} hit count", legendgroup=label, opacity=0.28,
                             marker=dict(color=col),
                             hovertemplate=f"{label}<br>minute %{{x}}: hit count %{{y}}<extra></extra>"))
        moved = checks[checks["code"].isin(["Overloaded", "Underloaded"])] if len(checks) else checks
        if len(moved):
            ys = dict(zip(c["minute"].tolist(), c["load_std"].tolist()))
            data.append(dict(type="scatter", x=moved["minute"].tolist(),
                             y=[ys.get(m) for m in moved["minute"].tolist()], mode="markers", xaxis="x", yaxis="y",
                             name=f"{tag} transfers", legendgroup=label, text=[wrap(r) for r in moved["reason"]],
                             marker=dict(symbol="triangle-down", size=12, color=_UNLOAD, line=dict(width=1, color="white")),
                             hovertemplate="minute %{x}: %{text}<extra></extra>"))
        ck = checks[checks["code"].notna()] if len(checks) else checks
        if len(ck):
            codes_seen.update(ck["code"].tolist())
            data.append(dict(type="scatter", x=ck["minute"].tolist(), y=ck["code"].tolist(), mode="markers",
                             xaxis="x2", yaxis="y3", name=f"{tag} decision", legendgroup=label, showlegend=False,
                             text=[wrap(r) for r in ck["reason"]],
                             marker=dict(color=col, size=8, symbol=[_CODE_SYMBOL.get(k, "circle") for k in ck["code"]],
                                         line=dict(width=1, color="white")),
                             hovertemplate=f"<b>{tag}</b> minute %{{x}} · <b>%{{y}}</b><br>%{{text}}<extra></extra>"))
    for label, cl in clusters.items():
        if cl is None or not len(cl):
            continue
        col = colors.get(label, "#57606a")
        data.append(dict(type="scatter", x=cl["minute"].tolist(), y=_list(cl["usage_std"]), mode="lines",
                         name=f"{_tag(label)} real usage std", legendgroup=label, xaxis="x", yaxis="y",
                         line=dict(color=col, width=1.2, dash="dot"),
                         hovertemplate=f"{label}<br>minute %{{x}} · std of real usage %{{y:.2f}} points<extra></extra>"))
    order = [k for k in CODE_ORDER if k in codes_seen] + sorted(codes_seen - set(CODE_ORDER))
    dom = {"y": [0.36, 1.0], "y3": [0.0, 0.24]}
    anns.append(title_ann("decision code of each check (hover: the reason)", 0, dom["y3"][1] + 0.01))
    lay = base_layout(height, hovermode="closest", annotations=anns, barmode="overlay",
                      margin=dict(l=56, r=56, t=52, b=44), meta={"rev": rev, "sync": True},
                      xaxis=axis(anchor="y", rangemode="tozero", showticklabels=False),
                      xaxis2=axis(anchor="y3", matches="x", title=dict(text="minute")),
                      yaxis=axis(domain=dom["y"], title=dict(text="std of broker load (%)"), rangemode="tozero"),
                      yaxis2=axis(overlaying="y", side="right", range=[0, max(4.0, hit_max * 2.5)], showgrid=False,
                                  title=dict(text="hit count"), dtick=1),
                      yaxis3=axis(domain=dom["y3"], type="category", categoryorder="array", categoryarray=order,
                                  tickfont=dict(size=10.5)))
    lay["legend"]["font"] = dict(size=10.5)
    return make_figure(data, lay)


def sweep_heatmaps(cells: list, x_key: str, xs: list, y_key: str, ys: list, *, current: dict | None = None,
                   height: int = 400, rev: str = "") -> go.Figure:
    """Two heatmaps over the grid (x values × y values): unloads and the settling minute ("never" when
    the run did not settle). Each cell's ``customdata`` is ``[x_key, x, y_key, y]`` (click → run A);
    ``current`` (``{key: text}``) outlines run A's own setting when it is on the grid."""
    if not cells:
        return empty_figure("Run a sweep", rev=rev)
    at = {(c["x"], c["y"]): c for c in cells}
    z1, z2, t1, t2, cd = [], [], [], [], []
    for y in ys:
        r1, r2, s1, s2, rc = [], [], [], [], []
        for x in xs:
            c = at.get((x, y), {})
            u = c.get("unloads")
            st = c.get("settled_minute")
            r1.append(u)
            s1.append("" if u is None else str(u))
            r2.append(st)
            s2.append("never" if st is None else str(st))
            rc.append([x_key, x, y_key, y])
        z1.append(r1)
        z2.append(r2)
        t1.append(s1)
        t2.append(s2)
        cd.append(rc)
    hov = (f"{x_key} = %{{customdata[1]}}<br>{y_key} = %{{customdata[3]}}<br>"
           "<b>%{text}</b> {what}<br><i>click: load into run A</i><extra></extra>")
    data = [
        dict(type="heatmap", x=xs, y=ys, z=z1, text=t1, texttemplate="%{text}", customdata=cd, xaxis="x", yaxis="y",
             colorscale=[[0, "#fff4e6"], [1, "#c2410c"]], xgap=2, ygap=2, name="unloads",
             colorbar=dict(x=0.455, thickness=10, len=0.9, title=dict(text="unloads", side="right")),
             hovertemplate=hov.replace("{what}", "unloads")),
        dict(type="heatmap", x=xs, y=ys, z=z2, text=t2, texttemplate="%{text}", customdata=cd, xaxis="x2",
             yaxis="y2", colorscale=[[0, "#e9f6ef"], [1, "#1c7d55"]], reversescale=False, xgap=2, ygap=2,
             name="settled", colorbar=dict(x=1.0, thickness=10, len=0.9, title=dict(text="minute", side="right")),
             hovertemplate=hov.replace("{what}", "(settled at minute)")),
    ]
    shapes = []
    if current and x_key in current and y_key in current and current[x_key] in xs and current[y_key] in ys:
        i, j = xs.index(current[x_key]), ys.index(current[y_key])
        for xr, yr in (("x", "y"), ("x2", "y2")):
            shapes.append(dict(type="rect", xref=xr, yref=yr, x0=i - 0.5, x1=i + 0.5, y0=j - 0.5, y1=j + 0.5,
                               line=dict(color="#1f2328", width=2.5)))
    anns = [title_ann("unloads", 0, 1.0), title_ann("settled at minute (“never”: not within the run)", 0.545, 1.0)]
    cat = dict(type="category", showgrid=False)
    lay = base_layout(height, shapes=shapes, annotations=anns, margin=dict(l=64, r=40, t=40, b=56),
                      plot_bgcolor="#f3f5f8", meta={"rev": rev, "x_key": x_key, "y_key": y_key},
                      xaxis=axis(domain=[0, 0.41], title=dict(text=x_key, font=dict(size=11)), **cat),
                      yaxis=axis(title=dict(text=y_key, font=dict(size=11)), **cat),
                      xaxis2=axis(domain=[0.545, 0.955], title=dict(text=x_key, font=dict(size=11)), **cat),
                      yaxis2=axis(anchor="x2", showticklabels=True, **cat))
    # plotly picks a heatmap's hover text colour from the cell's colour: keep it dark on the white label
    lay["hoverlabel"] = dict(lay["hoverlabel"], font=dict(lay["hoverlabel"]["font"], color="#1f2328"))
    return make_figure(data, lay)
