"""Figure builders, tested on ``fig.to_dict()``: valid plotly (re-built *with* validation), the
lines they promise, and the drag specs the clientside code applies."""
import base64

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard import sources
from dashboard.tuner import analysis
from dashboard.figures import cycles, pairs, placement, plan, scores, topics
from dashboard.figures.theme import STATUS, drag_of, empty_figure, short_name_map, short_names
from dashboard.tuner.state import build_config, coerce_state
from engine.samples import SAMPLES


def _a(name, shed=None, place=None, **values):
    cfgv = {k: str(v) for k, v in SAMPLES[name].config.items()}
    st, _ = coerce_state({"src": f"sample:{name}", "shed": shed, "place": place, "values": {**cfgv, **values}})
    cfg, _ = build_config(st)
    return analysis.analyze(sources.get_snapshot(st.src), cfg, 0)


def _valid(fig) -> dict:
    d = fig.to_dict()
    go.Figure(d)  # raises on any invalid property
    assert d["layout"]["editrevision"] is not None
    return d


def _arr(v):
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v)


def _line(d, text_start):
    anns = d["layout"]["annotations"]
    i = next(i for i, a in enumerate(anns) if a["text"].startswith(text_start))
    return i, anns[i]


def test_fig001_threshold_scores_lines_and_shares():
    a = _a("bigo-threshold-first-unload")
    d = _valid(scores.broker_scores(a.view, a.result, a.config, a.status, rev=a.rev))
    bars = [t for t in d["data"] if t["type"] == "bar"]
    assert {t["name"] for t in bars[1:] if t["showlegend"]} == {"sheds load", "receives a bundle", "within the lines"}  # legend
    score = bars[0]
    k = score["x"].index("10.0.0.206")
    assert score["marker"]["color"][k] == STATUS["over"][0] and score["hovertext"][k].startswith("sheds load<br>")
    assert abs(score["y"][k] - 28.95) < 0.01  # the history score BIGO logged
    # highest score first: the bars' own order (no categoryarray, see scores._xaxis)
    assert score["x"][0] == "10.0.0.206" and d["layout"]["xaxis"]["categoryorder"] == "trace"
    assert "categoryarray" not in d["layout"]["xaxis"]
    names = {t["name"] for t in d["data"] if t["type"] == "scatter"}
    assert {"CPU × 1", "bandwidth in × 1", "bandwidth out × 1", "weighted usage now"} <= names
    i, ann = _line(d, "average + threshold")
    assert abs(d["layout"]["shapes"][i]["y0"] - 27.35) < 0.01
    spec = drag_of(d["layout"])["loadBalancerBrokerThresholdShedderPercentage"]
    plus = next(s for s in spec if s["label"] == "average + threshold")
    assert plus["shape"] == i and plus["ann"] == i and plus["b"] == 1
    assert abs(plus["a"] + plus["b"] * 10 - 27.35) < 0.01  # at the current value the spec gives the drawn line
    j, _ = _line(d, "overload (placement retry)")
    assert drag_of(d["layout"])["loadBalancerBrokerOverloadedThresholdPercentage"][0]["shape"] == j


def test_fig002_uniform_two_rows_and_min_lines():
    a = _a("yahoo-japan-3-brokers", "UniformLoadShedder", "LeastLongTermMessageRate")
    d = _valid(scores.broker_scores(a.view, a.result, a.config, a.status, rev=a.rev))
    assert {t.get("yaxis") for t in d["data"]} == {"y", "y2"}
    drag = drag_of(d["layout"])
    rate = drag["loadBalancerMsgRateDifferenceShedderThreshold"][0]
    assert abs(rate["a"] + rate["b"] * 50 - d["layout"]["shapes"][rate["shape"]]["y0"]) < 1e-6
    assert d["layout"]["annotations"][rate["ann"]]["text"].startswith("min × (1 + threshold)")
    thr = drag["loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold"][0]
    assert d["layout"]["shapes"][thr["shape"]]["yref"] == "y2"


def test_fig003_avg_pairs_links_with_k_of_n():
    a = _a("avgshedder-pairing-6-brokers")
    d = _valid(pairs.avg_pairs(a.result, a.config, a.status, rev=a.rev))
    texts = [x["text"] for x in d["layout"]["annotations"]]
    assert "gap 60.0 · high 1 of 2 · low 1 of 8" in texts  # the 80 paired with the 20 (field findings §1.3)
    arcs = {t["name"].split(":")[0]: t for t in d["data"] if t["type"] == "scatter" and t.get("mode") == "lines"}
    counting = arcs["gap ≥ low"]
    assert counting["line"]["color"] == STATUS["pending"][0]
    assert counting["x"].count(None) == 3  # three arcs, all counting hits
    assert arcs["triggered"]["x"] == [None] and arcs["gap < low"]["x"] == [None]
    first = counting["x"][:counting["x"].index(None)]
    assert first[0] == 20.0 and first[-1] == 80.0 and min(first) == 20.0 and max(first) == 80.0  # the 20 with an 80
    ys = counting["y"][:counting["x"].index(None)]
    assert max(ys) > ys[0] and max(ys) > ys[-1]  # an arc, not a straight line
    gaps = next(t for t in d["data"] if t["type"] == "bar")
    assert sorted(gaps["y"]) == [28.0, 29.0, 60.0]
    low = drag_of(d["layout"])["loadBalancerAvgShedderLowThreshold"][0]
    assert d["layout"]["shapes"][low["shape"]]["y0"] == 15 and d["layout"]["annotations"][low["ann"]]["text"] == "low 15"
    # after 2 cycles the 60-point pair triggers
    snap = sources.get_snapshot("sample:avgshedder-pairing-6-brokers")
    cyc = analysis.run_cycles(snap, a.config, 0, 2)[-1]
    d2 = _valid(pairs.avg_pairs(cyc.shedding, a.config, analysis.broker_status(cyc), rev="x"))
    assert any(c == STATUS["over"][0] for c in next(t for t in d2["data"] if t["type"] == "bar")["marker"]["color"])
    assert "Pairs are drawn for AvgShedder" in pairs.avg_pairs(None, a.config, {}).to_dict()["layout"]["annotations"][0]["text"]


def test_fig004_placement_band_and_random_draw():
    a = _a("bigo-threshold-first-unload")
    dec = a.first_placement
    d = _valid(placement.placement_scores(dec, a.config, rev=a.rev))
    bar = d["data"][0]
    assert "chosen" in bar["text"] and dec.random
    band = drag_of(d["layout"])["loadBalancerAverageResourceUsageDifferenceThresholdPercentage"][0]
    assert abs(band["a"] + band["b"] * 10 - d["layout"]["shapes"][band["shape"]]["y0"]) < 1e-9
    assert any("random draw among 5" in x["text"] for x in d["layout"]["annotations"])
    assert "No bundle is placed" in placement.placement_scores(None, a.config).to_dict()["layout"]["annotations"][0]["text"]


def test_fig005_before_after_and_ratios():
    a = _a("bigo-threshold-first-unload")
    d = _valid(plan.before_after(a.view, a.before_thr, a.after_thr, a.before_rate, a.after_rate, a.status, a.ratios,
                                 rev=a.rev))
    before, after = d["data"][:2]
    assert np.isclose(sum(before["y"]), sum(after["y"]))
    k = before["x"].index("10.0.0.206")
    assert after["y"][k] < before["y"][k] and after["marker"]["color"][k] == STATUS["over"][0]
    rb, ra = d["data"][3:]
    assert d["data"][2]["x"] == [None] and d["data"][2]["name"].startswith("after")  # legend of the after bars
    assert rb["xaxis"] == "x2" and rb["text"][0] == f"{a.ratios['msg rate'][0]:,.2f}×"
    assert ra["y"][1] == pytest.approx(a.ratios["throughput"][1])
    assert plan.ratio_text(None).startswith("∞")
    big = _a("cluster-100-brokers", "ThresholdShedder", "LeastLongTermMessageRate")
    d = _valid(plan.before_after(big.view, big.before_thr, big.after_thr, big.before_rate, big.after_rate, big.status,
                                 big.ratios, rev="r"))
    shown = set(d["data"][0]["x"])
    assert len(shown) == 40 and {u.broker.split(".")[0] for u in big.cycle.unloads} <= shown  # every changed broker


def test_fig006_topics_overlay_and_many_bundles():
    a = _a("bigo-threshold-first-unload")
    d = _valid(topics.topic_distribution(a.view, {a.unloaded_bundles[0]: ["persistent://t/n/a"]},
                                         selected=a.unloaded_bundles, rev=a.rev))
    assert d["data"][topics.OVERLAY_TRACE]["name"] == "unloaded this cycle"
    rings = d["layout"]["shapes"]
    assert len(a.unloaded_bundles) == 1 and len(rings) == 1 and rings[0]["path"].count("Z") == 1
    assert len(_arr(d["data"][0]["y"])) == 40
    assert topics.selected_overlay(a.view, [])["x"] == []
    big = _a("cluster-100-brokers", "ThresholdShedder", "LeastLongTermMessageRate")
    d = _valid(topics.topic_distribution(big.view, None, selected=big.unloaded_bundles, rev="r"))
    box = d["data"][0]  # 10,000 bundles: one box of precomputed quartiles per broker
    assert box["type"] == "box" and len(box["q1"]) == 100 and all(a <= b <= c for a, b, c in zip(box["q1"], box["median"], box["q3"]))
    assert d["layout"]["shapes"][0]["path"].count("Z") == len(big.unloaded_bundles)
    # each ringed bundle where the strip draws it: its column and short-term throughput, in the given
    # order; names the view does not know are left out, a name given twice is ringed twice
    v = big.view
    sel = list(big.unloaded_bundles[:20]) + ["no/such/0x00000000_0x10000000", big.unloaded_bundles[0]]
    ov = topics.selected_overlay(v, sel)
    _, x, owner, _ = topics._layout_positions(v)
    want = [(float(x[v.bundle_index[b]]), float(v.short_throughput[v.bundle_index[b]]) / 1048576, b)
            for b in sel if b in v.bundle_index and owner[v.bundle_index[b]] >= 0]
    assert list(zip(ov["x"], ov["y"], ov["customdata"])) == want and ov["total"] == len(want) == 21
    assert d["layout"]["xaxis"]["showticklabels"] is False and "tickvals" not in d["layout"]["xaxis"]  # 100 names


def test_fig007_cycles_hit_counts():
    snap = sources.get_snapshot("sample:avgshedder-pairing-6-brokers")
    a = _a("avgshedder-pairing-6-brokers")
    cs = analysis.run_cycles(snap, a.config, 0, 4)
    d = _valid(cycles.cycles_figure(cs, a.config, rev="r"))
    assert "yaxis3" in d["layout"]
    unl = next(t for t in d["data"] if t.get("name") == "unload")
    assert unl["x"][0] == 2
    t = _a("bigo-threshold-first-unload")
    d = _valid(cycles.cycles_figure(analysis.run_cycles(t.snap, t.config, 0, 5), t.config, rev="r"))
    assert "yaxis3" not in d["layout"] and any(x.get("name") == "average + threshold" for x in d["data"])


@pytest.mark.parametrize("shed,place", [("OverloadShedder", "LeastLongTermMessageRate"),
                                        ("TransferShedder", "ExtensibleLeastResourceUsageWithWeight"),
                                        ("AvgShedder", "LeastResourceUsageWithWeight")])
def test_fig008_every_strategy_draws(shed, place):
    for name in ("yahoo-japan-3-brokers", "cluster-100-brokers"):
        a = _a(name, shed, place)
        _valid(scores.broker_scores(a.view, a.result, a.config, a.status, rev=a.rev))
        _valid(placement.placement_scores(a.first_placement, a.config, rev=a.rev))
        _valid(pairs.avg_pairs(a.result, a.config, a.status, rev=a.rev))


def test_fig009_small_helpers():
    assert short_names(["10.0.0.1:8080", "10.0.0.2:8080"]) == ["10.0.0.1", "10.0.0.2"]
    assert short_names(["b-1.example:8080", "b-2.example:8080"]) == ["b-1", "b-2"]
    assert short_names(["a:1", "b:2"]) == ["a:1", "b:2"]
    # the map form: the same short name per broker, whatever the order, kept per broker set
    for brokers in (["b-2.example:8080", "b-1.example:8080", "b-3.example:8080"], ["a:1", "b:2"], ["solo.x:1"],
                    ["10.0.0.1:8080", "10.0.0.2:8081", "10.0.0.1:8080"]):
        m = short_name_map(brokers)
        assert m == dict(zip(brokers, short_names(brokers)))
        assert short_name_map(list(reversed(brokers))) is m
    d = _valid(empty_figure("nothing", rev="r"))
    assert d["layout"]["annotations"][0]["text"] == "nothing"
