"""Tuner page: one snapshot, the strategies and their broker.conf keys, and what the leader decides.

``layout(**kwargs)`` takes a permalink's query parameters (see :mod:`dashboard.permalink`); with
none it renders the default sample's settings and the callbacks restore the tab's own state. The
small builders below (controls, decision card, plan table, …) are pure functions of engine
results, shared by the callbacks.
"""
from __future__ import annotations

import re
from functools import lru_cache

from dash import dcc, html

from dashboard.tuner.release_diff import check_release, release_options
from dashboard import ids, permalink
from dashboard.figures.theme import STATUS, empty_figure, graph_config
from dashboard.keys import (MANAGER_KEYS, WEIGHT_KEYS, KeySpec, conf_to_value, default_conf, format_value, groups_for,
                            key_spec, spaced_marks)
from engine.results import has_reason, column_of
from engine.strategies import registry
from dashboard.sources import DEFAULT_SOURCE, history_source_id, sample_state, source_info
from engine.errors import InputError
from dashboard.tuner.state import TunerState, coerce_state
from dashboard.tuner.transfer import REASONS, transfer_view
from dashboard.policy_notes import cycle_placements, placements_policy_text, policy_summary

__all__ = ["layout", "default_state", "controls", "fmt_store", "decision_card", "plan_table", "placement_note", "why_panel",
           "cycles_table", "source_line", "key_label", "strategy_options", "transfer_summary", "history_link",
           "page_actions"]


# ------------------------------------------------------------------------------------------ state
def default_state(src: str = DEFAULT_SOURCE) -> TunerState:
    """The settings a new user starts with: the sample's own config (``bigo-threshold-first-unload``)."""
    st = sample_state(src) or {"values": {}}
    state, _ = coerce_state({"src": src, "values": st["values"]})
    return state


def strategy_options(kind: str, shed: str | None = None) -> list[dict]:
    """Dropdown options from the registry: the placements the shedding strategy's load manager runs; one
    that is itself a shedding strategy (AvgShedder) is offered only with itself as shedding strategy
    (as Pulsar requires: :func:`engine.strategies.registry.needs_own_shedding`)."""
    if kind == "shedding":
        return [{"label": n, "value": n} for n in registry.names("shedding")]
    out = []
    allowed = registry.manager_placements(shed)
    for n in registry.names("placement"):
        if n not in allowed:
            continue
        opt = {"label": n, "value": n}
        if registry.needs_own_shedding(n, shed):
            opt = {"label": f"{n} (needs {n} shedding)", "value": n, "disabled": True}
        out.append(opt)
    return out


# ------------------------------------------------------------------------------------------ controls
def key_label(key: str) -> str:
    """A ``broker.conf`` key as shown beside its control: the exact key (copy-paste stays exact).

    One text node; ``.tk-key`` lets it wrap anywhere. (A ``<wbr>`` per camelCase hump looked better
    but made ~70 more Dash components on the Tuner page, and Dash's renderer visits every component of
    the page on every update: that cost each slider release ~10 ms.)
    """
    return key


@lru_cache(maxsize=1)
def _all_keys() -> tuple:
    keys = []
    for s in registry.names("shedding"):
        for p in registry.names("placement"):
            for g in groups_for(s, p):
                keys += [k for k in g.keys if k not in keys]
    for k in MANAGER_KEYS + WEIGHT_KEYS:
        if k not in keys:
            keys.append(k)
    return tuple(keys)


def fmt_store() -> dict:
    """``{key: {unit, scale, digits, default}}`` for the clientside value labels."""
    out = {}
    for k in _all_keys():
        try:
            spec = key_spec(k)
        except KeyError:
            continue
        if spec.kind == "slider":
            d = spec.fmt.to_json()
            d["default"] = spec.default
            out[k] = d
    return out


def _row(spec: KeySpec, conf: str | None) -> html.Div:
    value = conf_to_value(spec, conf)
    changed = conf is not None and conf != default_conf(spec.key)
    meta = [f"default {format_value(spec.default, spec.fmt)}"]  # text, not a component (see key_label)
    if spec.default5 != spec.default:
        meta.append(html.Span(f"5.0: {format_value(spec.default5, spec.fmt)}", className="tk-default5"))
    head = [html.Code(key_label(spec.key), className="tk-key", title=spec.doc)]
    if spec.kind == "slider":
        head.append(html.Span(format_value(value, spec.fmt), id=ids.tuner_key_value(spec.key),
                              className="tk-value" + (" tk-value-changed" if changed else "")))
        lo, hi = spec.range_for(value)
        widget = dcc.Slider(id=ids.tuner_key(spec.key), min=lo, max=hi, step=spec.step, value=value,
                            marks=spaced_marks(spec.marks(value), lo, hi, gap=0.12), allow_direct_input=False,
                            updatemode="mouseup",
                            included=False, className="tk-slider")
    elif spec.kind == "bool":
        widget = dcc.RadioItems(id=ids.tuner_flag(spec.key), value=bool(value), inline=True, className="tk-bool",
                                options=[{"label": "true", "value": True}, {"label": "false", "value": False}])
    else:
        widget = dcc.Input(id=ids.tuner_text(spec.key), value=value or "", debounce=True, className="tk-text",
                           placeholder=str(spec.default or ""))
    return html.Div([html.Div(head, className="tk-head"), widget,
                     html.Div(meta, className="tk-meta"), html.Div(spec.doc, className="tk-doc")],
                    className="tk-row" + (" tk-changed" if changed else ""), **{"data-key": spec.key})


def controls(state: TunerState) -> list:
    """The grouped controls for the state's strategies, at the state's values."""
    values = state.value_dict
    out = []
    for g in groups_for(state.shed, state.place):
        rows = []
        for k in g.keys:
            try:
                rows.append(_row(key_spec(k), values.get(k)))
            except KeyError:
                continue
        if rows:
            out.append(html.Section([html.Div([html.H4(g.title), html.Span(g.subtitle, className="tk-sub")],
                                              className="tk-group-head"), *rows], className="tk-group"))
    if not out:
        out.append(html.P("This strategy reads no tunable keys.", className="muted"))
    return out


# ------------------------------------------------------------------------------------------ results
def _badge(label: str, kind: str) -> html.Span:
    return html.Span(label, className=f"badge badge-{kind}")


def _status_chip(status: str) -> html.Span:
    col, lab = STATUS.get(status, STATUS["ok"])
    return html.Span(lab, className="chip", style={"background": col})


def decision_card(a, inline: int = 3) -> list:
    """The headline (what the leader does this cycle) and the reasons, in the engine's words.

    The first ``inline`` reasons and placements are shown; the rest fold into a "show all" element,
    so the scores figure stays above the fold on a laptop.
    """
    c = a.cycle
    res = a.result
    moved = bool(c.unloads)
    out = [html.Div([_badge("Success" if moved else "Skip", "success" if moved else "skip"),
                     html.Span(a.headline(), className="decision-headline")], className="decision-top")]
    if not moved or (res is not None and c.reason != res.reason):  # "N bundle(s) from M broker(s)" adds nothing
        out.append(html.Div(c.reason, className="decision-reason"))
    tv = transfer_view(a)
    if tv is not None:
        out.append(transfer_summary(tv))
    # each reason and placement as (a function making its rich components, a function making its plain
    # text): the first few are shown rich, the next few dozen fold into one text block; only those are made
    # (a thousand brokers' reasons as components cost a 1,000-broker slider release ~100 ms, and a pair's
    # reason is written when first read: thousands of pairs at a low AvgShedder threshold)
    items = []
    if res is not None:
        vs = res.verdicts
        for i in [i for i, (st, why) in enumerate(zip(column_of(vs, "status"), column_of(vs, "reason")))
                  if st in ("over", "skipped") and why]:
            v = vs[i]
            items.append((lambda v=v: html.Li([_status_chip(v.status), html.Code(v.broker), " ", v.reason]),
                          lambda v=v: f"{v.broker}: {v.reason}"))
        low = a.config.loadBalancerAvgShedderLowThreshold
        for p in res.pairs:
            if (p.triggered or p.gap >= low) and has_reason(p):
                items.append((lambda p=p: html.Li([_status_chip("over" if p.triggered else "pending"),
                                                   html.Code(f"{p.high} / {p.low}"), " ", p.reason]),
                              lambda p=p: f"{p.high} / {p.low}: {p.reason}"))
        for d in (getattr(res, "decisions", None) or []) if tv is None else []:  # TransferShedder: the plan lists them
            items.append((lambda d=d: html.Li([_badge(d.label, "success" if d.label == "Success" else "skip"), " ",
                                               html.B(d.reason), ": ", d.detail or ""]),
                          lambda d=d: f"{d.label} {d.reason}: {d.detail or ''}"))
    # placements: their words are made only for those shown (thousands on a 10,000-broker cycle)
    # (their positions from the placement column: only the unloads shown are read)
    at = [i for i, d in enumerate(column_of(c.processed, "placement")) if d is not None]

    def place_text(u) -> str:
        dec = u.placement
        return (f" ({dec.strategy}" + (", random draw" if dec.random else "") + f"): {dec.reason}"
                + (f" — not unloaded: {u.skipped}" if u.skipped else ""))

    if items:
        out.append(html.Ul([rich() for rich, _ in items[:inline]], className="decision-why"))
    keep = max(1, inline - 1)
    out += [html.Div([html.Code(u.bundle), " → ", html.B(u.destination or "—"), place_text(u)],
                     className="decision-place") for u in (c.processed[i] for i in at[:keep])]
    rest_items, rest_places = items[inline:], at[keep:]
    if rest_items or rest_places:
        what = " and ".join(x for x in (f"{len(rest_items)} more reasons" if rest_items else "",
                                        f"{len(rest_places)} more placements" if rest_places else "") if x)
        lines = [t() for _, t in rest_items[:60]] + [f"{u.bundle} → {u.destination or '—'}{place_text(u)}"
                                                    for u in (c.processed[i] for i in rest_places[:30])]
        if len(rest_items) > 60 or len(rest_places) > 30:
            lines.append("… the report lists everything")
        out.append(html.Details([html.Summary(f"Show {what}", className="decision-more"),
                                 html.Div("\n".join(lines), className="decision-fold-text")],
                                className="decision-fold"))
    out += policy_card(a)
    notes = [n if len(n) <= 200 else n[:200] + " …" for n in (res.notes[:2] if res is not None and tv is None else [])]
    for n in notes + a.notes:
        out.append(html.Div(n, className="decision-note"))
    return out


def policy_card(a, limit: int = 20) -> list:
    """Which of the cluster's policies constrained each placement of the cycle: per placement,
    each policy step, then every broker it excluded and why (``dashboard.policy_notes``), as one text
    block bounded to the first ``limit`` placements ("… and N more"). Empty without policies."""
    head = policy_summary(a.snap.ld)
    if head is None:
        return []
    places = cycle_placements(a.cycle)
    body = (html.Div(placements_policy_text(places, limit), className="decision-fold-text policy-steps") if places
            else html.Div("No placement this cycle.", className="muted"))
    return [html.Div([html.Div(head, className="policy-head"), body], className="decision-policies")]


def _pips(k: int, n: int) -> list:
    if n > 12:
        return [html.Span(f"{k}", className="ts-pip ts-pip-on")]
    return [html.Span(className="ts-pip" + (" ts-pip-on" if i < k else "")) for i in range(n)]


def transfer_summary(tv, walk_inline: int = 2) -> html.Div:
    """TransferShedder's verdict: the std against the target, the hit count "k of n", the shedding
    condition's parts and the max → min steps it took (a :class:`dashboard.tuner.transfer.TransferView`)."""
    kind = "over" if tv.sheds else ("pending" if tv.condition else "ok")
    conds = []
    if tv.std is not None:
        conds = [("std > target", tv.std_over_target, tv.std_text()),
                 ("min underloaded", tv.min_underloaded, f"min broker {tv.min_broker or '—'}"
                  + (f" below {tv.underload:.2f} % (or its throughput EMA < max's × min(0.5, target/2))"
                     if tv.underload is not None else "")),
                 ("max overloaded", tv.max_overloaded, f"max broker {tv.max_broker or '—'} above "
                  f"{tv.overload:.0f} % and average + target")]
    rows = [
        html.Div([_status_chip(kind), html.Span(tv.verdict(), className="ts-verdict")], className="ts-line"),
        html.Div([html.Span("hit count", className="ts-label"),
                  html.Span(_pips(tv.hit, tv.needed), id=ids.TUNER_TS_HITS, className="ts-pips",
                            title=f"unloadConditionHitCount {tv.hit}"),
                  html.B(f"{tv.hit} of {tv.needed}", className="ts-hits-text"),
                  html.Span(f" consecutive cycles · sheds when the count exceeds "
                            f"loadBalancerSheddingConditionHitCountThreshold = {tv.threshold}", className="muted")],
                 className="ts-line"),
        html.Div([_badge(tv.label, "success" if tv.sheds else "skip"), " ", html.B(tv.code), " — ",
                  html.Span(REASONS.get(tv.code.split(" / ")[0], tv.detail), className="ts-code-doc")],
                 className="ts-line", title=tv.detail),
    ]
    if conds:
        rows.append(html.Ul([html.Li([html.Span("✔ " if on else "✗ ", className="ts-yes" if on else "ts-no"),
                                      html.B(name), f": {text}"]) for name, on, text in conds],
                            className="ts-conds"))
    walk = [html.Li(w if len(w) <= 300 else w[:300] + " …") for w in tv.walk]
    if walk:
        body = [html.Ul(walk[:walk_inline], id=ids.TUNER_TS_WALK, className="decision-why ts-walk")]
        if len(walk) > walk_inline:
            body.append(html.Details([html.Summary(f"Show {len(walk) - walk_inline} more steps", className="decision-more"),
                                      html.Ul(walk[walk_inline:40], className="decision-why ts-walk")],
                                     className="decision-fold"))
        rows += body
    return html.Div(rows, id=ids.TUNER_TS_SUMMARY, className=f"ts-summary ts-{kind}")


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~])")


def md_text(text) -> str:
    """``text`` as literal Markdown table-cell text: every Markdown character escaped (``dcc.Markdown``
    leaves raw HTML out anyway), line breaks as spaces."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def plan_table(plan: list, limit: int = 12, skip: str = "") -> html.Div:
    """The unload plan: bundle, source → destination, traffic, (TransferShedder: reason code), placement
    reason, outcome; ``skip`` says why nothing moves (e.g. TransferShedder's ``HitCount: ...``).

    One ``dcc.Markdown`` table, cut at ``limit`` rows: it is re-sent on every slider release, and a
    table of Dash components (one per cell, ~100) would cost every later update on the page, since Dash
    looks up each component in its store on each update. Cells are escaped (:func:`md_text`);
    ``.plan-md`` styles the columns. The report lists every row.
    """
    if not plan:
        return html.Div("No bundle is unloaded this cycle" + (f": {skip}" if skip else "."), className="empty-note")
    ts = "decision" in plan[0]  # TransferShedder: its reason code and the numbers behind each unload
    head = ["#", "bundle", "from → to", "msg/s", "MB/s"] + (["reason"] if ts else []) + ["placement", "outcome"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---:"] + ["---"] * 2 + ["---:"] * 2
                                                          + ["---"] * (len(head) - 5)) + "|"]
    for i, r in enumerate(plan[:limit], 1):
        how = f"{r['placement_strategy']}{' · random' if r['random'] else ''}: {r['placement']}"
        cells = [str(i), md_text(r["bundle"]), md_text(f"{r['source']} → {r['destination'] or '—'}"),
                 f"{r['msg_rate']:,.0f}", f"{r['throughput'] / 1048576:,.2f}"]
        if ts:
            how = how if r["placement_strategy"] else ("TransferShedder's min broker (loadBalancerTransferEnabled)"
                                                       if r["destination"] else "released: the next lookup places it")
            detail = r.get("detail", "")[:160]
            cells.append(f"**{md_text(r['decision'])}**" + (" · swap" if r.get("swap") else "")
                         + (f" — {md_text(detail)}" if detail else ""))
        cells.append(md_text(how if len(how) <= 120 else how[:120] + " …"))
        cells.append(f"*{md_text(r['skipped'])}*" if r["skipped"] else "**unloaded**")
        lines.append("| " + " | ".join(cells) + " |")
    if len(plan) > limit:
        lines += ["", f"… and {len(plan) - limit} more: Export report lists every unload"]
    return html.Div(dcc.Markdown("\n".join(lines), className="plan-md" + (" plan-md-ts" if ts else "")),
                    className="table-wrap")


def placement_note(decision) -> list:
    """Where the first unloaded bundle goes, in words: for placements without candidate scores
    (AvgShedder's plan, round robin) or when nothing is placed. Text, not a figure: it changes on
    most slider releases, and a Plotly figure of one annotation cost a release ~10 ms."""
    if decision is None:
        return [html.Div("No bundle is placed this cycle.", className="empty-note")]
    return [html.Div([html.B(decision.bundle), " → ", html.B(decision.broker)], className="placement-note-head"),
            html.Div(f"{decision.strategy}: {decision.reason}", className="placement-note-reason")]


def cycles_table(cycles, limit: int = 60, hits: list | None = None, threshold: int | None = None) -> html.Div:
    """Unloads per cycle; with ``hits`` (TransferShedder) one row per cycle first: label, reason code,
    hit count "k of n" and the std against the target."""
    pre = []
    if hits is not None:
        n = (threshold or 0) + 1
        head = html.Tr([html.Th("cycle"), html.Th("decision"), html.Th("hit count"), html.Th("std / target")])
        body = []
        for c, k in zip(cycles, hits):
            sh = c.shedding
            if sh is None:
                body.append(html.Tr([html.Td(str(c.cycle)), html.Td(c.reason), html.Td(f"{k} of {n}"), html.Td("")]))
                continue
            codes = []
            for d in sh.decisions:
                if d.reason not in codes:
                    codes.append(d.reason)
            std, tgt = sh.lines.get("std"), sh.lines.get("target std")
            body.append(html.Tr([
                html.Td(str(c.cycle)),
                html.Td([_badge(sh.label, "success" if sh.label == "Success" else "skip"), " ",
                         html.B(" / ".join(codes)), f" · {len(c.unloads)} unloads" if c.unloads else ""]),
                html.Td(f"{k} of {n}", className="num"),
                html.Td(f"{std:.2f} % / {tgt:.2f} %" if std is not None and tgt is not None else "—", className="num"),
            ]))
        pre = [html.Div(html.Table([html.Thead(head), html.Tbody(body[:limit])], className="data-table"),
                        className="table-wrap ts-cycles")]
    rows = []
    for c in cycles:
        for u in c.unloads:
            rows.append(html.Tr([html.Td(str(c.cycle)), html.Td(html.Code(u.bundle)),
                                 html.Td([html.Code(u.broker), " → ", html.Code(u.destination or "—")]),
                                 html.Td(f"{u.msg_rate:,.0f}", className="num")]))
    if not rows:
        return html.Div(pre + [html.Div(f"No unload in {len(cycles)} cycles: " + (cycles[-1].reason if cycles else ""),
                                        className="empty-note")])
    head = html.Tr([html.Th("cycle"), html.Th("bundle"), html.Th("from → to"), html.Th("msg/s", className="num")])
    table = html.Div(html.Table([html.Thead(head), html.Tbody(rows[:limit])], className="data-table"),
                     className="table-wrap")
    return html.Div(pre + [table]) if pre else table


def why_panel(w) -> list:
    """The "why not?" answer."""
    out = [html.Div(w.headline, className="why-headline")]
    if w.missed:
        out.append(html.Ul([html.Li(x) for x in w.missed], className="why-missed"))
    if w.flips:
        out.append(html.H5("Slider values that change the outcome"))
        out.append(html.Ul([html.Li([html.Span("↦ ", className="muted"), f.text]) for f in w.flips],
                           className="why-flips"))
    out.append(html.Div(f"{'; '.join(w.notes)} · {w.evaluations} engine runs in {w.seconds:.2f} s",
                        className="why-notes"))
    return out


def source_line(a) -> list:
    """"ThresholdShedder + LeastResourceUsageWithWeight on 5 brokers · 40 bundles · seed 0 (step 3 of 10)"."""
    snap = a.snap
    parts = [html.Span(a.shedding, className="pill"), html.Span(a.placement, className="pill pill-alt"),
             html.Span(f"on {snap.view.nb} brokers · {snap.view.nk} bundles · seed {a.seed}", className="src-counts")]
    if snap.steps > 1:
        parts.append(html.Span(f"timeline snapshot {snap.step + 1} of {snap.steps}", className="src-counts"))
    return parts


# ------------------------------------------------------------------------------------------ page
def _card(title, body, *, sub=None, cls="", card_id=None, hidden=False, actions=None):
    head = [html.H3(title)] + ([html.Span(sub, className="card-sub")] if sub else [])
    kw = {"id": card_id} if card_id else {}
    return html.Section([html.Div([html.Div(head, className="card-titles")] + ([actions] if actions else []),
                                  className="card-head"), body],
                        className=f"card {cls}".strip(), hidden=hidden, **kw)


def page_actions(link_id, copy_id, fmt_id, figs_id, report_id, report_title) -> html.Div:
    """A page header's actions: the permalink box with its copy button, PNG/SVG, "Download figures"
    (every figure rendered on the server) and "Export report" (shared by the Tuner and the Simulator)."""
    return html.Div([
        html.Div([dcc.Input(id=link_id, readOnly=True, className="permalink-input", placeholder="permalink"),
                  dcc.Clipboard(target_id=link_id, id=copy_id, className="clip", title="copy the permalink")],
                 className="permalink"),
        dcc.RadioItems(id=fmt_id, options=[{"label": "PNG", "value": "png"}, {"label": "SVG", "value": "svg"}],
                       value="png", inline=True, className="fmt-radio"),
        html.Button("Download figures", id=figs_id, className="btn btn-ghost",
                    title="every figure, rendered on the server with Kaleido (zip)"),
        html.Button("Export report", id=report_id, className="btn btn-primary", title=report_title),
    ], className="page-actions")


def _graph(gid, name, height=360, cls=""):
    return dcc.Graph(id=gid, figure=empty_figure("Loading…", height=height), config=graph_config(name),
                     className=f"tuner-graph {cls}".strip())


def history_link(key) -> tuple[TunerState | None, list[str]]:
    """The state ``/tuner?snapshot=<key>`` opens with: the History minute as the source, the backtest's
    strategy and changed keys (:func:`dashboard.sources.sample_state`) and one info line; ``(None, [])``
    when the key is malformed, unknown or expired (the shell's source picker says so and keeps the
    current data)."""
    try:
        src = history_source_id(key)
        info = source_info(src)
    except InputError:
        return None, []
    st = sample_state(src) or {"values": {}}
    state, errs = coerce_state({"src": src, "values": st["values"]})
    hist = info.get("history") or {}
    n = len(state.values)  # the strategy keys are kept as shed / place
    ev = ", ".join(f"{k} {v}" for k, v in (hist.get("event") or {}).items() if k in ("broker", "trigger") and v)
    msg = (f"{info.get('label', src)}: {state.shed} with the backtest's {n} changed key{'s' if n != 1 else ''}"
           + (f" ({ev})" if ev else "") + " — one shedding cycle reproduces the backtest's decision")
    return state, [msg] + [f"History minute: {e}" for e in errs]


def layout(**kwargs):
    """The Tuner page (``kwargs``: a permalink's query parameters, or ``snapshot=<key>`` from History)."""
    hist_key = kwargs.pop("snapshot", None)
    link, errors = permalink.decode(kwargs)
    if hist_key is not None:
        link, errors = history_link(hist_key)
    init = link or default_state()
    link_data = {"state": link.to_json() if link else None, "errors": errors} if (link or errors) else None
    side = html.Aside([
        _card("Strategies", html.Div([
            html.Label("Shedding (loadBalancerLoadSheddingStrategy)", htmlFor=ids.TUNER_SHED, className="field-label"),
            dcc.Dropdown(id=ids.TUNER_SHED, options=strategy_options("shedding"), value=init.shed, clearable=False,
                         className="tuner-dd"),
            html.Label("Placement (loadBalancerLoadPlacementStrategy)", htmlFor=ids.TUNER_PLACE,
                       className="field-label"),
            dcc.Dropdown(id=ids.TUNER_PLACE, options=strategy_options("placement", init.shed), value=init.place,
                         clearable=False, className="tuner-dd"),
            html.Label("Pulsar release decided as", htmlFor=ids.tuner_text("pulsarVersion"), className="field-label"),
            dcc.Dropdown(id=ids.tuner_text("pulsarVersion"), options=release_options(),
                         value=check_release(init.value_dict.get("pulsarVersion", "")), clearable=False,
                         className="tuner-dd"),
            html.Label("Compare with release (an upgrade)", htmlFor=ids.TUNER_RELEASE_COMPARE,
                       className="field-label"),
            dcc.Dropdown(id=ids.TUNER_RELEASE_COMPARE, options=release_options("no comparison"), value="",
                         clearable=False, className="tuner-dd"),
            html.Div(id=ids.TUNER_RELEASE_DIFF, className="release-diff"),
            html.Div([html.Label("Seed of random placement draws", htmlFor=ids.TUNER_SEED, className="field-label"),
                      dcc.Input(id=ids.TUNER_SEED, type="number", min=0, step=1, value=init.seed, debounce=True,
                                className="tuner-seed")], className="seed-row"),
            html.Div([html.Label("Timeline snapshot", className="field-label"),
                      dcc.Slider(id=ids.TUNER_STEP, min=0, max=1, step=1, value=0, allow_direct_input=False,
                                 marks=None, className="tk-slider")],
                     id=ids.TUNER_STEP_ROW, hidden=True, className="step-row"),
        ]), cls="card-tight"),
        _card("broker.conf", html.Div([
            html.Div([
                html.Button("Reset to defaults", id=ids.TUNER_RESET, className="btn btn-ghost",
                            title="every key back to Pulsar 4.x defaults (the strategies are kept)"),
                html.Button("Pulsar 5.0 defaults", id=ids.TUNER_PRESET5, className="btn btn-ghost",
                            title="AvgShedder for both roles, maxUnloadPercentage 0.5, bundles not distributed evenly"),
                html.Button("BIGO AvgShedder", id=ids.TUNER_PRESET_BIGO, className="btn btn-ghost",
                            title="BIGO's production AvgShedder settings (field findings §1.3)"),
            ], className="btn-row"),
            html.Div([
                dcc.Upload(html.Span(["Import broker.conf"]), id=ids.TUNER_CONF_UPLOAD, className="btn btn-ghost upload-btn",
                           max_size=1024 * 1024, multiple=False),
                html.Button("Export changed keys", id=ids.TUNER_CONF_EXPORT, className="btn btn-ghost"),
            ], className="btn-row"),
            html.Pre(id=ids.TUNER_CONF_TEXT, className="conf-text"),
        ]), cls="card-tight"),
        html.Div(controls(init), id=ids.TUNER_CONTROLS, className="tuner-controls"),
    ], className="tuner-side")

    main = html.Div([
        _card("Decision", html.Div(id=ids.TUNER_DECISION, className="decision"), cls="card-decision"),
        _card("Broker scores", _graph(ids.TUNER_FIG_SCORES, "broker-scores", 380),
              sub="bars: what the strategy compared · markers: each weighted resource · lines move while you drag"),
        _card("AvgShedder pairs", _graph(ids.TUNER_FIG_PAIRS, "avgshedder-pairs", 360), card_id=ids.TUNER_PAIRS_CARD,
              sub="hottest with coolest, second with second-to-last … · gap and hit counts k of n",
              hidden="pairs" not in registry.explains(init.shed)),
        _card("Unload plan", html.Div([
            html.Div(id=ids.TUNER_PLAN),
            html.Div([
                html.Button("Download commands", id=ids.TUNER_COMMANDS_EXPORT, className="btn btn-ghost",
                            title="the plan as the pulsar-admin (or REST) unloads that would carry it out — a dry run: "
                                  "Shedlab never changes a cluster"),
                dcc.RadioItems(id=ids.TUNER_COMMANDS_STYLE, value="pulsar-admin", inline=True,
                               options=[{"label": "pulsar-admin", "value": "pulsar-admin"},
                                        {"label": "REST", "value": "rest"}]),
            ], className="btn-row"),
        ]), sub="in the order the leader issues them"),
        _card("Where the bundle goes", html.Div([html.Div(id=ids.TUNER_PLACEMENT_NOTE, className="placement-note"),
                                                 _graph(ids.TUNER_FIG_PLACEMENT, "placement", 320)]),
              sub="the placement strategy's scores of the candidates for the first unloaded bundle",
              card_id=ids.TUNER_PLACEMENT_CARD, cls="placement-as-figure"),
        _card("Load before and after", _graph(ids.TUNER_FIG_PLAN, "before-after", 340),
              sub="each unloaded bundle's short-term traffic moved to its destination (an estimate) · max/min ratios "
                  "of message rate and throughput across brokers, dotted: 1.0 = even"),
        _card("Per-bundle topic distribution", _graph(ids.TUNER_FIG_TOPICS, "topic-distribution", 380),
              sub="topics and traffic of every bundle, per broker · red rings: unloaded this cycle"),
        _card("Run N cycles on this snapshot", html.Div([
            html.Div([html.Label("cycles", htmlFor=ids.TUNER_CYCLES_N, className="field-label inline"),
                      dcc.Input(id=ids.TUNER_CYCLES_N, type="number", min=1, max=200, step=1, value=10,
                                className="cycles-n"),
                      html.Button("Run", id=ids.TUNER_CYCLES_RUN, className="btn btn-primary")],
                     className="cycles-row"),
            dcc.Loading(html.Div([
                dcc.Graph(id=ids.TUNER_FIG_CYCLES, config=graph_config("cycles"), className="tuner-graph cycles-graph",
                          figure=empty_figure("Press Run: the leader's shedding cycles replayed on these load reports",
                                              height=140)),
                html.Div(id=ids.TUNER_CYCLES_TABLE)]), type="dot", color="#1f6feb"),
        ]), sub="the same load reports every shedding interval: hit counts and history build up"),
        _card("Why not?", html.Div([
            dcc.Dropdown(id=ids.TUNER_WHY_TARGET, placeholder="pick a broker or a bundle (type to search)",
                         className="why-dd", searchable=True, clearable=True),
            dcc.Loading(html.Div(id=ids.TUNER_WHY_OUT, className="why-out"), type="dot", color="#1f6feb"),
        ]), sub="which threshold it missed, by how much, and the slider value that changes the outcome"),
    ], className="tuner-main")

    header = html.Div([
        html.Div([html.H1("Tuner"), html.Div(id=ids.TUNER_SOURCE_INFO, className="src-line")],
                 className="page-titles page-titles-row"),
        page_actions(ids.TUNER_PERMALINK, ids.TUNER_PERMALINK_COPY, ids.TUNER_EXPORT_FORMAT, ids.TUNER_EXPORT_FIGS,
                     ids.TUNER_REPORT, "one self-contained HTML file for an incident review"),
    ], className="page-header")

    return html.Div([
        dcc.Store(id=ids.page_source("tuner")),
        dcc.Store(id=ids.page_import("tuner")),
        dcc.Store(id=ids.TUNER_STATE),
        dcc.Store(id=ids.TUNER_CYCLES_STATE),
        dcc.Store(id=ids.TUNER_WHY_STATE),
        dcc.Store(id=ids.TUNER_LINK, data=link_data),
        dcc.Store(id=ids.TUNER_BASE, data=None),
        dcc.Store(id=ids.TUNER_FMT, data=fmt_store()),
        dcc.Store(id=ids.TUNER_QS, data=None),
        dcc.Store(id=ids.TUNER_SHOWN, data=None),
        dcc.Download(id=ids.TUNER_DOWNLOAD),
        dcc.Download(id=ids.TUNER_REPORT_DOWNLOAD),
        dcc.Download(id=ids.TUNER_CONF_DOWNLOAD),
        dcc.Download(id=ids.TUNER_COMMANDS_DOWNLOAD),
        header,
        html.Div(id=ids.TUNER_ALERT),
        html.Div([side, main], className="tuner-grid"),
    ], className="page page-tuner")
