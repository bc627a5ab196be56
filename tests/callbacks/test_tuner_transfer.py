"""The Tuner's TransferShedder view, as plain functions (the History hand-off: test_tuner_history.py).

Expected numbers are recomputed here from the engine's own inputs (the brokers' loads, the config),
never copied from a run.
"""
from __future__ import annotations

import json
import math

import numpy as np
import plotly

import callbacks.tuner as ct
import plotly.graph_objects as go
from dashboard import ids, sources
from dashboard.figures.theme import drag_of
from dashboard.keys import groups_for, key_spec
from dashboard.tuner.state import TunerState, build_config
from dashboard.tuner.transfer import hit_counts, start_hit_count, transfer_view
from engine.config import PULSAR_4_DEFAULTS

TS, PLACE = "TransferShedder", "ExtensibleLeastResourceUsageWithWeight"
YAHOO = "sample:yahoo-japan-3-brokers"  # one hot broker: std above the 0.25 target
BIGO = "sample:bigo-threshold-first-unload"  # five brokers within 0.25 of each other
HIT_TH = "loadBalancerSheddingConditionHitCountThreshold"


def _j(x) -> str:
    return json.dumps(x, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


def _state(src, **values):
    return TunerState(src=src, shed=TS, place=PLACE, values=tuple(sorted((k, str(v)) for k, v in values.items())))


def _expected_std(tv) -> float:
    """Population std of the loads TransferShedder compared (every broker's data is fresh here)."""
    loads = np.array(list(tv.load.values())) / 100.0
    return float(np.sqrt(np.mean(loads ** 2) - np.mean(loads) ** 2)) * 100


# ------------------------------------------------------------------------------------------ TransferShedder view
def test_ts001_view_where_it_sheds():
    st = _state(YAHOO, **{HIT_TH: 0})
    out = ct.compute(st)
    a = out["analysis"]
    tv = transfer_view(a)
    cfg, _ = build_config(st)
    assert tv is not None and tv.sheds and tv.label == "Success"
    assert math.isclose(tv.std, _expected_std(tv), rel_tol=1e-9)
    assert math.isclose(tv.target, cfg.loadBalancerBrokerLoadTargetStd * 100)
    assert tv.std > tv.target and tv.std_over_target
    assert math.isclose(tv.average, float(np.mean(list(tv.load.values()))), rel_tol=1e-9)
    # hit count "k of n": shedding needs more than the threshold (0) consecutive hits: this is hit 1 of 1
    assert (tv.hit, tv.needed) == (1, cfg.loadBalancerSheddingConditionHitCountThreshold + 1)
    # every unload carries its reason code, in the plan rows, the plan table and the headline
    codes = {d["reason"] for d in tv.decisions}
    assert tv.decisions and codes <= {"Overloaded", "Underloaded"}
    assert [r["decision"] for r in a.plan] == [d["reason"] for d in tv.decisions]
    assert {(r["source"], r["bundle"]) for r in a.plan} == {(u.broker, u.bundle) for u in a.cycle.unloads}
    plan = _j(out["plan"])
    assert "reason" in plan and all(c in plan for c in codes)
    decision = _j(out["decision"])
    assert a.headline().endswith(" · " + " / ".join(sorted(codes))) and a.headline() in decision
    assert ids.TUNER_TS_SUMMARY in decision and f"{tv.hit} of {tv.needed}" in decision
    assert f"std {tv.std:.2f} % > target {tv.target:.2f} %" in decision and "→ shedding" in decision
    # the figure: loads as bars, average ± target std lines (moved by the slider while dragging), std vs target
    fig = go.Figure(out["scores"])
    assert "→ shedding" in fig.layout.title.text
    assert any(f"hit count {tv.hit} of {tv.needed}" in a_.text for a_ in fig.layout.annotations)
    bars = fig.data[0]
    assert list(bars.y) == [round(v, 4) for v in tv.load.values()]
    anns = {a_.text.rsplit(" ", 2)[0]: a_.y for a_ in fig.layout.annotations if a_.text.endswith(" %")}
    assert math.isclose(anns["average + target std"], tv.average + tv.target, abs_tol=1e-9)
    assert math.isclose(anns["average − target std"], tv.average - tv.target, abs_tol=1e-9)
    drag = drag_of(fig.layout)["loadBalancerBrokerLoadTargetStd"]
    assert any(math.isclose(d["a"] + d["b"] * cfg.loadBalancerBrokerLoadTargetStd, tv.average + tv.target)
               for d in drag)
    std_bar = next(t for t in fig.data if t.name == "std")
    assert list(std_bar.x) == ["std now", "std after"] and std_bar.y[1] < std_bar.y[0]
    assert math.isclose(std_bar.y[1], a.result.lines["std after"], abs_tol=1e-3)


def test_ts002_view_where_it_does_not_shed():
    # balanced: std under the target, the hit count resets to 0
    out = ct.compute(_state(BIGO))
    tv = transfer_view(out["analysis"])
    assert math.isclose(tv.std, _expected_std(tv), rel_tol=1e-9) and tv.std <= tv.target
    assert not tv.sheds and tv.code == "HitCount" and tv.hit == 0 and not tv.condition
    assert tv.verdict().startswith("std under target") and "no unloads" in go.Figure(out["scores"]).layout.title.text
    assert "No bundle is unloaded this cycle: HitCount" in _j(out["plan"])
    assert "Nothing moves · HitCount" in _j(out["decision"])
    assert [t.name for t in go.Figure(out["scores"]).data if t.name == "std"] == ["std"]  # only "std now": nothing moves
    # unbalanced but the hit count is not above the threshold yet: 1 of 4, no unloads
    out = ct.compute(_state(YAHOO))
    tv = transfer_view(out["analysis"])
    th = PULSAR_4_DEFAULTS.loadBalancerSheddingConditionHitCountThreshold
    assert tv.condition and not tv.sheds and tv.code == "HitCount" and (tv.hit, tv.needed) == (1, th + 1)
    assert f"1 of {th + 1}" in _j(out["decision"]) and "condition holds" in go.Figure(out["scores"]).layout.title.text
    assert not out["analysis"].cycle.unloads


def test_ts003_run_n_cycles_builds_the_hit_count_up(trig):
    th = PULSAR_4_DEFAULTS.loadBalancerSheddingConditionHitCountThreshold
    n = th + 3
    state = _state(YAHOO).to_json()
    fig, table = trig(ct.run_cycles_cb, ids.TUNER_CYCLES_RUN, 1, None, state, n, prop="n_clicks")
    hit = next(t for t in fig.data if t.name == "hit count")
    ys = list(hit.y)
    assert len(ys) == n and hit.yaxis == "y3"
    first = next(i for i, k in enumerate(ys) if k > th)  # the first cycle above the threshold sheds
    assert ys[:first + 1] == list(range(1, first + 2)) and first == th
    assert fig.layout.annotations and any(f"HitCountThreshold {th}" in a.text for a in fig.layout.annotations)
    text = _j(table)
    assert f"{th + 1} of {th + 1}" in text and "Success" in text and "HitCount" in text
    # the same counts from the engine's own memory: the state after each Skip, the previous + 1 at a Success
    from dashboard.tuner.analysis import run_cycles

    snap = sources.get_snapshot(YAHOO)
    cycles = run_cycles(snap, build_config(TunerState.from_json(state))[0], 0, n)
    assert cycles[first].shedding.label == "Success" and cycles[first].unloads
    assert all(c.shedding.state["unloadConditionHitCount"] == k for c, k in zip(cycles[:first], ys))
    assert hit_counts(cycles, start_hit_count(snap.ld)) == ys


def test_ts004_sliders_for_every_key_transfershedder_reads():
    keys = [k for g in groups_for(TS, PLACE) for k in g.keys]
    for k in ("loadBalancerBrokerLoadTargetStd", HIT_TH, "loadBalancerMaxNumberOfBrokerSheddingPerCycle",
              "loadBalancerTransferEnabled", "loadBalanceSheddingDelayInSeconds", "loadBalancerBrokerLoadDataTTLInSeconds",
              "loadBalancerDebugModeEnabled", "loadBalancerSheddingGracePeriodMinutes",
              "loadBalancerSheddingIntervalMinutes", "loadBalancerMaxNumberOfBundlesInBundleLoadReport"):
        assert k in keys, k
        assert key_spec(k).default == getattr(PULSAR_4_DEFAULTS, k)
    from layouts.tuner import controls

    text = _j(controls(_state(YAHOO)))
    assert "Load manager" in text and "default 0.25" in text and "default 3 hits" in text
