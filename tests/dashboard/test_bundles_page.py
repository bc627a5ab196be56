"""Bundles page: services (:mod:`dashboard.bundles`) and figure builders (:mod:`dashboard.figures.bundles`)."""
from __future__ import annotations

import json
import os

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard import bundles as S
from dashboard.bundles import sources as BS
from dashboard.figures.bundles import MARK, namespace_layout, occupancy_comparison, split_preview
from engine import bundles as B
from engine.config import PULSAR_4_DEFAULTS
from engine.errors import InputError
from tests.dashboard.bundles_fixtures import (BROKER_STATS, BROKERS, NS, PARTITIONED_LIST, TOPICS_LIST, data_url,
                                              snapshot_json, snapshot_upload)


def _snapshot_source():
    sid, _ = S.ingest_upload(snapshot_upload(), "snap.json")
    return sid


# ------------------------------------------------------------------------------------------ config
def test_bundles_page001_threshold_ladders_hold_range_and_default():
    for spec in S.threshold_specs():
        ladder = spec["ladder"]
        assert list(ladder) == sorted(set(ladder))
        assert ladder[spec["index"]] == spec["default"] == getattr(PULSAR_4_DEFAULTS, spec["key"])
        assert spec["unit"] and spec["doc"]
    assert S.threshold_ladder("loadBalancerNamespaceBundleMaxTopics")[:4] == (0, 1, 2, 3)
    assert 128 in S.threshold_ladder("loadBalancerNamespaceMaximumBundles")


def test_bundles_page002_config_from_slider_positions():
    ladder = S.threshold_ladder("loadBalancerNamespaceBundleMaxTopics")
    cfg = S.config_from_inputs({"loadBalancerNamespaceBundleMaxTopics": ladder.index(5)},
                               B.TOPIC_COUNT_EQUALLY_DIVIDE, auto_enabled=False)
    assert cfg.loadBalancerNamespaceBundleMaxTopics == 5
    assert cfg.defaultNamespaceBundleSplitAlgorithm == B.TOPIC_COUNT_EQUALLY_DIVIDE
    assert cfg.loadBalancerAutoBundleSplitEnabled is False
    assert S.config_from_inputs() == PULSAR_4_DEFAULTS
    with pytest.raises(InputError, match="out of range"):
        S.config_from_inputs({"loadBalancerNamespaceBundleMaxTopics": 99})
    with pytest.raises(InputError, match="not a split key"):
        S.config_from_inputs({"loadBalancerBrokerMaxTopics": 0})
    with pytest.raises(InputError, match="unknown split algorithm"):
        S.config_from_inputs({}, "round_robin")


# ------------------------------------------------------------------------------------------ generated
def test_bundles_page010_default_view_is_the_vivo_layout():
    v = S.build_view()
    assert v.label == "persistent://a/b/t: 30 partitions on 180 bundles"
    assert v.layout.n_bundles == 180 and int(v.counts.sum()) == 30
    assert v.layout_source == "slider" and v.owners is None and v.msg_rate is None
    s = S.summarize(v)
    assert s.topics.mean == pytest.approx(30 / 180)
    assert s.topics.max_over_mean == pytest.approx(s.topics.max / (30 / 180))
    assert s.topics.empty == int(np.count_nonzero(v.counts == 0))
    assert s.expected.model == "partition-names" and s.expected.trials == S.TRIALS
    assert S.summarize(v) is s  # memoised: a slider moved back costs nothing


def test_bundles_page011_generated_traffic_and_bad_fields():
    v = S.build_view(partitions=4, bundles=2, rate=100, kbps=2)
    assert float(np.nansum(v.msg_rate)) == pytest.approx(400.0)
    assert float(np.nansum(v.throughput)) == pytest.approx(4 * 2 * 1024.0)
    assert "same rate" in v.traffic_note
    with pytest.raises(InputError, match="partitions must be in"):
        S.build_view(partitions=0)
    with pytest.raises(InputError, match="bundles must be in"):
        S.build_view(bundles=5000)
    with pytest.raises(InputError, match="bad namespace|namespace"):
        S.build_view(gen_namespace="a/b/c/d")
    with pytest.raises(InputError, match="must be a number"):
        S.build_view(rate="fast")
    with pytest.raises(InputError, match="not a topic source"):
        S.build_view("file:/etc/passwd")


def test_bundles_page012_vivo_comparison_30_is_lumpier_than_120():
    c = S.vivo_comparison()
    r30, r120 = c.rows
    assert (r30.partitions, r120.partitions, r30.bundles) == (30, 120, 180)
    assert r30.distribution.max_over_mean > r120.distribution.max_over_mean
    assert c.ratio_change < 1
    for r in c.rows:
        assert sum(r.occupancy) == 180
        assert sum(k * n for k, n in enumerate(r.occupancy)) == r.partitions
        assert r.expected.model == "partition-names"
    # vivo's own layout (two bundles with 4 of 30 partitions) is far above random
    assert c.reported.observed_max == 4 and c.reported.verdict == "unlucky"
    assert c.topic == "persistent://a/b/t"


# ------------------------------------------------------------------------------------------ uploads
def test_bundles_page020_topics_list_upload():
    src = S.parse_upload_bytes(TOPICS_LIST.encode(), "list.txt")
    assert len(src.topics) == 31 and src.topics.format == "topics-list" and not src.owners
    sid, label = S.ingest_upload(data_url(TOPICS_LIST.encode()), "list.txt")
    assert sid.startswith("upload:") and label == "list.txt"
    assert S.namespaces_of(sid) == ["shop/prod"]
    v = S.build_view(sid, bundles=16, options=[S.OPT_INPUT_LAYOUT])
    assert v.layout_source == "slider" and v.layout.n_bundles == 16  # a list names no bundles
    assert any("does not name a complete set of bundles" in n for n in v.notes)


def test_bundles_page021_list_partitioned_topics_expanded_with_the_partitions_slider():
    sid, _ = S.ingest_upload(data_url(PARTITIONED_LIST.encode()), "partitioned.txt")
    assert int(S.build_view(sid, partitions=30).counts.sum()) == 2  # hashed as two plain names
    v = S.build_view(sid, partitions=30, options=[S.OPT_EXPAND])
    assert int(v.counts.sum()) == 60
    assert "persistent://shop/prod/payments-partition-29" in v.layout.topics
    assert S.slider_state(sid, None, [S.OPT_EXPAND]) == (False, False)
    assert S.slider_state(sid, None, []) == (True, False)


def test_bundles_page022_broker_stats_upload_has_traffic_and_its_bundles():
    sid, _ = S.ingest_upload(data_url(json.dumps(BROKER_STATS).encode(), "application/json"), "stats.json")
    v = S.build_view(sid, options=[S.OPT_INPUT_LAYOUT])
    assert v.layout_source == "input" and v.layout.n_bundles == 2
    assert float(np.nansum(v.msg_rate)) == pytest.approx(40.0)
    assert int(v.sessions.sum()) == 3
    assert "per-topic" in v.traffic_note
    assert S.summarize(v).msg_rate is not None


def test_bundles_page023_snapshot_upload_gives_owners_and_long_term_traffic():
    sid = _snapshot_source()
    src = S.load_source(sid)
    assert src.is_snapshot and set(src.owners.values()) == set(BROKERS)
    v = S.build_view(sid, options=[S.OPT_INPUT_LAYOUT])
    assert v.layout_source == "input" and v.layout.n_bundles == 8 and int(v.counts.sum()) == 18
    assert v.owners == tuple(BROKERS[i % 3] for i in range(8))
    assert float(np.nanmax(v.msg_rate)) == pytest.approx(40_000.0)
    assert "BundleData" in v.traffic_note
    auto = S.auto_split_for(v, S.config_from_inputs())
    hot = int(np.nanargmax(v.msg_rate))
    assert list(auto.to_split) == [v.layout.bundle_names()[hot]]
    assert auto.to_split[v.layout.bundle_names()[hot]] == BROKERS[hot % 3]
    assert S.bundle_status(auto)[hot] == "split"
    # the slider's own bundles: owners unknown, said so
    v2 = S.build_view(sid, bundles=16, options=[])
    assert v2.owners is None and v2.layout.n_bundles == 16 and any("owners" in n for n in v2.notes)
    assert S.slider_state(sid, NS, [S.OPT_INPUT_LAYOUT]) == (True, True)


def test_bundles_page024_bad_uploads_name_the_problem():
    with pytest.raises(InputError, match="line 2"):
        S.parse_upload_bytes(b"persistent://a/b/ok\nnot a // valid / x / y / z\n", "bad.txt")
    with pytest.raises(InputError, match="not UTF-8"):
        S.parse_upload_bytes(b"\xff\xfe\x00garbage", "bin.dat")
    with pytest.raises(InputError, match="not valid JSON"):
        S.parse_upload_bytes(b"{\"a\": ", "broken.json")
    with pytest.raises(InputError, match="bundleTopics"):
        snap = snapshot_json()
        del snap["bundleTopics"]
        S.parse_upload_bytes(json.dumps(snap).encode(), "nobt.json")
    with pytest.raises(InputError, match="not valid JSON"):
        S.parse_upload_bytes(b'{"bundleTopics": {}, "now": NaN}', "nan.json")
    with pytest.raises(InputError, match="no topic names"):
        S.parse_upload_bytes(b"# only a comment\n\n", "empty.txt")
    with pytest.raises(InputError, match="empty"):
        S.ingest_upload(data_url(b"   \n"), "blank.txt")
    with pytest.raises(InputError, match="bad base64"):
        S.ingest_upload("data:text/plain;base64,@@@", "x.txt")
    with pytest.raises(InputError, match="did not arrive"):
        S.ingest_upload(None, "x.txt")


def test_bundles_page025_upload_size_limit_rechecked_on_the_server(monkeypatch):
    monkeypatch.setattr(BS, "MAX_UPLOAD_BYTES", 64)
    with pytest.raises(InputError, match="larger than"):
        S.ingest_upload(data_url(TOPICS_LIST.encode()), "big.txt")


def test_bundles_page026_file_name_is_a_label_never_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sid, label = S.ingest_upload(data_url(b"persistent://a/b/x\n"), "../../etc/passwd")
    assert label == "passwd"
    assert S.safe_label("C:\\Users\\me\\topics.txt") == "topics.txt"
    assert S.safe_label("\x00\x07") == "upload" and S.safe_label(None) == "upload"
    assert os.listdir(tmp_path) == []  # nothing written next to the working directory
    BS._memo.clear()  # another worker: read back from the shared cache
    assert S.load_source(sid).label == "passwd"


def test_bundles_page027_source_ids_are_checked():
    assert S.parse_source_id("gen") == ("gen", "")
    assert S.parse_source_id("upload:" + "a" * 20) == ("upload", "a" * 20)
    for bad in (None, "upload:../../x", "sample:", "gen2", "upload:" + "a" * 64):
        with pytest.raises(InputError):
            S.parse_source_id(bad)
    with pytest.raises(InputError, match="no longer on the server"):
        S.load_source("upload:" + "0" * 20)
    opts = S.source_options([{"label": "Uploaded: x", "value": "upload:" + "b" * 20}, {"value": "evil"}])
    assert opts[0]["value"] == "gen" and opts[-1]["value"] == "upload:" + "b" * 20
    assert all(o["value"] != "evil" for o in opts)


def test_bundles_page028_snapshot_sample_with_bundle_topics(monkeypatch):
    """A shipped sample with bundleTopics is offered and read like an uploaded snapshot."""
    import engine.samples
    from engine.io import load_data_from_json

    monkeypatch.setattr(BS, "_samples_with_topics", lambda: (("vivo-test", "vivo test"),))
    monkeypatch.setattr(engine.samples, "load_sample", lambda name: load_data_from_json(snapshot_json(), name))
    BS._memo.clear()
    assert {"label": "Snapshot sample: vivo test", "value": "sample:vivo-test"} in S.source_options()
    v = S.build_view("sample:vivo-test", options=[S.OPT_INPUT_LAYOUT])
    assert v.owners == tuple(BROKERS[i % 3] for i in range(8)) and S.load_source("sample:vivo-test").is_snapshot
    with pytest.raises(InputError, match="has no bundleTopics"):
        S.load_source("sample:bigo-threshold-first-unload")
    BS._memo.clear()


def test_bundles_page029_offered_samples_are_exactly_those_with_topics():
    from engine.samples import SAMPLES, load_sample

    with_topics = {f"sample:{n}" for n in SAMPLES if load_sample(n).bundle_topics}
    offered = [o for o in S.source_options() if o["value"].startswith("sample:")]
    if with_topics:
        assert {o["value"] for o in offered} == with_topics
    else:  # today: none of the shipped samples lists bundleTopics, said so in a disabled entry
        assert len(offered) == 1 and offered[0]["disabled"] and "bundleTopics" in offered[0]["label"]


# ------------------------------------------------------------------------------------------ auto split
def test_bundles_page030_auto_split_is_capped_by_maximum_bundles_on_vivos_180_bundles():
    v = S.build_view(partitions=120, bundles=180)
    ladder = S.threshold_ladder("loadBalancerNamespaceBundleMaxTopics")
    cfg = S.config_from_inputs({"loadBalancerNamespaceBundleMaxTopics": ladder.index(1)})
    st = S.bundle_status(S.auto_split_for(v, cfg))
    assert "capped" in st and "split" not in st  # 180 bundles ≥ loadBalancerNamespaceMaximumBundles 128
    big = S.config_from_inputs({"loadBalancerNamespaceBundleMaxTopics": ladder.index(1),
                                "loadBalancerNamespaceMaximumBundles":
                                    S.threshold_ladder("loadBalancerNamespaceMaximumBundles").index(4096)})
    st2 = S.bundle_status(S.auto_split_for(v, big))
    assert st2.count("split") == int(np.count_nonzero(v.counts >= 2))


# ------------------------------------------------------------------------------------------ splits
def test_bundles_page040_split_previews_every_algorithm_with_reasons():
    v = S.build_view()
    i = v.layout.most_loaded()
    res = S.split_previews(v, i, S.config_from_inputs())
    assert [r.algorithm for r in res] == list(B.SPLIT_ALGORITHMS)
    rng, tc, sp, fq = res
    lo, up = int(v.layout.boundaries[i]), int(v.layout.boundaries[i + 1])
    assert rng.ok and rng.boundaries == (lo + (up - lo) // 2,)
    assert tc.ok and lo < tc.boundaries[0] < up
    assert sp.label == "Failure" and "needs split positions" in sp.reason
    assert fq.label == "Failure" and "default algorithm" in fq.reason
    # positions inside the bundle are used; outside ones are named
    pos = [lo + (up - lo) // 4, 0xFFFFFFFE if up < 0xFFFFFFFE else 1]
    sp2 = S.split_previews(v, i, S.config_from_inputs(), pos)[2]
    assert sp2.ok and sp2.boundaries == (pos[0],) and "ignored 1 position" in sp2.reason


def test_bundles_page041_flow_or_qps_needs_traffic_and_being_the_default():
    flow = S.config_from_inputs({"loadBalancerNamespaceBundleMaxMsgRate":
                                 S.threshold_ladder("loadBalancerNamespaceBundleMaxMsgRate").index(1000)},
                                B.FLOW_OR_QPS_EQUALLY_DIVIDE)
    no_traffic = S.build_view()
    r = S.split_previews(no_traffic, no_traffic.layout.most_loaded(), flow)[3]
    assert r.label == "Skip" and "per-topic traffic" in r.reason
    hot = S.build_view(partitions=8, bundles=1, rate=600)
    r = S.split_previews(hot, 0, flow)[3]
    # 8 × 600 msg/s ≥ 1000·1.1; 600 + 600 > 1000, so every topic ends up alone: 7 cuts
    assert r.ok and len(r.boundaries) == 7
    two = S.build_view(partitions=8, bundles=1, rate=400)
    assert len(S.split_previews(two, 0, flow)[3].boundaries) == 3  # 400 + 400 ≤ 1000 < 1200: pairs


def test_bundles_page042_bundle_picker():
    v = S.build_view()
    opts = S.bundle_options(v)
    assert len(opts) == 180 and opts[0]["value"] == v.layout.most_loaded()
    assert opts[0]["label"].startswith(f"#{opts[0]['value']} 0x")
    assert S.default_split_bundle(v, 7) == 7
    assert S.default_split_bundle(v, 500) == v.layout.most_loaded()
    assert S.default_split_bundle(v, True) == v.layout.most_loaded()
    assert S.parse_positions(" 0x10000000, #20 ,010 ") == [0x10000000, 0x20, 8]
    assert S.parse_positions("") is None
    with pytest.raises(InputError, match="not a number"):
        S.parse_positions("0x1, half")


# ------------------------------------------------------------------------------------------ figures
def test_bundles_page050_layout_figure_one_bar_per_bundle():
    counts = [0, 2, 1, 5]
    ranges = B.bundle_ranges(B.initial_boundaries(4))
    fig = namespace_layout(counts, ranges, status=["ok", "ok", "ok", "split"], reasons=["", "", "", "topics 5 > 4"],
                           quantity="partitions", topic_limit=4, title="t")
    assert isinstance(fig, go.Figure)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 1 and list(bars[0].y) == counts and list(bars[0].x) == [0, 1, 2, 3]
    marks = [t for t in fig.data if t.type == "scatter"]
    assert [t.name for t in marks] == [MARK["split"][1]] and list(marks[0].x) == [3]
    texts = [a.text for a in fig.layout.annotations]
    assert "mean 2.00" in texts and "MaxTopics 4" in texts
    assert "topics 5 > 4" in bars[0].hovertext[3]
    assert fig.layout.yaxis.title.text == "partitions"


def test_bundles_page051_layout_figure_colours_owners_and_adds_traffic():
    counts = [1, 2, 3]
    ranges = B.bundle_ranges(B.initial_boundaries(3))
    fig = namespace_layout(counts, ranges, owners=["b1:8080", "b2:8080", None], msg_rate=[10.0, np.nan, 40_000.0],
                           rate_limit=30_000)
    bars = [t for t in fig.data if t.type == "bar"]
    legend = [t.name for t in bars if t.showlegend is not False]
    assert legend == ["b1", "b2", "no owner listed"]
    assert {t.yaxis for t in bars} == {"y", "y2"}
    assert all(t.width == 0.8 for t in bars)
    rate_bars = [t for t in bars if t.yaxis == "y2"]
    assert sorted(float(v) for t in rate_bars for v in t.y) == [0.0, 10.0, 40_000.0]  # NaN drawn as 0
    assert any(a.text == "MaxMsgRate 30,000" for a in fig.layout.annotations)
    assert "owner: none listed" in bars[-1].hovertext[0]


def test_bundles_page052_layout_figure_without_bundles():
    fig = namespace_layout([], [])
    assert fig.layout.annotations[0].text == "No bundles"


def test_bundles_page053_split_preview_figure():
    v = S.build_view()
    i = v.layout.most_loaded()
    lo, up = int(v.layout.boundaries[i]), int(v.layout.boundaries[i + 1])
    res = S.split_previews(v, i, S.config_from_inputs())
    hashes = v.layout.hashes[v.layout.index == i].tolist()
    fig = split_preview(lo, up, hashes, res)
    assert list(fig.layout.xaxis.range) == [lo, up]
    assert fig.layout.xaxis.ticktext[0] == B.format_bound(lo)
    assert list(fig.data[0].x) == hashes
    rows = list(fig.layout.yaxis.categoryarray)
    assert rows[-1] == "topics" and "range_equally_divide · Split" in rows
    assert "specified_positions_divide · Failure" in rows
    assert len(fig.layout.shapes) == 2  # one dotted line per accepted boundary


def test_bundles_page054_occupancy_figure_is_load_over_mean():
    c = S.vivo_comparison()
    fig = occupancy_comparison(c.rows)
    assert len(fig.data) == 2
    r30 = c.rows[0]
    assert max(fig.data[0].x) == pytest.approx(r30.distribution.max_over_mean)
    assert max(fig.data[0].x) > max(fig.data[1].x)
    assert sum(fig.data[0].y) == 180
    assert occupancy_comparison([]).layout.annotations[0].text == "Nothing to compare"
