"""The Simulator page's figure builders (pure functions of the engine's tables), tested on ``fig.to_dict()``:
valid plotly (re-built *with* validation), the data they promise, and a layout where nothing covers
the plot area."""
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.figures.simulator import (CODE_ORDER, RUN_COLORS, broker_series, cluster_figure, pick_brokers,
                                         std_figure, sweep_heatmaps, wrap)
from dashboard.simulator import checks_frame
from engine.simulator import run_scenario


@pytest.fixture(scope="module")
def avg():
    return run_scenario("bigo-homogeneous-start", preset="bigo-avgshedder", minutes=30, seed=0)


@pytest.fixture(scope="module")
def ts():
    return run_scenario("bigo-scale-out", strategy="TransferShedder", minutes=25, seed=0,
                        set={"loadBalancerBrokerLoadTargetStd": "0.1"})


def _valid(fig) -> dict:
    d = fig.to_dict()
    go.Figure(d)  # raises on any invalid property
    return d


def _y(trace):
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in trace["y"]]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None and (y is None or math.isnan(y))) or x == pytest.approx(y)


def test_simfig001_broker_series_lines_and_unload_markers(avg):
    d = _valid(broker_series(avg.brokers, avg.events, label="A · AvgShedder", color=RUN_COLORS["a"], rev="r1"))
    brokers = sorted(avg.brokers["broker"].unique())
    lines = [t for t in d["data"] if t.get("legendgroup") in brokers and t.get("line", {}).get("dash") is None]
    assert sorted(t["legendgroup"] for t in lines) == brokers
    for t in lines:  # real usage, minute by minute, from the engine's broker table
        df = avg.brokers[avg.brokers["broker"] == t["legendgroup"]]
        _same(_y(t), df["usage"].tolist())
    u = avg.events[avg.events["kind"] == "unload"]
    assert len(u)  # the scenario unloads: the figure must show it
    mk = next(t for t in d["data"] if t["name"] == "unload (source)")
    assert list(mk["x"]) == u["minute"].tolist()
    for text, reason in zip(mk["text"], u["reason"]):  # hover: the engine's reason, wrapped
        assert wrap(reason).split("<br>")[0] in text
    dest = next(t for t in d["data"] if t["name"] == "destination")
    assert all(r in text for r, text in zip(u["destination"], dest["text"]))
    lay = d["layout"]
    assert lay["meta"]["sync"] is True and lay["meta"]["rev"] == "r1"
    # nothing over the plot: the legend in its own column right of it, the title top left (the modebar
    # is top right)
    assert lay["legend"]["orientation"] == "v" and lay["legend"]["x"] >= 1 and lay["legend"]["xanchor"] == "left"
    assert lay["title"]["x"] == 0 and lay["title"]["xanchor"] == "left" and lay["title"]["yanchor"] == "bottom"
    assert "A · AvgShedder" in lay["title"]["text"]


def test_simfig002_many_brokers_pick_the_movers(avg):
    picked = pick_brokers(avg.brokers, avg.events, limit=2)
    u = avg.events[avg.events["kind"] == "unload"]
    moves = {}
    for b in list(u["broker"]) + list(u["destination"].dropna()):
        moves[b] = moves.get(b, 0) + 1
    top = sorted(moves.values(), reverse=True)[:2]
    assert sorted(moves[b] for b in picked) == sorted(top)
    d = _valid(broker_series(avg.brokers, avg.events, label="A", limit=2))
    assert "2 of 5 brokers" in d["layout"]["title"]["subtitle"]["text"]
    empty = broker_series(avg.brokers.iloc[0:0], avg.events, label="A")
    assert "No broker" in empty.to_dict()["layout"]["annotations"][0]["text"]


def test_simfig003_cluster_figure_both_runs(avg, ts):
    d = _valid(cluster_figure({"A": avg.cluster, "B": ts.cluster}, {"A": RUN_COLORS["a"], "B": RUN_COLORS["b"]}))
    for label, r in (("A", avg), ("B", ts)):
        ratio = next(t for t in d["data"] if t["name"] == label)
        _same(_y(ratio), [None if not math.isfinite(v) else v for v in r.cluster["msg_rate_ratio"]])
        cpu = next(t for t in d["data"] if t["name"] == f"{label} CPU range")
        _same(_y(cpu), r.cluster["cpu_range"].tolist())
        unl = next(t for t in d["data"] if t["name"] == f"{label} unloads")
        assert unl["y"][-1] == r.summary["unloads"]
    lay = d["layout"]
    assert lay["yaxis"]["type"] == "log" and lay["xaxis2"]["matches"] == "x" and lay["meta"]["sync"] is True


def test_simfig004_transfershedder_std_target_hits_and_codes(ts, avg):
    ck = checks_frame(ts.events)
    d = _valid(std_figure({"A · TS": (ts.cluster, ck)}, {"A · TS": ts.cluster, "B · Avg": avg.cluster},
                          {"A · TS": RUN_COLORS["a"], "B · Avg": RUN_COLORS["b"]}))
    names = [t["name"] for t in d["data"]]
    std = ts.cluster[ts.cluster["load_std"].notna()]
    load = d["data"][names.index("A load std")]
    _same(_y(load), std["load_std"].tolist())
    target = d["data"][names.index("A target (loadBalancerBrokerLoadTargetStd)")]
    assert list(target["y"]) == pytest.approx([100 * ts.config.loadBalancerBrokerLoadTargetStd] * len(target["y"]))
    # hover of each std point: the decision code of that minute's check
    codes_at = dict(zip(ck["minute"], ck["code"]))
    assert [c[0] for c in load["customdata"]] == [codes_at.get(m, "") for m in std["minute"]]
    hits = d["data"][names.index("A hit count")]
    assert list(hits["y"]) == ck["hit"].dropna().astype(int).tolist() and hits["yaxis"] == "y2"
    strip = d["data"][names.index("A decision")]
    assert list(strip["y"]) == ck["code"].tolist() and strip["yaxis"] == "y3"
    order = d["layout"]["yaxis3"]["categoryarray"]
    assert set(order) == set(ck["code"]) and order == [c for c in CODE_ORDER if c in order]
    moved = ck[ck["code"].isin(["Overloaded", "Underloaded"])]
    assert len(moved)  # a 10 % target on the scale-out: TransferShedder transfers
    tr = d["data"][names.index("A transfers")]
    assert list(tr["x"]) == moved["minute"].tolist()
    assert "B real usage std" in names and "B load std" not in names  # AvgShedder has no load std
    assert d["layout"]["xaxis2"]["matches"] == "x" and d["layout"]["meta"]["sync"] is True
    none = std_figure({}, {}, {})
    assert "Neither run uses TransferShedder" in none.to_dict()["layout"]["annotations"][0]["text"]


def test_simfig005_sweep_heatmaps():
    xs, ys = ["5", "10", "15"], ["2", "8"]
    cells = [{"x": x, "y": y, "unloads": i * 3 + j, "settled_minute": None if (i, j) == (1, 2) else 10 + i}
             for i, y in enumerate(ys) for j, x in enumerate(xs)]
    d = _valid(sweep_heatmaps(cells, "kx", xs, "ky", ys, current={"kx": "10", "ky": "8"}))
    unl, st = d["data"]
    assert np.array(unl["z"]).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert st["text"][1][2] == "never" and st["z"][1][2] is None
    assert unl["customdata"][1][2] == ["kx", "15", "ky", "8"]
    shapes = d["layout"]["shapes"]
    assert len(shapes) == 2 and shapes[0]["x0"] == 0.5 and shapes[0]["y0"] == 0.5  # the (10, 8) cell outlined
    assert not _valid(sweep_heatmaps(cells, "kx", xs, "ky", ys, current={"kx": "7", "ky": "8"}))["layout"].get("shapes")
    assert "Run a sweep" in sweep_heatmaps([], "kx", xs, "ky", ys).to_dict()["layout"]["annotations"][0]["text"]


def test_simfig006_wrap():
    text = "word " * 50
    assert all(len(line) <= 90 for line in wrap(text).split("<br>"))
    assert wrap(None) == "" and wrap(float("nan")) == ""


def test_simfig007_slider_marks_never_overlap_in_the_side_panel():
    from dashboard.keys import key_spec
    from dashboard.keys import spaced_marks

    for key in ("loadBalancerMaxNumberOfBrokerSheddingPerCycle", "loadBalanceSheddingDelayInSeconds",
                "loadBalancerAvgShedderHitCountHighThreshold", "maxUnloadPercentage"):
        spec = key_spec(key)
        lo, hi = spec.range_for(spec.default)
        marks = spec.marks(spec.default)
        kept = spaced_marks(marks, lo, hi)
        pos = sorted(float(k) for k in kept)
        assert all((b - a) / (hi - lo) >= 0.16 for a, b in zip(pos, pos[1:])), key
        assert float(spec.default) in pos  # Pulsar's default (◆) always stays
