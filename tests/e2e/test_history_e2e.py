"""History page in real headless Chromium: the sample dataset opens and the aggregates figure draws."""
import json
import re
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which("chromedriver"), reason="chromedriver not on PATH")]

ROOT = Path(__file__).resolve().parents[2]
SHOT = ROOT / "artifacts" / "screenshots" / "history.png"


def _history_errors(logs):
    """Severe browser messages that concern this page (other pages are tested by their own tests)."""
    out = []
    for entry in logs:
        msg = entry.get("message", "")
        m = re.search(r"The id of this object is `([^`]+)`", msg)
        if m and not m.group(1).startswith("history-"):
            continue
        if entry.get("level") == "SEVERE" and ("history" in msg or "Callback error" in msg):
            out.append(entry)
    return out


def test_history_e2e001_sample_dataset_shows_the_aggregates(dash_duo):
    from app import app
    from dashboard.history.dataset import sample_dataset

    sample_dataset()  # generated on first use (small, deterministic)
    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1800)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/history")
    dash_duo.wait_for_contains_text("#history-info", "metric rows", timeout=30)
    dash_duo.wait_for_element("#history-agg-graph .main-svg", timeout=30)
    dash_duo.wait_for_contains_text("#history-agg-graph", "CPU range across brokers", timeout=30)
    dash_duo.wait_for_contains_text("#history-agg-graph", "msg rate ratio", timeout=30)
    assert re.search(r"pandas|cached", dash_duo.find_element("#history-agg-note").text)
    dash_duo.wait_for_contains_text("#history-hot-graph", "p99", timeout=30)
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    dash_duo.driver.save_screenshot(str(SHOT))
    assert not _history_errors(dash_duo.get_logs() or [])


@pytest.mark.spark
def test_history_e2e002_backtest_runs_in_the_background_with_spark(dash_duo):
    """The real path: the button starts a background job (a forked process that creates its own
    SparkSession), progress comes from Spark's stage tracker, the timeline draws; one click on an
    unload opens that minute in the Tuner."""
    from dashboard.spark import java_available

    if not java_available()[0]:
        pytest.skip("Spark needs Java")
    from app import app

    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1800)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/history")
    dash_duo.wait_for_contains_text("#history-info", "metric rows", timeout=30)
    # a setting no earlier run used, so the result is not already cached and Spark really runs
    import random

    box = dash_duo.find_element("#history-overrides")
    box.send_keys(f"loadBalancerAvgShedderHitCountLowThreshold=5\nminUnloadMessage={random.randint(500, 99999)}")
    dash_duo.find_element("#history-run-backtest").click()
    dash_duo.wait_for_contains_text("#history-alert", "backtest done", timeout=240)
    assert "spark" in dash_duo.find_element("#history-alert").text
    dash_duo.wait_for_contains_text("#history-pairs", "unloads", timeout=30)
    dots = dash_duo.driver.execute_script(
        "const g = document.querySelector('#history-backtest-graph .js-plotly-plot');"
        "return g.data.filter(t => t.type === 'scattergl').reduce((n, t) => n + t.x.length, 0);")
    assert dots > 0
    # click an unload (the plotly click event, as a user's click would raise it)
    dash_duo.driver.execute_script(
        "const g = document.querySelector('#history-backtest-graph .js-plotly-plot');"
        "const i = g.data.findIndex(t => t.type === 'scattergl');"
        "const t = g.data[i];"
        "g.emit('plotly_click', {points: [{curveNumber: i, pointNumber: 0, x: t.x[0], y: t.y[0], customdata: t.customdata[0]}]});")
    import time

    deadline = time.time() + 30
    while "/tuner" not in dash_duo.driver.current_url and time.time() < deadline:
        time.sleep(0.2)
    # the Tuner may rewrite its URL into its own permalink once it has read the snapshot
    assert "/tuner" in dash_duo.driver.current_url
    from dashboard.cache import get_cache
    from dashboard.history.snapshot import SNAPSHOT_PREFIX

    cache = get_cache()
    snaps = [k for k in cache.iterkeys() if isinstance(k, str) and k.startswith(SNAPSHOT_PREFIX)]
    assert snaps and any("minUnloadMessage" in json.dumps(cache.get(k)["shedlabHistory"]["config"]) for k in snaps)
