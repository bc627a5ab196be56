"""Appendix A: libstdc++ unordered_map iteration order of the node map (check values of the doc)."""
import pytest

from engine.pegasus.node_order import BUCKETS, MAX_NODES, NodeMap, hash_bytes, hp_hash, iteration_order


def test_node_order001_hash_bytes_check_values():
    assert hash_bytes(b"localhost") == 6216385685797311468
    assert hash_bytes(b"127.0.0.1") == 14224256174011989824


def test_node_order002_hp_hash_xors_the_port():
    assert hp_hash("localhost", 5) == 6216385685797311468 ^ 5


def test_node_order003_loopback_1_to_12_iterates_in_reverse():
    keys = [("127.0.0.1", p) for p in range(1, 13)]
    assert [k[1] for k in iteration_order(keys)] == list(range(12, 0, -1))


def test_node_order004_localhost_1_to_11_reverse_and_12_collides_with_1():
    assert [k[1] for k in iteration_order([("localhost", p) for p in range(1, 12)])] == \
        list(range(11, 0, -1))
    assert [k[1] for k in iteration_order([("localhost", p) for p in range(1, 13)])] == \
        [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 12, 1]


def test_node_order005_seven_hosts_doc_example():
    keys = [(f"10.0.0.{i}", 34801) for i in range(1, 8)]
    assert [k[0] for k in iteration_order(keys)] == [
        "10.0.0.4", "10.0.0.7", "10.0.0.3", "10.0.0.6", "10.0.0.5", "10.0.0.2", "10.0.0.1"]


def test_node_order006_rehash_at_the_14th_insert_and_duplicates_ignored():
    m = NodeMap()
    for p in range(1, 14):
        m.insert(("127.0.0.1", p))
    assert m.bucket_count == 13
    m.insert(("127.0.0.1", 1))           # existing key: nothing changes
    assert len(m) == 13 and m.bucket_count == 13
    m.insert(("127.0.0.1", 14))
    assert m.bucket_count == 29 and len(m) == 14


def test_node_order007_erase_keeps_relative_order():
    keys = [(f"10.0.0.{i}", 34801) for i in range(1, 8)]
    m = NodeMap(keys)
    before = list(m)
    m.erase(("10.0.0.3", 34801))
    m.erase(("10.0.0.99", 1))            # absent: no-op
    assert list(m) == [k for k in before if k != ("10.0.0.3", 34801)]


def test_node_order008_more_nodes_than_verified_raises():
    assert BUCKETS[-1] == MAX_NODES
    m = NodeMap([("h", p) for p in range(1, MAX_NODES + 1)])
    assert len(m) == MAX_NODES
    with pytest.raises(ValueError):
        m.insert(("h", MAX_NODES + 1))
