"""Hand-built extensible clusters for the tests: loads and throughputs given directly."""
from engine.config import LoadBalancerConfig
from engine.extensible import BrokerLoadData, BundleLoadData, ExtensibleLoadData
from engine.extensible.snapshot import EXTENSIBLE_LOAD_MANAGER
from engine.model import NamespaceBundleStats

NOW = 1_700_000_000_000
CFG = LoadBalancerConfig().with_values({"loadManagerClassName": EXTENSIBLE_LOAD_MANAGER})


def bld(load, thr=0.0, thr_ema=None, updated_at=NOW, topics=0):
    """A BrokerLoadData with its EMA load and throughput set directly (no float32 involved)."""
    return BrokerLoadData(weighted_max_ema=load, msg_throughput_in=float(thr),
                          msg_throughput_ema=float(thr if thr_ema is None else thr_ema), updated_at=updated_at,
                          topics=topics)


def top(broker, sizes, ns=None):
    """Top-K list of ``broker``: bundles ``<ns>/b<i>`` with the given in-throughputs, in list order."""
    ns = ns or f"t/{broker.split(':')[0]}"
    return [BundleLoadData(f"{ns}/b{i}", NamespaceBundleStats(msg_throughput_in=float(t))) for i, t in enumerate(sizes)]


def cluster(spec, now=NOW, **kw):
    """``spec[broker] = (load, thr, [bundle sizes] or None, extra bld kwargs...)``."""
    data = ExtensibleLoadData(now_ms=now, **kw)
    for b, s in spec.items():
        load, thr, sizes = s[0], s[1], s[2]
        extra = s[3] if len(s) > 3 else {}
        data.broker_load_data[b] = bld(load, thr, **extra)
        if sizes is not None:
            data.top_bundles[b] = top(b, sizes)
    return data
