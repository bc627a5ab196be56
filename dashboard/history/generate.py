"""A generator of realistic broker histories, written in the dataset layout (:mod:`.dataset`).

N brokers × D days at one-minute resolution, vectorised with numpy one day at a time (so 100 M rows
stream to disk in about a minute with flat memory):

* **diurnal and weekly cycles** — traffic follows a daily sine (peak mid-afternoon UTC, each bundle
  slightly phase-shifted) and weekends carry 25 % less;
* **heterogeneous brokers** — machine sizes differ (some have twice the CPU), each broker's bundles
  carry a different share of the traffic, message sizes and fan-out differ per bundle;
* **jitter** — every bundle's rate wanders with an AR(1) process in log space, resource
  percentages get measurement noise, heap usage follows a GC sawtooth;
* **incidents** (``incidents=True``) — a *broker loss* (one broker disappears for three hours on the
  middle day; its bundles move round-robin to the others and come back afterwards) and a *hot
  bundle* (one bundle carries six times its traffic for four hours on the last day).

Broker metrics are derived from the bundles a broker owns that minute (rates and throughputs are
sums; CPU follows message rate over machine size; NIC percentages follow bytes over a 1 Gbit/s link),
so the broker and bundle views always agree. Percentages come out of Pulsar's own float32
``percentUsage()`` applied to a usage and a real limit (8 or 16 cores, 8 GiB heap, 4 GiB direct
memory, 1 Gbit/s NIC), so they are values a real broker could report.
The same ``seed`` always gives the same dataset.

:func:`from_simulation` writes the same layout from a run of the simulator (:mod:`engine.simulator`):
then the history *reacts* to the load balancer (bundles move when the simulated leader sheds), at the
cost of speed — use it for days on tens of brokers, the vectorised generator for the 100 M-row bench.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from engine.errors import InputError
from engine.javacompat import percent_usage_array

from .store import BROKER_METRICS, BUNDLE_METRICS, MINUTE_MS, SCHEMA, DatasetWriter

__all__ = ["generate", "GeneratedCluster", "simulator_available", "from_simulation"]

NIC_KBPS = 1_000_000.0  # 1 Gbit/s in Kbit/s (Pulsar's bandwidth unit)
GENERATOR_VERSION = 2  # recorded in the metadata; bump when the same seed starts giving other values


def simulator_available() -> bool:
    """True when ``engine.simulator`` exposes ``run_scenario`` (checked lazily)."""
    try:
        import engine.simulator as sim
    except ImportError:
        return False
    return callable(getattr(sim, "run_scenario", None))


def from_simulation(out, scenario, *, minutes: int | None = None, seed: int | None = None,
                    strategy: str | None = None, set: dict | None = None, start: str | None = None,
                    overwrite: bool = False, name: str | None = None) -> dict:
    """Run a simulator scenario (a shipped name or a file) and write its per-minute broker table as a
    history dataset; returns the metadata.

    The simulator records real ``cpu, memory, direct_memory, bandwidth_in, bandwidth_out`` (%) and
    in+out ``msg_rate`` / ``throughput`` per broker and minute; in and out are written as halves
    (the backtests and aggregates only use their sums). No bundle metrics. Minute 0 is the
    simulator's epoch unless ``start`` (a date) is given.
    """
    from engine.simulator import EPOCH_MS, run_scenario

    res = run_scenario(scenario, minutes=minutes, seed=seed, strategy=strategy, set=set)
    b = res.brokers
    t0 = EPOCH_MS if start is None else int(pd.Timestamp(start).value // 1_000_000)
    t0 -= t0 % MINUTE_MS
    ts = t0 + b["minute"].to_numpy(dtype=np.int64) * MINUTE_MS
    cols = {"cpu": b["cpu"], "memory": b["memory"], "direct_memory": b["direct_memory"],
            "bandwidth_in": b["bandwidth_in"], "bandwidth_out": b["bandwidth_out"],
            "msg_rate_in": b["msg_rate"] / 2, "msg_rate_out": b["msg_rate"] / 2,
            "msg_throughput_in": b["throughput"] / 2, "msg_throughput_out": b["throughput"] / 2}
    frames = [pd.DataFrame({"timestamp": ts, "broker": b["broker"].astype(str).to_numpy(), "metric": m,
                            "value": v.to_numpy(dtype=np.float64), "bundle": None}) for m, v in cols.items()]
    long = pd.concat(frames, ignore_index=True)
    long = long[np.isfinite(long["value"]) & (long["value"] >= 0)]
    from .store import write_long

    params = {"scenario": getattr(res.scenario, "name", str(scenario)), "minutes": int(res.minutes),
              "seed": int(res.seed), "strategy": res.summary.get("strategy"), "set": dict(set or {}),
              "simulator_unloads": int(res.summary.get("unloads", 0) or 0)}
    return write_long(long, out, source="simulator", params=params, overwrite=overwrite, name=name)


class GeneratedCluster:
    """The fixed (per-dataset) parameters of a generated cluster."""

    def __init__(self, brokers: int, bundles_per_broker: int, seed: int):
        if brokers < 1:
            raise InputError("need at least one broker", field="brokers")
        if bundles_per_broker < 1:
            raise InputError("need at least one bundle per broker", field="bundles_per_broker")
        rng = np.random.default_rng(seed)
        self.rng = rng
        n, k = brokers, bundles_per_broker
        width = len(str(n - 1))
        self.brokers = [f"broker-{j:0{width}d}:8080" for j in range(n)]
        nk = n * k
        self.home = np.repeat(np.arange(n), k)
        ns_count = max(1, min(8, nk // 8))
        ns = rng.integers(0, ns_count, size=nk)
        seg = 2**32 // k
        self.bundles = [f"tenant/ns{ns[i]}/0x{(i % k) * seg:08x}_0x{((i % k) + 1) * seg if (i % k) + 1 < k else 0xFFFFFFFF:08x}"
                        for i in range(nk)]
        # the same range may exist in two namespaces only: make every name unique
        seen: dict[str, int] = {}
        for i, b in enumerate(self.bundles):
            if b in seen:
                self.bundles[i] = b.replace("tenant/", f"tenant{i}/", 1)
            seen[self.bundles[i]] = i
        self.size = rng.choice([1.0, 1.0, 1.0, 2.0], size=n)  # machine size (CPU capacity factor)
        skew = rng.gamma(4.0, 0.25, size=n)  # broker share of traffic
        self.base = rng.lognormal(np.log(900.0), 0.8, size=nk) * skew[self.home] * self.size[self.home]
        self.msg_size = rng.uniform(300.0, 3000.0, size=nk)
        self.fanout = rng.uniform(0.5, 3.0, size=nk)
        self.topics = 1 + rng.poisson(20, size=nk)
        self.phase = rng.normal(0.0, 45.0, size=nk)  # minutes
        self.idle_cpu = rng.uniform(2.0, 8.0, size=n)
        self.gc_period = rng.uniform(17.0, 41.0, size=n)
        self.heap_base = rng.uniform(25.0, 45.0, size=n)
        self.ar = np.zeros(nk)
        self.loss_broker = int(rng.integers(0, n)) if n > 1 else -1
        self.hot_bundle = int(rng.integers(0, nk))
        if n > 1 and self.home[self.hot_bundle] == self.loss_broker:
            self.hot_bundle = (self.hot_bundle + k) % nk


def _day_arrays(c: GeneratedCluster, day_index: int, day_number: int, days: int, incidents: bool, rng):
    """One day of a generated cluster: presence (T, N), broker metrics (T, N, 9), bundle owner (T, NK)
    and bundle metrics (T, NK, 5)."""
    T, n, nk = 1440, len(c.brokers), len(c.bundles)
    minute = np.arange(T, dtype=np.float64)
    weekday = (day_number + 3) % 7  # 1970-01-01 was a Thursday
    weekly = 0.75 if weekday >= 5 else 1.0
    diurnal = 1.0 + 0.45 * np.sin(2 * np.pi * ((minute[:, None] + c.phase[None, :]) / 1440.0 - 0.375))
    # AR(1) jitter in log space, carried across days
    eps = rng.normal(0.0, 0.05, size=(T, nk))
    ar = np.empty((T, nk))
    x = c.ar
    for t in range(T):
        x = 0.97 * x + eps[t]
        ar[t] = x
    c.ar = x
    rate = c.base[None, :] * diurnal * weekly * np.exp(ar)
    owner = np.broadcast_to(c.home, (T, nk)).copy()
    present = np.ones((T, n), dtype=bool)
    if incidents and n > 1:
        if day_index == days // 2:  # broker loss 14:00-17:00
            lo, hi = 14 * 60, 17 * 60
            present[lo:hi, c.loss_broker] = False
            lost = np.flatnonzero(c.home == c.loss_broker)
            others = [j for j in range(n) if j != c.loss_broker]
            for i, kk in enumerate(lost):
                owner[lo:hi, kk] = others[i % len(others)]
        if day_index == days - 1:  # hot bundle 10:00-14:00, ramping up and down over 20 minutes
            lo, hi = 10 * 60, 14 * 60
            ramp = np.clip(np.minimum(minute - lo, hi - minute) / 20.0, 0.0, 1.0)
            rate[:, c.hot_bundle] *= 1.0 + 5.0 * ramp
    rate_in = rate
    rate_out = rate * c.fanout[None, :]
    thr_in = rate_in * c.msg_size[None, :]
    thr_out = rate_out * c.msg_size[None, :]
    tt = np.broadcast_to(np.arange(T)[:, None], (T, nk))
    flat = (tt * n + owner).ravel()

    def per_broker(v):
        return np.bincount(flat, weights=v.ravel(), minlength=T * n).reshape(T, n)

    b_rin, b_rout, b_tin, b_tout = per_broker(rate_in), per_broker(rate_out), per_broker(thr_in), per_broker(thr_out)
    size = c.size[None, :]
    cpu = c.idle_cpu[None, :] + 100.0 * (b_rin + b_rout) / (60000.0 * size) + rng.normal(0, 1.2, size=(T, n))
    bw_in = b_tin * 8.0 / 1000.0 / NIC_KBPS * 100.0 * (1.0 + rng.normal(0, 0.02, size=(T, n)))
    bw_out = b_tout * 8.0 / 1000.0 / NIC_KBPS * 100.0 * (1.0 + rng.normal(0, 0.02, size=(T, n)))
    saw = ((minute[:, None] + day_number * 1440.0) % c.gc_period[None, :]) / c.gc_period[None, :]
    heap = c.heap_base[None, :] + 30.0 * saw + rng.normal(0, 1.0, size=(T, n))
    direct = 4.0 + 8.0 * (b_rin + b_rout) / (60000.0 * size) + rng.normal(0, 0.5, size=(T, n))

    def pct(v, limit):
        """Through Pulsar's ``percentUsage()`` (float32) from a usage against a real limit."""
        lim = np.broadcast_to(np.asarray(limit, dtype=np.float64), v.shape)
        return percent_usage_array(np.clip(v, 0.0, None) * lim / 100.0, lim)

    cores = 100.0 * 8 * c.size[None, :]  # CPU limit: 100 x cores (8 or 16)
    bm = np.stack([pct(cpu, cores), pct(heap, 8192.0), pct(direct, 4096.0), pct(bw_in, NIC_KBPS), pct(bw_out, NIC_KBPS),
                   b_rin, b_rout, b_tin, b_tout], axis=2)
    km = np.stack([rate_in, rate_out, thr_in, thr_out, np.broadcast_to(c.topics.astype(np.float64), (T, nk))], axis=2)
    return present, bm, owner, km


def _day_table(c, day_number, present, bm, owner, km, bundle_metrics: bool) -> pa.Table:
    T, n, m = bm.shape
    ts0 = day_number * 86_400_000
    ts = ts0 + np.arange(T, dtype=np.int64) * MINUTE_MS
    keep = np.repeat(present.ravel(), m)
    b_ts = np.repeat(ts, n * m)[keep]
    b_broker = np.tile(np.repeat(np.arange(n, dtype=np.int32), m), T)[keep]
    b_metric = np.tile(np.arange(m, dtype=np.int32), T * n)[keep]
    b_val = bm.reshape(-1)[keep]
    n_b = len(b_val)
    cols_ts, cols_broker, cols_metric, cols_val = [b_ts], [b_broker], [b_metric], [b_val]
    bundle_idx = np.zeros(n_b, dtype=np.int32)
    bundle_mask = [np.ones(n_b, dtype=bool)]  # True = null
    if bundle_metrics:
        nk, mk = km.shape[1], km.shape[2]
        cols_ts.append(np.repeat(ts, nk * mk))
        cols_broker.append(np.repeat(owner.reshape(-1).astype(np.int32), mk))
        cols_metric.append(np.tile(np.arange(m, m + mk, dtype=np.int32), T * nk))
        cols_val.append(km.reshape(-1))
        bundle_idx = np.concatenate([bundle_idx, np.tile(np.repeat(np.arange(nk, dtype=np.int32), mk), T)])
        bundle_mask.append(np.zeros(T * nk * mk, dtype=bool))
    metric_names = BROKER_METRICS + BUNDLE_METRICS
    ts_arr = pa.array(np.concatenate(cols_ts), type=pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    broker = pa.DictionaryArray.from_arrays(pa.array(np.concatenate(cols_broker)), pa.array(c.brokers))
    metric = pa.DictionaryArray.from_arrays(pa.array(np.concatenate(cols_metric)), pa.array(metric_names))
    value = pa.array(np.concatenate(cols_val))
    bmask = np.concatenate(bundle_mask)
    bundle = pa.DictionaryArray.from_arrays(pa.array(bundle_idx, mask=bmask), pa.array(c.bundles))
    return pa.Table.from_arrays([ts_arr, broker, metric, value, bundle], schema=SCHEMA)


def generate(out, *, brokers: int = 10, days: int = 2, seed: int = 0, start: str = "2026-01-05",
             bundles_per_broker: int = 4, bundle_metrics: bool = True, incidents: bool = True,
             overwrite: bool = False, name: str | None = None, extra_params: dict | None = None,
             progress=None) -> dict:
    """Write a generated history to ``out``; returns the dataset metadata.

    Rows: ``brokers × days × 1440 × 9`` broker metric rows (minus the broker-loss minutes), plus
    ``brokers × bundles_per_broker × days × 1440 × 5`` bundle rows when ``bundle_metrics``.
    ``progress(done_days, days)`` is called after every day.
    """
    if days < 1:
        raise InputError("need at least one day", field="days")
    try:
        d0 = int(pd.Timestamp(start).normalize().value // 86_400_000_000_000)
    except (ValueError, TypeError):
        raise InputError(f"not a date: {start!r}", field="start") from None
    c = GeneratedCluster(brokers, bundles_per_broker, seed)
    w = DatasetWriter(Path(out), overwrite=overwrite)
    for i in range(days):
        rng = np.random.default_rng([seed, i])
        present, bm, owner, km = _day_arrays(c, i, d0 + i, days, incidents, rng)
        w.write_day(d0 + i, _day_table(c, d0 + i, present, bm, owner, km, bundle_metrics))
        if progress:
            progress(i + 1, days)
    params = dict(brokers=brokers, days=days, seed=seed, start=str(start), bundles_per_broker=bundles_per_broker,
                  bundle_metrics=bundle_metrics, incidents=incidents, generator_version=GENERATOR_VERSION)
    if incidents and brokers > 1:
        loss_day = (pd.Timestamp(start).normalize() + pd.Timedelta(days=days // 2)).date().isoformat()
        hot_day = (pd.Timestamp(start).normalize() + pd.Timedelta(days=days - 1)).date().isoformat()
        params["incident_list"] = [
            {"kind": "broker loss", "broker": c.brokers[c.loss_broker], "from": f"{loss_day}T14:00Z",
             "to": f"{loss_day}T17:00Z"},
            {"kind": "hot bundle", "bundle": c.bundles[c.hot_bundle], "broker": c.brokers[c.home[c.hot_bundle]],
             "from": f"{hot_day}T10:00Z", "to": f"{hot_day}T14:00Z"}]
    params.update(extra_params or {})
    meta = w.close(source="generate", params=params, name=name)
    from .layout import write_wide  # the jobs' wide layout, written once here (dashboard.history.layout)

    meta.setdefault("layouts", {})["wide"] = write_wide(out)
    return meta
