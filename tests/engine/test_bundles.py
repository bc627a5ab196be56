"""engine.bundles: Pulsar's topic → bundle hashing, ranges, splits, auto split, distribution metrics.

Expected values come from the reference (``pulsar-load-balancing.md`` §7) or are derived by hand
in the test from ``zlib.crc32`` and the rules of §7 — never copied from the implementation.
"""
import ast
import doctest
import importlib
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import bundles as B
from engine.errors import InputError

FULL = 0xFFFFFFFF


def crc(name: str) -> int:
    """Independent hash: zlib's CRC-32 of the UTF-8 name (what Guava's crc32 computes)."""
    return zlib.crc32(name.encode("utf-8"))


# A name whose CRC-32 is exactly 0xffffffff (forged offline with CRC linearity over GF(2)),
# and two names with the same CRC-32 (same method). The asserts below re-check them with zlib.
EDGE_NAME = "persistent://edge/case/t58-0CW2"
COLLIDE_A = "persistent://c/d/collide-a"
COLLIDE_B = "persistent://c/d/collide-b79-eOBX"


def test_bundles001_forged_names_are_what_they_claim():
    assert crc(EDGE_NAME) == 0xFFFFFFFF
    assert crc(COLLIDE_A) == crc(COLLIDE_B) == 0x794DAF14


# ------------------------------------------------------------------------------------------
# §7.1 / §7.2 hashing, boundaries, range strings
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("topic, hash_, bundle", [
    ("persistent://public/default/my-topic", 0x2BAD45F7, "public/default/0x00000000_0x40000000"),
    ("non-persistent://public/default/t1", 0x8C15011C, "public/default/0x80000000_0xc0000000"),
    ("persistent://my-tenant/my-ns/topic-1", 0xC31FB58B, "my-tenant/my-ns/0xc0000000_0xffffffff"),
])
def test_bundles002_reference_crc32_examples_with_four_bundles(topic, hash_, bundle):
    assert B.topic_hash(topic) == hash_
    assert B.bundle_of(topic, B.initial_boundaries(4)) == bundle
    assert B.bundle_of(topic) == bundle  # default: 4 bundles (defaultNumberOfNamespaceBundles)


def test_bundles003_initial_boundaries_reference_values():
    assert B.initial_boundaries(4).tolist() == [0x00000000, 0x40000000, 0x80000000, 0xC0000000, 0xFFFFFFFF]
    assert B.initial_boundaries(3).tolist() == [0, 0x55555555, 0xAAAAAAAA, 0xFFFFFFFF]
    assert B.initial_boundaries(1).tolist() == [0, 0xFFFFFFFF]
    # 180 bundles: seg = 2^32 // 180 = 23860929 (4294967296 / 180 = 23860929.42); last is 0xffffffff
    b = B.initial_boundaries(180)
    assert b.size == 181 and b[1] == 23860929 and b[179] == 179 * 23860929 and b[-1] == FULL


@pytest.mark.parametrize("bad", [0, -1, 2**32, 1.5, True, "4"])
def test_bundles004_initial_boundaries_refuses_bad_counts(bad):
    with pytest.raises(InputError):
        B.initial_boundaries(bad)


def test_bundles005_short_names_hash_as_their_full_name():
    # TopicName: "my-topic" -> persistent://public/default/my-topic; "a/b/t" -> persistent://a/b/t
    assert B.normalize_topic_name("my-topic") == "persistent://public/default/my-topic"
    assert B.normalize_topic_name("my-tenant/my-ns/topic-1") == "persistent://my-tenant/my-ns/topic-1"
    assert B.bundle_of("my-topic") == "public/default/0x00000000_0x40000000"
    h, idx = B.assign_bundles(["my-topic", "my-tenant/my-ns/topic-1"], B.initial_boundaries(4))
    assert h.tolist() == [0x2BAD45F7, 0xC31FB58B] and idx.tolist() == [0, 3]


def test_bundles006_each_partition_hashes_separately():
    names = B.partition_names("t", 3, namespace="a/b")
    assert names == ["persistent://a/b/t-partition-0", "persistent://a/b/t-partition-1",
                     "persistent://a/b/t-partition-2"]
    h, _ = B.assign_bundles(names, B.initial_boundaries(4))
    assert h.tolist() == [crc(n) for n in names]
    assert B.partition_names("persistent://a/b/t", 2) == B.partition_names("a/b/t", 2)


def test_bundles007_boundary_hash_belongs_to_the_upper_bundle_and_ffffffff_is_flagged():
    b = B.initial_boundaries(4)
    hashes = [0, 0x3FFFFFFF, 0x40000000, 0xBFFFFFFF, 0xC0000000, 0xFFFFFFFE, 0xFFFFFFFF]
    assert B.bundle_indices(hashes, b).tolist() == [0, 0, 1, 2, 3, 3, -1]


def test_bundles008_hash_ffffffff_is_a_clear_error_for_one_topic_and_a_flag_in_bulk():
    with pytest.raises(B.BundleLookupError, match="0xffffffff"):
        B.bundle_of(EDGE_NAME)
    h, idx = B.assign_bundles([EDGE_NAME, "persistent://edge/case/ok"], B.initial_boundaries(4))
    assert h[0] == 0xFFFFFFFF and idx[0] == -1 and idx[1] >= 0
    lay = B.build_layout([EDGE_NAME, "persistent://edge/case/ok"], 4)
    assert lay.unassignable == [EDGE_NAME]
    assert lay.counts.sum() == 1  # the unserved topic is in no bundle


def test_bundles009_range_format_and_parse():
    assert B.format_range(0, 0x40000000) == "0x00000000_0x40000000"
    assert B.format_range(0xC0000000, FULL) == "0xc0000000_0xffffffff"
    assert B.parse_range("0x40000000_0X80000000") == (0x40000000, 0x80000000)
    assert B.parse_range("0XC0000000_0XFFFFFFFF") == (0xC0000000, FULL)
    assert B.parse_bundle_name("t/ns/0x00000000_0x40000000") == ("t/ns", 0, 0x40000000)
    assert B.bundle_name("t/ns", 0, 0x40000000) == "t/ns/0x00000000_0x40000000"


@pytest.mark.parametrize("bad", ["0x40000000", "0x80000000_0x40000000", "0x1_0x1", "0x0_0x100000000",
                                 "zz_0x1", "0x0_0x1_0x2", "-0x1_0x10", ""])
def test_bundles010_bad_ranges_are_input_errors(bad):
    with pytest.raises(InputError):
        B.parse_range(bad)


def test_bundles011_java_long_decode():
    assert B.java_long_decode("0x1F") == 31
    assert B.java_long_decode("0X1f") == 31
    assert B.java_long_decode("#ff") == 255
    assert B.java_long_decode("010") == 8  # leading zero = octal
    assert B.java_long_decode("0") == 0
    assert B.java_long_decode("-0x10") == -16
    assert B.java_long_decode("+12") == 12
    for bad in ["0x", "+-1", "0x_1", "1 ", "09", "", "0x8000000000000000"]:
        with pytest.raises(InputError):
            B.java_long_decode(bad)


def test_bundles012_topic_name_parsing_like_pulsar():
    t = B.parse_topic_name("persistent://t/c/ns/a/b")  # legacy: tenant/cluster/namespace/local
    assert (t.tenant, t.cluster, t.namespace_portion, t.local_name) == ("t", "c", "ns", "a/b")
    assert t.namespace == "t/c/ns"
    assert B.parse_topic_name("a/b/t-partition-7").partition_index == 7
    assert B.parse_topic_name("a/b/t-partition-01").partition_index == -1
    assert B.parse_topic_name("a/b/t-partition--1").partition_index == -1
    assert B.parse_topic_name("a/b/t-partition-2147483648").partition_index == -1
    assert B.parse_topic_name("a/b/t-partition-x").partition_index == -1
    assert B.parse_topic_name("non-persistent://a/b/x").domain == "non-persistent"
    for bad in ["", "a/b", "http://a/b/c", "persistent://a/b", "persistent://a/b/ ", "persistent://a b/c/d",
                "persistent://a//c"]:
        with pytest.raises(InputError):
            B.parse_topic_name(bad)


def test_bundles013_boundaries_from_ranges_detects_gaps_and_overlaps():
    got = B.boundaries_from_ranges(["0x80000000_0xffffffff", "t/n/0x00000000_0x80000000"])
    assert got.tolist() == [0, 0x80000000, FULL]
    with pytest.raises(InputError, match="gap"):
        B.boundaries_from_ranges(["0x00000000_0x40000000", "0x80000000_0xffffffff"])
    with pytest.raises(InputError, match="overlap"):
        B.boundaries_from_ranges(["0x00000000_0x90000000", "0x80000000_0xffffffff"])
    with pytest.raises(InputError):
        B.boundaries_from_ranges(["0x00000000_0x80000000"])  # does not reach 0xffffffff


def test_bundles014_unpaired_surrogate_hashes_like_java_getbytes():
    # Java's String.getBytes(UTF_8) writes '?' for an unpaired surrogate
    assert B.topic_hash("persistent://a/b/x\ud800") == crc("persistent://a/b/x?")


# ------------------------------------------------------------------------------------------
# §7.3 / §7.4 split algorithms
# ------------------------------------------------------------------------------------------

def test_bundles020_range_equally_divide_reference_values():
    assert B.range_equally_divide(0x00000000, 0x40000000).boundaries == (0x20000000,)
    assert B.range_equally_divide(0xC0000000, 0xFFFFFFFF).boundaries == (0xDFFFFFFF,)
    assert B.range_equally_divide(0x00000000, 0xFFFFFFFF).boundaries == (0x7FFFFFFF,)
    r = B.range_equally_divide(0, 0x40000000)
    assert r.ok and r.children == ((0, 0x20000000), (0x20000000, 0x40000000))


def test_bundles021_can_split_bundle_and_unsplittable_range_fails():
    assert not B.can_split_bundle(5, 6) and B.can_split_bundle(5, 7)
    r = B.range_equally_divide(5, 6)  # boundary 5 + 1 // 2 = 5; splitBundles refuses first
    assert r.label == "Failure" and "can't be split further" in r.reason
    assert B.range_equally_divide(5, 7).boundaries == (6,)


# five partitions of persistent://a/b/t (hashes from zlib, checked below):
#   t-partition-0 0x5b6d130c, -1 0x2c6a239a, -2 0xb5637220, -3 0xc26442b6, -4 0x5c00d715
T5 = ["persistent://a/b/t-partition-%d" % i for i in range(5)]
T5_HASHES = [0x5B6D130C, 0x2C6A239A, 0xB5637220, 0xC26442B6, 0x5C00D715]


def test_bundles022_topic_count_equally_divide_by_hand():
    assert [crc(t) for t in T5] == T5_HASHES
    # n = 5: sorted H = 2c6a239a, 5b6d130c, 5c00d715, b5637220, c26442b6
    # s = H[5//2 - 1] = H[1] = 0x5b6d130c, e = H[2] = 0x5c00d715
    # e - s = 0x0093c409 = 9683977, // 2 = 4841988 = 0x0049e204 -> s + 0x0049e204 = 0x5bb6f510
    r = B.topic_count_equally_divide(0, FULL, T5)
    assert r.label == "Split" and r.boundaries == (0x5BB6F510,)
    # n = 4 (partitions 0..3): sorted H = 2c6a239a, 5b6d130c, b5637220, c26442b6
    # s = H[1] = 0x5b6d130c, e = H[2] = 0xb5637220; (e - s)//2 = 0x59f65f14//2 = 0x2cfb2f8a -> 0x88684296
    assert B.topic_count_equally_divide(0, FULL, T5[:4]).boundaries == (0x88684296,)


def test_bundles023_topic_count_uses_only_the_bundles_own_topics():
    # with 4 bundles, 0x40000000_0x80000000 owns partitions 0 (0x5b6d130c) and 4 (0x5c00d715)
    # n = 2: s = H[max(0, 0)] = 0x5b6d130c, e = H[1] = 0x5c00d715 -> 0x5b6d130c + 9683977//2 = 0x5bb6f510
    r = B.split_bundle(B.initial_boundaries(4), "0x40000000_0x80000000", "topic_count_equally_divide",
                       topics=T5, namespace="a/b")
    assert r.ok and r.boundaries == (0x5BB6F510,)
    assert r.to_json()["bundle"] == "a/b/0x40000000_0x80000000"
    assert r.to_json()["children"] == ["0x40000000_0x5bb6f510", "0x5bb6f510_0x80000000"]


def test_bundles024_topic_count_refusals():
    assert B.topic_count_equally_divide(0, FULL, []).label == "Skip"
    r = B.topic_count_equally_divide(0, FULL, [T5[0]])
    assert r.label == "Skip" and "≤ 1" in r.reason
    # two topics with the same hash h: boundary = h + 0; with h as the lower bound splitBundles refuses
    h = crc(COLLIDE_A)
    r = B.topic_count_equally_divide(h, FULL, [COLLIDE_A, COLLIDE_B])
    assert r.label == "Failure" and r.boundaries == (h,) and "strictly inside" in r.reason


def test_bundles025_specified_positions_divide_rules_and_refusals():
    lo, up = 0, 0x40000000
    two = T5[:2]
    r = B.specified_positions_divide(lo, up, [0x30000000, 0x10000000, 0x50000000], two)
    assert r.ok and r.boundaries == (0x10000000, 0x30000000)  # sorted, outside one dropped
    assert "0x50000000" in r.reason
    r = B.specified_positions_divide(lo, up, [], two)
    assert r.label == "Failure" and "can't be empty" in r.reason
    r = B.specified_positions_divide(lo, up, None, two)
    assert r.label == "Failure"
    r = B.specified_positions_divide(lo, up, [0x10000000], [T5[0]])
    assert r.label == "Skip" and "force" in r.reason
    assert B.specified_positions_divide(lo, up, [0x10000000], [], force=True).ok
    r = B.specified_positions_divide(lo, up, [0, 0x40000000, 0x90000000], two)  # bounds are not inside
    assert r.label == "Skip" and "no position inside" in r.reason
    r = B.specified_positions_divide(lo, up, [0x10000000, 0x10000000], two)
    assert r.label == "Failure" and "empty bundle" in r.reason


# five topics of f/q (hashes from zlib, checked below), sorted by hash:
FQ = {"persistent://f/q/idle": 0x890C7D31, "persistent://f/q/delta": 0xAA1532C0,
      "persistent://f/q/beta": 0xDAB9CC47, "persistent://f/q/alpha": 0xECB6F573,
      "persistent://f/q/gamma": 0xF8151C68}


def test_bundles026_flow_or_qps_equally_divide_by_hand():
    assert {t: crc(t) for t in FQ} == FQ
    names = list(FQ)
    rate = [0.0, 60.0, 50.0, 30.0, 80.0]  # idle has no traffic: left out
    thr = [0.0, 1000.0, 1000.0, 1000.0, 1000.0]
    # R = 100 msg/s, B = 1 MB; total 220 >= 100 * 1.1 -> walk delta(60), beta(50), alpha(30), gamma(80):
    #   60 + 50 = 110 > 100 -> boundary delta + (beta - delta)//2 + 1
    #        = 0xaa1532c0 + 0x30a49987//2 + 1 = 0xaa1532c0 + 0x18524cc3 + 1 = 0xc2677f84; acc = 50
    #   50 + 30 = 80 -> acc 80;  80 + 80 = 160 > 100 -> boundary alpha + (gamma - alpha)//2 + 1
    #        = 0xecb6f573 + 0x0b5e26f5//2 + 1 = 0xecb6f573 + 0x05af137a + 1 = 0xf26608ee
    r = B.flow_or_qps_equally_divide(0, FULL, names, rate, thr, loadBalancerNamespaceBundleMaxMsgRate=100,
                                     loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.label == "Split" and r.boundaries == (0xC2677F84, 0xF26608EE)
    assert len(r.children) == 3


def test_bundles027_flow_or_qps_splits_on_throughput_too():
    a, b = "persistent://f/q/delta", "persistent://f/q/beta"
    # B = 1 MB = 1048576 B/s; 600000 + 600000 = 1.2e6 >= 1048576 * 1.1 = 1153433.6 and > 1048576
    r = B.flow_or_qps_equally_divide(0, FULL, [a, b], [0.0, 0.0], [600000.0, 600000.0],
                                     loadBalancerNamespaceBundleMaxMsgRate=1000,
                                     loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.boundaries == (0xC2677F84,)  # same pair as above: delta + (beta - delta)//2 + 1


def test_bundles028_flow_or_qps_refusals():
    a, b, c = "persistent://f/q/delta", "persistent://f/q/beta", "persistent://f/q/alpha"
    kw = dict(loadBalancerNamespaceBundleMaxMsgRate=100, loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert "≤ 1" in B.flow_or_qps_equally_divide(0, FULL, [a], [500.0], [1.0], **kw).reason
    # only one topic with traffic (the other has none, the third no stats at all)
    r = B.flow_or_qps_equally_divide(0, FULL, [a, b, c], [500.0, 0.0, None], [1.0, 0.0, None], **kw)
    assert r.label == "Skip" and "only 1 topic" in r.reason
    # 60 + 45 = 105 > R = 100, but < R * (1 + 10 %) = 110: within the difference threshold
    r = B.flow_or_qps_equally_divide(0, FULL, [a, b], [60.0, 45.0], [1.0, 1.0], **kw)
    assert r.label == "Skip"
    # ... and with a 0 % threshold it splits
    r = B.flow_or_qps_equally_divide(0, FULL, [a, b], [60.0, 45.0], [1.0, 1.0],
                                     flowOrQpsDifferenceThresholdPercentage=0, **kw)
    assert r.boundaries == (0xC2677F84,)


def test_bundles029_flow_or_qps_same_hash_topics_share_one_map_entry():
    # Pulsar keys TopicInfo by hash: COLLIDE_B (put last) overwrites COLLIDE_A's rates, while the sums
    # and the sorted hash list keep both. Hashes: collide 0x794daf14 (twice), f/q/delta 0xaa1532c0.
    h, d = 0x794DAF14, 0xAA1532C0
    names = [COLLIDE_A, COLLIDE_B, "persistent://f/q/delta"]
    rate = [500.0, 20.0, 50.0]  # total 570 >= 110
    # walk over [h(20), h(20), d(50)]: 20 + 20 = 40; 40 + 50 = 90 <= 100 -> no boundary (Skip).
    # (with A's 500 kept it would have cut twice)
    r = B.flow_or_qps_equally_divide(0, FULL, names, rate, [1.0] * 3, loadBalancerNamespaceBundleMaxMsgRate=100,
                                     loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.label == "Skip" and "never exceeds" in r.reason
    # B at 60: [h(60), h(60), d(50)]: 60 + 60 = 120 > 100 -> boundary h + 0 + 1; acc 60; 60 + 50 > 100 ->
    # h + (d - h)//2 + 1 = 0x794daf14 + 0x30c783ac//2 + 1 = 0x794daf14 + 0x1863c1d6 + 1 = 0x91b170eb
    r = B.flow_or_qps_equally_divide(0, FULL, names, [500.0, 60.0, 50.0], [1.0] * 3,
                                     loadBalancerNamespaceBundleMaxMsgRate=100,
                                     loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.boundaries == (h + 1, 0x91B170EB)
    assert d - h == 0x30C783AC


def test_bundles030_split_bundle_algorithm_resolution_and_refusals():
    b = B.initial_boundaries(4)
    # no algorithm -> defaultNamespaceBundleSplitAlgorithm (range_equally_divide)
    assert B.split_bundle(b, 3).boundaries == (0xDFFFFFFF,)
    # unknown configured default -> range_equally_divide
    assert B.split_bundle(b, 3, defaultNamespaceBundleSplitAlgorithm="nope").algorithm == "range_equally_divide"
    # default topic_count with no owned topics -> Skip
    r = B.split_bundle(b, 3, defaultNamespaceBundleSplitAlgorithm="topic_count_equally_divide", topics=[])
    assert r.label == "Skip"
    # unsupported name -> Failure (admin REST: 412)
    r = B.split_bundle(b, 3, "half")
    assert r.label == "Failure" and "unsupported" in r.reason
    r = B.split_bundle(b, 3, "topic_count_equally_divide",
                       supportedNamespaceBundleSplitAlgorithms=("range_equally_divide",))
    assert r.label == "Failure"
    # a supported-but-unknown name falls back to the default (topic_count here), then to range
    r = B.split_bundle(b, 3, "half", supportedNamespaceBundleSplitAlgorithms=("half",),
                       defaultNamespaceBundleSplitAlgorithm="topic_count_equally_divide", topics=[])
    assert r.algorithm == "topic_count_equally_divide" and r.label == "Skip"
    r = B.split_bundle(b, 3, "half", supportedNamespaceBundleSplitAlgorithms=("half",),
                       defaultNamespaceBundleSplitAlgorithm="nope")
    assert r.algorithm == "range_equally_divide" and r.boundaries == (0xDFFFFFFF,)
    # flow_or_qps only when it is the configured default
    names = list(FQ)
    rate, thr = [0.0, 60.0, 50.0, 30.0, 80.0], [0.0] + [1000.0] * 4
    whole = np.array([0, FULL])
    r = B.split_bundle(whole, 0, "flow_or_qps_equally_divide", topics=names, msg_rate=rate, throughput=thr,
                       loadBalancerNamespaceBundleMaxMsgRate=100, loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.label == "Failure" and "default algorithm" in r.reason
    r = B.split_bundle(whole, 0, "flow_or_qps_equally_divide", topics=names, msg_rate=rate, throughput=thr,
                       defaultNamespaceBundleSplitAlgorithm="flow_or_qps_equally_divide",
                       loadBalancerNamespaceBundleMaxMsgRate=100, loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    assert r.boundaries == (0xC2677F84, 0xF26608EE)
    # specified positions through the dispatcher
    r = B.split_bundle(b, "0x00000000_0x40000000", "specified_positions_divide", positions=[0x10000000],
                       force=True)
    assert r.boundaries == (0x10000000,)
    with pytest.raises(InputError):
        B.split_bundle(b, "0x00000000_0x20000000")  # not a bundle of the layout
    with pytest.raises(InputError):
        B.split_bundle(b, 4)


def test_bundles031_split_from_config_reads_keys_by_name():
    cfg = SimpleNamespace(defaultNamespaceBundleSplitAlgorithm="flow_or_qps_equally_divide",
                          loadBalancerNamespaceBundleMaxMsgRate=100, loadBalancerNamespaceBundleMaxBandwidthMbytes=1)
    names = list(FQ)
    r = B.split_from_config(cfg, [0, FULL], 0, topics=names, msg_rate=[0.0, 60.0, 50.0, 30.0, 80.0],
                            throughput=[0.0] + [1000.0] * 4)
    assert r.algorithm == "flow_or_qps_equally_divide" and r.boundaries == (0xC2677F84, 0xF26608EE)


def test_bundles032_apply_split_mechanics():
    b = B.initial_boundaries(4)
    assert B.apply_split(b, 0xC0000000, FULL, [0xDFFFFFFF]) == (0, 0x40000000, 0x80000000, 0xC0000000,
                                                               0xDFFFFFFF, FULL)
    assert B.apply_split(b, 0x40000000, 0x80000000, [0x70000000, 0x50000000]) == (
        0, 0x40000000, 0x50000000, 0x70000000, 0x80000000, 0xC0000000, FULL)
    assert B.apply_split(b, 0, 0x40000000, []) == tuple(b.tolist())
    for pts in ([0x40000000], [0], [0x10000000, 0x10000000]):
        with pytest.raises(InputError):
            B.apply_split(b, 0, 0x40000000, pts)
    r = B.range_equally_divide(0, 0x40000000)
    assert r.apply(b).tolist() == [0, 0x20000000, 0x40000000, 0x80000000, 0xC0000000, FULL]


def test_bundles033_old_api_split_without_boundaries():
    # seg = (upper - lower) // k: 0x40000000 // 4 = 0x10000000
    assert B.divide_range(0, 0x40000000, 4) == (0x10000000, 0x20000000, 0x30000000)
    # 0xffffffff // 3 = 0x55555555
    assert B.divide_range(0, FULL, 3) == (0x55555555, 0xAAAAAAAA)
    pts = B.divide_range(5, 7, 4)  # seg = 0: repeated points, refused like Pulsar's empty bundle
    assert pts == (5, 5, 5)
    with pytest.raises(InputError):
        B.apply_split([0, 5, 7, FULL], 5, 7, pts)
    with pytest.raises(InputError):
        B.divide_range(0, FULL, 1)


# ------------------------------------------------------------------------------------------
# §7.5 auto split (BundleSplitterTask)
# ------------------------------------------------------------------------------------------

NS = "t/n"
BUN = [f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]
MB = 1024 * 1024


def _one(topics=2, sessions=0, rate=None, thr=None, **kw):
    r = B.auto_split([BUN[0]], [topics], [sessions], [rate], [thr], {NS: 4}, **kw)
    return r.decisions[0]


def test_bundles040_each_threshold_triggers_a_split_with_its_reason():
    d = _one(topics=1001)
    assert d.label == "Split" and d.hits[0].key == "loadBalancerNamespaceBundleMaxTopics"
    assert (d.hits[0].value, d.hits[0].limit) == (1001, 1000)
    d = _one(sessions=1001)
    assert d.label == "Split" and [h.key for h in d.hits] == ["loadBalancerNamespaceBundleMaxSessions"]
    d = _one(rate=30000.5)
    assert d.label == "Split" and [h.key for h in d.hits] == ["loadBalancerNamespaceBundleMaxMsgRate"]
    d = _one(thr=100 * MB + 1)
    assert d.label == "Split" and [h.key for h in d.hits] == ["loadBalancerNamespaceBundleMaxBandwidthMbytes"]
    assert d.hits[0].limit == 100 * MB
    d = _one(topics=5000, sessions=5000, rate=1e6, thr=1e12)
    assert len(d.hits) == 4 and d.label == "Split"


def test_bundles041_thresholds_are_strict_and_sessions_can_be_disabled():
    assert _one(topics=1000, sessions=1000, rate=30000.0, thr=float(100 * MB)).label == "Skip"
    assert _one(sessions=10**6, loadBalancerNamespaceBundleMaxSessions=0).label == "Skip"  # <= 0 disables
    assert _one(rate=None, thr=None).reason == "within every split threshold"  # no BundleData -> 0


def test_bundles042_fewer_than_two_topics_never_split():
    d = _one(topics=1, sessions=10**6, rate=1e9, thr=1e15)
    assert d.label == "Skip" and "< 2" in d.reason and d.hits == ()
    assert _one(topics=0, rate=1e9).label == "Skip"


def test_bundles043_namespace_maximum_bundles_caps_the_round():
    # 126 bundles now, max 128: the first two candidates are chosen, the third is not
    bundles = [f"{NS}/0x{i:08x}_0x{i + 1:08x}" for i in range(3)] + ["o/p/0x00000000_0xffffffff"]
    r = B.auto_split(bundles, [2000] * 4, namespace_bundle_counts={NS: 126, "o/p": 1})
    assert [d.label for d in r.decisions] == ["Split", "Split", "Skip", "Split"]
    assert "126 bundles + 2 chosen" in r.decisions[2].reason
    assert "loadBalancerNamespaceMaximumBundles 128" in r.decisions[2].reason
    assert list(r.to_split) == [bundles[0], bundles[1], bundles[3]]
    # a namespace already at the cap
    r = B.auto_split(bundles[:1], [2000], namespace_bundle_counts={NS: 128})
    assert r.decisions[0].label == "Skip"


def test_bundles044_disabled_auto_split_lists_hits_but_splits_nothing():
    r = B.auto_split(BUN, [2000, 3], loadBalancerAutoBundleSplitEnabled=False)
    assert r.to_split == {} and not r.enabled
    assert r.decisions[0].hits and "disabled" in r.decisions[0].reason


def test_bundles045_auto_split_from_config_reads_keys_by_name():
    @dataclass(frozen=True)
    class Cfg:  # shaped like engine.config.LoadBalancerConfig (broker.conf key names)
        loadBalancerNamespaceBundleMaxTopics: int = 10
        loadBalancerNamespaceMaximumBundles: int = 3

    # t/n has 2 bundles now; cap 3 (from cfg): the first candidate fits (2 + 0 < 3), the next does not
    r = B.auto_split_from_config(Cfg(), BUN, [11, 11], namespace_bundle_counts={NS: 2}, brokers=["b1", "b2"])
    assert [d.label for d in r.decisions] == ["Split", "Skip"]
    assert r.to_split == {BUN[0]: "b1"}
    assert r.config["loadBalancerNamespaceMaximumBundles"] == 3
    assert r.config["loadBalancerNamespaceBundleMaxSessions"] == 1000  # not on cfg: Pulsar's default
    # without counts, a namespace's bundle count is the number of its bundles in the input
    r = B.auto_split_from_config(Cfg(), BUN + [f"{NS}/0x80000000_0xffffffff"], [11, 11, 11])
    assert [d.label for d in r.decisions] == ["Skip", "Skip", "Skip"]  # 3 + 0 >= 3


def test_bundles046_auto_split_result_shapes():
    r = B.auto_split(BUN, [2000, 1], [0, 0], [None, 5.0], [None, 7.0], {NS: 2}, brokers=["b1", "b2"])
    df = r.to_frame()
    assert list(df["label"]) == ["Split", "Skip"] and list(df["broker"]) == ["b1", "b2"]
    j = r.to_json()
    assert j["to_split"] == [BUN[0]] and j["decisions"][0]["hits"][0]["key"] == "loadBalancerNamespaceBundleMaxTopics"
    with pytest.raises(InputError):
        B.auto_split(BUN, [1])


# ------------------------------------------------------------------------------------------
# distribution metrics, expected spread, the vivo lesson
# ------------------------------------------------------------------------------------------

def test_bundles050_gini_and_distribution_by_hand():
    # [0,0,0,4]: sum |xi - xj| over ordered pairs = 2 * 3 * 4 = 24; 2 n^2 mean = 2 * 16 * 1 = 32
    assert B.gini([0, 0, 0, 4]) == pytest.approx(0.75)
    # [1,2,3]: pairs |1-2|+|1-3|+|2-3| = 4, x2 = 8; 2 * 9 * 2 = 36 -> 2/9
    assert B.gini([3, 1, 2]) == pytest.approx(2 / 9)
    assert B.gini([5, 5]) == 0.0
    d = B.distribution([0, 3, 1, 0])
    assert (d.max, d.min, d.mean, d.max_over_mean, d.empty, d.argmax, d.total) == (3, 0, 1, 3, 2, 1, 4)
    z = B.distribution([0, 0]).to_json()
    assert z["max_over_mean"] is None and z["gini"] is None  # JSON-safe


def test_bundles051_layout_counts_and_traffic_per_bundle():
    # T5 over 4 bundles (hashes above): bundle 0 <- -1 (0x2c6a239a); bundle 1 <- -0, -4; bundle 2 <- -2;
    # bundle 3 <- -3 (0xc26442b6)
    rate = [10.0, 20.0, 30.0, 40.0, 50.0]
    lay = B.build_layout(T5, 4, msg_rate=rate, throughput=[1.0] * 5, sessions=[1, 2, 3, 4, 5])
    assert lay.counts.tolist() == [1, 2, 1, 1]
    assert lay.msg_rate.tolist() == [20.0, 60.0, 30.0, 40.0]
    assert lay.sessions.tolist() == [2, 6, 3, 4]
    assert lay.most_loaded() == 1
    df = lay.to_frame()
    assert list(df["range"]) == ["0x00000000_0x40000000", "0x40000000_0x80000000", "0x80000000_0xc0000000",
                                 "0xc0000000_0xffffffff"]
    assert lay.has_non_persistent.tolist() == [False] * 4
    np_lay = B.build_layout(["non-persistent://public/default/t1", "persistent://public/default/my-topic"], 4)
    assert np_lay.has_non_persistent.tolist() == [False, False, True, False]  # t1 -> 0x8c15011c (§7.2)
    dist = lay.distributions()
    assert dist["topics"].max_over_mean == pytest.approx(2 / 1.25)
    assert dist["msg_rate"].max == 60.0
    with pytest.raises(InputError):
        B.build_layout(T5 + ["persistent://x/y/z"], 4)  # two namespaces


def test_bundles052_expected_spread_matches_exact_small_case():
    # 2 topics over 2 (almost) equal bundles: max = 2 with probability 1/2, else 1 -> E[max] = 1.5,
    # mean = 1 -> E[max/mean] = 1.5
    e = B.expected_max_over_mean(2, 2, trials=40000, seed=3)
    assert e.method == "monte-carlo" and e.mean_max == pytest.approx(1.5, abs=0.02)
    # 3 topics, 3 bundles: P(all in one) = 3/27, P(all different) = 6/27, else max 2 (18/27)
    # E[max] = (3*3 + 1*6 + 2*18) / 27 = 51/27
    e = B.expected_max_over_mean(3, 3, trials=40000, seed=4)
    assert e.mean_max == pytest.approx(51 / 27, abs=0.02)


def test_bundles053_expected_spread_is_seeded_and_accepts_a_generator():
    a = B.expected_max_over_mean(100, 64, trials=200, seed=9)
    b = B.expected_max_over_mean(100, 64, trials=200, seed=9)
    assert a.to_json() == b.to_json()
    g = B.expected_max_over_mean(100, 64, trials=200, seed=np.random.default_rng(9))
    assert g.mean_max == a.mean_max


def test_bundles054_vivo_lesson_on_generated_names():
    """vivo: 1 topic, 30 partitions on 180 bundles was lumpy; 120 partitions flattened it (field-findings §4)."""
    for topic in ["persistent://vivo/ns/t", "persistent://public/default/orders", "persistent://a/b/events"]:
        r30 = B.build_layout(B.partition_names(topic, 30), 180).distributions()["topics"]
        r120 = B.build_layout(B.partition_names(topic, 120), 180).distributions()["topics"]
        assert r30.max_over_mean > r120.max_over_mean, topic
    # the same lesson in expectation (Monte-Carlo, seeded)
    e30 = B.expected_max_over_mean(30, 180, trials=2000, seed=0)
    e120 = B.expected_max_over_mean(120, 180, trials=2000, seed=0)
    assert e30.mean_max_over_mean > e120.mean_max_over_mean
    # two bundles holding 4 partitions is far above random: P(max >= 4) for 30 over 180 is ~0.6 %
    # (Poisson(1/6): P(X >= 4) ~ (1/6)^4/24 = 3.2e-5 per bundle, x 180)
    e = B.expected_max_over_mean(30, 180, observed_max=4, trials=4000, seed=0)
    assert e.verdict == "unlucky" and e.p_at_least_observed < 0.02
    assert B.expected_max_over_mean(30, 180, observed_max=2, trials=2000, seed=0).verdict == "typical"


def test_bundles055_partition_names_spread_more_evenly_than_independent_hashes():
    # CRC-32 is linear: the partitions of one topic are an XOR-shifted copy of one pattern, which
    # measured over many names is flatter than independent uniform hashes
    multi = B.expected_max_over_mean(120, 180, trials=1000, seed=0, model="multinomial")
    names = B.expected_max_over_mean(120, 180, trials=1000, seed=0, model="partition-names")
    assert names.model == "partition-names" and multi.model == "multinomial"
    assert names.mean_max < multi.mean_max - 0.2
    # independent check of the model: real partition layouts of other topic names
    b = B.initial_boundaries(180)
    real = []
    for i in range(300):
        _, idx = B.assign_bundles(B.partition_names(f"persistent://x{i}/y/topic-{i}", 120), b, normalize=False)
        real.append(np.bincount(idx, minlength=180).max())
    assert abs(np.mean(real) - names.mean_max) < abs(np.mean(real) - multi.mean_max)
    # the vivo case (two bundles with 4 of 30 partitions) is unlucky under either model
    for model in ("multinomial", "partition-names"):
        assert B.expected_max_over_mean(30, 180, observed_max=4, trials=2000, seed=0, model=model).verdict == "unlucky"
    with pytest.raises(InputError):
        B.expected_max_over_mean(10**6, 180, trials=1000, model="partition-names")  # too much work
    with pytest.raises(InputError):
        B.expected_max_over_mean(10, 180, model="poisson")


def test_bundles056_layout_picks_the_partition_model_for_one_partitioned_topic():
    lay = B.build_layout(B.partition_names("a/b/t", 30), 180)
    assert lay.single_partitioned_topic() == "persistent://a/b/t"
    assert lay.expected(trials=100).model == "partition-names"
    mixed = B.build_layout(B.partition_names("a/b/t", 30) + ["persistent://a/b/u"], 180)
    assert mixed.single_partitioned_topic() is None and mixed.expected(trials=100).model == "multinomial"
    gap = B.build_layout(B.partition_names("a/b/t", 30)[1:], 180)  # partition 0 missing
    assert gap.single_partitioned_topic() is None


# ------------------------------------------------------------------------------------------
# properties
# ------------------------------------------------------------------------------------------

@st.composite
def layouts(draw):
    inner = draw(st.lists(st.integers(1, FULL - 1), min_size=0, max_size=40, unique=True))
    return np.array([0] + sorted(inner) + [FULL], dtype=np.int64)


topic_locals = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="/"),
                       min_size=1, max_size=30).filter(lambda s: s.strip())


@settings(max_examples=150, deadline=None)
@given(b=layouts(), locals_=st.lists(topic_locals, min_size=1, max_size=30),
       extra=st.lists(st.integers(0, FULL), max_size=20))
def test_bundles060_every_topic_lands_in_exactly_one_bundle(b, locals_, extra):
    names = [f"persistent://p/q/{x}" for x in locals_]
    h, idx = B.assign_bundles(names, b, normalize=False)
    hashes = h.tolist() + extra
    idx = idx.tolist() + B.bundle_indices(extra, b).tolist()
    for hv, i in zip(hashes, idx):
        # independent check: the ranges [p_i, p_i+1) that contain the hash (0xffffffff: none serves it)
        holders = [k for k in range(b.size - 1) if b[k] <= hv < b[k + 1]]
        if hv == FULL:
            assert holders == [] and i == -1
        else:
            assert holders == [i]


@settings(max_examples=150, deadline=None)
@given(b=layouts(), data=st.data())
def test_bundles061_splits_keep_full_coverage_without_gaps_or_overlaps(b, data):
    k = data.draw(st.integers(0, b.size - 2))
    lo, up = int(b[k]), int(b[k + 1])
    algo = data.draw(st.sampled_from(B.SPLIT_ALGORITHMS))
    names = [f"persistent://p/q/{x}" for x in data.draw(st.lists(topic_locals, max_size=25, unique=True))]
    rates = data.draw(st.lists(st.floats(0, 5e4), min_size=len(names), max_size=len(names)))
    positions = data.draw(st.lists(st.integers(0, FULL), max_size=5))
    r = B.split_bundle(b, k, algo, topics=names, msg_rate=rates, throughput=[0.0] * len(names),
                       positions=positions, force=data.draw(st.booleans()),
                       defaultNamespaceBundleSplitAlgorithm=algo, loadBalancerNamespaceBundleMaxMsgRate=10000)
    assert r.label in ("Split", "Skip", "Failure") and r.reason
    new = r.apply(b)
    assert new[0] == 0 and new[-1] == FULL and np.all(np.diff(new) > 0)  # no gap, no overlap, full cover
    assert set(b.tolist()) <= set(new.tolist())  # other bundles untouched
    added = sorted(set(new.tolist()) - set(b.tolist()))
    assert all(lo < x < up for x in added)
    if r.ok:
        assert len(added) == len(r.boundaries) >= 1
        kids = r.children
        assert kids[0][0] == lo and kids[-1][1] == up
        assert all(a[1] == c[0] for a, c in zip(kids, kids[1:]))
    else:
        assert added == []
    # every topic that was in the target bundle is now in one of its children
    h, idx = B.assign_bundles(names, new, normalize=False)
    for hv, i in zip(h.tolist(), idx.tolist()):
        if lo <= hv < up:
            assert lo <= new[i] and new[i + 1] <= up


# ------------------------------------------------------------------------------------------
# house rules
# ------------------------------------------------------------------------------------------

BUNDLE_MODULES = ("constants", "topics", "ranges", "algorithms", "split", "autosplit", "distribution", "layout")


def test_bundles070_doctests_pass():
    import engine.topics_input as TI

    mods = [B, TI] + [importlib.import_module(f"engine.bundles.{m}") for m in BUNDLE_MODULES]
    for mod in mods:
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.failed == 0
        assert res.attempted > 0 or mod.__name__ == "engine.bundles.constants", mod.__name__


def test_bundles071_engine_modules_are_pure():
    pkg = Path(B.__file__).resolve().parent
    root = pkg.parent
    rels = [f"bundles/{m}.py" for m in ("__init__",) + BUNDLE_MODULES] + ["topics_input.py", "cli/bundles.py"]
    assert sorted(p.name for p in pkg.glob("*.py")) == sorted(r.split("/")[1] for r in rels[:-2])
    for rel in rels:
        tree = ast.parse((root / rel).read_text())
        for node in ast.walk(tree):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods = [node.module]
            for m in mods:
                assert m.split(".")[0] not in ("dash", "plotly", "pyspark"), (rel, m)


def test_bundles072_all_is_complete():
    for name in B.__all__:
        assert hasattr(B, name), name


def test_bundles073_one_concept_per_module_and_no_module_over_600_lines():
    pkg = Path(B.__file__).resolve().parent
    sizes = {p.name: len(p.read_text().splitlines()) for p in pkg.glob("*.py")}
    assert len(sizes) == len(BUNDLE_MODULES) + 1
    assert max(sizes.values()) <= 600, sizes


def test_bundles074_every_public_name_is_reexported_from_the_package():
    # `from engine.bundles import X` keeps working for what each concept module exports
    for m in BUNDLE_MODULES:
        mod = importlib.import_module(f"engine.bundles.{m}")
        public = [n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None)
                  == mod.__name__]
        for n in public:
            assert n in B.__all__ and getattr(B, n) is getattr(mod, n), (m, n)


@pytest.mark.parametrize("values", [[1e308, 1e308], [float("inf"), 1.0], [-1e308, 1e308, 1e308]])
def test_bundles075_junk_numbers_give_nan_or_inf_without_numpy_warnings(values):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = B.gini(values)
        d = B.distribution(values)
    assert not np.isfinite(g)
    assert d.bundles == len(values) and d.max == max(values)


def test_bundles076_valid_numbers_unchanged_by_the_junk_guard():
    # by hand: x = [1, 2, 3, 4] sorted, i = 1..4, G = 2·Σ i·x / (n·Σx) − (n+1)/n = 2·30/40 − 5/4 = 0.25
    assert B.gini([4, 1, 3, 2]) == pytest.approx(0.25)
    d = B.distribution([4, 1, 3, 2])
    assert (d.total, d.max, d.mean, d.max_over_mean, d.empty, d.argmax) == (10.0, 4.0, 2.5, 1.6, 0, 0)
