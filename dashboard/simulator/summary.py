"""The results side by side: the summary table, the check codes of an extensible run, the config diff."""
from __future__ import annotations

import math
import re
from typing import Mapping

import pandas as pd

from engine.config import PULSAR_4_DEFAULTS, LoadBalancerConfig, key_info

from ..keys import fmt_conf_value
from .runs import RunData

__all__ = ["SUMMARY_ROWS", "summary_rows", "check_codes", "checks_frame", "config_diff"]

#: summary rows: (label, summary key, "lower" = lower is better / "" = neutral, format)
SUMMARY_ROWS = [
    ("unloads", "unloads", "lower", "int"),
    ("unload rounds", "unload_rounds", "lower", "int"),
    ("bad placements (destination above average)", "bad_placements", "lower", "int"),
    ("random placements", "random_placements", "lower", "int"),
    ("first unload (minute)", "first_unload_minute", "", "minute"),
    ("settled (minute)", "settled_minute", "lower", "minute"),
    ("msg-rate max/min at the end", "msg_rate_ratio", "lower", "ratio"),
    ("throughput max/min at the end", "throughput_ratio", "lower", "ratio"),
    ("CPU range at the end (points)", "cpu_range", "lower", "pts"),
    ("usage std at the end (points)", "usage_std", "lower", "pts"),
    ("oscillation (swings per broker-hour)", "oscillation", "lower", "float"),
    ("unavailable seconds (unloads, lookups)", "unavailable_seconds", "lower", "int"),
    ("TransferShedder load std at the end (%)", "load_std", "", "pts"),
    ("TransferShedder target std (%)", "target_std", "", "pts"),
    ("std ≤ target from (minute)", "target_met_minute", "lower", "minute"),
]

#: rows only a run under the Extensible Load Manager has (its cluster table carries ``load_std``)
_EXTENSIBLE_ROWS = ("load_std", "target_std", "target_met_minute")


def _fmt_summary(v, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "never" if fmt == "minute" else "—"
    if isinstance(v, float) and math.isinf(v):
        return "∞"
    if fmt == "int":
        return f"{int(v):,}"
    if fmt == "minute":
        return str(int(v))
    if fmt == "ratio":
        return f"{float(v):,.2f}×"
    if fmt == "pts":
        return f"{float(v):,.1f}"
    return f"{float(v):,.2f}"


def _rank(v, fmt):
    """Comparable value for "lower is better" (None minutes = never = worst)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return math.inf if fmt == "minute" else None
    return float(v)


def summary_rows(runs: Mapping[str, RunData]) -> list[dict]:
    """The summary table: ``{"label", "key", "values": {side: text}, "best": side | None}`` per row
    (the extensible rows only when a run is extensible; the check outcomes of those runs too)."""
    out = [{"label": "strategy", "key": "strategy", "values": {s: r.spec["shed"] for s, r in runs.items()},
            "best": None},
           {"label": "placement", "key": "placement",
            "values": {s: r.summary.get("placement") or r.spec["place"] for s, r in runs.items()}, "best": None}]
    any_ext = any(r.extensible for r in runs.values())
    for label, key, better, fmt in SUMMARY_ROWS:
        ext_only = key in _EXTENSIBLE_ROWS
        if ext_only and not any_ext:
            continue
        # an extensible-only metric means nothing for the other strategy: "—", never a "best"
        applies = {s: (r.extensible or not ext_only) for s, r in runs.items()}
        vals = {s: r.summary.get(key) for s, r in runs.items()}
        best = None
        if better == "lower" and len(vals) == 2 and all(applies.values()):
            ranks = {s: _rank(v, fmt) for s, v in vals.items()}
            if all(x is not None for x in ranks.values()) and len(set(ranks.values())) == 2:
                best = min(ranks, key=ranks.get)
        out.append({"label": label, "key": key,
                    "values": {s: _fmt_summary(v, fmt) if applies[s] else "—" for s, v in vals.items()},
                    "best": best})
    if any_ext:
        out.append({"label": "TransferShedder checks", "key": "checks",
                    "values": {s: (" · ".join(f"{c} {n}" for c, n in check_codes(r.events).items()) or "—")
                               if r.extensible else "—" for s, r in runs.items()}, "best": None})
    return out


_CODE = re.compile(r"^([A-Z][A-Za-z]+):")
_HIT = re.compile(r"hit (\d+) time\(s\)")


def _codes(c: pd.DataFrame) -> pd.Series:
    """The decision code of each check row: the engine's ``reason_code`` (Pulsar's ``UnloadDecision.Reason``),
    or, for results kept before the events carried it, the code the reason starts with."""
    if "reason_code" in c:
        return c["reason_code"].astype(str).replace("", float("nan"))
    return c["reason"].astype(str).str.extract(_CODE)[0]


def check_codes(events: pd.DataFrame) -> dict:
    """The decision codes over the run's checks (``{"HitCount": 40, "CoolDown": 15, …}``)."""
    c = events[events["kind"] == "check"]
    codes = _codes(c).dropna()
    return {k: int(v) for k, v in codes.value_counts().items()}


def checks_frame(events: pd.DataFrame) -> pd.DataFrame:
    """One row per check: ``minute, code, hit, reason`` (``hit``: the hit count, NaN when the reason does
    not count hits)."""
    cols = ["minute", "reason"] + (["reason_code"] if "reason_code" in events else [])
    c = events.loc[events["kind"] == "check", cols].copy()
    c["reason"] = c["reason"].astype(str)
    c["code"] = _codes(c)
    hit = c["reason"].str.extract(_HIT)[0].astype(float)
    hit[c["reason"].str.contains("hit count reset to 0", regex=False)] = 0.0
    c["hit"] = hit
    return c[["minute", "reason", "code", "hit"]].reset_index(drop=True)


def config_diff(cfg_a: LoadBalancerConfig, cfg_b: LoadBalancerConfig) -> list[dict]:
    """Every key where A or B differs from Pulsar 4.x, or A from B: ``{"key", "default", "a", "b", "unit", "doc"}``."""
    from engine.config import changed_keys

    keys = list(changed_keys(cfg_a)) + [k for k in changed_keys(cfg_b) if k not in changed_keys(cfg_a)]
    rows = []
    for k in keys:
        info = key_info(k)
        rows.append({"key": k, "default": fmt_conf_value(getattr(PULSAR_4_DEFAULTS, k)),
                     "a": fmt_conf_value(getattr(cfg_a, k)), "b": fmt_conf_value(getattr(cfg_b, k)),
                     "unit": info.get("unit", ""), "doc": info.get("doc", ""),
                     "differs": getattr(cfg_a, k) != getattr(cfg_b, k)})
    rows.sort(key=lambda r: (not r["differs"], r["key"]))
    return rows
