"""Pegasus page: load ``app -d`` / ``nodes -d`` text or JSON, see and step through the plan."""
from __future__ import annotations

from dash import dcc, html

from dashboard import ids
from dashboard.pegasus import (DEFAULT_SAMPLE, MAX_UPLOAD_BYTES, list_samples,
                                       source_from_sample)

__all__ = ["layout", "alert", "summary_view", "health_table", "proposal_table", "step_label"]

_OPTIONS = [
    {"label": "cluster balance (balance_cluster)", "value": "cluster"},
    {"label": "only primary (only_primary_balancer)", "value": "only_primary"},
    {"label": "only move primary (only_move_primary)", "value": "only_move_primary"},
    {"label": "balancer in turn (balancer_in_turn)", "value": "in_turn"},
    {"label": "emulate bug quirks Q1, Q7, Q13", "value": "quirks"},
]
#: proposals shown around the current step
WINDOW = 40


def layout(**kwargs):
    samples = list_samples()
    sample = kwargs.get("sample") if kwargs.get("sample") in samples else (
        DEFAULT_SAMPLE if DEFAULT_SAMPLE in samples else (samples[0] if samples else None))
    mb = MAX_UPLOAD_BYTES // (1024 * 1024)
    return html.Div(
        [
            html.H2("Pegasus replica balancing"),
            html.P("What the Pegasus meta server (lively level) would do: cure, then balance "
                   "round after round. Load the text of `app NAME -d` (one or more, optionally "
                   "with `nodes -d`) or the JSON form.", className="pegasus-intro"),
            dcc.Store(id=ids.PEGASUS_SOURCE, data=source_from_sample(sample) if sample else None),
            html.Div(
                [
                    html.Div([html.Label("Sample", htmlFor=ids.PEGASUS_SAMPLE),
                              dcc.Dropdown(id=ids.PEGASUS_SAMPLE, value=sample, clearable=False,
                                           options=[{"label": s, "value": s} for s in samples])],
                             className="pegasus-field"),
                    html.Div([dcc.Upload(id=ids.PEGASUS_UPLOAD, max_size=MAX_UPLOAD_BYTES,
                                         accept=".txt,.log,.out,.json",
                                         children=html.Div("Drop or click to upload a file"),
                                         className="pegasus-upload",
                                         className_reject="pegasus-upload-reject"),
                              html.Small(f"Shell text or JSON, at most {mb} MB",
                                         className="pegasus-limit")],
                             className="pegasus-field"),
                    html.Div([dcc.Checklist(id=ids.PEGASUS_OPTIONS, options=_OPTIONS,
                                            value=["quirks"], className="pegasus-options")],
                             className="pegasus-field"),
                    html.Div([html.Label("Disk-choice seed", htmlFor=ids.PEGASUS_SEED),
                              dcc.Input(id=ids.PEGASUS_SEED, type="number", min=0, step=1,
                                        placeholder="first disk", debounce=True)],
                             className="pegasus-field"),
                ],
                className="pegasus-controls",
            ),
            html.Div(id=ids.PEGASUS_ALERT),
            html.Div(id=ids.PEGASUS_SUMMARY, className="pegasus-summary"),
            html.Div(id=ids.PEGASUS_HEALTH),
            html.Div(
                [
                    html.Div([html.Label("Counts for", htmlFor=ids.PEGASUS_TABLE),
                              dcc.Dropdown(id=ids.PEGASUS_TABLE, value="", clearable=False,
                                           options=[{"label": "cluster", "value": ""}])],
                             className="pegasus-field"),
                    html.Div([html.Label("Step", htmlFor=ids.PEGASUS_STEP),
                              dcc.Slider(id=ids.PEGASUS_STEP, min=0, max=0, step=1, value=0,
                                         marks=None, updatemode="drag",
                                         tooltip={"placement": "bottom"})],
                             className="pegasus-field pegasus-step"),
                ],
                className="pegasus-controls",
            ),
            html.Div(id=ids.PEGASUS_STEP_LABEL, className="pegasus-step-label"),
            dcc.Graph(id=ids.PEGASUS_COUNTS, config={"displaylogo": False}),
            dcc.Graph(id=ids.PEGASUS_SKEW, config={"displaylogo": False}),
            html.Div([html.Button("Download plan (CSV)", id=ids.PEGASUS_DOWNLOAD_CSV),
                      html.Button("Download plan (JSON)", id=ids.PEGASUS_DOWNLOAD_JSON),
                      dcc.Download(id=ids.PEGASUS_DOWNLOAD)], className="pegasus-downloads"),
            html.Div(id=ids.PEGASUS_PROPOSALS),
        ],
        className="page pegasus-page",
    )


def alert(message: str | None):
    """The alert shown for a bad input (``None``: nothing)."""
    if not message:
        return None
    return html.Div(message, role="alert", className="pegasus-alert")


def summary_view(plan, warnings=()):
    """Stop reason, numbers of rounds and proposals, the balancer's operation counts."""
    t = plan.operation_count_plan
    b = plan.operation_count_before
    snap = plan.snapshot
    alive = sum(1 for n in snap.nodes if n.alive)
    items = [
        html.Li(f"{snap.source}: {len(snap.nodes)} nodes ({alive} alive), {len(snap.tables)} "
                f"table(s), {snap.partition_total} partitions"),
        html.Li(f"{len(plan.rounds)} round(s), {len(plan.proposals)} proposal(s): "
                f"move_pri {t.move_pri}, copy_pri {t.copy_pri}, copy_sec {t.copy_sec}, "
                f"cure/meta {len(plan.proposals) - t.total}"),
        html.Li(f"stopped: {plan.stop_reason}"),
    ]
    if b is not None:
        items.append(html.Li(f"balance checker before the first round (steady level): "
                             f"total {b.total} (move_pri {b.move_pri}, copy_pri {b.copy_pri}, "
                             f"copy_sec {b.copy_sec})"))
    items += [html.Li(f"warning: {w}", className="pegasus-warning") for w in warnings]
    return html.Ul(items)


def health_table(rows):
    """Partition health per table, before -> after."""
    head = ["table", "partitions", "fully healthy", "unhealthy", "write unhealthy", "read unhealthy"]
    body = []
    for r in rows:
        cells = [r["table"], r["partitions"]]
        for k in ("fully_healthy", "unhealthy", "write_unhealthy", "read_unhealthy"):
            b, a = r[k]
            cells.append(f"{b}" if a == b else f"{b} -> {a}")
        body.append(html.Tr([html.Td(c) for c in cells]))
    return html.Table([html.Caption("Partition health (before -> after the plan)"),
                       html.Thead(html.Tr([html.Th(h) for h in head])), html.Tbody(body)],
                      className="pegasus-table")


def proposal_table(proposals, step: int):
    """The proposal list around ``step`` (applied ones marked, the current one highlighted)."""
    if not proposals:
        return html.P("No proposal: nothing to cure or balance.")
    lo = max(0, min(step - WINDOW // 2, len(proposals) - WINDOW))
    hi = min(len(proposals), lo + WINDOW)
    head = ["step", "round", "type", "partition", "table", "from", "to", "reason"]
    rows = []
    for i in range(lo, hi):
        p = proposals[i]
        cls = "pegasus-current" if i + 1 == step else ("pegasus-applied" if i < step else "")
        rows.append(html.Tr([html.Td(i + 1), html.Td(p.round), html.Td(p.type),
                             html.Td(str(p.gpid)), html.Td(p.table),
                             html.Td(str(p.from_node) if p.from_node else "-"),
                             html.Td(str(p.to_node) if p.to_node else "-"),
                             html.Td(p.reason, className="pegasus-reason")], className=cls))
    caption = f"Proposals {lo + 1}-{hi} of {len(proposals)}"
    return html.Table([html.Caption(caption), html.Thead(html.Tr([html.Th(h) for h in head])),
                       html.Tbody(rows)], className="pegasus-table")


def step_label(plan, step: int):
    """One line about the step the slider is on."""
    props = plan.proposals
    if step <= 0 or not props:
        return f"Before the plan (0 of {len(props)} proposals applied)."
    p = props[min(step, len(props)) - 1]
    frm = str(p.from_node) if p.from_node else "-"
    to = str(p.to_node) if p.to_node else "-"
    return f"Step {step} of {len(props)} (round {p.round}): {p.type} {p.gpid} {frm} -> {to}: {p.reason}"
