"""Shell callback bodies: source picker, permalinks' src, uploads, the live-cluster form."""
import json

from dash import no_update

import callbacks.shell as cs
from dashboard import ids, sources
from engine.samples import sample_json
from tests.dashboard.conftest import data_url
from tests.dashboard.pulsar_replay import PulsarReplay


def _text(x):
    return json.dumps(x, default=str)


def test_shell001_page_load_restores_or_defaults(trig):
    out = trig(cs.on_source, None, None, "", None, None)
    info, picked, opts, imp = out["info"], out["pick"], out["options"], out["conf"]
    assert info["id"] == sources.DEFAULT_SOURCE and picked == sources.DEFAULT_SOURCE and imp is no_update
    assert {o["value"] for o in opts} >= {"sample:cluster-100-brokers", sources.DEFAULT_SOURCE}
    current = {"id": "sample:yahoo-japan-3-brokers"}
    out = trig(cs.on_source, ids.URL, None, "", current, None, prop="search")
    assert out["info"] is no_update and out["pick"] == "sample:yahoo-japan-3-brokers"  # navigation keeps the tab's source


def test_shell002_picking_a_sample_brings_its_settings(trig):
    out = trig(cs.on_source, ids.SOURCE_PICKER, "sample:avgshedder-pairing-6-brokers", "", {"id": sources.DEFAULT_SOURCE}, None)
    info, imp = out["info"], out["conf"]
    assert info["brokers"] == 6 and imp["mode"] == "replace" and imp["nonce"]
    assert imp["values"]["loadBalancerLoadSheddingStrategy"].endswith("AvgShedder")


def test_shell003_permalink_src_and_bad_src(trig):
    out = trig(cs.on_source, ids.URL, None, "?src=sample:yahoo-japan-3-brokers&shed=OverloadShedder", None, None,
               prop="search")
    assert out["info"]["id"] == "sample:yahoo-japan-3-brokers" and out["conf"] is no_update  # the link's own config wins
    out = trig(cs.on_source, ids.URL, None, "?src=upload:" + "a" * 20, {"id": sources.DEFAULT_SOURCE}, None,
               prop="search")
    assert out["pick"] == sources.DEFAULT_SOURCE and "upload it again" in _text(out["alerts"])


_UPLOAD = ("pick", "options", "alerts", "conf", "scenario", "drawer", "upload")
_COLLECT = ("pick", "options", "alerts", "status", "drawer")


def test_shell004_broken_upload_alerts_and_keeps_the_source(sid):
    out = cs.on_upload([data_url(b'{"brokers": {"b1": {"cpu": 5}}}')], ["bad.json"], sid)
    pick, opts, alerts, conf, scen, drawer, reset = (out[k] for k in _UPLOAD)
    assert pick is no_update and opts is no_update and drawer is no_update and reset is None
    txt = _text(alerts)
    assert "alert-error" in txt and "bad.json" in txt and "cpu" in txt


def test_shell005_good_upload_selects_it(sid):
    raw = json.dumps(sample_json("yahoo-japan-3-brokers")).encode()
    conf = b"loadBalancerAvgShedderLowThreshold=20\n"
    out = cs.on_upload([data_url(raw), data_url(conf)], ["snap.json", "broker.conf"], sid)
    pick, opts, alerts, imp, scen, drawer, reset = (out[k] for k in _UPLOAD)
    assert pick.startswith("upload:") and pick in {o["value"] for o in opts}
    assert isinstance(drawer, str) and len(drawer) == 32  # a new value: the panel closes
    assert imp["values"] == {"loadBalancerAvgShedderLowThreshold": "20.0"} and imp["mode"] == "merge"
    assert "Loaded snap.json" in _text(alerts)


def test_shell006_live_cluster_form(sid, monkeypatch):
    monkeypatch.delenv("SHEDLAB_COLLECT", raising=False)
    monkeypatch.delenv("SHEDLAB_DISABLE_COLLECT", raising=False)
    with PulsarReplay(token="tok") as p:
        # off unless the operator turns it on: nothing is asked of anybody
        pick, opts, alerts, status, drawer = (cs.on_collect(1, p.admin_url, "tok", "", sid)[k] for k in _COLLECT)
        assert pick is no_update and "off on this server" in _text(alerts) and not p.requests
        monkeypatch.setenv("SHEDLAB_COLLECT", "1")
        monkeypatch.setenv("SHEDLAB_COLLECT_ALLOW", "127.0.0.1/32")
        pick, opts, alerts, status, drawer = (cs.on_collect(1, p.admin_url, "tok", "", sid)[k] for k in _COLLECT)
        assert pick.startswith("live:") and "3 brokers" in status and isinstance(drawer, str) and len(drawer) == 32
        pick, opts, alerts, status, drawer = (cs.on_collect(1, p.admin_url, None, "", sid)[k] for k in _COLLECT)
        assert pick is no_update and "401" in _text(alerts) and status.startswith("failed")
        monkeypatch.setenv("SHEDLAB_COLLECT_ALLOW", "pulsar.example.com")  # loopback not listed: refused
        n = len(p.requests)
        pick, opts, alerts, status, drawer = (cs.on_collect(1, p.admin_url, "tok", "", sid)[k] for k in _COLLECT)
        assert pick is no_update and "/admin/v2/clusters: not allowed'" in _text(alerts) and len(p.requests) == n
    out = cs.on_collect(1, None, None, None, sid)
    assert "admin URL" in _text(out["alerts"])


def test_shell_collect_form_disabled_unless_turned_on(monkeypatch):
    import app  # the drawer is built on every page load from the environment
    monkeypatch.delenv("SHEDLAB_COLLECT", raising=False)

    def find(node, cid):
        if getattr(node, "id", None) == cid:
            return node
        kids = getattr(node, "children", None)
        for k in (kids if isinstance(kids, (list, tuple)) else [kids]):
            if k is not None and not isinstance(k, str):
                got = find(k, cid)
                if got is not None:
                    return got
        return None

    off = app._drawer()
    assert find(off, ids.COLLECT_BUTTON).disabled is True and find(off, ids.COLLECT_URL).disabled is True
    assert "SHEDLAB_COLLECT=1" in _text(off)
    monkeypatch.setenv("SHEDLAB_COLLECT", "1")
    on = app._drawer()
    assert find(on, ids.COLLECT_BUTTON).disabled is False and "SHEDLAB_COLLECT=1" not in _text(on)
