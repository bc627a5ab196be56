"""History page, Predicted vs actual card, in real headless Chromium: a broker.conf and a timeline of
snapshots uploaded, Compare draws both sides and the agreement; a disagreement stays in the table."""
import json
import shutil

import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which("chromedriver"), reason="chromedriver not on PATH")]


def test_history_agree_e2e001_timeline_and_conf_uploaded(dash_duo, tmp_path):
    from app import app
    from engine.io import save_snapshot
    from tests.e2e.browser import shot
    from tests.engine.test_agreement import CONF, SMALL, START, _snap

    other = {**START, SMALL: "c:8080"}  # the cluster moved another bundle than the engine predicts
    lines = []
    for i, s in enumerate([_snap(0, 95, START), _snap(1, 92, other), _snap(2, 92, other)]):
        save_snapshot(s, tmp_path / "s.json")
        lines.append(json.dumps(json.loads((tmp_path / "s.json").read_text())))
    (tmp_path / "night.jsonl").write_text("\n".join(lines))
    (tmp_path / "broker.conf").write_text(CONF)
    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1400)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/history")
    dash_duo.find_element("#history-agree-conf input[type=file]").send_keys(str(tmp_path / "broker.conf"))
    dash_duo.find_element("#history-agree-timeline input[type=file]").send_keys(str(tmp_path / "night.jsonl"))
    dash_duo.wait_for_contains_text("#history-agree-files", "timeline night.jsonl", timeout=10)
    dash_duo.find_element("#history-agree-run").click()
    dash_duo.wait_for_contains_text("#history-agree-summary", "agreement 0 %", timeout=30)
    assert "OverloadShedder" in dash_duo.find_element("#history-agree-summary").text
    table = dash_duo.find_element("#history-agree-table").text
    assert "predicted only" in table and "observed only" in table and SMALL in table
    dash_duo.wait_for_contains_text("#history-agree-graph", "unloads per hour", timeout=30)
    dash_duo.driver.execute_script("document.getElementById('history-agree-graph').scrollIntoView()")
    shot(dash_duo, "history-predicted-vs-actual")
    severe = [e for e in dash_duo.get_logs() or [] if e.get("level") == "SEVERE" and "history-agree" in e.get("message", "")]
    assert not severe
