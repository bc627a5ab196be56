"""The simulator asks the strategy registry: a strategy registered from a plug-in runs with no edit to it.

The plug-ins here are registered the way an operator's module would be (one ``StrategySpec`` passed to
:func:`engine.strategies.registry.register`); each behaves like a shipped strategy under another name,
so the test can demand the very same run: if the simulator still decided anything by a strategy's
name (the pairing rule, the load manager, the placement a ``--strategy`` choice implies), the plug-in's
run would fail or differ.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from engine.config import LoadBalancerConfig
from engine.errors import InputError
from engine.extensible.transfer_shedder import TransferShedder
from engine.shedding.avg_shedder import AvgShedder
from engine.shedding.threshold_shedder import ThresholdShedder
from engine.simulator import run_scenario
from engine.simulator.pairing import check_pair, config_with_strategy, load_manager_of
from engine.strategies import registry
from engine.strategies.spec import StrategySpec

SIMULATOR = Path(__file__).resolve().parents[2] / "engine" / "simulator"


class PluginThresholdShedder(ThresholdShedder):
    """ThresholdShedder's algorithm under a plug-in's name."""

    name = "PluginThresholdShedder"


class PluginAvgShedder(AvgShedder):
    """AvgShedder's algorithm (shedding and placement, one instance) under a plug-in's name."""

    name = "PluginAvgShedder"


def _like(shipped: str, name: str, factory, **over) -> StrategySpec:
    """A plug-in's spec: the shipped strategy's declaration under another name and class name."""
    s = registry.spec(shipped)
    kw = dict(name=name, fqn="com.example.shedlab." + name, roles=s.roles, load_manager=s.load_manager,
              config_keys=s.config_keys, requires_placement=s.requires_placement, sweep_grid=s.sweep_grid,
              state_type=s.state_type, factory=factory, explains=s.explains, title=f"{shipped} as a plug-in")
    kw.update(over)
    return StrategySpec(**kw)


@pytest.fixture
def plugins():
    specs = [_like("ThresholdShedder", "PluginThresholdShedder", PluginThresholdShedder),
             _like("AvgShedder", "PluginAvgShedder", PluginAvgShedder, requires_placement="PluginAvgShedder")]
    for s in specs:
        registry.register(s)
    try:
        yield specs
    finally:
        for s in specs:
            registry.unregister(s.name)


def _decisions(r):
    ev = r.events
    return ev[ev["kind"].isin(["unload", "assign", "unload-skipped"])][
        ["minute", "kind", "broker", "bundle", "destination"]].reset_index(drop=True)


def test_a_plugin_shedding_strategy_runs_like_the_strategy_it_copies(plugins):
    base = run_scenario("pip364-history-lag", strategy="ThresholdShedder", seed=2)
    plug = run_scenario("pip364-history-lag", strategy="com.example.shedlab.PluginThresholdShedder", seed=2)
    assert base.summary["unloads"] > 0, "the scenario must make ThresholdShedder move something"
    assert plug.summary["strategy"] == "PluginThresholdShedder"
    assert plug.summary["placement"] == base.summary["placement"]
    assert _decisions(plug).equals(_decisions(base))
    assert plug.summary["unloads"] == base.summary["unloads"]
    assert plug.cluster["usage_range"].equals(base.cluster["usage_range"])


def test_a_plugin_with_its_own_paired_placement_gets_it_and_is_refused_with_another(plugins):
    cfg = config_with_strategy(LoadBalancerConfig(), "PluginAvgShedder")
    assert (registry.shedding_name(cfg.loadBalancerLoadSheddingStrategy),
            registry.placement_name(cfg.loadBalancerLoadPlacementStrategy)) == ("PluginAvgShedder", "PluginAvgShedder")
    base = run_scenario("bigo-scale-out", strategy="AvgShedder", seed=1)
    plug = run_scenario("bigo-scale-out", strategy="PluginAvgShedder", seed=1)
    assert base.summary["unloads"] > 0
    assert (plug.summary["strategy"], plug.summary["placement"]) == ("PluginAvgShedder", "PluginAvgShedder")
    assert _decisions(plug).equals(_decisions(base))
    # the registry's pairing rule: the plug-in's placement only with itself as the shedding strategy
    with pytest.raises(InputError, match="refuses to start"):
        run_scenario("bigo-scale-out", strategy="ThresholdShedder", placement="PluginAvgShedder", minutes=2)
    with pytest.raises(InputError, match="refuses to start"):
        run_scenario("bigo-scale-out", strategy="PluginAvgShedder", placement="AvgShedder", minutes=2)
    # leaving it falls back to a placement the new strategy can run with (Pulsar's default)
    back = config_with_strategy(cfg, "ThresholdShedder")
    assert registry.placement_name(back.loadBalancerLoadPlacementStrategy) == registry.default_placement(
        "ThresholdShedder")


def test_the_load_manager_comes_from_the_spec():
    cfg = LoadBalancerConfig()
    for s in registry.specs(role="shedding"):
        c = config_with_strategy(cfg, s.name)
        assert load_manager_of(c) == s.load_manager
        check_pair(c, "test")  # the placement a strategy choice implies always runs with it
    spec = _like("TransferShedder", "PluginTransferShedder", TransferShedder)
    registry.register(spec)
    try:
        c = config_with_strategy(cfg, "PluginTransferShedder")
        assert load_manager_of(c) == "extensible" and c.extensible
        r = run_scenario("bigo-scale-out", strategy="PluginTransferShedder", minutes=20, seed=1)
        assert r.summary["strategy"] == "PluginTransferShedder" and "load_std" in r.cluster
    finally:
        registry.unregister(spec.name)


def _code_strings(path: Path) -> list:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef)) and n.body and isinstance(n.body[0], ast.Expr) \
                and isinstance(n.body[0].value, ast.Constant):
            docs.add(id(n.body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_simulator_loop_names_no_strategy():
    """Only the findings (the articles' runs, data) name strategies; the loop, its ELM leader and its
    command ask the registry (docstrings may name them)."""
    names = [s.name for s in registry.specs()]
    bad = []
    for py in sorted(SIMULATOR.glob("*.py")) + [SIMULATOR.parent / "extensible" / "sim_leader.py",
                                                SIMULATOR.parent / "cli" / "simulate.py"]:
        if py.name == "findings.py":
            continue
        for line, text in _code_strings(py):
            bad += [f"{py.name}:{line}: {n}" for n in names if n in text]
    assert not bad, bad


@pytest.mark.parametrize("strategy", [s.name for s in registry.specs(role="shedding")])
def test_the_result_carries_the_strategies_memory_as_lossless_state_values(strategy):
    from engine.simulator import Simulation, load_scenario

    sc = load_scenario("bigo-scale-out")
    cfg = config_with_strategy(sc.lb_config(), strategy)
    sim = Simulation(sc, cfg, seed=1, minutes=40)
    r = sim.run()
    values = sim.leader.state_values()
    assert set(r.strategy_state) == set(values) and registry.shedding_name(strategy) in values
    for name, d in r.strategy_state.items():
        st = registry.spec(name).state_type
        assert isinstance(values[name], st)
        assert st.from_json(d) == values[name]  # lossless: the value comes back
        assert st.from_json(d).to_json() == d
    assert r.to_json()["strategy_state"] == r.strategy_state


def test_a_snapshot_run_resumes_from_a_previous_run_strategy_state():
    """Running N checks is a fold over the state: a steady snapshot run for 2 checks, then resumed from
    its ``strategy_state`` for 1 more, ends where 3 checks in one run end (AvgShedder's hit counts)."""
    from engine.samples import load_sample
    from engine.simulator import simulate
    from engine.simulator.from_snapshot import scenario_from_snapshot

    ld = load_sample("bigo-avgshedder-homogeneous")
    cfg = config_with_strategy(LoadBalancerConfig(), "AvgShedder")
    two = simulate(scenario_from_snapshot(ld, minutes=3), cfg)  # checks at minutes 1 and 2
    three = simulate(scenario_from_snapshot(ld, minutes=4), cfg)
    assert set(two.strategy_state["AvgShedder"]["hit_low"].values()) == {2}, "the fixture must count hits"
    sc = scenario_from_snapshot(ld, minutes=2)  # one check
    sc.start.strategy_state = dict(two.strategy_state)
    resumed = simulate(sc, cfg)
    assert resumed.strategy_state == three.strategy_state
    fresh = simulate(scenario_from_snapshot(ld, minutes=2), cfg)
    assert fresh.strategy_state != resumed.strategy_state  # the seed was used, not merged into nothing


@pytest.mark.parametrize("strategy", [s.name for s in registry.specs(role="shedding")])
def test_shedding_rows_speak_pulsars_vocabulary(strategy):
    """Every check, unload and skipped unload carries the cycle's label and Pulsar's reason code, read
    from the result; a check is ``Success`` exactly when its cycle unloaded something."""
    from engine.results import LABELS, REASONS

    ev = run_scenario("bigo-scale-out", strategy=strategy, seed=1, minutes=60).events
    checks = ev[ev["kind"] == "check"]
    assert len(checks) and set(checks["label"]) <= set(LABELS) and set(checks["reason_code"]) <= set(REASONS)
    moved = set(ev.loc[ev["kind"] == "unload", "cycle"])
    assert ((checks["label"] == "Success") == checks["cycle"].isin(moved)).all()
    unl = ev[ev["kind"] == "unload"]
    assert (unl["label"] == "Success").all() and unl["reason_code"].isin(REASONS).all()
    by_cycle = dict(zip(checks["cycle"], checks["reason_code"]))
    assert all(by_cycle[c] == code for c, code in zip(unl["cycle"], unl["reason_code"]))
    assert (ev.loc[ev["kind"] == "assign", "reason_code"] == "").all()
