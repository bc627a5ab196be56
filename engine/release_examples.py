"""One small input per release behaviour on which the decision differs, and the decision a release makes.

Each example is a function ``example(version) -> str``: the engine's decision on the example's input
when deciding as Pulsar ``version``, in a few words. ``docs/releases.md`` shows, for every behaviour of
:data:`engine.release_lines.BEHAVIOURS`, the decision of a release with it and of one without it (it is
generated from these functions by ``python -m engine releases --markdown``); the tests run every example
on every release line.

Examples
--------
>>> EXAMPLES["uniform_without_delta"]("4.0.8"), EXAMPLES["uniform_without_delta"]("4.1")
('unloads t/ns/a from b-max to b-min', 'nothing unloaded')
"""
from __future__ import annotations

from .errors import InputError
from .extensible.samples import three_brokers
from .extensible.top_bundles import top_k_bundles
from .managers import make_manager
from .model import NamespaceBundleStats
from .releases import defaults_for
from .synth import make_snapshot

__all__ = ["EXAMPLES", "INPUTS"]

IMPL = "org.apache.pulsar.broker.loadbalance.impl."


def _cfg(version, **keys):
    cfg = defaults_for(version)
    return cfg.with_values(keys) if keys else cfg


def _unloads(ld, cfg, cycles=1) -> str:
    lm = make_manager(ld, cfg, seed=1)
    last = lm.run_cycles(cycles)[-1]
    if last.shedding.label == "Failure":
        return "the cycle fails: " + last.shedding.reason.split(" — ")[0]
    got = [f"{u.bundle} from {u.broker}" + (f" to {u.destination}" if u.destination else "") for u in last.unloads]
    return "unloads " + ", ".join(got) if got else "nothing unloaded"


def _bundles(prefix, n, rate=1000.0, throughput=2e6):
    return {f"t/ns/{prefix}{k}": dict(rate=rate, throughput=throughput) for k in range(n)}


# --------------------------------------------------------------------------------------- AvgShedder
def _avg_scores(scores: dict) -> object:
    """Brokers whose AvgShedder score (cpu %, every other resource idle) is the given one."""
    return make_snapshot({b: dict(cpu=s, bundles=_bundles(b[1:] + "-", 4, rate=1000.0 * (1 + i), throughput=1e6))
                          for i, (b, s) in enumerate(scores.items())})


def avg_comparator(version) -> str:
    """Six brokers scoring b1 10.0, b2 30.9, b3 30.2, b4 50.0, b5 70.5, b6 90.0 (b2 iterates before b3 in the
    HashMap); high threshold 40: which broker b5 pairs with."""
    ld = _avg_scores({"b6": 90.0, "b3": 30.2, "b4": 50.0, "b2": 30.9, "b5": 70.5, "b1": 10.0})
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + "AvgShedder",
               loadBalancerLoadPlacementStrategy=IMPL + "AvgShedder", loadBalancerAvgShedderHighThreshold=40.0)
    lm = make_manager(ld, cfg, seed=1)
    res = lm.run_cycles(1)[-1].shedding
    for p in res.pairs:
        if p.high == "b5":
            return f"b5 pairs with {p.low} (gap {p.gap:.1f})"
    return "b5 is not paired"


def avg_comparator_throws(version) -> str:
    """40 brokers b00..b39 scoring between 10.4 and 13.5 (many less than one point apart; seeded draw):
    the truncating sort is not transitive."""
    scores = dict(zip([f"b{i:02d}" for i in range(40)], _THROWS))
    ld = make_snapshot({b: dict(cpu=s, bundles=_bundles(b + "-", 2)) for b, s in scores.items()})
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + "AvgShedder",
               loadBalancerLoadPlacementStrategy=IMPL + "AvgShedder")
    res = make_manager(ld, cfg, seed=1).run_cycles(1)[-1].shedding
    return "the sort throws: the cycle fails" if res.label == "Failure" else f"{res.label}: {len(res.pairs)} pairs"


#: scores (cpu %) of the 40-broker example; Java 17's TimSort throws on them in the HashMap's order
_THROWS = (10.4, 10.8, 10.9, 11.8, 12.6, 12.7, 13.1, 10.4, 10.8, 11.3, 12.2, 11.8, 13.1, 12.7, 10.4, 10.4, 10.9, 12.2,
           12.2, 13.1, 13.5, 10.8, 10.4, 11.3, 11.3, 12.6, 12.2, 13.5, 10.4, 10.8, 11.7, 11.3, 12.2, 12.7, 13.1, 10.8,
           11.2, 10.9, 12.2, 12.2)


def _startup(version, shedding: str) -> str:
    """What the modular load manager's start-up makes of ``shedding`` with an AvgShedder placement."""
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + shedding,
               loadBalancerLoadPlacementStrategy=IMPL + "AvgShedder")
    try:
        lm = make_manager(_avg_scores({"b1": 80.0, "b2": 10.0}), cfg, seed=1)
    except InputError as exc:
        text = str(exc)
        if "SimpleLoadManagerImpl" in text:
            return "runs SimpleLoadManagerImpl (not modelled)"
        return "the broker refuses to start" if "refuses to start" in text else text
    return f"runs {lm.shedding.name} + {lm.placement.name}"


def avg_startup(version) -> str:
    """AvgShedder for shedding and placement, the pair Pulsar's docs recommend."""
    return _startup(version, "AvgShedder")


def avg_bad_pair(version) -> str:
    """An AvgShedder placement with ThresholdShedder shedding."""
    return _startup(version, "ThresholdShedder")


def avg_plans(version) -> str:
    """AvgShedder on any snapshot: whether the result warns that plans are keyed differently."""
    ld = _avg_scores({"b1": 80.0, "b2": 10.0})
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + "AvgShedder",
               loadBalancerLoadPlacementStrategy=IMPL + "AvgShedder")
    res = make_manager(ld, cfg, seed=1).run_cycles(1)[-1].shedding
    return ("plans by bundle name (not modelled: Shedlab says so)"
            if any("by bundle name" in n for n in res.notes) else "plans by BundleData value")


# ---------------------------------------------------------------------------------- overload tests
def overload_shedder(version) -> str:
    """OverloadShedder; a broker at cpu 50 %, direct memory 90 %, NIC 20 %."""
    ld = make_snapshot({"b-hot": dict(cpu=50, direct_memory=90, bandwidth_in=20, bundles=_bundles("h", 3)),
                        "b-cool": dict(cpu=20, bundles=_bundles("c", 3))})
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + "OverloadShedder",
               loadBalancerDirectMemoryResourceWeight=0.0, loadBalancerMemoryResourceWeight=0.0)
    return _unloads(ld, cfg)


def lltmr_overload(version) -> str:
    """LeastLongTermMessageRate: broker A has the lowest rate but direct memory at 90 %."""
    ld = make_snapshot({"A": dict(cpu=40, direct_memory=90, bundles=_bundles("a", 1, rate=10)),
                        "B": dict(cpu=40, direct_memory=10, bundles=_bundles("b", 1, rate=5000))})
    cfg = _cfg(version, loadBalancerDirectMemoryResourceWeight=0.0)
    lm = make_manager(ld, cfg, seed=1)
    return "places t/other/0x0 on " + str(lm.select_broker("t/other/0x00000000_0xffffffff").broker)


# ------------------------------------------------------------------------------ UniformLoadShedder
def uniform_delta(version) -> str:
    """min 1,000 msg/s; max 11,000 msg/s in bundles of 3,000/3,000/2,500/2,500; 20 %: 2,000 to move."""
    ld = make_snapshot({
        "b-max": dict(cpu=30, bundles={"t/ns/a": dict(rate=3000, throughput=3e6), "t/ns/b": dict(rate=3000, throughput=3e6),
                                       "t/ns/c": dict(rate=2500, throughput=2.5e6),
                                       "t/ns/d": dict(rate=2500, throughput=2.5e6)}),
        "b-min": dict(cpu=30, bundles={"t/ns/e": dict(rate=1000, throughput=1e6)})})
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy=IMPL + "UniformLoadShedder", maxUnloadPercentage=0.2)
    return _unloads(ld, cfg)


# ---------------------------------------------------------------------------------- keys and weights
def pip357(version) -> str:
    """ThresholdShedder with loadBalancerBandwidthOutResourceWeight=0 (new spelling); b1's NIC-out at 95 %."""
    ld = make_snapshot({"b1": dict(cpu=20, bandwidth_out=95, bundles=_bundles("x", 3, throughput=50e6)),
                        "b2": dict(cpu=20, bundles=_bundles("y", 3)), "b3": dict(cpu=20, bundles=_bundles("z", 3))})
    return _unloads(ld, _cfg(version, loadBalancerBandwidthOutResourceWeight=0.0))


def weight_defaults(version) -> str:
    """ThresholdShedder with the line's default weights: A cpu 30 % / direct 80 %, B cpu 60 %, C cpu 30 %."""
    ld = make_snapshot({"A": dict(cpu=30, direct_memory=80, bundles=_bundles("a", 6, throughput=20e6)),
                        "B": dict(cpu=60, direct_memory=10, bundles=_bundles("b", 6, throughput=20e6)),
                        "C": dict(cpu=30, direct_memory=10, bundles=_bundles("c", 6, throughput=20e6))})
    res = make_manager(ld, _cfg(version), seed=1).run_cycles(1)[-1].shedding
    over = sorted({s.broker for s in res.selected})
    return f"{', '.join(over)} sheds" if over else "nothing shed"


def excluded(version) -> str:
    """ThresholdShedder; the hot broker's biggest bundle is in t/critical, which the key excludes."""
    ld = make_snapshot({"hot": dict(cpu=90, bundles={"t/critical/0x0": dict(rate=5000, throughput=80e6),
                                                     "t/ns/0x1": dict(rate=1000, throughput=30e6),
                                                     "t/ns/0x2": dict(rate=1000, throughput=20e6)}),
                        "c1": dict(cpu=20, bundles=_bundles("c", 2)), "c2": dict(cpu=20, bundles=_bundles("d", 2))})
    return _unloads(ld, _cfg(version, loadBalancerSheddingExcludedNamespaces="t/critical"))


def system_spread(version) -> str:
    """evenly=false; b1 already owns two pulsar/system bundles, b2 none, b1 has the lowest rate."""
    ld = make_snapshot({"b1": dict(cpu=10, bundles={"pulsar/system/0x0": dict(rate=1, throughput=1),
                                                    "pulsar/system/0x1": dict(rate=1, throughput=1)}),
                        "b2": dict(cpu=10, bundles=_bundles("z", 2, rate=5000))})
    cfg = _cfg(version, loadBalancerDistributeBundlesEvenlyEnabled=False)
    lm = make_manager(ld, cfg, seed=1)
    return "places pulsar/system/0x2 on " + str(lm.select_broker("pulsar/system/0x80000000_0xc0000000").broker)


def isolation_broker_id(version) -> str:
    """Isolation policy for t/iso: primary regex `b1:8080` (with its port), secondary `b2`, min_limit 1."""
    from .policies import attach, read_policies_json

    ld = make_snapshot({"b1:8080": dict(cpu=10, bundles=_bundles("z", 1, rate=10)),
                        "b2:8080": dict(cpu=10, bundles=_bundles("y", 1, rate=10))})
    attach(ld, read_policies_json({"namespaceIsolationPolicies": {"iso": {
        "namespaces": ["t/iso"], "primary": ["b1:8080"], "secondary": ["b2"],
        "auto_failover_policy": {"policy_type": "min_available",
                                 "parameters": {"min_limit": "1", "usage_threshold": "80"}}}}},
        "example", "bundle"))
    lm = make_manager(ld, _cfg(version), seed=1)
    return "places t/iso/0x0 on " + str(lm.select_broker("t/iso/0x00000000_0xffffffff").broker)


# ----------------------------------------------------------------------------- TransferShedder (top-K)
def topk_compare(version) -> str:
    """Top-1 of a broker: A in 1,000,000 B/s out 5,000,000 B/s; B in 1,090,000 B/s out 0."""
    stats = {"t/ns/A": NamespaceBundleStats(msg_throughput_in=1_000_000.0, msg_throughput_out=5_000_000.0),
             "t/ns/B": NamespaceBundleStats(msg_throughput_in=1_090_000.0)}
    top = top_k_bundles(stats, 1, defaults_for(version))
    return "top bundle " + (top[0].bundle_name if top else "none")


def topk_zero(version) -> str:
    """A broker's bundles: one at 1 MB/s, one idle: which enter the top-K report."""
    stats = {"t/ns/busy": NamespaceBundleStats(msg_throughput_in=1_000_000.0), "t/ns/idle": NamespaceBundleStats()}
    top = top_k_bundles(stats, 10, defaults_for(version))
    return "reports " + ", ".join(sorted(b.bundle_name for b in top))


def transfer_underload(version) -> str:
    """Weighted loads 0.50 / 0.45 / 0.40 (std below target, none over 85 %); throughput EMA 200 / 150 / 10 MB/s."""
    data = three_brokers((0.50, 0.45, 0.40), (200e6, 150e6, 10e6))
    cfg = _cfg(version, loadBalancerLoadSheddingStrategy="TransferShedder")
    res = make_manager(data, cfg, seed=1).run_cycles(1)[-1].shedding
    moved = sorted({f"{s.broker} -> {s.planned_destination}" for s in res.selected})
    return ("b3 is underloaded: transfers " + ", ".join(moved)) if moved else f"{res.reason_code}: nothing moves"


def version_build_metadata(version) -> str:
    """preferLaterVersions=true; the extensible brokers b1 at 4.0.0 and b2 at 4.0.0+b1: the candidates after the
    filters."""
    from .extensible.filters import FilterContext
    from .extensible.snapshot import BrokerLookupData

    data = three_brokers((0.5, 0.5, 0.5), (1e6, 1e6, 1e6))
    names = sorted(data.broker_load_data)[:2]
    data.broker_load_data = {b: data.broker_load_data[b] for b in names}
    data.lookup = {names[0]: BrokerLookupData(broker_version="4.0.0"),
                   names[1]: BrokerLookupData(broker_version="4.0.0+b1")}
    got = FilterContext(data, _cfg(version, preferLaterVersions=True)).filter(names, "t/ns/0x00000000_0xffffffff")
    return "candidates " + ", ".join(got.candidates)


#: behaviour name → ``[(title, example)]`` (most behaviours have one example)
EXAMPLES = {
    "avg_shedder_available": avg_startup,
    "avg_shedder_pairing_check": avg_startup,
    "bad_pair_refused": avg_bad_pair,
    "avg_placement_falls_back": avg_bad_pair,
    "avg_shedder_double_comparator": avg_comparator,
    "avg_shedder_plans_by_name": avg_plans,
    "weighted_overload": overload_shedder,
    "uniform_without_delta": uniform_delta,
    "pip357_keys": pip357,
    "excluded_namespaces": excluded,
    "system_namespace_spread": system_spread,
    "isolation_broker_id": isolation_broker_id,
    "transfer_underload_by_throughput": transfer_underload,
    "transfer_skip_zero_throughput": topk_zero,
    "topk_rounding_compare": topk_compare,
    "version_filter_build_metadata": version_build_metadata,
}

#: further examples of a behaviour (shown in the docs beneath the first)
MORE = {
    "avg_shedder_double_comparator": [avg_comparator_throws],
    "weighted_overload": [lltmr_overload],
}

#: the input of each example, in words (its docstring)
INPUTS = {name: fn.__doc__ for name, fn in EXAMPLES.items()}
