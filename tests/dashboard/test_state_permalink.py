"""The Tuner state, its engine config, and the permalink (state ⇄ URL)."""
import pytest

from dashboard import keys, permalink
from engine.strategies import registry
from dashboard.tuner.state import TunerState, build_config, changed_values, coerce_state, state_from_config
from engine.config import BIGO_AVGSHEDDER, PULSAR_5_DEFAULTS, LoadBalancerConfig


def test_state001_build_config_drops_only_bad_values():
    st, errs = coerce_state({"src": "sample:x", "shed": "ThresholdShedder", "place": "LeastResourceUsageWithWeight",
                             "values": {"loadBalancerBrokerThresholdShedderPercentage": "15", "maxUnloadPercentage": "7",
                                        "noSuchKey": "1", "loadBalancerHistoryResourcePercentage": "0.90"}})
    assert st.value_dict == {"loadBalancerBrokerThresholdShedderPercentage": "15"}  # 0.90 is the default
    assert any("maxUnloadPercentage" in e for e in errs) and any("noSuchKey" in e for e in errs)
    cfg, errs2 = build_config(st)
    assert cfg.loadBalancerBrokerThresholdShedderPercentage == 15 and not errs2
    assert cfg.placement_strategy == "LeastResourceUsageWithWeight"


def test_state002_avgshedder_placement_needs_avgshedder_shedding():
    cfg, errs = build_config(TunerState(shed="ThresholdShedder", place="AvgShedder"))
    assert cfg.placement_strategy == "LeastLongTermMessageRate" and "refuses to start" in errs[0]
    cfg, errs = build_config(TunerState(shed="AvgShedder", place="AvgShedder"))
    assert cfg.placement_strategy == "AvgShedder" and not errs


def test_state003_presets_round_trip():
    for preset in (PULSAR_5_DEFAULTS, BIGO_AVGSHEDDER, LoadBalancerConfig()):
        st = state_from_config(preset, src="sample:yahoo-japan-3-brokers")
        cfg, errs = build_config(st)
        assert cfg == preset and not errs
    assert changed_values(PULSAR_5_DEFAULTS)["maxUnloadPercentage"] == "0.5"


def test_state004_untrusted_json_never_raises():
    for junk in (None, 3, "x", [], {"shed": 5, "values": "no", "seed": "abc"}, {"values": {"maxUnloadPercentage": {}}}):
        st = TunerState.from_json(junk)
        assert isinstance(st, TunerState)
    st, errs = coerce_state({"shed": "NoSuchShedder"})
    assert st.shed == "ThresholdShedder" and errs


def test_permalink001_round_trip():
    st, _ = coerce_state({"src": "sample:bigo-threshold-first-unload", "shed": "ThresholdShedder",
                          "place": "LeastResourceUsageWithWeight", "seed": 7,
                          "values": {"loadBalancerDistributeBundlesEvenlyEnabled": "false",
                                     "loadBalancerBrokerThresholdShedderPercentage": "12"}})
    qs = permalink.encode(st)
    assert qs.startswith("src=sample:bigo-threshold-first-unload&shed=ThresholdShedder&place=")
    assert "loadBalancerBrokerThresholdShedderPercentage=12" in qs and "seed=7" in qs
    back, errs = permalink.decode_query("?" + qs)
    assert back == st and not errs


def test_permalink002_forgiving_decode():
    st, errs = permalink.decode({"src": "sample:yahoo-japan-3-brokers", "shed": "AvgShedder", "place": "AvgShedder",
                                 "loadBalancerAvgShedderLowThreshold": "20", "maxUnloadPercentage": "nine",
                                 "utm_source": "mail", "seed": "x"})
    assert st.shed == "AvgShedder" and st.value_dict == {"loadBalancerAvgShedderLowThreshold": "20.0"}
    assert st.seed == 0
    joined = " ".join(errs)
    assert "maxUnloadPercentage" in joined and "utm_source" in joined and "seed" in joined
    assert permalink.decode({}) == (None, []) and permalink.decode_query("") == (None, [])
    assert permalink.decode({"foo": "bar"}) == (None, [])


def test_permalink003_strategy_keys_accepted_as_broker_conf_keys():
    st, errs = permalink.decode({"loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder",
                                 "loadBalancerLoadPlacementStrategy": "org.apache.pulsar.broker.loadbalance.impl.AvgShedder"})
    assert (st.shed, st.place) == ("AvgShedder", "AvgShedder") and not errs


def test_keys001_groups_follow_the_strategies():
    for shed in registry.names("shedding"):
        for place in registry.manager_placements(shed):
            shown = [k for g in keys.groups_for(shed, place) for k in g.keys]
            assert len(shown) == len(set(shown))  # each key once
            scls, pcls = registry.spec(shed).factory, registry.spec(place).factory
            for k in tuple(scls.config_keys) + tuple(getattr(pcls, "config_keys", ())):
                assert k in shown, (shed, place, k)
    g = keys.groups_for("ThresholdShedder", "LeastResourceUsageWithWeight")
    assert [x.title for x in g] == ["Shedding · ThresholdShedder", "Placement · LeastResourceUsageWithWeight",
                                    "Resource weights", "Load manager"]
    assert "loadBalancerDistributeBundlesEvenlyEnabled" in g[-1].keys


def test_keys002_specs_marks_and_formatting():
    s = keys.key_spec("loadBalancerBrokerThresholdShedderPercentage")
    assert (s.kind, s.lo, s.hi, s.step, s.default) == ("slider", 0, 100, 1, 10)
    marks = s.marks(10)
    assert marks[10]["label"].startswith("◆") and marks[0]["label"] == "0 %" and marks[100]["label"] == "100 %"
    # labels at the ends are anchored inside the track, not centred on their tick (cut off otherwise)
    assert marks[0]["style"]["transform"] == "translateX(-8px)" and "-100%" in marks[100]["style"]["transform"]
    assert "transform" not in marks[10]["style"]
    spaced = keys.spaced_marks(keys.key_spec("minUnloadMessage").marks(1000), 0, 100000, gap=0.12)
    assert list(spaced) == [1000, 100000]  # the ◆ default at 1 % hides the "0" label it would overlap
    m = keys.key_spec("maxUnloadPercentage").marks(0.2)
    assert m[0.2]["label"] == "◆ 0.20" and m[0.5]["label"] == "5.0: 0.50"
    assert keys.key_spec("lowerBoundarySheddingEnabled").kind == "bool"
    thr = keys.key_spec("minUnloadMessageThroughput")
    assert keys.format_value(10 * 1048576, thr.fmt) == "10 MB/s"
    assert keys.format_value(1.5, keys.key_spec("loadBalancerCPUResourceWeight").fmt) == "1.5×"
    assert s.range_for(150) == (0, 150)  # a linked value outside the slider range widens it


@pytest.mark.parametrize("key,widget,conf", [
    ("loadBalancerBrokerThresholdShedderPercentage", 12.0, "12"),
    ("loadBalancerHistoryResourcePercentage", 0.30000000000000004, "0.3"),
    ("maxUnloadPercentage", 0.5, "0.5"),
    ("lowerBoundarySheddingEnabled", True, "true"),
    ("minUnloadMessageThroughput", 3145728.0000001, "3145728"),
])
def test_keys003_widget_values_to_broker_conf(key, widget, conf):
    spec = keys.key_spec(key)
    assert keys.value_to_conf(spec, widget) == conf
    LoadBalancerConfig().with_values({key: conf})  # and the engine accepts it
    assert keys.value_to_conf(spec, keys.conf_to_value(spec, conf)) == conf


@pytest.mark.parametrize("seed", ["inf", "-inf", "nan", "1e999", None, "", "x", [1]])
def test_state_numbers_that_are_not_finite_fall_back(seed):
    from dashboard.simulator import coerce_state as sim_coerce

    state, _ = coerce_state({"seed": seed, "step": seed})
    assert state.seed == 0 and state.step is None
    assert sim_coerce({"seed": seed, "minutes": seed})[0].seed == 0
