"""Automatic bundle split: which bundles the leader's ``BundleSplitterTask`` would split, and why."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from ..errors import InputError
from .constants import _MIBI, BUNDLE_CONFIG_DEFAULTS, _clean, _num

@dataclass(frozen=True)
class ThresholdHit:
    """One auto-split threshold a bundle exceeds: ``value > limit`` for config ``key``."""

    key: str
    quantity: str
    value: float
    limit: float

    def __str__(self) -> str:
        return f"{self.quantity} {self.value:.12g} > {self.key} {self.limit:.12g}"

    def to_json(self) -> dict:
        return {"key": self.key, "quantity": self.quantity, "value": _clean(self.value), "limit": _clean(self.limit)}


@dataclass(frozen=True)
class AutoSplitDecision:
    """Whether one bundle is chosen for an automatic split, and why.

    ``label`` is ``"Split"`` or ``"Skip"``; ``hits`` lists every exceeded threshold (Pulsar ORs them).
    """

    bundle: str
    namespace: str
    label: str
    reason: str
    hits: tuple = ()
    broker: str | None = None
    topics: int = 0
    sessions: int = 0
    msg_rate: float = 0.0
    throughput: float = 0.0

    def to_json(self) -> dict:
        return {"bundle": self.bundle, "namespace": self.namespace, "broker": self.broker, "label": self.label,
                "reason": self.reason, "hits": [h.to_json() for h in self.hits], "topics": self.topics,
                "sessions": self.sessions, "msg_rate": _clean(self.msg_rate), "throughput": _clean(self.throughput)}


@dataclass(frozen=True)
class AutoSplitResult:
    """All auto-split decisions of one ``BundleSplitterTask`` round, in walk order."""

    decisions: tuple
    enabled: bool = True
    config: dict = field(default_factory=dict)

    @property
    def to_split(self) -> dict:
        """``{bundle: broker}`` of the chosen bundles (``bundleCache`` in Pulsar)."""
        return {d.bundle: d.broker for d in self.decisions if d.label == "Split"}

    def to_frame(self) -> pd.DataFrame:
        """One row per bundle: bundle, namespace, broker, label, reason, topics, sessions, rates."""
        cols = ["bundle", "namespace", "broker", "label", "reason", "topics", "sessions", "msg_rate", "throughput"]
        return pd.DataFrame([{c: getattr(d, c) for c in cols} for d in self.decisions], columns=cols)

    def to_json(self) -> dict:
        return {"enabled": self.enabled, "config": dict(self.config),
                "to_split": list(self.to_split), "decisions": [d.to_json() for d in self.decisions]}


def auto_split(
    bundles: Sequence[str],
    topics: Sequence[int],
    sessions: Sequence[int] | None = None,
    msg_rate: Sequence[float | None] | None = None,
    throughput: Sequence[float | None] | None = None,
    namespace_bundle_counts: Mapping[str, int] | None = None,
    *,
    brokers: Sequence[str | None] | None = None,
    loadBalancerAutoBundleSplitEnabled: bool = True,
    loadBalancerNamespaceBundleMaxTopics: int = 1000,
    loadBalancerNamespaceBundleMaxSessions: int = 1000,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    loadBalancerNamespaceMaximumBundles: int = 128,
) -> AutoSplitResult:
    """Which bundles the leader would split (``BundleSplitterTask.findBundlesToSplit``).

    Parameters
    ----------
    bundles : sequence of str
        Full bundle names, in the order the leader walks them (broker by broker, ``lastStats`` order).
    topics : sequence of int
        Per bundle ``topics`` of the broker's last (instantaneous) ``NamespaceBundleStats``.
    sessions : sequence of int, optional
        Per bundle ``consumerCount + producerCount`` (default 0).
    msg_rate, throughput : sequence of float or None, optional
        Per bundle long-term ``totalMsgRate()`` (msg/s) and ``totalMsgThroughput()`` (bytes/s) of its
        ``BundleData``; ``None``/NaN when the bundle has no ``BundleData`` (Pulsar then uses 0).
    namespace_bundle_counts : mapping, optional
        Current number of bundles of each namespace; default: the number of distinct ``bundles``
        of that namespace in the input.
    brokers : sequence of str, optional
        Owner broker of each bundle (carried into the result).
    loadBalancerAutoBundleSplitEnabled, loadBalancerNamespaceBundleMaxTopics,
    loadBalancerNamespaceBundleMaxSessions, loadBalancerNamespaceBundleMaxMsgRate,
    loadBalancerNamespaceBundleMaxBandwidthMbytes, loadBalancerNamespaceMaximumBundles
        The ``broker.conf`` keys of the same names, with Pulsar's defaults.

    Returns
    -------
    AutoSplitResult

    Notes
    -----
    A bundle with fewer than 2 topics is never split. Otherwise it is a candidate when
    ``topics > MaxTopics`` or (``MaxSessions > 0`` and ``sessions > MaxSessions``) or
    ``rate > MaxMsgRate`` or ``throughput > MaxBandwidthMbytes·2^20``; a candidate is chosen while
    ``bundle count + chosen this round < loadBalancerNamespaceMaximumBundles``. With auto split
    disabled (``checkNamespaceBundleSplit`` returns early) every decision is Skip, but the exceeded
    thresholds are still listed. Walk order is the caller's (see the module Notes).

    Examples
    --------
    >>> r = auto_split(["a/b/0x00000000_0x80000000", "a/b/0x80000000_0xffffffff"], [1500, 1],
    ...                namespace_bundle_counts={"a/b": 2})
    >>> r.to_split
    {'a/b/0x00000000_0x80000000': None}
    >>> r.decisions[0].reason
    'topics 1500 > loadBalancerNamespaceBundleMaxTopics 1000'
    """
    n = len(bundles)

    def col(x, default):
        if x is None:
            return [default] * n
        if len(x) != n:
            raise InputError("auto_split: every per-bundle input must have one value per bundle")
        return list(x)

    topics_, sessions_ = col(topics, 0), col(sessions, 0)
    rate_, thr_, brokers_ = col(msg_rate, None), col(throughput, None), col(brokers, None)
    max_topics = int(loadBalancerNamespaceBundleMaxTopics)
    max_sessions = int(loadBalancerNamespaceBundleMaxSessions)
    max_rate = int(loadBalancerNamespaceBundleMaxMsgRate)
    max_bw = int(loadBalancerNamespaceBundleMaxBandwidthMbytes) * _MIBI
    max_bundles = int(loadBalancerNamespaceMaximumBundles)
    namespaces = [b[: b.rfind("/")] if "/" in b else b for b in bundles]
    counts = dict(namespace_bundle_counts or {})
    for ns in set(namespaces) - set(counts):
        counts[ns] = len({b for b, s in zip(bundles, namespaces) if s == ns})
    chosen: dict[str, int] = {}
    out = []
    for i, bundle in enumerate(bundles):
        ns = namespaces[i]
        t, s = int(topics_[i]), int(sessions_[i])
        r, th = _num(rate_[i]) or 0.0, _num(thr_[i]) or 0.0
        common = dict(bundle=bundle, namespace=ns, broker=brokers_[i], topics=t, sessions=s, msg_rate=r, throughput=th)
        if t < 2:
            out.append(AutoSplitDecision(label="Skip", reason=f"{t} topic{'s' if t != 1 else ''} (< 2): never split",
                                         **common))
            continue
        hits = []
        if t > max_topics:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxTopics", "topics", t, max_topics))
        if max_sessions > 0 and s > max_sessions:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxSessions", "sessions", s, max_sessions))
        if r > max_rate:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxMsgRate", "msg rate", r, max_rate))
        if th > max_bw:
            hits.append(ThresholdHit("loadBalancerNamespaceBundleMaxBandwidthMbytes",
                                     "throughput (B/s; limit = MB·2^20)", th, max_bw))
        hits_t = tuple(hits)
        if not hits:
            out.append(AutoSplitDecision(label="Skip", reason="within every split threshold", **common))
            continue
        why = "; ".join(str(h) for h in hits)
        if not loadBalancerAutoBundleSplitEnabled:
            out.append(AutoSplitDecision(label="Skip", reason=f"{why}, but auto split is disabled "
                                         "(loadBalancerAutoBundleSplitEnabled=false)", hits=hits_t, **common))
            continue
        have, already = counts[ns], chosen.get(ns, 0)
        if have + already < max_bundles:
            chosen[ns] = already + 1
            out.append(AutoSplitDecision(label="Split", reason=why, hits=hits_t, **common))
        else:
            out.append(AutoSplitDecision(
                label="Skip", hits=hits_t,
                reason=f"{why}, but namespace {ns} has {have} bundles + {already} chosen this round ≥ "
                       f"loadBalancerNamespaceMaximumBundles {max_bundles}", **common))
    conf = {"loadBalancerAutoBundleSplitEnabled": bool(loadBalancerAutoBundleSplitEnabled),
            "loadBalancerNamespaceBundleMaxTopics": max_topics,
            "loadBalancerNamespaceBundleMaxSessions": max_sessions,
            "loadBalancerNamespaceBundleMaxMsgRate": max_rate,
            "loadBalancerNamespaceBundleMaxBandwidthMbytes": int(loadBalancerNamespaceBundleMaxBandwidthMbytes),
            "loadBalancerNamespaceMaximumBundles": max_bundles}
    return AutoSplitResult(tuple(out), bool(loadBalancerAutoBundleSplitEnabled), conf)


_AUTO_KEYS = ("loadBalancerAutoBundleSplitEnabled", "loadBalancerNamespaceBundleMaxTopics",
              "loadBalancerNamespaceBundleMaxSessions", "loadBalancerNamespaceBundleMaxMsgRate",
              "loadBalancerNamespaceBundleMaxBandwidthMbytes", "loadBalancerNamespaceMaximumBundles")


def auto_split_from_config(cfg: Any, bundles, topics, sessions=None, msg_rate=None, throughput=None,
                           namespace_bundle_counts=None, *, brokers=None) -> AutoSplitResult:
    """:func:`auto_split` with its thresholds read from ``cfg`` by ``broker.conf`` key name.

    ``cfg`` is any object with those attributes (e.g. ``engine.config.LoadBalancerConfig``);
    a missing attribute falls back to Pulsar's default.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(loadBalancerNamespaceBundleMaxTopics=10)
    >>> auto_split_from_config(cfg, ["a/b/0x00000000_0xffffffff"], [11]).to_split
    {'a/b/0x00000000_0xffffffff': None}
    """
    conf = {k: getattr(cfg, k, BUNDLE_CONFIG_DEFAULTS[k]) for k in _AUTO_KEYS}
    return auto_split(bundles, topics, sessions, msg_rate, throughput, namespace_bundle_counts,
                      brokers=brokers, **conf)
