"""History page figures: cluster aggregates over time, hottest brokers, backtest events, sweep heatmap,
per-bundle distribution. Pure: pandas frames in (from :mod:`dashboard.history`), ``go.Figure`` out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .theme import FONT, LINE, STATUS, base_layout, empty_figure, short_names

__all__ = ["aggregates_figure", "hottest_figure", "backtest_figure", "sweep_heatmap", "bundle_figure",
           "agreement_figure", "MAX_EVENT_POINTS"]

MAX_EVENT_POINTS = 4000
_TRIGGER_COLORS = {"high": STATUS["over"][0], "low": STATUS["pending"][0], "threshold": STATUS["over"][0],
                   "lower boundary": STATUS["skipped"][0], "msg rate": STATUS["under"][0],
                   "throughput": "#0f766e"}


def _empty(text: str) -> go.Figure:
    return empty_figure(text, rev="history-empty")


def aggregates_figure(res: dict | None, resolution: str = "hour") -> go.Figure:
    """Three stacked, x-linked panels (zoom one, all follow; range slider at the bottom):
    max/min msg-rate and throughput ratios; CPU range (max − min); std and mean of weighted usage.
    ``resolution`` ``minute`` plots every minute; ``hour``/``day`` plot the mean with the max dotted."""
    if not res or res.get("minute") is None or len(res["minute"]) == 0:
        return _empty("No aggregates for this range")
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("max / min across brokers (msg rate, throughput)",
                                        "CPU range across brokers (max − min, %)",
                                        "weighted usage across brokers (std and mean, %)"))
    if resolution == "minute":
        d = res["minute"]
        x = d["timestamp"]
        series = [(1, d["rate_ratio"], "msg rate ratio", LINE["threshold"], "solid"),
                  (1, d["thr_ratio"], "throughput ratio", LINE["band"], "solid"),
                  (2, d["cpu_range"], "CPU range", "#1b365d", "solid"),
                  (3, d["usage_std"], "usage std", "#8e6bbf", "solid"),
                  (3, d["usage_mean"], "usage mean", LINE["average"], "dot")]
    else:
        d = res["hour" if resolution == "hour" else "day"]
        x = d["timestamp"]
        series = [(1, d["rate_ratio_mean"], "msg rate ratio (mean)", LINE["threshold"], "solid"),
                  (1, d["rate_ratio_max"], "msg rate ratio (max)", LINE["threshold"], "dot"),
                  (1, d["thr_ratio_mean"], "throughput ratio (mean)", LINE["band"], "solid"),
                  (2, d["cpu_range_mean"], "CPU range (mean)", "#1b365d", "solid"),
                  (2, d["cpu_range_max"], "CPU range (max)", "#1b365d", "dot"),
                  (3, d["usage_std_mean"], "usage std (mean)", "#8e6bbf", "solid"),
                  (3, d["usage_std_max"], "usage std (max)", "#8e6bbf", "dot"),
                  (3, d["usage_mean"], "usage mean", LINE["average"], "dash")]
    mode = "lines"
    for row, y, name, color, dash in series:
        fig.add_trace(go.Scattergl(x=x, y=y, name=name, mode=mode, line=dict(color=color, dash=dash, width=1.4),
                                   hovertemplate="%{x|%Y-%m-%d %H:%M}<br>" + name + ": %{y:.2f}<extra></extra>"),
                      row=row, col=1)
    lay = base_layout(560)
    lay.pop("uirevision", None)
    fig.update_layout(**lay, hovermode="x unified", uirevision=f"agg-{resolution}",
                      meta={"rev": "history-aggregates", "resolution": resolution})
    fig.update_xaxes(showgrid=True, gridcolor="#eef1f4")
    fig.update_xaxes(rangeslider=dict(visible=True, thickness=0.06), row=3, col=1)
    fig.update_yaxes(title_text="×", row=1, col=1)
    fig.update_yaxes(title_text="points", row=2, col=1)
    fig.update_yaxes(title_text="%", row=3, col=1)
    for a in fig.layout.annotations:
        a.font = dict(size=12, color="#57606a", family=FONT)
    return fig


def hottest_figure(res: dict | None) -> go.Figure:
    """Top brokers by mean weighted usage, with their p90/p99 and the minutes they were the hottest."""
    if not res or res.get("top") is None or len(res["top"]) == 0:
        return _empty("No brokers in this range")
    t = res["top"].sort_values("rank", ascending=False)
    names = short_names(t["broker"].tolist())
    fig = go.Figure()
    fig.add_trace(go.Bar(y=names, x=t["usage_mean"], orientation="h", name="mean", marker_color="#1b365d",
                         customdata=np.column_stack([t["broker"], t["hottest_minutes"], t["minutes"]]),
                         hovertemplate="%{customdata[0]}<br>mean %{x:.1f} %<br>hottest %{customdata[1]} of "
                                       "%{customdata[2]} minutes<extra></extra>"))
    for col, sym, color in (("usage_p90", "line-ns-open", STATUS["pending"][0]),
                            ("usage_p99", "line-ns-open", STATUS["over"][0])):
        if col in t:
            fig.add_trace(go.Scatter(y=names, x=t[col], mode="markers", name=col.replace("usage_", ""),
                                     marker=dict(symbol=sym, size=14, line=dict(width=2.5, color=color), color=color),
                                     hovertemplate=col.replace("usage_", "") + " %{x:.1f} %<extra></extra>"))
    lay = base_layout(max(260, 26 * len(t) + 80))
    lay["margin"] = dict(l=110, r=24, t=36, b=48)
    fig.update_layout(**lay, meta={"rev": "history-hottest"}, xaxis_title="weighted usage, %")
    return fig


def backtest_figure(events: pd.DataFrame | None, per_day: pd.DataFrame | None, strategy: str = "") -> go.Figure:
    """Fires per day (bars) over a timeline of every fire (one dot per broker and minute, coloured by
    trigger; click a dot to open that minute in the Tuner — ``customdata[0]`` is the event's row)."""
    if events is None or len(events) == 0:
        return _empty(f"{strategy or 'The strategy'} would not have unloaded anything in this range")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=False, row_heights=[0.35, 0.65], vertical_spacing=0.12,
                        subplot_titles=("brokers unloading per day", "every unload (click one to open it in the Tuner)"))
    pdays = per_day.sort_values("day") if per_day is not None and len(per_day) else None
    if pdays is not None:
        fig.add_trace(go.Bar(x=pd.to_datetime(pdays["day"]), y=pdays["events"], name="per day",
                             marker_color=STATUS["over"][0], showlegend=False,
                             hovertemplate="%{x|%Y-%m-%d}: %{y} unloads<extra></extra>"), row=1, col=1)
    ev = events.reset_index(drop=True)
    idx = np.arange(len(ev))
    if len(ev) > MAX_EVENT_POINTS:  # keep the figure light: an even sample, always with the first and last
        idx = np.unique(np.linspace(0, len(ev) - 1, MAX_EVENT_POINTS).astype(int))
    sub = ev.iloc[idx]
    names = dict(zip(sorted(ev["broker"].unique()), short_names(sorted(ev["broker"].unique()))))
    for trig in sorted(sub["trigger"].fillna("").unique()):
        s = sub[sub["trigger"].fillna("") == trig]
        pos = idx[(sub["trigger"].fillna("") == trig).to_numpy()]
        partner = s["partner"].fillna("—").astype(str)
        fig.add_trace(go.Scattergl(
            x=s["timestamp"], y=[names[b] for b in s["broker"]], mode="markers", name=trig or "unload",
            marker=dict(size=7, color=_TRIGGER_COLORS.get(trig, "#57606a"), opacity=0.85),
            customdata=np.column_stack([pos, s["broker"], partner, s["n_bundles"], s["gap"].round(2).astype(str)]),
            hovertemplate="%{x|%Y-%m-%d %H:%M}<br>%{customdata[1]} → %{customdata[2]}<br>"
                          "%{customdata[3]} bundle(s), gap %{customdata[4]}<extra>" + (trig or "") + "</extra>"),
            row=2, col=1)
    lay = base_layout(520)
    fig.update_layout(**lay, meta={"rev": "history-backtest", "strategy": strategy, "points": int(len(idx)),
                                   "events": int(len(ev))}, clickmode="event")
    for a in fig.layout.annotations:
        a.font = dict(size=12, color="#57606a", family=FONT)
    return fig


def sweep_heatmap(cells: pd.DataFrame | None, x_key: str, y_key: str, strategy: str = "",
                  value: str = "events") -> go.Figure:
    """Unload counts per grid cell (darker = more), the count written in each cell."""
    if cells is None or len(cells) == 0:
        return _empty("No sweep result")
    xs = sorted(cells["x"].unique())
    ys = sorted(cells["y"].unique())
    z = cells.pivot_table(index="y", columns="x", values=value, aggfunc="sum").reindex(index=ys, columns=xs)
    text = [[f"{int(v):,}" if v == v else "" for v in row] for row in z.to_numpy()]
    fig = go.Figure(go.Heatmap(x=[f"{v:g}" for v in xs], y=[f"{v:g}" for v in ys], z=z.to_numpy(), text=text,
                               texttemplate="%{text}", colorscale="Reds", colorbar=dict(title=value),
                               hovertemplate=f"{x_key}=%{{x}}<br>{y_key}=%{{y}}<br>{value}: %{{z}}<extra></extra>"))
    lay = base_layout(420)
    fig.update_layout(**lay, meta={"rev": "history-sweep", "strategy": strategy, "x": x_key, "y": y_key},
                      xaxis=dict(title=x_key, type="category"), yaxis=dict(title=y_key, type="category"))
    return fig


def bundle_figure(res: dict | None) -> go.Figure:
    """Per hour: bundle msg-rate quantiles across bundles (p50, p90, max) and the topics count."""
    if not res or res.get("hour") is None or len(res["hour"]) == 0:
        return _empty("No bundle metrics in this range")
    h = res["hour"]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for col, name, color, dash in (("rate_p50", "bundle msg rate p50", "#3c7dd9", "solid"),
                                   ("rate_p90", "p90", "#e49b2f", "solid"),
                                   ("rate_max", "max (hottest bundle)", "#d1495b", "dot")):
        fig.add_trace(go.Scatter(x=h["timestamp"], y=h[col], name=name, mode="lines",
                                 line=dict(color=color, dash=dash, width=1.5)), secondary_y=False)
    fig.add_trace(go.Scatter(x=h["timestamp"], y=h["topics"], name="topics (all bundles)", mode="lines",
                             line=dict(color="#8c959f", width=1, dash="dash")), secondary_y=True)
    fig.update_layout(**base_layout(340), meta={"rev": "history-bundles"})
    fig.update_yaxes(title_text="msg/s per bundle", secondary_y=False)
    fig.update_yaxes(title_text="topics", secondary_y=True, showgrid=False)
    return fig


_AGREE_COLORS = {"both": STATUS["destination"][0], "predicted only": STATUS["pending"][0],
                 "observed only": STATUS["over"][0]}


def agreement_figure(ag) -> go.Figure:
    """Predicted vs actual (:class:`engine.agreement.Agreement`): unloads per hour side by side (bars),
    and which brokers shed each hour — a dot per (hour, broker), green when both the cluster and the
    engine shed it, amber when only the engine predicted it, red when only the cluster did it. The
    title carries the agreement figure; disagreements stay on the figure, never filtered out."""
    if ag is None or ag.hours is None or len(ag.hours) == 0:
        return _empty("Nothing predicted and nothing observed in this range")
    m = ag.metrics
    h = ag.hours

    def pct(x):
        return "n/a" if x is None else f"{100 * x:.0f} %"

    unit = m.get("unit", "unloads")  # "brokers shed" when only the unload_broker counter observed it
    title = (f"agreement {pct(m['agreement'])} ({m['basis']}) · shedding brokers precision "
             f"{pct(m['broker_precision'])}, recall {pct(m['broker_recall'])}")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.45, 0.55], vertical_spacing=0.1,
                        subplot_titles=(f"{unit} per hour (UTC)", "brokers that shed, per hour"))
    # each hour's two bars sit inside that hour (explicit widths: one hour alone still has a width)
    bar_w = [0.42 * 3_600_000] * len(h)
    fig.add_trace(go.Bar(x=h["hour"], y=h["observed"], name="the cluster did", marker_color="#1b365d",
                         width=bar_w, offset=0.06 * 3_600_000,
                         hovertemplate="%{x|%Y-%m-%d %H:00}: %{y:g} " + unit + " observed<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=h["hour"], y=h["predicted"], name=f"the engine predicts ({ag.strategy})",
                         marker_color=LINE["threshold"], width=bar_w, offset=0.52 * 3_600_000,
                         hovertemplate="%{x|%Y-%m-%d %H:00}: %{y:g} " + unit + " predicted<extra></extra>"), row=1, col=1)
    known = h["observed_brokers"].notna().all() if len(h) else False
    pts = {"both": ([], []), "predicted only": ([], []), "observed only": ([], [])}
    for r in h.itertuples():
        p = set(r.predicted_brokers)
        o = set(r.observed_brokers) if known else set()
        for b in sorted(p | o):
            st = "both" if b in p and b in o else ("predicted only" if b in p else "observed only")
            pts[st][0].append(r.hour + pd.Timedelta(minutes=30))
            pts[st][1].append(b)
    for st, (x, y) in pts.items():
        if not x:
            continue
        name = st if known or st != "predicted only" else "predicted (the counters do not say who shed)"
        fig.add_trace(go.Scatter(x=x, y=y, mode="markers", name=name,
                                 marker=dict(size=10, color=_AGREE_COLORS[st], symbol="circle" if st == "both"
                                             else ("x" if st == "predicted only" else "diamond")),
                                 hovertemplate="%{x|%Y-%m-%d %H:00} %{y}<extra>" + st + "</extra>"), row=2, col=1)
    lay = base_layout(560)
    lay["margin"] = dict(l=140, r=24, t=64, b=96)
    lay["legend"] = dict(lay["legend"], yanchor="top", y=-0.1)
    fig.update_layout(**lay, barmode="overlay",
                      title=dict(text=title, x=0, xanchor="left", y=0.98, yanchor="top", font=dict(size=13)),
                      meta={"rev": "history-agreement", "agreement": m["agreement"], "basis": m["basis"]})
    fig.update_yaxes(title_text=unit, row=1, col=1)
    fig.update_yaxes(type="category", row=2, col=1)
    lo, hi = h["hour"].min(), h["hour"].max()  # padding: one hour alone still reads as hours
    fig.update_xaxes(range=[lo - pd.Timedelta(hours=0.5), hi + pd.Timedelta(hours=1.5)])
    for a in fig.layout.annotations:
        a.font = dict(size=12, color="#57606a", family=FONT)
    return fig
