"""Tuner callback bodies as plain functions."""
import functools
import json

import pytest
import plotly.graph_objects as go
from dash import Patch, no_update
from dash.exceptions import PreventUpdate

import callbacks.tuner as ct
from dashboard import ids, sources
from dashboard.tuner.state import TunerState
from tests.dashboard.conftest import data_url

SRC = {"id": sources.DEFAULT_SOURCE, "kind": "sample", "steps": 1}
DEFAULT_VALUES = {"loadBalancerDistributeBundlesEvenlyEnabled": "false"}


def _kid(k):
    return {"type": ids.TUNER_KEY, "key": k}


def test_tuner001_control_values_and_overlay():
    vals = ct.control_values(([_kid("loadBalancerBrokerThresholdShedderPercentage")], [12.0]),
                             ([{"type": ids.TUNER_FLAG, "key": "lowerBoundarySheddingEnabled"}], [False]), ([], []))
    assert vals == {"loadBalancerBrokerThresholdShedderPercentage": "12", "lowerBoundarySheddingEnabled": "false"}
    merged = ct.overlay({"maxUnloadPercentage": "0.5", "loadBalancerBrokerThresholdShedderPercentage": "15"}, vals)
    assert merged == {"maxUnloadPercentage": "0.5", "loadBalancerBrokerThresholdShedderPercentage": "12"}
    assert ct.overlay({"loadBalancerBrokerThresholdShedderPercentage": "15"},
                      {"loadBalancerBrokerThresholdShedderPercentage": "10"}) == {}  # back at the default


def _resolve(trigger, **kw):
    base = kw.pop("base", {"values": DEFAULT_VALUES, "nonce": None})
    args = dict(shed="ThresholdShedder", place="LeastResourceUsageWithWeight", link=None, conf_import=None, base=base,
                config=None, source=SRC, current={}, seed=0)
    args.update(kw)
    return ct.resolve_controls(trigger, **args)


def test_tuner002_page_load_link_config_default():
    st, base, msgs = _resolve(None, base=None)
    assert st.shed == "ThresholdShedder" and st.place == "LeastResourceUsageWithWeight"
    assert st.value_dict == DEFAULT_VALUES  # the default sample's own settings
    saved = {"shed": "AvgShedder", "place": "AvgShedder", "values": {"maxUnloadPercentage": "0.5"}, "nonce": "n1"}
    st, base, _ = _resolve(None, base=None, config=saved)
    assert (st.shed, st.value_dict, base["nonce"]) == ("AvgShedder", {"maxUnloadPercentage": "0.5"}, "n1")
    link = {"state": {"shed": "OverloadShedder", "place": "LeastLongTermMessageRate", "values": {}, "seed": 4},
            "errors": ["link: unknown key 'x' ignored"]}
    st, base, msgs = _resolve(None, base=None, config=saved, link=link,
                              conf_import={"values": {}, "mode": "merge", "nonce": "n2"})
    assert st.shed == "OverloadShedder" and st.seed == 4 and msgs == link["errors"]
    assert base["nonce"] == "n2"  # the link wins over a pending import


def test_tuner003_presets_reset_and_pairing():
    st, _, msgs = _resolve(ids.TUNER_PRESET5)
    assert (st.shed, st.place) == ("AvgShedder", "AvgShedder") and st.value_dict["maxUnloadPercentage"] == "0.5"
    st, _, _ = _resolve(ids.TUNER_PRESET_BIGO)
    assert st.value_dict["minUnloadMessage"] == "10000"
    st, _, msgs = _resolve(ids.TUNER_RESET, current={"loadBalancerBrokerThresholdShedderPercentage": "30"})
    assert st.values == () and st.shed == "ThresholdShedder" and "strategies kept" in msgs[0]
    st, _, msgs = _resolve(ids.TUNER_SHED, shed="AvgShedder")
    assert st.place == "AvgShedder" and "Pulsar 5.0" in msgs[-1]
    st, _, msgs = _resolve(ids.TUNER_PLACE, place="AvgShedder")
    assert st.shed == "AvgShedder"
    st, _, _ = _resolve(ids.TUNER_SHED, shed="TransferShedder")
    assert st.place == "ExtensibleLeastResourceUsageWithWeight"


def test_tuner004_broker_conf_import():
    conf = data_url(b"loadBalancerBrokerThresholdShedderPercentage=20\nloadBalancerLoadSheddingStrategy="
                    b"org.apache.pulsar.broker.loadbalance.impl.OverloadShedder\nfoo=bar\n")
    st, _, msgs = _resolve(ids.TUNER_CONF_UPLOAD, conf_contents=conf, conf_name="prod/broker.conf")
    assert st.shed == "OverloadShedder"
    assert st.value_dict["loadBalancerBrokerThresholdShedderPercentage"] == "20"
    assert st.value_dict["loadBalancerDistributeBundlesEvenlyEnabled"] == "false"  # merged, not replaced
    assert any("broker.conf" in m for m in msgs) and any("1 other keys" in m for m in msgs)
    st2, _, msgs = _resolve(ids.TUNER_CONF_UPLOAD, conf_contents=data_url(b"maxUnloadPercentage=2\n"), conf_name="x.conf")
    assert st2.value_dict == DEFAULT_VALUES and msgs[0].startswith("error: x.conf")  # nothing changed


def test_tuner005_sample_import_replaces():
    imp = {"values": {"loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
                      "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
                      "maxUnloadPercentage": "0.5"}, "mode": "replace", "label": "sample X", "nonce": "n9"}
    st, base, msgs = _resolve(ids.CONF_IMPORT, conf_import=imp)
    assert (st.shed, st.place) == ("AvgShedder", "AvgShedder") and st.value_dict == {"maxUnloadPercentage": "0.5"}
    assert base["nonce"] == "n9" and msgs[0] == "applied sample X"
    st, base, msgs = _resolve(ids.CONF_IMPORT, conf_import=imp, base={"values": {}, "nonce": "n9"})
    assert st.shed == "ThresholdShedder" and not msgs  # already applied


def _update(k_vals=(), base=None, source=SRC, shown=None, conf_import=None, seed=0):
    keys = ["loadBalancerBrokerThresholdShedderPercentage"]
    controls = {"keys": {"ids": [_kid(k) for k in keys][:len(k_vals)], "values": list(k_vals)},
                "flags": {"ids": [], "values": []}, "texts": {"ids": [], "values": []}}
    return ct.update_tuner(controls=controls, seed=seed, step=0, source=source, base=base, shed="ThresholdShedder",
                           place="LeastResourceUsageWithWeight", shown=shown, conf_import=conf_import)


def test_tuner006_update_recomputes_and_saves_state():
    base = {"values": DEFAULT_VALUES, "nonce": None, "messages": []}
    out = _update([10.0], base)
    scores, pairs_fig, pairs_hidden, place, place_note, place_card, ba, topics, shown, decision, conf, qs, cfg, st = (
        out[k] for k in ("scores", "pairs", "pairs_hidden", "placement", "placement_note", "placement_card",
                         "before_after", "topics", "shown", "decision", "conf_text", "qs", "config", "state"))
    # LeastResourceUsageWithWeight scores its candidates: a figure, not words; figures go as plain dicts
    # without a template object (dashboard.figures.theme.inline_template)
    assert all(isinstance(f, dict) and "template" not in f["layout"] for f in (scores, place, ba, topics))
    scores, place, ba = (go.Figure(f) for f in (scores, place, ba))
    assert place.layout.editrevision == shown["placement"] and place_card == "card placement-as-figure"
    assert place_note is no_update
    assert scores.layout.editrevision == shown["scores"] and ba.layout.editrevision == shown["before_after"]
    assert pairs_fig is no_update and pairs_hidden is True
    assert shown["snapshot"] == f"{sources.DEFAULT_SOURCE}|0" and not isinstance(topics, Patch)
    assert "loadBalancerDistributeBundlesEvenlyEnabled=false" in conf
    assert qs.startswith("src=sample:bigo-threshold-first-unload&shed=ThresholdShedder")
    assert cfg["values"] == DEFAULT_VALUES and st["src"] == sources.DEFAULT_SOURCE
    assert "Unload 1 bundle" in json.dumps(decision, default=str)
    # 11 %: the same unload, so only what shows the config is re-sent (scores, decision), not the plan figures
    out = _update([11.0], base, shown=shown)
    assert out["scores"] is not no_update and out["decision"] is not no_update
    assert all(out[k] is no_update for k in ("placement", "placement_note", "before_after", "topics"))
    assert out["plan"] is not no_update  # plan reasons name 11 %
    # 12 %: nothing moves any more; the topic figure's ringed overlay is patched, not rebuilt
    out = _update([12.0], base, shown=shown)
    assert isinstance(out["topics"], Patch) and out["before_after"] is not no_update
    ops = out["topics"].to_plotly_json()["operations"]
    assert [o["location"] for o in ops] == [["layout", "shapes"], ["layout", "editrevision"]]
    # no ring (nothing is unloaded): one shape drawing nothing, so the number of shapes stays the same
    assert [sh["path"] for sh in ops[0]["params"]["value"]] == ["M0,0Z"]
    assert "Nothing moves" in json.dumps(out["decision"], default=str)
    assert "loadBalancerBrokerThresholdShedderPercentage=12" in out["qs"]
    # nothing is placed: the placement card says so in words
    assert out["placement"] is no_update and out["placement_card"] == "card placement-as-text"
    assert "No bundle is placed this cycle" in json.dumps(out["placement_note"], default=str)


def test_tuner007_update_waits_and_never_crashes():
    with pytest.raises(PreventUpdate):
        _update([10.0], None)  # controls not rendered yet
    with pytest.raises(PreventUpdate):
        _update([10.0], {"values": {}, "nonce": "a"}, conf_import={"nonce": "b"})  # an import is pending
    out = _update([10.0], {"values": {}, "nonce": None}, source={"id": "upload:" + "e" * 20, "steps": 1})
    assert all(x is no_update for k, x in out.items() if k != "alerts")
    assert "upload it again" in json.dumps(out["alerts"], default=str)  # an alert; the previous figures stay


def test_tuner008_sync_controls_on_page_load(trig):
    no_controls = {kind: {"ids": [], "values": []} for kind in ("keys", "flags", "texts")}
    out = trig(functools.partial(ct.sync_controls, shed="ThresholdShedder", place="LeastResourceUsageWithWeight",
                                 reset=None, preset5=None, bigo=None, conf_contents=None, conf_import=None, link=None,
                                 conf_name=None, base=None, config=None, source=SRC, seed=0, controls=no_controls),
               None)
    shed, place, place_opts, children, base, seed, pairs_hidden, upload = (
        out[k] for k in ("shed", "place", "place_options", "controls", "base", "seed", "pairs_hidden", "upload"))
    assert (shed, place, seed, pairs_hidden, upload) == ("ThresholdShedder", "LeastResourceUsageWithWeight", 0, True, None)
    assert base["values"] == DEFAULT_VALUES and base["n"] == 1
    assert "loadBalancerBrokerThresholdShedderPercentage" in json.dumps(children, default=str)
    assert not any(o["value"] == "AvgShedder" and not o.get("disabled") for o in place_opts)


def test_tuner009_cycles_why_and_exports(trig):
    state = TunerState(src="sample:avgshedder-pairing-6-brokers", shed="AvgShedder", place="AvgShedder").to_json()
    fig, table = trig(ct.run_cycles_cb, ids.TUNER_CYCLES_RUN, 1, None, state, 3, prop="n_clicks")
    assert "yaxis3" in fig.to_dict()["layout"] and "bigo/pairs" in json.dumps(table, default=str)
    with pytest.raises(PreventUpdate):
        trig(ct.run_cycles_cb, ids.TUNER_CYCLES_STATE, None, state, state, 3, prop="data")
    why = trig(ct.why_not, ids.TUNER_WHY_TARGET, "broker-4:8080", None, state)
    assert "high hits 1 of 2" in json.dumps(why, default=str)
    assert "not in the current snapshot" in json.dumps(trig(ct.why_not, ids.TUNER_WHY_TARGET, "ghost:1", None, state),
                                                       default=str)
    opts = ct.why_options({"id": "sample:avgshedder-pairing-6-brokers", "steps": 1}, "broker-1", None, 0)
    assert opts[0]["value"] == "broker-1:8080" and all("broker-1" in o["value"] for o in opts)
    rep, alert = ct.export_report(1, state, "http://x/tuner?src=y", "broker-4:8080", None, 10)
    assert rep["filename"].endswith(".html") and "Why not? — broker-4:8080" in rep["content"] and alert is no_update
    conf = ct.export_conf(1, state)
    assert conf["filename"] == "broker.conf" and "loadBalancerLoadSheddingStrategy=" in conf["content"]
    assert ct.step_row({"id": "x", "steps": 1}, None) == (0, 0, None, True)
    assert ct.step_row({"id": "x", "steps": 5}, {"state": {"src": "x", "step": 2}})[:2] == (4, 2)


def test_tuner_decision_card_folds_the_rest_into_text():
    from dash import html

    from dashboard.tuner.state import coerce_state

    st, _ = coerce_state({"src": "sample:cluster-100-brokers", "shed": "AvgShedder", "place": "AvgShedder",
                          "values": {"loadBalancerAvgShedderHitCountLowThreshold": "1",
                                     "loadBalancerAvgShedderHitCountHighThreshold": "1"}})
    out = ct.compute(st)
    a, card = out["analysis"], out["decision"]
    why = [c for c in card if isinstance(c, html.Ul)]
    assert len(why) == 1 and len(why[0].children) == 3  # the first reasons, with their chips
    fold = [c for c in card if isinstance(c, html.Details)]
    assert len(fold) == 1
    text = fold[0].children[1].children
    reasons = [p for p in a.result.pairs if p.reason and (p.triggered or p.gap >= a.config.loadBalancerAvgShedderLowThreshold)]
    placed = [u for u in a.cycle.processed if u.placement is not None]
    lines = text.split("\n")
    assert len(lines) == min(len(reasons) - 3, 60) + min(len(placed) - 2, 30) + (
        1 if len(reasons) - 3 > 60 or len(placed) - 2 > 30 else 0)
    assert f"{reasons[3].high} / {reasons[3].low}: {reasons[3].reason}" == lines[0]
    assert f"Show {len(reasons) - 3} more reasons and {len(placed) - 2} more placements" == fold[0].children[0].children


def test_tuner_plan_table_is_one_escaped_markdown_table():
    import re

    from dash import dcc

    from layouts.tuner import plan_table

    row = {"bundle": "t|x/n_s*1/0x0_0x1", "source": "b1:8080", "destination": "b2:8080", "msg_rate": 1234.4,
           "throughput": 3 * 1048576, "placement_strategy": "LeastLongTermMessageRate", "random": True,
           "placement": "least `rate` <b>x</b> [l](u)", "skipped": ""}
    table = plan_table([row, dict(row, skipped="already unloaded | grace", destination=None)] * 8, limit=12)
    md = table.children
    assert isinstance(md, dcc.Markdown) and "plan-md" in md.className
    lines = md.children.split("\n")
    head, body = lines[0], lines[2:14]
    cells = lambda line: re.split(r"(?<!\\)\|", line)[1:-1]  # noqa: E731 — split on unescaped pipes
    assert len(cells(head)) == 7 and len(body) == 12 and all(len(cells(r)) == 7 for r in body)
    first = [c.strip() for c in cells(body[0])]
    assert first[:5] == ["1", r"t\|x/n\_s\*1/0x0\_0x1", "b1:8080 → b2:8080", "1,234", "3.00"]
    assert r"least \`rate\` \<b\>x\</b\> \[l\]\(u\)" in first[5] and first[6] == "**unloaded**"
    assert [c.strip() for c in cells(body[1])][2] == "b1:8080 → —"
    assert [c.strip() for c in cells(body[1])][6] == r"*already unloaded \| grace*"
    assert lines[-1] == "… and 4 more: Export report lists every unload"
    assert plan_table([]).children == "No bundle is unloaded this cycle."


def test_tuner_avgshedder_placement_is_words_not_a_figure():
    from dashboard.tuner.state import coerce_state

    st, _ = coerce_state({"src": "sample:cluster-100-brokers", "shed": "AvgShedder", "place": "AvgShedder",
                          "values": {"loadBalancerAvgShedderHitCountLowThreshold": "1",
                                     "loadBalancerAvgShedderHitCountHighThreshold": "1"}})
    out = ct.compute(st)
    dec = out["analysis"].first_placement
    assert dec is not None and not dec.scores  # AvgShedder places by its plan: no candidate scores
    assert out["placement"] is no_update and out["placement_card"] == "card placement-as-text"
    text = json.dumps(out["placement_note"], default=str)
    assert dec.bundle in text and dec.broker in text and dec.reason in text
    assert ids.TUNER_FIG_PLACEMENT not in out["sent"]  # the bench waits only for the figures re-sent


def test_tuner_unchanged_outputs_are_not_resent():
    from dashboard.tuner.state import coerce_state

    def st(low, seed=0):
        return coerce_state({"src": "sample:cluster-100-brokers", "shed": "AvgShedder", "place": "AvgShedder",
                             "seed": seed, "values": {"loadBalancerAvgShedderLowThreshold": str(low)}})[0]

    first = ct.compute(st(15))
    assert first["source_info"] is not no_update and first["pairs_hidden"] is False
    again = ct.compute(st(20), shown=first["shown"])
    # the pills, the pairs card and the placement card's mode did not change: not re-sent
    assert again["source_info"] is no_update and again["pairs_hidden"] is no_update
    assert again["placement_card"] is no_update
    assert again["decision"] is not no_update and again["scores"] is not no_update
    # another seed is named in the source line: re-sent
    other = ct.compute(st(20, seed=3), shown=again["shown"])
    assert "seed 3" in json.dumps(other["source_info"], default=str)


@pytest.mark.parametrize("shed,place,key", [
    ("AvgShedder", "AvgShedder", "loadBalancerAvgShedderLowThreshold"),
    ("ThresholdShedder", "LeastResourceUsageWithWeight", "loadBalancerBrokerThresholdShedderPercentage"),
    ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight", "loadBalancerBrokerLoadTargetStd"),
])
def test_tuner_releases_are_kept_frozen_and_leave_no_cyclic_garbage(shed, place, key):
    """A release's analysis is kept out of later collection passes (frozen) and still freed by reference
    counting once the memo drops it; a release builds no reference cycles, which freezing would keep."""
    import gc
    import weakref

    from dashboard.tuner import analysis
    from dashboard.tuner.state import coerce_state

    def st(v):
        return coerce_state({"src": "sample:cluster-100-brokers", "shed": shed, "place": place,
                             "values": {key: v, "loadBalancerAvgShedderHitCountLowThreshold": "1",
                                        "loadBalancerAvgShedderHitCountHighThreshold": "1"}})[0]

    gc.unfreeze()
    gc.collect()  # from here on, every object is reachable
    out, kept = {}, []
    for v in ("5", "9", "0.1", "30"):
        out = ct.compute(st(v), out.get("shown"))
        a = ct.service.tune(st(v)).analysis  # the memoised one
        assert not any(o is a for o in gc.get_objects())  # frozen: no pass traverses it
        kept.append(weakref.ref(a))
        del a
    out = None
    analysis._memo.clear()
    assert [r() for r in kept] == [None] * len(kept)  # dropped by reference counting, frozen or not
    gc.unfreeze()
    assert gc.collect() == 0  # nothing the releases made was cyclic garbage
