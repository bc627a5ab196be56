"""The History → Tuner hand-off: ``/tuner?snapshot=<key>`` opens the minute the History page
saved, with the backtest's strategy and keys, and one shedding cycle makes the backtest's decision.

The minute comes from the History page's own callback on a small generated dataset (the real
backtest runner, pandas engine); the expected decision is the backtest's event row.
"""
from __future__ import annotations

import json
import uuid
from urllib.parse import urlencode

import plotly
import pytest

import callbacks.tuner as ct
from callbacks import history as hcb
from callbacks import shell
from dashboard import ids, sources
from dashboard.cache import get_cache

YAHOO = "sample:yahoo-japan-3-brokers"


def _j(x) -> str:
    return json.dumps(x, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    from dashboard.history.generate import generate

    p = tmp_path_factory.mktemp("hist-tuner") / "ds"
    generate(p, brokers=5, days=1, seed=4, bundles_per_broker=3)
    with pytest.MonkeyPatch.context() as mp:  # the page opens datasets by name under the history roots only
        mp.setenv("SHEDLAB_HISTORY_ROOTS", str(p.parent))
        yield str(p)


def _backtest(ds, strategy, overrides):
    """The History page's backtest job with the real runner (pandas engine), as the page's summary."""
    from dashboard.history import service as S
    from dashboard.history.jobs import run_job

    info = S.dataset_info(ds)
    params = S.job_params("backtest", start=info["start"], end=info["end"], strategy=strategy, overrides=overrides,
                          bundles="auto")
    run_job("backtest", ds, params, engine="pandas")
    return {"job": "backtest", "dataset": ds, "params": params, "ok": True, "error": None, "meta": {}}


@pytest.mark.parametrize("strategy,overrides", [("AvgShedder", "loadBalancerAvgShedderHitCountLowThreshold=4"),
                                                ("ThresholdShedder", "loadBalancerBrokerThresholdShedderPercentage=5")])
def test_th001_history_minute_opens_in_the_tuner_and_reproduces_the_backtest(dataset, strategy, overrides):
    summary = _backtest(dataset, strategy, overrides)
    fig = hcb.show_job(summary)[0]
    point = next(t for t in fig.data if t.type == "scattergl")
    n_checked = 0
    for k in range(min(3, len(point.customdata))):
        cd = list(point.customdata[k])
        href, _ = hcb.open_in_tuner({"points": [{"customdata": cd}]}, summary)
        from dashboard.history import service as S

        ev = S.event_at(S.job_result(summary)["events"], int(cd[0]))
        path, _, search = href.partition("?")
        assert path == "/tuner"
        # the shell: the minute becomes the current source, listed in the picker
        sid = uuid.uuid4().hex
        want, info, imp, alerts = shell.choose_source(ids.URL, None, "?" + search, None, sid)
        assert not alerts and want.startswith("history:") and info["kind"] == "history"
        assert info["label"].startswith("History · ds · minute ")
        assert ev["timestamp"][:16].replace("T", " ") in info["label"]
        assert any(o["value"] == want and o["label"].startswith("History · ") for o in sources.source_options(sid))
        # the Tuner page: opened with the backtest's strategy and changed keys (the layout's link store)
        from dash._pages import _parse_query_string
        from layouts import tuner as lt

        page = lt.layout(**_parse_query_string("?" + search))
        link = _find_store(page, ids.TUNER_LINK)
        assert link["state"]["src"] == want and link["state"]["shed"] == strategy
        key, val = overrides.split("=")
        assert link["state"]["values"] == {key: val}
        assert "reproduces the backtest" in link["errors"][0]
        state, base, msgs = ct.resolve_controls(None, shed=None, place=None, link=link, conf_import=None, base=None,
                                                config=None, source=info, current={}, seed=0)
        assert state.shed == strategy and state.value_dict == {key: val}
        # one shedding cycle: the same bundles leave the same broker as in the backtest
        out = ct.compute(state, None, base["messages"])
        a = out["analysis"]
        assert a.snap.id == want and a.shedding == strategy
        got = [u.bundle for u in a.cycle.unloads if u.broker == ev["broker"]]
        assert ",".join(got) == ev["bundles"] and got
        n_checked += 1
        # and the callback the page runs does the same
        res = ct.update_tuner([], [], [], 0, 0, info, base, [], [], [], state.shed, state.place, None, None)
        assert res[16]["src"] == want and res[16]["shed"] == strategy
    assert n_checked >= 1


def _find_store(node, cid):
    from dash.development.base_component import Component

    if isinstance(node, Component):
        if getattr(node, "id", None) == cid:
            return node.data
        kids = getattr(node, "children", None)
        for k in (kids if isinstance(kids, (list, tuple)) else [kids]):
            got = _find_store(k, cid)
            if got is not None:
                return got
    return None


@pytest.mark.parametrize("key,why", [
    ("../../etc/passwd", "not a History snapshot key"),
    ("history-snapshot:/tmp/x", "not a History snapshot key"),
    ("snap:" + "a" * 20, "not a History snapshot key"),
    ("history-snapshot:" + "0" * 24, "no longer on the server"),
    ("bad", "not a History snapshot key"),
])
def test_th002_bad_history_key_is_an_alert_and_the_page_stays_usable(key, why):
    sid = uuid.uuid4().hex
    want, info, imp, alerts = shell.choose_source(ids.URL, None, "?" + urlencode({"snapshot": key}), None, sid)
    assert want == sources.DEFAULT_SOURCE and info["id"] == sources.DEFAULT_SOURCE and imp is None
    assert len(alerts) == 1 and why in _j(alerts) and "Cannot open the History minute" in _j(alerts)
    # a tab already on another source keeps it
    cur = {"id": YAHOO}
    want, *_ = shell.choose_source(ids.URL, None, "?" + urlencode({"snapshot": key}), cur, sid)
    assert want == YAHOO
    from layouts import tuner as lt

    page = lt.layout(snapshot=key)  # renders; no link: the tab's state or the default sample
    assert _find_store(page, ids.TUNER_LINK) is None
    st, base, _ = ct.resolve_controls(None, shed=None, place=None, link=None, conf_import=None, base=None, config=None,
                                      source=sources.source_info(want), current={}, seed=0)
    assert ct.compute(st)["analysis"].snap.id == want


def test_th003_malformed_history_entry_is_an_alert():
    digest = uuid.uuid4().hex[:24]
    get_cache().set(sources.HISTORY_PREFIX + digest, {"brokers": {"b1": {"cpu": "lots"}}}, expire=60)
    get_cache().set(sources.HISTORY_PREFIX + digest[::-1], ["not", "a", "dict"], expire=60)
    for d in (digest, digest[::-1]):
        want, _, _, alerts = shell.choose_source(ids.URL, None, f"?snapshot=history-snapshot:{d}", None,
                                                 uuid.uuid4().hex)
        assert want == sources.DEFAULT_SOURCE and len(alerts) == 1 and "history-snapshot:" in _j(alerts)


def test_th004_prefix_agrees_with_the_history_contract():
    from dashboard.history.snapshot import SNAPSHOT_PREFIX

    assert sources.HISTORY_PREFIX == SNAPSHOT_PREFIX
