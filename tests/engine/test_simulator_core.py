"""The simulator's machinery: scenario validation, determinism, cadence, events, metrics, CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.errors import InputError
from engine.simulator import (
    Leader,
    ModularLeader,
    compare,
    load_scenario,
    parse_scenario,
    parse_scenario_text,
    run_scenario,
    settled_minute,
    simulate,
    zigzag_reversals,
)
from engine.simulator.run import _advance
from engine.model import update_time_average_arrays

ROOT = Path(__file__).resolve().parents[2]


def tiny(**over):
    doc = {"name": "tiny", "minutes": 30, "seed": 3,
           "config": {"loadBalancerDistributeBundlesEvenlyEnabled": False},
           "brokers": [{"id": "b{i}:8080", "count": 4, "cores": 8}],
           "namespaces": [{"name": "t/ns", "bundles": 16, "owners": "placement"}],
           "workloads": [{"name": "w", "namespace": "t/ns", "topics": 64, "rate": 80000, "skew": 0.7}]}
    doc.update(over)
    return doc


# ------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize("patch, field, words", [
    ({"minutes": 0}, "minutes", "at least 1"),
    ({"minutes": "x"}, "minutes", "expected a number"),
    ({"bogus": 1}, "bogus", "unknown key"),
    ({"brokers": []}, "brokers", "at least one broker"),
    ({"brokers": [{"id": "a:1"}, {"id": "a:1"}]}, "brokers[1].id", "duplicate broker id"),
    ({"brokers": [{"id": "a:1", "cores": 0}]}, "brokers[0].cores", "greater than 0"),
    ({"namespaces": [{"name": "nope"}]}, "namespaces[0].name", "tenant/namespace"),
    ({"namespaces": [{"name": "t/ns", "bundles": 4, "owners": {"zz:1": [0]}}]}, "namespaces[0].owners.zz:1",
     "unknown broker"),
    ({"namespaces": [{"name": "t/ns", "bundles": 4, "owners": {"b0:8080": [7]}}]}, "namespaces[0].owners.b0:8080[0]",
     "out of range"),
    ({"workloads": [{"name": "w", "namespace": "x/y"}]}, "workloads[0].namespace", "unknown namespace"),
    ({"workloads": [{"name": "w", "namespace": "t/ns", "producers": {"kind": "wave"}}]},
     "workloads[0].producers.kind", "unknown pattern"),
    ({"events": [{"at": 5, "kind": "remove_broker", "broker": "zz:1"}]}, "events[0].broker", "unknown broker"),
    ({"events": [{"at": 99, "kind": "cpu", "broker": "b0:8080", "cpu": 90}]}, "events[0].at", "not inside the run"),
    ({"events": [{"at": 5, "kind": "add_broker", "broker": "b0:8080"}]}, "events[0]", "already running"),
    ({"events": [{"at": 5, "kind": "config", "set": {"maxUnloadPercentage": "lots"}}]},
     "events[0].set.maxUnloadPercentage", ""),
    ({"config": {"noSuchKey": 1}}, "config.noSuchKey", "unknown load-balancer key"),
])
def test_simc001_validation_names_the_field(patch, field, words):
    with pytest.raises(InputError) as ei:
        parse_scenario(tiny(**patch), source="my.yaml")
    assert ei.value.source == "my.yaml"
    assert ei.value.field == field
    assert words in ei.value.message
    assert str(ei.value).startswith("my.yaml: field ")


def test_simc002_yaml_on_off_trap_is_explained():
    text = """
name: t
minutes: 5
brokers: [{id: "a:1"}]
namespaces: [{name: t/ns, bundles: 1}]
workloads:
  - {name: w, namespace: t/ns, consumers: {kind: on_off, on: 1, off: 1}}
"""
    with pytest.raises(InputError) as ei:
        parse_scenario_text(text, source="j.yaml")
    assert "quote it" in ei.value.message and ei.value.field == "workloads[0].consumers.True"


def test_simc003_bad_files(tmp_path):
    with pytest.raises(InputError, match="no such scenario"):
        load_scenario(str(tmp_path / "missing.yaml"))
    p = tmp_path / "bad.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(InputError) as ei:
        load_scenario(p)
    assert ei.value.source == str(p) and "not valid YAML" in ei.value.message
    j = tmp_path / "bad.json"
    j.write_text('{"name": "x",}')
    with pytest.raises(InputError, match="not valid JSON"):
        load_scenario(j)


def test_simc004_json_scenario_and_templates(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(tiny()))
    s = load_scenario(p)
    assert [b.id for b in s.brokers] == ["b0:8080", "b1:8080", "b2:8080", "b3:8080"]
    assert s.source == str(p)


def test_simc005_avgshedder_placement_needs_avgshedder_shedding():
    sc = parse_scenario(tiny(config={"loadBalancerLoadPlacementStrategy": "AvgShedder"}))
    with pytest.raises(InputError, match="refuses to start"):
        simulate(sc)


# ------------------------------------------------------------------------------------------- determinism
def test_simc006_same_seed_same_output():
    a = run_scenario("bigo-homogeneous-start", strategy="ThresholdShedder",
                     placement="LeastResourceUsageWithWeight", seed=5)
    b = run_scenario("bigo-homogeneous-start", strategy="ThresholdShedder",
                     placement="LeastResourceUsageWithWeight", seed=5)
    pd.testing.assert_frame_equal(a.events, b.events)
    pd.testing.assert_frame_equal(a.brokers, b.brokers)
    pd.testing.assert_frame_equal(a.cluster, b.cluster)
    sa, sb = dict(a.summary), dict(b.summary)
    sa.pop("elapsed_s"), sb.pop("elapsed_s")
    assert sa == sb


def test_simc007_different_seeds_different_random_placements():
    def draws(seed):
        r = run_scenario("bigo-homogeneous-start", strategy="ThresholdShedder",
                         placement="LeastResourceUsageWithWeight", seed=seed)
        e = r.events[r.events["kind"].isin(["unload", "assign"]) & r.events["random"]]
        return list(zip(e["minute"], e["bundle"], e["destination"]))

    runs = [draws(s) for s in (0, 1, 2)]
    assert all(runs)
    assert runs[0] != runs[1] and runs[1] != runs[2]


# ------------------------------------------------------------------------------------------- cadence
def test_simc008_closed_form_time_average_matches_pulsar_updates():
    rng = np.random.default_rng(0)
    for mx, n0, c in ((10, 0, 1), (10, 4, 3), (10, 9, 5), (10, 10, 7), (1000, 995, 12), (1000, 1000, 2)):
        v = rng.random((50, 4))
        n = np.full(50, n0)
        x = rng.random((50, 4))
        v2, n2 = v.copy(), n.copy()
        _advance(v, n, mx, np.arange(50), x, c)
        for _ in range(c):
            update_time_average_arrays(v2, n2, mx, x)
        assert np.allclose(v, v2, rtol=1e-12, atol=1e-12) and (n == n2).all()


def test_simc009_reports_are_written_on_change_or_after_15_minutes():
    doc = tiny(minutes=40, noise={"traffic": 0, "cpu": 0, "heap": 0},
               namespaces=[{"name": "t/ns", "bundles": 16, "owners": "round_robin"}],
               config={"loadBalancerSheddingEnabled": False})
    r = simulate(parse_scenario(doc))
    w = r.brokers.pivot(index="minute", columns="broker", values="wrote_report")
    # first report at minute 0, then steady traffic: only the forced writes every 15 minutes
    assert w.index[w.all(axis=1)].tolist() == [0, 15, 30]
    assert not w.drop([0, 15, 30]).any().any()
    step = tiny(minutes=20, noise={"traffic": 0, "cpu": 0, "heap": 0},
                namespaces=[{"name": "t/ns", "bundles": 16, "owners": "round_robin"}],
                config={"loadBalancerSheddingEnabled": False},
                events=[{"at": 7, "kind": "traffic", "workload": "w", "factor": 1.5}])
    w2 = simulate(parse_scenario(step)).brokers.pivot(index="minute", columns="broker", values="wrote_report")
    assert w2.loc[7].all() and not w2.loc[8:14].any().any()  # a +50 % step is a >10 % change


def test_simc010_unloaded_bundle_is_reported_by_new_owner_and_graced():
    r = run_scenario("bigo-homogeneous-start", preset="bigo-avgshedder")
    u = r.events[r.events["kind"] == "unload"]
    again = r.events[(r.events["kind"] == "unload") & r.events["bundle"].isin(u["bundle"])]
    # within the 30-minute grace period no bundle is unloaded twice
    for b, g in again.groupby("bundle"):
        assert len(g) == 1 or g["minute"].diff().dropna().min() >= 30
    assert (u["unavailable_s"] > 0).all()


# ------------------------------------------------------------------------------------------- events
def test_simc011_crash_loses_bundle_data_and_graceful_keeps_it():
    base = tiny(namespaces=[{"name": "t/ns", "bundles": 16, "owners": "round_robin"}],
                config={"loadBalancerDistributeBundlesEvenlyEnabled": False})
    crash = simulate(parse_scenario({**base, "events": [{"at": 10, "kind": "crash_broker", "broker": "b1:8080"}]}),
                     seed=1)
    grace = simulate(parse_scenario({**base, "events": [{"at": 10, "kind": "remove_broker", "broker": "b1:8080"}]}),
                     seed=1)
    ca = crash.events[crash.events["kind"] == "assign"]
    ga = grace.events[grace.events["kind"] == "assign"]
    assert len(ca) == len(ga) == 4 and (ca["minute"] == 10).all()
    assert (ca["unavailable_s"] == 30).all() and (ga["unavailable_s"] == 2).all()
    assert "(crash)" in ca.iloc[0]["reason"] and "graceful" in ga.iloc[0]["reason"]
    # LeastLongTermMessageRate: a crashed broker's bundles have no bundle data left, so each
    # preallocation adds only Pulsar's default 100 msg/s and they all land on the least loaded broker;
    # after a graceful shutdown their real long-term rates are preallocated and spread them
    assert ca["destination"].nunique() == 1
    assert ga["destination"].nunique() >= 2
    rates = ca["placement"].str.extract(r"rate ([\d,]+) msg/s")[0].str.replace(",", "").astype(float)
    assert rates.diff().dropna().tolist() == [100.0, 100.0, 100.0]


def test_simc012_avgshedder_crash_quirk_identical_default_bundle_data():
    """All bundles of a crashed broker have the same (default) BundleData *value*: AvgShedder's
    plan map is keyed by value, so after the first random pick they all follow it."""
    base = tiny(namespaces=[{"name": "t/ns", "bundles": 16, "owners": "round_robin"}], preset="bigo-avgshedder",
                config={"loadBalancerDistributeBundlesEvenlyEnabled": False})
    r = simulate(parse_scenario({**base, "events": [{"at": 10, "kind": "crash_broker", "broker": "b1:8080"}]}))
    a = r.events[r.events["kind"] == "assign"]
    assert a["destination"].nunique() == 1
    assert a["from_plan"].sum() == len(a) - 1
    g = simulate(parse_scenario({**base, "events": [{"at": 10, "kind": "remove_broker", "broker": "b1:8080"}]}))
    assert not g.events[g.events["kind"] == "assign"]["from_plan"].any()  # distinct data: a draw each


def test_simc013_rolling_restart_and_leader_change():
    doc = tiny(minutes=20, namespaces=[{"name": "t/ns", "bundles": 16, "owners": "round_robin"}],
               events=[{"at": 5, "kind": "rolling_restart", "brokers": "all", "down": 1, "every": 3}])
    r = simulate(parse_scenario(doc))
    e = r.events
    rem = e[e["kind"] == "broker-removed"]
    add = e[e["kind"] == "broker-added"]
    assert rem["minute"].tolist() == [5, 8, 11, 14] and add["minute"].tolist() == [6, 9, 12, 15]
    assert add["reason"].str.startswith("restarted").all()
    # the leader is the longest-running broker: every restart in this order hits the current leader
    lc = e[e["kind"] == "leader-change"]
    assert lc["minute"].tolist() == [5, 8, 11, 14]
    assert lc["broker"].tolist() == ["b1:8080", "b2:8080", "b3:8080", "b0:8080"]
    assert r.summary["brokers"] == 4


def test_simc014_config_change_at_minute():
    doc = tiny(events=[{"at": 10, "kind": "config", "set": {"loadBalancerSheddingEnabled": False}}])
    r = simulate(parse_scenario(doc), config=None)
    e = r.events
    assert e[e["kind"] == "config-change"]["minute"].tolist() == [10]
    checks = e[(e["kind"] == "check") & (e["minute"] > 10)]
    assert checks["reason"].str.contains("disabled").all()
    assert not r.config.loadBalancerSheddingEnabled


# ------------------------------------------------------------------------------------------- metrics
def test_simc015_zigzag_and_settled():
    assert zigzag_reversals(np.array([10, 20, 10, 20, 21, 19, 30]), 5.0) == 2  # up, down, up
    assert zigzag_reversals(np.array([10, 12, 9, 11, 10.5]), 5.0) == 0  # noise below the threshold
    rng = np.full(60, 10.0)
    rng[:20] = 40
    assert settled_minute([3, 25], rng, 15, 20, 0) == 26
    assert settled_minute([], rng, 15, 20, 0) == 20
    assert settled_minute([50], rng, 15, 20, 0) == 20
    assert settled_minute([30], rng, 40, 20, 0) is None


def test_simc016_tables_shape():
    r = simulate(parse_scenario(tiny()))
    assert list(r.cluster["minute"]) == list(range(30))
    assert set(r.brokers.columns) >= {"minute", "broker", "cpu", "usage", "reported_usage", "score", "msg_rate",
                                      "throughput", "bundles", "wrote_report"}
    assert (r.brokers.groupby("minute").size() == 4).all()
    assert r.events["time"].dt.tz is not None
    assert r.events["minute"].is_monotonic_increasing
    assert r.summary["minutes"] == 30 and r.summary["brokers"] == 4


def test_simc017_compare_side_by_side():
    c = compare("bigo-jitter", {"uniform": {"strategy": "UniformLoadShedder"}, "avg": {"preset": "bigo-avgshedder"}},
                minutes=20)
    assert list(c.table.columns) == ["uniform", "avg"]
    assert c.table.loc["unloads", "uniform"] > c.table.loc["unloads", "avg"] == 0
    assert c.summaries.loc["avg", "strategy"] == "AvgShedder"


# ------------------------------------------------------------------------------------------- API hooks
def test_simc018_progress_and_cancel():
    seen = []
    r = simulate(parse_scenario(tiny()), progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (30, 30) and all(t == 30 for _, t in seen)
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 12

    r = simulate(parse_scenario(tiny()), cancel=cancel)
    assert r.cancelled and r.minutes == 12 and len(r.cluster) == 12 and r.summary["cancelled"]


def test_simc019_pluggable_leader():
    class Recording(ModularLeader):
        def __init__(self, config, seed=None):
            super().__init__(config, seed)
            self.calls = []

        def shed(self, now_ms):
            self.calls.append(now_ms)
            return super().shed(now_ms)

    made = []

    def factory(config, seed=None):
        made.append(Recording(config, seed))
        return made[-1]

    r = simulate(parse_scenario(tiny()), leader=factory)
    assert isinstance(made[0], Leader)
    assert len(made[0].calls) == 29  # a check every minute from minute 1
    assert r.leader_state["shedding"] is not None


def test_simc020_engine_simulator_imports_no_ui():
    import ast

    for f in (ROOT / "engine" / "simulator").glob("*.py"):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                assert n.split(".")[0] not in ("dash", "plotly", "pyspark"), f


# ------------------------------------------------------------------------------------------- CLI
def cli(*args):
    p = subprocess.run([sys.executable, "-m", "engine", "simulate", *args], cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def test_simc021_cli_json_contract(tmp_path):
    rc, out, err = cli("pip364-history-lag", "--json", "--out", str(tmp_path))
    assert rc == 0, err
    d = json.loads(out)
    s = d["summary"]
    assert isinstance(s["unloads"], int) and isinstance(s["bad_placements"], int)
    assert s["first_unload_minute"] == 1 and (s["settled_minute"] is None or isinstance(s["settled_minute"], int))
    for k in ("msg_rate_ratio", "throughput_ratio", "cpu_range"):
        assert isinstance(s[k], float)
    assert set(d["brokers"]) == {"broker-a:8080", "broker-b:8080"}
    for v in d["brokers"].values():
        assert set(v) >= {"cpu", "msg_rate", "throughput", "bundles"} and isinstance(v["bundles"], int)
    kinds = {e["kind"] for e in d["events"]}
    assert "unload" in kinds and "check" not in kinds
    assert sorted(Path(f).name for f in d["files"]) == ["brokers.csv", "cluster.csv", "events.csv", "summary.csv"]
    assert len(pd.read_csv(tmp_path / "cluster.csv")) == 15


def test_simc022_cli_options_and_text():
    rc, out, err = cli("bigo-jitter", "--strategy", "UniformLoadShedder", "--minutes", "10", "--seed", "2")
    assert rc == 0, err
    assert "UniformLoadShedder + LeastLongTermMessageRate, seed 2, 10 minutes" in out
    assert "UNLOAD" in out


@pytest.mark.parametrize("args, words", [
    (["no-such-scenario"], "no such scenario"),
    (["pip364-history-lag", "--set", "maxUnloadPercentage=abc"], "maxUnloadPercentage"),
    (["pip364-history-lag", "--strategy", "Nope"], "unknown shedding strategy"),
    (["pip364-history-lag", "--minutes", "0"], "--minutes"),
])
def test_simc023_cli_bad_input_exits_2(args, words):
    rc, out, err = cli(*args)
    assert rc == 2
    assert words in err and err.startswith("error: ") and "Traceback" not in err


def test_simc024_cli_bad_scenario_file_exits_2(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\nminutes: 5\nbrokers: [{id: a}]\nnamespaces: [{name: bad}]\n")
    rc, out, err = cli(str(p))
    assert rc == 2 and f"{p}: field namespaces[0].name" in err
