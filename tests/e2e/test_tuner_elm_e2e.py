"""An Extensible Load Manager upload in the Tuner, in real headless Chromium.

The upload is a zip of the two ``pulsar-client consume`` outputs of the ELM's load-data topics
(``CmdConsume`` / ``AbstractCmdConsume`` print format; ``BrokerLoadData`` and ``TopBundlesLoadData``
values as Jackson writes them): ``tests/engine/extensible/data``.
"""
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.e2e.test_tuner_e2e import graph_js, shot, start, wait_headline

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromedriver (apt chromium-driver)")]

DATA = Path(__file__).resolve().parents[1] / "engine" / "extensible" / "data"


def test_elm_consume_upload_shows_transfer_shedders_decision(dash_duo, dash_app, tmp_path):
    z = tmp_path / "elm-consume.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for name in ("broker-load-data.consume.txt", "top-bundles-load-data.consume.txt"):
            zf.write(DATA / name, name)
    duo = start(dash_duo, dash_app, "/tuner")
    wait_headline(duo, "Unload 1 bundle")  # the default sample, ThresholdShedder
    duo.find_element(".drawer-toggle").click()
    duo.driver.find_element(By.CSS_SELECTOR, "#source-upload input[type=file]").send_keys(str(z))
    # the upload selects TransferShedder and the ELM's placement (the pairing rule)
    duo.wait_for_text_to_equal("#tuner-shed .dash-dropdown-value", "TransferShedder", timeout=20)
    wait_headline(duo, "Nothing moves · HitCount")
    duo.wait_for_contains_text("#tuner-ts-summary", "1 of 4", timeout=10)
    # the loads are the brokers' published weightedMaxEMA (0.8, 0.3, 0.1), not derived from their usage
    loads = graph_js(duo, "tuner-fig-scores", "gd.data[0].y")
    assert sorted(round(x, 2) for x in loads) == [10.0, 30.0, 80.0]
    # hit-count threshold 3 -> 0: the next hit sheds broker-1's bundles (its published top-K list,
    # smallest first) and swaps broker-3's bundle, reason Overloaded
    thumb = duo.find_element('[data-key="loadBalancerSheddingConditionHitCountThreshold"] .dash-slider-thumb')
    for _ in range(3):
        thumb.send_keys(Keys.ARROW_LEFT)
        time.sleep(0.15)
    wait_headline(duo, "· Overloaded")
    duo.wait_for_contains_text("#tuner-plan", "public/default/0x40000000_0x80000000", timeout=10)
    shot(duo, "tuner-elm-consume-upload", full=True)
    # the Simulator starts from the same upload (start from: the current snapshot): run A is TransferShedder
    # with the ELM placement on the ELM data, run at once
    duo.find_element('a.shell-nav-link[href="/simulator"]').click()
    duo.wait_for_contains_text("#sim-start-box", "the current snapshot", timeout=20)
    duo.driver.find_element(By.XPATH, "//*[@id='sim-start']//label[contains(., 'the current snapshot')]").click()
    duo.wait_for_contains_text("#sim-headline", "ELM snapshot", timeout=60)
    duo.wait_for_contains_text("#sim-headline", "TransferShedder + ExtensibleLeastResourceUsageWithWeight", timeout=10)
    duo.wait_for_element("#sim-summary table", timeout=10)
    assert not duo.find_elements("#sim-alert .alert-error")
    assert all(e["level"] != "SEVERE" for e in duo.get_logs() or [])
