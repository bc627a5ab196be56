"""Top-K bundle reports (§8.2) and NamespaceBundleStats.compareTo (§2.1)."""
import random

import numpy as np
import pytest

from engine.config import LoadBalancerConfig
from engine.extensible import bundle_stats_key, compare_bundle_stats, top_k_bundles
from engine.extensible.top_bundles import java_math_round, partition_sort, top_k_for_brokers
from engine.model import NamespaceBundleStats as S


def test_math_round_is_half_up_unlike_python_round():
    assert [java_math_round(x) for x in (0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996)] == [1, 2, 3, 0, -1, 2]
    assert round(2.5) == 2  # Python's banker's rounding would differ
    assert java_math_round(0.49999999999999994) == 0  # exact floor(x + 1/2), not fp addition


def test_compare_to_resolutions():
    # throughput in: 100 KB/s resolution, Math.round: 250000 -> round(2.5) = 3 == round(3.49999) = 3
    assert compare_bundle_stats(S(msg_throughput_in=250_000), S(msg_throughput_in=349_999)) == 0
    assert compare_bundle_stats(S(msg_throughput_in=249_999), S(msg_throughput_in=250_000)) == -1
    # then throughput out, then msg rate in + out at 100 msg/s
    assert compare_bundle_stats(S(msg_throughput_in=1e5, msg_throughput_out=4e5),
                                S(msg_throughput_in=1e5, msg_throughput_out=3e5)) == 1
    assert compare_bundle_stats(S(msg_rate_in=100, msg_rate_out=49), S(msg_rate_in=50, msg_rate_out=50)) == 0
    assert compare_bundle_stats(S(msg_rate_in=100, msg_rate_out=50), S(msg_rate_in=50, msg_rate_out=50)) == 1
    # then (topics + consumers + producers) / 500 and cacheSize / 100000 in integer division
    assert compare_bundle_stats(S(topics=499), S(topics=0)) == 0
    assert compare_bundle_stats(S(topics=300, consumer_count=150, producer_count=50), S(topics=499)) == 1
    assert compare_bundle_stats(S(cache_size=199_999), S(cache_size=100_000)) == 0
    assert bundle_stats_key(S(msg_throughput_in=150_000, msg_throughput_out=50_000, msg_rate_in=150,
                              topics=1000, cache_size=250_000)) == (2, 1, 2, 2, 2)


def _stats(rates):
    return {f"t/n/0x{i:08x}_0x{i + 1:08x}": S(msg_throughput_in=r * 1e5) for i, r in enumerate(rates)}


def test_top_k_is_ascending_and_limited():
    st = _stats([5, 1, 9, 3, 7, 2, 8])
    got = top_k_bundles(st, 3, LoadBalancerConfig())
    assert [b.stats.msg_throughput_in / 1e5 for b in got] == [7, 8, 9]
    default_k = LoadBalancerConfig().loadBalancerMaxNumberOfBundlesInBundleLoadReport
    assert default_k == 10
    assert len(top_k_bundles(_stats(range(1, 15)), None, LoadBalancerConfig())) == 10
    assert [b.throughput for b in top_k_bundles(st, 100)] == sorted(b.msg_throughput_in for b in st.values())


def test_top_k_filters():
    cfg = LoadBalancerConfig().with_values({"loadBalancerSheddingExcludedNamespaces": "ex/ns"})
    st = {"t/n/0x00000000_0x10000000": S(msg_throughput_in=1e5),
          "t/n/0x10000000_0x20000000": S(msg_rate_in=100.0),  # no throughput
          "pulsar/system/0x00000000_0xffffffff": S(msg_throughput_in=9e5),
          "pulsar/broker-1:8080/0x00000000_0xffffffff": S(msg_throughput_in=9e5),  # heartbeat
          "sla-monitor/c1/broker-1:8080/0x00000000_0xffffffff": S(msg_throughput_in=9e5),
          "ex/ns/0x00000000_0xffffffff": S(msg_throughput_in=9e5),
          "pol/ns/0x00000000_0xffffffff": S(msg_throughput_in=9e5)}
    policies = lambda ns: ns == "pol/ns"  # noqa: E731
    assert [b.bundle_name for b in top_k_bundles(st, 10, cfg, policies)] == ["t/n/0x00000000_0x10000000"]
    cfg2 = cfg.with_values({"loadBalancerSheddingBundlesWithPoliciesEnabled": True})
    assert {b.bundle_name for b in top_k_bundles(st, 10, cfg2, policies)} == {
        "t/n/0x00000000_0x10000000", "pol/ns/0x00000000_0xffffffff"}


def test_partition_sort_keeps_exactly_the_top_k_with_ties():
    rng = random.Random(7)
    for _ in range(3000):
        n = rng.randint(1, 25)
        k = rng.randint(1, n)
        vals = [(rng.randint(0, 6), i) for i in range(n)]
        arr = list(vals)
        partition_sort(arr, k, lambda a, b: (a[0] > b[0]) - (a[0] < b[0]))
        assert sorted(arr) == sorted(vals)  # a permutation
        assert [v for v, _ in arr[:k]] == sorted((v for v, _ in vals), reverse=True)[:k]


def test_partition_sort_on_ints_moves_as_the_comparator_version():
    from engine.extensible.top_bundles import _partition_sort_ints

    rng = random.Random(11)
    for _ in range(2000):
        n = rng.randint(1, 60)
        k = rng.randint(1, n)
        keys = [rng.randint(0, rng.choice([2, 6, 1000])) for _ in range(n)]
        arr = list(range(n))
        partition_sort(arr, k, lambda a, b: (keys[a] > keys[b]) - (keys[a] < keys[b]))
        ids, ks = list(range(n)), list(keys)
        _partition_sort_ints(ids, ks, k)
        assert ids[:k] == arr[:k]
        assert ks[:k] == [keys[i] for i in arr[:k]]


@pytest.mark.parametrize("k", [1, 4, 10])
def test_top_k_matches_a_brute_force_ranking(k):
    rng = random.Random(k)
    st = {f"t/n/0x{i:08x}_0x{i + 1:08x}": S(msg_throughput_in=rng.choice([1, 2, 3]) * 1e5,
                                             msg_rate_in=rng.choice([0, 100, 300])) for i in range(30)}
    got = top_k_bundles(st, k)
    keys = sorted((bundle_stats_key(s) for s in st.values()), reverse=True)[:k]
    assert [bundle_stats_key(b.stats) for b in got] == keys[::-1]


@pytest.mark.parametrize("version", ["3.0.7", "4.0.8", "4.2.4"])
def test_top_k_of_many_brokers_is_each_brokers_own_list(version):
    """All brokers at once (read off one sort where no tie decides) gives exactly each broker's
    top_k_bundles list, ties, system and excluded namespaces, policies and small K included."""
    rng = random.Random(version)
    maps = []
    for b in range(120):
        st = {}
        for i in range(rng.choice([0, 1, 3, 10, 11, 30])):
            scale = rng.choice([1e5, 1e6, 3e6])
            st[f"t/ns{rng.randrange(5)}/0x{rng.randrange(1 << 32):08x}_0x{i:08x}"] = S(
                msg_throughput_in=rng.random() * scale * rng.choice([0, 1]), msg_throughput_out=rng.random() * scale,
                msg_rate_in=rng.random() * 300, msg_rate_out=rng.random() * rng.choice([1, 300]),
                topics=rng.randrange(600), consumer_count=rng.randrange(3), cache_size=rng.randrange(300_000))
        if b % 7 == 0:
            st["pulsar/system/0x00000000_0xffffffff"] = S(msg_throughput_in=9e9)
        maps.append(st)
    policies = lambda ns: ns == "t/ns2"  # noqa: E731
    for extra in ({}, {"loadBalancerMaxNumberOfBundlesInBundleLoadReport": "3"},
                  {"loadBalancerSheddingExcludedNamespaces": "t/ns1"}):
        cfg = LoadBalancerConfig().with_values(dict(extra, pulsarVersion=version))
        for pol in (None, policies):
            want = [[(x.bundle_name, x.stats) for x in top_k_bundles(st, None, cfg, pol)] for st in maps]
            got = [[(x.bundle_name, x.stats) for x in lst] for lst in top_k_for_brokers(maps, cfg, pol)]
            assert got == want


@pytest.mark.parametrize("scale", [3, 1 << 20, 1 << 40, 1 << 50, 1 << 60])
def test_rows_by_broker_then_keys_descending(scale):
    """The one sort behind the top-K lists: by broker, then the five keys descending, ties in row order;
    packed into one integer with the row number when all fit, without it when only the keys fit, key by
    key when they do not (huge or negative keys): the same order and the same tie marks every way."""
    from engine.extensible.top_bundles import _by_broker_desc

    rng = np.random.default_rng(scale)
    n = 500
    owner = np.sort(rng.integers(0, 40, n))
    keys = [rng.integers(0, scale, n), rng.integers(0, 3, n), np.zeros(n, dtype=np.int64),
            rng.integers(-1 if scale == 3 else 0, 2, n), np.full(n, 7)]
    order, cut = _by_broker_desc(owner, keys)
    rows = [(int(owner[i]), tuple(-int(x[i]) for x in keys), i) for i in range(n)]
    want = [r[2] for r in sorted(rows)]
    assert order.tolist() == want
    full = [rows[i][:2] for i in want]
    assert cut.tolist() == [full[i + 1] != full[i] for i in range(n - 1)]
