"""Pulsar release lines: each behaviour switches on the release, with an input per row on which the
decision differs (the inputs and old/new decisions of the reference's §2.6, read from upstream's code at
each release; the 40-broker comparator input was run through Java 17's own ``Arrays.sort``)."""
from __future__ import annotations

import io
import json
import contextlib
from pathlib import Path

import pytest

from engine.cli import main
from engine.config import LoadBalancerConfig, PULSAR_5_DEFAULTS, changed_keys, parse_broker_conf, to_broker_conf
from engine.errors import InputError
from engine.release_examples import EXAMPLES, MORE
from engine.releases import (BEHAVIOURS, LATEST, LINES, defaults_for, parse_version, release, version_from_reports)

ROOT = Path(__file__).resolve().parents[2]

#: releases on both sides of every patch boundary in the table, plus each line's first and latest
PROBES = sorted({f"{ln}.0" for ln in LINES} | set(LATEST.values()) | {
    f"{ln}.{int(v.rsplit('.', 1)[1]) + d}" for b in BEHAVIOURS for ln, v in b.since.items()
    if v not in (None, "all") for d in (-1, 0)})


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


# ------------------------------------------------------------------------------ the table itself
def test_release_parsing_and_latest_patch():
    assert release("4.0").version == LATEST["4.0"]
    assert release("4.0.8-SNAPSHOT").version == "4.0.8"
    assert release("v3.3.2").line == "3.3"
    for bad in ("2.11.0", "4", "x.y", "4.0.8; rm", "9" * 200):
        with pytest.raises(InputError):
            release(bad)
    assert parse_version("5.0.1") == ("5.0", 1)


@pytest.mark.parametrize("version, expected", [
    ("4.0.7", False), ("4.0.8", True), ("4.1.1", False), ("4.1.2", True), ("4.2.0", True), ("3.0.17", False),
    ("3.3.9", False), ("5.0.0", True)])
def test_comparator_rows(version, expected):
    assert release(version).has("avg_shedder_double_comparator") is expected


def test_every_behaviour_has_an_example_that_differs():
    for b in BEHAVIOURS:
        if b.name == "split_skips_stale_bundles":
            continue  # the split check sees only the snapshot's bundles: same on every line (docs say so)
        assert b.name in EXAMPLES, b.name


#: start-up rows share their examples (which fallback runs depends on several rows): tested one by one below
STARTUP = {"avg_shedder_available", "avg_shedder_pairing_check", "bad_pair_refused", "avg_placement_falls_back"}


@pytest.mark.parametrize("behaviour", [b for b in BEHAVIOURS if b.name in EXAMPLES and b.name not in STARTUP],
                         ids=lambda b: b.name)
def test_each_row_switches_on_every_line(behaviour):
    """Every probed release decides the row's example as the releases with (or without) the behaviour do,
    and the two decisions differ."""
    fns = [EXAMPLES[behaviour.name]] + MORE.get(behaviour.name, [])
    for fn in fns:
        by_side = {True: set(), False: set()}
        for v in PROBES:
            r = release(v)
            if _startup_blocks(fn, r):
                continue
            by_side[r.has(behaviour.name)].add(fn(v))
        assert len(by_side[True]) == 1 and len(by_side[False]) == 1, (fn.__name__, by_side)
        assert by_side[True] != by_side[False]


def _startup_blocks(fn, r) -> bool:
    """An AvgShedder example on a release whose start-up never runs AvgShedder (its own rows cover that)."""
    avg = fn.__name__.startswith("avg_comparator") or fn.__name__ == "avg_plans"
    return avg and not (r.has("avg_shedder_available") and r.has("avg_shedder_pairing_check"))


# --------------------------------------------------------------------- decisions from the reference
def test_avg_shedder_truncating_comparator_pairs_with_the_map_order():
    fn = EXAMPLES["avg_shedder_double_comparator"]
    assert fn("4.0.7") == "b5 pairs with b2 (gap 39.6)"     # 30.9 and 30.2 compare equal; b2 iterates first
    assert fn("4.0.8") == "b5 pairs with b3 (gap 40.3)"
    assert fn("4.1.1") == fn("4.0.7") and fn("4.1.2") == fn("4.0.8")


def test_avg_shedder_sort_that_throws_fails_the_cycle_and_keeps_the_counters():
    from engine.managers import make_manager
    from engine.release_examples import _THROWS, _bundles
    from engine.synth import make_snapshot

    ld = make_snapshot({f"b{i:02d}": dict(cpu=s, bundles=_bundles(f"b{i:02d}-", 2)) for i, s in enumerate(_THROWS)})
    cfg = defaults_for("4.0.7").with_values({"loadBalancerLoadSheddingStrategy": "AvgShedder",
                                             "loadBalancerLoadPlacementStrategy": "AvgShedder"})
    lm = make_manager(ld, cfg, seed=1)
    c1, c2 = lm.run_cycles(2)
    for c in (c1, c2):
        assert c.shedding.label == "Failure"
        assert "Comparison method violates its general contract!" in c.shedding.reason
        assert "Error during the load shedding" in c.shedding.reason
        assert not c.unloads
    assert lm.shedding.hit_low == {} and lm.shedding.hit_high == {}
    ok = make_manager(ld, cfg.with_values({"pulsarVersion": "4.0.8"}), seed=1).run_cycles(1)[0]
    assert ok.shedding.label != "Failure" and ok.shedding.pairs


def test_overload_tests_unweighted_before_4_0():
    assert EXAMPLES["weighted_overload"]("3.3.6").startswith("unloads t/ns/h")   # 0.90 >= 0.85 unweighted
    assert EXAMPLES["weighted_overload"]("4.0.0") == "nothing unloaded"         # direct weight 0
    lltmr = MORE["weighted_overload"][0]
    assert lltmr("3.0.7").endswith(" B") and lltmr("4.0.8").endswith(" A")


def test_uniform_tolerance_before_4_1():
    assert EXAMPLES["uniform_without_delta"]("4.0.14") == "unloads t/ns/a from b-max to b-min"
    assert EXAMPLES["uniform_without_delta"]("4.1.0") == "nothing unloaded"


def test_weight_defaults_by_line():
    from engine.release_examples import weight_defaults

    assert defaults_for("3.0").weights[1] == 1.0 and defaults_for("3.0").loadBalancerMemoryResourceWeight == 1.0
    assert defaults_for("3.3").weights[1] == 0.0 and defaults_for("3.3").loadBalancerMemoryResourceWeight == 1.0
    assert defaults_for("4.0").loadBalancerMemoryResourceWeight == 0.0
    assert weight_defaults("3.0") == "A sheds"     # A at 80 % with direct memory weighted 1.0
    assert weight_defaults("3.3") == "B sheds"     # direct memory weight 0: B at 60 %


def test_pip357_and_excluded_namespaces_are_keys_of_their_releases():
    cfg3 = defaults_for("3.3").with_values({"loadBalancerBandwidthOutResourceWeight": "0"})
    cfg4 = defaults_for("4.0").with_values({"loadBalancerBandwidthOutResourceWeight": "0"})
    assert cfg3.bandwidth_out_weight == 1.0 and cfg4.bandwidth_out_weight == 0.0
    ex = {"loadBalancerSheddingExcludedNamespaces": "t/critical"}
    assert defaults_for("4.0.10").with_values(ex).excluded_namespaces == frozenset()
    assert defaults_for("4.0.11").with_values(ex).excluded_namespaces == {"t/critical"}
    assert EXAMPLES["excluded_namespaces"]("4.0.10").startswith("unloads t/critical")
    assert "t/critical" not in EXAMPLES["excluded_namespaces"]("4.1.0")


def test_transfer_shedder_rows():
    assert EXAMPLES["topk_rounding_compare"]("4.0.6") == "top bundle t/ns/A"    # within 100 KB/s in: out decides
    assert EXAMPLES["topk_rounding_compare"]("4.0.7") == "top bundle t/ns/B"    # round(10.9) = 11 > 10
    assert EXAMPLES["transfer_skip_zero_throughput"]("4.0.0") == "reports t/ns/busy, t/ns/idle"
    assert EXAMPLES["transfer_skip_zero_throughput"]("4.0.1") == "reports t/ns/busy"
    assert EXAMPLES["version_filter_build_metadata"]("4.2.4") == "candidates b1, b2"
    assert EXAMPLES["version_filter_build_metadata"]("5.0.1") == "candidates b2"
    assert EXAMPLES["transfer_underload_by_throughput"]("3.0.4").endswith("nothing moves")
    assert EXAMPLES["transfer_underload_by_throughput"]("3.0.5") == "b3 is underloaded: transfers b1 -> b3"


@pytest.mark.parametrize("version, expect", [
    ("3.0.5", "runs SimpleLoadManagerImpl (not modelled)"), ("3.0.7", "runs SimpleLoadManagerImpl (not modelled)"),
    ("3.0.8", "runs AvgShedder + AvgShedder"), ("3.3.2", "runs SimpleLoadManagerImpl (not modelled)"),
    ("3.3.3", "runs AvgShedder + AvgShedder")])
def test_avg_shedder_start_up(version, expect):
    assert EXAMPLES["avg_shedder_available"](version) == expect


@pytest.mark.parametrize("version, expect", [
    ("4.0.11", "runs SimpleLoadManagerImpl (not modelled)"), ("4.0.12", "the broker refuses to start"),
    ("4.1.3", "runs SimpleLoadManagerImpl (not modelled)"), ("4.2.3", "the broker refuses to start"),
    ("5.0.0", "runs ThresholdShedder + LeastLongTermMessageRate")])
def test_bad_pair_by_release(version, expect):
    assert EXAMPLES["bad_pair_refused"](version) == expect


def test_plans_by_name_is_said_not_silently_ignored():
    assert EXAMPLES["avg_shedder_plans_by_name"]("4.2.4") == "plans by BundleData value"
    assert "not modelled" in EXAMPLES["avg_shedder_plans_by_name"]("4.2.5")


def test_shedding_without_avg_shedder_on_an_old_release_falls_back_to_overload_shedder():
    from engine.managers import make_manager
    from engine.samples import load_sample

    cfg = defaults_for("3.0.5").with_values({"loadBalancerLoadSheddingStrategy": "AvgShedder"})
    lm = make_manager(load_sample("yahoo-japan-3-brokers"), cfg, seed=1)
    assert lm.shedding.name == "OverloadShedder"
    assert any("OverloadShedder instead" in n for n in lm.run_cycles(1)[0].shedding.notes)


# ------------------------------------------------------------------------------------- the config
def test_pulsar_5_preset_is_the_5_0_line():
    assert PULSAR_5_DEFAULTS.pulsarVersion == LATEST["5.0"]
    assert PULSAR_5_DEFAULTS == defaults_for("5.0")


def test_version_is_no_broker_conf_line_and_changes_are_against_the_release():
    cfg = defaults_for("3.0").with_values({"maxUnloadPercentage": "0.5"})
    assert to_broker_conf(cfg) == "maxUnloadPercentage=0.5\n"     # 3.0's own weights are its defaults
    assert set(changed_keys(cfg)) == {"maxUnloadPercentage"}
    parsed = parse_broker_conf("pulsarVersion=3.0\nmaxUnloadPercentage=0.3\n")
    assert parsed.config.pulsarVersion == LoadBalancerConfig().pulsarVersion
    assert ("pulsarVersion", "3.0") in parsed.unknown


# --------------------------------------------------------------------- read from data, the command line
def test_rolling_upgrade_decides_as_the_leader_or_asks():
    r = version_from_reports({"a": "4.0.7", "b": "4.0.8", "c": None})
    assert r.mixed and r.chosen is None and "4.0.7: a" in r.note and r.unknown == ("c",)
    assert version_from_reports({"a": "4.0.7", "b": "4.0.8"}, leader="a").chosen == "4.0.7"
    assert version_from_reports({"a": "2.10.1"}).chosen is None


def _mixed_snapshot(tmp_path):
    doc = json.loads((ROOT / "samples/snapshots/yahoo-japan-3-brokers.json").read_text())
    ids = list(doc["brokers"])
    doc["brokers"][ids[0]]["brokerVersionString"] = "4.0.7"
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(doc))
    return path, ids


def test_cli_reads_the_version_from_the_brokers(tmp_path):
    rc, out = _run(["shed", str(ROOT / "samples/snapshots/yahoo-japan-3-brokers.json"), "--json"])
    got = json.loads(out)
    assert rc == 0 and got["pulsar_version"] == "4.1.0" and "brokerVersionString" in got["release_note"]
    path, ids = _mixed_snapshot(tmp_path)
    rc, _ = _run(["shed", str(path), "--json"])
    assert rc == 2                                                        # mixed, leader unknown: ask
    rc, out = _run(["shed", str(path), "--json", "--leader", ids[0]])
    assert rc == 0 and json.loads(out)["pulsar_version"] == "4.0.7"
    rc, out = _run(["shed", str(path), "--json", "--pulsar-version", "3.0"])
    assert rc == 0 and json.loads(out)["pulsar_version"] == LATEST["3.0"]


@pytest.mark.parametrize("command", [
    ["place", "samples/snapshots/yahoo-japan-3-brokers.json", "--bundle", "t/ns/0x00000000_0x40000000"],
    ["replay", "samples/snapshots"],
    ["simulate", "samples/scenarios/hot-bundle.yaml", "--minutes", "3"]])
def test_every_engine_command_takes_the_version(command):
    argv = [str(ROOT / a) if a.startswith("samples/") else a for a in command]
    rc, _ = _run(argv + ["--pulsar-version", "3.3.6", "--json"])
    assert rc == 0
    rc, _ = _run(argv + ["--pulsar-version", "2.9"])
    assert rc == 2


def test_releases_command_compares_and_docs_are_current():
    from engine.cli.releases import markdown

    rc, out = _run(["releases", "--compare", "4.0.7", "4.0.8", "--json"])
    names = {d["behaviour"] for d in json.loads(out)["differences"]}
    assert rc == 0 and names == {"avg_shedder_double_comparator"}
    rc, out = _run(["releases", "--compare", "3.0", "5.0", "--json"])
    assert {"weighted_overload", "uniform_without_delta", "pip357_keys"} <= {
        d["behaviour"] for d in json.loads(out)["differences"]}
    doc = (ROOT / "docs/releases.md").read_text()
    assert doc == markdown(), "docs/releases.md is stale: python -m engine releases --markdown > docs/releases.md"
