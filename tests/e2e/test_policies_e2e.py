"""The cluster's policies in the Tuner, in real headless Chromium: the home card of the
isolation-groups sample opens the Tuner, whose decision card says which policy constrained the
placement and why each broker was excluded."""
import shutil

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.browser import shot, start

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromedriver (apt chromium-driver)")]


def test_policies001_explanation_names_the_policy(dash_duo, dash_app):
    duo = start(dash_duo, dash_app)
    duo.wait_for_element(".hero", timeout=15)
    card = duo.driver.find_element(By.XPATH, "//a[contains(@class,'sample-card')]"
                                             "[.//div[contains(text(),'Isolation groups and an anti-affinity')]]")
    assert "broker-3 with them, broker-7 without" in card.text
    card.click()
    duo.wait_for_contains_text(".decision-headline", "to broker-3:8080", timeout=20)
    duo.wait_for_contains_text(".decision-policies", "Cluster policies: 2 isolation policies", timeout=10)
    box = duo.find_element(".decision-policies").text
    assert "namespace isolation `payments`" in box
    assert ("broker-7:8080 excluded: namespace acme/payments-a is isolated by policy `payments` to primary brokers "
            "`broker-[0-3].*`") in box
    assert "broker-1:8080 excluded: already serves 1 namespace(s) of anti-affinity group `payments-ha`" in box
    # the scores figure marks each broker's isolation group
    names = duo.driver.execute_script(
        "var gd = document.querySelector('#tuner-fig-scores .js-plotly-plot') || "
        "document.querySelector('.js-plotly-plot');"
        "return gd.data.filter(function(t){return t.legendgroup==='groups';}).map(function(t){return t.name;});")
    assert set(names) == {"primary: payments", "primary: analytics", "shared"}
    shot(duo, "tuner-policies")
