"""What a result shows and exports: the page's figures in order, and the self-contained HTML report."""
from __future__ import annotations

import html as _html
import json
from datetime import datetime, timezone

from .events import DEFAULT_KINDS, event_rows
from .scenarios import PRESET_LABELS
from .summary import checks_frame, config_diff, summary_rows

__all__ = ["figures", "report_filename", "build_report"]


def figures(payload: dict, sweep: dict | None = None) -> dict:
    """``{name: (title, figure)}`` of everything the page shows for a result, in page order."""
    from ..figures.simulator import broker_series, cluster_figure, std_figure, sweep_heatmaps, RUN_COLORS

    runs = payload["runs"]
    rev = payload.get("at", "")
    out = {}
    for s, r in runs.items():
        out[f"run-{s}-brokers"] = (f"Run {r.label}: score seen vs real usage per broker, unloads",
                                   broker_series(r.brokers, r.events, label=r.label, color=RUN_COLORS[s], rev=rev))
    out["cluster"] = ("Cluster: max/min ratios, CPU range, cumulative unloads",
                      cluster_figure({r.label: r.cluster for r in runs.values()},
                                     {r.label: RUN_COLORS[s] for s, r in runs.items()}, rev=rev))
    ext = {r.label: (r.cluster, checks_frame(r.events)) for r in runs.values() if r.extensible}
    if ext:
        out["transfershedder-std"] = ("TransferShedder: load std vs target, hit count, decision codes",
                                      std_figure(ext, {r.label: r.cluster for r in runs.values()},
                                                 {r.label: RUN_COLORS[s] for s, r in runs.items()}, rev=rev))
    if sweep:
        p = sweep["plan"]
        out["sweep"] = (f"Sweep on run A ({sweep['strategy']}): {p['x_key']} × {p['y_key']}",
                        sweep_heatmaps(sweep["cells"], p["x_key"], p["x"], p["y_key"], p["y"], rev=rev))
    return out


def report_filename(payload: dict) -> str:
    t = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    st = payload["state"]
    return f"shedlab-simulation-{st['scenario'][:40].replace(':', '-')}-{t}.html"


def _e(x) -> str:
    return _html.escape(str(x), quote=True)


#: largest strategy state printed per run in the report (characters of JSON)
STATE_LIMIT = 200_000


def _state_section(*runs) -> str:
    """The strategies' memories at the end of each run, as their state values' JSON (what a test pins and a
    snapshot scenario's ``strategy_state`` restores)."""
    parts = ["<section><h2>Strategy state at the end of each run</h2><p class='muted'>each strategy's state "
             "value as JSON (<code>to_json()</code>; <code>state_type.from_json</code> gives it back): hit "
             "counters, plans, load history, … — the memory the next cycle would start from</p>"]
    for r in runs:
        state = getattr(r, "strategy_state", None) or {}
        if not state:
            parts.append(f"<p>run {r.side.upper()} · {_e(r.label[4:])}: no state kept</p>")
            continue
        for name, value in state.items():
            text = json.dumps(value, indent=1, sort_keys=True, allow_nan=False, default=str)
            cut = len(text) > STATE_LIMIT
            parts.append(f"<details><summary>run {r.side.upper()} · <code>{_e(name)}</code> "
                         f"({len(text):,} characters{', first ' + format(STATE_LIMIT, ',') + ' shown' if cut else ''})"
                         f"</summary><pre>{_e(text[:STATE_LIMIT])}</pre></details>")
    parts.append("</section>")
    return "".join(parts)


def build_report(payload: dict, *, permalink: str | None = None, sweep: dict | None = None,
                 event_limit: int = 1500) -> str:
    """One self-contained HTML file (plotly.js inlined): the scenario, A and B, the config diff, the
    summary side by side, every figure and the event log with its reasons."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    from ..export import _CSS  # the Tuner report's look: both reports read the same in an incident review

    runs = payload["runs"]
    facts = payload.get("facts", {})
    st = payload["state"]
    a, b = runs["a"], runs["b"]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    css = _CSS + (".best{font-weight:700;color:#155d3f}.differs td{background:#fff8e6}"
                  "td.reason{max-width:620px;overflow-wrap:anywhere}.ra{color:#1f6feb;font-weight:700}"
                  ".rb{color:#e36209;font-weight:700}")
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Shedlab simulation — {_e(facts.get('name', st['scenario']))}</title>",
             f"<style>{css}</style><script type='text/javascript'>{get_plotlyjs()}</script></head><body>",
             "<header class='r'><h1>Shedlab simulation report</h1>",
             f"<div class='sub'>{_e(facts.get('title', st['scenario']))} · A: {_e(a.label[4:])} vs B: "
             f"{_e(b.label[4:])} · generated {now}</div></header><main>"]
    # --- scenario
    parts.append("<section><h2>Scenario</h2><div class='kv'>")
    rows = [("scenario", f"{facts.get('name', st['scenario'])} — {facts.get('title', '')}"),
            ("scenario id", st["scenario"]),
            ("cluster", f"{facts.get('brokers', '?')} brokers ({facts.get('started', '?')} at start), "
                        f"{facts.get('namespaces', '?')} namespaces, {facts.get('events', 0)} events"),
            ("minutes", str(a.summary.get("minutes"))), ("seed", str(st["seed"])),
            ("run A", f"{a.spec['shed']} + {a.spec['place']} on {PRESET_LABELS.get(a.spec['preset'], '')}"),
            ("run B", f"{b.spec['shed']} + {b.spec['place']} on {PRESET_LABELS.get(b.spec['preset'], '')}")]
    if permalink:
        rows.append(("permalink", f"<a href='{_e(permalink)}'>{_e(permalink)}</a>"))
    for k, v in rows:
        parts.append(f"<div>{_e(k)}</div><div>{v if k == 'permalink' else _e(v)}</div>")
    parts.append("</div>")
    if facts.get("description"):
        parts.append(f"<p class='muted'>{_e(facts['description'])}</p>")
    for r in (a, b):
        if r.cancelled:
            parts.append(f"<p class='muted'>⚠ run {r.side.upper()} was cancelled: partial results</p>")
    parts.append("</section>")
    # --- summary
    parts.append("<section><h2>Summary, side by side</h2><table><tr><th>metric</th>"
                 f"<th class='num'><span class='ra'>A</span> · {_e(a.label[4:])}</th>"
                 f"<th class='num'><span class='rb'>B</span> · {_e(b.label[4:])}</th></tr>")
    for row in summary_rows(runs):
        cells = "".join(f"<td class='num{' best' if row['best'] == s else ''}'>{_e(row['values'][s])}</td>"
                        for s in ("a", "b"))
        parts.append(f"<tr><td>{_e(row['label'])}</td>{cells}</tr>")
    parts.append("</table><p class='muted'>bold: the better of the two where lower is better; "
                 "“never”: the run did not settle (no unload and usage range within the scenario's bound "
                 "for a whole window)</p></section>")
    # --- config diff
    diff = config_diff(a.config, b.config)
    parts.append("<section><h2>Configuration of A and B (keys changed from Pulsar 4.x, or different between "
                 "A and B)</h2>")
    if diff:
        parts.append("<table class='conf'><tr><th>broker.conf key</th><th>Pulsar 4.x default</th>"
                     "<th>A</th><th>B</th><th>unit</th></tr>")
        for d in diff:
            parts.append(f"<tr class='{'differs' if d['differs'] else ''}'><td><code>{_e(d['key'])}</code></td>"
                         f"<td>{_e(d['default'])}</td><td><b>{_e(d['a'])}</b></td><td><b>{_e(d['b'])}</b></td>"
                         f"<td>{_e(d['unit'])}</td></tr>")
        parts.append("</table><p class='muted'>highlighted: A and B differ</p>")
    else:
        parts.append("<p>A and B both run Pulsar 4.x defaults.</p>")
    parts.append("</section>")
    # --- strategy state
    parts.append(_state_section(a, b))
    # --- figures
    for name, (title, fig) in figures(payload, sweep).items():
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{name}",
                          config={"displaylogo": False, "responsive": True,
                                  "toImageButtonOptions": {"format": "svg", "filename": name, "scale": 2}})
        parts.append(f"<section><h2>{_e(title)}</h2>{div}</section>")
    # --- events
    kinds = [k for k in DEFAULT_KINDS] + (["check"] if any(r.extensible for r in runs.values()) else [])
    rows_, total = event_rows(runs, kinds, "both", limit=event_limit)
    parts.append("<section><h2>Event log with reasons</h2><p class='muted'>"
                 f"kinds: {_e(', '.join(kinds))} · {total:,} events"
                 + (f" (first {event_limit:,} shown)" if total > event_limit else "") + "</p>"
                 "<table><tr><th>run</th><th class='num'>minute</th><th>kind</th><th>broker → destination</th>"
                 "<th>bundle</th><th>reason</th></tr>")
    for r in rows_:
        dest = f" → {r['destination']}" if r["destination"] else ""
        extra = f" · placement: {r['placement']}" if r["placement"] else ""
        parts.append(f"<tr><td class='{'ra' if r['run'] == 'A' else 'rb'}'>{r['run']}</td>"
                     f"<td class='num'>{r['minute']}</td><td>{_e(r['kind'])}</td>"
                     f"<td><code>{_e(r['broker'])}{_e(dest)}</code></td><td><code>{_e(r['bundle'])}</code></td>"
                     f"<td class='reason'>{'<b>' + _e(r['code']) + '</b> ' if r.get('code') else ''}"
                     f"{_e(r['reason'])}{_e(extra)}</td></tr>")
    parts.append("</table></section>")
    parts.append("<p class='muted'>Made with Shedlab: the runs are the engine's time-stepped reproduction of "
                 "Pulsar's load manager on this scenario (docs/scenarios.md lists what it models and "
                 "simplifies).</p></main></body></html>")
    return "".join(parts)
