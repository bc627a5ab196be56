"""Bundles page callbacks called as plain functions."""
from __future__ import annotations

import json
import re

import pytest
from dash import no_update

import app  # noqa: F401  (registers the pages and callbacks, builds the validation layout)
from callbacks import bundles as cb
from dashboard import bundles as S
from dashboard.bundles import sources as BS
from dashboard import ids
from engine import bundles as B
from tests.dashboard.bundles_fixtures import data_url, snapshot_upload

SPECS = S.threshold_specs()
TH_IDS = [ids.bundles_threshold(s["key"]) for s in SPECS]
TH_DEFAULT = [s["index"] for s in SPECS]


def text_of(component) -> str:
    """All text inside a Dash component tree."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return " ".join(text_of(c) for c in component)
    return text_of(getattr(component, "children", None))


def ratio(component) -> float:
    m = re.search(r"max/mean\s+([0-9.,]+)", text_of(component))
    assert m, text_of(component)
    return float(m.group(1).replace(",", ""))


def layout_call(source="gen", namespace=None, topic="t", gen_ns="a/b", rate=None, kbps=None, partitions=30,
                bundles=180, options=(), algorithm=B.RANGE_EQUALLY_DIVIDE, auto=("on",), th=None, split=None):
    view = {"source": source, "namespace": namespace, "topic": topic, "gen_ns": gen_ns, "rate": rate, "kbps": kbps,
            "partitions": partitions, "bundles": bundles, "options": list(options)}
    config = {"algorithm": algorithm, "auto_enabled": list(auto), "th_values": th or TH_DEFAULT, "th_ids": TH_IDS}
    out = cb.show_layout(view, config, split)
    return tuple(out[k] for k in ("figure", "headline", "metrics", "auto", "info", "split_options", "split_bundle",
                                  "alert"))


def split_call(bundle, options=None, positions="", force=(), source="gen", namespace=None, partitions=30,
               bundles=180, algorithm=B.RANGE_EQUALLY_DIVIDE, th=None, rate=None):
    view = {"source": source, "namespace": namespace, "topic": "t", "gen_ns": "a/b", "rate": rate, "kbps": None,
            "partitions": partitions, "bundles": bundles, "options": []}
    config = {"algorithm": algorithm, "auto_enabled": ["on"], "th_values": th or TH_DEFAULT, "th_ids": TH_IDS}
    out = cb.show_split(bundle, positions, list(force), view, config, options=options)
    return out["figure"], out["table"]


def test_bundles_cb001_page_is_registered_with_its_ids():
    import layouts

    assert ("bundles", "/bundles", "Bundles") in layouts.PAGES
    page_ids = {v for k, v in ids.all_ids().items() if k.startswith("BUNDLES_")}
    assert all(v.startswith("bundles-") for v in page_ids)
    assert len(page_ids) == len(set(page_ids))


def test_bundles_cb010_default_layout_reproduces_vivo():
    fig, head, metrics, auto, info, opts, value, alert = layout_call()
    assert alert is None
    bars = [t for t in fig.data if t.type == "bar"]
    assert sum(len(t.x) for t in bars) == 180
    assert "30 partitions on 180 bundles" in text_of(info)
    assert ratio(head) == pytest.approx(12.0)  # max 2 partitions / mean 1/6, for persistent://a/b/t
    assert "0 of 180 bundles would split" in text_of(auto)
    assert "Gini" in text_of(metrics) and "empty bundles" in text_of(metrics)
    assert value == opts[0]["value"]  # the busiest bundle is previewed


def test_bundles_cb011_vivo_comparison_through_the_partitions_slider():
    r30 = ratio(layout_call(partitions=30)[1])
    r120 = ratio(layout_call(partitions=120)[1])
    assert r30 > r120


def test_bundles_cb012_vivo_button_sets_the_sliders_and_compares_side_by_side():
    partitions, bundles, source, compare, alert = cb.vivo_compare(1, "t", "a/b")
    assert (partitions, bundles, source, alert) == (30, 180, "gen", no_update)
    cards = [c for c in compare.children[1].children]
    assert [text_of(c).split(" on ")[0] for c in cards] == ["30 partitions", "120 partitions"]
    r30, r120 = ratio(cards[0]), ratio(cards[1])
    assert r30 > r120
    note = text_of(compare)
    assert "unlucky" in note and "× 0.50" in note  # 12.00 → 6.00 for persistent://a/b/t
    assert "max/mean 24.00" in note  # vivo's reported layout: 4 / (30/180)


def test_bundles_cb013_vivo_button_with_a_bad_namespace_alerts():
    out = cb.vivo_compare(1, "t", "not a namespace!")
    assert out[:4] == (no_update,) * 4
    assert "Cannot compare" in text_of(out[4])


def test_bundles_cb020_bad_upload_alerts_and_keeps_the_source():
    bad = data_url(b"persistent://a/b/fine\nthis / is / not / a / topic\n")
    options, value, alert, contents = cb.upload_topics(bad, "topics.txt", S.source_options())
    assert options is no_update and value is no_update
    assert contents is None  # the same file can be dropped again after fixing it
    msg = text_of(alert)
    assert msg.startswith("Not loaded: topics.txt") and "line 2" in msg
    assert alert.role == "alert"


def test_bundles_cb021_upload_too_large_alerts(monkeypatch):
    monkeypatch.setattr(BS, "MAX_UPLOAD_BYTES", 16)
    _, value, alert, _ = cb.upload_topics(data_url(b"persistent://a/b/t\n" * 4), "big.txt", S.source_options())
    assert value is no_update and "larger than" in text_of(alert)


def test_bundles_cb022_good_upload_is_selected_and_listed():
    options, value, alert, contents = cb.upload_topics(snapshot_upload(), "/tmp/../snap.json", S.source_options())
    assert alert is None and contents is None and value.startswith("upload:")
    assert options[-1] == {"label": "Uploaded: snap.json", "value": value}
    again, value2, _, _ = cb.upload_topics(snapshot_upload(), "snap.json", options)
    assert value2 == value and sum(o["value"] == value for o in again) == 1
    assert cb.upload_topics(None, None, options) == (no_update,) * 4


def test_bundles_cb023_source_change_shows_the_right_fields():
    assert cb.source_changed("gen", None) == ("bundles-gen", "bundles-hidden", [], None)
    sid, _ = S.ingest_upload(snapshot_upload(), "snap.json")
    gen_cls, box_cls, opts, ns = cb.source_changed(sid, "other/ns")
    assert (gen_cls, box_cls, ns) == ("bundles-hidden", "bundles-source-box", "vivo/ns")
    assert opts == [{"label": "vivo/ns", "value": "vivo/ns"}]
    assert cb.source_changed("upload:" + "0" * 20, None)[2] == []  # expired upload: show_layout alerts
    assert cb.slider_state(sid, "vivo/ns", [S.OPT_INPUT_LAYOUT]) == (True, True)
    assert cb.slider_state("gen", None, []) == (False, False)


def test_bundles_cb024_snapshot_layout_is_coloured_by_owner_and_flags_the_hot_bundle():
    sid, _ = S.ingest_upload(snapshot_upload(), "snap.json")
    fig, head, metrics, auto, info, opts, value, alert = layout_call(source=sid, namespace="vivo/ns",
                                                                     options=[S.OPT_INPUT_LAYOUT])
    assert alert is None
    legend = [t.name for t in fig.data if t.type == "bar" and t.showlegend is not False]
    assert legend == ["broker-1", "broker-2", "broker-3"]
    assert any(t.type == "scatter" and t.name == "would auto-split" for t in fig.data)
    assert "1 of 8 bundles would split" in text_of(auto)
    assert "loadBalancerNamespaceBundleMaxMsgRate" in text_of(auto)
    assert "owners of 8 bundles" in text_of(info)
    assert "msg/s" in text_of(metrics)


def test_bundles_cb025_bad_generated_name_alerts_and_keeps_the_rest():
    out = layout_call(gen_ns="a/b/c/d")
    assert out[:7] == (no_update,) * 7
    assert "Cannot show the layout" in text_of(out[7])


def test_bundles_cb026_thresholds_move_the_auto_split_picks():
    th = list(TH_DEFAULT)
    th[0] = S.threshold_ladder("loadBalancerNamespaceBundleMaxTopics").index(1)
    _, _, _, auto, *_ = layout_call(partitions=120, th=th)
    txt = text_of(auto)
    assert "0 of 180 bundles would split" in txt and "loadBalancerNamespaceMaximumBundles 128" in txt
    _, _, _, auto_off, *_ = layout_call(partitions=120, th=th, auto=())
    assert "loadBalancerAutoBundleSplitEnabled is false" in text_of(auto_off)


def test_bundles_cb030_split_preview_shows_boundaries_and_refusals():
    v = S.build_view()
    i = v.layout.most_loaded()
    fig, table = split_call(i)
    txt = text_of(table)
    lo, up = int(v.layout.boundaries[i]), int(v.layout.boundaries[i + 1])
    assert B.format_bound(lo + (up - lo) // 2) in txt
    assert "needs split positions" in txt and "needs it to be the configured default algorithm" in txt
    assert fig.layout.xaxis.range == (lo, up)
    pos = B.format_bound(lo + 1)
    _, table2 = split_call(i, positions=pos)
    assert f"at {pos} into 2 bundles" in text_of(table2)


def test_bundles_cb031_split_preview_bad_positions_alert():
    fig, alert = split_call(0, positions="0x10, middle")
    assert fig is no_update and "not a number like 0x20000000" in text_of(alert)


def test_bundles_cb032_click_a_bar_to_preview_it():
    assert cb.pick_bundle({"points": [{"x": 17, "y": 2}]}) == 17
    assert cb.pick_bundle({"points": [{"x": "17"}]}) == 17
    assert cb.pick_bundle(None) is no_update
    assert cb.pick_bundle({"points": []}) is no_update
    assert cb.pick_bundle({"points": [{"x": -1}]}) is no_update


def test_bundles_cb040_clientside_ladders_match_the_server():
    from layouts.bundles import LADDER_JS

    js = json.loads(LADDER_JS)
    for s in SPECS:
        assert js[s["key"]]["ladder"] == list(s["ladder"]) and js[s["key"]]["unit"] == s["unit"]
