"""Two things a new user meets, in real headless Chromium: the "+ Add data" panel closes once a file it
was given is loaded (the page under it shows the result), and the History page's resource weights are
named controls (each its broker.conf key and Pulsar's default), not a comma-separated text."""
import shutil
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.e2e.browser import start

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromedriver (apt chromium-driver)")]

ROOT = Path(__file__).resolve().parents[2]


def _drawer_open(duo) -> bool:
    return bool(duo.driver.execute_script("return document.getElementById('source-drawer').open"))


def _wait(cond, timeout=30, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_the_add_data_panel_closes_after_a_successful_upload(dash_duo, dash_app, tmp_path):
    duo = start(dash_duo, dash_app, "/tuner")
    duo.wait_for_element(".decision-headline", timeout=30)
    duo.find_element(".drawer-toggle").click()
    _wait(lambda: _drawer_open(duo), 5, "the panel to open")
    # a file that cannot be loaded: the panel stays open beside the alert (the user tries another file)
    bad = tmp_path / "broken-snapshot.json"
    bad.write_text('{"brokers": {"b1:8080": {"cpu": {"usage": -3, "limit": 100}}}}')
    upload = duo.driver.find_element(By.CSS_SELECTOR, "#source-upload input[type=file]")
    upload.send_keys(str(bad))
    duo.wait_for_contains_text(".shell-alerts .alert-error", "broken-snapshot.json", timeout=30)
    assert _drawer_open(duo)
    # a good snapshot: loaded, picked, and the panel closes over the decision it produced
    good = ROOT / "samples" / "snapshots" / "avgshedder-pairing-6-brokers.json"
    upload.send_keys(str(good))
    duo.wait_for_contains_text(".shell-alerts .alert-success", "avgshedder-pairing-6-brokers.json", timeout=30)
    _wait(lambda: not _drawer_open(duo), 10, "the panel to close")
    assert duo.find_element(".decision-headline").is_displayed()
    # it opens again on demand
    duo.find_element(".drawer-toggle").click()
    _wait(lambda: _drawer_open(duo), 5, "the panel to open again")


def _weight_input(duo, key):
    return duo.find_element(f'.history-weight[data-key="{key}"] input')


def test_history_weights_are_named_controls_with_pulsar_defaults(dash_duo, dash_app):
    from dashboard.history.dataset import sample_dataset

    sample_dataset()  # generated on first use (small, deterministic)
    duo = start(dash_duo, dash_app, "/history")
    duo.wait_for_contains_text("#history-agg-note", "", timeout=30)
    duo.wait_for_element("#history-agg-graph .main-svg", timeout=60)
    rows = duo.driver.find_elements(By.CSS_SELECTOR, ".history-weight")
    got = {r.get_attribute("data-key"): (r.find_element(By.CSS_SELECTOR, "code").text,
                                         r.find_element(By.CSS_SELECTOR, "input").get_attribute("value"),
                                         r.find_element(By.CSS_SELECTOR, ".tk-meta").text) for r in rows}
    assert got == {
        "loadBalancerCPUResourceWeight": ("loadBalancerCPUResourceWeight", "1", "default 1"),
        "loadBalancerDirectMemoryResourceWeight": ("loadBalancerDirectMemoryResourceWeight", "0", "default 0"),
        "loadBalancerBandwidthInResourceWeight": ("loadBalancerBandwidthInResourceWeight", "1", "default 1"),
        "loadBalancerBandwidthOutResourceWeight": ("loadBalancerBandwidthOutResourceWeight", "1", "default 1"),
    }
    # a bad value names its key; a good one redraws the aggregates
    box = _weight_input(duo, "loadBalancerDirectMemoryResourceWeight")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("-2", Keys.ENTER)
    duo.wait_for_contains_text("#history-agg-note", "loadBalancerDirectMemoryResourceWeight", timeout=30)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys("2", Keys.ENTER)
    _wait(lambda: "loadBalancerDirectMemoryResourceWeight" not in duo.find_element("#history-agg-note").text, 60,
          "the aggregates with the new weight")
    duo.wait_for_element("#history-agg-graph .main-svg", timeout=30)
