"""The history jobs in plain pandas: the reference the Spark jobs are tested against, the engine the
app uses for small datasets (no JVM start), and the pandas column of the benchmark.

Same inputs, same definitions, same output columns as :mod:`.aggregates` and :mod:`.bundles`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from engine.config import LoadBalancerConfig

from .aggregates import DEFAULT_QUANTILES, EPS, ROLLUP_COLUMNS, _qname
from .dataset import wide_bundles, wide_brokers

__all__ = ["cluster_aggregates_pd", "with_usage_pd", "minute_aggregates_pd", "rollup_pd", "broker_percentiles_pd",
           "top_hottest_pd", "bundle_distribution_pd"]


def with_usage_pd(wide: pd.DataFrame, weights=None) -> pd.DataFrame:
    wc, wd, wi, wo = (float(x) for x in (weights if weights is not None else LoadBalancerConfig().weights))
    w = wide.copy()
    w["usage"] = np.maximum.reduce([w["cpu"].to_numpy() * wc, w["direct_memory"].to_numpy() * wd,
                                    w["bandwidth_in"].to_numpy() * wi, w["bandwidth_out"].to_numpy() * wo])
    w["rate"] = w["msg_rate_in"] + w["msg_rate_out"]
    w["thr"] = w["msg_throughput_in"] + w["msg_throughput_out"]
    return w


def _ratio(mx, mn):
    return mx / np.where(np.abs(mn) <= EPS, 1.0, mn)


def minute_aggregates_pd(w: pd.DataFrame) -> pd.DataFrame:
    g = w.groupby("timestamp", sort=True)
    out = pd.DataFrame({
        "brokers": g.size(),
        "rate_max": g["rate"].max(), "rate_min": g["rate"].min(),
        "thr_max": g["thr"].max(), "thr_min": g["thr"].min(),
        "cpu_max": g["cpu"].max(), "cpu_min": g["cpu"].min(),
        "usage_mean": g["usage"].mean(), "usage_std": g["usage"].std(ddof=0),
        "usage_max": g["usage"].max(), "usage_min": g["usage"].min(),
    })
    out["rate_ratio"] = _ratio(out["rate_max"].to_numpy(), out["rate_min"].to_numpy())
    out["thr_ratio"] = _ratio(out["thr_max"].to_numpy(), out["thr_min"].to_numpy())
    out["cpu_range"] = out["cpu_max"] - out["cpu_min"]
    out["usage_gap"] = out["usage_max"] - out["usage_min"]
    hot = w.sort_values(["timestamp", "usage", "broker"], ascending=[True, False, True], kind="stable")
    out["hottest"] = hot.drop_duplicates("timestamp").set_index("timestamp")["broker"]
    return out.reset_index()


def rollup_pd(minute: pd.DataFrame, unit: str) -> pd.DataFrame:
    key = minute["timestamp"].dt.floor("h" if unit == "hour" else "D")
    g = minute.groupby(key, sort=True)
    out = pd.DataFrame({"minutes": g.size(), "brokers_min": g["brokers"].min(), "brokers_max": g["brokers"].max(),
                        "usage_mean": g["usage_mean"].mean()})
    for c in ROLLUP_COLUMNS:
        out[f"{c}_mean"] = g[c].mean()
        out[f"{c}_max"] = g[c].max()
    out.index.name = "timestamp"
    return out.reset_index()


def broker_percentiles_pd(w: pd.DataFrame, minute: pd.DataFrame, quantiles=DEFAULT_QUANTILES) -> pd.DataFrame:
    g = w.groupby("broker", sort=True)
    out = pd.DataFrame({"minutes": g.size(), "usage_mean": g["usage"].mean(), "usage_max": g["usage"].max(),
                        "cpu_mean": g["cpu"].mean(), "cpu_p90": g["cpu"].quantile(0.9), "cpu_max": g["cpu"].max(),
                        "rate_mean": g["rate"].mean(), "thr_mean": g["thr"].mean()})
    for q in quantiles:
        out[f"usage_p{_qname(float(q))}"] = g["usage"].quantile(float(q))
    hot = minute.groupby("hottest").size()
    out["hottest_minutes"] = hot.reindex(out.index).fillna(0).astype(np.int64)
    out.index.name = "broker"
    return out.reset_index()


def top_hottest_pd(brokers: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    t = brokers.sort_values(["usage_mean", "broker"], ascending=[False, True], kind="stable").head(int(n)).copy()
    t["rank"] = np.arange(1, len(t) + 1)
    return t.reset_index(drop=True)


def cluster_aggregates_pd(long_df: pd.DataFrame, weights=None, quantiles=DEFAULT_QUANTILES, top_n: int = 10,
                          wide: pd.DataFrame | None = None) -> dict:
    """``{"minute", "hour", "day", "brokers", "top"}`` pandas frames (see :mod:`.aggregates`)."""
    w = with_usage_pd(wide if wide is not None else wide_brokers(long_df), weights)
    minute = minute_aggregates_pd(w)
    brokers = broker_percentiles_pd(w, minute, quantiles)
    return {"minute": minute, "hour": rollup_pd(minute, "hour"), "day": rollup_pd(minute, "day"),
            "brokers": brokers, "top": top_hottest_pd(brokers, top_n)}


def bundle_distribution_pd(long_df: pd.DataFrame, top_n: int = 20, quantiles=(0.5, 0.9)) -> dict:
    """Per-bundle distribution (see :mod:`.bundles`): ``{"hour", "top"}``."""
    b = wide_bundles(long_df)
    if b.empty:
        return {"hour": pd.DataFrame(columns=_bundle_hour_cols(quantiles)), "top": pd.DataFrame(columns=_TOP_COLS)}
    b["rate"] = b["bundle_msg_rate_in"] + b["bundle_msg_rate_out"]
    b["thr"] = b["bundle_msg_throughput_in"] + b["bundle_msg_throughput_out"]
    b["hour"] = b["timestamp"].dt.floor("h")
    per = b.groupby(["hour", "bundle"], sort=True).agg(rate=("rate", "mean"), thr=("thr", "mean"),
                                                       topics=("bundle_topics", "max")).reset_index()
    g = per.groupby("hour", sort=True)
    out = pd.DataFrame({"bundles": g.size(), "topics": g["topics"].sum(), "rate_total": g["rate"].sum(),
                        "rate_max": g["rate"].max(), "thr_total": g["thr"].sum(), "thr_max": g["thr"].max(),
                        "topics_max": g["topics"].max()})
    for q in quantiles:
        out[f"rate_p{_qname(q)}"] = g["rate"].quantile(q)
        out[f"thr_p{_qname(q)}"] = g["thr"].quantile(q)
        out[f"topics_p{_qname(q)}"] = g["topics"].quantile(q)
    out["rate_top_share"] = out["rate_max"] / np.where(out["rate_total"] > 0, out["rate_total"], 1.0)
    out.index.name = "timestamp"
    hour = out.reset_index()
    last = b.sort_values(["bundle", "timestamp", "broker"], kind="stable").groupby("bundle").last()
    gb = b.groupby("bundle", sort=True)
    top = pd.DataFrame({"rate_mean": gb["rate"].mean(), "rate_max": gb["rate"].max(), "thr_mean": gb["thr"].mean(),
                        "topics_max": gb["bundle_topics"].max(), "minutes": gb.size(),
                        "brokers": gb["broker"].nunique(), "last_broker": last["broker"]})
    top.index.name = "bundle"
    top = top.reset_index().sort_values(["rate_mean", "bundle"], ascending=[False, True], kind="stable")
    top = top.head(int(top_n)).reset_index(drop=True)
    top["rank"] = np.arange(1, len(top) + 1)
    return {"hour": hour[_bundle_hour_cols(quantiles)], "top": top[_TOP_COLS]}


_TOP_COLS = ["bundle", "rate_mean", "rate_max", "thr_mean", "topics_max", "minutes", "brokers", "last_broker", "rank"]


def _bundle_hour_cols(quantiles):
    cols = ["timestamp", "bundles", "topics", "rate_total", "rate_max", "thr_total", "thr_max", "topics_max"]
    for q in quantiles:
        cols += [f"rate_p{_qname(q)}", f"thr_p{_qname(q)}", f"topics_p{_qname(q)}"]
    return cols + ["rate_top_share"]


_NONE = "<no partner>"


def count_events_pd(events: pd.DataFrame) -> dict:
    """``per_day`` and ``per_pair`` of a backtest's events (see :func:`.backtest.count_events`)."""
    ev = events.copy()
    ev["day"] = ev["timestamp"].dt.strftime("%Y-%m-%d")
    g = ev.groupby("day", sort=True)
    per_day = pd.DataFrame({"events": g.size(), "brokers": g["broker"].nunique(),
                            "bundles": g["n_bundles"].sum()}).reset_index()
    ev["partner_key"] = ev["partner"].where(ev["partner"].notna(), _NONE)
    gp = ev.groupby(["broker", "partner_key"], sort=True)
    per_pair = pd.DataFrame({"events": gp.size(), "bundles": gp["n_bundles"].sum(), "first": gp["timestamp"].min(),
                             "last": gp["timestamp"].max(),
                             "timestamps": gp["timestamp"].agg(lambda s: sorted(s.tolist()))}).reset_index()
    per_pair["partner"] = per_pair["partner_key"].map(lambda x: None if x == _NONE else x).astype(object)
    per_pair = per_pair[["broker", "partner", "events", "bundles", "first", "last", "timestamps"]]
    return {"per_day": per_day, "per_pair": per_pair}
