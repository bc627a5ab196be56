"""The Tuner decides as the release the data reports (or the one picked), with that release's defaults,
and compares the decision with another release (an upgrade)."""
from __future__ import annotations

from callbacks.tuner_releases import compare_release
from dashboard.tuner.release_diff import release_diff, release_options
from dashboard.tuner.service import load
from dashboard.tuner.state import TunerState

SRC = "sample:avgshedder-pairing-6-brokers"     # its brokers report brokerVersionString 4.1.0


def test_release_read_from_the_data_or_picked():
    assert load(TunerState(src=SRC)).config.pulsarVersion == "4.1.0"
    got = load(TunerState(src=SRC).with_values({"pulsarVersion": "3.0"}))
    assert got.config.pulsarVersion == "3.0.17"
    assert got.config.loadBalancerDirectMemoryResourceWeight == 1.0      # 3.0's default, not 4.x's 0


def test_upgrade_diff_names_the_decisions_and_the_behaviour():
    st = TunerState(src=SRC, shed="UniformLoadShedder", place="LeastLongTermMessageRate").with_values(
        {"pulsarVersion": "4.0.14"})
    d = release_diff(st, "4.1")
    assert (d["a"], d["b"]) == ("4.0.14", "4.1.3") and not d["same"]
    assert d["a_text"] != d["b_text"] and "sheds" in d["a_text"]
    assert "uniform_without_delta" in [n for n, _pr, _t in d["behaviours"]]
    same = release_diff(st.with_values({"pulsarVersion": "4.0.12"}), "4.0.11")
    assert same["same"] and [n for n, _pr, _t in same["behaviours"]] == ["bad_pair_refused"]


def test_compare_callback_and_options():
    st = TunerState(src=SRC, shed="UniformLoadShedder", place="LeastLongTermMessageRate").with_values(
        {"pulsarVersion": "4.0.14"})
    out = compare_release("4.1.0", st.to_json())
    text = repr(out)
    assert "a different decision on 4.0.14 and 4.1.0" in text and "uniform_without_delta" in text
    assert compare_release("", st.to_json()) == []
    assert compare_release("9.9", st.to_json()) == []                       # not a release: nothing
    values = [o["value"] for o in release_options()]
    assert values[0] == "" and {"4.0.7", "4.0.8", "4.1.1", "4.1.2", "5.0.1"} <= set(values)


def test_simulator_and_history_pickers_carry_the_release_into_the_runs():
    from callbacks.release_pickers import pick_history_release, pick_release, with_release_line
    from dashboard.history.jobs import config_from_params, normalise_params
    from dashboard.history.service import parse_overrides
    from engine.simulator import run_scenario

    text = pick_release("4.0.7", "maxUnloadPercentage=0.4\npulsarVersion=3.0")
    assert text == "pulsarVersion=4.0.7\nmaxUnloadPercentage=0.4"
    assert pick_release("", text) == "maxUnloadPercentage=0.4" and pick_release("junk", "") == ""
    res = run_scenario("hot-bundle", minutes=2, set={"pulsarVersion": "3.0", "maxUnloadPercentage": "0.4"})
    assert res.config.pulsarVersion == "3.0.17" and res.config.loadBalancerDirectMemoryResourceWeight == 1.0
    assert res.config.maxUnloadPercentage == 0.4
    overrides = pick_history_release("3.3", "maxUnloadPercentage=0.4")
    p = normalise_params("backtest", {"strategy": "ThresholdShedder", "set": parse_overrides(overrides)})
    cfg = config_from_params(p)
    assert cfg.pulsarVersion == "3.3.9" and cfg.loadBalancerMemoryResourceWeight == 1.0
    assert cfg.maxUnloadPercentage == 0.4 and with_release_line(None, "") == ""
