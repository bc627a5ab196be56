"""Simulator page: the current snapshot (the shell's source) as the start state.

The ELM upload is the ``pulsar-client consume`` output of ``loadbalancer-broker-load-data`` and
``loadbalancer-top-bundles-load-data`` in ``tests/engine/extensible/data`` (``BrokerLoadData`` /
``TopBundlesLoadData`` as Jackson writes them, see ``tests/engine/extensible/test_readers.py``), zipped
and uploaded through the shell's ingest path, as a browser drop does.
"""
import io
import zipfile
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from dash.exceptions import PreventUpdate

import callbacks.simulator as cs
from dashboard import ids, sources
from dashboard import simulator as S
from dashboard.analysis import analyze
from layouts.simulator import layout
from tests.dashboard.conftest import data_url

DATA = Path(__file__).resolve().parents[1] / "engine" / "extensible" / "data"
PAGE_SRC = ids.page_source("simulator")


def _elm_upload(sid) -> dict:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in ("broker-load-data.consume.txt", "top-bundles-load-data.consume.txt"):
            zf.write(DATA / p, p)
    got = sources.ingest_files(sid, [data_url(buf.getvalue())], ["elm.zip"])
    assert not got.errors, got.errors
    return got.sources[0]


def _resolve(trigger, cur, **kw):
    return cs.resolve_form(trigger, form={"state": cur.to_json()}, saved=None, seen=None, link=None, uploaded=None,
                           current=cur, **kw)


def test_elm_upload_on_the_simulator_page_runs_transfer_shedder_from_the_snapshot(trig, sid):
    info = _elm_upload(sid)
    cur = S.default_state()
    # the upload reaches the page through its mirror of the shell's source store: a source it had not seen
    st, msgs, extra = _resolve(PAGE_SRC, cur, source=info, start="scenario", src_seen=sources.DEFAULT_SOURCE)
    assert st.scenario == S.snapshot_scenario_id(info["id"])
    assert (st.a.shed, st.a.place) == ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight")
    assert extra["autorun"] and extra["start"] == "snapshot" and extra["start_box"]
    assert extra["src_seen"] == info["id"] and any("current snapshot" in m for m in msgs)
    assert any(o["value"] == st.scenario for o in S.scenario_options(sid, st.scenario))
    # run A unloads at the first hit; the background job's body runs A and B from the snapshot
    st, errs = S.coerce_state({**st.to_json(), "minutes": 4,
                               "a": {**st.a.to_json(), "values": {"loadBalancerSheddingConditionHitCountThreshold": "0"}}})
    assert errs == []
    form = [st.scenario, 4, 0, st.a.shed, st.b.shed, st.a.place, st.b.place, "", "", [], [], "", ""]
    out = trig(cs.run_simulation, ids.SIM_AUTORUN, lambda *_: None, None, {"nonce": "n", "state": st.to_json()}, *form,
               sid, None, prop="data")
    assert "error" not in out and out["key"] == S.result_key(sid, st)
    payload = S.load_result(out["key"], sid)
    a = payload["runs"]["a"]
    assert a.extensible and payload["facts"]["brokers"] == 3
    # the first check decides what the Tuner decides on the same upload and config
    tuner = analyze(sources.get_snapshot(info["id"]), a.config)
    ev = a.events
    first = ev.loc[ev["kind"] == "check", "minute"].min()
    moved = ev[(ev["minute"] == first) & (ev["kind"] == "unload")]
    assert tuner.cycle.unloads
    assert sorted(zip(moved["broker"], moved["bundle"], moved["destination"])) == sorted(
        (u.broker, u.bundle, u.destination) for u in tuner.cycle.unloads)
    assert tuner.cycle.reason in ev.loc[(ev["minute"] == first) & (ev["kind"] == "check"), "reason"].iloc[0]
    # the page draws it (summary, figures) like any other run
    shown = cs.show_results(out, sid)
    assert shown[1] is not None and "TransferShedder" in str(shown[6])


def test_start_from_choice_and_permalink(sid):
    src = "sample:bigo-threshold-first-unload"
    info = sources.source_info(src)
    cur = S.default_state()
    # choosing "the current snapshot": the sample's own strategies on run A, run at once
    st, msgs, extra = _resolve(ids.SIM_START, cur, source=info, start="snapshot", src_seen=src)
    assert st.scenario == "snapshot:" + src and (st.a.shed, st.a.place) == ("ThresholdShedder",
                                                                            "LeastResourceUsageWithWeight")
    assert extra["autorun"] and extra["start"] == "snapshot"
    facts = S.scenario_facts(S.load(st.scenario))
    assert (facts["brokers"], facts["bundles"], facts["minutes"]) == (5, 40, S.SNAPSHOT_MINUTES)
    # the permalink carries it
    back, errs = S.decode(dict(parse_qsl(S.encode(st))))
    assert errs == [] and back == st
    # the same choice again changes nothing
    with pytest.raises(PreventUpdate):
        _resolve(ids.SIM_START, st, source=info, start="snapshot", src_seen=src)
    # the source changes while starting from a snapshot: the form follows it
    other = sources.source_info("sample:yahoo-japan-3-brokers")
    st2, _, extra2 = _resolve(PAGE_SRC, st, source=other, start="snapshot", src_seen=src)
    assert st2.scenario == "snapshot:sample:yahoo-japan-3-brokers" and extra2["src_seen"] == other["id"]
    # back to "a scenario"
    st3, _, extra3 = _resolve(ids.SIM_START, st2, source=other, start="scenario", src_seen=other["id"])
    assert st3.scenario == S.DEFAULT_SCENARIO and extra3["start"] == "scenario" and extra3["start_box"]
    # a sample picked in the shell while running a scenario file does not switch the page by itself
    st4, _, extra4 = _resolve(PAGE_SRC, st3, source=info, start="scenario", src_seen=other["id"])
    assert st4.scenario == S.DEFAULT_SCENARIO and not extra4["autorun"]
    # no source: the choice is hidden
    _, _, extra5 = _resolve(PAGE_SRC, st3, source=None, start="scenario", src_seen=None)
    assert extra5["start_box"] is False


def test_bad_snapshot_values_never_load(sid):
    for bad in ("snapshot:", "snapshot:../../etc/passwd", "snapshot:upload:" + "0" * 20, "snapshot:" + "x" * 500):
        st, errs = S.coerce_state({"scenario": bad})
        assert st.scenario == S.DEFAULT_SCENARIO and errs
    # a permalink to a snapshot run renders the page with the choice shown
    page = layout(scenario="snapshot:sample:yahoo-japan-3-brokers")
    comps = {getattr(c, "id", None): c for c in page._traverse() if isinstance(getattr(c, "id", None), str)}
    assert comps[ids.SIM_START_BOX].hidden is False and comps[ids.SIM_START].value == "snapshot"
    assert comps[ids.SIM_SCENARIO].value == "snapshot:sample:yahoo-japan-3-brokers"
    plain = {getattr(c, "id", None): c for c in layout()._traverse() if isinstance(getattr(c, "id", None), str)}
    assert plain[ids.SIM_START_BOX].hidden is True and plain[ids.SIM_START].value == "scenario"
