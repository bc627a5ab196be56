"""Big LoadData JSON straight into the columnar view: one fast parse, arrays built once.

:func:`engine.io.load_data_from_json` builds one Python object per bundle stat and per bundle's
BundleData (2.1 M validated field reads on a 1,000-broker, 100,000-bundle snapshot). The two bulk
parts of a LoadData JSON — every broker's ``lastStats`` entries and the ``bundleData`` entries — are
read here as columns instead: each field of all entries is pulled in one pass, checked with numpy
against the same rules (:mod:`engine.limits`: finite, not negative (every finite double); counts
integral and at most ``MAX_COUNT``, ``cacheSize`` at most ``MAX_JAVA_LONG``; ``maxSamples`` at least 1)
and kept as arrays. Everything else in the snapshot (the brokers' own fields, time averages,
preallocations, recently unloaded bundles, quotas, policies, strategy state) is small and is read by
the ordinary reader, so its rules, messages and warnings are the same by construction.

Exactness rules
---------------
* **Any doubt → the ordinary path.** The fast path accepts only inputs it can prove the ordinary
  reader accepts (numbers of JSON number type, entries holding exactly the known keys, ...). On
  anything else — a bad value, a number written as text, ``null``, an unknown key inside an entry,
  a JSON the fast parser refuses (``orjson`` is stricter than ``json``: lone surrogates, integers
  beyond 64 bits) — it returns ``None`` and the caller reads the snapshot the old way, which raises the
  usual :class:`~engine.errors.InputError` naming the file and field, or accepts it. So every existing
  rule and message holds, including the limits of :mod:`engine.limits` and :mod:`engine.bounded`
  (size first, then nesting: the depth is measured on the parsed document, the bulk entries being
  flat by the check above).
* **Same numbers.** Sums are taken in the order the object model takes them (``np.bincount`` adds
  sequentially, as ``TimeAverageBrokerData.reset`` does; report defaults use Python's ``sum``);
  arrays are float64 as the objects' floats are. ``tests/engine/test_fastload.py`` checks the view,
  the materialised snapshot and the decisions against the ordinary path.
* **Objects on demand.** The result is a :class:`ColumnarLoadData`: a :class:`~engine.model.LoadData`
  whose ``brokers`` (their ``lastStats``) and ``bundle_data`` are built from the arrays the first time
  anything reads them; from then on it is an ordinary LoadData (its view is rebuilt from the objects,
  since they may have been changed). Until then :meth:`engine.view.LoadView.from_load_data` returns a
  copy of the view built here, ``now``, ``owners`` and ``preallocations`` answer from the arrays, and
  pickling (the dashboard's diskcache) stores the arrays.

Used for inputs of at least :data:`FAST_MIN_BYTES` (:func:`engine.io.load_snapshot_bytes`, the
Tuner's upload); ``load_data_fast`` can be called on any size.

Two decoders, tried in turn on the bytes (:func:`snapshot_bytes_fast`): :func:`load_bytes_typed`
(``msgspec`` decodes the bulk entries straight into records that hold exactly the Jackson fields as JSON
numbers — no dict per entry; 64 MB in ~0.35 s to arrays), then ``orjson`` into dicts and
:func:`load_data_fast` (which also accepts what the typed records refuse but the reader may take, e.g. a
number written as text, and otherwise falls back in turn). Both end in the same assembly.

From :data:`FORK_MIN_BYTES` on Linux the one-pass typed decode runs in two processes
(:func:`_load_whole_forked`): a forked child decodes the bundle data while this process decodes and
reads the reports, each field by the type the one-process decode gives it; anything either half cannot
take, or a child that fails, leaves the document to the one-process decode, so the answers are the same.
"""
from __future__ import annotations

import typing
from itertools import chain
from operator import attrgetter

import numpy as np

from .bounded import check_size
from .errors import InputError
from .fastcheck import _check_bundle_data, _check_stats, _depth, _Fallback, _numbers, _rows
from .forked import in_two_processes
from .gcquiet import no_gc
from .limits import MAX_COUNT, limit
from .loaddata_json import TOP_KEYS
from .model import (
    LocalBrokerData,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    BundleData,
    LoadData,
    NamespaceBundleStats,
    TimeAverageMessageData,
    default_bundle_data,
)
from .packed import pack_names, unpack_names

__all__ = ["FAST_MIN_BYTES", "ColumnarLoadData", "parse_json_fast", "load_data_fast", "load_bytes_typed",
           "snapshot_bytes_fast"]

#: inputs at least this big take the fast path (smaller ones gain nothing measurable)
FAST_MIN_BYTES = 1 << 20
#: a LoadData JSON at least this big is decoded in two processes where this system can fork
#: (:func:`_load_whole_forked`; measured on two cores: ~10 % less from 30 MB, nothing gained at 12 MB)
FORK_MIN_BYTES = 24 << 20
#: seconds the decoding waits for the child's half before it decodes the document in one process
FORK_TIMEOUT_S = 300.0

_STAT_KEYS = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "consumerCount", "producerCount",
              "topics", "cacheSize")
_TAMD_KEYS = ("maxSamples", "numSamples", "msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")
_BD_KEYS = ("shortTermData", "longTermData", "topics")
_COUNT_KEYS = frozenset(("consumerCount", "producerCount", "topics", "cacheSize", "maxSamples", "numSamples"))
_BULK = frozenset(("lastStats", "bundleStats", "bundles"))
#: a report's other fields and the document's other top-level keys decoded in the one-pass decode
#: (:func:`_load_whole`); a document with any other key is read key by key (:func:`_load_typed`)
_REPORT_KEYS = ("webServiceUrl", *(k for k in LocalBrokerData.JSON_KEYS if k not in _BULK))  # the id's fallback too
_TOP_KEYS = TOP_KEYS


# ---------------------------------------------------------------------------------------- parsing
def parse_json_fast(raw: bytes, source: str):
    """``orjson`` parse of ``raw`` (a UTF-8 BOM tolerated) after the size check; ``None`` when orjson
    refuses it (the caller's ordinary parse then gives the usual message, or accepts what orjson is
    stricter about)."""
    check_size(len(raw), source)
    try:
        import orjson
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        return None
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    try:
        with no_gc():
            return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


# ---------------------------------------------------------------------------------------- the snapshot
class ColumnarLoadData(LoadData):
    """A :class:`LoadData` read by :func:`load_data_fast`: bulk parts kept as arrays until read.

    ``brokers`` and ``bundle_data`` are properties: the first read builds the objects (then this is an
    ordinary LoadData). :meth:`prebuilt_view` gives the columnar view while nothing was built.
    """

    # built by load_data_fast (no dataclass __init__)
    _built_brokers = False
    _built_bundles = False

    # ---------------------------------------------------------------- lazy object model
    @property
    def brokers(self) -> dict:
        if not self._built_brokers:
            self._build_brokers()
        return self._brokers

    @brokers.setter
    def brokers(self, value) -> None:
        self._brokers = value
        self._built_brokers = True
        self._view = None

    @property
    def bundle_data(self) -> dict:
        if not self._built_bundles:
            self._build_bundles()
        return self._bundle_data

    @bundle_data.setter
    def bundle_data(self, value) -> None:
        self._bundle_data = value
        self._built_bundles = True
        self._view = None

    def _build_brokers(self) -> None:
        c = self._cols
        names, idx, starts = c["names"], c["stat_idx"].tolist(), c["stat_starts"]
        rates = c["stats"][:, :4].tolist()
        counts = c["stats"][:, 4:].astype(np.int64).tolist()
        for j, bd in enumerate(self._brokers.values()):
            a, b = int(starts[j]), int(starts[j + 1])
            bd.local.last_stats = {names[idx[i]]: NamespaceBundleStats(*rates[i], *counts[i]) for i in range(a, b)}
        self._built_brokers = True
        self._view = None

    def _build_bundles(self) -> None:
        c = self._cols
        st, lt = c["st"].tolist(), c["lt"].tolist()
        stn, ltn = c["st_n"].tolist(), c["lt_n"].tolist()
        stm, ltm = c["st_max"].tolist(), c["lt_max"].tolist()
        top = c["topics"].tolist()
        self._bundle_data = {
            b: BundleData(TimeAverageMessageData(stm[i], stn[i], *st[i]),
                          TimeAverageMessageData(ltm[i], ltn[i], *lt[i]), top[i])
            for i, b in enumerate(c["names"][:c["n_bd"]])}
        self._built_bundles = True
        self._view = None

    @property
    def materialised(self) -> bool:
        """Whether the object model was built (then this is an ordinary LoadData)."""
        return self._built_brokers or self._built_bundles

    # ---------------------------------------------------------------- answers from the arrays
    @property
    def now(self) -> int:
        if self.now_ms is not None:
            return int(self.now_ms)
        return max((b.local.last_update for b in self._brokers.values()), default=0)

    def owners(self) -> dict:
        out: dict = {}
        for bid, bd in self._brokers.items():
            for b in bd.local.bundles:
                out.setdefault(b, []).append(bid)
        return out

    def preallocations(self) -> dict:
        return {bid: bd.preallocated for bid, bd in self._brokers.items() if bd.preallocated}

    def ensure_bundle_data(self) -> None:
        if self.materialised:
            super().ensure_bundle_data()
        # else: the derived bundle data is in the arrays already (load_data_fast)

    def broker_reports(self) -> dict:
        """broker id -> its report (:class:`~engine.model.BrokerData`) for the fields read at load time
        (version, resources, ...), without building every ``lastStats`` entry: read ``brokers`` for those."""
        return self._brokers

    def stats_columns(self) -> dict | None:
        if self.materialised:
            return None
        c = self._cols
        return {"reports": self._brokers, "names": c["names"], "name_idx": c["stat_idx"], "starts": c["stat_starts"],
                "stats": c["stats"], "view": self.prebuilt_view()}

    def counts(self) -> tuple[int, int]:
        """(brokers, bundles in bundleData) without building objects."""
        return len(self._brokers), self._cols["n_bd"]

    def prebuilt_view(self):
        """A fresh :class:`~engine.view.LoadView` over the arrays built at read time, or ``None`` once
        the object model was built (it may have changed since)."""
        v = self._view
        if v is None or self.materialised:
            return None
        from .view import LoadView

        return LoadView(**{f: getattr(v, f) for f in v.__dataclass_fields__})

    def __getstate__(self):
        # the bundle names once, as one text (engine.packed); the view's list when it is the same list
        state = dict(self.__dict__)
        cols = state.get("_cols")
        if cols is not None:
            view = state.get("_view")
            cols = state["_cols"] = dict(cols)
            cols["names"] = None if view is not None and cols["names"] is view.bundles else pack_names(cols["names"])
        return state

    def __setstate__(self, state):
        cols = state.get("_cols")
        if cols is not None:
            cols["names"] = state["_view"].bundles if cols["names"] is None else unpack_names(cols["names"])
        self.__dict__.update(state)


def _empty_stats(n: int) -> np.ndarray:
    return np.zeros((n, 8))


def load_data_fast(obj, source: str) -> ColumnarLoadData | None:
    """A :class:`ColumnarLoadData` from parsed LoadData JSON (the ``{"brokers": ...}`` shape), or
    ``None`` when the ordinary reader must decide (see the module docstring)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("brokers"), dict):
        return None
    try:
        with no_gc():
            return _load(obj, source)
    except _Fallback:
        return None
    except InputError:
        return None  # the ordinary reader names the first problem in its own order


def _load(obj: dict, source: str) -> ColumnarLoadData:
    parts, stat_dicts = _Parts(), []
    for bid, rep in obj["brokers"].items():
        if not isinstance(rep, dict):
            raise _Fallback("a report that is not an object")
        stats = rep.get("lastStats")
        if stats is None:
            stats = rep.get("bundleStats")
            if stats is None:
                stats = {}
        if not isinstance(stats, dict) or ("lastStats" in rep and "bundleStats" in rep):
            raise _Fallback("lastStats not an object, or both lastStats and bundleStats")
        listed = rep.get("bundles")
        if listed is not None and (type(listed) is not list or (listed and set(map(type, listed)) != {str})):
            raise _Fallback("bundles not a list of names")
        stat_dicts.extend(parts.add_report(bid, {k: v for k, v in rep.items() if k not in _BULK}, stats, listed))
    if stat_dicts and set(map(type, stat_dicts)) != {dict}:
        raise _Fallback("a stats entry that is not an object")
    stats_a = _numbers(_rows(stat_dicts, _STAT_KEYS, len(_STAT_KEYS)), 8) if stat_dicts else _empty_stats(0)
    del stat_dicts
    bd_obj = obj.get("bundleData") or {}
    if not isinstance(bd_obj, dict):
        raise _Fallback("bundleData not an object")
    bd_vals = list(bd_obj.values())
    if bd_vals and set(map(type, bd_vals)) != {dict}:
        raise _Fallback("a BundleData that is not an object")
    bd_rows = _rows(bd_vals, _BD_KEYS, 3)
    if bd_rows:
        sts, lts, tops = zip(*bd_rows)
        if set(map(type, chain(sts, lts))) != {dict}:
            raise _Fallback("time averages not objects")
        st_a = _numbers(_rows(list(sts), _TAMD_KEYS, 6), 6)
        lt_a = _numbers(_rows(list(lts), _TAMD_KEYS, 6), 6)
        top_a = _numbers([tops], len(tops))[0]
    else:
        st_a = lt_a = np.zeros((0, 6))
        top_a = np.zeros(0)
    del bd_rows, bd_vals
    parts.finish({k: v for k, v in obj.items() if k != "bundleData" and k != "brokers"}, stats_a, list(bd_obj),
                 _given_columns(st_a, lt_a, top_a))
    return _assemble(source, parts)


class _Parts:
    """What a decoder gathers from a LoadData JSON document, named, for :func:`_assemble`: each report
    without its bulk keys (``slim_brokers``), the lastStats entries' names (broker by broker; ``per_broker``
    counts) and values (``stats_a``, ``_STAT_KEYS`` columns), each broker's bundle list, the bundleData
    entries' names and their values as the snapshot's columns (:func:`_given_columns`, checked there), and
    the document without ``brokers`` and ``bundleData`` (``slim_obj``). The lastStats values are checked
    when the decoder hands them over (:meth:`finish`)."""

    def __init__(self):
        self.slim_brokers: dict = {}
        self.stat_names: list = []
        self.per_broker: list = []
        self.bundle_lists: list = []
        self.from_stats: list = []  # per report: its bundle list is its lastStats keys, in their order
        self.list_depth = 0  # 4 when some report lists its bundles: {"brokers": {id: {"bundles": [

    def add_report(self, bid, slim: dict, stats: dict, listed):
        """One report: ``slim`` its own fields, ``stats`` its lastStats (or bundleStats) map, ``listed`` its
        bundle names (None when absent). Returns the stats' values (the decoder makes them columns)."""
        if listed is not None:
            self.list_depth = 4
        from_stats = not listed and bool(stats)
        if from_stats:  # the reader's rule: no bundles listed -> the lastStats keys (unique, as keys)
            self.bundle_lists.append(list(stats))
        else:  # the reader keeps the first of repeated names (LocalBrokerData.from_json)
            names = list(dict.fromkeys(listed or ()))
            self.bundle_lists.append(names)
            # a report that lists its lastStats keys, in their order (as a broker writes both): its bundles
            # are the lastStats rows already looked up (_owned_from_stats), not a million names again
            from_stats = len(names) == len(stats) and bool(names) and names == list(stats)
        self.from_stats.append(from_stats)
        self.slim_brokers[bid] = slim
        self.stat_names.extend(stats)
        self.per_broker.append(len(stats))
        return stats.values()

    def finish(self, slim_obj: dict, stats_a, bd_names: list, given) -> None:
        """The document's other keys, the lastStats values (checked against the reader's ranges), the
        bundleData names and their columns: ``given``, a :func:`_given_columns` dict, or a function that
        returns it when first needed (:meth:`given_columns`; it may set :attr:`name_facts`)."""
        _check_stats(stats_a)
        self.slim_obj, self.stats_a, self.bd_names, self._given = slim_obj, stats_a, bd_names, given
        self.name_facts = None  # engine.view.namespace_facts of bd_names, when the decoder computed them
        self.index = _Index(bd_names)  # grows in _assemble; a probe copies it first (a copy is ~10x cheaper)

    def given_columns(self) -> dict:
        if callable(self._given):
            self._given = self._given()
        return self._given


def _assemble(source: str, parts: _Parts, base: LoadData | None = None) -> ColumnarLoadData:
    """The snapshot from the parts a decoder gathered: everything but the bulk by the ordinary reader,
    then the report totals, the bundle data, the time averages and the view from the columns.

    Each bundle name is looked up once per place it occurs (bundleData key, lastStats key, listed bundle),
    in one growing index: the view's bundle order is bundleData's names, then the lastStats bundles without
    bundle data (first report first), then the bundles only listed (brokers in Java map order)."""
    _check_bulk_depth(parts)
    if base is None:  # (else read already from the reports, while the bundle data was decoded)
        base = _slim_base(source, parts.slim_obj, parts, len(parts.stats_a))
    starts = np.zeros(len(parts.slim_brokers) + 1, dtype=np.int64)
    np.cumsum(parts.per_broker, out=starts[1:])
    _report_totals(base, parts, starts)
    nidx = parts.index
    idx = list(map(nidx.get, parts.stat_names))
    derived_rows = []
    if None in idx:  # lastStats bundles without bundle data: indexed after bundleData's, in report order
        for i in [i for i, x in enumerate(idx) if x is None]:
            name = parts.stat_names[i]
            got = nidx.get(name)
            if got is None:
                got = nidx[name]
                derived_rows.append(i)
            idx[i] = got
    stat_idx = np.array(idx, dtype=np.int64)
    del idx
    cols = _bundle_columns(parts, base.resource_quotas, derived_rows)
    from .javacompat import java_map_order

    order = java_map_order(base.brokers, concurrent=True)
    _time_averages(base, parts, cols, stat_idx)
    return _columnar(base, parts, cols, order, nidx, stat_idx, starts)


class _Index(dict):
    """bundle name -> its index in :attr:`names`; a name not yet indexed is appended when looked up with
    ``[]`` (``get`` only reads)."""

    def __init__(self, names: list):
        super().__init__(zip(names, range(len(names))))
        self.names = list(names)

    def __missing__(self, name):
        i = self[name] = len(self.names)
        self.names.append(name)
        return i


def _check_bulk_depth(parts: _Parts) -> None:
    """The nesting the bundle data adds (its entries are flat: checked by the decoders)."""
    if (4 if parts.bd_names else 0) > limit("SHEDLAB_MAX_NESTING"):
        raise _Fallback("nested too deep")


def _slim_base(source: str, top: dict, parts: _Parts, n_stats: int) -> LoadData:
    """The document's small keys (``top``) and the reports without their bulk, read by the ordinary reader,
    each broker given its bundle list (kept out of the reader: a million names); the nesting measured on
    them as parsed, with the report lists (``parts.list_depth``) and the lastStats entries (``n_stats``)."""
    from .loaddata_json import load_data_from_json

    cap = limit("SHEDLAB_MAX_NESTING")
    slim_obj = dict(top, brokers=parts.slim_brokers)
    if max(_depth(slim_obj, cap), parts.list_depth, 5 if n_stats else 0) > cap:
        raise _Fallback("nested too deep")
    base = load_data_from_json(slim_obj, source)
    if type(base) is not LoadData:
        raise _Fallback("not a modular LoadData")
    for bd, listed in zip(base.brokers.values(), parts.bundle_lists):
        bd.local.bundles = listed
    return base


def _warn_shared(base: LoadData, owned: list, nk: int) -> None:
    """The ordinary reader's warning on each bundle listed by several brokers (``owned``: each broker's
    listed bundles as indices of the view's ``nk`` bundles, no index twice in one list)."""
    if owned and np.bincount(np.concatenate(owned), minlength=nk).max(initial=0) > 1:
        for b, bs in base.owners().items():
            if len(bs) > 1:
                base.warnings.append(f"{base.source}: bundle {b} is listed by {len(bs)} brokers ({', '.join(bs)}): "
                                     "an ownership change in progress; Pulsar considers it on each")


def _report_totals(base: LoadData, parts: _Parts, starts) -> None:
    """Report fields that default to sums over the report's lastStats, where the report leaves them out."""
    totals = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut", "numTopics", "numConsumers",
              "numProducers", "numBundles")
    cols = int_cols = None  # as lists, only when some report leaves a total out
    stats_a = parts.stats_a
    for j, (bid, bd) in enumerate(base.brokers.items()):
        rep, L = parts.slim_brokers[bid], bd.local
        a, b = int(starts[j]), int(starts[j + 1])
        if b == a or all(rep.get(k) is not None for k in totals):
            continue
        if cols is None:
            cols = {k: stats_a[:, i].tolist() for i, k in enumerate(_STAT_KEYS[:4])}
            int_cols = {k: stats_a[:, 4 + i].astype(np.int64).tolist() for i, k in
                        enumerate(("consumerCount", "producerCount", "topics"))}
        for attr, key in (("msg_throughput_in", "msgThroughputIn"), ("msg_throughput_out", "msgThroughputOut"),
                          ("msg_rate_in", "msgRateIn"), ("msg_rate_out", "msgRateOut")):
            if rep.get(key) is None:
                setattr(L, attr, float(sum(cols[key][a:b])))  # overflows to inf as the broker's sum does
        for attr, key, col in (("num_topics", "numTopics", "topics"), ("num_consumers", "numConsumers", "consumerCount"),
                               ("num_producers", "numProducers", "producerCount")):
            if rep.get(key) is None:
                v = sum(int_cols[col][a:b])
                if v > MAX_COUNT:
                    raise _Fallback("a report count out of range")
                setattr(L, attr, v)
        if rep.get("numBundles") is None:
            L.num_bundles = b - a


def _given_columns(st_a, lt_a, top_a) -> dict:
    """The bundleData values (``_TAMD_KEYS`` columns, topics), checked against the reader's ranges, as the
    snapshot's columns: the four values of each time average, its sample counts, the topics."""
    _check_bundle_data(st_a, lt_a, top_a)
    return {"st": np.ascontiguousarray(st_a[:, 2:]), "lt": np.ascontiguousarray(lt_a[:, 2:]),
            "st_n": st_a[:, 1].astype(np.int64), "lt_n": lt_a[:, 1].astype(np.int64),
            "st_max": st_a[:, 0].astype(np.int64), "lt_max": lt_a[:, 0].astype(np.int64),
            "topics": top_a.astype(np.int64)}


def _bundle_columns(parts: _Parts, quotas: dict, derived_rows: list) -> dict:
    """The bundle data as columns: the given entries, then those derived from the first report of each
    bundle without one (``derived_rows``: its lastStats rows; ``ensure_bundle_data``: the default, or the
    quota's, updated once)."""
    given = parts.given_columns()
    n_given = len(parts.bd_names)
    nd = len(derived_rows)
    if not nd:
        return {"n_bd": n_given, **given}
    stats_a, stat_names = parts.stats_a, parts.stat_names
    cols = {k: np.concatenate([a, np.empty((nd, *a.shape[1:]), dtype=a.dtype)]) for k, a in given.items()}
    st, lt, st_n, lt_n = cols["st"], cols["lt"], cols["st_n"], cols["lt_n"]
    rows = np.asarray(derived_rows, dtype=np.int64)
    sample = stats_a[rows][:, [1, 3, 0, 2]]  # thrIn, thrOut, rateIn, rateOut
    cols["st_max"][n_given:], cols["lt_max"][n_given:] = NUM_SHORT_SAMPLES, NUM_LONG_SAMPLES
    cols["topics"][n_given:] = stats_a[rows, 6]
    for k, i in enumerate(derived_rows):  # default_bundle_data(quota) then one update(sample)
        q = quotas.get(stat_names[i])
        if q:
            d = default_bundle_data(q)
            r = stats_a[i].tolist()
            d.update(NamespaceBundleStats(*r[:4]))
            st[n_given + k] = d.short_term.values()[2:]
            lt[n_given + k] = d.long_term.values()[2:]
            st_n[n_given + k], lt_n[n_given + k] = d.short_term.num_samples, d.long_term.num_samples
        else:  # the default (numSamples 0) updated once: numSamples 1, each value the sample's
            st[n_given + k] = sample[k]
            lt[n_given + k] = sample[k]
            st_n[n_given + k] = lt_n[n_given + k] = 1
    return {"n_bd": n_given + nd, **cols}  # rows: bundleData's bundles, then the derived ones


def _time_averages(base: LoadData, parts: _Parts, cols: dict, stat_idx) -> None:
    """Time averages not given: sums over each broker's lastStats bundles (TimeAverageBrokerData.reset)."""
    blist = list(base.brokers.values())
    nb_in = len(blist)
    stat_broker = np.repeat(np.arange(nb_in), parts.per_broker)
    need = np.array([not any(bd.time_average.values()) and parts.per_broker[j] > 0 for j, bd in enumerate(blist)],
                    dtype=bool)
    if not need.any():
        return
    sel = need[stat_broker]
    sb, si = stat_broker[sel], stat_idx[sel]
    sums = [np.bincount(sb, weights=arr[si, c], minlength=nb_in) for arr in (cols["st"], cols["lt"]) for c in range(4)]
    for j in np.flatnonzero(need).tolist():
        ta = blist[j].time_average
        (ta.short_term_msg_throughput_in, ta.short_term_msg_throughput_out, ta.short_term_msg_rate_in,
         ta.short_term_msg_rate_out, ta.long_term_msg_throughput_in, ta.long_term_msg_throughput_out,
         ta.long_term_msg_rate_in, ta.long_term_msg_rate_out) = (float(s[j]) for s in sums)


def _columnar(base: LoadData, parts: _Parts, cols: dict, order, nidx: _Index, stat_idx,
              starts) -> ColumnarLoadData:
    """The :class:`ColumnarLoadData` over ``base`` and the columns, with its view (``LoadView.from_load_data``
    from the arrays); the bundles only listed by reports join the index here."""
    from .view import LoadView, broker_columns, remember_bundle_index, remember_namespace_facts

    bundles = nidx.names
    per_broker = broker_columns(base.brokers, order, nidx, bundles, _owned_from_stats(base, parts, stat_idx, starts,
                                                                                      bundles))
    nk, m = len(bundles), cols["n_bd"]
    _warn_shared(base, per_broker["owned"], nk)
    st, lt, st_n, lt_n, topics = cols["st"], cols["lt"], cols["st_n"], cols["lt_n"], cols["topics"]
    if nk == m:  # every bundle has bundle data: the view shares the arrays (one copy in memory and pickles)
        v_st, v_lt, v_stn, v_ltn, v_top = st, lt, st_n, lt_n, topics
    else:
        v_st, v_lt = np.zeros((nk, 4)), np.zeros((nk, 4))
        v_stn, v_ltn = np.zeros(nk, dtype=np.int64), np.zeros(nk, dtype=np.int64)
        v_top = np.zeros(nk, dtype=np.int64)
        v_st[:m], v_lt[:m], v_stn[:m], v_ltn[:m], v_top[:m] = st, lt, st_n, lt_n, topics
    inbd = np.zeros(nk, dtype=bool)
    inbd[:m] = True
    remember_bundle_index(bundles, dict(nidx))  # a plain dict: looking a name up no longer adds it
    if parts.name_facts is not None and nk == len(parts.bd_names):  # (the names the decoder's facts are of)
        remember_namespace_facts(bundles, parts.name_facts)
    ld = ColumnarLoadData.__new__(ColumnarLoadData)
    state = dict(base.__dict__)
    state["_brokers"] = state.pop("brokers")
    state["_bundle_data"] = None
    state.pop("bundle_data", None)
    ld.__dict__.update(state)
    ld._cols = {"names": bundles, "stat_idx": stat_idx, "stat_starts": starts, "stats": parts.stats_a, "n_bd": m,
                "st": st, "lt": lt, "st_n": st_n, "lt_n": lt_n, "st_max": cols["st_max"], "lt_max": cols["lt_max"],
                "topics": topics}
    ld._view = LoadView(
        now_ms=ld.now, brokers=order, **per_broker, bundles=bundles,
        st=v_st, lt=v_lt, st_samples=v_stn, lt_samples=v_ltn, topics=v_top, in_bundle_data=inbd,
        resource_quotas=dict(base.resource_quotas))
    return ld


def _owned_from_stats(base: LoadData, parts: _Parts, stat_idx, starts, names: list) -> dict | None:
    """broker id -> (its bundles' indices, their names as the view's ``str`` objects) for each report whose
    bundle list is its lastStats keys: those were looked up once already (``stat_idx``), in the same
    order, so :func:`~engine.view.broker_columns` need not look a million names up again."""
    if not any(parts.from_stats):
        return None
    shared = list(map(names.__getitem__, stat_idx.tolist()))
    bounds = starts.tolist()
    return {bid: (stat_idx[bounds[j]:bounds[j + 1]].copy(), shared[bounds[j]:bounds[j + 1]])
            for j, bid in enumerate(base.brokers) if parts.from_stats[j]}


def snapshot_bytes_fast(raw: bytes, source: str):
    """A :class:`ColumnarLoadData` from the bytes of a LoadData JSON file, or ``None`` (the caller
    reads it the ordinary way): not big enough to gain, not a ``{"brokers": ...}`` object, or
    anything :func:`load_data_fast` leaves to the ordinary reader.

    First by :func:`load_bytes_typed` (the bulk entries decoded straight into typed records); when that
    cannot prove the answer, by the ``orjson`` parse and :func:`load_data_fast`."""
    if len(raw) < FAST_MIN_BYTES or raw.lstrip()[:1] not in (b"{", b"\xef"):
        return None
    typed = _bytes_typed(raw, source)
    if typed is not None:
        return typed if typed is not _NOT_LOAD_DATA else None
    obj = parse_json_fast(raw, source)
    if obj is None:
        return None
    return load_data_fast(obj, source)


# ---------------------------------------------------------------------------------------- typed decoding
_NOT_LOAD_DATA = object()  # load_bytes_typed: a well-formed JSON object without a "brokers" object
_TYPED: dict = {}


def _typed_decoders():
    """``msgspec`` decoders of the two bulk shapes (built once): a lastStats map of
    ``NamespaceBundleStats`` records and a bundleData map of ``BundleData`` records, each record holding
    exactly the Jackson fields (``forbid_unknown_fields``, every field required) as JSON numbers
    (``float`` accepts integers and refuses strings, booleans and ``null``), so a document that decodes
    is one the orjson path's key and type checks accept. The count fields are ``int | float``: a JSON
    integer stays an ``int``, and the small ones (most counts) are Python's shared objects, not one new
    float each (a million bundles: ~7 million fewer objects made and freed); the arrays hold the same
    doubles, as int-to-float and the decoder's own reading both round correctly."""
    if not _TYPED:
        import msgspec
        import msgspec.structs  # noqa: F401  (astuple, in _records)

        num = int | float  # a count: an int when written as one
        ns = {"__annotations__": {k: num if k in _COUNT_KEYS else float for k in _STAT_KEYS}}
        stat = type("_Stats", (msgspec.Struct,), ns, forbid_unknown_fields=True, gc=False)
        tamd = type("_Tamd", (msgspec.Struct,),
                    {"__annotations__": {k: num if k in _COUNT_KEYS else float for k in _TAMD_KEYS}},
                    forbid_unknown_fields=True, gc=False)
        bdat = type("_BundleData", (msgspec.Struct,),
                    {"__annotations__": {"shortTermData": tamd, "longTermData": tamd, "topics": num}},
                    forbid_unknown_fields=True, gc=False)
        unset = msgspec.UNSET
        opt = typing.Any  # a field as plain JSON; UNSET when absent (a present null decodes to None)
        rep = msgspec.defstruct(
            "_Report", [("lastStats", dict[str, stat] | None | msgspec.UnsetType, unset),
                        ("bundleStats", dict[str, stat] | None | msgspec.UnsetType, unset),
                        ("bundles", list[str] | None | msgspec.UnsetType, unset),
                        *((k, opt, unset) for k in _REPORT_KEYS)],
            forbid_unknown_fields=True, gc=False)
        whole = msgspec.defstruct(
            "_LoadData", [("brokers", dict[str, rep]), ("bundleData", dict[str, bdat] | None | msgspec.UnsetType, unset),
                          *((k, opt, unset) for k in _TOP_KEYS)],
            forbid_unknown_fields=True, gc=False)
        # the same document in two halves (_load_whole_forked): each decodes its fields as ``whole`` does and
        # passes over the other's (msgspec.Raw: checked as JSON, not built)
        reports = msgspec.defstruct(
            "_Reports", [("brokers", dict[str, rep]), ("bundleData", msgspec.Raw, unset),
                         *((k, opt, unset) for k in _TOP_KEYS)],
            forbid_unknown_fields=True, gc=False)
        bundles = msgspec.defstruct(
            "_Bundles", [("brokers", msgspec.Raw), ("bundleData", dict[str, bdat] | None | msgspec.UnsetType, unset),
                         *((k, msgspec.Raw, unset) for k in _TOP_KEYS)],
            forbid_unknown_fields=True, gc=False)
        _TYPED.update(
            msgspec=msgspec, error=(msgspec.DecodeError, msgspec.ValidationError), unset=unset,
            types=dict(top=dict[str, msgspec.Raw], brokers=dict[str, dict[str, msgspec.Raw]],
                       stats=dict[str, stat] | None, names=list[str] | None, bundle_data=dict[str, bdat] | None,
                       any=typing.Any, whole=whole, reports=reports, bundles=bundles))
    # decoders of this call (cheap to make; one per thread, as uploads may be read concurrently)
    return dict(_TYPED, **{k: _TYPED["msgspec"].json.Decoder(t) for k, t in _TYPED["types"].items()})


def load_bytes_typed(raw: bytes, source: str, probe: dict | None = None) -> ColumnarLoadData | None:
    """The bytes of a big LoadData JSON with the bulk entries (lastStats, bundleData) decoded by
    ``msgspec`` straight into typed records — no dict per entry, the JSON-number types checked while
    decoding — and everything else decoded as plain JSON (on the 1,000 × 100,000 bench snapshot:
    decode and arrays in ~0.35 s instead of ~0.75 s for orjson's dicts and their columns, and 170 MB
    less memory). Returns the :class:`ColumnarLoadData`, or ``None`` when this cannot prove the answer
    (not a ``{"brokers": ...}`` object, a decode or type error, a value out of range, anything
    :func:`load_data_fast` would leave to the ordinary reader): the caller then reads it another way
    (:func:`snapshot_bytes_fast` takes the orjson path, which falls back in turn), so every message is
    the ordinary reader's.

    ``probe``, when given, receives ``"top"``: the document's top level with each value as parsed,
    except ``brokers`` (its entries are empty objects under the same keys) and ``bundleData`` (the same
    keys, each holding its row number: a copy of the name index, ~0.3 s less than a new dict at a
    million bundles) — enough for a caller to classify the document's shape
    (:func:`engine.policies.classify_policy_json` reads the keys of these two, not their entries, nor
    the keys' order, which is not kept) without the bulk."""
    got = _bytes_typed(raw, source, probe)
    return None if got is _NOT_LOAD_DATA else got


def _bytes_typed(raw: bytes, source: str, probe: dict | None = None):
    """:func:`load_bytes_typed`, with ``_NOT_LOAD_DATA`` for a JSON object without ``"brokers"``."""
    check_size(len(raw), source)
    try:
        T = _typed_decoders()
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        return None
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    try:
        with no_gc():
            try:
                return _load_whole(T, raw, source, probe)
            except (*T["error"], _Fallback, InputError, RecursionError):
                pass  # key by key below: the same answer or the same refusal, by the general reading
            return _load_typed(T, raw, source, probe)
    except T["error"]:
        return None
    except (_Fallback, InputError, RecursionError):
        return None


def _load_typed(T: dict, raw: bytes, source: str, probe: dict | None):
    top = T["top"].decode(raw)
    if "brokers" not in top:
        return _NOT_LOAD_DATA
    dec_any = T["any"].decode
    try:
        brokers = T["brokers"].decode(top["brokers"])
    except T["error"]:
        if isinstance(dec_any(top["brokers"]), dict):
            raise  # an object holding something else than report objects: the orjson path decides
        return _NOT_LOAD_DATA
    dec_stats, dec_names = T["stats"].decode, T["names"].decode
    parts, stat_recs = _Parts(), []
    for bid, rep in brokers.items():
        if "lastStats" in rep and "bundleStats" in rep:
            raise _Fallback("both lastStats and bundleStats")
        st = rep.get("lastStats")
        if st is None:
            st = rep.get("bundleStats")
        listed = rep.get("bundles")
        stat_recs.extend(parts.add_report(bid, {k: dec_any(v) for k, v in rep.items() if k not in _BULK},
                                          (dec_stats(st) if st is not None else None) or {},
                                          dec_names(listed) if listed is not None else None))
    stats_a = _records(stat_recs, _STAT_KEYS)
    del stat_recs
    bd_raw = top.get("bundleData")
    bd = T["bundle_data"].decode(bd_raw) if bd_raw is not None else None
    bd_names, st_a, lt_a, top_a = _bundle_arrays(bd or {})
    del bd
    parts.finish({k: dec_any(v) for k, v in top.items() if k != "bundleData" and k != "brokers"}, stats_a,
                 bd_names, _given_columns(st_a, lt_a, top_a))
    _whole_probe(probe, parts, "given" if "bundleData" in top else "unset")  # (a null is its Raw here: given, empty)
    return _assemble(source, parts)


def _load_whole(T: dict, raw: bytes, source: str, probe: dict | None = None) -> ColumnarLoadData:
    """:func:`_load_typed` in one decode of the whole document, for a document holding only known keys
    (``_TOP_KEYS``, and ``_REPORT_KEYS`` in each report): the reports, their lastStats and the bundleData
    are decoded in the same pass (no second scan of a raw part, no decode call per field). Raises on
    anything else (an unknown key, a type the records refuse, ...): the caller then reads it key by key,
    which decides as before. Key order is not kept, and nothing here reads it: the ordinary reader looks
    fields up by name, and so does the policy-file check a ``probe`` serves (its top-level keys come in
    this decoder's order). On a 10,000-broker snapshot this is ~1.5 s less than key by key, which scans
    the bytes two or three times."""
    if len(raw) >= FORK_MIN_BYTES:
        got = _load_whole_forked(T, raw, source, probe)
        if got is not None:
            return got
    doc = T["whole"].decode(raw)
    unset = T["unset"]
    parts, stats_a = _gather_reports(doc.brokers, unset)
    bd_state, bd = _bundle_data_state(doc.bundleData, unset)
    bd_names, st_a, lt_a, top_a = _bundle_arrays(bd)
    del bd
    parts.finish({k: v for k, v in zip(_TOP_KEYS, attrgetter(*_TOP_KEYS)(doc)) if v is not unset}, stats_a, bd_names,
                 _given_columns(st_a, lt_a, top_a))
    del doc
    _whole_probe(probe, parts, bd_state)
    return _assemble(source, parts)


def _bundle_data_state(bd, unset) -> tuple:
    """``("unset" | "null" | "given", its entries)`` of a decoded ``bundleData`` (no entries unless given)."""
    if bd is unset:
        return "unset", {}
    return ("null", {}) if bd is None else ("given", bd)


def _whole_probe(probe: dict | None, parts: _Parts, bd_state: str) -> None:
    """The probe of a typed decode (``bd_state``: bundleData unset, null or given), in the decoder's key
    order (which nothing reads)."""
    if probe is not None:
        shallow = dict(parts.slim_obj, brokers=dict.fromkeys(parts.slim_brokers, {}))
        if bd_state != "unset":
            shallow["bundleData"] = None if bd_state == "null" else dict(parts.index)
        probe["top"] = shallow


def _load_whole_forked(T: dict, raw: bytes, source: str, probe: dict | None):
    """:func:`_load_whole` in two processes: a child forked here decodes ``bundleData`` while this process
    decodes the reports (``brokers`` and the document's small keys), gathers their parts and reads them
    without the bulk by the ordinary reader. The child hands the bundle names back first (packed as one
    string), then goes on while this process indexes them and looks the reports' bundles up: it makes the
    bundleData columns (:func:`_given_columns`, checked there) and finds the names' namespaces
    (:func:`engine.view.namespace_facts`, which the first decision needs), and hands both back when
    :func:`_assemble` asks for them. The child shares ``raw`` with this process (fork: nothing copied) and
    hands its results back through anonymous in-memory files (:func:`engine.forked.in_two_processes`; the
    arrays are read in place).

    Each field is decoded by exactly one of the two, with the type ``whole`` gives it (the other passes over
    it as ``msgspec.Raw``, which still checks it is JSON), so a document is taken only when ``whole`` takes
    it, with the same parts. Returns ``None`` when it cannot decide — not Linux or no ``fork`` /
    ``memfd_create``, a decode error or a refusal in either half, the child failing or taking longer than
    :data:`FORK_TIMEOUT_S` — and the caller decodes the document in one process, which gives the answer or
    the refusal; a refusal of the bundleData values (or a child that fails after handing the names back)
    raises ``_Fallback``, which ends in the same answer by the key-by-key reading. On 10,000 brokers ×
    1,000,000 bundles (591 MB) on two cores: ~3 s less than one process."""
    unset = T["unset"]
    kept = []  # (in the child) what it decoded: never freed, as the child leaves by os._exit

    def bundle_names():  # in the child
        state, bd = _bundle_data_state(T["bundles"].decode(raw).bundleData, unset)
        kept.append(bd)
        return state, pack_names(list(bd))

    def bundle_columns(_first):  # in the child, once the names are handed back
        from .view import namespace_facts

        names, st_a, lt_a, top_a = _bundle_arrays(kept[0])
        facts = namespace_facts(names)
        del facts["namespace_index"]  # (rebuilt here from the sorted namespaces: fewer objects to hand back)
        return _given_columns(st_a, lt_a, top_a), facts

    def reports():  # here, meanwhile: the reports, and the document without its bulk by the ordinary reader
        doc = T["reports"].decode(raw)
        parts, stats_a = _gather_reports(doc.brokers, unset)
        top = {k: v for k, v in zip(_TOP_KEYS, attrgetter(*_TOP_KEYS)(doc)) if v is not unset}
        del doc
        return parts, stats_a, top, _slim_base(source, top, parts, len(stats_a))

    try:
        got = in_two_processes(bundle_names, reports, FORK_TIMEOUT_S, then=bundle_columns)
    except (*T["error"], _Fallback, InputError):
        return None
    if got is None:
        return None
    (parts, stats_a, top, base), (bd_state, names), later = got

    def columns():  # asked for by _assemble once the names are looked up; the child may still be at work
        ok, got = later()
        if not ok:
            raise _Fallback("the bundleData columns did not come back")
        cols, facts = got
        facts["namespace_index"] = {ns: i for i, ns in enumerate(facts["namespaces"])}
        parts.name_facts = facts  # (the first decision needs them)
        return cols

    try:
        parts.finish(top, stats_a, unpack_names(names), columns)
        _whole_probe(probe, parts, bd_state)
        return _assemble(source, parts, base)
    finally:
        later.close()


def _gather_reports(brokers: dict, unset) -> tuple:
    """The decoded reports (``_Report`` records by broker id) as :class:`_Parts` and the lastStats columns."""
    parts, stat_recs = _Parts(), []
    others = attrgetter(*_REPORT_KEYS)
    for bid, rep in brokers.items():
        stats = rep.lastStats
        if stats is unset:
            stats = rep.bundleStats
        elif rep.bundleStats is not unset:
            raise _Fallback("both lastStats and bundleStats")
        listed = rep.bundles
        stat_recs.extend(parts.add_report(bid, {k: v for k, v in zip(_REPORT_KEYS, others(rep)) if v is not unset},
                                          {} if stats is unset or stats is None else stats,
                                          None if listed is unset else listed))
    return parts, _records(stat_recs, _STAT_KEYS)


def _bundle_arrays(bd: dict):
    """Typed bundleData records as ``(names, short-term (n, k), long-term (n, k), topics (n,))``."""
    recs = list(bd.values())
    st_a = _records(list(map(attrgetter("shortTermData"), recs)), _TAMD_KEYS)
    lt_a = _records(list(map(attrgetter("longTermData"), recs)), _TAMD_KEYS)
    try:
        top_a = np.fromiter(map(attrgetter("topics"), recs), dtype=np.float64, count=len(recs))
    except OverflowError:
        raise _Fallback("a count beyond a double") from None
    return list(bd), st_a, lt_a, top_a


def _records(recs: list, keys: tuple) -> np.ndarray:
    """Typed records' fields ``keys`` as an ``(n, len(keys))`` float64 array (records of one type; when
    ``keys`` are its fields in order, each record is read as a tuple at once: ~30% faster)."""
    w = len(keys)
    if not recs:
        return np.zeros((0, w))
    if type(recs[0]).__struct_fields__ == keys:
        rows = map(_TYPED["msgspec"].structs.astuple, recs)
    else:
        rows = map(attrgetter(*keys), recs)
    try:
        return np.fromiter(chain.from_iterable(rows), dtype=np.float64, count=len(recs) * w).reshape(-1, w)
    except OverflowError:  # an integer beyond a double's range: the reader's message names it
        raise _Fallback("a count beyond a double") from None
