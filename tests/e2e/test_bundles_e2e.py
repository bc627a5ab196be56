"""Bundles page in real headless Chromium: the vivo layout renders, the partitions slider and the vivo
button change the max/mean text, a screenshot is saved for review."""
import re
import shutil
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which("chromedriver"), reason="chromedriver not on PATH")]

ROOT = Path(__file__).resolve().parents[2]
SHOT = ROOT / "artifacts" / "screenshots" / "bundles.png"


def _ratio(text: str) -> str:
    m = re.search(r"max/mean\s+([0-9.,]+)", text)
    assert m, text
    return m.group(1)


def _page_errors(logs):
    """Browser errors, except another page's callback naming an id that only exists on that page
    (other pages are tested by their own tests; an error about a ``bundles-`` id still fails here)."""
    out = []
    for entry in logs:
        m = re.search(r"nonexistent object was used in an `\w+` of a Dash callback. The id of this object is `([^`]+)`",
                      entry.get("message", ""))
        if m and not m.group(1).startswith("bundles-"):
            continue
        out.append(entry)
    return out


def test_bundles_e2e001_slider_and_vivo_change_max_over_mean(dash_duo):
    from selenium.webdriver.common.keys import Keys

    from app import app

    dash_duo.start_server(app)
    dash_duo.driver.set_window_size(1440, 1600)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/bundles")
    # defaults reproduce vivo: 1 topic, 30 partitions, 180 bundles
    dash_duo.wait_for_contains_text("#bundles-source-info", "30 partitions on 180 bundles", timeout=20)
    dash_duo.wait_for_contains_text("#bundles-maxmean", "max/mean", timeout=20)
    before = _ratio(dash_duo.find_element("#bundles-maxmean").text)
    dash_duo.wait_for_element("#bundles-layout-graph .main-svg", timeout=20)
    dash_duo.wait_for_contains_text("#bundles-split-table", "range_equally_divide", timeout=20)

    # move the partitions slider with the keyboard (ten steps per Page Up): 30 -> 120; each key press
    # commits a value (Dash's slider commits keyboard steps even in mouseup mode), so few presses
    handle = dash_duo.find_element("#bundles-partitions [role='slider']")
    handle.click()
    for _ in range(9):
        handle.send_keys(Keys.PAGE_UP)
    dash_duo.wait_for_text_to_equal("#bundles-partitions-label", "120", timeout=10)
    dash_duo.wait_for_contains_text("#bundles-source-info", "120 partitions on 180 bundles", timeout=20)
    after = _ratio(dash_duo.find_element("#bundles-maxmean").text)
    assert after != before

    # one click: back to 30 partitions, and 30 vs 120 side by side
    dash_duo.find_element("#bundles-vivo").click()
    dash_duo.wait_for_contains_text("#bundles-compare", "120 partitions on 180 bundles", timeout=20)
    dash_duo.wait_for_contains_text("#bundles-source-info", "30 partitions on 180 bundles", timeout=20)
    dash_duo.wait_for_contains_text("#bundles-compare", "unlucky", timeout=20)
    assert _ratio(dash_duo.find_element("#bundles-maxmean").text) == before
    dash_duo.wait_for_element("#bundles-compare .main-svg", timeout=20)

    # the whole page in one image: grow the window to the document, let the graphs re-lay out
    height = dash_duo.driver.execute_script("return document.documentElement.scrollHeight")
    dash_duo.driver.set_window_size(1440, min(int(height) + 160, 4000))
    dash_duo.driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(1.0)
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    dash_duo.driver.save_screenshot(str(SHOT))
    assert SHOT.stat().st_size > 10_000
    assert _page_errors(dash_duo.get_logs()) == []
