"""Exports for incident reviews: PNG/SVG images of the figures (Kaleido + the system Chromium) and
"Export report", one self-contained HTML file with the figures, the config diff, the decisions and
their reasons.

Kaleido is only imported and started when an export is asked for — never at import time — and each
export runs its own short-lived Chromium session (see :func:`render_images`), so no Kaleido server
thread exists to be broken by a fork or to hang the process at exit.
"""
from __future__ import annotations

import asyncio
import html
import io
import os
import shutil
import threading
import zipfile
from datetime import datetime, timezone

import plotly.io as pio
from plotly.offline import get_plotlyjs

from engine.commands import commands_text
from engine.config import key_info, release_defaults, to_broker_conf

from .analysis import Analysis
from .figures.cycles import cycles_figure
from .figures.pairs import avg_pairs
from .figures.placement import placement_scores
from .figures.plan import before_after
from .figures.scores import broker_scores
from .figures.theme import STATUS
from .figures.topics import topic_distribution
from .figures.transfer import broker_load
from .keys import fmt_conf_value
from .state import TunerState
from .transfer import hit_counts, is_transfer, start_hit_count, transfer_view

__all__ = ["tuner_figures", "figure_image", "render_images", "figures_zip", "build_report", "report_filename",
           "build_agreement_report", "timeline_agreement",
           "browser_path", "EXPORT_FORMATS"]

EXPORT_FORMATS = ("png", "svg")
_lock = threading.Lock()


def browser_path() -> str | None:
    """The Chromium Kaleido drives: ``BROWSER_PATH``, else ``/usr/bin/chromium``, else one on PATH."""
    for p in (os.getenv("BROWSER_PATH"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if p and os.path.exists(p):
            return p
    return None


# ------------------------------------------------------------------------------------------ figures
def _explains(strategy) -> frozenset:
    """What a strategy's results carry for figures (``spec.explains``; empty for a name the registry lacks)."""
    from engine.errors import UsageError
    from engine.strategies import registry

    try:
        return registry.spec(strategy).explains
    except UsageError:
        return frozenset()


def tuner_figures(a: Analysis, cycles=None) -> dict:
    """``{name: (title, figure)}`` of everything the Tuner shows for one analysis, in page order."""
    v, cfg, rev = a.view, a.config, a.rev
    if is_transfer(a.result):
        out = {"broker-load": ("TransferShedder: broker load against the average and the target std",
                               broker_load(transfer_view(a), a.status, a.result.verdicts, rev=rev))}
    else:
        out = {"broker-scores": ("Broker scores and the lines they are compared against",
                                 broker_scores(v, a.result, cfg, a.status, rev=rev))}
    if a.result is not None and "pairs" in _explains(a.result.strategy):
        out["avgshedder-pairs"] = ("AvgShedder pairs", avg_pairs(a.result, cfg, a.status, rev=rev))
    out["placement"] = ("Where the first unloaded bundle goes", placement_scores(a.first_placement, cfg, rev=rev))
    out["before-after"] = ("Broker throughput before and after the unloads, and the max/min ratios",
                           before_after(v, a.before_thr, a.after_thr, a.before_rate, a.after_rate, a.status, a.ratios,
                                        rev=rev))
    out["topic-distribution"] = ("Per-bundle topic distribution",
                                 topic_distribution(v, a.snap.ld.bundle_topics, selected=a.unloaded_bundles, rev=rev))
    if cycles:
        hits = hit_counts(cycles, start_hit_count(a.snap.ld)) if is_transfer(a.result) else None
        out["cycles"] = (f"{len(cycles)} cycles on the same snapshot", cycles_figure(cycles, cfg, rev=rev, hits=hits))
    return out


# ------------------------------------------------------------------------------------------ images
def _kopts() -> dict:
    p = browser_path()
    if p:
        os.environ.setdefault("BROWSER_PATH", p)  # choreographer looks here before searching
    return {"mathjax": False, "n": 1, "timeout": 90}


def _opts(fig, fmt: str, width: int, height, scale) -> dict:
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {EXPORT_FORMATS}")
    lay = getattr(fig, "layout", None)
    h = height or int(lay.height if lay is not None and lay.height else 420)
    return {"format": fmt, "width": int(width), "height": h, "scale": scale}


async def _render(figs: list, opts: list) -> list:
    import kaleido

    async with kaleido.Kaleido(**_kopts()) as k:
        return [await k.calc_fig(f, opts=o) for f, o in zip(figs, opts)]


def render_images(figs: list, fmt: str = "png", *, width: int = 1200, scale: float = 2) -> list:
    """PNG or SVG bytes of each figure, rendered by Kaleido with the system Chromium.

    One Chromium is started per call and closed afterwards (a few seconds; exports are rare): no
    process-wide server, so nothing can be left behind by a fork (gunicorn, background jobs) or at exit.
    """
    opts = [_opts(f, fmt, width, None, scale) for f in figs]
    with _lock:  # one Chromium at a time per process
        return asyncio.run(_render(list(figs), opts))


def figure_image(fig, fmt: str = "png", *, width: int = 1200, height: int | None = None, scale: float = 2) -> bytes:
    """One figure as PNG or SVG bytes (see :func:`render_images`)."""
    opts = _opts(fig, fmt, width, height, scale)
    with _lock:
        return asyncio.run(_render([fig], [opts]))[0]


def figures_zip(figs: dict, fmt: str = "png") -> bytes:
    """A zip of every figure (``{name: (title, fig)}``) as ``<name>.<fmt>``, titled."""
    names = list(figs)
    images = render_images([_titled(fig, title) for title, fig in figs.values()], fmt)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, img in zip(names, images):
            zf.writestr(f"{name}.{fmt}", img)
    return buf.getvalue()


def _titled(fig, title: str):
    """A copy with a title (figures on the page have their titles in the card headers)."""
    import plotly.graph_objects as go

    d = fig.to_plotly_json()
    lay = dict(d.get("layout") or {})
    if not (lay.get("title") or {}).get("text"):
        lay["title"] = {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}}
        m = dict(lay.get("margin") or {})
        m["t"] = max(int(m.get("t", 36)), 64)
        lay["margin"] = m
        leg = dict(lay.get("legend") or {})
        if leg.get("orientation") == "h":
            leg["y"] = 1.0
            leg["yanchor"] = "bottom"
        lay["legend"] = leg
    return go.Figure({"data": d.get("data", []), "layout": lay}, _validate=False)


# ------------------------------------------------------------------------------------------ report
def report_filename(a: Analysis) -> str:
    t = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    return f"shedlab-report-{a.shedding}-{t}.html"


_CSS = """
:root{--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--bg:#f6f8fa;--accent:#1f6feb}
*{box-sizing:border-box}body{font-family:Inter,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:var(--fg);
margin:0;background:var(--bg);font-size:14px;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:28px 28px 60px}
header.r{background:#0d1b2a;color:#fff;padding:22px 28px}header.r h1{margin:0;font-size:22px;font-weight:650}
header.r .sub{color:#c9d4e3;margin-top:4px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:18px 20px;margin:18px 0}
h2{font-size:16px;margin:0 0 10px}h3{font-size:14px;margin:0 0 8px;color:var(--muted);font-weight:600}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #eaeef2;padding:6px 8px;
text-align:left;vertical-align:top}th{color:var(--muted);font-weight:600;background:#fafbfc}
code,pre{font-family:'JetBrains Mono',SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#0d1b2a;color:#e6edf3;padding:12px 14px;border-radius:8px;overflow:auto}
.kv{display:grid;grid-template-columns:180px 1fr;gap:4px 16px}.kv div:nth-child(odd){color:var(--muted)}
.badge{display:inline-block;padding:2px 8px;border-radius:999px;font-size:12px;font-weight:600;color:#fff}
.headline{font-size:18px;font-weight:650;margin:4px 0 8px}ul{margin:6px 0;padding-left:20px}li{margin:3px 0}
.muted{color:var(--muted)}.num{text-align:right;white-space:nowrap}
table.conf{table-layout:fixed}table.conf td{overflow-wrap:anywhere}
table.conf th:nth-child(1){width:30%}table.conf th:nth-child(2),table.conf th:nth-child(3){width:18%}
table.conf th:nth-child(4){width:8%}td code{overflow-wrap:anywhere}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _status_badge(status: str) -> str:
    col, lab = STATUS.get(status, STATUS["ok"])
    return f'<span class="badge" style="background:{col}">{_e(lab)}</span>'


def build_report(a: Analysis, state: TunerState, *, permalink: str | None = None, cycles=None, whynot=None,
                 figures: dict | None = None, warnings=(), agreement="auto") -> str:
    """The self-contained HTML report of one analysis (plotly.js inlined; no network needed).

    ``agreement``: a predicted-vs-actual comparison to include; ``"auto"`` computes it when the source
    is a timeline (:func:`timeline_agreement`), ``None`` leaves it out."""
    figs = figures if figures is not None else tuner_figures(a, cycles)
    if isinstance(agreement, str):
        from engine.errors import ShedlabError

        try:
            agreement = timeline_agreement(a)
        except ShedlabError:
            agreement = None
    info = a.snap.info
    cfg = a.config
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Shedlab report — {_e(info.get('label', a.snap.id))}</title>",
             f"<style>{_CSS}</style>",
             f"<script type='text/javascript'>{get_plotlyjs()}</script>",
             "</head><body>",
             "<header class='r'><h1>Shedlab report</h1>",
             f"<div class='sub'>{_e(a.shedding)} + {_e(a.placement)} · {_e(info.get('label', a.snap.id))} · "
             f"generated {now}</div></header><main>"]
    # --- summary
    steps = f" (step {a.snap.step + 1} of {a.snap.steps})" if a.snap.steps > 1 else ""
    parts.append("<section><h2>Scenario</h2><div class='kv'>")
    rows = [("source", f"{info.get('label', a.snap.id)}{steps}"), ("source id", a.snap.id),
            ("cluster", f"{a.view.nb} brokers, {a.view.nk} bundles"),
            ("shedding strategy", f"{a.shedding} ({cfg.loadBalancerLoadSheddingStrategy})"),
            ("placement strategy", f"{a.placement} ({cfg.loadBalancerLoadPlacementStrategy})"),
            ("seed of random draws", str(a.seed))]
    if permalink:
        rows.append(("permalink", f"<a href='{_e(permalink)}'>{_e(permalink)}</a>"))
    for k, v in rows:
        parts.append(f"<div>{_e(k)}</div><div>{v if k == 'permalink' else _e(v)}</div>")
    parts.append("</div>")
    for w in list(warnings) + list(a.notes):
        parts.append(f"<p class='muted'>⚠ {_e(w)}</p>")
    parts.append("</section>")
    # --- decision
    c = a.cycle
    parts.append("<section><h2>Decision</h2>")
    parts.append(f"<div class='headline'>{_e(a.headline())}</div><div class='muted'>{_e(c.reason)}</div>")
    tv = transfer_view(a)
    if tv is not None:
        parts.append(f"<p><b>{_e(tv.verdict())}</b> · {_e(tv.hit_text())} (sheds when the count exceeds "
                     f"loadBalancerSheddingConditionHitCountThreshold {tv.threshold}) · {_e(tv.label)} "
                     f"<b>{_e(tv.code)}</b></p>")
    res = a.result
    if res is not None:
        lines = [v for v in res.verdicts if v.status in ("over", "skipped") and v.reason]
        if lines or res.pairs:
            parts.append("<h3 style='margin-top:12px'>Why</h3><ul>")
            for v in lines[:40]:
                parts.append(f"<li>{_status_badge(v.status)} <code>{_e(v.broker)}</code>: {_e(v.reason)}</li>")
            for p in res.pairs:
                if p.reason:
                    parts.append(f"<li><code>{_e(p.high)}</code> / <code>{_e(p.low)}</code>: {_e(p.reason)}</li>")
            parts.append("</ul>")
        if res.notes:
            parts.append("<ul class='muted'>" + "".join(f"<li>{_e(n)}</li>" for n in res.notes[:6]) + "</ul>")
    if a.plan:
        parts.append("<h3 style='margin-top:12px'>Unload plan</h3><table><tr><th>#</th><th>bundle</th><th>from</th>"
                     "<th>to</th><th class='num'>msg/s</th><th class='num'>MB/s</th><th>placement</th>"
                     "<th>outcome</th></tr>")
        for i, r in enumerate(a.plan, 1):
            parts.append(f"<tr><td>{i}</td><td><code>{_e(r['bundle'])}</code></td><td><code>{_e(r['source'])}</code>"
                         f"</td><td><code>{_e(r['destination'])}</code></td><td class='num'>{r['msg_rate']:,.0f}</td>"
                         f"<td class='num'>{r['throughput'] / 1048576:,.2f}</td><td>"
                         + (f"<b>{_e(r['decision'])}</b>{' (swap)' if r.get('swap') else ''}: {_e(r.get('detail', ''))}"
                            if 'decision' in r else "")
                         + f"{_e(r['placement_strategy'])}{' (random)' if r['random'] else ''}"
                         f"{': ' + _e(r['placement']) if r['placement'] else ''}</td>"
                         f"<td>{_e(r['skipped'] or 'unloaded')}</td></tr>")
        parts.append("</table>")
        if a.cycle.unloads:  # the plan as the commands that would carry it out (engine.commands)
            cmds = commands_text([a.cycle], "pulsar-admin", context=[f"{a.shedding} + {a.placement}"])
            parts.append("<details id='plan-commands'><summary>As pulsar-admin commands (a dry run: Shedlab never "
                         f"changes a cluster)</summary><pre>{_e(cmds)}</pre></details>")
    ratios = ", ".join(f"{k} {_ratio(b)} → {_ratio(af)}" for k, (b, af) in a.ratios.items())
    parts.append(f"<p class='muted'>max/min across brokers (after = estimate): {_e(ratios)}</p></section>")
    # --- config diff
    rel = cfg.pulsarVersion
    defaults = release_defaults(rel)
    parts.append(f"<section><h2>Configuration (changes from Pulsar {_e(rel)} defaults)</h2>")
    parts.append(f"<p id='pulsar-release'>Decided as Pulsar <b>{_e(rel)}</b> (its load balancer's behaviour and "
                 f"defaults; docs/releases.md says what differs between releases).</p>")
    diff = [(k, getattr(defaults, k), getattr(cfg, k)) for k in _changed(cfg) if k != "pulsarVersion"]
    if diff:
        parts.append(f"<table class='conf'><tr><th>broker.conf key</th><th>Pulsar {_e(rel)} default</th><th>value</th>"
                     "<th>unit</th><th>what it does</th></tr>")
        for k, d, v in diff:
            info_k = key_info(k)
            parts.append(f"<tr><td><code>{_e(k)}</code></td><td>{_e(fmt_conf_value(d))}</td>"
                         f"<td><b>{_e(fmt_conf_value(v))}</b></td><td>{_e(info_k['unit'])}</td>"
                         f"<td>{_e(info_k['doc'])}</td></tr>")
        parts.append("</table>")
    else:
        parts.append(f"<p>All keys at Pulsar {_e(rel)} defaults.</p>")
    conf = to_broker_conf(cfg) or f"# all keys at Pulsar {rel} defaults\n"
    parts.append(f"<h3 style='margin-top:12px'>broker.conf lines</h3><pre>{_e(conf)}</pre></section>")
    # --- why not
    if whynot is not None:
        parts.append(f"<section><h2>Why not? — {_e(whynot.target)}</h2><div class='headline'>{_e(whynot.headline)}"
                     "</div><ul>" + "".join(f"<li>{_e(x)}</li>" for x in whynot.missed) + "</ul>")
        if whynot.flips:
            parts.append("<h3>Slider values that change the outcome</h3><ul>"
                         + "".join(f"<li>{_e(f.text)}</li>" for f in whynot.flips) + "</ul>")
        parts.append("<p class='muted'>" + _e("; ".join(whynot.notes)) + "</p></section>")
    # --- predicted vs actual (a timeline: what the cluster did between snapshots)
    if agreement is not None:
        from .figures.history import agreement_figure

        parts += _agreement_section(agreement, agreement_figure(agreement))
    # --- figures
    for name, (title, fig) in figs.items():
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"fig-{name}",
                          config={"displaylogo": False, "responsive": True,
                                  "toImageButtonOptions": {"format": "svg", "filename": name, "scale": 2}})
        parts.append(f"<section><h2>{_e(title)}</h2>{div}</section>")
    parts.append("<p class='muted'>Made with Shedlab: the decisions are the engine's reproduction of Pulsar's "
                 "load manager for this snapshot and configuration.</p></main></body></html>")
    return "".join(parts)


def _changed(cfg) -> list:
    keys = [ln.split("=", 1)[0] for ln in to_broker_conf(cfg).splitlines()]
    return [k for k in keys if k] if keys else []


def _ratio(v) -> str:
    return "∞" if v is None else f"{v:,.2f}×"



def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f} %"


def timeline_agreement(a: Analysis, max_steps: int = 500):
    """Predicted vs actual of the analysed source when it is a timeline (2 to ``max_steps`` snapshots,
    modular or ELM): observed ownership changes against the engine's replay with the analysis' config
    (:mod:`engine.agreement`); ``None`` otherwise."""
    if a.snap.steps < 2 or a.snap.steps > max_steps:
        return None
    from engine.agreement import compare_timeline
    from engine.cli.replay import replay_timeline
    from engine.model import LoadData

    from .sources import get_snapshot

    lds = [get_snapshot(a.snap.id, k).ld for k in range(a.snap.steps)]
    lds = [x.elm if getattr(x, "elm", None) is not None else x for x in lds]  # an ELM source: its own data
    if not all(isinstance(x, LoadData) or getattr(x, "extensible", False) for x in lds):
        return None
    lm, cycles, _ = replay_timeline(lds, a.config, a.seed)
    return compare_timeline(lds, cycles, source=a.snap.info.get("label", a.snap.id), strategy=lm.shedding.name)


def _agreement_section(ag, fig=None) -> list:
    """HTML parts of the predicted-vs-actual section (the History report and the Tuner report)."""
    m = ag.metrics
    parts = ["<section id='predicted-vs-actual'><h2>Predicted vs actual</h2>",
             f"<div class='muted'>{_e(ag.source)} · {_e(ag.strategy)}</div><div class='kv'>"]
    rows = [("agreement", f"{_pct(m['agreement'])} — Jaccard index of the {m['basis']}: |predicted ∩ observed| / "
                          "|predicted ∪ observed| (100 % = the engine predicted exactly what the cluster did)"),
            ("unloads", f"predicted {m['predicted_unloads']:g}, observed {m['observed_unloads']:g}; count agreement "
                        f"{_pct(m['count_agreement'])} (Σ min / Σ max of unloads per hour)"),
            ("shedding brokers per hour", f"precision {_pct(m['broker_precision'])} (predicted that did shed), "
                                          f"recall {_pct(m['broker_recall'])} (did shed that were predicted)")]
    if m.get("bundle_precision") is not None or m.get("bundle_recall") is not None:
        rows.append(("bundles", f"precision {_pct(m['bundle_precision'])}, recall {_pct(m['bundle_recall'])}"))
    for k, v in rows:
        parts.append(f"<div>{_e(k)}</div><div>{_e(v)}</div>")
    parts.append("</div>")
    for n in ag.notes:
        parts.append(f"<p class='muted'>⚠ {_e(n)}</p>")
    if fig is not None:
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id="fig-agreement",
                                 config={"displaylogo": False, "responsive": True}))
    parts.append("<h3>Per hour (UTC)</h3><table><tr><th>hour</th><th class='num'>predicted</th>"
                 "<th class='num'>observed</th><th>brokers predicted to shed</th><th>brokers that shed</th></tr>")
    for r in ag.hours.itertuples():
        ob = "not known" if r.observed_brokers is None else ", ".join(r.observed_brokers) or "—"
        parts.append(f"<tr><td>{r.hour:%Y-%m-%d %H:00}</td><td class='num'>{r.predicted:g}</td>"
                     f"<td class='num'>{r.observed:g}</td><td>{_e(', '.join(r.predicted_brokers) or '—')}</td>"
                     f"<td>{_e(ob)}</td></tr>")
    parts.append("</table>")
    if ag.moves is not None and len(ag.moves):
        parts.append("<h3>Unloads, side by side</h3><table><tr><th>interval from</th><th>bundle</th><th>from</th>"
                     "<th>predicted to</th><th>observed to</th><th>status</th></tr>")
        for r in ag.moves.itertuples():
            t = datetime.fromtimestamp(int(r.time) / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
            parts.append(f"<tr><td>{t}</td><td><code>{_e(r.bundle)}</code></td><td><code>{_e(r.broker)}</code></td>"
                         f"<td>{_e(r.predicted_destination if isinstance(r.predicted_destination, str) else '—')}</td>"
                         f"<td>{_e(r.observed_destination if isinstance(r.observed_destination, str) else '—')}</td>"
                         f"<td><b>{_e(r.status)}</b></td></tr>")
        parts.append("</table>")
    parts.append("</section>")
    return parts


def build_agreement_report(ag, fig=None, *, conf: str = "", permalink: str | None = None) -> str:
    """The self-contained HTML report of a predicted-vs-actual comparison
    (:class:`engine.agreement.Agreement`): the agreement figures and how they are defined, the figure,
    the hours side by side, every disagreeing unload, the broker.conf used."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Shedlab predicted vs actual — {_e(ag.source)}</title>", f"<style>{_CSS}</style>",
             f"<script type='text/javascript'>{get_plotlyjs()}</script>" if fig is not None else "",
             "</head><body><header class='r'><h1>Shedlab report — predicted vs actual</h1>",
             f"<div class='sub'>{_e(ag.source)} · {_e(ag.strategy)} · generated {now}</div></header><main>"]
    if permalink:
        parts.append(f"<p class='muted'>permalink: {_e(permalink)}</p>")
    parts += _agreement_section(ag, fig)
    parts.append("<section><h2>broker.conf used</h2>"
                 f"<pre>{_e(conf.strip() or '# Pulsar defaults')}</pre></section>")
    parts.append("<p class='muted'>Made with Shedlab: the prediction is the engine's reproduction of Pulsar's load "
                 "manager run on the same data with the cluster's configuration.</p></main></body></html>")
    return "".join(parts)
