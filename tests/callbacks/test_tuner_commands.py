"""The Tuner's "Download commands": the callback body as a plain function."""
import shlex

import pytest
from dash import no_update
from dash.exceptions import PreventUpdate

import callbacks.tuner as ct
from dashboard.tuner.state import TunerState


def test_tuner_commands001_download_matches_the_plan():
    state = TunerState(src="sample:avgshedder-pairing-6-brokers", shed="ThresholdShedder", place="LeastLongTermMessageRate").to_json()
    got, alert = ct.export_commands(1, "pulsar-admin", state)
    assert alert is no_update and got["filename"].endswith(".sh") and got["type"] == "text/plain"
    text = got["content"]
    assert text.startswith("#!/bin/sh\n# DRY RUN") and "Shedlab never changes a cluster" in text
    _, a, _ = ct._analysis_for(state)  # the plan the page shows
    plan = [(u.bundle, u.destination) for u in a.cycle.unloads]
    assert plan  # the sample sheds
    lines = [shlex.split(ln) for ln in text.splitlines() if ln.startswith("pulsar-admin")]
    assert [(f"{w[3]}/{w[5]}", w[7]) for w in lines] == plan  # same bundles, destinations and order
    assert all(w[:3] == ["pulsar-admin", "namespaces", "unload"] and w[4] == "--bundle"
               and w[6] == "--destinationBroker" for w in lines)
    rest, _ = ct.export_commands(1, "rest", state)
    puts = [ln for ln in rest["content"].splitlines() if ln.startswith("PUT ")]
    assert rest["filename"].endswith(".txt") and len(puts) == len(plan)
    assert puts[0] == (f"PUT /admin/v2/namespaces/{plan[0][0]}/unload?destinationBroker={plan[0][1]}")


def test_tuner_commands002_no_click_no_state():
    with pytest.raises(PreventUpdate):
        ct.export_commands(None, "pulsar-admin", {"src": "x"})
    with pytest.raises(PreventUpdate):
        ct.export_commands(1, "pulsar-admin", None)


def test_tuner_commands003_report_lists_the_commands():
    state = TunerState(src="sample:avgshedder-pairing-6-brokers", shed="ThresholdShedder",
                       place="LeastLongTermMessageRate").to_json()
    rep, _ = ct.export_report(1, state, None, None, None, 10)
    cmd, _ = ct.export_commands(1, "pulsar-admin", state)
    first = next(ln for ln in cmd["content"].splitlines() if ln.startswith("pulsar-admin"))
    assert "<details id='plan-commands'>" in rep["content"] and first in rep["content"]


@pytest.mark.parametrize("transfer", ["true", "false"])
def test_tuner_commands004_extensible_upload(sid, transfer):
    """An ELM snapshot in the Tuner: TransferShedder's transfers carry their destination; with transfers
    off the unloads carry none and say where the next lookup is predicted to put them."""
    from dashboard import sources
    from tests.dashboard.conftest import data_url

    with open("samples/extensible/transfer-shedder-5-brokers.json", "rb") as f:
        got = sources.ingest_files(sid, [data_url(f.read())], ["ts.json"])
    src = got.sources[0]["id"]
    state = TunerState.from_json({"src": src, "shed": "TransferShedder", "place": "LeastResourceUsageWithWeight",
                                  "values": {**sources.sample_state(src)["values"],
                                             "loadBalancerTransferEnabled": transfer,
                                             "loadBalancerSheddingConditionHitCountThreshold": "0"}}).to_json()
    out, _ = ct.export_commands(1, "pulsar-admin", state)
    cmds = [ln for ln in out["content"].splitlines() if ln.startswith("pulsar-admin")]
    assert cmds
    if transfer == "true":
        assert all("--destinationBroker" in ln for ln in cmds)
    else:
        assert not any("--destinationBroker" in ln for ln in cmds)
        assert out["content"].count("# no destination: the next lookup places it") == len(cmds)
