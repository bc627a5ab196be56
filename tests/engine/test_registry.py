"""The strategy registry: every spec is complete and consistent, names resolve, the pairing rule, plug-ins."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import LoadBalancerConfig
from engine.errors import UsageError
from engine.managers import LOAD_MANAGER_CLASS, make_manager, manager_kind
from engine.samples import load_sample
from engine.strategies import EmptyState, StrategySpec, make_placement, make_shedding, registry
from engine.strategies.spec import EXTENSIBLE, MODULAR

ROOT = Path(__file__).resolve().parents[2]
KEYS = {f.name for f in dataclasses.fields(LoadBalancerConfig)}
SPECS = registry.specs()
IDS = [s.name for s in SPECS]


def test_the_shipped_strategies_are_registered_defaults_first():
    assert [s.name for s in registry.specs(role="shedding")] == [
        "ThresholdShedder", "AvgShedder", "OverloadShedder", "UniformLoadShedder", "TransferShedder"]
    assert [s.name for s in registry.specs(role="placement")] == [
        "LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "AvgShedder", "RoundRobinBrokerSelector",
        "ExtensibleLeastResourceUsageWithWeight"]
    assert [s.name for s in registry.specs(role="shedding", load_manager=EXTENSIBLE)] == ["TransferShedder"]
    assert registry.specs() == registry.specs()  # stable


@pytest.mark.parametrize("s", SPECS, ids=IDS)
def test_spec_is_complete(s):
    assert s.fqn.startswith("org.apache.pulsar.broker.loadbalance.") and s.fqn.rsplit(".", 1)[-1] in s.name
    assert s.load_manager in (MODULAR, EXTENSIBLE)
    assert set(s.config_keys) <= KEYS, set(s.config_keys) - KEYS
    assert s.title and s.explains
    obj = s.factory()
    assert obj.name == s.name or (s.load_manager == EXTENSIBLE and s.fqn.endswith(obj.name))
    assert tuple(getattr(obj, "config_keys", ())) == s.config_keys
    for key, values in s.sweep_grid:
        assert key in s.config_keys and values and all(isinstance(v, (int, float)) for v in values)
    empty = s.state_type()
    assert dataclasses.is_dataclass(empty) and s.state_type.from_json(json.loads(json.dumps(empty.to_json()))) == empty
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "x"


@pytest.mark.parametrize("s", registry.specs(role="shedding"), ids=[s.name for s in registry.specs(role="shedding")])
def test_shedding_sweep_grid_has_two_keys_around_pulsars_default(s):
    (k1, v1), (k2, v2) = s.sweep_grid
    assert k1 != k2 and len(v1) == 5 and len(v2) in (4, 6)
    default = LoadBalancerConfig()
    assert min(v1) <= getattr(default, k1) <= max(v1) and min(v2) <= getattr(default, k2) <= max(v2)


def test_avgshedder_grid_is_the_history_pages_former_default():
    assert registry.spec("AvgShedder").sweep_grid_text() == [
        ("loadBalancerAvgShedderLowThreshold", "5, 10, 15, 20, 25"),
        ("loadBalancerAvgShedderHitCountLowThreshold", "2, 4, 8, 12")]


def test_names_resolve_short_and_fully_qualified():
    for s in SPECS:
        assert registry.spec(s.name) is s and registry.spec(s.fqn) is s
        assert registry.fqn(s.name) == s.fqn
    assert registry.placement_name(
        "org.apache.pulsar.broker.loadbalance.extensions.strategy.LeastResourceUsageWithWeight") == \
        "ExtensibleLeastResourceUsageWithWeight"
    assert registry.placement_name("org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight") == \
        "LeastResourceUsageWithWeight"
    assert registry.shedding_name("thresholdshedder") == "ThresholdShedder"
    with pytest.raises(UsageError, match="known: .*AvgShedder"):
        registry.spec("NoSuchShedder")
    with pytest.raises(UsageError, match="unknown shedding strategy"):
        registry.shedding_name("LeastLongTermMessageRate")
    assert type(make_shedding("AvgShedder")).__name__ == "AvgShedder"
    assert type(make_placement("RoundRobinBrokerSelector")).__name__ == "RoundRobinBrokerSelector"


def test_pairing_rule():
    assert registry.placement_for("AvgShedder") == "AvgShedder"
    assert registry.placement_for("TransferShedder") == "ExtensibleLeastResourceUsageWithWeight"
    assert registry.placement_for("ThresholdShedder") is None
    assert registry.placements_allowed("ThresholdShedder") == [
        "LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector"]
    assert "AvgShedder" in registry.placements_allowed("AvgShedder")
    assert registry.placements_allowed("TransferShedder") == [
        "RoundRobinBrokerSelector", "ExtensibleLeastResourceUsageWithWeight"]
    assert registry.default_placement("UniformLoadShedder") == "LeastLongTermMessageRate"
    for s in registry.specs(role="shedding"):
        req = s.requires_placement
        assert req is None or req in registry.placements_allowed(s.name)
        assert registry.default_placement(s.name) in registry.placements_allowed(s.name)


def test_make_manager_follows_the_spec_and_the_config():
    ld = load_sample("yahoo-japan-3-brokers")
    cfg = LoadBalancerConfig()
    assert manager_kind(cfg) == MODULAR and type(make_manager(ld, cfg)).__name__ == "ModularLoadManager"
    ts = cfg.with_values({"loadBalancerLoadSheddingStrategy": registry.fqn("TransferShedder")})
    assert type(make_manager(ld, ts, seed=1)).__name__ == "ExtensibleLoadManager"
    elm = cfg.with_values({"loadManagerClassName": LOAD_MANAGER_CLASS[EXTENSIBLE]})
    assert manager_kind(elm) == EXTENSIBLE
    from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER

    assert LOAD_MANAGER_CLASS[EXTENSIBLE] == EXTENSIBLE_LOAD_MANAGER
    assert LOAD_MANAGER_CLASS[MODULAR] == cfg.loadManagerClassName
    from engine.cli.shed import make_manager as old  # the former home keeps working

    assert type(old(ld, cfg, 0)).__name__ == "ModularLoadManager"


def _plugin_spec(name="ZeroShedder"):
    from engine.shedding.overload_shedder import OverloadShedder

    return StrategySpec(name=name, fqn="com.example." + name, roles=frozenset({"shedding"}), load_manager=MODULAR,
                        config_keys=OverloadShedder.config_keys, requires_placement=None,
                        sweep_grid=(("loadBalancerBrokerOverloadedThresholdPercentage", (80, 90)),),
                        state_type=EmptyState, factory=OverloadShedder, explains=frozenset({"verdicts"}), title=name)


def test_register_and_unregister():
    s = _plugin_spec()
    try:
        assert registry.register(s) is s
        assert registry.register(s) is s  # idempotent
        assert registry.spec("com.example.ZeroShedder") is s and registry.specs()[-1] is s
        assert registry.shedding_name("ZeroShedder") == "ZeroShedder"
        with pytest.raises(UsageError, match="already registered"):
            registry.register(dataclasses.replace(s, title="another"))
    finally:
        registry.unregister("ZeroShedder")
    with pytest.raises(UsageError):
        registry.spec("ZeroShedder")


def test_spec_validates_itself():
    with pytest.raises(UsageError, match="roles"):
        dataclasses.replace(_plugin_spec(), roles=frozenset({"sorting"}))
    with pytest.raises(UsageError, match="load_manager"):
        dataclasses.replace(_plugin_spec(), load_manager="simple")
    with pytest.raises(UsageError, match="short name"):
        _plugin_spec("com.example.Dotted")


PLUGIN = '''
from engine.shedding.threshold_shedder import ThresholdShedder
from engine.strategies import EmptyState, StrategySpec


class HalfShedder(ThresholdShedder):
    name = "HalfShedder"


SPEC = StrategySpec(name="HalfShedder", fqn="com.example.HalfShedder", roles=frozenset({"shedding"}),
                    load_manager="modular", config_keys=ThresholdShedder.config_keys, requires_placement=None,
                    sweep_grid=(("loadBalancerBrokerThresholdShedderPercentage", (5, 10)),), state_type=EmptyState,
                    factory=HalfShedder, explains=frozenset({"verdicts"}), title="a plug-in")
'''


def test_plugin_module_from_the_environment(tmp_path):
    (tmp_path / "shedlab_plugin_h.py").write_text(PLUGIN)
    env = dict(os.environ, SHEDLAB_STRATEGY_MODULES="shedlab_plugin_h",
               PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    code = ("from engine.strategies import registry; s = registry.spec('com.example.HalfShedder'); "
            "print(s.name, [x.name for x in registry.specs(role='shedding')][-1], registry.placement_for(s.name))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["HalfShedder", "HalfShedder", "None"]
    cli = subprocess.run([sys.executable, "-m", "engine", "shed", str(ROOT / "samples/snapshots/yahoo-japan-3-brokers.json"),
                          "--strategy", "HalfShedder", "--json"], env=env, capture_output=True, text=True, cwd=ROOT)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["strategy"] == "HalfShedder"
    bad = subprocess.run([sys.executable, "-c", "from engine.strategies import registry; registry.specs()"],
                         env=dict(env, SHEDLAB_STRATEGY_MODULES="no_such_plugin_module"), capture_output=True,
                         text=True, cwd=ROOT)
    assert bad.returncode != 0 and "no_such_plugin_module" in bad.stderr


def test_strategy_modules_never_import_a_load_manager():
    import ast

    for s in SPECS:
        mod = sys.modules[s.factory.__module__]
        tree = ast.parse(Path(mod.__file__).read_text())
        for node in tree.body:  # module level
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").endswith(("load_manager", "managers")), (mod.__name__, node.module)


# ------------------------------------------------------------------------------------------ state as a value
SNAPSHOTS = sorted((ROOT / "samples/snapshots").glob("*.json"))
ELM_SNAPSHOTS = sorted((ROOT / "samples/extensible").glob("*.json"))
STATE_CFG = {"loadBalancerAvgShedderHitCountLowThreshold": "2", "loadBalancerAvgShedderHitCountHighThreshold": "1",
             "loadBalancerSheddingConditionHitCountThreshold": "1", "loadBalancerSheddingGracePeriodMinutes": "2",
             "loadBalancerSheddingIntervalMinutes": "1"}


def _pairs():
    for s in registry.specs(role="shedding"):
        snaps = SNAPSHOTS + (ELM_SNAPSHOTS if s.load_manager == EXTENSIBLE else [])
        for p in registry.placements_allowed(s.name):
            for snap in snaps:
                yield pytest.param(s.name, p, snap, id=f"{s.name}+{p}-{snap.stem}")


def _cfg(shed, place):
    return LoadBalancerConfig().with_values(dict(STATE_CFG, loadBalancerLoadSheddingStrategy=registry.fqn(shed),
                                                 loadBalancerLoadPlacementStrategy=registry.fqn(place)))


def _manager(snap, shed, place):
    from engine.io import load_snapshot

    return make_manager(load_snapshot(str(snap)), _cfg(shed, place), seed=3)


def _through_json(value):
    return type(value).from_json(json.loads(json.dumps(value.to_json())))


def _decisions(cycles):
    out = []
    for c in cycles:
        j = c.to_json()
        j.pop("cycle", None)
        out.append(j)
    return out


@pytest.mark.parametrize("shed,place,snap", list(_pairs()))
def test_state_round_trips_through_json_and_resumes(shed, place, snap):
    n, m = 3, 3
    whole = _manager(snap, shed, place)
    expected = _decisions(whole.run_cycles(n + m))[n:]
    lm = _manager(snap, shed, place)
    lm.run_cycles(n)
    s_state, p_state = lm.shedding_state, lm.placement_state
    assert isinstance(s_state, registry.spec(shed).state_type)
    assert _through_json(s_state) == s_state and _through_json(p_state) == p_state
    # resume with new strategy objects restored from JSON (the manager's own memory carries on)
    one = lm.placement is lm.shedding
    lm.shedding = make_shedding(lm.shedding.name)
    lm.shedding.restore(json.loads(json.dumps(s_state.to_json())))
    if one:
        lm.placement = lm.shedding
    else:
        lm.placement = type(lm.placement)()
        lm.placement.restore(_through_json(p_state))
    t0 = lm.now + lm.config.loadBalancerSheddingIntervalMinutes * 60_000
    if lm.view.__class__.__name__ == "ExtensibleLoadData":  # what run_cycles does between cycles
        got = []
        for i in range(m):
            for d in lm.view.broker_load_data.values():
                if d.updated_at:
                    d.updated_at += 60_000
            if lm.view.now_ms is not None:
                lm.view.now_ms += 60_000
            got.append(lm.do_load_shedding(t0 + i * 60_000))
    else:
        got = [lm.do_load_shedding(t0 + i * 60_000) for i in range(m)]
    assert _decisions(got) == expected
    assert whole.shedding_state == lm.shedding_state


@pytest.mark.parametrize("shed", [s.name for s in registry.specs(role="shedding", load_manager=MODULAR)])
@pytest.mark.parametrize("snap", SNAPSHOTS, ids=[s.stem for s in SNAPSHOTS])
def test_n_cycles_are_a_fold_of_run(shed, snap):
    """run_cycles(N) of the manager = a fold of ``run`` over the same inputs, a new strategy object each
    cycle: the value carries everything the next shedding decision needs."""
    from engine.cadence import forget_expired
    from engine.view import LoadView

    place = registry.default_placement(shed)
    from engine.io import load_snapshot

    lm = _manager(snap, shed, place)
    state = registry.spec(shed).state_type()
    data = load_snapshot(str(snap))
    if shed in (data.strategy_state or {}):
        state = registry.spec(shed).state_type.from_json(data.strategy_state[shed])
    cycles = lm.run_cycles(5)
    recently = {b: int(t) for b, t in data.recently_unloaded.items()}
    view = LoadView.from_load_data(data)
    assert lm.view.brokers == view.brokers
    for c in cycles:
        recently = forget_expired(recently, c.now_ms, lm.config.loadBalancerSheddingGracePeriodMinutes)
        res, state = make_shedding(shed).run(view, lm.config, recently, _through_json(state))
        a, b = res.to_json(), c.shedding.to_json()
        a.pop("state"), b.pop("state")  # the display form lists AvgShedder's placement plans too
        assert a == b
        for u in c.unloads:
            recently[u.bundle] = c.now_ms
    assert state.shedding_only() == lm.shedding_state.shedding_only()


@pytest.mark.parametrize("s", SPECS, ids=IDS)
def test_load_state_restores_not_merges(s):
    obj = s.factory()
    empty = obj.state_value()
    assert empty == s.state_type() and obj.state() == obj.state_value().to_json() or s.name == "AvgShedder"
    if s.state_type is EmptyState:
        return
    snap = (ELM_SNAPSHOTS if s.load_manager == EXTENSIBLE else SNAPSHOTS)[0]
    lm = _manager(snap, s.name if s.is_shedding else "ThresholdShedder",
                  s.name if s.is_placement and s.load_manager == MODULAR else
                  registry.default_placement(s.name if s.is_shedding else "ThresholdShedder"))
    lm.run_cycles(1 if s.load_manager == MODULAR else 0)  # the ELM sample is seeded with a hit count
    for b in ("new/ns/0x00000000_0x10000000", "new/ns/0x10000000_0x20000000"):
        lm.select_broker_for_assignment(b)
    live = lm.shedding if s.is_shedding else lm.placement
    if type(live) is not type(obj):
        return
    full = live.state_value()
    assert full != empty, "the sample run should leave something in memory"
    live.load_state({})
    assert live.state_value() == empty
    live.restore(full)
    assert live.state_value() == full
    live.reset()
    assert live.state_value() == empty


def test_avgshedder_state_keeps_its_plans_and_hit_counters():
    lm = _manager(ROOT / "samples/snapshots/avgshedder-pairing-6-brokers.json", "AvgShedder", "AvgShedder")
    lm.run_cycles(4)
    st = lm.shedding_state
    j = st.to_json()
    assert set(j) == {"hit_low", "hit_high", "plans"} and st.plans
    assert all(len(p) == 4 and isinstance(p[0], list) for p in j["plans"])
    assert st.shedding_only().plans == () and st.shedding_only().hit_low == st.hit_low
    legacy = lm.shedding.state()  # the display form (bundle -> destination) cannot key the plans
    assert type(st).from_json(legacy).plans == () and type(st).from_json(legacy).hit_low == st.hit_low
