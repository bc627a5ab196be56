"""The runs the lab records: which load manager, which strategies, which settings (Pulsar's
``broker.conf`` names; everything else keeps Pulsar 4.0's default).

Settings common to every run, and why:

* ``loadBalancerSheddingIntervalMinutes=1``: the leader sheds every minute (default 1 already);
* ``loadBalancerReportUpdateMaxIntervalMinutes=1`` (default 15): every broker rewrites its load report
  at least once a minute, so a bundle's new owner shows in the next snapshot;
* ``loadBalancerResourceQuotaUpdateIntervalMinutes=1`` (default 15): the leader writes its bundle data
  to ``/loadbalance/bundle-data`` every minute, so each snapshot carries what the leader averages;
* ``loadBalancerBundleUnloadMinThroughputThreshold=0.1`` (MB/s; default 10): the lab's traffic is about
  1.4 MB/s, below the default floor under which ThresholdShedder and AvgShedder never shed;
* ``loadBalancerAutoBundleSplitEnabled=false``: no bundle splits during a recording (a split is not an
  unload: the timeline would count the halves as new bundles).

AvgShedder runs lower ``loadBalancerAvgShedderHighThreshold`` to 25 (default 40),
``loadBalancerAvgShedderLowThreshold`` to 10 (15) and ``loadBalancerAvgShedderHitCountLowThreshold`` to 3
(8): a quarter-core broker at 60 % against an idle one at 5 % is a 55-point gap only while the idle one
is not warming up, and eight low hits are eight minutes. It also lowers AvgShedder's own floors,
``minUnloadMessageThroughput`` to 100 KB/s (default 1 MB/s) and ``minUnloadMessage`` to 100 msg/s (1000):
half the gap between the lab's brokers is about 0.3 MB/s and 280 msg/s.

The Extensible Load Manager run sets ``loadBalancerDebugModeEnabled=true`` (the leader then logs each
cycle's start, which the recorder needs), ``loadBalancerBrokerLoadTargetStd=0.1`` (default 0.25) and
``loadBalancerSheddingConditionHitCountThreshold=2`` (default 3) for the same reason.

ThresholdShedder runs also lower ``loadBalancerHistoryResourcePercentage`` to 0.5 (default 0.9) and
``loadBalancerBrokerThresholdShedderPercentage`` to 5 (default 10): with the defaults a broker that has
just joined (its JVM warming up reports a high CPU) takes ten minutes and more to fade from the
history, and a lab run would wait that long for the leader's first unload.

CPU is the resource the brokers differ by (each broker in its own cgroup with a quarter of a core:
the report's CPU limit is 25); bandwidth is the same for all (no NIC of their own), direct memory and
memory keep their 4.0 weight of 0.
"""
from __future__ import annotations

IMPL = "org.apache.pulsar.broker.loadbalance.impl."
EXT = "org.apache.pulsar.broker.loadbalance.extensions."

COMMON = {
    "loadManagerClassName": IMPL + "ModularLoadManagerImpl",
    "loadBalancerSheddingIntervalMinutes": 1,
    "loadBalancerReportUpdateMaxIntervalMinutes": 1,
    "loadBalancerResourceQuotaUpdateIntervalMinutes": 1,
    "loadBalancerBundleUnloadMinThroughputThreshold": 0.1,
    "loadBalancerAutoBundleSplitEnabled": "false",
}

THRESHOLD_FAST = {
    "loadBalancerHistoryResourcePercentage": 0.5,
    "loadBalancerBrokerThresholdShedderPercentage": 5,
}

AVG_FAST = {
    "minUnloadMessageThroughput": 102400,
    "minUnloadMessage": 100,
    "loadBalancerAvgShedderHighThreshold": 25,
    "loadBalancerAvgShedderLowThreshold": 10,
    "loadBalancerAvgShedderHitCountLowThreshold": 3,
}

SCENARIOS = {
    # ThresholdShedder + LeastLongTermMessageRate: Pulsar 4.x's defaults
    "threshold": {
        "conf": {**COMMON, **THRESHOLD_FAST,
                 "loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
                 "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate"},
        "brokers": 3,
        "title": "ThresholdShedder + LeastLongTermMessageRate",
    },
    # AvgShedder sheds and places (4.x refuses any other placement with it)
    "avgshedder": {
        "conf": {**COMMON, **AVG_FAST,
                 "loadBalancerLoadSheddingStrategy": IMPL + "AvgShedder",
                 "loadBalancerLoadPlacementStrategy": IMPL + "AvgShedder"},
        "brokers": 3,
        "title": "AvgShedder (shedding and placement)",
    },
    # the Extensible Load Manager: TransferShedder and the ELM's own placement
    "transfer": {
        "conf": {**COMMON,
                 "loadManagerClassName": EXT + "ExtensibleLoadManagerImpl",
                 "loadBalancerLoadSheddingStrategy": EXT + "scheduler.TransferShedder",
                 "loadBalancerDebugModeEnabled": "true",
                 "loadBalancerBrokerLoadTargetStd": 0.1,
                 "loadBalancerSheddingConditionHitCountThreshold": 2},
        "brokers": 3,
        "elm": True,
        "title": "Extensible Load Manager, TransferShedder",
    },
    # the short test: two brokers, the leader's first unload
    "first-unload": {
        "conf": {**COMMON, **THRESHOLD_FAST,
                 "loadBalancerLoadSheddingStrategy": IMPL + "ThresholdShedder",
                 "loadBalancerLoadPlacementStrategy": IMPL + "LeastLongTermMessageRate"},
        "brokers": 2,
        "title": "two brokers, ThresholdShedder: the first unload",
    },
}

# msgs/s of the skewed topics (1 KiB each), one topic per bundle of shedlab/skew (8 bundles)
SKEW_RATES = [600, 350, 200, 120, 70, 40]
# the light namespace's one topic: it gives the second broker a load of its own before the third joins,
# so LeastLongTermMessageRate has no tie to break at random between two empty brokers
LIGHT_RATE = 20
