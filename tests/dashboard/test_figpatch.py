"""Figures sent as patches: applied to the figure the page shows, they give exactly the new figure."""
import copy

from dashboard import figpatch
from dashboard.tuner.analysis import analyze
from dashboard.figures.pairs import avg_pairs
from dashboard.figures.scores import broker_scores
from dashboard.figures.theme import inline_template
from dashboard.sources import get_snapshot
from engine.config import LoadBalancerConfig


def apply(fig: dict, patch) -> dict:
    """What the browser does with a Patch (Assign operations only: all figure_patch emits)."""
    out = copy.deepcopy(fig)
    for op in patch.to_plotly_json()["operations"]:
        assert op["operation"] == "Assign"
        *path, last = op["location"]
        node = out
        for k in path:
            node = node[k]
        node[last] = op["params"]["value"]
    return out


def _figs(low: float):
    snap = get_snapshot("sample:avgshedder-pairing-6-brokers")
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
        "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
        "loadBalancerAvgShedderLowThreshold": str(low)})
    a = analyze(snap, cfg, 0)
    return (broker_scores(snap.view, a.result, cfg, a.status, rev=f"s{low}"),
            avg_pairs(a.result, cfg, a.status, rev=f"p{low}"))


def test_figpatch001_patch_turns_the_shown_figure_into_the_new_one():
    (s1, p1), (s2, p2) = _figs(15), _figs(35)
    for name, old, new, rev in (("scores", s1, s2, "s15"), ("pairs", p1, p2, "p15")):
        shown = figpatch.remember(name, rev, old)
        fresh = figpatch.remember(name, rev + "-new", new)
        patch = figpatch.figure_patch(name, rev, fresh)
        assert patch is not None
        assert apply(shown, patch) == fresh
        where = [tuple(o["location"]) for o in patch.to_plotly_json()["operations"]]
        assert ("layout", "editrevision") in where
        # arrays that did not change are not re-sent: the browser keeps them (only the pairs' arcs move
        # between their state traces when the low threshold changes)
        moved = {w[1] for w in where if w[0] == "data" and w[-1] in ("x", "y")}
        lines = {i for i, t in enumerate(fresh["data"]) if t.get("mode") == "lines"}
        assert moved <= lines and (moved or name == "scores")


def test_figpatch002_whole_figure_when_the_page_shows_something_unknown_or_other_traces():
    s1, _ = _figs(15)
    new = figpatch.as_dict(s1)
    assert figpatch.figure_patch("scores", "never-sent", new) is None
    assert figpatch.figure_patch("scores", None, new) is None
    figpatch.remember("scores", "short", {"data": new["data"][:1], "layout": new["layout"]})
    assert figpatch.figure_patch("scores", "short", new) is None  # trace count differs


def test_figpatch003_lines_are_always_resent():
    s1, _ = _figs(15)
    d = figpatch.remember("scores", "same", s1)
    where = [tuple(o["location"]) for o in figpatch.figure_patch("scores", "same", d).to_plotly_json()["operations"]]
    assert set(where) == {("layout", "shapes"), ("layout", "annotations")}


def test_figpatch004_plain_figures_are_the_same_figure_without_the_go_figure():
    import json

    import plotly.utils

    from dashboard.figures.theme import plain_figures

    snap = get_snapshot("sample:avgshedder-pairing-6-brokers")
    cfg = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
        "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"})
    a = analyze(snap, cfg, 0)
    norm = lambda f: json.loads(json.dumps(f, cls=plotly.utils.PlotlyJSONEncoder))  # noqa: E731
    for build in (lambda: broker_scores(snap.view, a.result, cfg, a.status, rev="r"),
                  lambda: avg_pairs(a.result, cfg, a.status, rev="r")):
        with plain_figures():
            plain = build()
        fig = build()
        assert isinstance(plain, dict) and not isinstance(fig, dict)
        # the same figure, its template written into the layout (dashboard.figures.theme.inline_template)
        fj = norm(fig.to_plotly_json())
        assert "template" not in plain["layout"] and plain["layout"]["xaxis"]["linecolor"] == "#d0d7de"
        assert norm(plain) == norm({"data": fj["data"], "layout": inline_template(fj["data"], fj["layout"])})
