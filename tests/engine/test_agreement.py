"""Predicted vs actual on a timeline: observed moves (ownership changes between consecutive snapshots)
against the unloads of the engine's replay with the cluster's broker.conf (``engine.agreement``,
``python -m engine replay TIMELINE --observed``).

Snapshots are ``LoadData`` as the leader holds it (``ModularLoadManagerImpl``): each broker's
``LocalBrokerData`` lists the bundles it owns in ``bundles`` — built with :func:`engine.synth.make_snapshot`
and saved with :func:`engine.io.save_snapshot` (the ``loadbalance/brokers`` JSON shape).
"""
from __future__ import annotations

import json

from engine.agreement import compare_timeline, observed_moves
from engine.cli import main
from engine.cli.replay import replay_timeline
from engine.config import parse_broker_conf
from engine.io import save_snapshot
from engine.synth import make_snapshot

T0 = 1767571200000  # 2026-01-05T00:00Z
BIG, SMALL = "t/n/0x00000000_0x40000000", "t/n/0x40000000_0x80000000"
B3, B4 = "t/n/0x80000000_0xc0000000", "t/n/0xc0000000_0xffffffff"
CONF = "loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.OverloadShedder\n" \
       "loadBalancerBrokerOverloadedThresholdPercentage=85\n"


def _snap(i, cpu_a, owner_of, cpu_c=30):
    """Broker a:8080 overloaded (cpu_a %) at first; ``owner_of`` says who holds each bundle."""
    spec = {b: dict(cpu=c, bundles={}) for b, c in (("a:8080", cpu_a), ("b:8080", 20), ("c:8080", cpu_c))}
    rates = {BIG: 9000, SMALL: 1000, B3: 500, B4: 700}
    for bundle, broker in owner_of.items():
        spec[broker]["bundles"][bundle] = dict(rate=rates[bundle], throughput=rates[bundle] * 1000.0)
    return make_snapshot(spec, now_ms=T0 + i * 60_000)


START = {BIG: "a:8080", SMALL: "a:8080", B3: "b:8080", B4: "c:8080"}
MOVED = {**START, BIG: "b:8080"}


def _cfg():
    return parse_broker_conf(CONF).config


def test_agree001_the_engine_reproduces_the_observed_move(tmp_path, capsys):
    # the cluster moved the big bundle off the overloaded broker, then stayed balanced
    snaps = [_snap(0, 95, START), _snap(1, 50, MOVED), _snap(2, 50, MOVED)]
    _, cycles, _ = replay_timeline(snaps, _cfg())
    ag = compare_timeline(snaps, cycles, source="t")
    obs = observed_moves(snaps)
    assert obs[["time", "bundle", "broker", "destination"]].values.tolist() == [[T0, BIG, "a:8080", "b:8080"]]
    assert ag.metrics["agreement"] == 1.0
    assert ag.metrics["bundle_precision"] == 1.0 and ag.metrics["bundle_recall"] == 1.0
    assert ag.metrics["broker_precision"] == 1.0 and ag.metrics["broker_recall"] == 1.0
    assert ag.moves["status"].tolist() == ["both"]
    assert ag.hours["predicted_brokers"].tolist() == [["a:8080"]] == ag.hours["observed_brokers"].tolist()
    # the same through the command line, with the cluster's broker.conf
    for i, s in enumerate(snaps):
        save_snapshot(s, tmp_path / f"{i:02d}.json")
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF)
    assert main(["replay", str(tmp_path), "--observed", "--conf", str(conf), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["agreement"]["metrics"]["agreement"] == 1.0 and d["strategy"] == "OverloadShedder"
    assert main(["replay", str(tmp_path), "--observed", "--conf", str(conf)]) == 0
    out = capsys.readouterr().out
    assert "agreement 100 %" in out and f"both           {BIG}  a:8080 → b:8080 / b:8080" in out


def test_agree002_a_disagreement_is_shown_not_hidden(tmp_path, capsys):
    # the cluster moved the *small* bundle, and also a bundle of c:8080 the engine saw no reason to move
    other = {**START, SMALL: "c:8080", B4: "b:8080"}
    snaps = [_snap(0, 95, START), _snap(1, 92, other), _snap(2, 92, other)]
    _, cycles, _ = replay_timeline(snaps, _cfg())
    ag = compare_timeline(snaps, cycles, source="t")
    st = {(r.bundle, r.status) for r in ag.moves.itertuples()}
    # the engine's prediction at snapshot 1 (a:8080 still overloaded) has no later snapshot that moved it
    assert (BIG, "predicted only") in st and (SMALL, "observed only") in st and (B4, "observed only") in st
    assert ag.metrics["agreement"] < 0.5 and ag.metrics["bundle_precision"] == 0.0
    assert ag.metrics["broker_precision"] == 1.0 and ag.metrics["broker_recall"] == 0.5  # a shed, c too
    for i, s in enumerate(snaps):
        save_snapshot(s, tmp_path / f"{i:02d}.json")
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF)
    assert main(["replay", str(tmp_path), "--observed", "--conf", str(conf)]) == 0
    out = capsys.readouterr().out
    assert "agreement 0 %" in out and "observed only" in out and "predicted only" in out


def test_agree003_a_broker_that_left_is_not_an_unload():
    gone = {BIG: "b:8080", SMALL: "b:8080", B3: "b:8080", B4: "c:8080"}
    s0 = _snap(0, 40, START)
    s1 = _snap(1, 40, gone)
    del s1.brokers["a:8080"]
    notes = []
    assert observed_moves([s0, s1], notes).empty and "broker left" in notes[0]


def test_agree004_extensible_snapshots_one_owner_per_bundle():
    """ELM snapshots (``ExtensibleLoadData``: the state channel's ownership, else the top-K lists of
    ``TopBundlesLoadData``) give one owner per bundle; a bundle changing owner is an observed move."""
    import copy
    from pathlib import Path

    from engine.io import load_snapshot

    s0 = load_snapshot(Path(__file__).resolve().parents[2] / "samples" / "extensible" / "transfer-shedder-5-brokers.json")
    s1 = copy.deepcopy(s0)
    s1.now_ms = s0.now + 60_000
    moved = s1.top_bundles["broker-a:8080"].pop(0)
    s1.top_bundles["broker-e:8080"].append(moved)
    if s1.ownership is not None:  # the state channel's view, when the snapshot carries it
        s1.ownership[moved.bundle_name] = "broker-e:8080"
    obs = observed_moves([s0, s1])
    assert obs[["bundle", "broker", "destination"]].values.tolist() == [[moved.bundle_name, "broker-a:8080",
                                                                         "broker-e:8080"]]
