"""A namespace layout: one namespace's topics assigned to its bundles, with per-bundle totals and metrics."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import InputError
from .algorithms import SplitResult
from .autosplit import AutoSplitResult, auto_split
from .constants import PARTITIONED_TOPIC_SUFFIX
from .distribution import PARTITION_MODEL_MAX_HASHES, ExpectedSpread, distribution, expected_max_over_mean
from .ranges import assign_bundles, bundle_ranges, check_boundaries, initial_boundaries
from .split import split_bundle
from .topics import _FULL_PREFIXES, _partition_index, normalize_topic_name
from .topics import partition_names  # noqa: F401 (the doctests use it)

@dataclass(frozen=True, eq=False)
class NamespaceLayout:
    """The topics of one namespace assigned to its bundles (built by :func:`build_layout`).

    Attributes
    ----------
    namespace : str
    boundaries : ndarray of int64
    topics : tuple of str
        Full topic names.
    hashes, index : ndarray of int64
        CRC-32 and bundle index (``-1`` = hash ``0xffffffff``, unserved) of each topic.
    topic_msg_rate, topic_throughput : ndarray or None
        Per-topic in+out traffic when known (NaN = unknown).
    topic_sessions : ndarray or None
        Per-topic producers + consumers when known.
    """

    namespace: str
    boundaries: np.ndarray
    topics: tuple
    hashes: np.ndarray
    index: np.ndarray
    topic_msg_rate: np.ndarray | None = None
    topic_throughput: np.ndarray | None = None
    topic_sessions: np.ndarray | None = None

    @property
    def n_bundles(self) -> int:
        return int(self.boundaries.size - 1)

    @property
    def unassignable(self) -> list[str]:
        """Topics Pulsar cannot look up (hash exactly ``0xffffffff``)."""
        return [self.topics[i] for i in np.flatnonzero(self.index < 0)]

    def _per_bundle(self, weights) -> np.ndarray:
        ok = self.index >= 0
        if weights is None:
            return np.bincount(self.index[ok], minlength=self.n_bundles).astype(np.int64)
        w = np.nan_to_num(np.asarray(weights, dtype=float)[ok], nan=0.0)
        return np.bincount(self.index[ok], weights=w, minlength=self.n_bundles)

    @property
    def counts(self) -> np.ndarray:
        """Topics (partitions) per bundle."""
        return self._per_bundle(None)

    @property
    def msg_rate(self) -> np.ndarray | None:
        """msg/s (in+out) per bundle, when per-topic rates are known."""
        return None if self.topic_msg_rate is None else self._per_bundle(self.topic_msg_rate)

    @property
    def throughput(self) -> np.ndarray | None:
        """bytes/s (in+out) per bundle, when known."""
        return None if self.topic_throughput is None else self._per_bundle(self.topic_throughput)

    @property
    def sessions(self) -> np.ndarray | None:
        return None if self.topic_sessions is None else self._per_bundle(self.topic_sessions).astype(np.int64)

    def bundle_names(self) -> list[str]:
        return [f"{self.namespace}/{r}" for r in bundle_ranges(self.boundaries)]

    def distributions(self) -> dict:
        """``{"topics": Distribution, "msg_rate": … or None, "throughput": … or None}``."""
        out = {"topics": distribution(self.counts, "topics"), "msg_rate": None, "throughput": None}
        if self.topic_msg_rate is not None:
            out["msg_rate"] = distribution(self.msg_rate, "msg_rate")
        if self.topic_throughput is not None:
            out["throughput"] = distribution(self.throughput, "throughput")
        return out

    def single_partitioned_topic(self) -> str | None:
        """The topic, when this namespace holds exactly the partitions ``0..K-1`` of one topic."""
        if not self.topics:
            return None
        base = None
        idx = set()
        for t in self.topics:
            i = t.rfind(PARTITIONED_TOPIC_SUFFIX)
            if i < 0:
                return None
            p = _partition_index(t)
            if p < 0 or (base is not None and t[:i] != base):
                return None
            base = t[:i]
            idx.add(p)
        return base if idx == set(range(len(self.topics))) else None

    def expected(self, *, trials: int = 1000, seed=0, model: str = "auto") -> ExpectedSpread:
        """:func:`expected_max_over_mean` for this layout's topic count and boundaries.

        ``model="auto"``: ``partition-names`` when the namespace is the partitions of one topic (and
        the work fits), else ``multinomial``.
        """
        c = self.counts
        n = int(c.sum())
        if model == "auto":
            fits = len(self.topics) * trials <= PARTITION_MODEL_MAX_HASHES
            model = "partition-names" if fits and self.single_partitioned_topic() else "multinomial"
        if model == "partition-names":
            n = len(self.topics)  # the model hashes all K partitions (an unserved one included)
        return expected_max_over_mean(n, self.boundaries, observed_max=int(c.max()), trials=trials, seed=seed,
                                      model=model)

    def most_loaded(self) -> int:
        """Index of the busiest bundle: by msg rate when known (and non-zero), else by topics."""
        rate = self.msg_rate
        if rate is not None and np.nansum(rate) > 0:
            return int(np.argmax(rate))
        return int(np.argmax(self.counts))

    def topics_in(self, i: int) -> list[str]:
        return [self.topics[j] for j in np.flatnonzero(self.index == i)]

    def split(self, bundle=None, algorithm: str | None = None, **kwargs) -> SplitResult:
        """:func:`split_bundle` on ``bundle`` (default: :meth:`most_loaded`) with this layout's topics."""
        bundle = self.most_loaded() if bundle is None else bundle
        rate = None if self.topic_msg_rate is None else self.topic_msg_rate.tolist()
        thr = None if self.topic_throughput is None else self.topic_throughput.tolist()
        return split_bundle(self.boundaries, bundle, algorithm, topics=list(self.topics), msg_rate=rate,
                            throughput=thr, namespace=self.namespace, **kwargs)

    def auto_split(self, **config) -> AutoSplitResult:
        """:func:`auto_split` over this namespace's bundles with these per-bundle totals.

        The traffic here is whatever the topics carry (often instantaneous), not Pulsar's long-term
        averages.
        """
        names = self.bundle_names()
        return auto_split(names, self.counts.tolist(),
                          None if self.topic_sessions is None else self.sessions.tolist(),
                          None if self.topic_msg_rate is None else self.msg_rate.tolist(),
                          None if self.topic_throughput is None else self.throughput.tolist(),
                          {self.namespace: self.n_bundles}, **config)

    @property
    def has_non_persistent(self) -> np.ndarray:
        """Per bundle: holds a non-persistent topic (Pulsar's ``hasNonPersistentTopic``, §4.4)."""
        nonp = np.fromiter((t.startswith("non-persistent://") for t in self.topics), dtype=bool,
                           count=len(self.topics))
        return self._per_bundle(nonp.astype(float)) > 0

    def to_frame(self) -> pd.DataFrame:
        """One row per bundle: ``bundle, range, lower, upper, topics, msg_rate, throughput,
        has_non_persistent``."""
        b = self.boundaries
        df = pd.DataFrame({
            "bundle": self.bundle_names(),
            "range": bundle_ranges(b),
            "lower": b[:-1],
            "upper": b[1:],
            "topics": self.counts,
        })
        df["msg_rate"] = self.msg_rate if self.topic_msg_rate is not None else np.nan
        df["throughput"] = self.throughput if self.topic_throughput is not None else np.nan
        df["has_non_persistent"] = self.has_non_persistent
        return df


def _fast_namespace(full: str) -> str:
    """Namespace of a full name without re-validating it (legacy names keep their cluster)."""
    parts = full.split("://", 1)[1].split("/", 3)
    if len(parts) < 3:
        raise InputError(f"invalid topic name {full!r}: expected <domain>://<tenant>/<namespace>/<topic>")
    return "/".join(parts[:-1])


def build_layout(topics: Sequence[str], boundaries: Sequence[int] | np.ndarray | int, *,
                 namespace: str | None = None, msg_rate=None, throughput=None,
                 sessions=None) -> NamespaceLayout:
    """Assign one namespace's topics to its bundles.

    Parameters
    ----------
    topics : sequence of str
        Topic names; short names are completed and validated, names starting with
        ``persistent://``/``non-persistent://`` are trusted as full (speed). One namespace only.
    boundaries : int or array-like of int
        A number of initial bundles or the boundaries.
    namespace : str, optional
        Default: the topics' namespace (required when there are no topics).
    msg_rate, throughput, sessions : sequence, optional
        Per-topic in+out msg/s, in+out bytes/s, producers+consumers.

    Examples
    --------
    >>> lay = build_layout(partition_names("t", 30, namespace="a/b"), 180)
    >>> int(lay.counts.sum()), lay.n_bundles
    (30, 180)
    """
    full = [t if t.startswith(_FULL_PREFIXES) else normalize_topic_name(t) for t in topics]
    nss = {_fast_namespace(t) for t in full}
    if len(nss) > 1:
        raise InputError(f"topics of several namespaces ({', '.join(sorted(nss))}): build one layout per namespace")
    if namespace is None:
        if not nss:
            raise InputError("no topics and no namespace")
        namespace = nss.pop()
    elif nss and namespace not in nss:
        raise InputError(f"topics belong to {nss.pop()}, not {namespace}")
    b = initial_boundaries(boundaries) if isinstance(boundaries, (int, np.integer)) else check_boundaries(boundaries)
    h, idx = assign_bundles(full, b, normalize=False)

    def arr(x, what):
        if x is None:
            return None
        a = np.asarray([np.nan if v is None else v for v in x], dtype=float)
        if a.shape != (len(full),):
            raise InputError(f"{what} must have one value per topic")
        return a

    return NamespaceLayout(namespace, b, tuple(full), h, idx, arr(msg_rate, "msg_rate"),
                           arr(throughput, "throughput"), arr(sessions, "sessions"))
