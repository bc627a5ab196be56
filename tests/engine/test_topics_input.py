"""engine.topics_input: topic lists from pulsar-admin output, broker-stats JSON, snapshots, generators."""
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine import topics_input as TI
from engine.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "topics"


def crc(name):
    return zlib.crc32(name.encode())


# ------------------------------------------------------------------------------------------
# topics list text
# ------------------------------------------------------------------------------------------

def test_topics001_topics_list_text_with_comments_blank_lines_and_crlf():
    text = "\ufeffpersistent://a/b/t-partition-0\r\n\r\n# a comment\r\n  a/b/u  \r\nmy-topic\r\n" \
           "persistent://a/b/t-partition-0\r\n"
    tl = TI.read_topics_text(text, source="x.txt")
    assert tl.names == ("persistent://a/b/t-partition-0", "persistent://a/b/u", "persistent://public/default/my-topic")
    assert tl.format == "topics-list" and not tl.has_traffic and tl.msg_rate is None
    assert set(tl.by_namespace()) == {"a/b", "public/default"}
    assert tl.partitioned_topics() == {"persistent://a/b/t": 1}


def test_topics002_json_array_of_names():
    tl = TI.read_topics_text('["persistent://a/b/x", "a/b/y"]')
    assert tl.names == ("persistent://a/b/x", "persistent://a/b/y")
    with pytest.raises(InputError, match=r"\[1\]"):
        TI.read_topics_text('["persistent://a/b/x", 5]')


def test_topics003_partitioned_topics_expanded_with_a_count():
    text = "persistent://public/default/orders\npersistent://public/default/events\n"
    tl = TI.read_topics_text(text, partitions_of={"orders": 3, "persistent://public/default/events": 2})
    assert tl.names == tuple([f"persistent://public/default/orders-partition-{i}" for i in range(3)]
                             + [f"persistent://public/default/events-partition-{i}" for i in range(2)])
    # a base name without a count stays one name
    assert TI.read_topics_text(text, partitions_of={"orders": 1}).names[-1] == "persistent://public/default/events"


def test_topics004_partition_lines_are_completed_to_the_count():
    text = "persistent://a/b/t-partition-0\npersistent://a/b/t-partition-2\n"
    tl = TI.read_topics_text(text, partitions_of={"a/b/t": 4})
    assert sorted(tl.names) == sorted(f"persistent://a/b/t-partition-{i}" for i in range(4))


@pytest.mark.parametrize("text, parts, match", [
    ("a/b/t\n", {"a/b/zz": 2}, "not in the input"),
    ("a/b/t\n", {"a/b/t": 0}, "partition count"),
    ("a/b/t\n", {"a/b/t-partition-1": 2}, "is a partition"),
    ("a/b/t\nonly/two\n", None, "line 2"),
    ("a/b/t\nhttp://x/y/z\n", None, "domain"),
])
def test_topics005_bad_topics_lists(text, parts, match):
    with pytest.raises(InputError, match=match):
        TI.read_topics_text(text, partitions_of=parts, source="list.txt")


# ------------------------------------------------------------------------------------------
# broker-stats topics JSON
# ------------------------------------------------------------------------------------------

def _stats(**kw):
    s = {"msgRateIn": 10.0, "msgRateOut": 20.0, "msgThroughputIn": 1000.0, "msgThroughputOut": 2000.0,
         "producerCount": 1, "subscriptions": {"s": {"consumers": [{}, {}]}}}
    s.update(kw)
    return s


def test_topics010_broker_stats_topics():
    obj = {"a/b": {"0x00000000_0x80000000": {"persistent": {"persistent://a/b/x": _stats()},
                                             "non-persistent": {"non-persistent://a/b/y": _stats(msgRateIn=1.5)}},
                   "0x80000000_0xffffffff": {"persistent": {"persistent://a/b/z": _stats(publishers=[{}, {}])}}}}
    tl = TI.parse_broker_stats_topics(obj, source="s.json")
    assert tl.names == ("persistent://a/b/x", "non-persistent://a/b/y", "persistent://a/b/z")
    assert tl.msg_rate.tolist() == [30.0, 21.5, 30.0]
    assert tl.throughput.tolist() == [3000.0] * 3
    assert tl.sessions.tolist() == [3, 3, 3]
    assert tl.reported_bundles == ("a/b/0x00000000_0x80000000", "a/b/0x00000000_0x80000000",
                                   "a/b/0x80000000_0xffffffff")
    assert tl.layouts["a/b"].tolist() == [0, 0x80000000, 0xFFFFFFFF]  # the two ranges cover the namespace


def test_topics011_broker_stats_partial_ranges_give_no_layout():
    obj = {"a/b": {"0x00000000_0x40000000": {"persistent": {"persistent://a/b/x": _stats()}}}}
    assert TI.parse_broker_stats_topics(obj).layouts == {}


@pytest.mark.parametrize("obj, match", [
    ([1], "broker-stats"),
    ({"a/b": 5}, "bundles"),
    ({"a/b": {"nonsense": {}}}, "invalid bundle range"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": _stats(msgRateIn=-1.0)}}}}, "msgRateIn"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": _stats(msgRateOut="fast")}}}}, "msgRateOut"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": _stats(msgThroughputIn=True)}}}}, "number"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://c/d/x": _stats()}}}}, "listed under a/b"),
    ({"a/b": {"0x0_0x1": {"persistent": {"non-persistent://a/b/x": _stats()}}}}, "listed under"),
    ({"a/b": {"0x0_0x1": {"queue": {}}}}, "domain"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": 3}}}}, "object"),
    ({"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": _stats(producerCount=-2)}}}}, "producerCount"),
])
def test_topics012_bad_broker_stats(obj, match):
    with pytest.raises(InputError, match=match) as ei:
        TI.parse_broker_stats_topics(obj, source="s.json")
    assert ei.value.source == "s.json"


def test_topics013_nan_literal_is_rejected():
    with pytest.raises(InputError, match="JSON"):
        TI.read_topics_text('{"a/b": {"0x0_0x1": {"persistent": {"persistent://a/b/x": {"msgRateIn": NaN}}}}}')


# ------------------------------------------------------------------------------------------
# snapshot bundleTopics
# ------------------------------------------------------------------------------------------

def test_topics020_snapshot_bundle_topics_and_layout_from_all_bundle_names():
    snap = {"brokers": {"b1:8080": {"bundles": ["a/b/0x80000000_0xffffffff"], "lastStats": {}}},
            "bundleData": {"a/b/0x40000000_0x80000000": {}},
            "bundleTopics": {"a/b/0x00000000_0x40000000": ["persistent://a/b/x", "a/b/y"]}}
    tl = TI.parse_bundle_topics(snap, source="snap.json")
    assert tl.names == ("persistent://a/b/x", "persistent://a/b/y")
    assert tl.reported_bundles == ("a/b/0x00000000_0x40000000",) * 2
    assert tl.layouts["a/b"].tolist() == [0, 0x40000000, 0x80000000, 0xFFFFFFFF]


def test_topics021_object_with_bundle_topics_attribute():
    class Snap:
        bundle_topics = {"a/b/0x00000000_0xffffffff": ["persistent://a/b/x"]}

    assert TI.parse_bundle_topics(Snap()).names == ("persistent://a/b/x",)


@pytest.mark.parametrize("obj, match", [
    ({"brokers": {}}, "bundleTopics"),
    ({"bundleTopics": []}, "bundleTopics"),
    ({"bundleTopics": {"a/b/zz": []}}, "invalid bundle range"),
    ({"bundleTopics": {"a/b/0x00000000_0xffffffff": "persistent://a/b/x"}}, "list"),
    ({"bundleTopics": {"a/b/0x00000000_0xffffffff": ["persistent://c/d/x"]}}, "namespace"),
    ({"bundleTopics": {"a/b/0x00000000_0xffffffff": [None]}}, "string"),
])
def test_topics022_bad_snapshots(obj, match):
    with pytest.raises(InputError, match=match):
        TI.read_topics_text(json.dumps(obj), source="snap.json")


# ------------------------------------------------------------------------------------------
# generated, files
# ------------------------------------------------------------------------------------------

def test_topics030_generated_specs():
    tl = TI.generate_topics("gen:persistent://vivo/ns/t:30")
    assert len(tl) == 30 and tl.names[29] == "persistent://vivo/ns/t-partition-29" and tl.format == "generated"
    tl = TI.generate_topics("gen:a/b/t:2, a/b/u, persistent://a/b/v")
    assert tl.names == ("persistent://a/b/t-partition-0", "persistent://a/b/t-partition-1",
                        "persistent://a/b/u", "persistent://a/b/v")
    for bad in ["gen:", "gen:a/b/t:x", "gen:a/b/t:0", "gen:a/b/t:3,", "gen:a/b:3", "gen:a/b/t-partition-1:2"]:
        with pytest.raises(InputError):
            TI.generate_topics(bad)


def test_topics031_files(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("a/b/x\n")
    assert TI.load_topics(str(p)).names == ("persistent://a/b/x",)
    with pytest.raises(InputError, match="cannot read"):
        TI.load_topics(str(tmp_path / "missing.txt"))
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"a/b/\xff\xfe\n")
    with pytest.raises(InputError, match="UTF-8"):
        TI.load_topics(str(bad))
    with pytest.raises(InputError, match="JSON"):
        TI.read_topics_text("{not json", source="x")
    with pytest.raises(InputError):
        TI.load_topics("gen:a/b/t:3", partitions_of={"a/b/t": 2})


# ------------------------------------------------------------------------------------------
# shipped samples
# ------------------------------------------------------------------------------------------

def test_topics040_samples_parse():
    assert len(TI.load_topics(str(SAMPLES / "topics-list.txt"))) == 9
    pt = TI.load_topics(str(SAMPLES / "partitioned-topics.txt"), partitions_of={"events": 12, "orders": 6})
    assert len(pt) == 18
    bs = TI.load_topics(str(SAMPLES / "broker-stats-topics.json"))
    assert bs.format == "broker-stats" and bs.has_traffic and len(bs) == 15
    sn = TI.load_topics(str(SAMPLES / "snapshot-bundle-topics.json"))
    assert sn.format == "bundle-topics" and len(sn) == 17 and "tenant-a/ns1" in sn.layouts


@pytest.mark.parametrize("sample", ["broker-stats-topics.json", "snapshot-bundle-topics.json"])
def test_topics041_sample_topics_hash_into_their_reported_bundle(sample):
    """Independent check of the samples: zlib CRC-32 of each name lies in the range it is listed under."""
    tl = TI.load_topics(str(SAMPLES / sample))
    for name, bundle in zip(tl.names, tl.reported_bundles):
        lo, up = (int(x, 16) for x in bundle.rsplit("/", 1)[1].split("_"))
        assert lo <= crc(name) < up, (name, bundle)


def test_topics042_traffic_arrays_are_floats():
    tl = TI.load_topics(str(SAMPLES / "broker-stats-topics.json"))
    assert tl.msg_rate.dtype == np.float64 and np.all(tl.msg_rate >= 0)
