"""Recommendation figures: the trials on the objective's axes (the Pareto front, the current and the
recommended setting marked; hover: each setting's keys and measures) and which keys matter. Pure: the
recommendation dict (:func:`dashboard.history.recommend.recommend`) in, ``go.Figure`` out."""
from __future__ import annotations

import plotly.graph_objects as go

from .theme import STATUS, base_layout, empty_figure

__all__ = ["pareto_figure", "importance_figure", "axes_of"]


def axes_of(res: dict) -> tuple[str, str | None]:
    """The measures on x and y: the first two goals, else the goal and the first constraint, else
    the goal alone (y = the trial number)."""
    goals = [g["measure"] for g in res["objective"]["goals"]]
    cons = [c["measure"] for c in res["objective"]["constraints"]]
    if len(goals) >= 2:
        return goals[0], goals[1]
    return goals[0], (cons[0] if cons else None)


def _hover(values: dict, measures: dict, title: str) -> str:
    return "<br>".join([f"<b>{title}</b>"] + [f"{k} = {v}" for k, v in values.items()]
                       + [f"{k}: {v:,.3g}" for k, v in measures.items()])


def pareto_figure(res: dict | None) -> go.Figure:
    """Every trial as a point on the objective's axes: feasible ones filled, the others hollow; the
    Pareto front joined; the current setting a black star, the recommended one a ring."""
    if not res or not res.get("trials"):
        return empty_figure("Run a recommendation", rev="recommend-empty")
    xk, yk = axes_of(res)
    front = set(res.get("pareto") or [])
    trials = res["trials"]

    def y_of(t):
        return t["measures"][yk] if yk else t["number"]

    fig = go.Figure()
    for feasible, name, color in ((True, "setting tried (meets the constraints)", "#3c7dd9"),
                                  (False, "setting tried (misses a constraint)", "#8c959f")):
        pts = [t for t in trials if t["feasible"] == feasible]
        if not pts:
            continue
        fig.add_trace(go.Scatter(
            x=[t["measures"][xk] for t in pts], y=[y_of(t) for t in pts], mode="markers", name=name,
            marker=dict(color=color if feasible else "rgba(0,0,0,0)", size=9,
                        line=dict(color=color, width=1.5)),
            hovertext=[_hover(t["values"], t["measures"], f"trial {t['number']}") for t in pts],
            hoverinfo="text", customdata=[t["number"] for t in pts]))
    fr = sorted((t for t in trials if t["number"] in front), key=lambda t: (t["measures"][xk], y_of(t)))
    if len(fr) > 1 and yk:
        fig.add_trace(go.Scatter(x=[t["measures"][xk] for t in fr], y=[y_of(t) for t in fr], mode="lines",
                                 name="Pareto front", line=dict(color="#3c7dd9", width=1, dash="dot"),
                                 hoverinfo="skip"))
    cur = res["current"]
    fig.add_trace(go.Scatter(x=[cur["fit"][xk]], y=[cur["fit"][yk] if yk else -1], mode="markers+text",
                             name="current setting", text=["current"], textposition="top center",
                             marker=dict(symbol="star", size=16, color="#1f2328"),
                             hovertext=[_hover(cur["values"], cur["fit"], "current setting")], hoverinfo="text"))
    rec = res.get("recommended")
    if rec:
        t = next((t for t in trials if t["number"] == rec["number"]), None)
        if t is not None:
            fig.add_trace(go.Scatter(x=[t["measures"][xk]], y=[y_of(t)], mode="markers+text",
                                     name="recommended", text=["recommended"], textposition="bottom center",
                                     marker=dict(symbol="circle-open", size=20, color=STATUS["under"][0],
                                                 line=dict(width=3)),
                                     hovertext=[_hover(t["values"], t["measures"], "recommended")],
                                     hoverinfo="text"))
    for c in res["objective"]["constraints"]:
        if c["measure"] == yk:
            fig.add_hline(y=c["bound"], line=dict(color="#d1495b", dash="dash", width=1),
                          annotation_text=f"{yk} {c['op']} {c['bound']:g}", annotation_position="top left")
        if c["measure"] == xk:
            fig.add_vline(x=c["bound"], line=dict(color="#d1495b", dash="dash", width=1))
    fig.update_layout(**base_layout(420, editrevision="recommend-pareto", meta={"x": xk, "y": yk},
                                    xaxis=dict(title=f"{xk} (fit data)"),
                                    yaxis=dict(title=f"{yk} (fit data)" if yk else "trial")))
    return fig


def importance_figure(res: dict | None) -> go.Figure:
    """Each key's share of what moves each goal (Optuna's PED-ANOVA importances)."""
    imp = (res or {}).get("importances") or {}
    if not imp:
        return empty_figure("Key importances need a few more trials", rev="recommend-empty")
    fig = go.Figure()
    keys = sorted({k for d in imp.values() for k in d})
    for goal, d in imp.items():
        fig.add_trace(go.Bar(y=keys, x=[100.0 * d.get(k, 0.0) for k in keys], orientation="h", name=goal,
                             hovertemplate="%{y}: %{x:.0f} %<extra>" + goal + "</extra>"))
    fig.update_layout(**base_layout(140 + 40 * len(keys), editrevision="recommend-importance",
                                    xaxis=dict(title="share of what moves the goal (%)", range=[0, 100]),
                                    barmode="group", margin=dict(l=300, r=24, t=56, b=48)))
    return fig
