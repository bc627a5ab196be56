"""The load manager's counters credited to the dataset's brokers only (:func:`.ingest.resolve_brokers`).

A counter series names its broker by the label its shape gives (the ELM's ``broker``, the scrape's
``instance`` on the modular leader's counters). When that id is none of the dataset's brokers, the
broker series that carry the same label value say which broker it is: a ``pulsar_lb_*`` series with
``broker=<advertised host>`` and the scrape's ``instance=<ip:port>`` pairs the two. When no series
says, the counter is the cluster's (broker null) and its id is listed in the report's
``counter_ids_unmatched``: a counter never names a broker the dataset does not have.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["counters_to_known_brokers"]


def _missing(v) -> bool:
    return v is None or v != v


def counters_to_known_brokers(labels: dict, merged: pd.Series, counter: pd.Series, series: pd.Series,
                              rep: dict) -> None:
    """``labels``: identity label → its cleaned values (in the order labels are tried); ``merged``: the
    broker id of every row (updated in place); ``counter`` / ``series``: the counter rows and the broker
    series' rows (boolean masks)."""
    known = set(merged[series].dropna())
    odd = counter & merged.notna() & ~merged.isin(known)
    if not odd.any():
        return
    pairs: dict = {}
    for lbl, col in labels.items():
        got = pd.DataFrame({"v": col[series], "b": merged[series]}).dropna().drop_duplicates()
        for v, b in zip(got["v"], got["b"]):
            pairs.setdefault((lbl, v), set()).add(b)
    keys = pd.DataFrame({"_id": merged[odd], **{lbl: col[odd] for lbl, col in labels.items()}})
    unmatched = set()
    for row in keys.drop_duplicates().itertuples(index=False, name=None):
        rid, vals = row[0], dict(zip(labels, row[1:]))
        hit = None
        for lbl, v in vals.items():
            bs = None if _missing(v) else pairs.get((lbl, v))
            if bs is not None and len(bs) == 1:
                hit = next(iter(bs))
                break
        sel = odd & (merged == rid)
        for lbl, v in vals.items():
            sel &= labels[lbl].isna() if _missing(v) else labels[lbl] == v
        merged[sel] = hit
        if hit is None:
            unmatched.add(rid)
    if unmatched:
        rep["counter_ids_unmatched"] = sorted(unmatched)
