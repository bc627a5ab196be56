"""The Tuner's upgrade diff: the page's decision on another Pulsar release, side by side."""
from __future__ import annotations

import logging

from dash import Input, Output, callback, html

from dashboard import ids
from dashboard.tuner.release_diff import check_release, release_diff
from dashboard.tuner.state import TunerState
from engine.errors import ShedlabError

log = logging.getLogger(__name__)


@callback(
    Output(ids.TUNER_RELEASE_DIFF, "children"),
    Input(ids.TUNER_RELEASE_COMPARE, "value"),
    Input(ids.TUNER_STATE, "data"),
)
def compare_release(other, state):
    """The decision of the release picked for comparison beside the page's own."""
    other = check_release(other if isinstance(other, str) else "")
    if not other or not isinstance(state, dict) or not state.get("src"):
        return []
    try:
        d = release_diff(TunerState.from_json(state), other)
    except ShedlabError as exc:
        return [html.Div(str(exc), className="alert alert-warning")]
    head = "the same decision" if d["same"] else "a different decision"
    rows = [html.Div(f"{head} on {d['a']} and {d['b']}", className="release-diff-head"),
            html.Div([html.B(f"on {d['a']}: "), d["a_text"]], className="release-diff-a"),
            html.Div([html.B(f"on {d['b']}: "), d["b_text"]], className="release-diff-b")]
    if d["behaviours"]:
        rows.append(html.Ul([html.Li([html.Code(n), f" ({pr}): {t}"]) for n, pr, t in d["behaviours"]],
                            className="release-diff-why"))
    else:
        rows.append(html.Div("no behaviour Shedlab tracks differs between them", className="muted"))
    return rows
