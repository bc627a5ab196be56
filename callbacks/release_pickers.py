"""Release pickers that write ``pulsarVersion=X`` into a page's ``broker.conf`` lines: each Simulator side's
"other keys" (the run decides as that release, with its defaults under the side's changed keys) and the
History page's overrides (its backtest and sweep)."""
from __future__ import annotations

from dash import Input, MATCH, Output, State, callback

from dashboard import ids
from dashboard.tuner.release_diff import check_release


def with_release_line(text: str | None, version: str) -> str:
    """``text`` (``broker.conf`` lines) with its ``pulsarVersion`` line replaced by ``version``'s (removed
    for ``""``: the scenario's release)."""
    lines = [ln for ln in (text or "").splitlines() if ln.partition("=")[0].strip() != "pulsarVersion"]
    if version:
        lines.insert(0, f"pulsarVersion={version}")
    return "\n".join(lines)


@callback(
    Output({"type": ids.SIM_EXTRA, "side": MATCH}, "value", allow_duplicate=True),
    Input({"type": ids.SIM_RELEASE, "side": MATCH}, "value"),
    State({"type": ids.SIM_EXTRA, "side": MATCH}, "value"),
    prevent_initial_call=True,
)
def pick_release(version, text):
    """A side's release picked: its "other keys" carry it (and so the run, the permalink and the report)."""
    version = check_release(version if isinstance(version, str) else "")
    text = text if isinstance(text, str) else ""
    return with_release_line(text[:1_000_000], version)


@callback(
    Output(ids.HISTORY_OVERRIDES, "value", allow_duplicate=True),
    Input(ids.HISTORY_RELEASE, "value"),
    State(ids.HISTORY_OVERRIDES, "value"),
    prevent_initial_call=True,
)
def pick_history_release(version, text):
    """The History page's release picked: its overrides carry it into the backtest and the sweep."""
    version = check_release(version if isinstance(version, str) else "")
    text = text if isinstance(text, str) else ""
    return with_release_line(text[:1_000_000], version)
