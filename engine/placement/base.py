"""What every placement strategy shares (Pulsar's ``ModularLoadManagerStrategy``)."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..config import LoadBalancerConfig
from ..model import BundleData
from ..results import PlacementDecision
from ..strategies.state import Stateful
from ..view import LoadView

__all__ = ["PlacementStrategy", "PlacementContext", "NamespacePolicies", "Int32Draws", "draw", "new_decision"]

_LO, _HI = -2**31, 2**31


class Int32Draws:
    """Java ``new Random().nextInt()``-like draws (``rng.integers(-2**31, 2**31)``) taken from ``rng``
    many at a time, handed out one by one: the same values, in the same order, as one call per draw.

    One call per draw costs ~5 µs; a cycle that places 16,000 bundles by a random number paid 80 ms
    for them. NumPy draws an array of these bounded integers value by value, exactly as it draws them
    one at a time, so the array's values are those calls' values (a test checks it). What the caller
    did not use is given back on :meth:`close`: ``rng`` is reset to its state before the first draw and
    advanced by exactly the draws handed out, so it then stands where one call per draw leaves it.
    Nothing else may draw from ``rng`` between the first draw and :meth:`close`.
    """

    __slots__ = ("rng", "state0", "buf", "i")

    def __init__(self, rng: np.random.Generator, n: int):
        self.rng, self.state0 = rng, rng.bit_generator.state
        self.buf = rng.integers(_LO, _HI, size=max(1, int(n))).tolist()
        self.i = 0

    def next(self) -> int:
        i = self.i
        if i == len(self.buf):  # more than foreseen (overload retries): as many again
            self.buf += self.rng.integers(_LO, _HI, size=len(self.buf)).tolist()
        self.i = i + 1
        return self.buf[i]

    def close(self) -> None:
        """Leave ``rng`` where one call per handed-out draw would have left it."""
        rng = self.rng
        rng.bit_generator.state = self.state0
        if self.i:
            rng.integers(_LO, _HI, size=self.i)
        self.buf, self.i = [], 0


@dataclass
class PlacementContext:
    """What a placement call may use besides the view: the RNG and the leader's preallocations.

    ``pre_rate`` / ``pre_topics`` are per-broker sums (aligned with ``view.brokers``) of the
    long-term msg rate and topics of the preallocated bundles.
    """

    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    preallocated: Mapping[str, Mapping[str, BundleData]] = field(default_factory=dict)
    pre_rate: np.ndarray | None = None
    pre_topics: np.ndarray | None = None
    #: bumped whenever ``pre_rate`` / ``pre_topics`` change in place (what strategies cache on)
    pre_version: int = 0
    #: id(candidates) -> (candidates, view, {fact: value}): see :meth:`by_name` and :meth:`is_candidate`
    _per_cand: dict = field(default_factory=dict, repr=False, compare=False)
    _last_cand: tuple | None = field(default=None, repr=False, compare=False)
    #: while a cycle places many bundles by a random number: their draws, taken at once (:class:`Int32Draws`)
    draws: Int32Draws | None = field(default=None, repr=False, compare=False)

    def int32(self) -> int:
        """``rng.integers(-2**31, 2**31)`` (from :attr:`draws` while a cycle holds them)."""
        d = self.draws
        return int(self.rng.integers(_LO, _HI)) if d is None else d.next()

    def _facts(self, view: LoadView, cand: np.ndarray) -> dict:
        """Facts of one candidate array, kept per array: the load manager hands the same array to
        every bundle of a namespace in a cycle. The array is held with its facts, so an ``id`` is
        never reused for another array while cached."""
        got = self._last_cand
        if got is not None and got[0] is cand and got[1] is view:  # the array of the previous call
            return got[2]
        got = self._per_cand.get(id(cand))
        if got is None or got[0] is not cand or got[1] is not view:
            if len(self._per_cand) > 256:
                self._per_cand.clear()
            got = (cand, view, {})
            self._per_cand[id(cand)] = got
        self._last_cand = got
        return got[2]

    def by_name(self, view: LoadView, cand: np.ndarray) -> np.ndarray:
        """``cand`` sorted by broker name (Java ``String.compareTo``)."""
        f = self._facts(view, cand)
        got = f.get("by_name")
        if got is None:
            got = f["by_name"] = cand[np.argsort(view.name_rank[cand], kind="stable")]
        return got

    def mask(self, view: LoadView, cand: np.ndarray) -> np.ndarray:
        """Per broker of ``view``: whether it is in ``cand`` (a boolean array, kept with ``cand``)."""
        f = self._facts(view, cand)
        got = f.get("mask")
        if got is None:
            got = np.zeros(view.nb, dtype=bool)
            got[cand] = True
            f["mask"] = got
        return got

    def is_candidate(self, view: LoadView, cand: np.ndarray, j: int) -> bool:
        """Whether broker index ``j`` is in ``cand``."""
        return bool(self.mask(view, cand)[j])

    def prealloc_rate(self, view: LoadView) -> np.ndarray:
        if self.pre_rate is None or len(self.pre_rate) != view.nb:
            self.pre_rate = np.zeros(view.nb)
            self.pre_topics = np.zeros(view.nb, dtype=np.int64)
            for b, pre in self.preallocated.items():
                j = view.broker_index.get(b)
                if j is not None:
                    t = 0.0
                    for d in pre.values():
                        t += d.long_term.msg_rate_in + d.long_term.msg_rate_out
                    self.pre_rate[j] = t
                    self.pre_topics[j] = sum(d.topics for d in pre.values())
        return self.pre_rate


class NamespacePolicies:
    """Hook for namespace isolation and anti-affinity policies (none by default).

    Subclass and override to model ``applyNamespacePolicies``, the anti-affinity filter and the two
    "should unload" checks of ``doLoadShedding`` (§4.4). :class:`engine.policies.ModularPolicies` does so
    for the cluster's isolation policies, anti-affinity groups and failure domains; its optional
    ``explain_candidates`` / ``explain_anti_affinity`` give the placement's filter steps their reasons.
    (Here, beside the placement interface, so that the policies need not import the load manager;
    :mod:`engine.load_manager` re-exports it.)
    """

    def candidates(self, bundle: str, avail: np.ndarray, view: LoadView, non_persistent: bool) -> np.ndarray:
        """``applyNamespacePolicies``: without policies, the brokers (indices, in candidate-set order)
        supporting the topic type."""
        ok = view.non_persistent_ok if non_persistent else view.persistent_ok
        return avail[ok[avail]]

    def anti_affinity_filter(self, bundle: str, cand: np.ndarray, view: LoadView) -> np.ndarray:
        return cand

    def should_unload(self, bundle: str, broker: str, view: LoadView) -> tuple[bool, str]:
        return True, ""


class PlacementStrategy(Stateful):
    """Interface: choose one broker among ``candidates`` for a bundle.

    A strategy may also offer ``select_many(bundles, keys, cands, start, stop, view, conf, ctx)``: the
    choices for ``bundles[start:]`` in turn (their ``BundleData`` value keys and candidate arrays given),
    stopping after the first choice of a broker ``j`` with ``stop[j]``, with the same decisions and state
    as one :meth:`select_broker` each. The modular load manager then places a shedding cycle's bundles as
    one run where no namespace policy or preallocation is in play (AvgShedder does).
    """

    name: str = ""
    config_keys: tuple = ()
    #: whether :meth:`select_broker` reads the bundle's ``BundleData`` (else it is passed ``None``:
    #: building it costs more than most strategies' whole choice)
    uses_bundle_data: bool = False

    def place(self, cand: np.ndarray, bundle: str, data: BundleData, view: LoadView, conf: LoadBalancerConfig,
              ctx: PlacementContext, state=None):
        """``(decision, new_state)``: one :meth:`select_broker` from ``state`` (a ``state_type``
        value; ``None`` = empty)."""
        self._enter(state)
        dec = self.select_broker(cand, bundle, data, view, conf, ctx)
        return dec, self.state_value()

    def select_broker(self, cand: np.ndarray, bundle: str, data: BundleData, view: LoadView,
                      conf: LoadBalancerConfig, ctx: PlacementContext) -> PlacementDecision:
        """Pulsar's ``selectBroker(candidates, bundleData, loadData, conf)``, from the working memory.

        ``cand`` holds broker indices (into ``view.brokers``) in the iteration order of Pulsar's
        candidate set. Returns a decision with ``broker`` (``None`` when there is no candidate),
        ``random``, ``scores``, ``best`` and ``reason``.
        """
        raise NotImplementedError

    def on_active_brokers_change(self, active_brokers) -> None:
        """Forget state of brokers that left."""

    def state(self) -> dict:
        return self.state_value().to_json()

    def copy(self) -> "PlacementStrategy":
        return copy.deepcopy(self)


def draw(rng: np.random.Generator, items):
    """``items.get(random.nextInt(items.size()))`` with an injected RNG."""
    return items[int(rng.integers(len(items)))]


_I64 = np.dtype(np.int64)


def as_index(cand) -> np.ndarray:
    """Candidates as an int64 index array (the array itself when it is one)."""
    if cand.__class__ is not np.ndarray or (cand.dtype is not _I64 and cand.dtype != _I64):
        cand = np.asarray(cand, dtype=np.int64)
    return cand


def new_decision(strategy: str, bundle: str, view: LoadView, cand) -> PlacementDecision:
    return PlacementDecision(bundle, strategy, names=view.brokers, cand=as_index(cand))
