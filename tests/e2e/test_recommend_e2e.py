"""History page, "Recommend a setting", in real headless Chromium: the form on the sample dataset runs the
study in the background (progress, then the verdict), the Pareto front draws with the current setting
marked, and the Tuner link opens the recommended value. The screenshot goes to
``artifacts/screenshots/recommend.png`` and, with SHEDLAB_UPDATE_SCREENSHOTS set (``make screenshots``),
to ``docs/screenshots/recommend.png`` for the README."""
import os
import shutil
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.browser import SHOTS, shot

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which("chromedriver"), reason="chromedriver not on PATH")]

ROOT = Path(__file__).resolve().parents[2]


def test_recommend_e2e001_sample_recommendation_with_front_and_links(dash_duo):
    from app import app
    from dashboard.history.dataset import sample_dataset

    sample_dataset()
    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1800)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/history")
    dash_duo.wait_for_contains_text("#history-info", "metric rows", timeout=90)
    dash_duo.find_element("#history-overrides").send_keys("loadBalancerAvgShedderLowThreshold=5")
    trials = dash_duo.find_element("#recommend-trials")
    trials.clear()
    trials.send_keys("12")
    card = dash_duo.find_element("#recommend-run")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", card)
    card.click()
    end = time.time() + 240
    while time.time() < end and not (dash_duo.find_element("#recommend-explain").text
                                     or dash_duo.find_element("#recommend-alert").text):
        time.sleep(0.5)
    assert dash_duo.find_element("#recommend-explain").text, (dash_duo.find_element("#recommend-alert").text,
                                                               dash_duo.get_logs())
    text = dash_duo.find_element("#recommend-explain").text
    assert "beats the current setting" in text and "unloads_per_day" in text
    dash_duo.wait_for_element("#recommend-pareto .main-svg", timeout=30)
    names = dash_duo.driver.execute_script(
        "return document.querySelector('#recommend-pareto .js-plotly-plot').data.map(t => t.name);")
    assert "current setting" in names and "recommended" in names
    conf = dash_duo.find_element("#recommend-conf").text
    assert "loadBalancerAvgShedderLowThreshold=" in conf
    changed = dict(line.split("=", 1) for line in conf.strip().splitlines() if "=" in line and not line.startswith("#"))
    new = changed["loadBalancerAvgShedderLowThreshold"]
    link = dash_duo.find_element("#recommend-actions a")
    q = parse_qs(urlparse(link.get_attribute("href")).query)
    assert q["shed"] == ["AvgShedder"]
    assert all(q[k] == [v] for k, v in changed.items())  # every changed key travels to the Tuner
    head = dash_duo.find_element("#recommend-alert")
    dash_duo.driver.execute_script(
        "document.querySelector('#recommend-objective').closest('section').scrollIntoView({block: 'start'});"
        "window.scrollBy(0, -70)")
    time.sleep(0.8)
    shot(dash_duo, "recommend", width=1440, height=1800)
    if os.environ.get("SHEDLAB_UPDATE_SCREENSHOTS"):
        shutil.copy(SHOTS / "recommend.png", ROOT / "docs" / "screenshots" / "recommend.png")
    assert head.text == ""  # no failure message
    link.click()  # the Tuner opens with the recommended value
    dash_duo.wait_for_contains_text("#tuner-conf-text", f"loadBalancerAvgShedderLowThreshold={new}", timeout=30)


def test_recommend_e2e002_simulator_card_front_and_recommendation(dash_duo):
    """The Simulator's card: run A (ThresholdShedder at its eager default on a jittery cluster) is the current
    setting; a tiny study (6 trials, each simulated on two seeds, one held-out seed) draws the front and says
    in words what to change; the compare link opens A = current, B = recommended."""
    from selenium.webdriver.common.keys import Keys

    from app import app
    from engine.strategies.registry import default_placement

    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1800)
    dash_duo.driver.get(f"{dash_duo.server_url}/simulator?scenario=bigo-jitter&seed=0&minutes=30"
                        f"&a.shed=ThresholdShedder&a.place={default_placement('ThresholdShedder')}")
    dash_duo.wait_for_contains_text("#sim-headline", "bigo-jitter", timeout=90)
    assert "loadBalancerBrokerThresholdShedderPercentage" in dash_duo.find_element("#sim-recommend-keys").text
    for sel, value in (("#sim-recommend-objective", "min unloads_per_day; usage_range_p95 <= 60"),
                       ("#sim-recommend-trials", "6"), ("#sim-recommend-seeds", "1")):
        el = dash_duo.find_element(sel)
        el.send_keys(Keys.CONTROL, "a")
        el.send_keys(Keys.DELETE)
        el.send_keys(value)
    run = dash_duo.find_element("#sim-recommend-run")
    dash_duo.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", run)
    run.click()
    end = time.time() + 240
    while time.time() < end and not (dash_duo.find_element("#sim-recommend-explain").text
                                     or dash_duo.find_element("#sim-recommend-alert").text):
        time.sleep(0.5)
    text = dash_duo.find_element("#sim-recommend-explain").text
    assert text, (dash_duo.find_element("#sim-recommend-alert").text, dash_duo.get_logs())
    assert "beats the current setting" in text and "Change loadBalancerBrokerThresholdShedderPercentage from 10" in text
    assert "seed 3" in text  # held out: a seed the fit never saw
    dash_duo.wait_for_element("#sim-recommend-pareto .main-svg", timeout=30)
    names = dash_duo.driver.execute_script(
        "return document.querySelector('#sim-recommend-pareto .js-plotly-plot').data.map(t => t.name);")
    assert "current setting" in names and "recommended" in names
    conf = dash_duo.find_element("#sim-recommend-conf").text
    line = next(x for x in conf.splitlines() if x.startswith("loadBalancerBrokerThresholdShedderPercentage="))
    new = line.split("=", 1)[1]
    assert float(new) > 10
    hrefs = [a.get_attribute("href") for a in dash_duo.driver.find_elements("css selector", "#sim-recommend-actions a")]
    sim = next(h for h in hrefs if "/simulator?" in h)
    q = parse_qs(urlparse(sim).query)
    assert q["scenario"] == ["bigo-jitter"] and q["minutes"] == ["30"] and q["a.shed"] == q["b.shed"] == ["ThresholdShedder"]
    assert q["b.loadBalancerBrokerThresholdShedderPercentage"] == [new]
    assert "a.loadBalancerBrokerThresholdShedderPercentage" not in q  # A stays at the current (default) value
    dash_duo.driver.execute_script(
        "document.querySelector('#sim-recommend-objective').closest('section').scrollIntoView({block: 'start'});"
        "window.scrollBy(0, -70)")
    time.sleep(0.8)
    shot(dash_duo, "recommend-simulator", width=1440, height=1800)
    if os.environ.get("SHEDLAB_UPDATE_SCREENSHOTS"):
        shutil.copy(SHOTS / "recommend-simulator.png", ROOT / "docs" / "screenshots" / "recommend-simulator.png")
