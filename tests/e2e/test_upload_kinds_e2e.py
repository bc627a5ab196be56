"""The "+ Add data" panel, in real headless Chromium: the upload area lists every kind of file the
upload accepts, the Extensible Load Manager's data and the cluster's policy files included."""
import shutil

import pytest

from tests.e2e.browser import start

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromedriver") is None, reason="needs chromedriver (apt chromium-driver)")]


def test_upload001_the_upload_area_lists_every_accepted_kind(dash_duo, dash_app):
    duo = start(dash_duo, dash_app)
    duo.wait_for_element(".drawer-toggle", timeout=15).click()
    duo.wait_for_contains_text(".upload-kinds", "LoadData JSON", timeout=10)
    kinds = duo.find_element(".upload-kinds").text
    for kind in ("LoadData JSON", "load reports", "ZooKeeper /loadbalance dump", "timeline", "scenario (YAML/JSON)",
                 "broker.conf",
                 # the Extensible Load Manager's files (engine.extensible.readers)
                 "Extensible Load Manager data", "pulsar-client consume output", "key/value JSON lines",
                 "BrokerLoadData", "TopBundlesLoadData",
                 # the policy files dropped with a snapshot (engine.policies)
                 "policy files", "namespace isolation policies", "anti-affinity groups", "failure domains"):
        assert kind in kinds, (kind, kinds)
