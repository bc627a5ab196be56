"""Pegasus page in real headless Chromium: the plan of the default sample renders, no JS errors."""
import shutil

import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which("chromedriver"), reason="chromedriver not on PATH")]


def test_pegasus_e2e001_page_shows_the_plan_and_steps(dash_duo):
    import app as shedlab

    dash_duo.start_server(shedlab.app)
    dash_duo.wait_for_page(url=f"{dash_duo.server_url}/pegasus")
    dash_duo.wait_for_contains_text("#pegasus-summary", "stopped: balanced", timeout=20)
    dash_duo.wait_for_contains_text("#pegasus-step-label", "Step 18 of 18", timeout=20)
    dash_duo.wait_for_contains_text("#pegasus-proposals", "copy_sec", timeout=20)
    dash_duo.wait_for_contains_text("#pegasus-health", "fully healthy", timeout=20)
    assert dash_duo.get_logs() == []
