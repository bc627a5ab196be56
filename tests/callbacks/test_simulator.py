"""Simulator page: its service (state, permalink, runs, sweep, report) and callback bodies as plain functions.

Runs are real engine runs on shipped scenarios, shortened with ``minutes`` to stay fast; expected
numbers always come from the engine's own tables, never from constants.
"""
import functools
import json
import re
from urllib.parse import parse_qsl

import pytest
from dash import no_update
from dash.exceptions import PreventUpdate

import callbacks.simulator as cs
from dashboard import ids, sources
from dashboard import simulator as S
from engine.config import LoadBalancerConfig
from engine.simulator import run_scenario
from tests.dashboard.conftest import data_url

TS_VS_AVG = {"scenario": "bigo-scale-out", "minutes": 20, "seed": 0,
             "a": {"shed": "TransferShedder"},
             "b": {"shed": "AvgShedder", "place": "AvgShedder", "preset": "bigo-avgshedder"}}
KNOWN_CODES = {"Overloaded", "Underloaded", "HitCount", "NoBundles", "CoolDown", "OutDatedData", "NoLoadData",
               "NoBrokers", "Balanced", "Unknown"}


def _state(data=TS_VS_AVG):
    st, errs = S.coerce_state(data)
    assert errs == []
    return st


@pytest.fixture(scope="module")
def pair():
    """TransferShedder (A) vs AvgShedder (B) on the scale-out scenario, 20 minutes, run once."""
    import uuid

    sid = uuid.uuid4().hex
    st = _state()
    seen = []
    meta = S.run_pair(st, sid, lambda d, t, txt: seen.append((d, t, txt)))
    return {"sid": sid, "state": st, "meta": meta, "progress": seen, "payload": S.load_result(meta["key"], sid)}


# ------------------------------------------------------------------------------------------ state & permalink
def test_sim001_state_round_trip_through_the_permalink():
    st = _state({"scenario": "bigo-homogeneous-start", "minutes": "30", "seed": 7,
                 "a": {"shed": "AvgShedder", "preset": "bigo-avgshedder",
                       "values": {"loadBalancerAvgShedderLowThreshold": "10", "maxUnloadPercentage": 0.3}},
                 "b": {"shed": "ThresholdShedder", "place": "LeastResourceUsageWithWeight",
                       "values": {"loadBalancerBrokerThresholdShedderPercentage": 15}}})
    assert st.minutes == 30 and st.seed == 7
    # canonical broker.conf text: a double key reads "10.0", numbers from JSON become text
    assert st.a.value_dict == {"loadBalancerAvgShedderLowThreshold": "10.0", "maxUnloadPercentage": "0.3"}
    assert st.b.value_dict == {"loadBalancerBrokerThresholdShedderPercentage": "15"}
    qs = S.encode(st)
    assert "a.loadBalancerAvgShedderLowThreshold=10.0" in qs and "b.shed=ThresholdShedder" in qs
    back, errs = S.decode(dict(parse_qsl(qs)))
    assert errs == [] and back == st
    assert S.encode(back) == qs
    # the JSON the browser keeps round-trips too, and the digest (the cache key) follows the state
    assert S.coerce_state(json.loads(json.dumps(st.to_json())))[0] == st
    other = S.coerce_state({**st.to_json(), "seed": 8})[0]
    assert other.digest() != st.digest()


def test_sim002_values_equal_to_the_base_are_dropped():
    sc = S.load("bigo-homogeneous-start")
    base = S.base_config(sc, "bigo-avgshedder")
    key = "loadBalancerAvgShedderLowThreshold"
    from dashboard.keys import fmt_conf_value

    st = _state({"scenario": "bigo-homogeneous-start",
                 "a": {"shed": "AvgShedder", "preset": "bigo-avgshedder", "values": {key: fmt_conf_value(getattr(base, key))}}})
    assert st.a.values == ()  # nothing changed from the side's base


def test_sim003_bad_keys_and_values_are_dropped_with_a_message():
    st, errs = S.coerce_state({"scenario": "bigo-jitter",
                               "a": {"shed": "NoSuchShedder", "values": {"loadBalancerFooBar": "3",
                                                                         "maxUnloadPercentage": "7",
                                                                         "loadBalancerSheddingGracePeriodMinutes": "9"}},
                               "b": {"shed": "ThresholdShedder", "place": "AvgShedder", "preset": "pulsar-99"}})
    text = "\n".join(errs)
    assert "unknown shedding strategy 'NoSuchShedder'" in text and st.a.shed == "AvgShedder"
    assert "loadBalancerFooBar" in text and "maxUnloadPercentage" in text
    assert st.a.value_dict == {"loadBalancerSheddingGracePeriodMinutes": "9"}  # the good key survives
    assert "AvgShedder placement needs AvgShedder shedding" in text and st.b.place != "AvgShedder"
    assert "unknown preset 'pulsar-99'" in text and st.b.preset == ""
    assert all(e.startswith(("run A", "run B")) for e in errs)  # each message names its side
    # TransferShedder with a modular placement: fixed the way Pulsar's config would refuse it
    st, errs = S.coerce_state({"a": {"shed": "TransferShedder", "place": "LeastLongTermMessageRate"}})
    assert st.a.place == "ExtensibleLeastResourceUsageWithWeight" and "does not run with" in errs[0]


def test_sim004_bad_links_never_raise():
    st, errs = S.decode({"scenario": "../../etc/passwd", "minutes": "lots", "a.shed": "AvgShedder",
                         "a.loadBalancerAvgShedderLowThreshold": "abc", "utm_source": "mail"})
    text = "\n".join(errs)
    assert st.scenario == S.DEFAULT_SCENARIO and "unknown scenario" in text
    assert "minutes='lots' is not a whole number" in text and st.minutes is None
    assert "loadBalancerAvgShedderLowThreshold" in text and st.a.values == ()
    assert "unknown parameter 'utm_source'" in text
    assert all(e.startswith("link") for e in errs)
    assert S.decode({}) == (None, []) and S.decode({"src": "sample:x"}) == (None, [])
    st, errs = S.decode({"scenario": "bigo-jitter", "minutes": str(S.MAX_MINUTES * 10)})
    assert st.minutes == S.MAX_MINUTES and "at most" in errs[0]


def test_sim005_layout_keeps_a_permalink_for_the_callbacks():
    from layouts import simulator as L

    def find(node, cid):
        return next(c for c in node._traverse() if getattr(c, "id", None) == cid)

    page = L.layout(**{"scenario": "bigo-jitter", "a.shed": "UniformLoadShedder", "bogus": "1"})
    link = find(page, ids.SIM_LINK).data
    assert link["state"]["scenario"] == "bigo-jitter" and link["state"]["a"]["shed"] == "UniformLoadShedder"
    assert any("bogus" in e for e in link["errors"])
    assert find(L.layout(), ids.SIM_LINK).data is None  # no link: the tab's own form is restored


def test_sim006_form_state_reads_sliders_and_broker_conf_lines():
    kid = {"type": ids.SIM_KEY, "side": "a", "key": "loadBalancerAvgShedderLowThreshold"}
    st, msgs, notes = cs.form_state(
        "bigo-homogeneous-start", None, 3, {"a": "AvgShedder", "b": "ThresholdShedder"},
        {"a": "AvgShedder", "b": "LeastResourceUsageWithWeight"}, {"a": "bigo-avgshedder", "b": ""},
        [kid], [12], {"a": "loadBalancerAvgShedderLowThreshold=30\nmaxUnloadPercentage=0.4",
                      "b": "# a comment\nnot a line\nloadBalancerFooBar=1\nloadManagerClassName=x\nmaxUnloadPercentage=3"})
    assert st.seed == 3
    assert st.a.value_dict == {"loadBalancerAvgShedderLowThreshold": "12.0", "maxUnloadPercentage": "0.4"}
    assert any("slider" in n for n in notes["a"])  # the duplicate key: the slider wins, and it is said
    text = "\n".join(notes["b"])
    assert "line 2 'not a line'" in text and "loadBalancerFooBar" in text and "loadManagerClassName" in text
    assert "maxUnloadPercentage" in text and st.b.values == ()
    assert msgs == []


# ------------------------------------------------------------------------------------------ scenarios
def test_sim007_uploaded_scenario_is_offered_and_runs(sid):
    text = ("name: tiny-upload\ntitle: Tiny uploaded cluster\nminutes: 12\n"
            "brokers:\n  - {id: 'b1:8080', cores: 8}\n  - {id: 'b2:8080', cores: 8}\n"
            "namespaces:\n  - name: public/default\n    bundles: 8\n    owners:\n      'b1:8080': [0, 1, 2, 3, 4, 5, 6]\n"
            "workloads:\n  - {name: job, namespace: public/default, topics: 32, rate: 100000, msg_size: 1024}\n")
    got = sources.ingest_files(sid, [data_url(text.encode(), "application/x-yaml")], ["tiny.yaml"])
    assert got.errors == [] and len(got.scenarios) == 1
    scen_id = got.scenarios[0]["id"]
    opts = S.scenario_options(sid)
    assert scen_id in [o["value"] for o in opts] and any("Tiny uploaded cluster" in o["label"] for o in opts)
    assert S.scenario_options(None, scen_id)[-1]["value"] == scen_id  # a link to it, from another tab
    # the page switches to a new upload (and says so), once
    st0 = S.default_state()
    up = {"id": scen_id, "label": "tiny.yaml"}
    st, msgs, extra = cs.resolve_form(ids.sim_uploaded(), form={"state": st0.to_json()}, saved=None, seen=None,
                                      link=None, uploaded=up, current=st0)
    assert st.scenario == scen_id and extra["seen"] == scen_id and "tiny.yaml" in msgs[0]
    with pytest.raises(PreventUpdate):
        cs.resolve_form(ids.sim_uploaded(), form={"state": st.to_json()}, saved=None, seen=scen_id, link=None,
                        uploaded=up, current=st)
    meta = S.run_pair(st, sid)
    runs = S.load_result(meta["key"], sid)["runs"]
    assert runs["a"].summary["minutes"] == 12 and set(runs["a"].brokers["broker"]) == {"b1:8080", "b2:8080"}


def test_sim008_bad_scenario_upload_names_the_problem(sid):
    bad = b"name: broken\nminutes: 10\nbrokers:\n  - {id: 'b1:8080', cores: -4}\nnamespaces:\n  - {name: a/b, bundles: 4}\n"
    got = sources.ingest_files(sid, [data_url(bad)], ["broken.yaml"])
    assert got.scenarios == [] and len(got.errors) == 1
    assert "broken.yaml" in got.errors[0] and "cores" in got.errors[0]
    assert S.scenario_options(sid) == S.scenario_options(None)  # nothing new offered
    with pytest.raises(Exception) as exc:
        S.load("scenario:" + "0" * 20)
    assert "upload it again" in str(exc.value)
    with pytest.raises(Exception) as exc:
        S.load("/etc/passwd")
    assert "unknown scenario" in str(exc.value)


# ------------------------------------------------------------------------------------------ runs
def test_sim009_run_pair_runs_both_sides_with_progress(pair):
    st, meta, payload = pair["state"], pair["meta"], pair["payload"]
    assert meta["cached"] is False
    runs = payload["runs"]
    assert runs["a"].spec["shed"] == "TransferShedder" and runs["b"].spec["shed"] == "AvgShedder"
    assert runs["a"].extensible and not runs["b"].extensible
    assert runs["a"].config.loadManagerClassName.endswith("ExtensibleLoadManagerImpl")
    # each side is exactly the engine's run with the side's arguments
    for s in S.SIDES:
        direct = run_scenario(S.load(st.scenario), **S.run_kwargs(st, s))
        assert runs[s].summary["unloads"] == direct.summary["unloads"]
        assert runs[s].events["kind"].tolist() == direct.events["kind"].tolist()
    # progress: monotonic, both runs, ends at done == total
    prog = pair["progress"]
    dones = [d for d, _t, _x in prog]
    assert dones == sorted(dones) and prog[-1][0] == prog[-1][1] == 2 * st.minutes
    assert any("run A" in x for *_, x in prog) and any("run B" in x for *_, x in prog)
    # the same form again in the same session: the cache answers; another session cannot read it
    again = S.run_pair(st, pair["sid"])
    assert again == {"key": meta["key"], "cached": True, "elapsed_s": 0.0}
    assert S.cached_result(st, pair["sid"]) == meta["key"]
    import uuid

    with pytest.raises(Exception, match="another session"):
        S.load_result(meta["key"], uuid.uuid4().hex)


def test_sim010_summary_side_by_side(pair):
    runs = pair["payload"]["runs"]
    rows = {r["key"]: r for r in S.summary_rows(runs)}
    assert rows["strategy"]["values"] == {"a": "TransferShedder", "b": "AvgShedder"}
    for s in S.SIDES:  # TransferShedder's unload count beside AvgShedder's, from the event log
        n = int((runs[s].events["kind"] == "unload").sum())
        assert rows["unloads"]["values"][s] == f"{n:,}"
    ua, ub = (int((runs[s].events["kind"] == "unload").sum()) for s in S.SIDES)
    assert rows["unloads"]["best"] == (None if ua == ub else ("a" if ua < ub else "b"))
    # TransferShedder-only rows: a number for A, "—" (and never "best") for AvgShedder
    for key in ("load_std", "target_std", "target_met_minute"):
        assert rows[key]["values"]["b"] == "—" and rows[key]["best"] is None
    target = 100 * runs["a"].config.loadBalancerBrokerLoadTargetStd
    assert rows["target_std"]["values"]["a"] == f"{target:,.1f}"
    codes = S.check_codes(runs["a"].events)
    assert codes and set(codes) <= KNOWN_CODES
    assert sum(codes.values()) == int((runs["a"].events["kind"] == "check").sum())
    assert rows["checks"]["values"]["a"] == " · ".join(f"{c} {n}" for c, n in codes.items())
    # two AvgShedder runs: no TransferShedder rows at all
    plain = {k: v for k, v in runs.items()}
    plain["a"] = runs["b"]
    assert not {"load_std", "checks"} & {r["key"] for r in S.summary_rows(plain)}


def test_sim011_transfershedder_std_data(pair):
    payload = pair["payload"]
    a = payload["runs"]["a"]
    std = a.cluster["load_std"].dropna()
    assert len(std) >= pair["state"].minutes - 1 and (std >= 0).all()
    assert (a.cluster["target_std"].dropna() == 100 * a.config.loadBalancerBrokerLoadTargetStd).all()
    ck = S.checks_frame(a.events)
    assert len(ck) == int((a.events["kind"] == "check").sum()) and set(ck["code"]) <= KNOWN_CODES
    assert ck["hit"].dropna().ge(0).all()
    figs = cs.result_figures(payload)
    d = figs["std"].to_dict()
    load = next(t for t in d["data"] if t["name"] == "A load std")
    assert list(load["y"]) == pytest.approx(std.tolist())
    codes = next(t for t in d["data"] if t["name"] == "A decision")
    assert list(codes["y"]) == ck["code"].tolist()
    # without TransferShedder on either side there is no std figure
    two_avg = dict(payload, runs={"a": payload["runs"]["b"], "b": payload["runs"]["b"]})
    assert cs.result_figures(two_avg)["std"] is None


def _controls(scenario, minutes, sheds, places, presets) -> dict:
    """The form's controls as the run callbacks receive them (``callbacks.simulator._form_states``)."""
    ab = lambda pair: dict(zip(("a", "b"), pair))  # noqa: E731
    return {"scenario": scenario, "minutes": minutes, "seed": 0, "shed": ab(sheds), "place": ab(places),
            "preset": ab(presets), "key_ids": [], "key_values": [], "extra": {"a": "", "b": ""}}


def test_sim012_run_simulation_callback_body(trig, sid):
    st = _state({"scenario": "bigo-jitter", "minutes": 15, "a": {"shed": "AvgShedder"},
                 "b": {"shed": "UniformLoadShedder"}})
    form = _controls("bigo-jitter", 15, ("AvgShedder", "UniformLoadShedder"), (st.a.place, st.b.place), ("", ""))
    seen = []

    def run(n_clicks, autorun, controls, previous, trigger=ids.SIM_RUN, prop="n_clicks"):
        return trig(functools.partial(cs.run_simulation, n_clicks=n_clicks, autorun=autorun, controls=controls,
                                      sid=sid, previous=previous), trigger, seen.append, prop=prop)
    out = run(1, None, form, None)
    assert out["key"] == S.result_key(sid, st) and out["cached"] is False and "error" not in out
    assert seen[0][2].startswith("Simulator · starting") and seen[-1][0] == seen[-1][1] == str(2 * 15)
    assert all(len(v) == 6 for v in seen)  # the shell's strip and the page's bar
    # a permalink without cached results runs the link's state
    auto = {"nonce": "x", "state": st.to_json()}
    again = run(None, auto, form, out, trigger=ids.SIM_AUTORUN, prop="data")
    assert again["key"] == out["key"] and again["cached"] is True
    # a scenario that cannot be loaded (an expired upload): an alert naming it, the previous results stay
    bad = dict(form, scenario="scenario:" + "f" * 20)
    got = run(2, None, bad, out)
    assert got["key"] == out["key"] and "upload it again" in got["error"] and "previous results stay" in got["error"]
    with pytest.raises(PreventUpdate):
        run(None, None, form, None)


def test_sim013_show_results_and_errors(pair):
    sid, meta = pair["sid"], pair["meta"]
    out = cs.show_results({"key": meta["key"], "cached": False, "warnings": ["run B: something ignored"]}, sid)
    text = str(out["summary"])
    assert "TransferShedder" in text and "AvgShedder" in text
    assert out["a"].layout.meta["run"].startswith("A ·") and out["b"].layout.meta["run"].startswith("B ·")
    assert out["std_hidden"] is False and out["std"].layout.meta["sync"] is True
    assert {o["value"] for o in out["kinds"]} >= {"unload", "check"}
    assert "something ignored" in str(out["alerts"])
    # an error keeps everything on screen and says why
    out = cs.show_results({"key": meta["key"], "error": "bad thing"}, sid)
    assert all(v is no_update for k, v in out.items() if k != "alerts") and "bad thing" in str(out["alerts"])
    out = cs.show_results({"key": "simres:" + "0" * 32 + ":" + "0" * 24}, sid)  # not this session's
    assert all(v is no_update for k, v in out.items() if k != "alerts") and "run again" in str(out["alerts"])
    rows = str(cs.show_events({"key": meta["key"]}, ["unload"], "b", sid))
    b = pair["payload"]["runs"]["b"]
    first = b.events[b.events["kind"] == "unload"].iloc[0]
    assert first["bundle"] in rows
    assert "sim-tag-a" not in rows  # only B's rows


# ------------------------------------------------------------------------------------------ page load
def test_sim014_page_load_link_saved_form_defaults():
    st = _state()
    link = {"state": st.to_json(), "errors": ["link: unknown parameter 'x' ignored"]}
    got, msgs, extra = cs.resolve_form(None, form=None, saved=None, seen=None, link=link, uploaded=None, current=None)
    assert got == st and msgs == link["errors"] and extra["autorun"] and extra["load"]
    saved = S.coerce_state({**st.to_json(), "seed": 5})[0]
    got, msgs, extra = cs.resolve_form(None, form=None, saved=saved.to_json(), seen=None, link=None, uploaded=None,
                                       current=None)
    assert got == saved and not extra["autorun"]  # coming back to the page: the tab's own form
    got, _, _ = cs.resolve_form(None, form=None, saved=None, seen=None, link=None, uploaded=None, current=None)
    assert got == S.default_state()


def test_sim015_preset_and_strategy_switches():
    st = _state({"scenario": "bigo-homogeneous-start", "a": {"shed": "ThresholdShedder", "preset": "pulsar-5"},
                 "b": {"shed": "ThresholdShedder"}})
    got, msgs, _ = cs.resolve_form({"type": ids.SIM_PRESET, "side": "a"}, form={"state": st.to_json()}, saved=None,
                                   seen=None, link=None, uploaded=None, current=st)
    cfg5 = S.base_config(S.load(st.scenario), "pulsar-5")
    assert (got.a.shed, got.a.place) == (cfg5.shedding_strategy, cfg5.placement_strategy) and got.a.values == ()
    assert "Pulsar 5.0 defaults" in msgs[0]
    st2 = st.with_side("b", S.RunSpec("AvgShedder", "LeastLongTermMessageRate", ""))
    got, msgs, _ = cs.resolve_form({"type": ids.SIM_SHED, "side": "b"}, form={"state": st2.to_json()}, saved=None,
                                   seen=None, link=None, uploaded=None, current=st2)
    assert got.b.place == "AvgShedder" and "Pulsar 5.0" in msgs[0]


# ------------------------------------------------------------------------------------------ sweep
def test_sim016_sweep_plan_limits():
    st = _state({"scenario": "bigo-homogeneous-start", "minutes": 20, "a": {"shed": "AvgShedder"}})
    plan = S.plan_sweep(st, "loadBalancerAvgShedderLowThreshold", "5, 10 10;15.0",
                        "loadBalancerAvgShedderHitCountLowThreshold", "2 4")
    assert plan["x"] == ["5.0", "10.0", "15.0"] and plan["y"] == ["2", "4"] and plan["minutes"] == 20
    for args, msg in [(("loadBalancerAvgShedderLowThreshold", "1", "loadBalancerAvgShedderLowThreshold", "2"),
                       "two different keys"),
                      (("loadBalancerAvgShedderLowThreshold", "1,2,3,4,5,6,7", "maxUnloadPercentage", "0.5"),
                       f"at most {S.MAX_AXIS}"),
                      (("maxUnloadPercentage", "0.5, 9", "loadBalancerAvgShedderLowThreshold", "1"),
                       "maxUnloadPercentage"),
                      (("loadBalancerNoSuchKey", "1", "maxUnloadPercentage", "0.5"), "unknown load-balancer key"),
                      (("maxUnloadPercentage", "", "loadBalancerAvgShedderLowThreshold", "1"), "no values")]:
        with pytest.raises(Exception, match=re.escape(msg)):
            S.plan_sweep(st, *args)
    big = _state({"scenario": "diurnal-100-brokers", "a": {"shed": "AvgShedder"}})
    with pytest.raises(Exception, match="too big"):
        S.plan_sweep(big, "loadBalancerAvgShedderLowThreshold", "1,2,3,4,5,6", "maxUnloadPercentage",
                     "0.1,0.2,0.3,0.4,0.5,0.6")
    assert S.sweep_defaults("TransferShedder")[0] == "loadBalancerBrokerLoadTargetStd"
    keys = [o["value"] for o in S.sweep_keys("TransferShedder")]
    assert "loadBalancerBrokerLoadTargetStd" in keys


def test_sim017_sweep_runs_and_a_click_loads_the_cell(trig, sid):
    st = _state({"scenario": "bigo-homogeneous-start", "minutes": 25, "a": {"shed": "AvgShedder",
                                                                           "preset": "bigo-avgshedder"}})
    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHitCountLowThreshold"
    form = _controls("bigo-homogeneous-start", 25, ("AvgShedder", st.b.shed), ("AvgShedder", st.b.place),
                     ("bigo-avgshedder", st.b.preset))
    seen = []

    def sweep(n_clicks, x_values, y_values, previous):
        return cs.run_sweep_job(seen.append, n_clicks=n_clicks, x_key=xk, x_values=x_values, y_key=yk,
                                y_values=y_values, controls=form, sid=sid, previous=previous)
    meta = sweep(1, "10, 20", "2, 8", None)
    assert "error" not in meta and meta["cached"] is False
    sw = S.load_sweep(meta["key"], sid)
    assert len(sw["cells"]) == 4 and {(c["x"], c["y"]) for c in sw["cells"]} == {
        (x, y) for x in ("10.0", "20.0") for y in ("2", "8")}
    assert seen[-1][0] == seen[-1][1] == "4"  # the progress bar's value and max
    # a cell is the engine's run of A's settings with the cell's two values
    cell = next(c for c in sw["cells"] if c["x"] == "20.0" and c["y"] == "2")
    kw = S.run_kwargs(st, "a")
    direct = run_scenario(S.load(st.scenario), **{**kw, "set": {**(kw.get("set") or {}), xk: "20.0", yk: "2"}})
    assert cell["unloads"] == direct.summary["unloads"] and cell["settled_minute"] == direct.summary["settled_minute"]
    # the heatmaps, A's own cell outlined (15 / 8 is not on this grid: no outline)
    fig, note = cs.show_sweep(meta, st.to_json(), sid)
    d = fig.to_dict()
    assert [t["name"] for t in d["data"]] == ["unloads", "settled"] and not d["layout"].get("shapes")
    assert "4 runs of AvgShedder" in note
    # click the (20, 2) cell: run A gets those values, the outline follows
    click = {"points": [{"x": "20.0", "y": "2", "curveNumber": 0, "pointNumber": [0, 1]}]}
    assert S.sweep_cell(sw["plan"], click) == (xk, "20.0", yk, "2")
    got, msgs, _ = cs.resolve_form(ids.SIM_SWEEP_FIG, form={"state": st.to_json()}, saved=None, seen=None, link=None,
                                   uploaded=None, current=st, click=click, plan=sw["plan"])
    assert got.a.value_dict == {xk: "20.0", yk: "2"} and got.b == st.b and "from the sweep" in msgs[0]
    fig2, _ = cs.show_sweep(meta, got.to_json(), sid)
    assert len(fig2.to_dict()["layout"]["shapes"]) == 2
    # a click off the grid (or without a sweep) changes nothing
    for plan, c in [(sw["plan"], {"points": [{"x": "99.0", "y": "2"}]}), (None, click), (sw["plan"], None)]:
        with pytest.raises(PreventUpdate):
            cs.resolve_form(ids.SIM_SWEEP_FIG, form={"state": st.to_json()}, saved=None, seen=None, link=None,
                            uploaded=None, current=st, click=c, plan=plan)
    # the same grid again: from the cache; a bad grid: a message, the previous sweep kept
    again = sweep(2, "10, 20", "2, 8", meta)
    assert again == {"key": meta["key"], "cached": True}
    bad = sweep(3, "10, x", "2", meta)
    assert bad["key"] == meta["key"] and bad["error"].startswith("sweep:") and xk in bad["error"]


def test_sim018_sweep_options_follow_run_a():
    st = _state({"a": {"shed": "TransferShedder"}})
    opts, x, xv, _o, y, yv = cs.sweep_options({"state": st.to_json()}, "loadBalancerAvgShedderLowThreshold", None)
    keys = {o["value"] for o in opts}
    assert x in keys and y in keys and x != y and xv and yv
    out = cs.sweep_options({"state": st.to_json()}, x, y)
    assert out[1] is no_update  # keys that still apply are kept


# ------------------------------------------------------------------------------------------ sharing
def test_sim019_report_is_self_contained(pair):
    payload = pair["payload"]
    link = "http://127.0.0.1:8050/simulator?" + S.encode(pair["state"])
    html = S.build_report(payload, permalink=link)
    assert html.startswith("<!DOCTYPE html>") and "<script src=" not in html
    for name in S.figures(payload):
        assert f'id="fig-{name}"' in html
    assert 'id="fig-transfershedder-std"' in html
    a, b = payload["runs"]["a"], payload["runs"]["b"]
    for d in S.config_diff(a.config, b.config):  # the config diff, every key
        assert f"<code>{d['key']}</code>" in html
    assert any(d["key"] == "loadManagerClassName" and d["differs"] for d in S.config_diff(a.config, b.config))
    import html as h

    unload = b.events[b.events["kind"] == "unload"].iloc[0]
    assert h.escape(unload["reason"], quote=True) in html  # decisions with their reasons
    check = a.events[a.events["kind"] == "check"].iloc[0]
    assert h.escape(check["reason"], quote=True) in html  # TransferShedder's checks too
    assert h.escape(link, quote=True) in html
    rows = S.summary_rows(payload["runs"])
    assert all(h.escape(r["label"]) in html for r in rows)


def test_sim020_export_callbacks(pair):
    sid, meta = pair["sid"], pair["meta"]
    out, alerts = cs.export_report(1, meta, None, "http://x/simulator?scenario=bigo-scale-out", sid)
    assert out["type"] == "text/html" and out["filename"].startswith("shedlab-simulation-bigo-scale-out")
    assert 'id="fig-cluster"' in out["content"] and alerts is no_update
    out, alerts = cs.export_report(1, None, None, None, sid)
    assert out is no_update and "Run a simulation first" in str(alerts)
    out, alerts = cs.export_figures(1, "png", None, None, sid)
    assert out is no_update and "Run a simulation first" in str(alerts)


@pytest.mark.slow
def test_sim021_download_figures_with_kaleido(pair):
    import base64
    import io
    import zipfile

    from dashboard.export import browser_path

    if browser_path() is None:
        pytest.skip("needs Chromium for Kaleido")
    out, alerts = cs.export_figures(1, "svg", pair["meta"], None, pair["sid"])
    assert alerts is no_update
    raw = base64.b64decode(out["content"]) if out.get("base64") else out["content"]
    names = zipfile.ZipFile(io.BytesIO(raw)).namelist()
    assert names == [f"{n}.svg" for n in S.figures(pair["payload"])]


def test_sim030_a_plugin_strategy_shows_in_the_simulator_with_its_keys_and_grid():
    """A shedding strategy registered by an operator's module (``SHEDLAB_STRATEGY_MODULES``) is in both
    sides' pickers, runs with its load manager's placements, shows its own keys as sliders and starts the
    sweep on its own grid: the page asks the registry, no page file names it."""
    import os
    import subprocess
    import sys

    code = """
import json
from dashboard import ids
from dashboard import simulator as S
from layouts import simulator as L
page = L.layout(**{"scenario": "bigo-jitter", "a.shed": "PagePluginShedder"})
pick = next(c for c in page._traverse() if getattr(c, "id", None) == ids.sim_side(ids.SIM_SHED, "b"))
st, errs = S.coerce_state({"a": {"shed": "PagePluginShedder", "place": "AvgShedder"}})
print(json.dumps({"options": [o["value"] for o in pick.options], "a": st.a.to_json(), "errs": errs,
                  "link": S.decode({"scenario": "bigo-jitter", "a.shed": "PagePluginShedder"})[0].a.shed,
                  "places": [o["value"] for o in S.placement_options("PagePluginShedder") if not o.get("disabled")],
                  "keys": S.side_keys("PagePluginShedder"), "sweep": list(S.sweep_defaults("PagePluginShedder")),
                  "sweep_keys": [o["value"] for o in S.sweep_keys("PagePluginShedder")]}))
"""
    env = dict(os.environ, SHEDLAB_STRATEGY_MODULES="tests.callbacks.plugin_shedder")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert "PagePluginShedder" in got["options"] and got["link"] == "PagePluginShedder"
    # AvgShedder placement runs only with AvgShedder shedding: fixed, and said, as for any strategy
    assert got["a"]["shed"] == "PagePluginShedder" and got["a"]["place"] == "LeastLongTermMessageRate"
    assert any("AvgShedder placement needs AvgShedder shedding" in e for e in got["errs"])
    assert "LeastResourceUsageWithWeight" in got["places"] and "AvgShedder" not in got["places"]
    assert got["keys"] == ["maxUnloadPercentage", "loadBalancerBrokerOverloadedThresholdPercentage"]
    assert got["sweep"] == ["maxUnloadPercentage", "0.1, 0.2, 0.3, 0.4, 0.5",
                            "loadBalancerBrokerOverloadedThresholdPercentage", "70, 75, 80, 85, 90, 95"]
    assert set(got["keys"]) <= set(got["sweep_keys"])


def test_sim031_the_page_names_no_strategy_to_decide_behaviour():
    """No module of the Simulator page (nor the shared sources and export) compares with, or branches on, a
    strategy's name: every string constant equal to a registered strategy's name is a default value
    (data), listed here."""
    import ast
    from pathlib import Path

    from engine.strategies import registry

    names = {s.name for s in registry.specs()} | {s.fqn for s in registry.specs()}
    root = Path(__file__).resolve().parents[2]
    files = [*sorted((root / "dashboard" / "simulator").glob("*.py")), root / "callbacks" / "simulator.py",
             root / "layouts" / "simulator.py", root / "dashboard" / "sources.py", root / "dashboard" / "export.py"]
    allowed = {("dashboard/simulator/state.py", "_DEFAULT_PLACE_B")}  # run B's default placement (data)
    found = []
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        rel = f.relative_to(root).as_posix()
        defaults = {(rel, t.id) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)
                    and isinstance(n.value, ast.Constant) and n.value.value in names}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names:
                found.append((rel, n.lineno, n.value))
        assert defaults <= allowed, defaults - allowed
    assert [x for x in found if (x[0], "_DEFAULT_PLACE_B") not in allowed] == []
    assert len(found) == len(allowed)


def test_sim032_the_report_carries_each_run_strategy_state_as_its_value_json(pair):
    """Each run keeps its strategies' memories at the end as their state values' JSON; the values come back
    losslessly through the registry's state types, and the report prints them."""
    import html as h

    from engine.strategies import registry

    payload = pair["payload"]
    seen = set()
    for r in payload["runs"].values():
        for name, d in r.strategy_state.items():
            value = registry.spec(name).state_type.from_json(json.loads(json.dumps(d)))
            assert value.to_json() == d
            seen.add(name)
    assert {"TransferShedder", "AvgShedder"} <= seen
    text = h.unescape(S.build_report(payload))
    assert "Strategy state at the end of each run" in text
    a = payload["runs"]["b"].strategy_state["AvgShedder"]  # run B is AvgShedder in this pair
    assert json.dumps(a, indent=1, sort_keys=True) in text


def test_sim033_the_event_log_shows_the_decision_label_and_code(pair):
    """Every check and unload in the log carries the engine's own explanation (Pulsar's UnloadDecision
    label and reason), shown before the sentence — for every strategy, without naming one."""
    from layouts.simulator import event_table

    rows, _ = S.event_rows(pair["payload"]["runs"], ["check", "unload"], "both", limit=None)
    checks = [r for r in rows if r["kind"] == "check"]
    assert checks and all(r["code"] and r["label"] in ("Success", "Skip", "Failure") for r in checks)
    assert {r["run"] for r in checks} == {"A", "B"}
    assert S.check_codes(pair["payload"]["runs"]["a"].events) == {
        k: v for k, v in __import__("collections").Counter(r["code"] for r in checks if r["run"] == "A").items()}
    table = event_table(rows[:5], len(rows))
    codes = [c.children for c in table._traverse() if getattr(c, "className", "") and "sim-code" in c.className]
    assert codes == [r["code"] for r in rows[:5] if r["code"]]
    html = S.build_report(pair["payload"])
    assert f"<b>{checks[0]['code']}</b> " in html
