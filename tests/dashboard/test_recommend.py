"""Recommend a setting: the objective language, a study on a small History dataset that finds a setting
known to be better (checked against the plain backtest job on the held-out day), a resumed study, a
scenario study, and the command line's clear refusals."""
from __future__ import annotations

import json

import pytest

from dashboard.history.cli import main
from dashboard.history.generate import generate
from dashboard.history.objective import Measure, parse_objective
from dashboard.history.recommend import search_space
from dashboard.history.recommend_run import run_recommendation
from engine.errors import UsageError

OBJ = "min unloads_per_day; hot_unanswered(20) <= 60"
#: an eager current setting: AvgShedder at a 5-point low threshold unloads hundreds of bundles a day
CURRENT = {"loadBalancerAvgShedderLowThreshold": "5"}


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    """The shipped sample's shape: 10 brokers × 2 days with bundle metrics (fit on the first day, the
    second held out)."""
    p = tmp_path_factory.mktemp("rec") / "two-days"
    generate(p, brokers=10, days=2, seed=7, start="2026-01-05", bundles_per_broker=4)
    return p


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHEDLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _params(ds, **kw):
    p = {"dataset": str(ds), "strategy": "AvgShedder", "objective": OBJ, "trials": 10, "batch": 5,
         "set": dict(CURRENT), "ranges": ["loadBalancerAvgShedderLowThreshold=5:40"],
         "keys": ["loadBalancerAvgShedderLowThreshold"]}
    p.update(kw)
    return p


def test_objective_parses_goals_constraints_and_percentile_shorthand():
    o = parse_objective("min unloads_per_day; usage_range_p99 <= 20; max usage_range_above(30)", "scenario")
    assert [g.measure for g in o.goals] == [Measure("unloads_per_day"), Measure("usage_range_above", 30.0)]
    assert o.directions == ["minimize", "maximize"]
    (c,) = o.constraints
    assert (c.measure, c.op, c.bound) == (Measure("usage_range_p", 99.0), "<=", 20.0)
    assert o.text == "min unloads_per_day; max usage_range_above(30); usage_range_p(99) <= 20"
    assert "usage range" in o.words() and "at most 20" in o.words()
    assert o.feasible({"usage_range_p(99)": 19.5}) and not o.feasible({"usage_range_p(99)": 20.5})


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("min nonsense", "unknown measure 'nonsense'"),
    ("unloads_per_day <= 3", "no goal"),
    ("min usage_range_p99", "needs a scenario simulation"),  # a backtest does not move load
    ("min hot_unanswered", "needs a number"),
    ("fewest unloads please", "write 'min MEASURE'"),
    ("min unloads_per_day; min unloads_per_day", "twice"),
])
def test_bad_objective_is_a_clear_message(text, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(")):
        parse_objective(text, "history")


def test_search_space_keys_and_ranges():
    sp = search_space("AvgShedder")  # the spec's sweep grid keys, the grid's span widened by one step
    assert [k.key for k in sp] == ["loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHitCountLowThreshold"]
    assert sp[0].lo == 0.0 and sp[0].hi == 30.0 and sp[1].type == "int"
    with pytest.raises(UsageError, match="not a key AvgShedder reads"):
        search_space("AvgShedder", ["loadBalancerBrokerThresholdShedderPercentage"])
    with pytest.raises(UsageError, match="LO must be below HI"):
        search_space("AvgShedder", None, ["loadBalancerAvgShedderLowThreshold=9:3"])


def test_study_finds_a_better_setting_and_the_holdout_agrees_with_a_plain_backtest(ds, cache):
    res = run_recommendation(_params(ds))
    rec, cur = res["recommended"], res["current"]
    assert res["fit_days"] == ["2026-01-05"] and res["holdout_days"] == ["2026-01-06"]
    assert rec is not None and res["verdict"] == "beats-current"
    new = float(rec["values"]["loadBalancerAvgShedderLowThreshold"])
    assert new > 5  # a calmer threshold than the eager current one
    assert rec["fit"]["unloads_per_day"] < cur["fit"]["unloads_per_day"]
    assert rec["fit"]["hot_unanswered(20)"] <= 60
    assert rec["holdout"]["unloads_per_day"] < cur["holdout"]["unloads_per_day"]
    assert res["holdout"]["beats"] is True
    assert rec["broker_conf"] == f"loadBalancerAvgShedderLowThreshold={rec['values']['loadBalancerAvgShedderLowThreshold']}"
    assert any("beats the current setting" in s for s in res["explanation"])
    # the held-out numbers are the History backtest job's own: the same day, the same setting
    from dashboard.history.jobs import run_job

    for values, measured in ((rec["values"], rec["holdout"]), (CURRENT, cur["holdout"])):
        bt = run_job("backtest", ds, {"start": "2026-01-06", "end": "2026-01-06", "strategy": "AvgShedder",
                                      "set": values}, engine="pandas", use_cache=False)
        assert int(bt["events"]["n_bundles"].sum()) == pytest.approx(measured["unloads_per_day"], rel=0.01)
    # every trial is on the figure's data (complete or pruned), the recommended one on the front
    assert len(res["trials"]) + len(res["pruned"]) == 10 and rec["number"] in res["pareto"]
    # the current setting is the first trial (the space holds it): measured once, and the sampler knows it
    assert res["trials"][0]["number"] == 0 and res["trials"][0]["values"] == CURRENT
    assert res["trials"][0]["measures"] == cur["fit"] and res["study"]["runs"] == 10 + 2


def test_a_resumed_study_continues(ds, cache):
    first = run_recommendation(_params(ds, trials=4, holdout="0"))
    assert first["study"]["new_trials"] == 4 and not first["study"]["resumed"]
    again = run_recommendation(_params(ds, trials=6, holdout="0"))
    assert again["study"]["name"] == first["study"]["name"]
    st = again["study"]
    assert st["resumed"] and st["new_trials"] == 2 and st["trials"] + st["pruned"] == 6  # finished: complete or pruned
    assert again["trials"][:4] == first["trials"]  # the stored trials, not run again
    assert {t["number"] for t in again["trials"] + again["pruned"]} == set(range(6))
    assert again["study"]["runs"] == 1 + 2  # the current setting and the two new trials
    other = run_recommendation(_params(ds, trials=1, holdout="0", objective="min unload_minutes_per_day"))
    assert other["study"]["name"] != first["study"]["name"] and not other["study"]["resumed"]


def test_no_better_setting_says_so(ds, cache):
    # the current setting already unloads nothing: nothing tried can do better
    res = run_recommendation(_params(ds, trials=4, objective="min unloads_per_day",
                                     set={"loadBalancerAvgShedderLowThreshold": "100"},
                                     ranges=["loadBalancerAvgShedderLowThreshold=60:99"]))
    assert res["recommended"] is None and res["verdict"] == "no-better-setting"
    assert "keep it" in res["explanation"][0]


def test_scenario_study_with_held_out_seeds(cache):
    res = run_recommendation({"scenario": "bigo-jitter", "strategy": "ThresholdShedder", "trials": 5, "batch": 5,
                              "objective": "min unloads_per_day; usage_range_p95 <= 60", "seeds": 2,
                              "keys": ["loadBalancerBrokerThresholdShedderPercentage"], "minutes": 30})
    assert res["kind"] == "scenario" and res["strategy"] == "ThresholdShedder"
    # each of the 5 trials on the 2 fit seeds (a first batch: nothing to prune against yet; the first trial
    # is the current setting, inside the space), then the current and the recommended setting on the 2
    # held-out seeds
    assert len(res["trials"]) == 5 and res["study"]["runs"] == 2 * 5 + 2 * 2
    assert res["trials"][0]["values"] == {"loadBalancerBrokerThresholdShedderPercentage": "10"}
    # ThresholdShedder at its default 10 % keeps moving bundles on this jittery cluster; a higher
    # threshold calms it and the load spreads no worse (seeded: the same every run)
    rec, cur = res["recommended"], res["current"]
    assert res["verdict"] == "beats-current" and res["holdout"]["label"] == "seeds 3, 4"
    assert float(rec["values"]["loadBalancerBrokerThresholdShedderPercentage"]) > 10
    assert rec["holdout"]["unloads_per_day"] < cur["holdout"]["unloads_per_day"]
    assert rec["holdout"]["usage_range_p(95)"] <= 60
    spread = res["holdout"]["spread"]  # [current, recommended]: min and max over the held-out seeds
    assert len(spread) == 2 and spread[0]["unloads_per_day"][0] <= cur["holdout"]["unloads_per_day"] \
        <= spread[0]["unloads_per_day"][1]


def test_cli_recommend_json_and_bad_input_exit_2(ds, cache, capsys):
    rc = main(["recommend", str(ds), "--strategy", "AvgShedder", "--objective", OBJ, "--trials", "3",
               "--keys", "loadBalancerAvgShedderLowThreshold", "--range", "loadBalancerAvgShedderLowThreshold=5:40",
               "--set", "loadBalancerAvgShedderLowThreshold=5", "--holdout", "1d", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["study"]["trials"] == 3 and out["objective"]["text"] == OBJ
    for argv, words in ((["--objective", "min nonsense"], "unknown measure 'nonsense'"),
                        (["--objective", "min usage_range_p99"], "needs a scenario"),
                        (["--objective", OBJ, "--holdout", "2d"], "leaves no day to fit on"),
                        (["--objective", OBJ, "--trials", "0"], "--trials must be in")):
        rc = main(["recommend", str(ds)] + argv)
        err = capsys.readouterr().err
        assert rc == 2 and words in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.spark
def test_spark_trials_equal_pandas_trials(spark, ds, cache):
    """A batch of trials on Spark (groups of configs, each task reading the day files once) measures what
    the pandas pass measures, config by config."""
    from dashboard.history.objective import parse_objective
    from dashboard.history.recommend_targets import HistoryTarget
    from engine.config import LoadBalancerConfig

    obj = parse_objective("min unloads_per_day; hot_unanswered(20) <= 60; min unload_minutes_per_day")
    cfgs = [LoadBalancerConfig().with_values({"loadBalancerAvgShedderLowThreshold": str(v)}) for v in (5, 10, 20)]
    cfgs.append(cfgs[0].with_values({"loadBalancerSheddingIntervalMinutes": "3"}))
    kw = dict(bundles="synthetic", synthetic_bundles=8)
    on_spark = HistoryTarget(ds, ["2026-01-05"], "AvgShedder", engine="spark", **kw).evaluate(cfgs, obj.measures)
    on_pandas = HistoryTarget(ds, ["2026-01-05"], "AvgShedder", engine="pandas", **kw).evaluate(cfgs, obj.measures)
    assert on_spark == on_pandas and on_pandas[0]["unloads_per_day"] > on_pandas[2]["unloads_per_day"]
    # in stages (what pruning needs: one job per stage, each config's memory carried to the next): the
    # same measures after each stage and at the end, and a config stopped after the first stage is left out
    seen = {"spark": [], "pandas": []}
    got = {e: HistoryTarget(ds, ["2026-01-05"], "AvgShedder", engine=e, **kw).evaluate(
        [cfgs[0], cfgs[2]], obj.measures, judge=lambda st, j, m, e=e: seen[e].append((st, j, m)) or j == 0)
        for e in ("spark", "pandas")}
    assert got["spark"] == got["pandas"] == [None, on_pandas[2]]
    assert seen["spark"] == seen["pandas"] and [j for _st, j, _m in seen["spark"]] == [0, 1]


def test_two_goals_pick_a_point_of_the_front_that_improves_on_the_current_setting():
    """Several goals: the front is the non-dominated trials; the pick is the front's point with the largest
    summed relative improvement over the current setting, and it must beat it to be recommended."""
    from dashboard.history.recommend import _beats, _choose, _pareto

    o = parse_objective("min unloads_per_day; min hot_unanswered(20)")
    cur = {"unloads_per_day": 100.0, "hot_unanswered(20)": 10.0}
    pts = [(120, 2), (80, 12), (60, 8), (90, 9), (60, 9), (30, 40)]
    rows = [{"number": i, "measures": {"unloads_per_day": float(a), "hot_unanswered(20)": float(b)},
             "feasible": True, "distance": 0.1 * i} for i, (a, b) in enumerate(pts)]
    front = _pareto([o.values(r["measures"]) for r in rows], o.directions)
    assert front == [0, 2, 5]  # (80, 12), (90, 9) and (60, 9) are dominated by (60, 8)
    best = _choose(o, rows, cur)
    assert best["number"] == 2  # -40 % unloads and -20 % hot minutes: the largest summed gain
    assert _beats(o, best["measures"], cur) and not _beats(o, rows[5]["measures"], cur)  # 30 unloads, 4× hot


def test_hopeless_trials_are_pruned_after_the_first_stage(ds, cache):
    """One goal: the fit day is replayed in stages (the first third, then the rest); a trial whose goal
    after the first stage is worse than the finished trials' median there stops (Optuna's MedianPruner),
    stays in the study as pruned and costs only the stage it ran."""
    import optuna

    res = run_recommendation(_params(ds, trials=12, batch=3, holdout="0", objective="min unloads_per_day"))
    st = res["study"]
    assert st["pruned"] >= 1 and st["trials"] + st["pruned"] == 12
    study = optuna.load_study(study_name=st["name"], storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(st["path"])))
    states = {t.number: t.state for t in study.trials}
    assert {p["number"] for p in res["pruned"]} == {n for n, s in states.items() if s == optuna.trial.TrialState.PRUNED}
    assert not {p["number"] for p in res["pruned"]} & {t["number"] for t in res["trials"]}
    done = {t.number: t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE}
    for p in res["pruned"]:
        assert p["step"] == 0 and p["measures"]["unloads_per_day"] >= 0
        # hopeless: worse than the median of the trials that had finished before it was asked
        before = sorted(t.intermediate_values[0] for n, t in done.items() if n < p["number"] - 2)
        assert before and p["measures"]["unloads_per_day"] > before[(len(before) - 1) // 2]
    # a pruned trial replays a third of the day: the study's work is less than one backtest per trial
    assert st["replayed"] < st["runs"]


def test_stages_do_not_change_a_backtest(ds):
    """Replaying the fit day in stages (what pruning needs) measures what one pass measures."""
    from dashboard.history.recommend_targets import HistoryTarget
    from engine.config import LoadBalancerConfig

    obj = parse_objective("min unloads_per_day; hot_unanswered(20) <= 60; min unload_minutes_per_day")
    cfgs = [LoadBalancerConfig().with_values({"loadBalancerAvgShedderLowThreshold": str(v)}) for v in (5, 15)]
    tgt = HistoryTarget(ds, ["2026-01-05"], "AvgShedder")
    assert tgt.stage_cuts()
    assert tgt.evaluate(cfgs, obj.measures, judge=lambda *_a: False) == tgt.evaluate(cfgs, obj.measures)


def test_a_study_over_two_strategies_picks_the_better_one(ds, cache):
    """The strategy searched too: AvgShedder held to eager thresholds, ThresholdShedder free to calm
    down; the study picks ThresholdShedder, says so in broker.conf, and its held-out numbers are the
    plain ThresholdShedder backtest's."""
    from dashboard.history.jobs import run_job
    from dashboard.history.recommend_run import strategy_list

    assert {"AvgShedder", "ThresholdShedder"} <= set(strategy_list("any", "history"))
    assert strategy_list("AvgShedder", "history") is None
    res = run_recommendation(_params(
        ds, strategy="AvgShedder,ThresholdShedder", objective="min unloads_per_day", trials=10, batch=5, prune=False,
        keys=["loadBalancerAvgShedderLowThreshold", "loadBalancerBrokerThresholdShedderPercentage"],
        ranges=["loadBalancerAvgShedderLowThreshold=5:6", "loadBalancerBrokerThresholdShedderPercentage=60:90"]))
    assert res["strategies"] == ["AvgShedder", "ThresholdShedder"] and res["current"]["strategy"] == "AvgShedder"
    picked = {t["strategy"] for t in res["trials"]}
    assert picked == {"AvgShedder", "ThresholdShedder"}  # both were tried
    rec = res["recommended"]
    assert res["strategy"] == rec["strategy"] == "ThresholdShedder" and res["verdict"] == "beats-current"
    assert set(rec["values"]) == {"loadBalancerBrokerThresholdShedderPercentage"}
    best_avg = min(t["measures"]["unloads_per_day"] for t in res["trials"] if t["strategy"] == "AvgShedder")
    assert rec["fit"]["unloads_per_day"] < best_avg
    assert "loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder" \
        in rec["broker_conf"].splitlines()
    bt = run_job("backtest", ds, {"start": "2026-01-06", "end": "2026-01-06", "strategy": "ThresholdShedder",
                                  "set": {**CURRENT, **rec["values"]}}, engine="pandas", use_cache=False)
    assert int(bt["events"]["n_bundles"].sum()) == pytest.approx(rec["holdout"]["unloads_per_day"], rel=0.01)
    with pytest.raises(UsageError, match="not a key any of"):
        run_recommendation(_params(ds, strategy="AvgShedder,ThresholdShedder", keys=["nope"], ranges=[]))


def test_start_design_and_local_moves_stay_in_the_space():
    """The first batch is spread over the space (a Latin hypercube: each key's range cut in n strata, each
    stratum used once); a local move changes one key or more by at most a fifth of its range, stays in the
    range (an edge stops it) and never repeats a setting already tried."""
    import numpy as np

    from dashboard.history.recommend import KeyRange, _design, _local_moves, _params_key

    keys = [KeyRange("a", "int", 0, 99), KeyRange("b", "float", 0.0, 1.0, 0.01)]
    rng = np.random.default_rng(1)
    pts = _design(keys, 10, rng)
    assert len(pts) == 10
    for k in keys:
        strata = sorted(int((float(p[k.key]) - k.lo) / (k.hi - k.lo) * 10 - 1e-9) for p in pts)
        assert strata == list(range(10))  # one setting per tenth of the range
    assert all(isinstance(p["a"], int) for p in pts) and all(abs(p["b"] * 100 - round(p["b"] * 100)) < 1e-9 for p in pts)
    centre = {"a": 98, "b": 0.5}
    seen = {_params_key(centre)}
    moves = _local_moves(keys, centre, 30, rng, seen)
    assert len(moves) == 30 and len({_params_key(m) for m in moves}) == 30
    for m in moves:
        assert m != centre and 0 <= m["a"] <= 99 and 0.0 <= m["b"] <= 1.0
        assert abs(m["a"] - 98) <= 20 and abs(m["b"] - 0.5) <= 0.2 + 1e-9
    assert any(m["a"] == 99 for m in moves)  # a move past the edge stops at it
    assert all(_params_key(m) in seen for m in moves)
