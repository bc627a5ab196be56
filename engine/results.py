"""Decisions that explain themselves.

Every strategy returns one of these dataclasses: the numbers behind the decision and a reason a
person can read. "Nothing moved" is a result with a reason too (``label == "Skip"``). Modelled on
Pulsar's extensible ``UnloadDecision(label, reason)``: every :class:`SheddingResult` carries a
``label`` (:data:`LABELS`, Pulsar's ``UnloadDecision.Label``) and a ``reason_code``
(:data:`REASONS`, Pulsar's ``UnloadDecision.Reason`` names), whatever the strategy, and a ``details``
value typed per strategy (:class:`Details`) that figures and explanations read instead of the
strategy's name.

Where we depart from Pulsar: ``HitCount`` is not in ``UnloadDecision.Reason`` (it is a reason of the
``pulsar_lb_unload_broker_breakdown_total`` metric, TransferShedder's hit-count skip); we also give it
to AvgShedder when its hit counters hold a move back. The modular strategies have no reason codes in
Pulsar; they are mapped onto the same vocabulary in each strategy's docstring.

All results have ``to_json()`` giving the documented, stable JSON contract of the command line.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from operator import itemgetter

import numpy as np
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

__all__ = [
    "LABELS",
    "REASONS",
    "SUCCESS", "SKIP", "FAILURE",
    "OVERLOADED", "UNDERLOADED", "BALANCED", "NO_BUNDLES", "COOL_DOWN", "OUTDATED_DATA", "NO_LOAD_DATA",
    "NO_BROKERS", "UNKNOWN", "HIT_COUNT",
    "Details",
    "BrokerVerdict",
    "Selection",
    "AvgPair",
    "SheddingResult",
    "FilterStep",
    "PlacementDecision",
    "LeanDecision",
    "Unload",
    "BuiltOnRead",
    "column_of",
    "SelectionRows",
    "VerdictRows",
    "UnloadRows",
    "UnloadTable",
    "open_cycle",
    "UnloadDecision",
    "Cycle",
    "fmt_rate",
    "fmt_bytes",
    "LazyText",
    "lazy_reason", "has_reason",
]


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "to_json") and not is_dataclass(v):
        return v.to_json()
    if is_dataclass(v):
        return {k: _clean(x) for k, x in asdict(v).items()}
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, BuiltOnRead)):
        return [_clean(x) for x in v]
    try:
        import numpy as np

        if isinstance(v, np.generic):
            return _clean(v.item())
    except ImportError:  # pragma: no cover
        pass
    return v


#: Pulsar's ``UnloadDecision.Label``
SUCCESS, SKIP, FAILURE = "Success", "Skip", "Failure"
LABELS = (SUCCESS, SKIP, FAILURE)
#: Pulsar's ``UnloadDecision.Reason``, in its order
OVERLOADED, UNDERLOADED, BALANCED = "Overloaded", "Underloaded", "Balanced"
NO_BUNDLES, COOL_DOWN, OUTDATED_DATA = "NoBundles", "CoolDown", "OutDatedData"
NO_LOAD_DATA, NO_BROKERS, UNKNOWN = "NoLoadData", "NoBrokers", "Unknown"
#: ours (see the module docstring): a hit counter holds the move back
HIT_COUNT = "HitCount"
REASONS = (OVERLOADED, UNDERLOADED, BALANCED, NO_BUNDLES, COOL_DOWN, OUTDATED_DATA, NO_LOAD_DATA, NO_BROKERS,
           UNKNOWN, HIT_COUNT)


class Details:
    """Base of the per-strategy ``SheddingResult.details`` values (frozen dataclasses).

    ``kind`` names what the value holds (one of its spec's ``explains``);
    :meth:`event_fields` explains one broker's unloads of the result in common terms.
    """

    kind = ""

    def event_fields(self, broker: str, selections=()) -> dict:
        """What explains ``broker``'s unloads: any of ``partner`` (the broker the load goes to or is
        compared with), ``trigger``, ``score``, ``partner_score``, ``gap`` (score minus the line it
        crossed) and ``amount`` (what it had to move); ``{}`` when this result does not say."""
        return {}


def fmt_rate(v: float) -> str:
    """``12345.6`` → ``'12,346 msg/s'``; above 1e15 in exponent form (``1.8e+308 msg/s``)."""
    return f"{v:,.0f} msg/s" if not abs(v) >= 1e15 else f"{v:.2g} msg/s"


def fmt_bytes(v: float) -> str:
    """Bytes/s in MiB/s (Pulsar's "MB" is MiB); above 1e15 MB/s in exponent form."""
    mb = v / 1048576
    return f"{mb:,.3f} MB/s" if not abs(mb) >= 1e15 else f"{mb:.2g} MB/s"


class LazyText:
    """A reason's text formatted when first read: ``LazyText(fn, *args)`` stands for ``fn(*args)``.

    Given to :func:`lazy_reason` as an :class:`AvgPair`'s reason, ``pair.reason`` reads as that text (a
    ``str``) — formatted once, on the first read; copies and pickles carry the text. A backtest reads no
    pair's reason, so AvgShedder formats none of them there.

    >>> calls = []
    >>> def gap_text(d):
    ...     calls.append(d)
    ...     return f"gap {d:.2f}"
    >>> why = LazyText(gap_text, 12.345)
    >>> pair = AvgPair("b1:8080", "b2:8080", 10.0, 22.345, 12.345)
    >>> lazy_reason(pair, why)
    >>> calls
    []
    >>> pair.reason, str(why), calls
    ('gap 12.35', 'gap 12.35', [12.345])
    >>> import copy
    >>> other = AvgPair("b1:8080", "b2:8080", 10.0, 11.0, 1.0)
    >>> lazy_reason(other, LazyText(gap_text, 1))
    >>> copy.deepcopy(other).reason, other.reason
    ('gap 1.00', 'gap 1.00')
    >>> other.reason += "; more"
    >>> other.reason
    'gap 1.00; more'
    """

    __slots__ = ("call", "text")

    def __init__(self, fn, *args):
        self.call, self.text = (fn, args), None

    def __str__(self) -> str:
        t = self.text
        if t is None:
            call = self.call
            if call is None:  # formatted by another thread meanwhile
                return self.text
            t = self.text = call[0](*call[1])
            self.call = None
        return t

    def __reduce__(self):
        return str, (str(self),)


class _LazyReason:
    """The class attribute ``reason`` of :class:`AvgPair`: reached only while an instance has no
    ``reason`` of its own, i.e. one given by :func:`lazy_reason` and not read yet — it formats it then
    (once). An instance's own ``reason`` is a plain attribute, read at full speed."""

    __slots__ = ()

    def __get__(self, obj, owner=None):
        if obj is None:
            return ""
        d = obj.__dict__
        lazy = d.get("_lazy_reason")
        return "" if lazy is None else d.setdefault("reason", str(lazy))


def has_reason(obj) -> bool:
    """Whether ``obj`` (as :func:`lazy_reason` takes) has a non-empty reason, without writing a lazy one:
    every lazy reason the strategies give has words."""
    d = obj.__dict__
    if "reason" in d:
        return bool(d["reason"])
    return d.get("_lazy_reason") is not None or bool(type(obj).reason)


def share_reason(dst, src) -> None:
    """Give ``dst`` the reason of ``src``: its text, or, while that is a :class:`LazyText` not read yet,
    the same one (formatted once, for both, when either is read)."""
    d = src.__dict__
    lazy = d.get("_lazy_reason") if "reason" not in d else None
    if lazy is not None:
        lazy_reason(dst, lazy)
    else:
        dst.reason = src.reason


def lazy_reason(obj, text: LazyText) -> None:
    """Give ``obj`` (an :class:`AvgPair`, a :class:`Selection` or an :class:`Unload`) the reason ``text``, formatted when first read; setting
    ``obj.reason`` afterwards replaces it."""
    d = obj.__dict__
    d["_lazy_reason"] = text
    d.pop("reason", None)


@dataclass
class BrokerVerdict:
    """How one broker was judged: its score, the line it was compared with, and the outcome."""

    broker: str
    score: float
    line: float | None = None
    line_name: str = ""
    status: str = "ok"  # "over" | "under" | "ok" | "skipped"
    need: float | None = None  # amount to move (bytes/s or msg/s)
    need_unit: str = ""
    reason: str = ""



@dataclass
class Selection:
    """One bundle a shedding strategy selected, in Pulsar's selection order."""

    broker: str
    bundle: str
    value: float  # the traffic it was ranked by
    value_unit: str  # "B/s" or "msg/s"
    msg_rate: float = 0.0  # short-term in+out
    throughput: float = 0.0  # short-term in+out
    planned_destination: str | None = None  # AvgShedder / TransferShedder
    reason: str = ""



@dataclass
class AvgPair:
    """An AvgShedder pair: the cool and the hot broker, their gap and hit counters."""

    low: str
    high: str
    low_score: float
    high_score: float
    gap: float
    hit_low: dict = field(default_factory=dict)  # broker -> low counter after this round
    hit_high: dict = field(default_factory=dict)
    triggered: bool = False
    trigger: str = ""  # "high" | "low" | ""
    amount: float | None = None
    amount_unit: str = ""
    reason: str = ""


AvgPair.reason = _LazyReason()  # see lazy_reason
Selection.reason = _LazyReason()


class BuiltOnRead(Sequence):
    """A read-only sequence of ``n`` result objects kept as columns, each object built when first read
    (and then kept): a subclass gives :meth:`_build` (the ``i``-th object) and :meth:`column` (a field of
    every item, read from the columns without building them). It equals a list with the same objects,
    and pickles and copies as a list (what a stored result holds)."""

    __slots__ = ("_items",)

    def __init__(self, n: int):
        self._items: list = [None] * n

    def __len__(self) -> int:
        return len(self._items)

    def _build(self, i: int):
        raise NotImplementedError

    def _item(self, i: int):
        x = self._items[i]
        if x is None:
            x = self._items[i] = self._build(i)
        return x

    def column(self, name: str) -> list:
        return [getattr(x, name) for x in self]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._item(k) for k in range(*i.indices(len(self)))]
        return self._item(range(len(self))[i])

    def __iter__(self):
        return map(self._item, range(len(self)))

    def __eq__(self, other):
        if isinstance(other, (BuiltOnRead, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None

    def __add__(self, other):
        return list(self) + list(other)

    def __radd__(self, other):
        return list(other) + list(self)

    def __reduce__(self):
        return list, (list(self),)

    def __repr__(self) -> str:
        return repr(list(self))


def column_of(items, name: str) -> list:
    """Field ``name`` of each object of ``items``: a list's by reading each object, a :class:`BuiltOnRead`'s
    from its columns without building the objects."""
    if isinstance(items, BuiltOnRead):
        return items.column(name)
    return [getattr(x, name) for x in items]


class SelectionRows(BuiltOnRead):
    """A strategy's selections kept as columns (:class:`BuiltOnRead`): ``rows`` are ``(broker, bundle,
    value, value unit, planned destination, reason)`` tuples (the reason a :class:`LazyText` or a string),
    ``rates`` and ``throughputs`` the bundles' short-term traffic. A cycle that selects 20,000 bundles reads
    its columns and builds only the selections a page shows."""

    __slots__ = ("_rows", "_rates", "_thrs")

    _FIELDS = {"broker": 0, "bundle": 1, "value": 2, "value_unit": 3, "planned_destination": 4}

    def __init__(self, rows: list, rates: list, throughputs: list):
        super().__init__(len(rows))
        self._rows, self._rates, self._thrs = rows, rates, throughputs

    def _build(self, i: int) -> Selection:
        broker, bundle, value, unit, dest, why = self._rows[i]
        s = Selection(broker, bundle, value, unit, self._rates[i], self._thrs[i], planned_destination=dest)
        if isinstance(why, LazyText):
            lazy_reason(s, why)
        else:
            s.reason = why
        return s

    def column(self, name: str) -> list:
        if name == "msg_rate":
            return list(self._rates)
        if name == "throughput":
            return list(self._thrs)
        k = self._FIELDS.get(name)
        if k is None:
            return super().column(name)
        return list(map(itemgetter(k), self._rows))


class VerdictRows(BuiltOnRead):
    """Verdicts without a line, amount or reason (:class:`BrokerVerdict`), kept as columns
    (:class:`BuiltOnRead`): each broker's name, score and status. 10,000 brokers' verdicts are read by
    their columns on every slider release; only those a page names are built."""

    __slots__ = ("_brokers", "_scores", "_status")

    _CONST = {"line": None, "line_name": "", "need": None, "need_unit": "", "reason": ""}

    def __init__(self, brokers: list, scores: list, status: list):
        super().__init__(len(brokers))
        self._brokers, self._scores, self._status = brokers, scores, status

    def _build(self, i: int) -> BrokerVerdict:
        return BrokerVerdict(self._brokers[i], self._scores[i], None, "", self._status[i])

    def column(self, name: str) -> list:
        got = {"broker": self._brokers, "score": self._scores, "status": self._status}.get(name)
        if got is not None:
            return list(got)
        if name in self._CONST:
            return [self._CONST[name]] * len(self._brokers)
        return super().column(name)


@dataclass
class SheddingResult:
    """What a shedding strategy decided in one call of ``findBundlesForUnloading``."""

    strategy: str
    label: str  # "Success" (something selected) | "Skip" | "Failure" (Pulsar's UnloadDecision.Label)
    reason: str
    scores: dict = field(default_factory=dict)  # broker -> score in score_unit
    score_unit: str = "%"
    lines: dict = field(default_factory=dict)  # name -> value in score_unit (average, threshold, ...)
    verdicts: list = field(default_factory=list)  # BrokerVerdict, in Pulsar's broker order
    selected: list = field(default_factory=list)  # Selection, in Pulsar's order
    pairs: list = field(default_factory=list)  # AvgPair (AvgShedder)
    notes: list = field(default_factory=list)
    state: dict = field(default_factory=dict)  # strategy state after the call (hit counts, history)
    decisions: list = field(default_factory=list)  # UnloadDecision (extensible load manager)
    reason_code: str = ""  # one of REASONS (Pulsar's UnloadDecision.Reason, plus HitCount)
    details: Any = None  # the strategy's typed explanation (a Details), read by figures and why-not

    @property
    def nothing(self) -> bool:
        return not self.selected

    def to_json(self) -> dict:
        return _clean(self)

    # -- fields computed on first read
    def defer(self, **compute) -> None:
        """Compute fields on first read: ``name=fn`` makes ``fn()`` the value of field ``name`` when it
        is first read (an explanation a backtest never reads costs nothing). Any read — attribute,
        ``to_json``, ``==``, ``repr``, a copy or a pickle — sees the computed value; setting the field
        replaces it.

        >>> res = SheddingResult("X", "Skip", "")
        >>> res.defer(scores=lambda: {"b1:8080": 42.0})
        >>> "scores" in vars(res), res.to_json()["scores"], res.scores is res.scores
        (False, {'b1:8080': 42.0}, True)
        >>> res.defer(notes=lambda: ["never read"])
        >>> res.notes = ["set"]
        >>> res.notes
        ['set']
        """
        d = self.__dict__
        lazy = d.setdefault("_deferred", {})
        for name, fn in compute.items():
            d.pop(name, None)
            lazy[name] = fn

    def __getattr__(self, name):
        lazy = self.__dict__.get("_deferred")
        fn = lazy.get(name) if lazy else None
        if fn is not None:
            got = self.__dict__.setdefault(name, fn())  # another thread's value if it came first
            lazy.pop(name, None)
            return got
        if name in self.__dict__:  # computed by another thread meanwhile
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):
        for name in list(self.__dict__.get("_deferred") or ()):
            getattr(self, name)
        state = dict(self.__dict__)
        state.pop("_deferred", None)
        state.pop("_for_placement", None)  # (the load manager's, read during the cycle only)
        return state


class _Names:
    """Holds index arrays over a broker-name list (``self._names``) and turns them into names only
    when read, so placements stay cheap; without a name list the values are names already."""

    _names = None

    def _ls(self, x) -> list:
        if x is None:
            return []
        if self._names is None:
            return list(x)
        return [self._names[i] for i in np.asarray(x).tolist()]


class FilterStep(_Names):
    """One step of ``selectBroker``'s candidate pipeline: the candidates after it, and who it removed."""

    def __init__(self, name: str, after, before=None, note: str = "", names=None, reasons=None):
        self.name, self.note = name, note
        self._names = names
        self._after = after
        self._before = before
        #: broker -> why this step removed it (namespace policies; see engine.policies)
        self.reasons = dict(reasons or {})

    @property
    def candidates(self) -> list:
        return self._ls(self._after)

    @property
    def removed(self) -> list:
        if self._before is None:
            return []
        after = set(self.candidates)
        return [b for b in self._ls(self._before) if b not in after]

    @property
    def count(self) -> int:
        """How many candidates are left after this step (``len(candidates)`` without the names)."""
        return 0 if self._after is None else len(self._after)

    @property
    def removed_count(self) -> int:
        """``len(removed)``, computed once on the index arrays (steps are shared by many placements)."""
        got = getattr(self, "_removed_count", None)
        if got is None:
            if self._before is None:
                got = 0
            elif self._names is None:
                got = len(self.removed)
            else:
                got = int(np.count_nonzero(~np.isin(np.asarray(self._before), np.asarray(self._after))))
            self._removed_count = got
        return got

    def to_json(self) -> dict:
        d = {"name": self.name, "candidates": self.candidates, "removed": self.removed, "note": self.note}
        if self.reasons:
            d["reasons"] = dict(self.reasons)
        return d


class PlacementDecision(_Names):
    """Where ``selectBroker`` puts a bundle, with the candidate set after each filter.

    Candidate sets and scores are kept as index arrays over the view's broker list and turned into
    names and dicts only when read, so a placement costs microseconds even on 1,000 brokers.
    """

    # defaults shared by every decision until one sets its own (a cycle makes thousands of decisions)
    random = False  # the pick was a draw among several brokers
    _best = None
    _scores = None  # array aligned with _cand
    score_unit = ""
    retried = False  # overload retry with all brokers
    first_choice: str | None = None  # before the retry
    preallocated = False
    from_plan = False  # AvgShedder destination planned at shedding time
    reason = ""

    def __init__(self, bundle: str, strategy: str, names=None, cand=None, broker: str | None = None):
        self.bundle = bundle
        self.strategy = strategy
        self.broker = broker
        self._names = names
        self._cand = cand  # index array (or list of names when names is None)
        self.filters: list = []  # FilterStep
        self.lines: dict = {}

    @property
    def label(self) -> str:
        """``"Success"`` when a broker was chosen, else ``"Failure"`` (no broker is assigned)."""
        return SUCCESS if self.broker is not None else FAILURE

    @property
    def candidates(self) -> list:
        """The candidate set given to the strategy (names)."""
        return self._ls(self._cand)

    @property
    def best(self) -> list:
        """The brokers the pick was drawn from."""
        return self._ls(self._best)

    @property
    def scores(self) -> dict:
        """Candidate -> the score the strategy compared."""
        if self._scores is None:
            return {}
        return dict(zip(self.candidates, np.asarray(self._scores, dtype=float).tolist()))

    def _score_of(self, broker):
        """``scores[broker]`` without building the dict of every candidate (``None`` when not scored)."""
        if self._scores is None or broker is None:
            return None
        if self._names is None:
            return self.scores.get(broker)
        try:
            j = self._names.index(broker)
        except ValueError:
            return None
        pos = np.flatnonzero(np.asarray(self._cand) == j)
        return float(np.asarray(self._scores, dtype=float)[pos[0]]) if len(pos) else None

    def set_best(self, best) -> None:
        self._best = best

    def prefix_reason(self, text: str) -> None:
        """Put ``text`` before the reason."""
        self.reason = text + self.reason

    def set_scores(self, scores, unit: str) -> None:
        self._scores, self.score_unit = scores, unit

    def to_json(self, candidates: bool = True) -> dict:
        """The decision as JSON; ``candidates=False`` leaves out the per-candidate detail (the candidate
        list, every candidate's score, each filter's candidates, removed brokers and reasons) and gives
        their counts, the destination's ``score`` and the filters' names and notes instead — the
        default of ``shed --json``, whose full answer on 1,000 brokers is ~100 KB per unload."""
        if not candidates:
            return _clean({
                "bundle": self.bundle, "broker": self.broker, "strategy": self.strategy, "random": self.random,
                "candidate_count": 0 if self._cand is None else len(self._cand),
                "filters": [{"name": f.name, "count": f.count, "removed_count": f.removed_count, "note": f.note}
                            for f in self.filters],
                "score": self._score_of(self.broker), "score_unit": self.score_unit, "best": self.best,
                "retried": self.retried,
                "first_choice": self.first_choice, "preallocated": self.preallocated, "from_plan": self.from_plan,
                "reason": self.reason, "lines": self.lines,
            })
        return _clean({
            "bundle": self.bundle, "broker": self.broker, "strategy": self.strategy, "random": self.random,
            "candidates": self.candidates, "filters": [f.to_json() for f in self.filters],
            "scores": self.scores, "score_unit": self.score_unit, "best": self.best, "retried": self.retried,
            "first_choice": self.first_choice, "preallocated": self.preallocated, "from_plan": self.from_plan,
            "reason": self.reason, "lines": self.lines,
        })


class LeanDecision(PlacementDecision):
    """A decision of one chosen broker (index ``_j``) that a storm of placements makes many of: ``best``
    is that broker, ``lines`` is made when read and the reason is written when read (``_written()``,
    after any text put before it), so few new objects are built per placement."""

    _lines = None
    _j = None
    _before = ""  # text put before the reason
    _text = None  # a reason set outright

    def _written(self) -> str:
        raise NotImplementedError

    @property
    def reason(self) -> str:
        if self._text is not None:
            return self._text
        return self._before + self._written()

    @reason.setter
    def reason(self, text: str) -> None:
        self._text = text

    def prefix_reason(self, text: str) -> None:
        if self._text is not None:
            self._text = text + self._text
        else:
            self._before = text + self._before

    @property
    def _best(self):
        return (self._j,)

    @property
    def lines(self) -> dict:
        if self._lines is None:
            self._lines = {}
        return self._lines

    @lines.setter
    def lines(self, value: dict) -> None:
        self._lines = value


@dataclass
class UnloadDecision:
    """Pulsar's extensible ``UnloadDecision``: a label, a reason code and (for Success) the unload.

    ``label`` is ``"Success"``, ``"Skip"`` or ``"Failure"``; ``reason`` one of Pulsar's codes
    (``Overloaded``, ``Underloaded``, ``Balanced``, ``HitCount``, ``NoBundles``, ``CoolDown``,
    ``OutDatedData``, ``NoLoadData``, ``NoBrokers``, ``Unknown``, ``Admin``), as in the metric
    ``pulsar_lb_unload_broker_breakdown_total``; ``detail`` says the same in words with the numbers.
    """

    label: str
    reason: str
    broker: str | None = None
    bundle: str | None = None
    destination: str | None = None
    detail: str = ""
    swap: bool = False  # a bundle of the cooler broker moved to the hotter one to make room


@dataclass
class Unload:
    """One bundle the leader unloads (or would have, when ``skipped`` says why not)."""

    broker: str
    bundle: str
    destination: str | None
    reason: str
    msg_rate: float = 0.0
    throughput: float = 0.0
    skipped: str | None = None
    placement: PlacementDecision | None = None

    def to_json(self) -> dict:
        return {"broker": self.broker, "bundle": self.bundle, "destination": self.destination,
                "reason": self.reason, "msg_rate": self.msg_rate, "throughput": self.throughput,
                "skipped": self.skipped, "placement": self.placement.to_json() if self.placement else None}


Unload.reason = _LazyReason()  # a shedding selection's reason, formatted when first read (share_reason)


class UnloadTable:
    """A cycle's processed unloads as columns, each :class:`Unload` built when first read (and then kept, so
    the cycle's lists share it). Row ``r`` is the selection ``sel[order[r]]`` (its broker, bundle, traffic and
    reason), placed by ``decs[r]`` (``None``: not placed) and skipped because of ``skip[r]`` (``None``:
    issued); its destination is the placement's broker. A cycle that unloads 20,000 bundles at 10,000
    brokers then reads only the rows a page shows."""

    __slots__ = ("sel", "order", "decs", "skip", "units", "_cols")

    def __init__(self, sel: list, order: list, decs: list, skip: list):
        self.sel, self.order, self.decs, self.skip = sel, order, decs, skip
        self.units: list = [None] * len(order)
        self._cols: dict = {}

    def unit(self, r: int) -> Unload:
        u = self.units[r]
        if u is None:
            s, dec = self.sel[self.order[r]], self.decs[r]
            u = Unload(s.broker, s.bundle, None if dec is None else dec.broker, "", s.msg_rate, s.throughput,
                       self.skip[r], dec)
            share_reason(u, s)
            self.units[r] = u
        return u

    def column(self, rows, name: str) -> list:
        """Field ``name`` of the unloads of ``rows``, read from the columns (no unit built)."""
        if name == "placement":
            return [self.decs[r] for r in rows]
        if name == "destination":
            return [None if d is None else d.broker for d in (self.decs[r] for r in rows)]
        if name == "skipped":
            return [self.skip[r] for r in rows]
        cols = self._cols
        col = cols.get(name)
        if col is None:  # the field of each row's selection
            col = cols[name] = list(map(column_of(self.sel, name).__getitem__, self.order))
        if type(rows) is range and rows == range(len(col)):
            return list(col)
        return list(map(col.__getitem__, rows))


class UnloadRows(BuiltOnRead):
    """The unloads of rows ``rows`` of an :class:`UnloadTable`, in that order (:class:`BuiltOnRead`; two
    sequences over one table give the same objects)."""

    __slots__ = ("_table", "_rows")

    def __init__(self, table: UnloadTable, rows):  # (the table keeps the built objects: no cache of its own)
        self._table, self._rows = table, rows

    def __len__(self) -> int:
        return len(self._rows)

    def _item(self, i: int) -> Unload:
        return self._table.unit(self._rows[i])

    def __iter__(self):
        return map(self._table.unit, self._rows)

    def column(self, name: str) -> list:
        return self._table.column(self._rows, name)


@dataclass
class Cycle:
    """One ``doLoadShedding`` run: the strategy's result and the unloads the leader issued."""

    cycle: int
    now_ms: int
    shedding: SheddingResult | None
    unloads: list = field(default_factory=list)  # Unload actually issued, in order
    skipped: list = field(default_factory=list)  # Unload not issued (same broker, excluded, ...)
    processed: list = field(default_factory=list)  # every Unload (issued or skipped) in processing order
    reason: str = ""
    source: str | None = None  # snapshot file for replay
    #: the cycle's reason code when no strategy ran (``NoBrokers``: at most one broker; ``None``: shedding
    #: disabled); otherwise the strategy's (:attr:`SheddingResult.reason_code`)
    skip_code: str | None = None

    @property
    def reason_code(self) -> str | None:
        """The strategy's reason code (Pulsar's ``UnloadDecision.Reason`` names, plus ``HitCount``)."""
        return self.shedding.reason_code if self.shedding is not None else self.skip_code

    def processed_index(self, view) -> tuple:
        """``(broker, bundle, destination, issued)``: for each processed unload (:attr:`processed`, in
        order) the index in ``view`` of its broker, its bundle and its destination (-1: none, or a name
        the view does not have) and whether it was issued, as arrays. The load manager gives them when
        it placed the cycle knowing the indices (:meth:`give_index`); otherwise each name is looked up
        once. Kept for that view while the lists keep their lengths; never pickled."""
        got = self.__dict__.get("_index")
        if got is not None and got[0] is view and len(got[1]) == len(self.processed) \
                and got[5] == len(self.unloads):
            return got[1:5]
        p, b_idx, k_idx = self.processed, view.broker_index, view.bundle_index
        n = len(p)
        issued_ids = {id(u) for u in self.unloads}
        self.give_index(view, np.fromiter((b_idx.get(u.broker, -1) for u in p), np.int64, n),
                        np.fromiter((k_idx.get(u.bundle, -1) for u in p), np.int64, n),
                        np.fromiter((b_idx.get(u.destination, -1) if u.destination else -1 for u in p), np.int64, n),
                        np.fromiter((id(u) in issued_ids for u in p), bool, n))
        return self.__dict__["_index"][1:5]

    def give_index(self, view, broker, bundle, destination, issued) -> None:
        """Set what :meth:`processed_index` returns for ``view`` (arrays aligned with :attr:`processed`)."""
        self.__dict__["_index"] = (view, broker, bundle, destination, issued, int(np.count_nonzero(issued)))

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_index", None)  # (holds the view)
        return state

    def to_json(self, candidates: bool = True) -> dict[str, Any]:
        """The cycle as JSON; ``candidates=False``: each placement without its per-candidate detail
        (:meth:`PlacementDecision.to_json`)."""
        sh = self.shedding
        out = {
            "cycle": self.cycle,
            "now": self.now_ms,
            "strategy": sh.strategy if sh else None,
            "label": "Success" if self.unloads else "Skip",
            "reason": self.reason,
            "reason_code": self.reason_code,
            "unloads": [{"broker": u.broker, "bundle": u.bundle, "destination": u.destination,
                         "reason": u.reason, "msg_rate": u.msg_rate, "throughput": u.throughput,
                         "placement": u.placement.to_json(candidates) if u.placement else None}
                        for u in self.unloads],
            "skipped": [{"broker": u.broker, "bundle": u.bundle, "destination": u.destination,
                         "reason": u.skipped} for u in self.skipped],
            "scores": _clean(sh.scores) if sh else {},
            "score_unit": sh.score_unit if sh else "",
            "lines": _clean(sh.lines) if sh else {},
            "verdicts": _clean(sh.verdicts) if sh else [],
            "pairs": _clean(sh.pairs) if sh else [],
            "notes": list(sh.notes) if sh else [],
            "state": _clean(sh.state) if sh else {},
        }
        if sh is not None and sh.decisions:
            out["decisions"] = _clean(sh.decisions)
        if self.source:
            out["snapshot"] = self.source
        return out


def open_cycle(manager, now: int | None) -> Cycle:
    """Start one shedding cycle of ``manager`` (modular or extensible): move its clock to ``now``
    (when given), count the cycle and return its :class:`Cycle`. The cycle's ``reason`` is already
    set when ``loadBalancerEnabled`` or ``loadBalancerSheddingEnabled`` is off — the caller then
    returns it unchanged, as both of Pulsar's schedulers do."""
    if now is not None:
        manager.now = int(now)
    manager.cycles += 1
    cyc = Cycle(manager.cycles, manager.now, None)
    cfg = manager.config
    if not (cfg.loadBalancerEnabled and cfg.loadBalancerSheddingEnabled):
        cyc.reason = "load balancer or shedding disabled (loadBalancerEnabled / loadBalancerSheddingEnabled)"
    return cyc
