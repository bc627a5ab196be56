"""Tuner callbacks: controls, the decision and its figures, cycles, "why not?", sharing.

Flow: ``sync_controls`` owns the strategy pickers and the key controls (page load from a permalink
or the tab's saved state, strategy changes, presets, broker.conf import); it writes ``TUNER_BASE``.
``update_tuner`` runs on every slider *release* (and on base / source / seed changes): it parses
the controls into a :class:`~dashboard.tuner.state.TunerState`, makes one service call
(:func:`dashboard.tuner.service.tune`) and hands the result to the pure figure builders; the other
callbacks do the same with their own service call (``cycles``, ``why_not``). While a slider is
dragged, clientside callbacks move the value label and the threshold lines without a server round
trip. The bodies below are plain functions, unit-tested in
``tests/callbacks/test_tuner.py``.
"""
from __future__ import annotations

import logging

import numpy as np

from dash import (ALL, MATCH, ClientsideFunction, Input, Output, Patch, State, callback, clientside_callback, ctx,
                  no_update)
from dash.exceptions import PreventUpdate

from engine.commands import STYLES, commands_text
from engine.config import BIGO_AVGSHEDDER, PULSAR_5_DEFAULTS, parse_broker_conf, to_broker_conf
from engine.errors import InputError, ShedlabError
from engine.gcquiet import kept_results
from dashboard import downloads, figpatch, ids, permalink, sources
from dashboard.tuner import service
from dashboard.tuner.analysis import run_cycles
from dashboard.tuner.whynot import explain, target_kind
from dashboard.export import build_report, report_filename, tuner_figures
from dashboard.figures.cycles import cycles_figure
from dashboard.figures.pairs import avg_pairs
from dashboard.figures.placement import placement_scores
from engine.policies import broker_groups, policies_of
from dashboard.figures.plan import before_after
from dashboard.figures.scores import broker_scores
from dashboard.figures.theme import MB, empty_figure, plain_figures
from dashboard.figures.topics import MANY, dots_title, ring_shapes, rings_limit, selected_overlay, topic_distribution, y_span
from dashboard.figures.transfer import broker_load
from dashboard.tuner.transfer import is_transfer, transfer_view
from dashboard.keys import default_conf, fmt_conf_value, key_spec, value_to_conf
from engine.strategies import registry
from dashboard.tuner.state import (DEFAULT_PLACE, DEFAULT_SHED, STRATEGY_KEYS, TunerState, build_config,
                                   coerce_state, state_from_config)
from layouts.tuner import (controls as controls_of, cycles_table, decision_card, default_state, placement_note, plan_table,
                           source_line, strategy_options, why_panel)
from callbacks.shell import alert, only, page_source
from dashboard.web_safety import as_dict, as_list, as_number, as_str, str_list

log = logging.getLogger(__name__)

__all__ = ["control_values", "overlay", "resolve_controls", "sync_controls", "compute", "update_tuner",
           "run_cycles_cb", "why_not", "why_options", "export_figures", "export_report", "export_conf",
           "export_commands", "commands_download",
           "step_row"]


# ------------------------------------------------------------------------------------------ helpers
def control_values(*pairs) -> dict:
    """``{key: broker.conf text}`` from (ids, values) lists of the key controls."""
    out = {}
    for id_list, val_list in pairs:
        for i, v in zip(id_list or [], val_list or []):
            k = i.get("key") if isinstance(i, dict) else None
            if not isinstance(k, str) or not k:
                continue
            try:
                out[k] = value_to_conf(key_spec(k), v)
            except (KeyError, TypeError, ValueError):
                continue
    return out


def overlay(values: dict, current: dict) -> dict:
    """``values`` with the visible controls' values on top; keys back at their default are dropped."""
    out = dict(values or {})
    for k, v in current.items():
        if v == default_conf(k):
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _tuner_base(base) -> dict | None:
    """``TUNER_BASE`` data when it has the shape :func:`sync_controls` writes (``values`` a dict,
    ``messages`` a list, ``n`` an int), else None (a request can carry any JSON there)."""
    base = as_dict(base)
    if base is None or not isinstance(base.get("values", {}) or {}, dict) \
            or not isinstance(base.get("messages", []) or [], list) \
            or not isinstance(base.get("n", 0) or 0, int) or as_number(base.get("n", 0) or 0, lo=0, hi=2**53) is None \
            or as_str(base.get("nonce"), "", limit=100) != (base.get("nonce") or ""):
        return None
    return base


def _with_nonce(d: dict | None) -> dict | None:
    """``d`` with its ``nonce`` dropped unless it is a short string (nonces go back to the browser)."""
    if d is None or d.get("nonce") is None or as_str(d.get("nonce"), limit=100) is not None:
        return d
    return {k: v for k, v in d.items() if k != "nonce"}


def _tuner_config(config) -> dict | None:
    """``TUNER_STATE``/``CONFIG`` data naming a source (``src`` a short non-empty string), else None."""
    config = as_dict(config)
    return config if config is not None and as_str(config.get("src"), limit=300) else None


def _tuner_link(link) -> dict | None:
    """``TUNER_LINK`` data (a decoded permalink: ``state`` a dict, ``errors`` strings), else None."""
    link = as_dict(link)
    if link is None:
        return None
    return dict(link, state=as_dict(link.get("state")), errors=str_list(link.get("errors"), limit=2000))


def _fix_pairing(state: TunerState, trigger) -> tuple[TunerState, list]:
    """Keep the pickers to pairs Pulsar runs, by the registry's pairing rule (never by name): a
    placement that is itself a shedding strategy (one instance plays both roles: AvgShedder) needs
    that shedding strategy, picking such a shedding strategy picks its placement too (as Pulsar 5.0
    does), and a placement must run in the shedding strategy's load manager."""
    notes = []
    shed, place = state.shed, state.place
    if trigger == ids.TUNER_PLACE and registry.needs_own_shedding(place, shed):
        shed = place
        notes.append(f"{place} placement needs {place} shedding (one instance plays both roles): "
                     f"shedding set to {place}")
    elif trigger == ids.TUNER_SHED and registry.paired_placement(shed) not in (None, place):
        place = registry.paired_placement(shed)
        notes.append(f"placement set to {place} too, as Pulsar 5.0 does (pick another placement to compare)")
    elif registry.needs_own_shedding(place, shed):
        alt = registry.default_placement(shed)
        notes.append(f"{place} placement needs {place} shedding: placement set to {alt}")
        place = alt
    elif place not in registry.manager_placements(shed):
        alt = registry.default_placement(shed)
        notes.append(f"{place} does not run with {shed}'s load manager: placement set to {alt}")
        place = alt
    if (shed, place) == (state.shed, state.place):
        return state, notes
    return TunerState(src=state.src, shed=shed, place=place, values=state.values, seed=state.seed,
                      step=state.step), notes


def _apply_import(state: TunerState, imp: dict) -> tuple[TunerState, list]:
    vals = imp.get("values") if isinstance(imp, dict) else None
    if not isinstance(vals, dict):
        return state, []
    merged = vals if imp.get("mode") == "replace" else {**state.value_dict, **vals}
    new, errs = coerce_state({"shed": None if imp.get("mode") == "replace" else state.shed,
                              "place": None if imp.get("mode") == "replace" else state.place,
                              "values": merged, "seed": state.seed, "src": state.src})
    if imp.get("mode") != "replace":  # a broker.conf naming strategies sets them
        if isinstance(vals.get(STRATEGY_KEYS[0]), str) or isinstance(vals.get(STRATEGY_KEYS[1]), str):
            new2, _ = coerce_state({"values": vals})
            new = TunerState(src=new.src, shed=new2.shed if STRATEGY_KEYS[0] in vals else new.shed,
                             place=new2.place if STRATEGY_KEYS[1] in vals else new.place, values=new.values,
                             seed=new.seed)
    return new, [f"applied {imp.get('label', 'imported settings')}"] + errs


def resolve_controls(trigger, *, shed, place, link, conf_import, base, config, source, current, seed,
                     conf_contents=None, conf_name=None) -> tuple[TunerState, dict, list]:
    """The state the controls should show after ``trigger``, the new base and messages (pure)."""
    msgs: list = []
    src = source.get("id", "") if isinstance(source, dict) else ""
    nonce = (base or {}).get("nonce")
    imp_nonce = conf_import.get("nonce") if isinstance(conf_import, dict) else None
    if base is None:  # page load
        if link and (link.get("state") or link.get("errors")):
            state = TunerState.from_json(link.get("state") or {}) if link.get("state") else default_state(src)
            msgs += list(link.get("errors") or [])
            nonce = imp_nonce  # a link wins over a pending import
        elif isinstance(config, dict) and config:
            state = TunerState.from_json(config)
            nonce = config.get("nonce")
            if imp_nonce and imp_nonce != nonce:
                state, m = _apply_import(state, conf_import)
                msgs += m
                nonce = imp_nonce
        else:
            state = default_state(src if src.startswith("sample:") else sources.DEFAULT_SOURCE)
            nonce = imp_nonce
        state, notes = _fix_pairing(state, None)
        return state, {"values": state.value_dict, "nonce": nonce, "messages": msgs + notes}, msgs + notes
    state = TunerState(src=src, shed=shed or DEFAULT_SHED, place=place or DEFAULT_PLACE,
                       values=tuple(sorted(overlay(base.get("values") or {}, current).items())),
                       seed=int(seed or 0) if str(seed or 0).isdigit() else 0)
    if trigger == ids.TUNER_RESET:
        state = TunerState(src=src, shed=state.shed, place=state.place, values=(), seed=state.seed)
        msgs.append("every key back to its Pulsar 4.x default (strategies kept)")
    elif trigger == ids.TUNER_PRESET5:
        state = state_from_config(PULSAR_5_DEFAULTS, src=src, seed=state.seed)
        msgs.append("Pulsar 5.0 defaults: AvgShedder for shedding and placement, maxUnloadPercentage=0.5, "
                    "loadBalancerDistributeBundlesEvenlyEnabled=false")
    elif trigger == ids.TUNER_PRESET_BIGO:
        state = state_from_config(BIGO_AVGSHEDDER, src=src, seed=state.seed)
        msgs.append("BIGO's production AvgShedder settings (field findings §1.3)")
    elif trigger == ids.TUNER_CONF_UPLOAD and conf_contents:
        name = sources.display_name(conf_name or "broker.conf")
        try:
            raw = sources.decode_upload(conf_contents, name)
            parsed = parse_broker_conf(raw.decode("utf-8-sig"), source=name)
            if not parsed.applied:
                raise InputError(f"no load-balancer keys found ({len(parsed.unknown)} other keys ignored)",
                                 source=name)
            vals = {k: fmt_conf_value(getattr(parsed.config, k)) for k in parsed.applied}
            state, m = _apply_import(state, {"values": vals, "mode": "merge", "label": f"{len(vals)} key(s) from {name}"})
            msgs += m + ([f"{len(parsed.unknown)} other keys of {name} ignored"] if parsed.unknown else [])
        except UnicodeDecodeError:
            msgs.append(f"error: {name}: not UTF-8 text; nothing changed")
        except InputError as exc:
            msgs.append(f"error: {exc}; nothing changed")
    elif trigger == ids.CONF_IMPORT and imp_nonce and imp_nonce != nonce:
        state, m = _apply_import(state, conf_import)
        msgs += m
        nonce = imp_nonce
    state, notes = _fix_pairing(state, trigger)
    msgs += notes
    return state, {"values": state.value_dict, "nonce": nonce, "messages": msgs}, msgs


def _key_controls(dep=State) -> dict:
    """The key controls by kind (sliders, flags, text boxes): each kind's ids and values (``dep``: Input to
    follow them, State to read them). A fresh grouping per callback: Dash merges into the dicts it is given."""
    return {kind: {"ids": State({"type": t, "key": ALL}, "id"), "values": dep({"type": t, "key": ALL}, "value")}
            for kind, t in (("keys", ids.TUNER_KEY), ("flags", ids.TUNER_FLAG), ("texts", ids.TUNER_TEXT))}


def _shown_values(controls) -> dict:
    """:func:`control_values` of what :func:`_key_controls` delivers."""
    return control_values(*((c.get("ids"), c.get("values")) for c in (controls or {}).values() if isinstance(c, dict)))


@callback(
    output={"shed": Output(ids.TUNER_SHED, "value"), "place": Output(ids.TUNER_PLACE, "value"),
            "place_options": Output(ids.TUNER_PLACE, "options"), "controls": Output(ids.TUNER_CONTROLS, "children"),
            "base": Output(ids.TUNER_BASE, "data"), "seed": Output(ids.TUNER_SEED, "value"),
            "pairs_hidden": Output(ids.TUNER_PAIRS_CARD, "hidden"), "upload": Output(ids.TUNER_CONF_UPLOAD, "contents")},
    inputs={"shed": Input(ids.TUNER_SHED, "value"), "place": Input(ids.TUNER_PLACE, "value"),
            "reset": Input(ids.TUNER_RESET, "n_clicks"), "preset5": Input(ids.TUNER_PRESET5, "n_clicks"),
            "bigo": Input(ids.TUNER_PRESET_BIGO, "n_clicks"), "conf_contents": Input(ids.TUNER_CONF_UPLOAD, "contents"),
            "conf_import": Input(ids.page_import("tuner"), "data"), "link": Input(ids.TUNER_LINK, "data"),
            "conf_name": State(ids.TUNER_CONF_UPLOAD, "filename"), "base": State(ids.TUNER_BASE, "data"),
            "config": State(ids.CONFIG, "data"), "source": State(ids.page_source("tuner"), "data"),
            "seed": State(ids.TUNER_SEED, "value"), "controls": _key_controls()},
)
def sync_controls(*, shed, place, conf_contents, conf_import, link, conf_name, base, config, source, seed, controls,
                  **_clicks):
    """Strategy pickers, presets, broker.conf import and page load: (re)render the key controls."""
    base, link, source, config = _tuner_base(base), _tuner_link(link), page_source(source), as_dict(config)
    shed, place = as_str(shed, limit=100), as_str(place, limit=100)
    seed = seed if as_number(seed, lo=0, hi=2**31 - 1) is not None or (  # TunerState's range
        isinstance(seed, str) and len(seed) <= 10 and seed.isdigit() and int(seed) < 2**31) else None
    conf_contents, conf_name = as_str(conf_contents, limit=1 << 40), as_str(conf_name, limit=1000)
    config, conf_import = _with_nonce(config), _with_nonce(as_dict(conf_import))
    trigger = ctx.triggered_id if base is not None else None
    if trigger == ids.page_import("tuner"):
        trigger = ids.CONF_IMPORT
    visible = _shown_values(controls)
    state, new_base, _ = resolve_controls(
        trigger, shed=shed, place=place, link=link, conf_import=conf_import, base=base, config=config,
        source=source, current=dict(visible), seed=seed, conf_contents=conf_contents, conf_name=conf_name)
    new_base["n"] = int((base or {}).get("n", 0)) + 1
    same_controls = (base is not None and shed == state.shed and place == state.place
                     and all(state.value_dict.get(k, default_conf(k)) == v for k, v in visible.items())
                     and trigger not in (ids.TUNER_RESET, ids.TUNER_PRESET5, ids.TUNER_PRESET_BIGO))
    return {"shed": state.shed, "place": state.place, "place_options": strategy_options("placement", state.shed),
            "controls": no_update if same_controls else controls_of(state), "base": new_base,
            "seed": state.seed if base is None else no_update, "pairs_hidden": "pairs" not in registry.explains(state.shed),
            "upload": None}


# ------------------------------------------------------------------------------------------ compute
def _messages(base_msgs, errors) -> list:
    out = []
    for m in base_msgs or []:
        out.append(alert("error" if m.startswith("error") else "info", m))
    for e in errors:
        out.append(alert("warning", e))
    return out


#: compute() output name -> figure id (what the bench and the tests wait on)
FIGURES = {"scores": ids.TUNER_FIG_SCORES, "pairs": ids.TUNER_FIG_PAIRS, "placement": ids.TUNER_FIG_PLACEMENT,
           "before_after": ids.TUNER_FIG_PLAN, "topics": ids.TUNER_FIG_TOPICS}


def compute(state: TunerState, shown=None, base_msgs=()) -> dict:
    """Everything the page shows for ``state`` (pure apart from the caches; unit-tested).

    ``shown`` is what each part of the page shows now (content revisions, from the page's
    ``TUNER_SHOWN`` store): a figure whose content did not change is not rebuilt nor re-sent
    (``no_update``), and the topic figure of an unchanged snapshot only gets its ringed overlay
    patched. The scores and pairs figures and the decision always follow the config.

    Cyclic garbage collection waits until it returns, and what it kept (the analysis, memoised for
    the next move back) is frozen out of later passes (:func:`engine.gcquiet.kept_results`): on a big
    cluster a release builds hundreds of thousands of records, and collection passes over them took a
    third of the release at 10,000 brokers, then 0.5-1 s every tenth release over the kept ones.
    """
    with kept_results():
        return _compute(state, shown, base_msgs)


def _compute(state: TunerState, shown, base_msgs) -> dict:
    shown = shown if isinstance(shown, dict) else {}
    got = service.tune(state)
    snap, cfg, errors, a = got.snap, got.config, got.errors, got.analysis
    v, rev = snap.view, a.rev
    dec = a.first_placement
    revs = service.revisions(a)
    key = revs["snapshot"]
    same_snapshot = shown.get("snapshot") == key

    def fresh(name):
        return not (same_snapshot and shown.get(name) == revs[name])

    if not fresh("topics"):
        topics = no_update
    elif same_snapshot and shown.get("topics"):
        topics = Patch()
        ov = selected_overlay(v, a.unloaded_index)
        topics["layout"]["shapes"] = ring_shapes(ov, y_span(v), v.nb)
        if v.nk > rings_limit(v.nb):  # the title may say "the 300 busiest of ... ringed"
            topics["layout"]["annotations"][0]["text"] = dots_title(v.nk > MANY, ov, v.nb)
        topics["layout"]["editrevision"] = revs["topics"]
    else:
        with plain_figures():
            topics = topic_distribution(v, snap.ld.bundle_topics, selected=a.unloaded_index, rev=revs["topics"])
    is_avg = a.result is not None and "pairs" in registry.explains(a.result.strategy)  # a pairing strategy: its pairs
    ts = is_transfer(a.result)

    as_text = dec is None or not dec.scores  # AvgShedder, round robin: no candidate scores to draw
    card_cls = "card placement-as-text" if as_text else "card placement-as-figure"

    def kept(name, value, token):
        """``value``, or ``no_update`` when the page already shows it (``token`` names it in ``shown``):
        an output re-sent unchanged still costs the browser a re-render."""
        revs[name] = token
        return no_update if shown.get(name) == token else value

    def send(name, build):
        """The figure (a plain dict: no go.Figure round trip, no template object, see
        dashboard.figures.theme.inline_template), or only what changed since the one the page shows
        (see dashboard.figpatch)."""
        with plain_figures():
            fig = build()
        patch = figpatch.figure_patch(name, shown.get(name), figpatch.remember(name, revs[name], fig))
        return fig if patch is None else patch

    out = {
        "scores": send("scores", lambda: (broker_load(transfer_view(a), a.status, a.result.verdicts, rev=rev) if ts
                                          else broker_scores(v, a.result, cfg, a.status, rev=rev,
                                                             groups=broker_groups(policies_of(snap.ld), v.brokers)))),
        "pairs": send("pairs", lambda: avg_pairs(a.result, cfg, a.status, rev=rev)) if is_avg else no_update,
        "pairs_hidden": kept("pairs_hidden", not is_avg, str(not is_avg)),
        "placement": (send("placement", lambda: placement_scores(dec, cfg, rev=revs["placement"]))
                      if fresh("placement") and not as_text else no_update),
        "placement_note": placement_note(dec) if fresh("placement") and as_text else no_update,
        "placement_card": kept("placement_card", card_cls, card_cls),
        "plan": (plan_table(a.plan, limit=service.PLAN_ROWS, skip=a.cycle.reason if ts else "") if fresh("plan") else no_update),
        "before_after": (send("before_after", lambda: before_after(v, a.before_thr, a.after_thr, a.before_rate,
                                                                   a.after_rate, a.status, a.ratios,
                                                                   rev=revs["before_after"]))
                         if fresh("before_after") else no_update),
        "topics": topics,
        "decision": decision_card(a),
        "alerts": _messages(base_msgs, errors),
        "conf_text": to_broker_conf(cfg) or "# every key at its Pulsar 4.x default",
        "source_info": kept("source_info", source_line(a), service.token(key, a.shedding, a.placement, a.seed)),
        "qs": permalink.encode(state),
        "config": dict(state.to_json()),
        "analysis": a,
    }
    out["shown"] = revs
    out["sent"] = {FIGURES[k]: revs[k] for k in FIGURES if out[k] is not no_update}
    return out


_TUNER_OUTPUTS = {
    "scores": Output(ids.TUNER_FIG_SCORES, "figure"), "pairs": Output(ids.TUNER_FIG_PAIRS, "figure"),
    "pairs_hidden": Output(ids.TUNER_PAIRS_CARD, "hidden", allow_duplicate=True),
    "placement": Output(ids.TUNER_FIG_PLACEMENT, "figure"),
    "placement_note": Output(ids.TUNER_PLACEMENT_NOTE, "children"),
    "placement_card": Output(ids.TUNER_PLACEMENT_CARD, "className"), "plan": Output(ids.TUNER_PLAN, "children"),
    "before_after": Output(ids.TUNER_FIG_PLAN, "figure"), "topics": Output(ids.TUNER_FIG_TOPICS, "figure"),
    "shown": Output(ids.TUNER_SHOWN, "data"), "decision": Output(ids.TUNER_DECISION, "children"),
    "alerts": Output(ids.TUNER_ALERT, "children"), "conf_text": Output(ids.TUNER_CONF_TEXT, "children"),
    "source_info": Output(ids.TUNER_SOURCE_INFO, "children"), "qs": Output(ids.TUNER_QS, "data"),
    "config": Output(ids.CONFIG, "data"), "state": Output(ids.TUNER_STATE, "data"),
}


@callback(
    output=_TUNER_OUTPUTS,
    inputs={"controls": _key_controls(Input), "seed": Input(ids.TUNER_SEED, "value"),
            "step": Input(ids.TUNER_STEP, "value"), "source": Input(ids.page_source("tuner"), "data"),
            "base": Input(ids.TUNER_BASE, "data"), "shed": State(ids.TUNER_SHED, "value"),
            "place": State(ids.TUNER_PLACE, "value"), "shown": State(ids.TUNER_SHOWN, "data"),
            "conf_import": State(ids.page_import("tuner"), "data")},
    prevent_initial_call="initial_duplicate",
)
def update_tuner(controls, seed, step, source, base, shed, place, shown, conf_import):
    """A slider released (or the base, the seed, the source or the timeline step changed): recompute."""
    base, source, conf_import, shown = _tuner_base(base), page_source(source), as_dict(conf_import), as_dict(shown)
    shed, place = as_str(shed, limit=100), as_str(place, limit=100)
    if base is None or not isinstance(source, dict) or not source.get("id"):
        raise PreventUpdate  # sync_controls has not run yet, or no source yet
    imp = conf_import.get("nonce") if isinstance(conf_import, dict) else None
    if imp and imp != base.get("nonce"):
        raise PreventUpdate  # an import is pending: sync_controls applies it and writes a new base
    values = overlay(base.get("values") or {}, _shown_values(controls))
    steps = int(source.get("steps", 1) or 1)
    state, errs = coerce_state({"src": source["id"], "shed": shed, "place": place, "values": values,
                                "seed": seed if seed not in (None, "") else 0,
                                "step": step if steps > 1 else None})
    try:
        out = compute(state, shown, base.get("messages"))
    except ShedlabError as exc:
        return only(_TUNER_OUTPUTS, alerts=[alert("error", f"{exc} — the previous result stays on screen")])
    except Exception as exc:  # never crash the page: keep the last good figures
        log.exception("tuner compute failed")
        return only(_TUNER_OUTPUTS, alerts=[alert("error", f"internal error ({type(exc).__name__}: {exc}); "
                                                             "the previous result stays on screen")])
    named = {name: out[name] for name in _TUNER_OUTPUTS if name not in ("alerts", "config", "state")}
    return dict(named, alerts=out["alerts"] + [alert("warning", e) for e in errs],
                config=dict(out["config"], nonce=base.get("nonce")), state=out["config"])


@callback(
    Output(ids.TUNER_STEP, "max"),
    Output(ids.TUNER_STEP, "value"),
    Output(ids.TUNER_STEP, "marks"),
    Output(ids.TUNER_STEP_ROW, "hidden"),
    Input(ids.page_source("tuner"), "data"),
    State(ids.TUNER_LINK, "data"),
)
def step_row(source, link):
    """Timeline sources get a snapshot slider (the last snapshot first, or the permalink's step)."""
    source, link = page_source(source), _tuner_link(link)
    steps = int((source or {}).get("steps", 1) or 1)
    if steps <= 1:
        return 0, 0, None, True
    want = steps - 1
    st = (link or {}).get("state") or {}
    if isinstance(st.get("step"), int) and st.get("src") == (source or {}).get("id"):
        want = max(0, min(steps - 1, st["step"]))
    marks = {0: "1", steps - 1: str(steps)}
    return steps - 1, want, marks, False


# ------------------------------------------------------------------------------------------ cycles / why
@callback(
    Output(ids.TUNER_FIG_CYCLES, "figure"),
    Output(ids.TUNER_CYCLES_TABLE, "children"),
    Input(ids.TUNER_CYCLES_RUN, "n_clicks"),
    Input(ids.TUNER_CYCLES_STATE, "data"),
    State(ids.TUNER_STATE, "data"),
    State(ids.TUNER_CYCLES_N, "value"),
    prevent_initial_call=True,
    running=[(Output(ids.TUNER_CYCLES_RUN, "disabled"), True, False)],
)
def run_cycles_cb(n_clicks, relayed, config, n):
    """"Run N cycles" (and keep the run in step with the sliders once it has been asked for)."""
    config = relayed if isinstance(relayed, dict) and ctx.triggered_id == ids.TUNER_CYCLES_STATE else config
    config, n = _tuner_config(config), as_number(n, 10, lo=1, hi=10**6)
    if not n_clicks or config is None:
        raise PreventUpdate
    try:
        run = service.cycles(TunerState.from_json(config), n)
    except Exception as exc:  # noqa: BLE001 - say so in the panel, keep the page
        if not isinstance(exc, ShedlabError):  # bad input (an unknown or expired source) is said, not logged
            log.exception("cycles failed")
        return empty_figure(f"cannot run the cycles: {exc}", height=200), ""
    cfg = run.config
    return (cycles_figure(run.cycles, cfg, rev=run.rev, hits=run.hits),
            cycles_table(run.cycles, hits=run.hits, threshold=cfg.loadBalancerSheddingConditionHitCountThreshold))


@callback(
    Output(ids.TUNER_WHY_OUT, "children"),
    Input(ids.TUNER_WHY_TARGET, "value"),
    Input(ids.TUNER_WHY_STATE, "data"),
    State(ids.TUNER_STATE, "data"),
    prevent_initial_call=True,
)
def why_not(target, relayed, config):
    """Explain a broker or a bundle (re-explained when the settings change)."""
    config = relayed if isinstance(relayed, dict) and ctx.triggered_id == ids.TUNER_WHY_STATE else config
    config, target = _tuner_config(config), as_str(target, limit=1000)
    if not target or config is None:
        return []
    try:
        w = service.why_not(TunerState.from_json(config), target, budget_s=2.5)
        if w is None:
            return [alert("warning", f"{target} is not in the current snapshot")]
        return why_panel(w)
    except ShedlabError as exc:
        return [alert("error", str(exc))]
    except Exception as exc:  # noqa: BLE001
        log.exception("why-not failed")
        return [alert("error", f"could not explain {target}: {type(exc).__name__}: {exc}")]


@callback(
    Output(ids.TUNER_WHY_TARGET, "options"),
    Input(ids.page_source("tuner"), "data"),
    Input(ids.TUNER_WHY_TARGET, "search_value"),
    State(ids.TUNER_WHY_TARGET, "value"),
    State(ids.TUNER_STEP, "value"),
)
def why_options(source, search, value, step):
    """Brokers, then bundles (busiest first, or those matching what is typed)."""
    source, search, value = page_source(source), as_str(search, limit=1000), as_str(value, limit=1000)
    step = step if isinstance(step, int) and not isinstance(step, bool) else None
    if not isinstance(source, dict) or not source.get("id"):
        raise PreventUpdate
    try:
        snap = sources.get_snapshot(source["id"], step if int(source.get("steps", 1) or 1) > 1 else None)
    except Exception:  # noqa: BLE001 - an expired upload: the main callback shows the alert
        return []
    v = snap.view
    q = (search or "").strip().lower()
    brokers = [b for b in v.brokers if q in b.lower()][:200]
    opts = [{"label": f"broker · {b}", "value": b} for b in brokers]
    order = np.argsort(-v.short_throughput, kind="stable")
    picked = []
    for k in order.tolist():
        name = v.bundles[k]
        if q and q not in name.lower():
            continue
        picked.append(name)
        if len(picked) >= 60:
            break
    opts += [{"label": f"bundle · {b}  ({v.short_throughput[v.bundle_index[b]] / MB:,.1f} MB/s)", "value": b}
             for b in picked]
    if value and value not in {o["value"] for o in opts}:
        opts.insert(0, {"label": value, "value": value})
    return opts


# ------------------------------------------------------------------------------------------ sharing
def _analysis_for(config):
    got = service.tune(TunerState.from_json(config))
    return got.state, got.analysis, list(got.errors)


@callback(
    Output(ids.TUNER_DOWNLOAD, "data"),
    Output(ids.TUNER_ALERT, "children", allow_duplicate=True),
    Input(ids.TUNER_EXPORT_FIGS, "n_clicks"),
    State(ids.TUNER_EXPORT_FORMAT, "value"),
    State(ids.TUNER_STATE, "data"),
    prevent_initial_call=True,
    running=[(Output(ids.TUNER_EXPORT_FIGS, "disabled"), True, False)],
)
def export_figures(n, fmt, config):
    """"Download figures": every figure rendered server-side by Kaleido, zipped."""
    if not n or _tuner_config(config) is None:
        raise PreventUpdate

    def build():
        _, a, _ = _analysis_for(config)
        return downloads.figures(tuner_figures(a), fmt, f"shedlab-figures-{a.shedding}-{a.rev}")
    return downloads.respond(build, "figure export", alert, logger=log)


@callback(
    Output(ids.TUNER_REPORT_DOWNLOAD, "data"),
    Output(ids.TUNER_ALERT, "children", allow_duplicate=True),
    Input(ids.TUNER_REPORT, "n_clicks"),
    State(ids.TUNER_STATE, "data"),
    State(ids.TUNER_PERMALINK, "value"),
    State(ids.TUNER_WHY_TARGET, "value"),
    State(ids.TUNER_CYCLES_RUN, "n_clicks"),
    State(ids.TUNER_CYCLES_N, "value"),
    prevent_initial_call=True,
    running=[(Output(ids.TUNER_REPORT, "disabled"), True, False)],
)
def export_report(n, config, link, target, cycles_clicks, cycles_n):
    """"Export report": one self-contained HTML file (figures, config diff, decisions, reasons)."""
    link, target = as_str(link, limit=20_000), as_str(target, limit=1000)
    if not n or _tuner_config(config) is None:
        raise PreventUpdate
    n_cycles = as_number(cycles_n, 10, lo=1, hi=10**6)

    def build():
        state, a, errors = _analysis_for(config)
        cycles = (run_cycles(a.snap, a.config, state.seed, max(1, min(service.MAX_CYCLES, int(n_cycles))))
                  if cycles_clicks else None)
        w = explain(a, target, budget_s=2.0) if target and target_kind(a.view, target) else None
        html_text = build_report(a, state, permalink=link or None, cycles=cycles, whynot=w, warnings=errors)
        return downloads.text(html_text, report_filename(a), "text/html")
    return downloads.respond(build, "report", alert, logger=log)


@callback(
    Output(ids.TUNER_CONF_DOWNLOAD, "data"),
    Input(ids.TUNER_CONF_EXPORT, "n_clicks"),
    State(ids.TUNER_STATE, "data"),
    prevent_initial_call=True,
)
def export_conf(n, config):
    """"Export changed keys": the broker.conf lines to paste into a real cluster."""
    if not n or _tuner_config(config) is None:
        raise PreventUpdate
    cfg, _ = build_config(TunerState.from_json(config))
    text = "# load-balancer keys changed from Pulsar 4.x defaults (Shedlab)\n" + to_broker_conf(cfg, comments=True)
    return downloads.text(text, "broker.conf", "text/plain")


def commands_download(a, style: str = "pulsar-admin") -> dict:
    """The plan of analysis ``a`` as a dry-run commands file (:func:`engine.commands.commands_text`)."""
    style = style if style in STYLES else "pulsar-admin"
    snap = a.snap
    context = [f"{a.shedding} + {a.placement} on {snap.label} (step {snap.step + 1} of {snap.steps})",
               "The Tuner's plan: the next shedding cycle on this snapshot with the page's settings."]
    text = commands_text([a.cycle], style, context=context)
    ext = "sh" if style == "pulsar-admin" else "txt"
    return downloads.text(text, f"shedlab-unloads-{a.shedding}-{a.rev}.{ext}", "text/plain")


@callback(
    Output(ids.TUNER_COMMANDS_DOWNLOAD, "data"),
    Output(ids.TUNER_ALERT, "children", allow_duplicate=True),
    Input(ids.TUNER_COMMANDS_EXPORT, "n_clicks"),
    State(ids.TUNER_COMMANDS_STYLE, "value"),
    State(ids.TUNER_STATE, "data"),
    prevent_initial_call=True,
)
def export_commands(n, style, config):
    """"Download commands": the unload plan as the pulsar-admin lines (or REST calls) that would carry it out."""
    if not n or _tuner_config(config) is None:
        raise PreventUpdate
    return downloads.respond(lambda: commands_download(_analysis_for(config)[1], style), "commands", alert, logger=log)


# ------------------------------------------------------------------------------------------ clientside
# the value label beside a slider follows the handle while dragging
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="keyLabel"),
    Output({"type": ids.TUNER_KEY_VALUE, "key": MATCH}, "children"),
    Output({"type": ids.TUNER_KEY_VALUE, "key": MATCH}, "className"),
    Input({"type": ids.TUNER_KEY, "key": MATCH}, "drag_value"),
    State({"type": ids.TUNER_KEY, "key": MATCH}, "id"),
    State(ids.TUNER_FMT, "data"),
    prevent_initial_call=True,
)

# threshold lines move while dragging (layout.meta of each figure says which and how). The figures carry
# their meta as JSON text (dashboard.figures.theme.drag_meta: an object meta makes Plotly redraw the whole
# figure on every update); this adapter hands shedlab.dragLines the object it reads.
DRAG_LINES_JS = """function (values, idlist, fig) {
    var meta = fig && fig.layout ? fig.layout.meta : null;
    if (typeof meta === 'string') {
        try { meta = JSON.parse(meta); } catch (e) { meta = null; }
    }
    return window.dash_clientside.shedlab.dragLines(values, idlist, {layout: {meta: meta}});
}"""
for _fig in (ids.TUNER_FIG_SCORES, ids.TUNER_FIG_PAIRS, ids.TUNER_FIG_PLACEMENT):
    clientside_callback(
        DRAG_LINES_JS,
        Output(_fig, "figure", allow_duplicate=True),
        Input({"type": ids.TUNER_KEY, "key": ALL}, "drag_value"),
        State({"type": ids.TUNER_KEY, "key": ALL}, "id"),
        State(_fig, "figure"),
        prevent_initial_call=True,
    )

# cycles and "why not?" follow the settings only once asked for: no server round trip otherwise
clientside_callback(
    """function (state, runs, target) {
        var nu = window.dash_clientside.no_update;
        return [runs ? state : nu, target ? state : nu];
    }""",
    Output(ids.TUNER_CYCLES_STATE, "data"),
    Output(ids.TUNER_WHY_STATE, "data"),
    Input(ids.TUNER_STATE, "data"),
    State(ids.TUNER_CYCLES_RUN, "n_clicks"),
    State(ids.TUNER_WHY_TARGET, "value"),
    prevent_initial_call=True,
)

# the permalink: the address bar (without reloading) and the copy box
clientside_callback(
    ClientsideFunction(namespace="shedlab", function_name="writeUrl"),
    Output(ids.TUNER_PERMALINK, "value"),
    Input(ids.TUNER_QS, "data"),
    prevent_initial_call=True,
)
