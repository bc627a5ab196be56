"""The frozen config: Pulsar keys and 4.x defaults, presets, broker.conf reading/writing."""
import dataclasses

import pytest

from engine.config import (
    BIGO_AVGSHEDDER,
    IMPL,
    PULSAR_4_DEFAULTS,
    PULSAR_5_DEFAULTS,
    LoadBalancerConfig,
    changed_keys,
    key_info,
    parse_broker_conf,
    to_broker_conf,
)
from engine.errors import InputError

# pulsar-load-balancing.md §11 (4.x defaults)
DEFAULTS_4X = {
    "loadBalancerEnabled": True, "loadBalancerSheddingEnabled": True, "loadBalancerSheddingIntervalMinutes": 1,
    "loadBalancerSheddingGracePeriodMinutes": 30, "loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
    "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate", "lowerBoundarySheddingEnabled": False,
    "loadBalancerReportUpdateThresholdPercentage": 10, "loadBalancerReportUpdateMinIntervalMillis": 5000,
    "loadBalancerReportUpdateMaxIntervalMinutes": 15, "loadBalancerHostUsageCheckIntervalMinutes": 1,
    "loadBalancerResourceQuotaUpdateIntervalMinutes": 15, "loadBalancerDistributeBundlesEvenlyEnabled": True,
    "loadBalancerBrokerMaxTopics": 50000, "loadBalancerBrokerOverloadedThresholdPercentage": 85,
    "loadBalancerBrokerThresholdShedderPercentage": 10, "loadBalancerHistoryResourcePercentage": 0.9,
    "loadBalancerBundleUnloadMinThroughputThreshold": 10, "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 10,
    "loadBalancerCPUResourceWeight": 1.0, "loadBalancerMemoryResourceWeight": 0, "loadBalancerDirectMemoryResourceWeight": 0,
    "loadBalancerBandwidthInResourceWeight": 1.0, "loadBalancerBandwidthOutResourceWeight": 1.0,
    "loadBalancerBandwithInResourceWeight": 1.0, "loadBalancerBandwithOutResourceWeight": 1.0,
    "loadBalancerMsgRateDifferenceShedderThreshold": 50, "loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold": 4,
    "minUnloadMessage": 1000, "minUnloadMessageThroughput": 1048576, "maxUnloadPercentage": 0.2,
    "maxUnloadBundleNumPerShedding": -1, "loadBalancerAvgShedderLowThreshold": 15, "loadBalancerAvgShedderHighThreshold": 40,
    "loadBalancerAvgShedderHitCountLowThreshold": 8, "loadBalancerAvgShedderHitCountHighThreshold": 2,
    "loadBalancerSheddingExcludedNamespaces": frozenset(), "loadBalancerMaxNumberOfBundlesInBundleLoadReport": 10,
    "loadBalancerAutoBundleSplitEnabled": True, "loadBalancerAutoUnloadSplitBundlesEnabled": True,
    "loadBalancerNamespaceBundleMaxTopics": 1000, "loadBalancerNamespaceBundleMaxSessions": 1000,
    "loadBalancerNamespaceBundleMaxMsgRate": 30000, "loadBalancerNamespaceBundleMaxBandwidthMbytes": 100,
    "loadBalancerNamespaceMaximumBundles": 128, "defaultNumberOfNamespaceBundles": 4,
    "defaultNamespaceBundleSplitAlgorithm": "range_equally_divide", "flowOrQpsDifferenceThresholdPercentage": 10,
    "failureDomainsEnabled": False, "preferLaterVersions": False, "exposeBundlesMetricsInPrometheus": False,
    "loadBalancerBrokerLoadTargetStd": 0.25, "loadBalancerSheddingConditionHitCountThreshold": 3,
    "loadBalancerTransferEnabled": True, "loadBalancerMaxNumberOfBrokerSheddingPerCycle": 3,
    "loadBalanceSheddingDelayInSeconds": 180, "loadBalancerBrokerLoadDataTTLInSeconds": 1800,
    "loadBalancerSheddingBundlesWithPoliciesEnabled": False, "loadBalancerDebugModeEnabled": False,
    "loadBalancerSplitIntervalMinutes": 1, "loadBalancerMaxNumberOfBundlesToSplitPerCycle": 10,
    "loadBalancerNamespaceBundleSplitConditionHitCountThreshold": 3,
}


def test_every_reference_key_with_its_4x_default():
    cfg = LoadBalancerConfig()
    for k, v in DEFAULTS_4X.items():
        assert getattr(cfg, k) == v, k


def test_every_key_documented_with_unit():
    for f in dataclasses.fields(LoadBalancerConfig):
        info = key_info(f.name)
        assert info["doc"] and info["unit"], f.name
        assert info["default"] == getattr(PULSAR_4_DEFAULTS, f.name)


def test_frozen_and_hashable():
    cfg = LoadBalancerConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.maxUnloadPercentage = 0.5
    assert hash(cfg) == hash(LoadBalancerConfig())
    assert {cfg: 1}[LoadBalancerConfig()] == 1
    assert hash(cfg.with_values({"maxUnloadPercentage": "0.5"})) != hash(cfg)


def test_pulsar5_preset():
    assert changed_keys(PULSAR_5_DEFAULTS) == {}          # against its own release's defaults: nothing
    diff = changed_keys(PULSAR_5_DEFAULTS, LoadBalancerConfig())
    assert diff.pop("pulsarVersion") == ("4.2.4", "5.0.1")
    assert diff == {
        "loadBalancerLoadSheddingStrategy": (IMPL + "ThresholdShedder", IMPL + "AvgShedder"),
        "loadBalancerLoadPlacementStrategy": (IMPL + "LeastLongTermMessageRate", IMPL + "AvgShedder"),
        "loadBalancerDistributeBundlesEvenlyEnabled": (True, False),
        "maxUnloadPercentage": (0.2, 0.5),
        "defaultNumberOfNamespaceBundles": (4, 32),
    }


def test_bigo_preset_matches_article():
    c = BIGO_AVGSHEDDER
    assert (c.loadBalancerAvgShedderHitCountHighThreshold, c.loadBalancerAvgShedderHitCountLowThreshold,
            c.loadBalancerAvgShedderLowThreshold, c.loadBalancerAvgShedderHighThreshold, c.maxUnloadPercentage,
            c.minUnloadMessageThroughput, c.minUnloadMessage) == (2, 8, 15, 40, 0.5, 10 * 1024 * 1024, 10000)


@pytest.mark.parametrize("new,old,expected", [
    (1.0, 1.0, 1.0),   # both default
    (1.0, 3.0, 3.0),   # only the typo key set: it wins
    (2.0, 1.0, 2.0),   # only the new key set
    (2.0, 3.0, 2.0),   # both set: the new key wins
])
def test_bandwidth_weight_aliases_pip357(new, old, expected):
    c = LoadBalancerConfig().with_values({"loadBalancerBandwidthInResourceWeight": new,
                                          "loadBalancerBandwithInResourceWeight": old,
                                          "loadBalancerBandwidthOutResourceWeight": new,
                                          "loadBalancerBandwithOutResourceWeight": old})
    assert c.bandwidth_in_weight == expected and c.bandwidth_out_weight == expected
    assert c.weights == (1.0, 0.0, expected, expected)


def test_parse_broker_conf_keeps_unknown_and_ignores_blank():
    text = """# Pulsar broker.conf
clusterName=standalone
loadBalancerBrokerOverloadedThresholdPercentage=70
loadBalancerSheddingExcludedNamespaces=public/a, public/b
loadBalancerOverrideBrokerNicSpeedGbps=
maxUnloadPercentage : 0.5
loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.AvgShedder
loadBalancerLoadPlacementStrategy=\\
    org.apache.pulsar.broker.loadbalance.impl.AvgShedder
"""
    p = parse_broker_conf(text, source="broker.conf")
    c = p.config
    assert c.loadBalancerBrokerOverloadedThresholdPercentage == 70
    assert c.loadBalancerSheddingExcludedNamespaces == frozenset({"public/a", "public/b"})
    assert c.loadBalancerOverrideBrokerNicSpeedGbps is None
    assert c.maxUnloadPercentage == 0.5
    assert c.shedding_strategy == "AvgShedder" and c.placement_strategy == "AvgShedder"
    assert p.unknown == (("clusterName", "standalone"),)


@pytest.mark.parametrize("line,key", [
    ("maxUnloadPercentage=abc", "maxUnloadPercentage"),
    ("loadBalancerBrokerOverloadedThresholdPercentage=85.5", "loadBalancerBrokerOverloadedThresholdPercentage"),
    ("loadBalancerSheddingEnabled=yes", "loadBalancerSheddingEnabled"),
    ("loadBalancerHistoryResourcePercentage=1.5", "loadBalancerHistoryResourcePercentage"),
    ("loadBalancerCPUResourceWeight=-1", "loadBalancerCPUResourceWeight"),
    ("minUnloadMessage=NaN", "minUnloadMessage"),
])
def test_bad_values_rejected_naming_the_key(line, key):
    with pytest.raises(InputError) as e:
        parse_broker_conf(line + "\n", source="my.conf")
    assert e.value.field == key and e.value.source == "my.conf"
    assert key in str(e.value) and "my.conf" in str(e.value)


def test_export_round_trip():
    c = PULSAR_5_DEFAULTS.with_values({"loadBalancerSheddingExcludedNamespaces": "x/y,a/b",
                                       "loadBalancerAvgShedderLowThreshold": "12.5"})
    text = to_broker_conf(c)           # the lines a 5.0 operator pastes: what differs from 5.0's defaults
    assert "maxUnloadPercentage" not in text and "pulsarVersion" not in text
    assert "loadBalancerSheddingExcludedNamespaces=a/b,x/y" in text
    assert parse_broker_conf(text, base=PULSAR_5_DEFAULTS).config == c
    text4 = to_broker_conf(c, LoadBalancerConfig())  # against 4.x: the 5.0 defaults are lines too
    assert "maxUnloadPercentage=0.5" in text4 and "pulsarVersion" not in text4
    assert to_broker_conf(LoadBalancerConfig()) == ""


def test_unknown_key_in_with_values():
    with pytest.raises(InputError) as e:
        LoadBalancerConfig().with_values({"loadBalancerNope": "1"})
    assert e.value.field == "loadBalancerNope"


def test_dict_round_trip():
    c = BIGO_AVGSHEDDER
    assert LoadBalancerConfig.from_dict(c.to_dict()) == c
