"""The Tuner in real headless Chromium (dash[testing] + the system chromedriver).

Each test saves screenshots to ``artifacts/screenshots/`` (gitignored); the final Tuner screenshot
also goes to ``docs/screenshots/tuner.png`` for the README when SHEDLAB_UPDATE_SCREENSHOTS is set (``make screenshots``).
"""
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromedriver (apt chromium-driver)")]

from tests.e2e.browser import ROOT, SHOTS, shot, start  # noqa: F401  (shared by the other browser tests)
from tests.e2e.browser import wait_file as _wait_file
THRESHOLD = "loadBalancerBrokerThresholdShedderPercentage"


def headline(duo):
    return duo.find_element(".decision-headline").text


def wait_headline(duo, text, timeout=15):
    duo.wait_for_contains_text(".decision-headline", text, timeout=timeout)


def pick(duo, dropdown_id, label):
    duo.find_element(f"#{dropdown_id}").click()
    for _ in range(20):
        for opt in duo.driver.find_elements(By.CSS_SELECTOR, "[role=listbox] [role=option]"):
            if opt.text.strip() == label:
                opt.click()
                return
        time.sleep(0.2)
    raise AssertionError(f"no option {label!r} in #{dropdown_id}")


def graph_js(duo, gid, expr):
    return duo.driver.execute_script(f"var gd = document.querySelector('#{gid} .js-plotly-plot'); return {expr};")


def line_y(duo, gid, label_start):
    return graph_js(duo, gid, "(function(){var a=gd.layout.annotations;for(var i=0;i<a.length;i++){"
                              f"if(a[i].text.indexOf('{label_start}')===0) return gd.layout.shapes[i].y0;}}"
                              "return null;})()")


def test_tuner001_pick_sample_move_slider(dash_duo, dash_app):
    duo = start(dash_duo, dash_app)
    duo.wait_for_element(".hero", timeout=15)
    shot(duo, "home-1440", full=True)
    # pick a sample in the shell, open the Tuner: the sample's own settings come along
    pick(duo, "source-picker", "Sample · AvgShedder pairing: scores 20, 51, 52, 80, 80, 80")
    duo.find_element("#" + _esc({"path": "/tuner", "type": "nav-link"})).click()
    wait_headline(duo, "Nothing moves")
    duo.wait_for_text_to_equal(f"#{'tuner-shed'} .dash-dropdown-value", "AvgShedder", timeout=10)
    assert graph_js(duo, "tuner-fig-pairs", "gd.data.filter(function(t){return t.type==='bar'})[0].y.length") == 3
    # the BIGO sample: ThresholdShedder unloads one bundle from .206 (field findings §1.1)
    pick(duo, "source-picker", "Sample · BIGO: ThresholdShedder's first unload (5 brokers)")
    wait_headline(duo, "Unload 1 bundle from 10.0.0.206:8080")
    duo.wait_for_text_to_equal("#tuner-shed .dash-dropdown-value", "ThresholdShedder", timeout=10)
    assert abs(line_y(duo, "tuner-fig-scores", "average + threshold") - 27.35) < 0.01
    # the plan is one Markdown table: a real <table>, the bundle name literal, the outcome styled
    duo.wait_for_element("#tuner-plan .plan-md table td", timeout=10)
    cells = [td.text for td in duo.driver.find_elements(By.CSS_SELECTOR, "#tuner-plan .plan-md tbody tr:first-child td")]
    assert cells[0] == "1" and cells[2].startswith("10.0.0.206:8080 →") and cells[-1] == "unloaded"
    assert duo.driver.execute_script(
        "var b = document.querySelector('#tuner-plan .plan-md tbody td:last-child strong');"
        "return b && getComputedStyle(b).color;") == "rgb(21, 93, 63)"
    # assets/builtins.js gave the page the engine's own trim / parseFloat back (Plotly calls them per point)
    assert duo.driver.execute_script(
        "return [window.__shedlabNativeBuiltins === true, '\\u180e x\\u180e'.trim().length, ' 2.5px'.trim(),"
        " parseFloat(' 1.5e2 '), parseInt(' 42px'), Number.parseFloat === parseFloat];") == [True, 4, "2.5px", 150, 42, True]
    rev0 = graph_js(duo, "tuner-fig-scores", "gd.layout.editrevision")
    # drag the threshold slider: the label and the line follow before release (clientside) ...
    thumb = duo.find_element(f'[data-key="{THRESHOLD}"] .dash-slider-thumb')
    track = duo.find_element(f'[data-key="{THRESHOLD}"] .dash-slider-track')
    step_px = track.size["width"] / 100.0
    ActionChains(duo.driver).click_and_hold(thumb).move_by_offset(int(round(10 * step_px)), 0).perform()
    time.sleep(0.6)
    label = duo.find_element("#" + _esc({"key": THRESHOLD, "type": "tuner-key-value"})).text
    dragged = float(label.split()[0])
    assert dragged > 14
    assert abs(line_y(duo, "tuner-fig-scores", "average + threshold") - (17.35 + dragged)) < 0.05
    assert graph_js(duo, "tuner-fig-scores", "gd.layout.editrevision") == rev0  # no server round trip yet
    ActionChains(duo.driver).release().perform()
    # ... and on release the engine decides again: .206 (28.95 %) is now below the line
    wait_headline(duo, "Nothing moves")
    for _ in range(50):
        if graph_js(duo, "tuner-fig-scores", "gd.layout.editrevision") != rev0:
            break
        time.sleep(0.1)
    assert graph_js(duo, "tuner-fig-scores", "gd.layout.editrevision") != rev0
    assert f"{THRESHOLD}={int(dragged)}" in duo.driver.current_url  # the URL follows the state
    # back to 10 with the keyboard (every press is a release)
    thumb = duo.find_element(f'[data-key="{THRESHOLD}"] .dash-slider-thumb')
    for _ in range(int(dragged) - 10):
        thumb.send_keys(Keys.ARROW_LEFT)
    wait_headline(duo, "Unload 1 bundle from 10.0.0.206:8080")
    time.sleep(0.8)
    assert not duo.get_logs() or all(e["level"] != "SEVERE" for e in duo.get_logs())
    for b in duo.driver.find_elements(By.CSS_SELECTOR, ".alert-close"):  # dismiss the info alert for the README
        b.click()
    duo.driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);")
    time.sleep(0.5)
    shot(duo, "tuner-1440")
    p = shot(duo, "tuner-1440-full", full=True)
    if os.environ.get("SHEDLAB_UPDATE_SCREENSHOTS"):  # make screenshots: refresh the README's
        shutil.copy(SHOTS / "tuner-1440.png", ROOT / "docs" / "screenshots" / "tuner.png")
    assert p.exists()


def _esc(obj):
    """CSS selector for a Dash dict id."""
    s = json.dumps(obj, separators=(",", ":"), sort_keys=True)
    for ch in '{}":,/.':
        s = s.replace(ch, "\\" + ch)
    return s


def test_tuner002_broken_upload_shows_an_alert(dash_duo, dash_app, tmp_path):
    duo = start(dash_duo, dash_app, "/tuner")
    wait_headline(duo, "Unload 1 bundle")
    duo.find_element(".drawer-toggle").click()
    bad = tmp_path / "broken-snapshot.json"
    bad.write_text('{"brokers": {"b1:8080": {"cpu": {"usage": -3, "limit": 100}}}}')
    duo.driver.find_element(By.CSS_SELECTOR, "#source-upload input[type=file]").send_keys(str(bad))
    duo.wait_for_contains_text(".shell-alerts .alert-error", "broken-snapshot.json", timeout=15)
    text = duo.find_element(".shell-alerts .alert-error").text
    assert "cpu" in text
    shot(duo, "upload-broken-alert")
    # the previous state stays usable: same source, same decision, and the Tuner still reacts
    assert duo.find_element("#source-picker .dash-dropdown-value").text.startswith("Sample · BIGO")
    assert headline(duo).startswith("Unload 1 bundle")
    good = tmp_path / "broker.conf"
    good.write_text(f"{THRESHOLD}=15\nmanagedLedgerDefaultEnsembleSize=2\n")
    duo.driver.find_element(By.CSS_SELECTOR, "#source-upload input[type=file]").send_keys(str(good))
    wait_headline(duo, "Nothing moves")
    duo.wait_for_text_to_equal("#" + _esc({"key": THRESHOLD, "type": "tuner-key-value"}), "15 %", timeout=10)


def test_tuner003_permalink_reopens_the_same_state(dash_duo, dash_app):
    link = ("/tuner?src=sample:yahoo-japan-3-brokers&shed=UniformLoadShedder&place=LeastLongTermMessageRate&seed=3"
            "&loadBalancerMsgRateDifferenceShedderThreshold=60&maxUnloadPercentage=0.5")
    duo = start(dash_duo, dash_app, link)
    wait_headline(duo, "Unload")
    duo.wait_for_text_to_equal("#tuner-shed .dash-dropdown-value", "UniformLoadShedder", timeout=10)
    assert duo.find_element("#source-picker .dash-dropdown-value").text == "Sample · Yahoo Japan: three brokers, one hot"
    assert duo.find_element("#" + _esc({"key": "maxUnloadPercentage", "type": "tuner-key-value"})).text == "0.50"
    assert duo.find_element("#tuner-seed").get_attribute("value") == "3"
    first = headline(duo)
    permalink = duo.find_element("#tuner-permalink").get_attribute("value")
    assert "loadBalancerMsgRateDifferenceShedderThreshold=60" in permalink and "seed=3" in permalink
    shot(duo, "permalink-uniform")
    # a colleague (no session state) opening the copied link sees the same decision
    duo.driver.execute_script("window.sessionStorage.clear()")
    duo.driver.get("about:blank")
    duo.driver.get(permalink)
    wait_headline(duo, first)
    duo.wait_for_text_to_equal("#tuner-shed .dash-dropdown-value", "UniformLoadShedder", timeout=10)
    assert duo.find_element("#tuner-permalink").get_attribute("value") == permalink


def test_tuner004_export_report_conf_and_figures(dash_duo, dash_app):
    duo = start(dash_duo, dash_app, "/tuner?src=sample:bigo-threshold-first-unload&shed=ThresholdShedder"
                                    "&place=LeastResourceUsageWithWeight&loadBalancerDistributeBundlesEvenlyEnabled=false")
    wait_headline(duo, "Unload 1 bundle")
    downloads = Path(duo.download_path)
    duo.find_element("#tuner-report").click()
    report = _wait_file(downloads, "shedlab-report-*.html")
    html = report.read_text()
    assert "Unload 1 bundle from 10.0.0.206:8080" in html and "loadBalancerDistributeBundlesEvenlyEnabled=false" in html
    assert "<script src=" not in html and 'id="fig-broker-scores"' in html
    shutil.copy(report, SHOTS / "report-example.html") if SHOTS.exists() else None
    duo.find_element("#tuner-conf-export").click()
    conf = _wait_file(downloads, "broker.conf")
    assert "loadBalancerLoadPlacementStrategy=org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight" \
        in conf.read_text()
    duo.find_element("#tuner-export-figs").click()
    z = _wait_file(downloads, "shedlab-figures-*.zip", timeout=90)
    import zipfile

    names = zipfile.ZipFile(z).namelist()
    assert "broker-scores.png" in names and "topic-distribution.png" in names
    # show the report as a user sees it
    duo.driver.get(report.as_uri())
    time.sleep(2)
    shot(duo, "report", full=True)


def test_tuner005_cycles_why_not_and_big_cluster(dash_duo, dash_app):
    duo = start(dash_duo, dash_app, "/tuner?src=sample:avgshedder-pairing-6-brokers&shed=AvgShedder&place=AvgShedder"
                                    "&loadBalancerDistributeBundlesEvenlyEnabled=false&maxUnloadPercentage=0.5")
    wait_headline(duo, "Nothing moves")
    duo.find_element("#tuner-cycles-run").click()
    duo.wait_for_contains_text("#tuner-cycles-table", "broker-4:8080", timeout=20)
    pick(duo, "tuner-why-target", "broker · broker-6:8080")
    duo.wait_for_contains_text("#tuner-why-out", "low hits", timeout=20)
    shot(duo, "tuner-avgshedder-full", full=True)
    # 100 brokers, 10,000 bundles on a laptop screen
    duo.driver.set_window_size(1280, 800)
    duo.driver.get(duo.server_url + "/tuner?src=sample:cluster-100-brokers&shed=ThresholdShedder"
                                    "&place=LeastResourceUsageWithWeight")
    wait_headline(duo, "Unload", timeout=30)
    time.sleep(1.5)
    shot(duo, "tuner-100-brokers-1280", width=1280, height=800)
    shot(duo, "tuner-100-brokers-1280-full", full=True, width=1280, height=800)
