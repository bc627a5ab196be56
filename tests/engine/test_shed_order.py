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


def test_sort_desc_without_ties_is_by_value_and_hashes_nothing():
    javacompat._hash_cache.clear()
    v = tied_view(names_with_system(60))
    vals = np.arange(60, dtype=float)[::-1] * 0.5
    idx = np.array([7, 2, 59, 0, 13, 41])
    assert sort_desc(v, idx, vals).tolist() == [0, 2, 7, 13, 41, 59]
    assert not javacompat._hash_cache


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
    NaN takes the plain walk)."""
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
        recent = {names[k] for k in idx if rng.random() < 0.2}
        neg = [-v for v in vals]
        for budget in (0.0, 1.0, 3.5, 50.0, sum(v for v in vals if v > 0), 1e9):
            want = walk(idx, vals, budget, names, recent)
            assert _fill((idx, vals, neg), budget, names, recent) == want
            assert _fill((idx, vals, None), budget, names, recent) == want
    nan = ([0, 1, 2], [5.0, 2.0, float("nan")], None)
    assert _fill(nan, 6.0, ["a", "b", "c"], set()) == [(0, 5.0)]
