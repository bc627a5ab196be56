"""Simulator page, field findings: each finding's one-click A/B runs the article's two strategy
sets on its scenario and seed, and the page's run gives the same figures as ``python -m engine findings``
(the article's number beside the run's, within tolerance). Real engine runs, real diskcache."""
import uuid

import pytest
from dash.exceptions import PreventUpdate

import callbacks.simulator as cs
from dashboard import ids
from dashboard.simulator import findings as SF
from dashboard import simulator as S
from engine.simulator import findings as F


@pytest.fixture(scope="module")
def sid():
    return uuid.uuid4().hex


def test_simf001_every_finding_is_a_valid_page_state_offered_by_the_pickers():
    opts = {o["value"] for o in S.scenario_options(None)}
    assert {o["value"] for o in SF.finding_options()} == {i for i, f in F.FINDINGS.items() if not F.is_snapshot(f)}
    for fid, f in F.FINDINGS.items():
        st = SF.finding_state(fid)
        if F.is_snapshot(f):  # one engine cycle on a sample: not a Simulator A/B
            assert st is None and fid not in {o["value"] for o in SF.finding_options()}
            continue
        assert st is not None and st.scenario == f.scenario and st.seed == f.seed and st.minutes is None
        assert st.scenario in opts  # calibrated scenarios are in the scenario picker too ("findings/NAME")
        assert SF.finding_for(st.to_json()) is f
    assert SF.finding_state("../../etc/passwd") is None and SF.finding_state(None) is None
    with pytest.raises(Exception):
        S.load("findings/../bigo-jitter")


@pytest.mark.parametrize("fid", ["bigo-avgshedder-homogeneous", "bigo-threshold-homogeneous", "vivo-30-partitions"])
def test_simf002_the_page_run_gives_the_articles_figures(fid, sid):
    st = SF.finding_state(fid)
    meta = S.run_pair(st, sid)
    children, hidden = cs.finding_figures({"key": meta["key"]}, sid)
    assert hidden is False
    rows = SF.figure_rows(F.FINDINGS[fid], S.load_result(meta["key"], sid)["runs"])
    expected = F.run_finding(F.FINDINGS[fid])  # the command's own runs
    assert [r["value"] for r in rows] == [F.value_text(e.figure, e.value) for e in expected]
    assert all(r["ok"] for r in rows)
    assert "figures within tolerance" in str(children)


def test_simf003_picking_a_finding_sets_the_form_and_runs_it():
    cur = S.default_state()
    st, msgs, extra = cs.resolve_form(ids.SIM_FINDING, form={"state": cur.to_json()}, saved=None, seen=None,
                                      link=None, uploaded=None, current=cur, finding="bigo-jitter")
    assert st == SF.finding_state("bigo-jitter") and extra["autorun"] and not extra["load"]
    assert "UniformLoadShedder" in msgs[0]
    with pytest.raises(PreventUpdate):
        cs.resolve_form(ids.SIM_FINDING, form={"state": cur.to_json()}, saved=None, seen=None, link=None,
                        uploaded=None, current=cur, finding=None)


def test_simf004_results_of_another_state_hide_the_card(sid):
    st = S.coerce_state({**SF.finding_state("bigo-cpu-spike").to_json(), "minutes": 25})[0]
    meta = S.run_pair(st, sid)
    assert cs.finding_figures({"key": meta["key"]}, sid) == ([], True)
