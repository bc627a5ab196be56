"""The self-contained HTML report and the Kaleido image export."""
import io
import re
import shutil
import zipfile

import pytest

from dashboard import export, sources
from dashboard.tuner import analysis, whynot
from dashboard.tuner.state import build_config, coerce_state


def _a():
    st, _ = coerce_state({"src": sources.DEFAULT_SOURCE, "shed": "ThresholdShedder", "place": "LeastResourceUsageWithWeight",
                          "values": {"loadBalancerDistributeBundlesEvenlyEnabled": "false",
                                     "loadBalancerBrokerThresholdShedderPercentage": "9"}})
    cfg, _ = build_config(st)
    return st, analysis.analyze(sources.get_snapshot(st.src), cfg, 0)


def test_export001_report_is_self_contained():
    st, a = _a()
    cycles = analysis.run_cycles(a.snap, a.config, 0, 3)
    html = export.build_report(a, st, permalink="http://127.0.0.1:8050/tuner?src=x", cycles=cycles,
                               whynot=whynot.explain(a, "10.0.0.32:8080"))
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"<script[^>]+src=", html) and "<link" not in html  # nothing loaded from elsewhere
    assert "Plotly.newPlot" in html or "Plotly.react" in html
    for name in ("broker-scores", "placement", "before-after", "topic-distribution", "cycles"):
        assert f'id="fig-{name}"' in html
    # the config diff, the broker.conf lines, the decision and its reasons, why-not
    assert "<code>loadBalancerBrokerThresholdShedderPercentage</code></td><td>10</td><td><b>9</b>" in html
    assert "loadBalancerDistributeBundlesEvenlyEnabled=false" in html
    assert "Unload 1 bundle from 10.0.0.206:8080" in html and "offload at least" in html
    assert "assign randomly as all 5 brokers are overloaded" in html
    assert "Why not? — 10.0.0.32:8080" in html


def test_export002_figure_list_follows_the_strategy():
    _, a = _a()
    assert "avgshedder-pairs" not in export.tuner_figures(a)
    st, _ = coerce_state({"src": "sample:avgshedder-pairing-6-brokers", "shed": "AvgShedder", "place": "AvgShedder"})
    cfg, _ = build_config(st)
    b = analysis.analyze(sources.get_snapshot(st.src), cfg, 0)
    assert "avgshedder-pairs" in export.tuner_figures(b)


@pytest.mark.e2e
@pytest.mark.skipif(not export.browser_path(), reason="needs Chromium for Kaleido")
def test_export003_kaleido_png_and_svg_zip():
    _, a = _a()
    figs = export.tuner_figures(a)
    png = export.figure_image(figs["broker-scores"][1], "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    z = zipfile.ZipFile(io.BytesIO(export.figures_zip({"placement": figs["placement"]}, "svg")))
    assert z.namelist() == ["placement.svg"] and b"<svg" in z.read("placement.svg")[:400]
    with pytest.raises(ValueError):
        export.figure_image(figs["placement"][1], "gif")


def test_export004_browser_path():
    p = export.browser_path()
    assert p is None or shutil.which(p) or p.startswith("/")
