"""What a run measured: the per-minute broker and cluster tables, the one-row summary.

Definitions (the numbers the BIGO and vivo articles looked at):

* ``msg_rate_ratio`` / ``throughput_ratio``: ``max / min`` over running brokers of msg/s (in + out)
  and bytes/s (in + out) — the article's ``max(sum(rate) by instance) / min(...)`` panels; ``inf``
  when a broker carries nothing.
* ``cpu_range``: ``max(cpu) − min(cpu)`` in points (BIGO's production panel); ``usage_range`` /
  ``usage_std``: the same for the weighted max usage the strategies score.
* ``bad_placements``: unloads whose destination's real usage was above the cluster average at that
  minute (BIGO's "over-loading"); ``random_placements``: unloads whose destination was a random draw.
  ``bad_assignments`` / ``random_assignments``: the same for lookups of unowned bundles.
* ``settled_minute``: the first minute ``m >= settle_from`` such that no unload happens in
  ``[m, m + settle_window)`` and ``usage_range <= settle_range`` throughout that window (``None`` if
  it never happens).
* ``oscillation``: direction changes of each broker's usage per broker-hour, counting only swings of
  at least ``oscillation_threshold`` points (a zig-zag filter, so noise does not count).
* Extensible Load Manager runs (TransferShedder) only: ``load_std`` — the population std of the
  broker loads TransferShedder compared at the minute's check (its published ``weightedMaxEMA``, in %,
  the ``score`` column; TransferShedder's own std when no broker's data is outdated) — and
  ``target_std`` (``loadBalancerBrokerLoadTargetStd`` in %) in the cluster table; in the summary the
  last ``load_std``, ``target_std`` and ``target_met_minute`` (the first minute from which every
  check stays at or below the target until the end).

Examples
--------
>>> zigzag_reversals(np.array([10, 20, 10, 20, 21, 19, 30]), 5.0)   # up, down (1), up (2)
2
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .clock import EPOCH_MS

__all__ = ["build_tables", "summarize", "zigzag_reversals", "settled_minute", "json_clean", "SUMMARY_KEYS",
           "EVENT_COLUMNS"]

EVENT_COLUMNS = ["minute", "time", "kind", "broker", "bundle", "destination", "reason", "placement", "random",
                 "from_plan", "bad_placement", "dest_usage", "avg_usage", "src_score", "dst_score", "score_unit",
                 "msg_rate", "throughput", "unavailable_s", "scores", "placement_scores", "cycle", "detail",
                 "label", "reason_code"]

SUMMARY_KEYS = ["scenario", "strategy", "placement", "seed", "minutes", "brokers", "bundles", "unloads",
                "unload_rounds", "first_unload_minute", "last_unload_minute", "unloads_per_hour", "bad_placements",
                "random_placements", "bad_assignments", "random_assignments", "assigns", "splits", "settled_minute", "msg_rate_ratio", "throughput_ratio",
                "cpu_range", "usage_range", "usage_std", "oscillation", "unavailable_seconds", "max_usage",
                "score_unit"]


def json_clean(o):
    """Make ``o`` JSON-safe: numpy scalars → Python, NaN/inf → None, Timestamps → ISO strings."""
    if isinstance(o, dict):
        return {str(k): json_clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [json_clean(v) for v in o]
    if isinstance(o, np.generic):
        o = o.item()
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, pd.Timestamp):
        return o.isoformat()
    if o is pd.NaT or o is pd.NA:
        return None
    return o


def zigzag_reversals(x: np.ndarray, threshold: float) -> int:
    """Direction changes of ``x`` counting only moves of at least ``threshold`` (NaNs skipped)."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) < 3 or threshold <= 0 and len(x) < 3:
        return 0
    d = 0
    hi = lo = float(x[0])
    rev = 0
    for v in x[1:].tolist():
        if d == 0:
            hi, lo = max(hi, v), min(lo, v)
            if hi - v >= threshold:
                d, lo = -1, v
            elif v - lo >= threshold:
                d, hi = 1, v
        elif d == 1:
            if v > hi:
                hi = v
            elif hi - v >= threshold:
                d, lo, rev = -1, v, rev + 1
        else:
            if v < lo:
                lo = v
            elif v - lo >= threshold:
                d, hi, rev = 1, v, rev + 1
    return rev


def settled_minute(unload_minutes, usage_range: np.ndarray, window: int, bound: float, start: int = 0):
    """First minute ``m >= start`` opening a ``window`` without unloads and with range ``<= bound``."""
    T = len(usage_range)
    if T == 0:
        return None
    busy = np.zeros(T, dtype=bool)
    for m in unload_minutes:
        if 0 <= m < T:
            busy[m] = True
    bad = busy | ~(np.nan_to_num(usage_range, nan=np.inf) <= bound)
    # ok[m] = no bad minute in [m, m+window)
    c = np.concatenate(([0], np.cumsum(bad)))
    for m in range(max(0, start), T - window + 1):
        if c[m + window] - c[m] == 0:
            return int(m)
    return None


def _ratio(mx, mn):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(mn > 0, mx / np.where(mn > 0, mn, 1), np.where(mx > 0, np.inf, np.nan))


def build_tables(sim, done: int):
    """Event log, broker table, cluster table and summary of a (possibly partial) run."""
    T = done
    ids = sim.ids
    r = {k: v[:T] for k, v in sim.rec.items()}
    alive = sim.rec_alive[:T]
    # ---- events
    ev = pd.DataFrame(sim.events, columns=EVENT_COLUMNS)
    if ev.empty:
        ev = pd.DataFrame({c: pd.Series(dtype="object") for c in EVENT_COLUMNS})
    ev["minute"] = ev["minute"].astype("int64")
    ev["time"] = pd.to_datetime(EPOCH_MS + ev["minute"] * 60_000, unit="ms", utc=True)
    for c in ("random", "from_plan", "bad_placement"):
        ev[c] = ev[c].fillna(False).astype(bool)
    ev["cycle"] = pd.array(ev["cycle"], dtype="Int64")
    for c in ("broker", "bundle", "destination", "detail"):
        ev[c] = ev[c].astype("object")
    # ---- brokers (long)
    tt, ss = np.nonzero(alive)
    data = {"minute": tt.astype(np.int64), "broker": pd.Categorical.from_codes(ss, categories=ids)}
    for k in ("cpu", "bandwidth_in", "bandwidth_out", "direct_memory", "memory", "usage", "reported_usage", "score",
              "msg_rate", "throughput"):
        data[k] = r[k][tt, ss]
    data["bundles"] = r["bundles"][tt, ss].astype(np.int64)
    data["wrote_report"] = r["wrote_report"][tt, ss] > 0
    br = pd.DataFrame(data)
    br["broker"] = br["broker"].astype(str)
    # ---- cluster (per minute)
    def masked(k):
        a = r[k].copy()
        a[~alive] = np.nan
        return a

    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            rate, thr, cpu, use, score = (masked("msg_rate"), masked("throughput"), masked("cpu"), masked("usage"),
                                          masked("score"))
            n = alive.sum(axis=1)
            cl = pd.DataFrame({
                "minute": np.arange(T, dtype=np.int64),
                "brokers": n.astype(np.int64),
                "msg_rate": np.nansum(rate, axis=1),
                "throughput": np.nansum(thr, axis=1),
                "msg_rate_ratio": _ratio(np.nanmax(rate, axis=1), np.nanmin(rate, axis=1)),
                "throughput_ratio": _ratio(np.nanmax(thr, axis=1), np.nanmin(thr, axis=1)),
                "cpu_max": np.nanmax(cpu, axis=1),
                "cpu_min": np.nanmin(cpu, axis=1),
                "usage_mean": np.nanmean(use, axis=1),
                "usage_std": np.nanstd(use, axis=1),
                "usage_max": np.nanmax(use, axis=1),
                "usage_min": np.nanmin(use, axis=1),
                "score_gap": np.nanmax(score, axis=1) - np.nanmin(score, axis=1),
            })
    cl["cpu_range"] = cl["cpu_max"] - cl["cpu_min"]
    cl["usage_range"] = cl["usage_max"] - cl["usage_min"]
    kinds = ev.groupby(["minute", "kind"]).size().unstack(fill_value=0) if len(ev) else pd.DataFrame()
    for kind, col in (("unload", "unloads"), ("assign", "assigns"), ("split", "splits")):
        s = kinds[kind] if kind in kinds else pd.Series(dtype="int64")
        cl[col] = s.reindex(cl["minute"], fill_value=0).to_numpy().astype(np.int64)
    bad = ev[ev["bad_placement"] & (ev["kind"] == "unload")].groupby("minute").size()
    cl["bad_placements"] = bad.reindex(cl["minute"], fill_value=0).to_numpy().astype(np.int64)
    cl["unloads_total"] = cl["unloads"].cumsum()
    cols = ["minute", "brokers", "msg_rate", "throughput", "msg_rate_ratio", "throughput_ratio", "cpu_max", "cpu_min",
            "cpu_range", "usage_mean", "usage_std", "usage_max", "usage_min", "usage_range", "score_gap", "unloads",
            "unloads_total", "bad_placements", "assigns", "splits"]
    if getattr(sim, "ext", False):  # the Extensible Load Manager: the std TransferShedder aims at, and its target
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cl["load_std"] = np.nanstd(score, axis=1)
        cl["target_std"] = sim.rec_target[:T]
        cols += ["load_std", "target_std"]
    cl = cl[cols]
    summary = summarize(sim, ev, cl, use, T)
    return ev, br, cl, summary


def summarize(sim, ev: pd.DataFrame, cl: pd.DataFrame, usage: np.ndarray, T: int) -> dict:
    """The one-row summary of a run (keys :data:`SUMMARY_KEYS`)."""
    m = sim.sc.metrics
    unl = ev[ev["kind"] == "unload"]
    placed = ev[ev["kind"].isin(["unload", "assign"])]
    asg = ev[ev["kind"] == "assign"]
    unload_minutes = unl["minute"].tolist()
    osc = 0
    hours = 0.0
    for s in range(usage.shape[1]):
        col = usage[:, s]
        n = int((~np.isnan(col)).sum())
        if n >= 3:
            osc += zigzag_reversals(col, m.oscillation_threshold)
            hours += n / 60.0
    last = cl.iloc[-1] if len(cl) else None

    def endv(k):
        return float(last[k]) if last is not None else float("nan")

    cfg = sim.cfg
    sh = cfg.shedding_strategy
    pl = cfg.placement_strategy
    try:  # the registry's names (the extensible LeastResourceUsageWithWeight has its own short name)
        from ..strategies import placement_name, shedding_name

        sh = shedding_name(cfg.loadBalancerLoadSheddingStrategy)
        pl = placement_name(cfg.loadBalancerLoadPlacementStrategy)
    except Exception:
        pass
    out = {
        "scenario": sim.sc.name,
        "strategy": sh,
        "placement": pl,
        "seed": sim.seed,
        "minutes": int(T),
        "brokers": int(last["brokers"]) if last is not None else 0,
        "bundles": int(sim.b_active.sum()),
        "unloads": int(len(unl)),
        "unload_rounds": int(unl["cycle"].nunique()) if len(unl) else 0,
        "first_unload_minute": int(unl["minute"].min()) if len(unl) else None,
        "last_unload_minute": int(unl["minute"].max()) if len(unl) else None,
        "unloads_per_hour": float(len(unl) * 60.0 / T) if T else 0.0,
        "bad_placements": int(unl["bad_placement"].sum()),
        "random_placements": int(unl["random"].sum()),
        "bad_assignments": int(asg["bad_placement"].sum()),
        "random_assignments": int(asg["random"].sum()),
        "assigns": int((ev["kind"] == "assign").sum()),
        "splits": int(((ev["kind"] == "split") & ev["reason"].str.contains("into", regex=False)).sum()),
        "settled_minute": settled_minute(unload_minutes, cl["usage_range"].to_numpy(), m.settle_window,
                                         m.settle_range, m.settle_from),
        "msg_rate_ratio": endv("msg_rate_ratio"),
        "throughput_ratio": endv("throughput_ratio"),
        "cpu_range": endv("cpu_range"),
        "usage_range": endv("usage_range"),
        "usage_std": endv("usage_std"),
        "oscillation": float(osc / hours) if hours else 0.0,
        "unavailable_seconds": float(placed["unavailable_s"].sum()),
        "max_usage": float(np.nanmax(usage)) if usage.size and not np.all(np.isnan(usage)) else float("nan"),
        "score_unit": sim.score_unit,
    }
    if "load_std" in cl:
        out.update(_std_summary(cl))
    return out


def _std_summary(cl: pd.DataFrame) -> dict:
    """Extensible runs: the last checked ``load_std``, its target, and ``target_met_minute`` — the first
    minute from which every check's ``load_std`` stays at or below ``target_std`` to the end."""
    c = cl[cl["load_std"].notna()]
    if c.empty:
        return {"load_std": float("nan"), "target_std": float("nan"), "target_met_minute": None}
    ok = (c["load_std"] <= c["target_std"]).to_numpy()
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        met = int(c["minute"].iloc[0])
    elif bad[-1] + 1 < len(c):
        met = int(c["minute"].iloc[bad[-1] + 1])
    else:
        met = None
    return {"load_std": float(c["load_std"].iloc[-1]), "target_std": float(c["target_std"].iloc[-1]),
            "target_met_minute": met}
