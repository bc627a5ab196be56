"""Java semantics: float32 percentages, String.hashCode, HashMap order, (int) casts."""
import math

import numpy as np
import pytest

from engine.javacompat import (
    guava_crc32_as_int,
    hashmap_capacity,
    java_abs_int,
    java_int,
    java_map_order,
    java_string_hash,
    java_string_hashes,
    percent_usage,
    percent_usage_array,
)


@pytest.mark.parametrize("usage,limit,expected", [
    (999, 1000, 99.9000015258789),      # verified on a JVM (reference §1.1)
    (30, 100, 30.000001907348633),
    (10, 100, 10.0),
    (80, 100, 80.0),
    (140, 100, 140.0),                  # over 100 % allowed
    (5, 0, 0.0),                        # limit <= 0 -> 0
    (5, -1, 0.0),
])
def test_percent_usage_float32(usage, limit, expected):
    assert percent_usage(usage, limit) == expected
    assert percent_usage_array([usage], [limit])[0] == expected


def test_percent_usage_differs_from_double_arithmetic():
    # the reason for the emulation: plain double gives 30.0, Java gives 30.000001907348633
    assert 30 / 100 * 100 == 30.0
    assert percent_usage(30, 100) != 30.0


def test_string_hash_known_values():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    # 32-bit wrap to negative
    assert java_string_hash("polygenelubricants") == -2147483648


def test_vectorised_hashes_match_scalar():
    keys = [f"persistent://tenant-{i}/ns-é/topic-{i * 7}" for i in range(300)] + ["", "x"]
    keys += ["t/" + "n" * 1500 + f"/{i}" for i in range(3)]  # longer than any table of powers of 31 so far
    from engine import javacompat

    javacompat._hash_cache.clear()
    vec = java_string_hashes(keys)
    javacompat._hash_cache.clear()
    assert vec.tolist() == [java_string_hash(k) for k in keys]


def test_hashmap_order_reference_examples():
    # pulsar-load-balancing.md §1.4, verified on a JVM
    assert java_map_order([f"broker{i}:8080" for i in range(100)])[:5] == [
        "broker83:8080", "broker22:8080", "broker3:8080", "broker67:8080", "broker19:8080"]
    assert java_map_order([f"bundle-{i}" for i in range(11)]) == [
        "bundle-0", "bundle-2", "bundle-1", "bundle-10", "bundle-8", "bundle-7", "bundle-9", "bundle-4",
        "bundle-3", "bundle-6", "bundle-5"]
    assert java_map_order([f"broker-{i}" for i in range(11)]) == [
        "broker-8", "broker-9", "broker-6", "broker-7", "broker-10", "broker-4", "broker-5", "broker-2",
        "broker-3", "broker-0", "broker-1"]


def test_hashmap_capacity_growth():
    assert hashmap_capacity(0) == 16 and hashmap_capacity(12) == 16 and hashmap_capacity(13) == 32
    # ConcurrentHashMap resizes when the count reaches 3/4
    assert hashmap_capacity(11, concurrent=True) == 16 and hashmap_capacity(12, concurrent=True) == 32
    # a map that starts from a table of 32
    assert hashmap_capacity(24, initial=32) == 32 and hashmap_capacity(25, initial=32) == 64


def test_same_bucket_keeps_insertion_order():
    # "Aa" and "BB" share a hash: iteration keeps insertion order inside the bucket
    assert java_map_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_map_order(["Aa", "BB"]) == ["Aa", "BB"]


def test_concurrent_hash_map_resize_reorders_a_shared_bin():
    # ConcurrentHashMap.transfer keeps a bin's last run of same-bit nodes and puts the nodes before it in
    # reverse order: the order Java 17 iterates these 12 keys in (broker-4 before broker-1, 13 before 10)
    names = [f"pulsar-broker-{i}:8080" for i in (1, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)]
    chm = java_map_order(names, concurrent=True)
    assert chm == [f"pulsar-broker-{i}:8080" for i in (8, 15, 12, 11, 14, 7, 16, 4, 1, 13, 10, 9)]
    # a HashMap filled in that order (AvgShedder's brokerScoreMap), as Java 17 iterates it
    assert java_map_order(chm) == [f"pulsar-broker-{i}:8080" for i in (8, 15, 12, 7, 16, 11, 4, 1, 14, 13, 10, 9)]


def test_many_concurrent_maps_at_once_iterate_as_each_map_alone():
    """chm_group_ranks (every map's resizes replayed together) gives each map's own ConcurrentHashMap
    order: maps of 0 to 400 keys, full hashes and hashes of a few bits (bins shared through every resize)."""
    from engine.javacompat import _chm_order, chm_group_ranks

    rng = np.random.default_rng(5)
    for trial in range(120):
        sizes = rng.integers(0, 400 if trial % 3 else 30, size=int(rng.integers(1, 6)))
        hi = 2**31 if trial % 2 else 64
        spreads = [rng.integers(0, hi, size=s) for s in sizes]
        group = np.repeat(np.arange(len(sizes)), sizes)
        got = chm_group_ranks(np.concatenate(spreads), group, len(sizes))
        off = 0
        for sp in spreads:
            want = np.empty(len(sp), dtype=np.int64)
            want[_chm_order(sp.tolist())] = np.arange(len(sp))
            assert got[off:off + len(sp)].tolist() == want.tolist()
            off += len(sp)


def test_unload_order_follows_the_shedders_multimap():
    """Guava's ArrayListMultimap: a HashMap table of 16; OverloadShedder keeps its multimap (and the grown
    table) across cycles, AvgShedder builds a new one each cycle."""
    from engine.load_manager import unload_broker_rank
    from engine.strategies import make_shedding

    three = ["broker-6:8080", "broker-4:8080", "broker-5:8080"]
    many = [f"b{i}:8080" for i in range(13)]  # past 12 keys: the table doubles to 32
    for name, after_growth in (("OverloadShedder", ["broker-6:8080", "broker-4:8080", "broker-5:8080"]),
                               ("AvgShedder", ["broker-5:8080", "broker-6:8080", "broker-4:8080"])):
        s = make_shedding(name)
        first = unload_broker_rank(s, three).tolist()
        assert [three[i] for i in sorted(range(3), key=first.__getitem__)] == [
            "broker-5:8080", "broker-6:8080", "broker-4:8080"]
        unload_broker_rank(s, many)
        again = unload_broker_rank(s, three).tolist()
        assert [three[i] for i in sorted(range(3), key=again.__getitem__)] == after_growth


def test_java_int_truncation():
    assert java_int(1916.9) == 1916
    assert java_int(-1680.7) == -1680
    assert java_int(math.nan) == 0
    assert java_int(1e12) == 2**31 - 1 and java_int(-1e12) == -(2**31)


def test_abs_and_crc32():
    assert java_abs_int(-(2**31)) == -(2**31)
    assert java_abs_int(-5) == 5
    import zlib

    v = zlib.crc32(b"12345")
    assert guava_crc32_as_int("12345") == (v - 2**32 if v >= 2**31 else v)


def test_vectorised_hashes_with_part_of_the_names_seen_before():
    """Names hashed before come from the cache, the rest are computed (in bulk above four names, one by one
    below): the same values as hashing every name afresh, in the caller's order."""
    from engine import javacompat

    keys = [f"tenant/ns-{i % 5}/0x{i:08x}_0x{i + 1:08x}" for i in range(400)] + ["t/é/x", "Aa", "BB"]
    javacompat._hash_cache.clear()
    fresh = [java_string_hash(k) for k in keys]
    for seen in (keys[::2], keys[:-10], keys[:-3], keys[::50]):  # many / a few / three / most missing
        javacompat._hash_cache.clear()
        java_string_hashes(seen)
        assert java_string_hashes(keys).tolist() == fresh
        assert java_string_hashes(keys).tolist() == fresh  # now all cached
    javacompat._hash_cache.clear()


def test_entry_points_decide_quietly_and_leave_the_process_as_it_was():
    """A load manager entry point computes Java's Infinity and NaN without numpy warnings, holds cyclic
    GC off while it runs, and gives both back as they were, after an exception too; an entry point
    called inside another changes nothing."""
    import gc
    import warnings

    from engine.javacompat import java_double_math

    seen = []

    @java_double_math
    def inner():
        seen.append(("inner", gc.isenabled(), np.geterr()["over"]))
        return np.float64(1e308) * 10

    @java_double_math
    def outer(fail=False):
        x = np.array([1.0, 0.0]) / np.array([0.0, 0.0])  # Infinity and NaN, as in Java
        seen.append(("outer", gc.isenabled(), np.geterr()["invalid"]))
        y = inner()
        if fail:
            raise ValueError("boom")
        return x, y

    old = np.seterr(over="raise", invalid="warn", divide="warn")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # any RuntimeWarning fails the test
            x, y = outer()
            assert np.isinf(x[0]) and np.isnan(x[1]) and np.isinf(y)
            with pytest.raises(ValueError):
                outer(fail=True)
        assert seen[:2] == [("outer", False, "ignore"), ("inner", False, "ignore")]
        assert gc.isenabled()
        assert np.geterr()["over"] == "raise" and np.geterr()["invalid"] == "warn"
        with pytest.raises(FloatingPointError):
            np.float64(1e308) * 10
        gc.disable()
        try:
            outer()
            assert not gc.isenabled()  # left off, as the caller had it
        finally:
            gc.enable()
    finally:
        np.seterr(**old)


def test_avgshedder_drawn_hash_is_math_abs_of_the_crc32_as_a_signed_int():
    """AvgShedder's placement without a plan indexes its candidates by ``Math.abs`` of the CRC-32 (as a
    signed int) of the random int's decimal text; the written-out form equals composing the Java helpers
    for every draw whose CRC is not Integer.MIN_VALUE (half of them have the sign bit set)."""
    import numpy as np

    from engine.shedding.avg_shedder import _drawn_hash

    rs = np.random.default_rng(4).integers(-2**31, 2**31, size=5000).tolist() + [0, -1, 2**31 - 1, -2**31]
    signed = 0
    for r in rs:
        want = java_abs_int(guava_crc32_as_int(str(r)))
        assert want != -(2**31)
        assert _drawn_hash(r, (1.0, 2)) == want
        signed += guava_crc32_as_int(str(r)) < 0
    assert 2000 < signed < 3000
