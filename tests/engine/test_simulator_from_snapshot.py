"""A snapshot as a simulation's start state (engine.simulator.from_snapshot).

Modular snapshots are shipped samples (LoadData as ``broker-stats/load-report`` + bundle data); the ELM
snapshot is the ``pulsar-client consume`` output of ``loadbalancer-broker-load-data`` and
``loadbalancer-top-bundles-load-data`` in ``tests/engine/extensible/data`` (``BrokerLoadData`` and
``TopBundlesLoadData`` as Jackson writes them, see ``tests/engine/extensible/test_readers.py``).

The agreement tests compare the simulation's first shedding check with what the Tuner runs on the same
snapshot and config (``engine.cli.shed.make_manager(...).do_load_shedding()``, the call behind
``dashboard.analysis.analyze``).
"""
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.cli.shed import make_manager
from engine.config import LoadBalancerConfig
from engine.errors import InputError
from engine.io import load_snapshot_bytes
from engine.samples import SAMPLES, load_sample
from engine.simulator import run_scenario, simulate
from engine.simulator.from_snapshot import SnapshotSimulation, scenario_from_snapshot
from engine.simulator.scenario import NoiseModel
from engine.strategies import placement_name

DATA = Path(__file__).parent / "extensible" / "data"


def _elm():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in ("broker-load-data.consume.txt", "top-bundles-load-data.consume.txt"):
            zf.write(DATA / p, p)
    return load_snapshot_bytes(buf.getvalue(), "elm.zip")


def _sample_cfg(name: str) -> LoadBalancerConfig:
    return LoadBalancerConfig().with_values({k: str(v) for k, v in SAMPLES[name].config.items()})


def _first_check(sc, cfg):
    """(check reason, sorted [(broker, bundle)] unloaded or skipped, their event rows, the result) of the
    first check."""
    r = simulate(sc, cfg, minutes=cfg.loadBalancerSheddingIntervalMinutes + 1)
    ev = r.events
    t = ev.loc[ev["kind"] == "check", "minute"].min()
    rows = ev[(ev["minute"] == t) & ev["kind"].isin(["unload", "unload-skipped"])]
    reason = ev.loc[(ev["minute"] == t) & (ev["kind"] == "check"), "reason"].iloc[0]
    return reason, sorted(zip(rows["broker"], rows["bundle"])), rows, r


def _tuner(data, cfg):
    cyc = make_manager(data, cfg, 0).do_load_shedding()
    # what the shedding strategy selected (unloaded, or skipped when the placement chose the owner)
    moves = sorted([(u.broker, u.bundle) for u in list(cyc.unloads) + list(cyc.skipped)])
    return cyc, moves


# ------------------------------------------------------------------------------------------ conversion
def test_modular_conversion_keeps_brokers_limits_owners_and_bundle_traffic():
    ld = load_sample("yahoo-japan-3-brokers")
    sc = scenario_from_snapshot(ld, minutes=5)
    st = sc.start
    assert st.kind == "modular" and sorted(st.brokers) == sorted(ld.brokers)
    for i, b in enumerate(st.brokers):
        L = ld.brokers[b].local
        assert tuple(st.limit[i]) == (L.cpu.limit, L.memory.limit, L.direct_memory.limit, L.bandwidth_in.limit,
                                      L.bandwidth_out.limit)
        assert sc.broker(b).cores == pytest.approx(L.cpu.limit / 100)
    # every owned bundle, with its owner and its short-term bundle data as steady traffic
    owned = {x: b for b, bd in ld.brokers.items() for x in bd.local.bundles}
    assert dict(zip(st.bundles, (st.brokers[o] for o in st.owner))) == owned
    for j, name in enumerate(st.bundles):
        s = ld.bundle_data[name].short_term
        assert tuple(st.traffic[j]) == (s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out)
    # the CPU per message is fitted from the brokers' CPU and msg rates (the median ratio)
    ratios = [ld.brokers[b].local.cpu.usage / 100 / (ld.brokers[b].local.msg_rate_in + ld.brokers[b].local.msg_rate_out)
              for b in st.brokers]
    assert sc.cost.cpu_per_msg_in == pytest.approx(float(np.median(ratios)))
    assert any("CPU per message fitted" in n for n in st.notes)


def test_the_unchanged_snapshot_reports_exactly_its_own_usage_and_rates():
    ld = load_sample("bigo-threshold-first-unload")
    sc = scenario_from_snapshot(ld, minutes=3)
    r = simulate(sc, LoadBalancerConfig().with_values({"loadBalancerSheddingIntervalMinutes": "10"}))
    assert r.summary["unloads"] == 0
    for b, bd in ld.brokers.items():
        rows = r.brokers[r.brokers["broker"] == b]
        L = bd.local
        assert np.allclose(rows["cpu"], 100 * L.cpu.usage / L.cpu.limit, rtol=1e-6)
        assert np.allclose(rows["msg_rate"], L.msg_rate_in + L.msg_rate_out)


def test_a_moved_bundle_takes_its_traffic_and_cpu_cost_along_and_the_cluster_total_is_kept():
    ld = load_sample("bigo-threshold-first-unload")
    cfg = _sample_cfg("bigo-threshold-first-unload")
    sc = scenario_from_snapshot(ld, minutes=4)
    r = run_scenario(sc, config=cfg)
    u = r.events[r.events["kind"] == "unload"].iloc[0]
    j = sc.start.bundles.index(u["bundle"])
    rate = sc.start.traffic[j, 0] + sc.start.traffic[j, 1]
    b = r.brokers.set_index(["minute", "broker"])
    t = int(u["minute"])
    assert b.loc[(t + 1, u["broker"]), "msg_rate"] == pytest.approx(b.loc[(t, u["broker"]), "msg_rate"] - rate)
    assert b.loc[(t + 1, u["destination"]), "msg_rate"] == pytest.approx(
        b.loc[(t, u["destination"]), "msg_rate"] + rate)
    src_cores = sc.broker(u["broker"]).cores
    assert b.loc[(t, u["broker"]), "cpu"] - b.loc[(t + 1, u["broker"]), "cpu"] == pytest.approx(
        100 * sc.cost.cpu_per_msg_in * rate / src_cores, rel=1e-4)
    total = r.brokers.groupby("minute")["msg_rate"].sum()
    assert np.allclose(total, total.iloc[0])


def test_elm_conversion_top_k_bundles_background_load_and_transfer_shedder():
    ext = _elm()
    sc = scenario_from_snapshot(ext, minutes=3)
    st = sc.start
    cfg = sc.lb_config()
    assert (st.kind, cfg.shedding_strategy, cfg.extensible) == ("elm", "TransferShedder", True)
    assert placement_name(cfg.loadBalancerLoadPlacementStrategy) == "ExtensibleLeastResourceUsageWithWeight"
    tops = {x.bundle_name: (b, x.stats) for b, lst in ext.top_bundles.items() for x in lst}
    assert sorted(st.bundles) == sorted(tops)
    for j, name in enumerate(st.bundles):
        b, s = tops[name]
        assert st.brokers[st.owner[j]] == b
        assert tuple(st.traffic[j]) == (s.msg_rate_in, s.msg_rate_out, s.msg_throughput_in, s.msg_throughput_out)
    # a broker whose top K leaves a bundle out (K smaller than its bundles): that bundle's traffic is
    # background, the broker still reports its BrokerLoadData rates, and only listed bundles can move
    ext2 = ext.copy()
    left_out = ext2.top_bundles["broker-1:8080"].pop()
    sc2 = scenario_from_snapshot(ext2, minutes=3)
    assert left_out.bundle_name not in sc2.start.bundles
    r = simulate(sc2, sc2.lb_config().with_values({"loadBalancerSheddingIntervalMinutes": "10"}))
    for b, d in ext.broker_load_data.items():
        rows = r.brokers[r.brokers["broker"] == b]
        assert np.allclose(rows["msg_rate"], d.msg_rate_in + d.msg_rate_out)
    b1 = list(sc2.start.brokers).index("broker-1:8080")
    listed = sc2.start.traffic[sc2.start.owner == b1]
    s = left_out.stats
    assert sc2.start.rates[b1, 0] - listed[:, 0].sum() == pytest.approx(s.msg_rate_in)


def test_elm_brokers_start_from_the_published_weighted_max_ema():
    ext = _elm()
    sc = scenario_from_snapshot(ext, minutes=3)
    cfg = sc.lb_config().with_values({"loadBalancerSheddingIntervalMinutes": "10"})
    sim = SnapshotSimulation(sc, cfg)
    sim.run()
    store = sim.leader.brokers.store
    for b, d in ext.broker_load_data.items():
        # nothing changed: no broker published again, the leader still reads the snapshot's values
        assert store[b].weighted_max_ema == d.weighted_max_ema
        assert store[b].updated_at - d.updated_at == sim.shift
        # the broker's own EMA advanced from the published one toward its current weighted max
        h = cfg.loadBalancerHistoryResourcePercentage
        w = d.weighted_max(cfg)
        expect = d.weighted_max_ema
        for _ in range(12 * 2):  # minutes 1 and 2, 12 generations each
            expect = expect * h + (1 - h) * w
        assert sim.leader.brokers.local[b].weighted_max_ema == pytest.approx(expect, rel=1e-9)


def test_noise_is_optional():
    ld = load_sample("yahoo-japan-3-brokers")
    cfg = LoadBalancerConfig().with_values({"loadBalancerSheddingIntervalMinutes": "30"})
    steady = simulate(scenario_from_snapshot(ld, minutes=4), cfg)
    noisy = simulate(scenario_from_snapshot(ld, minutes=4, noise=NoiseModel(0.05, 0.0, 0.0)), cfg)
    assert steady.brokers.groupby("broker")["msg_rate"].nunique().max() == 1
    assert noisy.brokers.groupby("broker")["msg_rate"].nunique().min() > 1


def test_bad_snapshots_are_refused_with_a_message():
    from engine.model import LoadData

    with pytest.raises(InputError, match="no broker with load data"):
        scenario_from_snapshot(LoadData(source="empty.json"))
    ld = load_sample("yahoo-japan-3-brokers")
    b = next(iter(ld.brokers.values()))
    b.local.bundles = list(b.local.bundles) + ["t/ns/not-a-range"]
    with pytest.raises(InputError, match="no 0xLOWER_0xUPPER hash range"):
        scenario_from_snapshot(ld)


# ------------------------------------------------------------------------------------------ t=0 agreement
@pytest.mark.parametrize("sample", ["bigo-threshold-first-unload", "bigo-threshold-over-unloading"])
def test_first_cycle_decides_what_the_tuner_decides_modular_threshold_shedder(sample):
    ld = load_sample(sample)
    cfg = _sample_cfg(sample)
    assert cfg.shedding_strategy == "ThresholdShedder"
    cyc, tuner = _tuner(ld, cfg)
    reason, sim, _, _ = _first_check(scenario_from_snapshot(ld, minutes=3), cfg)
    assert tuner and sim == tuner
    assert reason == cyc.reason


@pytest.mark.parametrize("hits", [None, "0"])
def test_first_cycle_decides_what_the_tuner_decides_elm_transfer_shedder(hits):
    ext = _elm()
    sc = scenario_from_snapshot(ext, minutes=3)
    cfg = sc.lb_config()
    if hits is not None:  # unload at the first hit: TransferShedder's transfers and swap, with destinations
        cfg = cfg.with_values({"loadBalancerSheddingConditionHitCountThreshold": hits})
    cyc, tuner = _tuner(ext, cfg)
    reason, sim, rows, _ = _first_check(sc, cfg)
    assert sim == tuner
    assert cyc.reason in reason  # the simulator prefixes the decision codes
    if hits is None:
        assert reason.startswith("HitCount") and not tuner
    else:
        # the top-K lists as Pulsar publishes them (ascending): broker-1's two smaller bundles cover
        # its offload, then the swap moves broker-3's bundle
        assert sorted(tuner) == [("broker-1:8080", "public/default/0x40000000_0x80000000"),
                                 ("broker-1:8080", "public/default/0x80000000_0xc0000000"),
                                 ("broker-3:8080", "public/default/0xc0000000_0xffffffff")]
        dest = {(u.broker, u.bundle): u.destination for u in cyc.unloads}
        assert dict(zip(zip(rows["broker"], rows["bundle"]), rows["destination"])) == dest
