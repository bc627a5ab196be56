"""The field findings, number by number: every figure of the articles stays within its
tolerance, and docs/findings.md / the README's findings section are what the command generates now.

Every finding runs at full length once per module (about 20 s on 2 cores: the month of
bigo-production-month is ~15 s of it, the two vivo days ~1 s each).
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from engine.cli import main
from engine.simulator import findings as F
from engine.simulator.findings import FINDINGS, Figure, evaluate, run_findings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def results():
    return run_findings()


def test_fnd001_every_figure_within_its_tolerance(results):
    assert len(results) >= 30
    bad = [(r.finding.id, r.figure.text, r.figure.article, r.value, r.figure.tolerance) for r in results if not r.ok]
    assert bad == []


def test_fnd002_docs_and_readme_are_what_the_command_generates(results):
    assert (ROOT / "docs" / "findings.md").read_text(encoding="utf-8") == F.findings_markdown(results)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert F.replace_readme_block(readme, F.readme_block(results)) == readme


def test_fnd003_vivo_partitions_make_the_difference(results):
    by = {(r.finding.id, r.figure.metric): r.value for r in results}
    few, many = by[("vivo-30-partitions", "unloads_per_day")], by[("vivo-120-partitions", "unloads_per_day")]
    assert few >= 10 * many  # the article: ~200 vs ~10 a day
    # vivo's settings are the scenario's: ThresholdShedder, split off, CPU/memory/direct-memory weights 0
    from engine.simulator import load_scenario
    cfg = load_scenario(F.finding_path(FINDINGS["vivo-30-partitions"])).lb_config()
    assert cfg.shedding_strategy == "ThresholdShedder"
    assert not cfg.loadBalancerAutoBundleSplitEnabled
    assert (cfg.loadBalancerCPUResourceWeight, cfg.loadBalancerMemoryResourceWeight,
            cfg.loadBalancerDirectMemoryResourceWeight) == (0, 0, 0)


def test_fnd004_a_figure_out_of_range_fails():
    fig = Figure("a", "x", 8.0, 6.0, 10.0, "unloads")
    assert evaluate(fig, 7.0) and evaluate(fig, 10.0)
    assert not evaluate(fig, 11.0) and not evaluate(fig, None) and not evaluate(fig, math.nan)


def test_fnd005_every_invented_detail_is_written_in_its_scenario_file():
    for f in FINDINGS.values():
        if f.scenario.startswith("findings/"):
            text = F.finding_path(f).read_text(encoding="utf-8")
            assert "INVENTED DETAILS" in text, f.id


def test_fnd006_cli_check_and_usage(tmp_path, capsys):
    out = tmp_path / "findings.md"
    out.write_text("stale\n")
    assert main(["findings", "--finding", "bigo-cpu-spike", "--json"]) == 0
    assert '"within": 2' in capsys.readouterr().out
    assert main(["findings", "--check", "--finding", "bigo-cpu-spike"]) == 2  # --check runs everything
    assert main(["findings", "--finding", "nope"]) == 2
    assert "unknown finding 'nope'" in capsys.readouterr().err
    # --check on a stale file: reported, not rewritten (the full --check run is test_fnd002's comparison)
    from engine.cli.findings import _write_or_check
    assert _write_or_check(out, "new\n", True) == [str(out)] and out.read_text() == "stale\n"
    assert _write_or_check(out, "stale\n", True) == []
    assert _write_or_check(out, "new\n", False) == [] and out.read_text() == "new\n"


def test_fnd007_avgshedder_never_raises_the_max_min_ratio(results):
    """Why bigo-avgshedder-heterogeneous has a start state of its own: AvgShedder moves at most
    (rate(hot) - rate(cool)) x maxUnloadPercentage from the hotter broker of a pair, so its moves never
    raise the cluster's max/min message rate. On bigo-heterogeneous-4x (max/min 2.5 at start) the ratio
    never grows (2 % traffic noise aside), while on the calibrated start it stays at the article's ~11
    with .34 the least used broker."""
    from engine.simulator import load_scenario, run_scenario

    r = run_scenario(load_scenario(F.finding_path(FINDINGS["bigo-heterogeneous"])), seed=0,
                     **F.side_kwargs(F.AVGSHEDDER))
    start = float(r.cluster["msg_rate_ratio"].iloc[0])
    assert float(r.cluster["msg_rate_ratio"].max()) <= start * 1.05
    by = {(r_.finding.id, r_.figure.text): r_.value for r_ in results}
    assert by[("bigo-avgshedder-heterogeneous", "max/min message rate reaches")] >= 9.5
    assert by[("bigo-avgshedder-heterogeneous", ".34 is still the least used broker")] == 1.0
