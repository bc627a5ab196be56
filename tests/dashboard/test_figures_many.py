"""The Tuner's figures on a large cluster: what is drawn per broker above the thresholds.

The cluster is the generated one (``engine.synth.random_snapshot``, the ``cluster-100-brokers``
recipe) at 250 brokers, uploaded as LoadData JSON (Jackson field names, ``LoadData.to_json``).
"""
import base64
import json
import re

import plotly.graph_objects as go

from dashboard import sources
from dashboard.tuner import analysis
from dashboard.figures import pairs, scores
from dashboard.figures.theme import drag_of
from dashboard.tuner.state import build_config, coerce_state
from engine.synth import NOW, random_snapshot
from layouts.tuner import decision_card


def _analysis(sid, shed, place, **values):
    raw = json.dumps(random_snapshot(250, 8, seed=100, namespaces=20, skew=0.6, now_ms=NOW).to_json()).encode()
    got = sources.ingest_files(sid, ["data:application/json;base64," + base64.b64encode(raw).decode()], ["c.json"])
    st, _ = coerce_state({"src": got.sources[0]["id"], "shed": shed, "place": place,
                          "values": {k: str(v) for k, v in values.items()}})
    cfg, _ = build_config(st)
    return analysis.analyze(sources.get_snapshot(st.src), cfg, 0), cfg


def _state_ranks(path: str) -> dict:
    """The ranks a state's path shape fills, with the height of each step: ``{rank: y}``."""
    return {round(float(h) - 0.5): float(y) for y, h in re.findall(r"V(-?[\d.e+]+)H(-?[\d.e+]+)", path)}


def test_scores_many_brokers_one_profile_and_every_involved_broker_coloured(sid):
    """Above MANY_BROKERS no bar per broker: every broker's score is one step profile on a rank axis (its
    hover names any broker with its weighted resources), the brokers the decision involves are coloured in
    it (one path shape per state, exactly their steps), and the figure says how many are summarised."""
    from dashboard.figures.theme import status_color

    a, cfg = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight")
    v = a.snap.view
    n = v.nb
    assert n > scores.MANY_BROKERS
    d = scores.broker_scores(v, a.result, cfg, a.status, rev="r").to_dict()
    go.Figure(d)  # valid plotly
    assert all(t["x"] == [None] for t in d["data"] if t["type"] == "bar")  # bars carry only the legend
    prof = d["data"][0]
    assert prof["type"] == "scatter" and prof["fill"] == "tozeroy" and prof["line"]["shape"] == "hvh"
    ranked = sorted(a.result.scores, key=lambda b: -a.result.scores[b])
    assert [c[0] for c in prof["customdata"][1:-1]] == ranked and list(prof["x"][1:-1]) == list(range(n))
    assert list(prof["y"][1:-1]) == [round(float(a.result.scores[b]), 4) for b in ranked]
    j, w = v.broker_index[ranked[0]], cfg.weights
    assert prof["customdata"][1][1] == round(float(v.cpu[j] * w[0]), 1)
    assert prof["customdata"][1][5] == round(float(v.usage_with_weight(w)[j] * 100), 1)
    assert "weighted usage now" in prof["hovertemplate"]
    # each involved broker's step in its state's colour, at its score; no "ok" broker coloured
    paths = {sh["fillcolor"]: _state_ranks(sh["path"]) for sh in d["layout"]["shapes"] if sh["type"] == "path"}
    involved = 0
    for st in ("over", "skipped", "pending", "under", "destination"):
        want = {k: prof["y"][k + 1] for k, b in enumerate(ranked) if a.status.get(b, "ok") == st}
        assert paths[status_color(st)] == want
        involved += len(want)
    assert involved > 10 and n - involved > 10
    assert any(f"the {involved:,} the decision involves coloured, the other {n - involved:,} summarised" in an["text"]
               for an in d["layout"]["annotations"])
    # the threshold lines are drawn over the states and still follow their slider
    drag = drag_of(d["layout"])
    assert "loadBalancerBrokerThresholdShedderPercentage" in drag
    assert all(d["layout"]["shapes"][sp["shape"]]["type"] == "line" for specs in drag.values() for sp in specs)


def test_scores_many_brokers_a_release_resends_no_broker_data(sid):
    """Moving the threshold changes which brokers are coloured: the patch the page gets re-sends shapes
    and annotations, never the profile's per-broker arrays, and the lines' drag specs stay the same text."""
    from dashboard import figpatch
    from dashboard.figures.theme import plain_figures

    a, cfg = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight",
                       loadBalancerBrokerThresholdShedderPercentage=10)
    cfg2 = cfg.with_values({"loadBalancerBrokerThresholdShedderPercentage": "25"})
    b = analysis.analyze(a.snap, cfg2, 0)
    assert a.status != b.status
    with plain_figures():
        old = scores.broker_scores(a.snap.view, a.result, cfg, a.status, rev=f"{sid}-10")
        new = scores.broker_scores(b.snap.view, b.result, cfg2, b.status, rev=f"{sid}-25")
    figpatch.remember("scores-test", f"{sid}-10", old)
    ops = figpatch.figure_patch("scores-test", f"{sid}-10", figpatch.as_dict(new)).to_plotly_json()["operations"]
    where = {tuple(o["location"]) for o in ops}
    assert ("layout", "shapes") in where and ("layout", "meta") not in where
    assert not [w for w in where if w[0] == "data" and w[-1] not in ("showlegend",)]


def test_before_after_many_brokers_ratios_as_text(sid):
    """Above MANY_BROKERS the max/min ratios are written in the corner, not drawn as a second panel."""
    from dashboard.figures import plan

    a, cfg = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight")
    d = plan.before_after(a.snap.view, a.before_thr, a.after_thr, a.before_rate, a.after_rate, a.status, a.ratios,
                          rev="r").to_dict()
    go.Figure(d)
    assert "xaxis2" not in d["layout"] and not [t for t in d["data"] if t.get("xaxis") == "x2"]
    assert d["layout"]["xaxis"]["domain"] == [0, 1]
    text = next(an["text"] for an in d["layout"]["annotations"] if "max / min across brokers" in an["text"])
    for name, (before, after) in a.ratios.items():
        assert f"{name}: {plan.ratio_text(before)} → {plan.ratio_text(after)}" in text
    assert len(d["data"][0]["x"]) == 40  # the brokers that change first, then the busiest, as before


def test_pairs_many_pairs_drawn_with_short_arcs(sid):
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    assert len(a.result.pairs) > pairs.MANY_PAIRS
    d = pairs.avg_pairs(a.result, cfg, a.status, rev="r").to_dict()
    go.Figure(d)
    # the three state traces carry only their legend entries; each state's arcs are one path shape with one
    # quadratic curve per pair (one SVG path per state, not one per arc)
    assert [t["x"] for t in d["data"][:3]] == [[None]] * 3
    paths = [sh for sh in d["layout"]["shapes"] if sh["type"] == "path" and sh["xref"] == "x"]
    # one per pair state, drawn or not (the number of shapes stays the same from release to release)
    assert len(paths) == 3 and all(sh["yref"] == "y" for sh in paths)
    paths = [sh for sh in paths if sh["path"] != "M0,0Z"]
    assert all(sh["fillcolor"] == "rgba(0,0,0,0)" for sh in paths)  # strokes only: an open path is filled too
    assert sum(sh["path"].count("Q") for sh in paths) == len(a.result.pairs)
    assert [sh["type"] for sh in d["layout"]["shapes"][:2]] == ["line", "line"]  # the threshold lines stay first
    by_colour = {sh["line"]["color"]: sh["path"].count("M") for sh in paths}
    want = {}
    for p in a.result.pairs:
        col = pairs.PAIR_STYLE[pairs.pair_state(p, cfg)][0]
        want[col] = want.get(col, 0) + 1
    assert by_colour == want


def test_pairs_many_pairs_gap_states_as_shapes_the_bars_unchanged(sid):
    """Above MANY_PAIRS the gap bars are one transparent, hover-only trace that does not change with the
    low threshold; each pair state's bars are one path shape of rectangles where its bars stand. Moving the
    threshold moves bars between the state shapes and re-sends no per-pair array."""
    from dashboard import figpatch
    from dashboard.figures.theme import plain_figures

    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1, loadBalancerAvgShedderLowThreshold=10)
    cfg2 = cfg.with_values({"loadBalancerAvgShedderLowThreshold": "30"})
    b = analysis.analyze(a.snap, cfg2, 0)
    with plain_figures():
        old = pairs.avg_pairs(a.result, cfg, a.status, rev=f"{sid}-10")
        new = pairs.avg_pairs(b.result, cfg2, b.status, rev=f"{sid}-30")
    go.Figure(new)
    bar = next(t for t in new["data"] if t["type"] == "bar")
    assert bar["marker"]["color"] == "rgba(0,0,0,0)" and "hovertext" not in bar
    ranked = sorted(b.result.pairs, key=lambda p: -p.gap)[:pairs.MANY_PAIRS_BARS]
    assert list(bar["y"]) == [p.gap for p in ranked]
    for fig, r, c in ((old, a.result, cfg), (new, b.result, cfg2)):
        gap_paths = {sh["fillcolor"]: sh["path"] for sh in fig["layout"]["shapes"]
                     if sh["type"] == "path" and sh["xref"] == "x2"}
        assert len(gap_paths) == 3
        top = sorted(r.pairs, key=lambda p: -p.gap)[:pairs.MANY_PAIRS_BARS]
        for st, (col, _, _) in pairs.PAIR_STYLE.items():
            # a rectangle "M k-h,0 V gap H k+h V0Z" per bar: its right edge is k + 0.375
            got = {round(float(h) - 0.375): float(y)
                   for y, h in re.findall(r"V(-?[\d.e+]+)H(-?[\d.e+]+)", gap_paths[col])}
            assert got == {k: round(p.gap, 4) for k, p in enumerate(top) if pairs.pair_state(p, c) == st and p.gap > 0}
    figpatch.remember("pairs-test", f"{sid}-10", old)
    ops = figpatch.figure_patch("pairs-test", f"{sid}-10", figpatch.as_dict(new)).to_plotly_json()["operations"]
    where = {tuple(o["location"]) for o in ops}
    assert ("layout", "shapes") in where and not [w for w in where if w[0] == "data"]
    states = lambda fig: [sh["path"] for sh in fig["layout"]["shapes"] if sh["xref"] == "x2" and sh["type"] == "path"]  # noqa: E731
    assert states(old) != states(new)  # the threshold moved pairs between states


def test_decision_card_builds_only_what_it_shows(sid, monkeypatch):
    a, _ = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight")
    over = [v for v in a.result.verdicts if v.status in ("over", "skipped") and v.reason]
    assert len(over) > 10
    import layouts.tuner as lt

    made = []
    real = lt._status_chip
    monkeypatch.setattr(lt, "_status_chip", lambda *x: made.append(x) or real(*x))
    card = decision_card(a)
    assert len(made) == 3  # the three reasons shown; the rest are text in the fold
    assert any("more reasons" in str(c) for c in card)


def test_decision_card_writes_only_the_pair_reasons_it_shows(sid):
    """AvgShedder at a low threshold: every pair fires; the card counts them all but writes the reasons of
    only those it shows (a pair's reason is formatted when first read)."""
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderLowThreshold=2,
                       loadBalancerAvgShedderHitCountLowThreshold=1, loadBalancerAvgShedderHitCountHighThreshold=1)
    pairs = a.result.pairs
    low = cfg.loadBalancerAvgShedderLowThreshold
    listed = [p for p in pairs if p.triggered or p.gap >= low]
    assert len(listed) > 70
    card = str(decision_card(a))
    written = [p for p in listed if "reason" in p.__dict__]
    assert 0 < len(written) <= 3 + 60  # the rich ones and the fold's text, not all
    n_reasons = len([v for v in a.result.verdicts if v.status in ("over", "skipped") and v.reason]) + len(listed)
    assert f"{n_reasons - 3} more reasons" in card  # counted without writing them
    assert all(p.reason for p in listed)  # and each has words when read


def test_placement_many_candidates_lowest_and_chosen(sid):
    from dashboard.figures import placement

    a, cfg = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight")
    dec = a.first_placement
    assert len(dec.scores) > placement.MANY_CANDIDATES
    d = placement.placement_scores(dec, cfg, rev="r").to_dict()
    go.Figure(d)
    bar = d["data"][0]
    drawn = bar["customdata"]
    lowest = sorted(dec.scores, key=dec.scores.get)[:placement.MANY_CANDIDATES]
    assert drawn[:placement.MANY_CANDIDATES] == lowest and dec.broker in drawn
    assert f"lowest-scored of {len(dec.scores)} candidates" in d["layout"]["annotations"][-1]["text"]
    assert {s["y0"] for s in d["layout"]["shapes"]} == {float(y) for y in dec.lines.values()}  # over every candidate


def test_pairs_gap_panel_largest_gaps(sid):
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    d = pairs.avg_pairs(a.result, cfg, a.status, rev="r").to_dict()
    bars = d["data"][-1]
    n = min(len(a.result.pairs), pairs.MANY_PAIRS_BARS)
    assert bars["y"] == sorted((p.gap for p in a.result.pairs), reverse=True)[:n]


def test_pairs_many_pairs_no_broker_dots(sid):
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    d = pairs.avg_pairs(a.result, cfg, a.status, rev="r").to_dict()
    assert [t["type"] for t in d["data"]] == ["scatter"] * 3 + ["bar"]  # three arc traces and the gap panel
    assert {t["line"]["dash"] for t in d["data"][:3]} == {"solid"}  # no dotted strokes for hundreds of arcs


def test_pairs_many_pairs_lines_move_on_release_only(sid):
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    d = pairs.avg_pairs(a.result, cfg, a.status, rev="r").to_dict()
    assert drag_of(d["layout"]) == {}
    assert {s["y0"] for s in d["layout"]["shapes"] if s["type"] == "line"} == {cfg.loadBalancerAvgShedderLowThreshold,
                                                        cfg.loadBalancerAvgShedderHighThreshold}


def test_topics_rings_the_busiest_unloaded_and_says_so(sid):
    from dashboard.figures import topics

    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    v = a.snap.view
    # above MANY_BROKERS fewer rings than on a small cluster
    limit = topics.rings_limit(v.nb)
    assert limit == topics.MANY_RINGS_LARGE < topics.MANY_RINGS == topics.rings_limit(scores.MANY_BROKERS)
    sel = sorted(v.bundles[k] for k in range(0, v.nk, 3))[:limit + 50]
    ov = topics.selected_overlay(v, sel)
    assert ov["total"] == len(sel) and len(ov["x"]) == limit
    thr = sorted((float(v.short_throughput[v.bundle_index[b]]) / 1048576 for b in sel), reverse=True)
    assert min(ov["y"]) >= thr[limit - 1] - 1e-9  # the busiest
    assert f"{limit} busiest of {len(sel)}" in topics.dots_title(True, ov)
    assert topics.dots_title(True, topics.selected_overlay(v, sel[:5])).startswith("bundle throughput per broker")


def test_scores_more_brokers_than_columns_one_bar_per_run_and_says_so(sid, monkeypatch):
    """Above MAX_COLUMNS brokers a bar stands for a run of neighbouring brokers in score order: as high
    as the run's highest score, coloured by its most pressing state; the figure says how many a bar holds."""
    from dashboard.figures import theme

    a, cfg = _analysis(sid, "ThresholdShedder", "LeastResourceUsageWithWeight")
    monkeypatch.setattr(theme, "MAX_COLUMNS", 100)  # 250 brokers -> 3 a bar, 84 bars
    d = scores.broker_scores(a.snap.view, a.result, cfg, a.status, rev="r").to_dict()
    go.Figure(d)  # valid plotly
    bar = d["data"][0]
    ranked = sorted(a.result.scores.items(), key=lambda kv: -kv[1])
    runs = [ranked[i:i + 3] for i in range(0, len(ranked), 3)]
    assert len(bar["x"]) == len(runs) == 84
    assert list(bar["y"]) == [round(run[0][1], 4) for run in runs]
    assert [c[0] for c in bar["customdata"]] == [run[0][0] for run in runs]
    states = ("over", "skipped", "pending", "under", "destination", "ok")
    worst = [min((a.status.get(b, "ok") for b, _ in run), key=states.index) for run in runs]
    drawn = {sh["fillcolor"]: sh["path"].count("M") for sh in d["layout"]["shapes"] if sh["type"] == "path"}
    want = {}
    for st, (run, y) in zip(worst, zip(runs, bar["y"])):
        if y > 0:
            want[theme.status_color(st)] = want.get(theme.status_color(st), 0) + 1
    assert drawn == want and set(worst) != {"ok"}
    assert any("3 per bar" in an["text"] for an in d["layout"]["annotations"])
    assert "3 per bar" in d["layout"]["xaxis"]["title"]["text"]
    assert "loadBalancerBrokerThresholdShedderPercentage" in drag_of(d["layout"])  # the lines follow the slider


def test_topics_more_brokers_than_columns_one_box_per_run(sid, monkeypatch):
    """Above MAX_COLUMNS brokers a box holds the bundles of a run of brokers (by throughput): its
    quartiles and min-max are those of all their bundles; the rings sit in their broker's box."""
    import numpy as np

    from dashboard.figures import theme, topics

    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    monkeypatch.setattr(theme, "MAX_COLUMNS", 100)
    monkeypatch.setattr(topics, "MANY", 100)  # 2,000 bundles drawn as boxes
    v = a.snap.view
    topics._POSITIONS.clear()
    d = topics.topic_distribution(v, selected=a.unloaded_bundles, rev="r").to_dict()
    topics._POSITIONS.clear()
    go.Figure(d)
    box = d["data"][0]
    order = np.argsort(-v.msg_throughput, kind="stable")
    assert len(box["x"]) == 84
    for i in (0, 41, 83):
        ks = np.concatenate([v.owned[j] for j in order[3 * i:3 * i + 3]])
        thr = v.short_throughput[ks] / 1048576
        got = [box[k][i] for k in ("lowerfence", "q1", "median", "q3", "upperfence")]
        assert got == [round(float(x), 4) for x in np.percentile(thr, [0, 25, 50, 75, 100])]
        assert box["text"][i].startswith(f"brokers {3 * i + 1}–{min(250, 3 * i + 3)} by throughput")
    assert "per 3 brokers" in d["layout"]["annotations"][0]["text"]
    assert "3 per box" in d["layout"]["xaxis"]["title"]["text"]
    ov = topics.selected_overlay(v, a.unloaded_bundles)
    col = {int(j): i // 3 for i, j in enumerate(order)}
    owner = {int(k): j for j in range(v.nb) for k in v.owned[j]}
    assert ov["x"]
    for b, x in zip(ov["customdata"], ov["x"]):
        assert abs(x - col[owner[v.bundle_index[b]]]) < 0.5  # in its broker's box


def test_pairs_more_than_max_arcs_draws_the_largest_gaps_and_says_so(sid, monkeypatch):
    a, cfg = _analysis(sid, "AvgShedder", "AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                       loadBalancerAvgShedderHitCountHighThreshold=1)
    monkeypatch.setattr(pairs, "MAX_ARCS", 20)
    n = len(a.result.pairs)
    d = pairs.avg_pairs(a.result, cfg, a.status, rev="r").to_dict()
    go.Figure(d)
    paths = [sh for sh in d["layout"]["shapes"] if sh["type"] == "path"]
    assert sum(sh["path"].count("Q") for sh in paths) == 20
    widest = sorted(a.result.pairs, key=lambda p: -p.gap)[:20]
    drawn = "".join(sh["path"] for sh in paths)
    assert all(f"M{p.low_score:.3f}," in drawn and f" {p.high_score:.3f}," in drawn for p in widest)
    assert any(f"the 20 largest-gap pairs of {n:,}" in an["text"] for an in d["layout"]["annotations"])


def test_score_order_is_a_stable_sort_highest_first_with_non_finite_scores_first():
    """The brokers' order on the scores figure: highest score first, a NaN or infinite score before all,
    ties (equal scores, both zeros) in the dict's order — as ``sorted`` with that key."""
    import math
    import random

    from dashboard.figures.scores import _order

    rng = random.Random(11)
    for _ in range(200):
        n = rng.choice([0, 1, 5, 40])
        scores = {f"b{i}": rng.choice([0.0, -0.0, 1.5, 1.5, 99.0, math.nan, math.inf, -math.inf, rng.random() * 100])
                  for i in rng.sample(range(1000), n)}
        want = sorted(scores, key=lambda b: -(scores[b] if math.isfinite(scores[b]) else 1e300))
        assert _order(scores) == want
