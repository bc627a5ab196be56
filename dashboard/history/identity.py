"""Which broker a history row belongs to: the label a row names its broker by (``broker``, ``pod``,
``instance``, ... or the operator's ``--broker-label``), the ``--broker-map`` file, and the line-up of
scrape addresses with advertised broker ids (:func:`resolve_brokers`; the rules are in :mod:`.ingest`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engine.errors import InputError

from .counter_ids import counters_to_known_brokers
from .readers import _LBL, _RAW_COLUMNS, COUNTER_ALIASES, DIRECT_SHAPE, ID_LABELS, _read_bytes

__all__ = ["resolve_brokers", "load_broker_map"]


# ------------------------------------------------------------------------------------ identity
def _clean_id(v) -> str | None:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    s = str(v).strip()
    for scheme in ("http://", "https://", "pulsar://", "pulsar+ssl://"):
        if s.lower().startswith(scheme):
            s = s[len(scheme):]
    s = s.rstrip("/")
    return s or None


def _clean_col(col: pd.Series) -> pd.Series:
    """:func:`_clean_id` over a column, computed once per distinct value (exports repeat labels a lot)."""
    m = {v: _clean_id(v) for v in pd.unique(col.dropna())}
    return col.map(m).astype(object).where(lambda x: x.notna(), None)


def _host(v: str) -> str:
    h = v.rsplit(":", 1)[0] if v.count(":") == 1 else v
    return h.lower()


def _short(v: str) -> str:
    return _host(v).split(".")[0]


def load_broker_map(path) -> dict:
    """A ``--broker-map`` file: a YAML (or JSON) object ``{label value: broker id}``."""
    from engine.bounded import loads_yaml

    p = Path(path)
    obj = loads_yaml(_read_bytes(p), str(p))  # safe loader, nesting / alias / size limits
    if not isinstance(obj, dict) or not obj:
        raise InputError("expected an object {label value: broker id}", source=str(p))
    return {str(k).strip(): str(v).strip() for k, v in obj.items()}


def _line_up(target: set, other: set):
    """``{other id: target id}`` when every id of the smaller set matches exactly one of the other by
    host or by first DNS label, else None."""
    for key in (_host, _short):
        tk = {key(v): v for v in target}
        ok = {key(v): v for v in other}
        if len(tk) != len(target) or len(ok) != len(other):
            continue
        if set(ok) <= set(tk) or set(tk) <= set(ok):
            return {v: tk[k] for k, v in ok.items() if k in tk}
    return None


def resolve_brokers(raw: pd.DataFrame, *, broker_label: str | None = None, broker_map: dict | None = None,
                    cluster: str | None = None, report: dict | None = None) -> pd.DataFrame:
    """Cluster filter and one broker id per row (module docstring: "Broker identity")."""
    rep = report if report is not None else {}
    df = raw.copy()
    for c in _RAW_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df.reset_index(drop=True)
    cl = _clean_col(df["cluster"])
    clusters = sorted(set(cl.dropna()))
    if cluster is not None:
        if clusters and cluster not in clusters:
            raise InputError(f"cluster {cluster!r} is not in the input; its clusters: {', '.join(clusters)}",
                             field="cluster")
        keep = cl.isna() | (cl == cluster)
        rep["rows_without_cluster"] = int(cl.isna().sum())
        rep["rows_other_clusters"] = int((~keep).sum())
        df, cl = df[keep].reset_index(drop=True), cl[keep].reset_index(drop=True)
    elif len(clusters) > 1:
        raise InputError(f"the input mixes {len(clusters)} clusters ({', '.join(clusters)}); choose one with "
                         "--cluster NAME", field="cluster")
    df["cluster"] = cl
    # identity shape and value of every labelled row
    shape = pd.Series([None] * len(df), dtype=object)
    value = pd.Series([None] * len(df), dtype=object)
    direct = _clean_col(df["broker"]).notna()
    if broker_label:
        col = _LBL.get(broker_label, "l_custom")
        v = _clean_col(df[col])
        shape[v.notna()] = broker_label
        value = value.where(v.isna(), v)
    else:
        for lbl in reversed(ID_LABELS):  # the first present label wins: fill in reverse order
            v = _clean_col(df[_LBL[lbl]])
            shape = shape.where(v.isna(), lbl)
            value = value.where(v.isna(), v)
    # rows that name their broker in a column (long CSV/Parquet, LoadData timelines) are one more shape
    shape[direct] = DIRECT_SHAPE
    value[direct] = _clean_col(df["broker"])[direct]
    bmap = broker_map or {}
    if bmap:
        value = value.map(lambda x: None if x is None else bmap.get(x, bmap.get(_host(x), x)))
    is_counter = df["metric"].astype(str).str.strip().isin(COUNTER_ALIASES.keys())
    merged = value.copy()
    # after the cluster filter the rows are one cluster (rows without the label count as the chosen one)
    c = cluster or (clusters[0] if clusters else "(no cluster label)")
    in_c = shape.notna()
    sets = {s: set(value[in_c & ~is_counter & (shape == s)]) for s in
            shape[in_c & ~is_counter].dropna().unique()}
    if sets:
        with_port = [s for s in sets if all(":" in v for v in sets[s])]
        target = with_port[0] if with_port else ("broker" if "broker" in sets else next(iter(sets)))
        # counters of another shape (the ELM's broker=<host> beside brokers known by instance) take the
        # brokers' ids when they line up; they are never refused: a counter does not make a broker
        for s in shape[in_c & is_counter].dropna().unique():
            sel = in_c & is_counter & (shape == s)
            if s in sets or set(value[sel]) <= sets[target]:
                continue
            m = _line_up(sets[target], set(value[sel]))
            if m:
                merged[sel] = value[sel].map(lambda x, m=m: m.get(x, x))
        for s, ids in sets.items():
            if s == target or ids == sets[target]:
                continue
            m = _line_up(sets[target], ids)
            if m is None:
                def ex(x):
                    return ", ".join(sorted(x)[:3]) + (", …" if len(x) > 3 else "")

                def mets(lbl):
                    return ", ".join(sorted(set(df["metric"][in_c & (shape == lbl)].astype(str)))[:3])

                raise InputError(
                    f"cluster {c!r}: broker series carry two identity shapes that do not line up — "
                    f"{s}=<{ex(ids)}> on {mets(s)} and {target}=<{ex(sets[target])}> on {mets(target)}; "
                    f"that would make {len(ids | sets[target])} brokers instead of {max(len(ids), len(sets[target]))}."
                    " Give --broker-map FILE (YAML {label value: broker id}) or choose one label with "
                    "--broker-label LABEL", field=s)
            sel = in_c & (shape == s)
            merged[sel] = value[sel].map(lambda x, m=m: m.get(x, x))
    if sets:  # counters with an id no broker series has: the broker the series pair it with, else none
        counters_to_known_brokers({k: _clean_col(df[v]) for k, v in _LBL.items()}, merged, in_c & is_counter,
                                  in_c & ~is_counter, rep)
    df["broker"] = merged.where(merged.notna(), None)
    rep["broker_identity"] = sorted(set(shape.dropna()))
    return df
