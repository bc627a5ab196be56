"""Pure figure builders of the Pegasus page (``go.Figure`` in, nothing else touched)."""
from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["node_counts_figure", "skew_figure"]

_COLORS = {"primary": "#1f77b4", "secondary": "#ff7f0e", "total": "#2a2a2a"}


def node_counts_figure(rows: list, title: str, step: int = 0, steps: int = 0) -> go.Figure:
    """Per node: primaries and secondaries before (faded) and at ``step`` (solid), totals as dots.

    Parameters
    ----------
    rows : list of dict
        From :func:`dashboard.pegasus.views.step_rows`.
    title : str
    step, steps : int
        Current step and plan length, for the title.
    """
    nodes = [r["node"] for r in rows]
    fig = go.Figure()
    for role in ("primary", "secondary"):
        fig.add_bar(x=nodes, y=[r[f"{role}_before"] for r in rows], name=f"{role} (before)",
                    marker_color=_COLORS[role], opacity=0.35, offsetgroup=f"{role}-before")
        fig.add_bar(x=nodes, y=[r[role] for r in rows], name=f"{role} (step {step})",
                    marker_color=_COLORS[role], offsetgroup=f"{role}-now")
    fig.add_scatter(x=nodes, y=[r["total_before"] for r in rows], mode="markers",
                    name="total (before)", marker={"symbol": "circle-open", "size": 11,
                                                   "color": _COLORS["total"]})
    fig.add_scatter(x=nodes, y=[r["total"] for r in rows], mode="markers",
                    name=f"total (step {step})", marker={"symbol": "diamond", "size": 10,
                                                         "color": _COLORS["total"]})
    fig.update_layout(title=f"{title}: replicas per node, step {step} of {steps}",
                      barmode="group", xaxis_title="replica server", yaxis_title="replicas",
                      legend={"orientation": "h", "y": -0.25}, margin={"t": 50, "b": 40},
                      template="plotly_white")
    return fig


def skew_figure(points: list, step: int, title: str) -> go.Figure:
    """Skew (max - min over alive nodes) of primaries, secondaries and totals along the plan."""
    fig = go.Figure()
    xs = [p["step"] for p in points]
    for key in ("primary", "secondary", "total"):
        fig.add_scatter(x=xs, y=[p[key] for p in points], mode="lines+markers", name=key,
                        line={"shape": "hv", "color": _COLORS[key]})
    fig.add_vline(x=step, line_dash="dot", line_color="#888")
    fig.update_layout(title=f"{title}: skew after each round", xaxis_title="step (proposals applied)",
                      yaxis_title="max - min", template="plotly_white", margin={"t": 50, "b": 40},
                      legend={"orientation": "h", "y": -0.3})
    return fig
