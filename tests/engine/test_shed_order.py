"""Which bundles a shedding cycle may pick and in which order ties are taken.

``sort_desc`` hashes names only for tied values; its order must be the one of the global
``LoadView.shed_rank`` (the ``getBundleDataForLoadShedding()`` HashMap order). ``sheddable`` finds the
SLA-monitor / heartbeat bundles without splitting every name; it must agree with the namespace rule.
"""
import dataclasses

import numpy as np

from engine import javacompat
from engine.model import bundle_namespace, is_sla_or_heartbeat_namespace
from engine.shedding.base import sort_desc
from engine.view import LoadView

SYSTEM = ["pulsar/10.0.0.{i}:8080/0x00000000_0xffffffff", "pulsar/c1/10.0.0.{i}:8080/0x00000000_0xffffffff",
          "sla-monitor/c1/10.0.0.{i}:8080/0x00000000_0xffffffff"]


def tied_view(names):
    """3 brokers; values on a few levels (zeros most of all, an infinite pair); some bundles without
    BundleData, some in heartbeat / SLA namespaces."""
    nk = len(names)
    rng = np.random.default_rng(5)
    level = rng.choice([0.0, 0.0, 0.0, 1.0, 2.5, 7.0], size=nk)
    level[[3, 40]] = np.inf
    st = np.column_stack([level, level, level, level])
    v = LoadView.from_arrays(brokers=["a:1", "b:1", "c:1"], bundles=names, owner=np.arange(nk) % 3,
                             cpu=np.array([90.0, 50.0, 10.0]), st=st, java_order=False)
    inbd = np.ones(nk, dtype=bool)
    inbd[::17] = False
    return dataclasses.replace(v, in_bundle_data=inbd)


def names_with_system(nk):
    names = [f"tenant/ns{k % 7}/0x{k * 4096:08x}_0x{k * 4096 + 4096:08x}" for k in range(nk)]
    for k in range(5, nk, 23):
        names[k] = SYSTEM[k % 3].format(i=k)
    return names


def test_sort_desc_ties_follow_the_global_hashmap_rank():
    names = names_with_system(600)
    javacompat._hash_cache.clear()  # names never hashed: only the tied ones get hashed
    v = tied_view(names)
    got = [sort_desc(v, v.owned[j], v.short_throughput) for j in range(v.nb)]
    assert len(javacompat._hash_cache) < len(names)
    ref = tied_view(list(names))  # its own name facts: the global rank of every name
    rank = ref.shed_rank
    assert not v.sheddable.all() and (v.short_throughput == 0).sum() > 100
    for j in range(v.nb):
        idx = v.owned[j]
        expected = idx[np.lexsort((rank[idx], -v.short_throughput[idx]))]
        assert got[j].tolist() == expected.tolist()
        # the ties matter: index order alone would differ
        assert expected.tolist() != idx[np.argsort(-v.short_throughput[idx], kind="stable")].tolist()
        # with the rank already computed (hashes of every name known) the same order
        assert sort_desc(ref, idx, v.short_throughput).tolist() == expected.tolist()
    # only sheddable bundles (what the strategies pass), zeros at the end in HashMap order
    idx = v.owned[0][v.sheddable[v.owned[0]]]
    zeros = [k for k in sort_desc(v, idx, v.short_throughput).tolist() if v.short_throughput[k] == 0]
    assert zeros == sorted(zeros, key=lambda k: rank[k]) != sorted(zeros)


def test_sort_desc_reads_the_shared_rank_once_every_name_is_hashed():
    """Views minute after minute over the same names (a backtest): once every name's hash is known, the ties
    are ordered by the rank the views share (computed once, hashing nothing) — the same order as by the
    hashes of the tied names alone; a view whose bundleData differs gets its own rank."""
    names = names_with_system(600)

    def minute(inbd=None, own=False):  # a view over this very list of names, as a backtest keeps it
        v = tied_view(names)
        v.bundles = list(names) if own else names
        return v if inbd is None else dataclasses.replace(v, in_bundle_data=inbd)

    v = minute()
    want = [sort_desc(v, v.owned[j], v.short_throughput).tolist() for j in range(v.nb)]
    assert "shed_rank" not in v.__dict__
    v.shed_keys(np.arange(v.nk))  # every name hashed
    w = minute()  # the next minute's view over the same names
    assert [sort_desc(w, w.owned[j], w.short_throughput).tolist() for j in range(w.nb)] == want
    assert "shed_rank" in w.__dict__
    inbd = w.in_bundle_data.copy()
    inbd[1::5] = False
    x = minute(inbd)
    y = minute(inbd, own=True)  # its own name facts: the keys of the tied names
    for j in range(x.nb):
        idx = x.owned[j][x.sheddable[x.owned[j]]]
        assert sort_desc(x, idx, x.short_throughput).tolist() == sort_desc(y, idx, y.short_throughput).tolist()
    assert x.shed_rank is not w.shed_rank


def test_sort_desc_without_ties_is_by_value_and_hashes_nothing():
    javacompat._hash_cache.clear()
    v = tied_view(names_with_system(60))
    vals = np.arange(60, dtype=float)[::-1] * 0.5
    idx = np.array([7, 2, 59, 0, 13, 41])
    assert sort_desc(v, idx, vals).tolist() == [0, 2, 7, 13, 41, 59]
    assert not javacompat._hash_cache


def test_runs_sorted_at_once_put_every_run_of_ties_in_hashmap_order():
    """``sort_desc_runs`` over even runs (one padded table) and over very uneven ones (one sort on
    (run, value)), with the view's HashMap rank unknown (ties found and ranked after) or known (runs in
    rank order first): per run largest first, NaNs last, and every run of equal values — NaNs among them —
    in the global HashMap rank, while untied bundles stay where their value puts them."""
    from engine.shedding.base import sort_desc_runs

    names = names_with_system(900)
    v = tied_view(names)
    rank = tied_view(list(names)).shed_rank
    rng = np.random.default_rng(11)
    vals = rng.choice([0.0, 1.0, 2.5, np.nan, 7.0, 3.25], size=900)
    vals[rng.choice(900, 300, replace=False)] = rng.random(300)  # untied values between the ties
    ranked = tied_view(names)
    ranked.shed_rank  # noqa: B018 - known before the sort: each run put in rank order, then sorted by value
    cases = [(w, lengths) for lengths in ([40, 55, 38, 61], [400, 3, 1, 2, 90]) for w in (v, ranked)]
    for w, lengths in cases:  # even: the table; uneven: the lexsort
        assert (w.known_shed_rank() is not None) == (w is ranked)
        idx = rng.permutation(900)[: sum(lengths)]
        counts = np.array(lengths)
        got = sort_desc_runs(w, idx, counts, vals).tolist()
        at, expected = 0, []
        for n in lengths:
            run = idx[at:at + n]
            key = np.where(np.isnan(vals[run]), np.inf, -vals[run])
            expected += run[np.lexsort((rank[run], key))].tolist()
            at += n
        assert got == expected
        # the ties decide: by index within each run the order would differ
        assert got != [k for a, n in zip(np.cumsum([0] + lengths[:-1]), lengths)
                       for k in sorted(idx[a:a + n].tolist(), key=lambda k: (np.nan_to_num(-vals[k], nan=np.inf), k))]


def test_runs_sorted_with_the_rank_known_equal_runs_sorted_with_their_ties_ranked_after():
    """Sorting the runs with the view's HashMap rank known (each run in rank order first) gives the order
    of finding the ties and ranking them after: infinities, NaNs, signed zeros and repeated values, runs
    even and uneven, empty runs among them."""
    from engine.shedding.base import sort_desc_runs

    nk = 3600
    names = names_with_system(nk)
    rng = np.random.default_rng(23)
    paths = set()
    for case in range(60):
        lengths = rng.choice([0, 1, 3, 8, 8, 8, 40, 300], size=int(rng.integers(2, 13)))
        if not lengths.sum():
            continue
        vals = rng.choice([0.0, -0.0, 1.0, 2.5, np.nan, np.inf, -np.inf, -3.0], size=nk)
        some = rng.random(nk) < 0.3
        vals[some] = rng.random(int(some.sum()))  # untied values between the ties
        idx = rng.choice(nk, int(lengths.sum()), replace=False)
        cold, ranked = tied_view(list(names)), tied_view(list(names))
        ranked.shed_rank  # noqa: B018
        assert cold.known_shed_rank() is None and ranked.known_shed_rank() is not None
        assert sort_desc_runs(ranked, idx, lengths, vals).tolist() == sort_desc_runs(cold, idx, lengths, vals).tolist()
        paths.add(len(lengths) * int(lengths.max()) <= 4 * int(lengths.sum()))
    assert paths == {True, False}  # both the padded table and the one sort on (run, value)


def test_sheddable_drops_heartbeat_and_sla_bundles_only():
    names = ["pulsar/10.0.0.1:8080/0x00000000_0xffffffff",  # heartbeat, first in the list
             "public/default/0x00000000_0x40000000",
             "pulsar/c1/10.0.0.2:8080/0x00000000_0xffffffff",  # heartbeat with a cluster segment
             "sla-monitor/c1/10.0.0.3:8080/0x00000000_0xffffffff",  # SLA monitor
             "pulsar/system/0x00000000_0x40000000",  # system namespace: sheddable
             "sla-monitor/c1/no-port/0x00000000_0xffffffff",  # not host:port
             "tenant/pulsar/10.0.0.4:8080/0x00000000_0xffffffff",  # "pulsar/" not at the start
             "a\npulsar/10.0.0.5:8080/0x00000000_0xffffffff",  # a newline inside the name
             "pulsar/10.0.0.6:8080",  # namespace "pulsar"
             "public/default/0x40000000_0x80000000",
             "sla-monitor/c1/10.0.0.7:8080/0x00000000_0xffffffff"]
    bad = [True, False, True, True, False, False, False, False, False, False, True]
    assert bad == [is_sla_or_heartbeat_namespace(bundle_namespace(n)) for n in names]
    nk = len(names)
    v = LoadView.from_arrays(brokers=["a:1"], bundles=names, owner=np.zeros(nk, dtype=np.int64),
                             cpu=np.array([50.0]), java_order=False)
    inbd = np.ones(nk, dtype=bool)
    inbd[1] = False
    v = dataclasses.replace(v, in_bundle_data=inbd)
    expected = [not b and k != 1 for k, b in enumerate(bad)]
    assert v.sheddable.tolist() == expected
    # namespaces read first: the same mask, and the namespaces are every name's part before the last "/"
    w = dataclasses.replace(v, bundles=list(names))
    assert w.namespaces == sorted({bundle_namespace(n) for n in names})
    assert [w.namespaces[i] for i in w.bundle_namespace_id] == [bundle_namespace(n) for n in names]
    assert w.sheddable.tolist() == expected
    plain = dataclasses.replace(v, bundles=[n for n, b in zip(names, bad) if not b], in_bundle_data=np.ones(7, bool),
                                owned=[np.arange(7)])
    assert plain.sheddable.all()


def test_avgshedder_fill_jumps_to_what_fits_and_takes_what_the_walk_takes():
    """AvgShedder takes, largest first, each bundle that fits what is left of the amount and was not
    unloaded recently: jumping to the next value that fits gives the picks of looking at every bundle
    (ties, zeros, negative values, recently unloaded bundles, budgets from nothing to everything; a
    NaN takes the plain walk), and so do bundles that all have one value (an even-shares broker's)."""
    import random

    from engine.shedding.avg_shedder import _fill

    def walk(idx, vals, budget, names, recent):
        out = []
        for k, t in zip(idx, vals):
            if budget <= 0:
                break
            if 0 < t <= budget and names[k] not in recent:
                budget -= t
                out.append((k, t))
        return out

    rng = random.Random(5)
    for case in range(400):
        n = rng.choice([0, 1, 5, 40])
        vals = sorted((rng.choice([0.0, -1.0, 1.0, 2.5, 7.0, rng.random() * 100]) for _ in range(n)), reverse=True)
        idx = list(range(n))
        names = [f"b{k}" for k in idx]
        recent = {names[k] for k in idx if rng.random() < 0.2} if case % 3 else {}  # (nothing recent: no name read)
        neg = [-v for v in vals]
        for budget in (0.0, 1.0, 3.5, 50.0, sum(v for v in vals if v > 0), 1e9):
            want = walk(idx, vals, budget, names, recent)
            assert _fill((idx, vals, neg, 0, n), budget, names, recent) == want
            assert _fill((idx, vals, None, 0, n), budget, names, recent) == want
            # a broker's run inside lists shared with other brokers
            pad = [99.0, 98.0]
            shared = (idx + [n, n + 1], vals + [float("nan"), 0.5], neg + [0.0, 0.0], 0, n)
            assert _fill(shared, budget, names + ["x", "y"], recent) == want
            shifted = ([n + 5, n + 6] + idx, pad + vals, [-x for x in pad] + neg, 2, n + 2)
            assert _fill(shifted, budget, names + ["x"] * 7, recent) == want
            # bundles that all have one value (an even-shares broker's): the same as walking them
            for same in (0.0, -1.0, 2.5, float("nan"), float("inf")):
                ones = [same] * n
                assert _fill((tuple(idx), same, n), budget, names, recent) == walk(idx, ones, budget, names, recent)
    nan = ([0, 1, 2], [5.0, 2.0, float("nan")], None, 0, 3)
    assert _fill(nan, 6.0, ["a", "b", "c"], set()) == [(0, 5.0)]
    assert _fill(((0, 1, 2), 2.5, 3), 6.0, ["a", "b", "c"], set()) == [(0, 2.5), (1, 2.5)]
    assert _fill(((0, 1, 2), float("inf"), 3), float("inf"), ["a", "b", "c"], set()) == [(0, float("inf"))]


def test_avgshedder_bundles_of_many_hot_brokers_sorted_at_once_equal_each_broker_sorted_alone():
    """The hot brokers' bundles, largest first, come from one sort over all of them: per broker the
    same indices, values and bisection keys as sorting that broker alone — ties in HashMap order, a
    NaN (no bisection keys for its broker), infinities, bundles without BundleData or in system
    namespaces left out, a broker with no bundle, a broker asked for twice."""  # (a and b hold an inf)
    from engine.shedding.avg_shedder import _largest_first, _prefill_largest

    names = names_with_system(600)
    v = tied_view(names)
    st = v.st.copy()
    st[v.owned[1][7]] = np.nan  # broker b: one NaN value
    owned = list(v.owned) + [np.zeros(0, dtype=np.int64)]
    v = dataclasses.replace(v, st=st, brokers=v.brokers + ["d:1"], owned=owned,
                            cpu=np.append(v.cpu, 5.0), memory=np.append(v.memory, 5.0),
                            direct_memory=np.append(v.direct_memory, 5.0),
                            bandwidth_in=np.append(v.bandwidth_in, 5.0), bandwidth_out=np.append(v.bandwidth_out, 5.0))
    for mode in ("rate", "throughput"):
        alone = [_largest_first(dataclasses.replace(v), j, mode) for j in range(4)]
        batch = dataclasses.replace(v)
        _prefill_largest(batch, mode, [2, 0, 3, 1, 0])
        assert set(batch.__dict__["_avg_largest"]) == {(mode, j) for j in range(4)}
        def run(got):  # the broker's own part of the lists
            idx, vals, neg, a, b = got
            return idx[a:b], vals[a:b], None if neg is None else neg[a:b]

        alone = [run(x) for x in alone]
        for j in range(4):
            got = run(_largest_first(batch, j, mode))  # (its lists made from the batch's arrays when asked)
            assert got[0] == alone[j][0] and got[2] == alone[j][2]
            assert np.array_equal(np.array(got[1]), np.array(alone[j][1]), equal_nan=True)
        assert alone[1][2] is None and alone[2][2] is not None and alone[3] == ([], [], [])
        # ties decide: the order of the indices alone would differ
        assert alone[0][0] != sorted(alone[0][0], key=lambda k: (-v.short_rate[k] if mode == "rate"
                                                                  else -v.short_throughput[k], k))


def test_avgshedder_prepared_view_decides_as_an_unprepared_one():
    """``AvgShedder.prepare`` sorts the bundles of every broker that can be a pair's hot one, once per
    view; rounds on the prepared view then select the same bundles, with the same reasons and plans, at
    every threshold, as rounds that sort for themselves."""
    from engine.config import IMPL, LoadBalancerConfig
    from engine.shedding.avg_shedder import AvgShedder, _pairing
    from engine.synth import random_view

    cfg0 = LoadBalancerConfig().with_values({
        "loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder", "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder",
        "loadBalancerAvgShedderHitCountLowThreshold": "1", "loadBalancerAvgShedderHitCountHighThreshold": "1"})
    prepared = random_view(60, 15, seed=4)
    AvgShedder.prepare(prepared, cfg0)
    hot = _pairing(prepared, cfg0.weights, not cfg0.has("avg_shedder_double_comparator"))[3]
    assert {("rate", j) for j in hot} <= set(prepared.__dict__["_avg_largest"])
    counts = []
    for low in (1, 3, 8, 20, 60):
        cfg = cfg0.with_values({"loadBalancerAvgShedderLowThreshold": str(low)})
        a = AvgShedder().find_bundles_for_unloading(prepared, cfg, {})
        b = AvgShedder().find_bundles_for_unloading(random_view(60, 15, seed=4), cfg, {})
        assert [(s.broker, s.bundle, s.value, s.planned_destination, s.reason) for s in a.selected] == \
            [(s.broker, s.bundle, s.value, s.planned_destination, s.reason) for s in b.selected]
        assert a.reason == b.reason
        counts.append(len(a.selected))
    assert counts[0] > 20 and counts[-1] < counts[0]


def test_even_shares_views_offer_each_brokers_bundles_as_sorting_them_does():
    """A view whose brokers split their load evenly (``even_shares``: a backtest's synthetic bundles)
    offers each broker's bundles in shed-rank order with one value, without sorting: the same indices,
    values and bisection keys as sorting them — bundles owned out of index order, some without
    BundleData or in system namespaces, a broker at zero, one at NaN (no bisection keys), one at
    infinity, one with no bundle."""
    from engine.shedding.avg_shedder import _fill, _largest_first, _prefill_largest

    names = names_with_system(400)
    nk = len(names)
    owner = np.random.default_rng(11).permutation(np.arange(nk) % 5)  # broker e: no bundle (5 of 6)
    level = np.array([3.0, 0.0, np.nan, np.inf, 1.25, 9.0])
    st = np.repeat(level[owner][:, None], 4, axis=1)
    v = LoadView.from_arrays(brokers=[f"{c}:1" for c in "abcdef"], bundles=names, owner=owner,
                             cpu=np.array([90.0, 50.0, 10.0, 20.0, 30.0, 5.0]), st=st, java_order=False)
    inbd = np.ones(nk, dtype=bool)
    inbd[::13] = False
    v = dataclasses.replace(v, in_bundle_data=inbd)
    even = dataclasses.replace(v, even_shares=True)
    order = even.owned_in_shed_order
    for j in range(6):
        mine = np.flatnonzero((owner == j) & v.sheddable)
        assert list(order[j]) == sorted(mine.tolist(), key=lambda k: v.shed_rank[k])
    assert order[5] == () and len(order[0]) > 40
    assert list(order[0]) != sorted(order[0])  # the rank decides, not the index
    names_k = list(names)
    for mode in ("rate", "throughput"):
        _prefill_largest(even, mode, [0, 1, 2, 3, 4], whole=False)  # nothing to sort: no entry made
        assert not any(m == mode for m, _j in even.__dict__.get("_avg_largest", {}))
        for j in range(6):
            idx, value, n = _largest_first(even, j, mode)
            s_idx, s_vals, s_neg, s_a, s_b = sorted_ = _largest_first(dataclasses.replace(v), j, mode)
            assert list(idx) == list(s_idx[s_a:s_b]) and n == s_b - s_a
            assert np.array_equal(np.array([value] * n), np.array(s_vals[s_a:s_b]), equal_nan=True)
            # the same picks as the sorted lists, whatever the budget and the recently unloaded bundles
            total = sum(x for x in s_vals[s_a:s_b] if x > 0)
            for budget in (0.0, 0.5, 3.0, 7.5, 13.0, total, float("inf")):
                for recent in ({}, {names_k[k] for k in s_idx[s_a:s_b][::3]}):
                    assert _fill((idx, value, n), budget, names_k, recent) == _fill(sorted_, budget, names_k, recent)
        assert _largest_first(even, 5, mode) == ((), 0.0, 0)


def same_view(a: LoadView, b: LoadView) -> None:
    """Every field of two views equal (arrays in value and type, NaN equal to NaN)."""
    for f in dataclasses.fields(LoadView):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name
        elif f.name == "owned":
            assert len(x) == len(y) and all(np.array_equal(p, q) for p, q in zip(x, y)), f.name
        else:
            assert x == y, f.name


def test_a_view_at_another_minute_equals_the_view_built_for_that_minute():
    """``at_minute``: another minute's load over a view's brokers, bundles and ownership gives every field
    ``from_arrays`` gives for that minute — the long-term broker rates summed over owned bundles only (some
    unowned, a broker with none), last update at the minute — and shares the facts of names and ownership
    (not those of the first minute's load)."""
    names = names_with_system(300)
    nk = len(names)
    rng = np.random.default_rng(2)
    owner = rng.integers(-1, 4, size=nk)  # -1: unowned; broker e (4): none
    brokers = [f"{c}:1" for c in "abcde"]

    def arrays(seed):
        r = np.random.default_rng(seed)
        st = r.random((nk, 4)) * 100
        st[5] = np.nan
        return dict(cpu=r.random(5) * 100, memory=r.random(5), direct_memory=r.random(5), bandwidth_in=r.random(5),
                    bandwidth_out=r.random(5), msg_rate_in=r.random(5), msg_rate_out=r.random(5),
                    msg_throughput_in=r.random(5), msg_throughput_out=r.random(5), st=st, lt=st * 0.5 + 1)

    first = LoadView.from_arrays(brokers=brokers, bundles=names, owner=owner, now_ms=60_000, java_order=False,
                                 **arrays(1))
    first.shed_rank, first.sheddable, first.short_rate  # noqa: B018 (facts of the names and of the load)
    first.usage_with_weight((1.0, 1.0, 1.0, 1.0))
    later = first.at_minute(now_ms=120_000, **arrays(2))
    want = LoadView.from_arrays(brokers=brokers, bundles=names, owner=owner, now_ms=120_000, java_order=False,
                                **arrays(2))
    same_view(later, want)
    assert later.__dict__["shed_rank"] is first.shed_rank and later.bundles is first.bundles
    assert not {"short_rate", "_uw_cache"} & set(later.__dict__)  # (the first minute's load stays its own)
    assert np.array_equal(later.short_rate, want.short_rate, equal_nan=True)
    np.testing.assert_array_equal(later.usage_with_weight((1.0, 1.0, 1.0, 1.0)), want.usage_with_weight((1.0, 1.0, 1.0, 1.0)))
    assert later.long_term_msg_rate[4] == 0 and later.long_term_msg_rate[0] > 0
