"""Pegasus page: callback bodies as plain functions, the layout, the figure builders."""
import base64
import json
from contextvars import copy_context

import plotly.graph_objects as go
import pytest
from dash import no_update
from dash._callback_context import context_value
from dash._utils import AttributeDict

from callbacks.pegasus import choose_source, compute_plan, download_plan, show_step
from dashboard import ids
from dashboard.pegasus import MAX_UPLOAD_BYTES, SAMPLES_DIR, safe_label
from layouts import PAGES
from layouts.pegasus import layout

SAMPLE = {"kind": "sample", "name": "unbalanced.txt"}
OPTS = ["quirks"]


def triggered(prop_id, fn, *args):
    def run():
        context_value.set(AttributeDict(triggered_inputs=[{"prop_id": prop_id, "value": None}]))
        return fn(*args)
    return copy_context().run(run)


def upload(text: str | bytes, mime="text/plain"):
    raw = text.encode() if isinstance(text, str) else text
    return f"data:{mime};base64,{base64.b64encode(raw).decode()}"


def _ids(component):
    out = []
    if getattr(component, "id", None):
        out.append(component.id)
    children = getattr(component, "children", None)
    if isinstance(children, (list, tuple)):
        for c in children:
            out += _ids(c)
    elif children is not None and hasattr(children, "children"):
        out += _ids(children)
    return out


def test_pegasus001_page_registered_and_layout_works_without_kwargs():
    assert ("pegasus", "/pegasus", "Pegasus") in PAGES
    page = layout()
    found = set(_ids(page))
    mine = {v for k, v in vars(ids).items() if k.startswith("PEGASUS_")}
    assert mine <= found and all(v.startswith("pegasus-") for v in mine)
    store = next(c for c in page.children if getattr(c, "id", None) == ids.PEGASUS_SOURCE)
    assert store.data == SAMPLE


def test_pegasus002_pick_a_sample():
    src, alert, contents = triggered(f"{ids.PEGASUS_SAMPLE}.value", choose_source,
                                     "node-added.txt", None, None)
    assert src == {"kind": "sample", "name": "node-added.txt"} and alert is None
    assert contents is no_update


def test_pegasus003_upload_text_then_plan_it():
    text = (SAMPLES_DIR / "node-added.txt").read_text()
    src, alert, contents = triggered(f"{ids.PEGASUS_UPLOAD}.contents", choose_source,
                                     "unbalanced.txt", upload(text), "my cluster.txt")
    assert alert is None and contents is None                # reset: same file can come again
    assert src["kind"] == "upload" and src["label"] == "my cluster.txt"
    out = compute_plan(src, OPTS, None, "")
    assert out["step_max"] == out["step"] == 13              # 4 copy_pri + 9 copy_sec
    assert out["alert"] is None


@pytest.mark.parametrize("payload,filename,message", [
    (upload((SAMPLES_DIR / "balanced-4-nodes.txt").read_text()[:900]), "cut.txt", "cut.txt: "),
    (upload("x" * (MAX_UPLOAD_BYTES + 10)), "big.txt", "larger than the 2 MB upload limit"),
    ("data:text/plain;base64,@@@", "b.txt", "bad base64"),
    (upload('{"tables": 1}', "application/json"), "c.json", "field tables: must be a list"),
    (upload("hello"), "x.exe", "expected a .txt"),
])
def test_pegasus004_bad_upload_shows_an_alert_and_keeps_the_cluster(payload, filename, message):
    src, alert, contents = triggered(f"{ids.PEGASUS_UPLOAD}.contents", choose_source,
                                     "unbalanced.txt", payload, filename)
    assert src is no_update and contents is None
    assert message in alert.children and alert.role == "alert"
    # the previous cluster still plans
    assert compute_plan(SAMPLE, OPTS, None, "")["alert"] is None


def test_pegasus005_file_name_is_only_a_label():
    assert safe_label("../../etc/passwd") == "passwd"
    assert safe_label("C:\\x\\<b>.txt") == "_b_.txt"
    text = (SAMPLES_DIR / "balanced-4-nodes.txt").read_text()
    src, alert, _ = triggered(f"{ids.PEGASUS_UPLOAD}.contents", choose_source, None,
                              upload(text), "/etc/shadow")
    assert alert is None and src["label"] == "shadow"
    assert src["snapshot"]["tables"][0]["app_name"] == "temp"


def test_pegasus006_compute_plan_outputs():
    summary, health, options, table, smax, svalue, alert = compute_plan(SAMPLE, OPTS, None, "temp").values()
    assert smax == svalue == 18 and table == "temp" and alert is None
    assert [o["value"] for o in options] == ["", "temp", "usertable"]
    text = json.dumps(summary.to_plotly_json(), default=str)
    assert "move_pri 8, copy_pri 2, copy_sec 8" in text and "stopped: balanced" in text
    htext = json.dumps(health.to_plotly_json(), default=str)
    assert "fully healthy" in htext and "write unhealthy" in htext and "read unhealthy" in htext


def test_pegasus007_toggles_change_the_plan():
    per_table = compute_plan(SAMPLE, ["quirks"], None, "")["step_max"]
    cluster = compute_plan(SAMPLE, ["quirks", "cluster"], None, "")["step_max"]
    only_primary = compute_plan(SAMPLE, ["quirks", "only_primary"], None, "")["step_max"]
    assert (per_table, cluster, only_primary) == (18, 20, 10)


def test_pegasus008_bad_seed_is_an_alert():
    out = compute_plan(SAMPLE, OPTS, "abc", "")
    assert all(v is no_update for k, v in out.items() if k != "alert")
    assert "seed 'abc' is not an integer" in out["alert"].children


def test_pegasus009_step_slider_updates_the_counts():
    fig0, skew, table, label = show_step(0, "", SAMPLE, OPTS, None)
    assert isinstance(fig0, go.Figure) and isinstance(skew, go.Figure)
    traces = {t.name: t for t in fig0.data}
    assert list(traces["primary (step 0)"].y) == list(traces["primary (before)"].y) == [12, 7, 4, 1]
    fig, *_ = show_step(18, "", SAMPLE, OPTS, None)
    traces = {t.name: t for t in fig.data}
    assert list(traces["primary (step 18)"].y) == [6, 6, 6, 6]
    assert list(traces["total (step 18)"].y) == [18, 18, 18, 18]
    fig1, _, table1, label1 = show_step(1, "temp", SAMPLE, OPTS, None)
    traces = {t.name: t for t in fig1.data}
    assert list(traces["primary (step 1)"].y) == [4, 2, 2, 0]      # move_pri 2.0 n1 -> n3
    assert "Step 1 of 18 (round 1): move_pri 2.0 10.0.0.1:34801 -> 10.0.0.3:34801" in label1
    rows = table1.children[2].children
    assert rows[0].className == "pegasus-current" and rows[1].className == ""
    assert "step 18 of 18" in fig.layout.title.text


def test_pegasus010_download_csv_and_json():
    csv, alerts = triggered(f"{ids.PEGASUS_DOWNLOAD_CSV}.n_clicks", download_plan, 1, None, SAMPLE, OPTS, None)
    assert csv["filename"].endswith(".csv") and csv["filename"].startswith("pegasus-plan-") and alerts is no_update
    assert csv["type"] == "text/csv"
    lines = csv["content"].splitlines()
    assert lines[0] == "step,round,type,gpid,table,from,to,stage,reason" and len(lines) == 19
    js, _ = triggered(f"{ids.PEGASUS_DOWNLOAD_JSON}.n_clicks", download_plan, None, 1, SAMPLE, OPTS, None)
    data = json.loads(js["content"])
    assert js["filename"].endswith(".json") and data["format"] == "shedlab-pegasus-plan/1"
    # no cluster loaded: nothing to download, and the page says why
    out, alerts = triggered(f"{ids.PEGASUS_DOWNLOAD_CSV}.n_clicks", download_plan, 2, None, None, OPTS, None)
    assert out is no_update and "plan download: " in str(alerts) and "no cluster loaded" in str(alerts)


def test_pegasus011_figures_are_plain_figures():
    from dashboard.pegasus.figures import node_counts_figure, skew_figure
    rows = [{"node": "a:1", "primary_before": 2, "secondary_before": 1, "total_before": 3,
             "primary": 1, "secondary": 2, "total": 3}]
    fig = node_counts_figure(rows, "cluster", 1, 4)
    assert [t.type for t in fig.data] == ["bar", "bar", "bar", "bar", "scatter", "scatter"]
    sk = skew_figure([{"step": 0, "primary": 3, "secondary": 2, "total": 1},
                      {"step": 4, "primary": 0, "secondary": 1, "total": 1}], 2, "cluster")
    assert len(sk.data) == 3 and sk.layout.shapes[0].x0 == 2
