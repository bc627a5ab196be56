"""Parsing ``nodes -d`` / ``app NAME -d`` text and the JSON form; bad input -> InputError."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InputError
from engine.pegasus.model import HostPort
from engine.pegasus.parse import (load_snapshot, parse_snapshot, parse_snapshot_json,
                                  parse_snapshot_text, snapshot_to_json)
from engine.pegasus.shell_text import format_snapshot_text

from .random_clusters import random_snapshot

SAMPLES = "samples/pegasus"

# As printed by the shell (two tables cat'ed after `nodes -d`; CRLF line ends; numbers of
# `nodes -d` right-aligned; the [nodes] totals row starts with an empty cell).
REAL = """>>> nodes -d\r
[details]\r
address             status   replica_count  primary_count  secondary_count\r
10.132.5.1:34801    ALIVE                4              2                2\r
10.132.5.2:34801    ALIVE                4              1                3\r
10.132.5.3:34801    ALIVE                3              1                2\r
10.132.5.5:34801    UNALIVE              0              0                0\r
\r
[summary]\r
total_node_count    : 4\r
alive_node_count    : 3\r
unalive_node_count  : 1\r
\r
>>> app temp -d\r
[parameters]\r
app_name  : temp\r
detailed  : true\r
\r
[general]\r
app_name           : temp\r
app_id             : 2\r
partition_count    : 4\r
max_replica_count  : 3\r
\r
[replicas]\r
pidx  ballot  replica_count  primary            secondaries\r
0     3       3/3            10.132.5.1:34801   [10.132.5.2:34801,10.132.5.3:34801]\r
1     3       3/3            10.132.5.2:34801   [10.132.5.1:34801,10.132.5.3:34801]\r
2     4       2/3            10.132.5.1:34801   [10.132.5.2:34801]\r
3     5       0/3            -                  []\r
\r
[nodes]\r
node              primary  secondary  total\r
10.132.5.1:34801  2        1          3\r
10.132.5.2:34801  1        2          3\r
10.132.5.3:34801  0        2          2\r
                  3        5          8\r
\r
[healthy]\r
fully_healthy_partition_count   : 2\r
unhealthy_partition_count       : 2\r
write_unhealthy_partition_count : 1\r
read_unhealthy_partition_count  : 1\r
\r
>>> app stat -d\r
[parameters]\r
app_name  : stat\r
detailed  : true\r
\r
[general]\r
app_name           : stat\r
app_id             : 3\r
partition_count    : 1\r
max_replica_count  : 3\r
\r
[replicas]\r
pidx  ballot  replica_count  primary            secondaries\r
0     3       3/3            10.132.5.3:34801   [10.132.5.1:34801,10.132.5.2:34801]\r
\r
"""


def hp(s):
    return HostPort.parse(s)


def test_parse001_real_shell_text_two_tables_and_nodes():
    snap = parse_snapshot_text(REAL, "real.txt")
    assert [(t.app_id, t.app_name, t.partition_count) for t in snap.tables] == [(2, "temp", 4),
                                                                               (3, "stat", 1)]
    temp = snap.table("temp")
    assert temp.partitions[0].primary == hp("10.132.5.1:34801")
    assert temp.partitions[0].secondaries == (hp("10.132.5.2:34801"), hp("10.132.5.3:34801"))
    assert temp.partitions[3].primary is None and temp.partitions[3].secondaries == ()
    assert temp.partitions[2].ballot == 4
    dead = snap.node(hp("10.132.5.5:34801"))
    assert not dead.alive and dead.disks == ("default",)
    assert all(tag == "default" for p in temp.partitions for _hp, tag in p.disks)
    # nodes -d counts cover both tables (10.132.5.1: 3 of temp + 1 of stat): no warning
    assert snap.warnings == ()


def test_parse002_balanced_docs_sample():
    snap = load_snapshot(f"{SAMPLES}/balanced-4-nodes.txt")
    (t,) = snap.tables
    assert (t.app_name, t.partition_count, t.max_replica_count, len(snap.nodes)) == ("temp", 8, 3, 4)
    for node in snap.nodes:
        pri = sum(1 for p in t.partitions if p.primary == node.address)
        sec = sum(1 for p in t.partitions if node.address in p.secondaries)
        assert (pri, sec) == (2, 4)


def test_parse003_node_added_sample_keeps_the_empty_node():
    snap = load_snapshot(f"{SAMPLES}/node-added.txt")
    new = hp("10.0.0.4:34801")
    assert new in {n.address for n in snap.nodes}
    assert all(new not in p.members for t in snap.tables for p in t.partitions)
    assert snap.insertion_order[-1] == new                 # inserted on its first heartbeat


def test_parse004_warning_when_nodes_d_counts_more_tables_than_given():
    text = REAL.replace("10.132.5.1:34801    ALIVE                4", "10.132.5.1:34801    ALIVE                9")
    snap = parse_snapshot_text(text, "x.txt")
    assert any("counts 9 replicas on 10.132.5.1:34801" in w for w in snap.warnings)


def _cut_rows(text, keep):
    out, seen = [], 0
    for line in text.split("\n"):
        if line[:1].isdigit() and "3/3" in line:
            seen += 1
            if seen > keep:
                continue
        out.append(line)
    return "\n".join(out)


BALANCED = open(f"{SAMPLES}/balanced-4-nodes.txt").read()

BAD_TEXT = [
    ("", "empty input"),
    ("hello\nworld\n", "no [section] found"),
    (BALANCED.replace("[10.0.0.3:34801,10.0.0.4:34801]\n6", "[10.0.0.3:34801,10.0.\n6"),
     "are not '[host:port,...]'"),
    (BALANCED.split("5     3       3/3")[0], "lists 5 of 8 partitions"),
    (_cut_rows(BALANCED, 6).replace("[nodes]", "[xnodes]"), "lists 6 of 8 partitions"),
    (BALANCED.replace("10.0.0.2:34801  2        4          6",
                      "10.0.0.2:34801  3        4          7"), "listed with 3 primaries"),
    (BALANCED.replace("0     3       3/3            10.0.0.1:34801",
                      "0     3       3/3            10.0.0.1:99999"), "invalid port"),
    (BALANCED.replace("0     3       3/3", "0     3       2/3"), "replica_count says 2"),
    (BALANCED.replace("10.0.0.2:34801  ALIVE", "10.0.0.2:34801  DEAD"), "neither ALIVE nor UNALIVE"),
    (BALANCED.replace("10.0.0.4:34801  ALIVE               6              2                4\n",
                      "").replace("total_node_count   : 4", "total_node_count   : 3"),
     "does not list it"),
    (BALANCED.replace("total_node_count   : 4", "total_node_count   : 5"), "total_node_count is 5"),
    (BALANCED.replace("partition_count   : 8", "partition_cnt     : 8"), "missing partition_count"),
    (BALANCED.replace("app_id            : 2", "app_id            : two"), "app_id 'two' is not an integer"),
    (BALANCED.replace("1     3       3/3", "0     3       3/3"), "partition 0 listed twice"),
    (BALANCED.split("[replicas]")[0], "no [replicas] section"),
    ("[replicas]\npidx ballot replica_count primary secondaries\n0 1 0/3 - []\n",
     "without the [general] section"),
    (BALANCED + BALANCED.split(">>> app temp -d")[1], "app_id 2 appears in two tables"),
    (BALANCED.replace("fully_healthy_partition_count   : 8", "fully_healthy_partition_count   : 7"),
     "fully_healthy_partition_count is 7"),
    (BALANCED.replace("[10.0.0.2:34801,10.0.0.3:34801]", "[10.0.0.2:34801,10.0.0.2:34801]", 1),
     "a node appears twice"),
    (BALANCED.replace("pidx  ballot", "idx  ballot"), "expected the header"),
]


@pytest.mark.parametrize("text,message", BAD_TEXT, ids=[m for _t, m in BAD_TEXT])
def test_parse005_bad_or_truncated_text_gives_a_clear_input_error(text, message):
    with pytest.raises(InputError) as exc:
        parse_snapshot(text, "bad.txt")
    assert message in str(exc.value)
    assert exc.value.source == "bad.txt" and "\n" not in str(exc.value)


def test_parse006_bytes_that_are_not_text():
    with pytest.raises(InputError, match="not UTF-8"):
        parse_snapshot(b"\xff\xfe\x00[general]", "b.bin")
    with pytest.raises(InputError, match="binary"):
        parse_snapshot(b"[general]\x00\x00", "b.bin")
    with pytest.raises(InputError, match="No such file"):
        load_snapshot(f"{SAMPLES}/does-not-exist.txt")
    with pytest.raises(InputError, match="directory"):
        load_snapshot(SAMPLES)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.integers(0, len(BALANCED)), st.integers(0, 200))
def test_parse007_any_cut_or_dropped_line_is_a_result_or_an_input_error(cut, drop):
    for text in (BALANCED[:cut], "\n".join(l for i, l in enumerate(BALANCED.split("\n")) if i != drop)):
        try:
            snap = parse_snapshot(text, "cut.txt")
        except InputError as exc:
            assert str(exc).startswith("cut.txt")
        else:
            assert snap.tables and all(len(set(p.members)) == len(p.members)
                                       for t in snap.tables for p in t.partitions)


def test_parse008_json_round_trip_of_the_sample():
    snap = load_snapshot(f"{SAMPLES}/dead-node-two-disks.json")
    again = parse_snapshot_json(json.dumps(snapshot_to_json(snap)), snap.source)
    assert again == snap
    assert {n.disks for n in snap.nodes} == {("data0", "data1")}
    assert not snap.node(hp("10.0.0.5:34801")).alive and snap.now_ms == 1_700_000_000_000


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.integers(0, 10_000))
def test_parse009_shell_text_round_trip(seed):
    snap = random_snapshot(seed, multi_disk=False)
    again = parse_snapshot_text(format_snapshot_text(snap), snap.source)
    assert again.tables == snap.tables and again.nodes == snap.nodes
    assert again.insertion_order == snap.insertion_order


BAD_JSON = [
    ("{not json", "not valid JSON"),
    ("{}", "field tables: missing"),
    ('{"tables": [], "now_ms": "soon"}', "field now_ms: must be an integer"),
    ('{"tables": 3}', "field tables: must be a list"),
    ('{"tables": [{"app_id": 1, "app_name": "t"}]}', "field tables[0].partitions: missing"),
    ('{"format": "other/2", "tables": []}', "unknown format"),
    ('{"tables": [{"app_id": 1, "app_name": "t", "partitions": [{"primary": 5}]}]}',
     "must be a string or null"),
    ('{"nodes": [{"address": "a:1", "disks": ["d0", "d1"]}], "tables": [{"app_id": 1, '
     '"app_name": "t", "partitions": [{"primary": "a:1"}]}]}', "say which one holds"),
    ('{"nodes": [{"address": "a:1", "disks": ["d0"]}], "tables": [{"app_id": 1, "app_name": "t",'
     ' "partitions": [{"primary": "a:1", "disks": {"a:1": "d9"}}]}]}', "does not list"),
    ('{"tables": [{"app_id": 1, "app_name": "t", "partition_count": 2, "partitions": '
     '[{"primary": "a:1"}]}]}', "has 1 of 2 partitions"),
    ('{"node_map_order": ["z:9"], "tables": [{"app_id": 1, "app_name": "t", "partitions": '
     '[{"primary": "a:1"}]}]}', "is not a node"),
    ('{"nodes": [{"address": "a:1", "status": "zombie"}], "tables": []}', "ALIVE or UNALIVE"),
    ('{"tables": [{"app_id": 1, "app_name": "t", "status": "weird", "partitions": []}]}',
     "unknown status"),
]


@pytest.mark.parametrize("text,message", BAD_JSON, ids=[m for _t, m in BAD_JSON])
def test_parse010_bad_json_gives_a_clear_input_error(text, message):
    with pytest.raises(InputError) as exc:
        parse_snapshot(text, "bad.json")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_parse011_json_defaults_one_disk_and_explicit_node_order():
    data = {"node_map_order": ["c:1", "a:1"],
            "tables": [{"app_id": 4, "app_name": "t",
                        "partitions": [{"primary": "a:1", "secondaries": ["b:1", "c:1"]}]}]}
    snap = parse_snapshot_json(data, "x.json")
    assert snap.tables[0].partition_count == 1 and snap.tables[0].max_replica_count == 3
    assert [str(h) for h in snap.insertion_order] == ["c:1", "a:1", "b:1"]
    assert all(n.disks == ("default",) and n.alive for n in snap.nodes)
