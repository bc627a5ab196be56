"""Ingestion on Spark: the same readers, rules, counts and dataset as :func:`.ingest.ingest`, in parallel.

:func:`ingest_any` picks the engine: ``engine="pandas"`` is :func:`.ingest.ingest` itself,
``"spark"`` is :func:`ingest_spark`, ``"auto"`` (the default) takes ``SHEDLAB_INGEST_ENGINE``
(``auto`` / ``spark`` / ``pandas``) and otherwise Spark when the inputs add up to at least
``SHEDLAB_INGEST_SPARK_MB`` (default :data:`SPARK_THRESHOLD_MB`) and Java is there.

Every input format the pandas path reads is read here too, by the very same reader
(:func:`.readers.read_input`), and cleaned by the very same rules (:func:`.identity.resolve_brokers`,
:func:`.ingest.validate_rows`, :func:`.ingest.dedupe_minutes`, the gap filling and
:func:`.ingest.counter_increases`); what changes is where they run:

1. **read** — one Spark task per input (a file, or a directory for timelines and scraped
   ``/metrics``): the executor reads and parses it (big Prometheus JSON never goes through the
   driver; a plain ``query_range`` file is decoded by msgspec into its typed shape, anything else by
   the reader itself), turns the values into numbers by the value rule
   (:func:`.ingest.value_numbers`) and writes its raw rows as an Arrow file in a staging directory
   beside the output; the driver gets one small summary per input (format, rows, its distinct label
   combinations, each staged row carrying the index of its combination, its day range, or the error,
   raised in input order as the pandas path would: the same message naming the file and the field);
2. **brokers** — the broker identity rules need every id of the input at once: the driver resolves
   the distinct label combinations (a few per series) with :func:`.identity.resolve_brokers`. The load
   manager's counters (small: a few series) are collected and turned into the ``actions`` table
   on the driver;
3. **clean and write** — one task per group of brokers (sorted blocks of the resolved ids) reads its
   rows straight from the staged files (no join, shuffle or sort in the JVM), day after day (an input
   is read once, when its first day is next). Rows never become Python objects: the label rules
   (:func:`.ingest.label_rule`) run once per distinct label combination and count its rows, each kept
   row gets its series' integer code, the timestamp and value rules, the de-duplication of minutes
   and the gap filling (:func:`.ingest.dedupe_minutes`, :func:`.ingest._fill_gaps`) run on numpy
   arrays (each series' last row carried from one day to the next, so gaps across midnight are filled
   as in one pass), and each day's long and wide files are built from the codes (:mod:`.ingest_days`);
4. **finish** — the driver merges the counts into the report (same keys, same order, same values
   as the pandas path), writes the metadata, the ``actions`` table and records the wide layout.

Departures from the pandas path: a day may hold several files (``part-NNNNN.parquet``, one per task;
the dataset layout allows it, every reader reads them all, rows of each file sorted the same way),
and inputs, staging and output must be paths every executor can see (local mode, or a shared
filesystem on a cluster). Progress: ``progress(done, total, text)`` — one call per stage (text
starting with ``stage``) and Spark's task counts in between (:class:`dashboard.spark.StageProgress`).
"""
from __future__ import annotations

import gc
import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from engine.errors import InputError
from engine.limits import MAX_EPOCH_MS

from .identity import _clean_col, load_broker_map, resolve_brokers
from .ingest import (MAX_GAP_MINUTES, NORMALISE_REPORT_KEYS, counter_increases, dedupe_minutes, ingest, label_rule,
                     validate_rows, value_numbers)
from .readers import _COLUMNS, _RAW_COLUMNS, COUNTER_ALIASES, METRIC_ALIASES, _Acc, _sniff, read_input
from .ingest_days import DAY_MS, MINUTE_MS, _cat, _dedupe_fill_day, _take, _write_day
from .store import ALL_METRICS, BROKER_METRICS, META_FILE, DatasetWriter, write_actions

__all__ = ["ingest_any", "ingest_spark", "choose_engine", "input_bytes", "stage_printer", "SPARK_THRESHOLD_MB",
           "ENGINE_ENV", "THRESHOLD_ENV"]

SPARK_THRESHOLD_MB = 256  # below this the JVM start (~6-10 s) costs more than one pandas pass saves
ENGINE_ENV = "SHEDLAB_INGEST_ENGINE"
THRESHOLD_ENV = "SHEDLAB_INGEST_SPARK_MB"
_SEQ_SHIFT = 40  # reading order (seq): input index << 40 | row within its staged file

#: the label columns that decide a row's cluster and broker id (the distinct combinations are resolved)
_KEY = ["broker", "metric", "l_broker", "l_pod", "l_kubernetes_pod_name", "l_instance", "l_custom", "cluster"]
_NULL = "\ue000"  # stands for a missing label in the join keys (a private-use character; NUL does not survive Spark)
_STAGE_STR = [c for c in _RAW_COLUMNS if c not in ("timestamp", "value")]


def _stage_schema():
    import pyarrow as pa

    return pa.schema([("timestamp", pa.float64()), ("vnum", pa.float64())] + [(c, pa.string()) for c in _STAGE_STR])


def _write_stage(t, stage_dir: str, idx: int) -> None:
    """A staged input as an Arrow IPC file (no Parquet encoding; LZ4: the label columns are long runs)."""
    import pyarrow.feather as pf

    pf.write_feather(t, os.path.join(stage_dir, f"unit-{idx:06d}.arrow"), compression="lz4")


def _read_stage(path: str, columns=None):
    import pyarrow.feather as pf

    return pf.read_table(path, columns=columns, memory_map=True)


# ------------------------------------------------------------------------------------ engine choice
def input_bytes(inputs: Iterable) -> int:
    """Total size of the inputs (files, and the files under directories)."""
    total = 0
    for p in map(Path, inputs):
        try:
            if p.is_dir():
                total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
            elif p.exists():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def choose_engine(inputs, engine: str = "auto") -> str:
    """``"spark"`` or ``"pandas"`` (see the module docstring)."""
    if engine not in ("auto", "spark", "pandas"):
        raise InputError(f"unknown ingest engine {engine!r} (auto, spark, pandas)", field="engine")
    if engine == "auto":
        env = (os.getenv(ENGINE_ENV) or "auto").strip().lower()
        if env not in ("auto", "spark", "pandas"):
            raise InputError(f"{ENGINE_ENV}={env!r}: expected auto, spark or pandas", field=ENGINE_ENV)
        engine = env
    if engine != "auto":
        return engine
    try:
        mb = float(os.getenv(THRESHOLD_ENV) or SPARK_THRESHOLD_MB)
    except ValueError:
        raise InputError(f"{THRESHOLD_ENV} takes a number of MB", field=THRESHOLD_ENV) from None
    if input_bytes(inputs) < mb * 2**20:
        return "pandas"
    from dashboard.spark import java_available

    if os.getenv("LB_SPARK_REMOTE") or java_available()[0]:
        return "spark"
    return "pandas"


def stage_printer(stream=None):
    """A ``progress`` callback for the command line: one line per stage (Spark's task counts skipped)."""
    out = stream or sys.stderr

    def report(done, total, text):  # noqa: ARG001
        if str(text).startswith("stage"):
            print(f"ingest: {text}", file=out, flush=True)

    return report


def ingest_any(inputs, out, *, engine: str = "auto", progress=None, **kw) -> dict:
    """:func:`.ingest.ingest` on pandas or on Spark (:func:`choose_engine`); same arguments, same dataset."""
    inputs = list(inputs)
    if choose_engine(inputs, engine) == "spark":
        return ingest_spark(inputs, out, progress=progress, **kw)
    # the pandas path is one quick stage: no stage line, so a refused input's error stays the one line
    return ingest(inputs, out, **kw)


# ------------------------------------------------------------------------------------ executor side
def _stage_values(v: pd.Series) -> np.ndarray:
    """A raw ``value`` column as the numbers the rules see (:func:`.ingest.value_numbers`, run where the
    input is read): a NaN/Inf spelling as +Inf (not finite), non-numeric text as NaN, numbers as they
    are. One ambiguity is left to :func:`_raw_from_stage`: a NaN of a numeric (non-text) column."""
    num, special = value_numbers(v)
    return np.where(special.to_numpy(), np.inf, num.to_numpy(dtype=float))


def _str_array(col: pd.Series):
    """A label column as an Arrow string array (missing → null; a number → its text, as str() would)."""
    import pyarrow as pa

    arr = col.to_numpy(dtype=object)
    try:
        return pa.array(arr, pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        fixed = [None if x is None or (isinstance(x, float) and np.isnan(x)) else x if isinstance(x, str) else str(x)
                 for x in arr]
        return pa.array(fixed, pa.string())


_QR_DECODER = None


def _qr_decoder():
    """A msgspec decoder of exactly the plain query_range shape (typed: the pairs come out as tuples,
    no dict per sample); anything else fails to decode and goes to the general reader."""
    global _QR_DECODER
    if _QR_DECODER is None:
        import msgspec

        series = msgspec.defstruct("Series", [("metric", dict[str, str]), ("values", list[tuple[float, str]])])
        data = msgspec.defstruct("Data", [("result", list[series])])
        response = msgspec.defstruct("Response", [("status", str), ("data", data)])
        _QR_DECODER = msgspec.json.Decoder(response)
    return _QR_DECODER


def _fast_prometheus(path: Path, fmt: str, metric, broker_label):
    """The staged columns of a plain ``query_range`` file (``status: success``, a matrix of series with
    their string labels and ``[t, "v"]`` pairs) without the per-row Python of
    :func:`.readers.parse_prometheus`: msgspec decodes the typed shape, labels are resolved once per
    series (by the same :class:`.readers._Acc`), values go through the same rule. ``None`` for anything
    else — the caller then reads the file with :func:`.readers.read_input`, which accepts or refuses it
    with its own message."""
    import pyarrow as pa

    from engine.bounded import check_size, limit, read_bytes_bounded

    if fmt not in ("auto", "prometheus") or not path.is_file() or limit("SHEDLAB_MAX_NESTING") < 8:
        return None
    try:
        if fmt == "auto" and _sniff(path) != "json":
            return None
        data = read_bytes_bounded(path)
        check_size(len(data), str(path))
        obj = _qr_decoder().decode(data)  # strict JSON of one shape (else: the general reader)
    except Exception:  # noqa: BLE001 - the reader will give its own answer
        return None
    if obj.status != "success":
        return None
    stem = path.stem
    name_default = metric or (stem if (stem in METRIC_ALIASES or stem in ALL_METRICS) else None)
    acc = _Acc(broker_label)
    ts_parts, v_parts, counts = [], [], []
    for series in obj.data.result:
        labels = series.metric
        name = labels.get("__name__") or name_default
        if not name:
            return None
        acc.add(labels, name, [None], [None])  # one row: the series' labels, as parse_prometheus makes them
        ts_parts.append([p[0] for p in series.values])
        v_parts.append([p[1] for p in series.values])
        counts.append(len(series.values))
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    t = np.fromiter(itertools.chain.from_iterable(ts_parts), dtype=float, count=n)
    t = np.where(np.abs(t) > 1e11, t, t * 1000.0)  # ingest._to_ms on numbers
    values = pd.Series(np.fromiter(itertools.chain.from_iterable(v_parts), dtype=object, count=n), dtype=object)
    which = np.repeat(np.arange(len(counts)), counts)
    cols = {"timestamp": pa.array(t), "vnum": pa.array(_stage_values(values))}
    for c in _STAGE_STR:
        per = pd.Series(acc.cols[c], dtype=object)
        codes, uniq = pd.factorize(per, use_na_sentinel=True)
        if not len(uniq):  # a label no series carries
            cols[c] = pa.nulls(n, pa.dictionary(pa.int32(), pa.string()))
            continue
        idx = codes.astype(np.int32)[which]
        cols[c] = pa.DictionaryArray.from_arrays(pa.array(idx, mask=idx < 0 if (codes < 0).any() else None),
                                                 _str_array(pd.Series(uniq, dtype=object)))
    # the label combinations (as _with_cid: in order of first appearance among the rows) per series
    keys = list(zip(*(acc.cols[c] for c in _KEY))) if len(counts) else []
    ids: dict = {}
    cid = np.array([ids.setdefault(k, len(ids)) if m else -1 for k, m in zip(keys, counts)], dtype=np.int64)
    rows = np.bincount(cid[counts > 0], weights=counts[counts > 0], minlength=len(ids)).astype(np.int64)
    cols["cid"] = pa.array(cid[which].astype(np.int32), pa.int32())
    return cols, n, n > 0, [[*k, int(r)] for k, r in zip(ids, rows.tolist())]


def _read_unit(idx: int, path: str, fmt: str, metric, broker_label, stage_dir: str) -> dict:
    """Read one input in an executor; stage its raw rows; a summary (or the error) for the driver."""
    import pyarrow as pa

    collecting = gc.isenabled()
    gc.disable()  # a query_range file is millions of small objects without cycles: no collection passes
    try:
        fast = _fast_prometheus(Path(path), fmt, metric, broker_label)
    finally:
        if collecting:
            gc.enable()
    if fast is not None:
        cols, n, is_obj, combos = fast
        t = pa.table({c: cols[c] for c in ["timestamp", "vnum"] + _STAGE_STR + ["cid"]})
        _write_stage(t, stage_dir, idx)
        return {"idx": idx, "format": "prometheus", "rows": n, "object_values": bool(is_obj), "float_origin": False,
                "combos": combos, **_day_range(t)}
    try:
        raw, used = read_input(Path(path), fmt, metric, broker_label)
    except InputError as exc:
        return {"idx": idx, "error": {"message": exc.message, "source": exc.source, "field": exc.field}}
    except Exception as exc:  # noqa: BLE001 - re-raised on the driver with its type named
        return {"idx": idx, "error": {"message": f"{type(exc).__name__}: {exc}", "source": path, "field": None,
                                      "unexpected": True}}
    n = len(raw)
    v = raw["value"]
    # pandas' concat ignores the dtype of an all-missing column: such an input does not make the values text
    is_obj = bool(v.dtype == object and n and v.notna().any())
    cols = {"timestamp": pa.array(pd.to_numeric(raw["timestamp"], errors="coerce").astype(float).to_numpy()),
            "vnum": pa.array(_stage_values(v) if n else np.array([], dtype=float), pa.float64())}
    for c in _STAGE_STR:
        if c == "metric":  # the rules only ever read the name as text (astype(str)): None is "None"
            cols[c] = pa.array(raw[c].astype(str).to_numpy(dtype=object), pa.string())
        else:
            cols[c] = _str_array(raw[c]) if c in raw.columns else pa.nulls(n, pa.string())
    t = pa.table(cols, schema=_stage_schema())
    t, combos = _with_cid(t)
    _write_stage(t, stage_dir, idx)
    return {"idx": idx, "format": used, "rows": int(n), "object_values": is_obj, "float_origin": v.dtype != object,
            "combos": combos, **_day_range(t)}


def _with_cid(t):
    """The staged table with ``cid`` (int32): each row's index in the list of the input's distinct label
    combinations, returned beside it (``[*labels, rows]`` per combination, missing labels None), so the
    clean-and-write tasks pick their brokers' rows by a lookup instead of a join."""
    import pyarrow as pa

    n = t.num_rows
    code = np.zeros(n, dtype=np.int64)
    for c in _KEY:
        col = t.column(c)
        if pa.types.is_dictionary(col.type):
            col = col.combine_chunks()
            k = col.indices.to_numpy(zero_copy_only=False)
            k = np.where(col.is_null().to_numpy(zero_copy_only=False), -1, k).astype(np.int64)
            size = len(col.dictionary)
        else:
            k, u = pd.factorize(col.to_numpy(zero_copy_only=False), use_na_sentinel=True)
            size = len(u)
        code = code * (size + 1) + (k + 1)
        code = pd.factorize(code)[0].astype(np.int64)  # keep it small: one code per distinct prefix
    cid, _u = pd.factorize(code)
    cid = cid.astype(np.int32)
    _c, first = np.unique(cid, return_index=True)  # codes are in order of first appearance
    counts = np.bincount(cid, minlength=len(_u))
    keys = [t.column(c).take(pa.array(first)).cast(pa.string()).to_pylist() for c in _KEY]
    combos = [list(r) for r in zip(*keys, counts.tolist())]
    return t.append_column("cid", pa.array(cid, pa.int32())), combos


def _valid_ts(ts: np.ndarray) -> np.ndarray:
    """The timestamps :func:`.ingest.validate_rows` keeps (its bad_ts rule)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(ts) & (ts >= 0) & (ts <= MAX_EPOCH_MS)


def _day_range(t) -> dict:
    """The first and last day of a staged table's valid timestamps (None, None without any)."""
    ts = t.column("timestamp").to_numpy(zero_copy_only=False).astype(float)
    ts = ts[_valid_ts(ts)]
    if not len(ts):
        return {"dmin": None, "dmax": None}
    return {"dmin": int(ts.min()) // DAY_MS, "dmax": int(ts.max()) // DAY_MS}


def _raw_from_stage(df: pd.DataFrame, object_values: bool, float_units) -> pd.Series:
    """The values as :func:`.ingest.validate_rows` must see them. When some input's values are text, the
    pandas path concatenates everything into one object column, where a NaN of a numeric input reads
    as the text "nan" (not finite) instead of a missing number (non-numeric): the same here."""
    v = df["vnum"].astype(float)
    if object_values and len(float_units):
        unit = df["seq"].to_numpy(dtype=np.int64) >> _SEQ_SHIFT
        v = v.where(~(np.isin(unit, float_units) & v.isna().to_numpy()), np.inf)
    return v


def _group_plan(summaries: list, paths: list, mapping: pd.DataFrame, parts: int) -> list:
    """Per staged input: its file, day range and, per label combination (``cid``), the task (broker
    group) that cleans its rows (-1: a counter, or a combination resolve_brokers dropped), the resolved
    broker id and the metric text (missing: :data:`_NULL`). Brokers go to ``parts`` groups in sorted
    blocks; rows without a broker to group 0 (they are only counted)."""
    keep = mapping.loc[~mapping["is_counter"]]
    brokers = sorted(set(keep["new_broker"]) - {_NULL})
    size = max(1, -(-len(brokers) // parts))
    group_of = {b: i // size for i, b in enumerate(brokers)}
    group_of[_NULL] = 0
    lut: dict = {}
    for row in mapping[_KEY + ["new_broker", "is_counter"]].itertuples(index=False):
        lut.setdefault(tuple(row[:len(_KEY)]), (row[-2], bool(row[-1])))
    plan = []
    for s, path in zip(summaries, paths):
        grp, brk, met = [], [], []
        for c in s["combos"]:
            key = tuple(_NULL if v is None else v for v in c[:len(_KEY)])
            hit = lut.get(key)
            grp.append(-1 if hit is None or hit[1] else group_of[hit[0]])
            brk.append(_NULL if hit is None else hit[0])
            met.append(key[_KEY.index("metric")])
        plan.append({"idx": s["idx"], "path": path, "dmin": s.get("dmin"), "grp": np.asarray(grp, dtype=np.int64),
                     "broker": np.asarray(brk, dtype=object), "metric": np.asarray(met, dtype=object)})
    return plan


class _Series:
    """A task's series: the label rules (:func:`.ingest.label_rule`) once per distinct raw ``(broker,
    metric, bundle)``, and one integer (``sid``) per series ``(broker, bundle, metric)`` they keep."""

    def __init__(self):
        self.ids: dict = {}
        self.keys: list = []  # sid -> (broker, bundle, metric)
        self.rules: dict = {}  # (broker, metric, bundle) as read -> (drop key or None, name, sid)

    def rule(self, broker, metric, bundle) -> tuple:
        key = (broker, metric, bundle)
        hit = self.rules.get(key)
        if hit is None:
            drop, name, m, b, br = label_rule(metric, bundle, broker)
            sid = -1
            if drop is None:
                sid = self.ids.get((br, b, m))
                if sid is None:
                    sid = self.ids[(br, b, m)] = len(self.keys)
                    self.keys.append((br, b, m))
            hit = self.rules[key] = (drop, name, sid)
        return hit

    def columns(self):
        """Per sid: broker, bundle (-1: none), metric codes into sorted name lists, rank in the order
        ``(broker, bundle with none first, metric)``, wide column (-1: not a broker metric of no bundle)."""
        bro = sorted({k[0] for k in self.keys})
        bun = sorted({k[1] for k in self.keys if k[1] is not None})
        met = sorted({k[2] for k in self.keys})
        bi, ui, mi = ({v: i for i, v in enumerate(x)} for x in (bro, bun, met))
        wi = {m: i for i, m in enumerate(BROKER_METRICS)}
        s_b = np.array([bi[k[0]] for k in self.keys], dtype=np.int64)
        s_u = np.array([-1 if k[1] is None else ui[k[1]] for k in self.keys], dtype=np.int64)
        s_m = np.array([mi[k[2]] for k in self.keys], dtype=np.int64)
        s_w = np.array([wi.get(k[2], -1) if k[1] is None else -1 for k in self.keys], dtype=np.int64)
        rank = np.empty(len(self.keys), dtype=np.int64)
        rank[np.lexsort((s_m, s_u, s_b))] = np.arange(len(self.keys))
        return {"b": s_b, "u": s_u, "m": s_m, "w": s_w, "rank": rank,
                "bro": np.asarray(bro, dtype=object), "bun": np.asarray(bun, dtype=object),
                "met": np.asarray(met, dtype=object)}


def _codes(col) -> tuple[np.ndarray, list]:
    """A (chunked) string or dictionary column as integer codes (-1: missing) and their values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    idx = arr.indices.to_numpy(zero_copy_only=False)
    idx = np.where(arr.is_null().to_numpy(zero_copy_only=False), -1, idx).astype(np.int64)
    return idx, arr.dictionary.cast(pa.string()).to_pylist()


def _read_group_unit(u: dict, g: int, series: _Series, rep: dict, unknown: set, object_values: bool,
                     float_units) -> dict | None:
    """The rows of broker group ``g`` in one staged input through :func:`.ingest.validate_rows`' rules:
    the label rules once per distinct label combination (its rows counted together), the timestamp and
    value rules with numpy. The kept rows (``seq``, ``timestamp``, ``value``, ``sid``) or None."""
    import pyarrow as pa

    t = _read_stage(u["path"], ["cid", "timestamp", "vnum", "bundle"])
    cid = t.column("cid").to_numpy().astype(np.int64)
    sel = u["grp"][cid] == g
    pos = np.arange(len(cid), dtype=np.int64)
    if not sel.all():
        t, cid, pos = t.filter(pa.array(sel)), cid[sel], pos[sel]
    n = len(cid)
    rep["rows_read"] = rep.get("rows_read", 0) + n
    if not n:
        return None
    bcode, bvals = _codes(t.column("bundle"))
    width = len(bvals) + 1
    combo, uniq = pd.factorize(cid * width + (bcode + 1))
    drop_of = np.empty(len(uniq), dtype=object)
    sid_of = np.empty(len(uniq), dtype=np.int64)
    for k, key in enumerate(uniq.tolist()):
        c, b = divmod(key, width)
        br, mt = u["broker"][c], u["metric"][c]
        drop, name, sid = series.rule(None if br == _NULL else br, None if mt == _NULL else mt,
                                      None if b == 0 else bvals[b - 1])
        drop_of[k], sid_of[k] = drop, sid
        if drop == "dropped_unknown_metric":
            unknown.add(name)
    per = np.bincount(combo, minlength=len(uniq))
    for key in ("dropped_unknown_metric", "dropped_bundle_metric_without_bundle"):
        hit = int(per[drop_of == key].sum())
        if hit:
            rep[key] = rep.get(key, 0) + hit
    rep["dropped_no_broker"] = rep.get("dropped_no_broker", 0) + int(per[drop_of == "dropped_no_broker"].sum())
    sid = sid_of[combo]
    alive = sid >= 0
    ts = t.column("timestamp").to_numpy().astype(float)
    ok_ts = _valid_ts(ts)
    rep["dropped_bad_timestamp"] = rep.get("dropped_bad_timestamp", 0) + int((alive & ~ok_ts).sum())
    alive &= ok_ts
    v = t.column("vnum").to_numpy().astype(float)
    if object_values and u["idx"] in float_units:  # as _raw_from_stage: a NaN of a numeric input is "nan" text
        v = np.where(np.isnan(v), np.inf, v)
    not_num = alive & np.isnan(v)
    not_finite = alive & np.isinf(v)
    neg = alive & (v < 0) & ~not_finite
    for key, m in (("dropped_non_numeric", not_num), ("dropped_not_finite", not_finite), ("dropped_negative", neg)):
        rep[key] = rep.get(key, 0) + int(m.sum())
    keep = alive & ~(not_num | not_finite | neg)
    if not keep.any():
        return None
    return {"seq": (np.int64(u["idx"]) << _SEQ_SHIFT) + pos[keep], "timestamp": ts[keep], "value": v[keep], "sid": sid[keep]}


def _group_days(g: int, plan: list, series: _Series, rep: dict, unknown: set, object_values: bool, float_units):
    """The kept rows of broker group ``g``, read straight from the staged files, one dict of arrays per
    day in day order (``(day, rows)``). An input is read once, when the first of its days is next; a day
    is handed on once no input left to read starts on or before it."""
    def first_day(u):
        return -1 if u["dmin"] is None else u["dmin"]

    units = sorted((u for u in plan if (u["grp"] == g).any()), key=first_day)
    buffer: dict[int, list] = {}
    pos = 0
    while pos < len(units) or buffer:
        if pos < len(units) and (not buffer or first_day(units[pos]) <= min(buffer)):
            rows = _read_group_unit(units[pos], g, series, rep, unknown, object_values, float_units)
            pos += 1
            if rows is None:
                continue
            day = rows["timestamp"].astype(np.int64) // DAY_MS
            if day[0] == day[-1] and (day == day[0]).all():
                buffer.setdefault(int(day[0]), []).append(rows)
            else:
                for d in np.unique(day):
                    buffer.setdefault(int(d), []).append(_take(rows, day == d))
            continue
        d = min(buffer)
        parts = buffer.pop(d)
        yield d, parts[0] if len(parts) == 1 else _cat(parts)


def _clean_group(g: int, plan: list, object_values: bool, float_units, out_dir: str, max_gap: int):
    """Clean and write broker group ``g`` (days in order): the row rules, minutes de-duplicated, short
    gaps filled (each series' last row carried to the next day), long and wide files written per day.
    Yields the summaries for the driver: one per day, then the counts (``validate`` and ``write``)."""
    series = _Series()
    vrep: dict = {}
    unknown: set = set()
    rep: dict = {}
    carry = None
    pending: dict[int, list] = {}
    fu = set(int(x) for x in np.asarray(float_units).tolist())

    def flush(d):
        parts = pending.pop(d)
        return _write_day(d, parts[0] if len(parts) == 1 else _cat(parts), series.columns(), out_dir, g)

    for day, rows in _group_days(g, plan, series, vrep, unknown, object_values, fu):
        got, carry = _dedupe_fill_day(rows, carry, max_gap, rep)
        got_day = got["timestamp"] // DAY_MS
        if len(got_day) and got_day[0] == got_day[-1] and (got_day == got_day[0]).all():
            pending.setdefault(int(got_day[0]), []).append(got)
        else:
            for d in np.unique(got_day):
                pending.setdefault(int(d), []).append(_take(got, got_day == d))
        # a later gap fills at most max_gap minutes back from the next day's start: older days are final
        horizon = (day + 1) * DAY_MS - (max(max_gap, 0) + 1) * MINUTE_MS
        for d in sorted(pending):
            if (d + 1) * DAY_MS <= horizon:
                yield flush(d)
    for d in sorted(pending):
        yield flush(d)
    if unknown:
        vrep["unknown_metrics"] = sorted(unknown)[:50]
    yield {"kind": "validate", "report": vrep}
    yield {"kind": "write", "report": rep}


# ------------------------------------------------------------------------------------ driver side
def _check_out(out: Path, overwrite: bool) -> None:
    """:class:`.dataset.DatasetWriter`'s refusals, checked before the work (it repeats them at the end)."""
    if out.exists():
        if not overwrite and any(out.iterdir()):
            raise InputError("the output directory exists and is not empty (use --force to replace it)",
                             source=str(out))
        if overwrite and not (out / META_FILE).exists() and any(out.iterdir()):
            raise InputError("refusing to replace a directory that is not a Shedlab history dataset",
                             source=str(out))


def _merge_report(rep: dict, parts: list[dict]) -> None:
    """Counts of the tasks summed into ``rep`` in the order :func:`.ingest.normalise` adds them."""
    total: dict = {}
    for p in parts:
        for k, v in p.items():
            if k == "unknown_metrics":
                total[k] = sorted(set(total.get(k, [])) | set(v))
            else:
                total[k] = int(total.get(k, 0)) + int(v)
    if "unknown_metrics" in total:
        total["unknown_metrics"] = total["unknown_metrics"][:50]
    for k in NORMALISE_REPORT_KEYS:
        if k in total:
            rep[k] = total[k]
    for k in total:  # keys a later version adds land at the end
        rep.setdefault(k, total[k])


def _base_report(rep: dict) -> dict:
    """The keys :func:`.ingest.normalise` always writes (those it writes only for a non-zero count are
    added by the tasks that counted them)."""
    empty = pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS})
    probe: dict = {}
    validate_rows(empty, probe)
    dedupe_minutes(pd.DataFrame({"timestamp": pd.Series(dtype="int64"), "broker": [], "metric": [], "value": [],
                                 "bundle": []}), probe)
    probe.setdefault("gaps_filled", 0)
    probe.setdefault("gaps_left", 0)
    probe["rows_written"] = 0
    return {k: 0 for k in probe}


def ingest_spark(inputs, out, *, fmt: str = "auto", metric: str | None = None, max_gap: int = MAX_GAP_MINUTES,
                 overwrite: bool = False, name: str | None = None, cluster: str | None = None,
                 broker_label: str | None = None, broker_map=None, progress=None) -> dict:
    """:func:`.ingest.ingest` on Spark: same arguments, same dataset, same report (module docstring)."""
    from dashboard.spark import StageProgress, job_group, timed_start

    from .layout import WIDE_DIR, _long_fingerprint

    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise InputError("no input files")
    bmap = load_broker_map(broker_map) if isinstance(broker_map, (str, Path)) else broker_map
    out = Path(out)
    _check_out(out, overwrite)
    report_cb = progress or (lambda *a: None)
    n_stages = 4

    def stage(i, text):
        report_cb(i - 1, n_stages, f"stage {i}/{n_stages}: {text}")

    spark, _start_s = timed_start(report_cb)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.ingest-", dir=out.parent))
    stage_dir, data_dir = work / "raw", work / "data"
    stage_dir.mkdir()
    data_dir.mkdir()
    try:
        with job_group(spark, "ingest", f"shedlab ingest {out.name}"), StageProgress(spark, progress):
            # 1. read: one task per input, raw rows staged as Parquet by the executors
            stage(1, f"reading {len(inputs)} input(s) on Spark")
            units = [str(p) for p in inputs]
            sdir, fm, mt, bl = str(stage_dir), fmt, metric, broker_label

            def read(batches):
                for b in batches:
                    res = [_read_unit(int(i), units[int(i)], fm, mt, bl, sdir) for i in b["id"]]
                    yield pd.DataFrame({"summary": [json.dumps(r) for r in res]})

            rows = spark.range(0, len(units), 1, len(units)).mapInPandas(read, "summary string").collect()
            summaries = sorted((json.loads(r["summary"]) for r in rows), key=lambda s: s["idx"])
            for s in summaries:  # the first failing input, as the pandas path (one input after the other)
                if "error" in s:
                    e = s["error"]
                    if e.get("unexpected"):
                        raise RuntimeError(f"{e['source']}: {e['message']}")
                    raise InputError(e["message"], source=e["source"], field=e["field"])
            formats = [{"file": str(p), "format": s["format"], "rows": s["rows"]} for p, s in zip(inputs, summaries)]
            object_values = any(s["object_values"] for s in summaries)
            float_units = np.array([s["idx"] for s in summaries if s["float_origin"]], dtype=np.int64)

            # 2. brokers: the distinct label combinations resolved on the driver; counters collected
            stage(2, "resolving clusters and broker ids")
            combos = pd.DataFrame([r for s in summaries for r in s["combos"]], columns=_KEY + ["_n"])
            combos = combos.astype({c: object for c in _KEY}).groupby(_KEY, dropna=False, sort=False,
                                                                    as_index=False)["_n"].sum()
            for c in _KEY:
                combos[c] = combos[c].where(combos[c].notna(), None)
            report: dict = {}
            mapping = _resolve(combos, cluster, broker_label, bmap, report)
            counters = None
            if mapping["is_counter"].any():  # a few series: through the JVM and collected
                counters = _collect_counters(summaries, stage_dir, mapping, object_values, float_units)
            actions = counter_increases(counters if counters is not None else pd.DataFrame(columns=_RAW_COLUMNS),
                                        report)

            # 3. clean and write, per broker partition and day
            stage(3, "cleaning and writing the dataset (long and wide layouts)")
            brokers = int(mapping.loc[~mapping["is_counter"], "new_broker"].nunique())
            try:
                cores = int(spark.sparkContext.defaultParallelism)
            except Exception:  # noqa: BLE001 - Spark Connect: no sparkContext
                cores = os.cpu_count() or 2
            parts = max(1, min(max(brokers, 1), 2 * cores))
            ov, fu, ddir, mg = object_values, float_units, str(data_dir), max_gap
            plan = _group_plan(summaries, [str(stage_dir / f"unit-{s['idx']:06d}.arrow") for s in summaries],
                               mapping, parts)

            def clean_and_write(batches):
                for b in batches:
                    for g in b["id"]:
                        yield pd.DataFrame({"info": [json.dumps(i) for i in _clean_group(int(g), plan, ov, fu, ddir, mg)]})

            infos = spark.range(0, parts, 1, parts).mapInPandas(clean_and_write, "info string").collect()
        stage(4, "writing the metadata")
        infos = [json.loads(r["info"]) for r in infos]
        days = [i for i in infos if i["kind"] == "day"]
        base = _base_report(report)
        _merge_report(report, [base] + [i["report"] for i in infos if i["kind"] == "validate"]
                      + [i["report"] for i in infos if i["kind"] == "write"])
        rows_written = sum(d["rows"] for d in days)
        report["rows_written"] = rows_written
        if rows_written == 0:
            raise InputError("no usable rows after cleaning: " + json.dumps(report), source=", ".join(map(str, inputs)))
        report["inputs"] = formats
        report["actions"] = {"rows": int(len(actions)), "counters": sorted(set(actions["counter"]))}
        w = DatasetWriter(out, overwrite=overwrite)
        for d in sorted(data_dir.iterdir()):
            os.replace(d, out / d.name)
        w.rows = rows_written
        w.days = sorted({d["day"] for d in days})
        w.brokers = set().union(*(d["brokers"] for d in days))
        w.metrics = set().union(*(d["metrics"] for d in days))
        w.has_bundles = any(d["has_bundles"] for d in days)
        w.start_ms, w.end_ms = min(d["start"] for d in days), max(d["end"] for d in days)
        meta = w.close(source="ingest", params={"max_gap_minutes": max_gap, "format": fmt, "cluster": cluster,
                                                "broker_label": broker_label}, report=report, name=name)
        write_actions(actions, out)
        info = {"dir": WIDE_DIR, "rows": int(sum(d["wide_rows"] for d in days)), "fingerprint": _long_fingerprint(out)}
        meta.setdefault("layouts", {})["wide"] = info
        (out / META_FILE).write_text(json.dumps(meta, indent=1))
        report_cb(n_stages, n_stages, f"stage {n_stages}/{n_stages}: done, {rows_written:,} rows")
        return meta
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _resolve(combos: pd.DataFrame, cluster, broker_label, bmap, report: dict) -> pd.DataFrame:
    """:func:`.identity.resolve_brokers` on the distinct label combinations (weighted by their row counts
    where the report counts rows): the mapping ``_KEY → is_counter, new_broker``."""
    df = combos.copy()
    df["_k"] = np.arange(len(df))
    for c in _RAW_COLUMNS:
        if c not in df.columns:
            df[c] = None
    for c in _KEY:
        df[c] = df[c].astype(object).where(df[c].notna(), None)
    res = resolve_brokers(df, broker_label=broker_label, broker_map=bmap, cluster=cluster, report=report)
    if cluster is not None:  # rows, not combinations
        cl = _clean_col(df["cluster"])
        report["rows_without_cluster"] = int(df["_n"][cl.isna()].sum())
        report["rows_other_clusters"] = int(df["_n"][~(cl.isna() | (cl == cluster))].sum())
    m = res[_KEY].copy()
    for c in _KEY:
        m[c] = m[c].astype(object).where(m[c].notna(), _NULL)
    # the key's own columns are the raw labels: resolve_brokers rewrote broker and cluster in place
    orig = df.set_index("_k").loc[res["_k"].to_numpy(), _KEY].reset_index(drop=True)
    for c in _KEY:
        m[c] = orig[c].astype(object).where(orig[c].notna(), _NULL).to_numpy()
    m["new_broker"] = res["broker"].astype(object).where(res["broker"].notna(), _NULL).to_numpy()
    m["new_cluster"] = res["cluster"].astype(object).where(res["cluster"].notna(), None).to_numpy()
    m["is_counter"] = res["metric"].astype(str).str.strip().isin(COUNTER_ALIASES.keys()).to_numpy()
    return m.reset_index(drop=True)


def _collect_counters(summaries: list, stage_dir: Path, mapping: pd.DataFrame, object_values: bool,
                      float_units) -> pd.DataFrame:
    """The load manager's counter rows (a few series), resolved, in reading order, read on the driver."""
    import pyarrow as pa

    lut = {tuple(r[:len(_KEY)]): (r[-2], r[-1]) for r in mapping.loc[mapping["is_counter"], _KEY + [
        "new_broker", "new_cluster"]].itertuples(index=False)}
    cols = ["timestamp", "vnum", "metric", "result", "reason", "event"]
    frames = []
    for s in summaries:
        hit = [lut.get(tuple(_NULL if v is None else v for v in c[:len(_KEY)])) for c in s["combos"]]
        if not any(h is not None for h in hit):
            continue
        t = _read_stage(str(stage_dir / f"unit-{s['idx']:06d}.arrow"), ["cid"] + cols)
        cid = t.column("cid").to_numpy().astype(np.int64)
        sel = np.array([h is not None for h in hit])[cid]
        t = t.filter(sel)
        m = pd.DataFrame({c: t.column(c).cast(pa.string() if c not in cols[:2] else pa.float64()).to_numpy(
            zero_copy_only=False) for c in cols})
        got = [hit[c] for c in cid[sel]]
        m["seq"] = (np.int64(s["idx"]) << _SEQ_SHIFT) + np.flatnonzero(sel)
        m["new_broker"] = [g[0] for g in got]
        m["new_cluster"] = [g[1] for g in got]
        frames.append(m)
    m = pd.concat(frames, ignore_index=True)
    return pd.DataFrame({"timestamp": m["timestamp"].to_numpy(), "value": _raw_from_stage(m, object_values, float_units).to_numpy(),
                         "metric": m["metric"].to_numpy(), "cluster": m["new_cluster"].to_numpy(),
                         "broker": m["new_broker"].where(m["new_broker"] != _NULL, None).to_numpy(),
                         "result": m["result"].to_numpy(), "reason": m["reason"].to_numpy(),
                         "event": m["event"].to_numpy()})
