"""One minute of a history as a LoadData snapshot — what "open this minute in the Tuner" hands over.

Contract with the Tuner page
----------------------------
:func:`save_minute_snapshot` stores a value in the app's diskcache (:func:`dashboard.cache.get_cache`)
under a key ``history-snapshot:<hash>`` and the History page navigates to
``/tuner?snapshot=<key>``. The value is a **LoadData JSON dict** (the canonical format of
:mod:`engine.io`; load it with ``engine.io.load_data_from_json(value, source=key)``) holding:

* every broker present that minute with its percentages, rates and throughputs exactly as the
  backtest saw them (resource ``usage``/``limit`` chosen so Pulsar's float32 ``percentUsage()`` gives
  back the stored percentage — always possible for percentages a broker reported), its bundles (real ones, or the backtest's synthetic ones) with
  short/long-term data equal to the minute's values, and ``now`` = that minute;
* ``recentlyUnloadedBundles`` and ``shedlabStrategyState`` = the strategy memory just *before* that
  minute (ThresholdShedder history, AvgShedder hit counters), when the event carried it — so one
  shedding cycle in the Tuner reproduces the backtest's decision;
* a Shedlab extension key ``"shedlabHistory"``: ``{"dataset", "minute", "strategy", "config"
  (changed broker.conf keys), "event" (broker, partner, trigger, ...)}`` — the Tuner may preselect
  that strategy and config. ``engine.io`` ignores unknown keys.

The Tuner side: :func:`dashboard.sources.open_history` validates the key (``history-snapshot:`` + 24
hex digits, never a path), loads the value as the source ``history:<hash>`` (listed in the picker as
"History · <dataset> · minute <m>") and :func:`layouts.tuner.history_link` preselects the strategy
(with Pulsar's placement for it) and the changed keys; an unknown, expired or malformed key is an
alert and the current data stays.

Entries expire after 7 days.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from engine.javacompat import percent_usage
from engine.model import BrokerData, BundleData, LoadData, LocalBrokerData, NamespaceBundleStats, ResourceUsage, \
    TimeAverageMessageData

from .dataset import fingerprint, read_long, wide_brokers, wide_bundles
from engine.backtest import synthetic_names as _synthetic_names

__all__ = ["minute_snapshot", "save_minute_snapshot", "exact_usage", "SNAPSHOT_PREFIX"]

SNAPSHOT_PREFIX = "history-snapshot:"
_LIMIT = 100.0


#: limits tried, in order, to reproduce a percentage exactly (typical CPU, NIC, heap limits)
_LIMITS = (100.0, 800.0, 1600.0, 400.0, 200.0, 3200.0, 6400.0, 1_000_000.0, 10_000_000.0, 8192.0, 4096.0,
           16384.0, 2048.0, 1000.0)


def exact_usage(pct: float) -> tuple[float, float]:
    """``(usage, limit)`` such that ``percent_usage(usage, limit)`` (float32, like Pulsar) returns ``pct``
    exactly. Every percentage a broker reports has such a pair; for other values (e.g. hand-made
    CSVs) the closest pair found is returned."""
    if not pct > 0:
        return 0.0, _LIMIT
    best, err = (float(np.float32(pct)), _LIMIT), float("inf")
    for limit in _LIMITS:
        u0 = np.float32(pct * limit / 100.0)
        up = down = u0
        for i in range(12):
            cands = (u0,) if i == 0 else (up, down)
            for u in cands:
                e = abs(percent_usage(float(u), limit) - pct)
                if e < err:
                    best, err = (float(u), limit), e
                    if e == 0:
                        return best
            up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
    return best


def minute_snapshot(dataset, minute, *, state: str | None = None, synthetic_bundles: int = 8,
                    bundles: str = "auto") -> LoadData:
    """The LoadData of ``minute`` (a time inside it) as the backtest built it; ``state`` is an event's
    ``state`` JSON (strategy memory and recently unloaded bundles before that minute)."""
    t = pd.Timestamp(minute)
    if t.tzinfo is not None:
        t = t.tz_convert("UTC").tz_localize(None)
    t = t.floor("min")
    long = read_long(dataset, t, t + pd.Timedelta(seconds=59))
    bw = wide_brokers(long)
    kw = None if bundles == "synthetic" else wide_bundles(long)
    now = int(t.value // 1_000_000)
    ld = LoadData(now_ms=now, source=f"{dataset} @ {t.isoformat()}Z")
    stats_by_broker: dict[str, dict] = {r.broker: {} for r in bw.itertuples()}
    if kw is not None and len(kw):
        for r in kw.itertuples():
            if r.broker in stats_by_broker:
                stats_by_broker[r.broker][r.bundle] = NamespaceBundleStats(
                    r.bundle_msg_rate_in, r.bundle_msg_throughput_in, r.bundle_msg_rate_out,
                    r.bundle_msg_throughput_out, 0, 0, int(r.bundle_topics), 0)
    elif bundles != "real":
        k = int(synthetic_bundles)
        for r in bw.itertuples():
            stats_by_broker[r.broker] = {n: NamespaceBundleStats(r.msg_rate_in / k, r.msg_throughput_in / k,
                                                                 r.msg_rate_out / k, r.msg_throughput_out / k,
                                                                 0, 0, 1, 0)
                                         for n in _synthetic_names(r.broker, k)}
    for r in bw.itertuples():
        res = {a: ResourceUsage(*exact_usage(float(getattr(r, a))))
               for a in ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")}
        local = LocalBrokerData(r.broker, **res, last_update=now, broker_version_string="4.1.0",
                                load_manager_class_name="org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl")
        stats = stats_by_broker[r.broker]
        local.update(None, stats)
        local.last_bundle_gains.clear()
        local.last_bundle_losses.clear()
        # the broker's own report numbers (not the float sum of its bundles), as the backtest used them
        local.msg_rate_in, local.msg_rate_out = float(r.msg_rate_in), float(r.msg_rate_out)
        local.msg_throughput_in, local.msg_throughput_out = float(r.msg_throughput_in), float(r.msg_throughput_out)
        ld.brokers[r.broker] = BrokerData(local)
        for name, s in stats.items():
            ld.bundle_data[name] = BundleData(
                TimeAverageMessageData(10, 10, s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in, s.msg_rate_out),
                TimeAverageMessageData(1000, 1000, s.msg_throughput_in, s.msg_throughput_out, s.msg_rate_in,
                                       s.msg_rate_out), s.topics)
    for bd in ld.brokers.values():
        bd.time_average.reset(bd.local.last_stats.keys(), ld.bundle_data)
    if state:
        st = json.loads(state) if isinstance(state, str) else dict(state)
        if st.get("strategy") and st.get("strategy_state") is not None:
            ld.strategy_state = {st["strategy"]: st["strategy_state"]}
        ld.recently_unloaded.update({b: int(v) for b, v in (st.get("recently_unloaded") or {}).items()})
    return ld


def save_minute_snapshot(dataset, minute, *, state: str | None = None, strategy: str | None = None,
                         config: dict | None = None, event: dict | None = None, synthetic_bundles: int = 8,
                         bundles: str = "auto") -> str:
    """Build :func:`minute_snapshot`, store it in the diskcache and return the key (see the contract)."""
    from dashboard.cache import get_cache

    ld = minute_snapshot(dataset, minute, state=state, synthetic_bundles=synthetic_bundles, bundles=bundles)
    obj = ld.to_json()
    obj["shedlabHistory"] = {"dataset": str(dataset), "minute": pd.Timestamp(ld.now_ms, unit="ms").isoformat() + "Z",
                             "strategy": strategy, "config": dict(config or {}), "event": event or {}}
    h = hashlib.sha256(json.dumps([fingerprint(dataset), ld.now_ms, strategy, config, event, state],
                                  sort_keys=True, default=str).encode()).hexdigest()[:24]
    key = SNAPSHOT_PREFIX + h
    get_cache().set(key, obj, expire=7 * 86400)
    return key
