"""The four bundle split algorithms (Pulsar's ``*BundleSplitAlgorithm`` classes) and their result.

Each takes one bundle's range (and its owned topics or traffic) and returns a :class:`SplitResult`
whose label follows what ``NamespaceService`` + ``splitBundles`` do with the algorithm's boundaries.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..errors import InputError
from .constants import (
    _MIBI,
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    RANGE_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    _num,
)
from .ranges import _check_range, apply_split, bundle_name, can_split_bundle, check_boundaries, format_bound, \
    format_range, topic_hash

@dataclass(frozen=True)
class SplitResult:
    """The outcome of a split request on one bundle.

    Attributes
    ----------
    algorithm : str
        The algorithm that ran.
    lower, upper : int
        The bundle's range.
    label : str
        ``"Split"`` (boundaries found and accepted by ``splitBundles``), ``"Skip"`` (the algorithm
        returned no boundary: Pulsar logs and does nothing) or ``"Failure"`` (Pulsar throws).
    reason : str
        Why, with the numbers.
    boundaries : tuple of int
        The split points (sorted); also kept on ``Failure`` to show what was refused.
    namespace : str or None
        Set by :func:`split_bundle` for full bundle names.
    """

    algorithm: str
    lower: int
    upper: int
    label: str
    reason: str
    boundaries: tuple = ()
    namespace: str | None = None

    @property
    def ok(self) -> bool:
        """True when the bundle is split."""
        return self.label == "Split"

    @property
    def bundle_range(self) -> str:
        return format_range(self.lower, self.upper)

    @property
    def children(self) -> tuple:
        """``(lower, upper)`` of each child bundle (empty unless ``ok``)."""
        if not self.ok:
            return ()
        pts = (self.lower, *self.boundaries, self.upper)
        return tuple(zip(pts[:-1], pts[1:]))

    def apply(self, boundaries: Sequence[int] | np.ndarray) -> np.ndarray:
        """The namespace's boundaries after this split (unchanged when not ``ok``)."""
        b = check_boundaries(boundaries)
        if not self.ok:
            return b
        return np.asarray(apply_split(b, self.lower, self.upper, self.boundaries), dtype=np.int64)

    def to_json(self) -> dict:
        out = {
            "algorithm": self.algorithm,
            "bundle": (bundle_name(self.namespace, self.lower, self.upper) if self.namespace
                       else self.bundle_range),
            "range": self.bundle_range,
            "label": self.label,
            "reason": self.reason,
            "boundaries": [int(x) for x in self.boundaries],
            "boundaries_hex": [format_bound(x) for x in self.boundaries],
            "children": [format_range(lo, up) for lo, up in self.children],
        }
        return out

def _finish(algorithm: str, lower: int, upper: int, points, skip_reason: str, note: str = "") -> SplitResult:
    """What ``NamespaceService`` + ``splitBundles`` do with an algorithm's boundaries."""
    rng = format_range(lower, upper)
    if not points:  # null/empty: "No valid boundary found ... to split bundle"
        return SplitResult(algorithm, lower, upper, "Skip", skip_reason)
    pts = tuple(sorted(int(p) for p in points))  # Collections.sort(splitBoundaries)
    hexes = ", ".join(format_bound(p) for p in pts)
    if not can_split_bundle(lower, upper):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"{rng} can't be split further since range not larger than 1", pts)
    if not (pts[0] > lower and pts[-1] < upper):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"boundaries {hexes} are not all strictly inside ({format_bound(lower)}, "
                           f"{format_bound(upper)}) (splitBundles: the fixed keys must be between the key range)", pts)
    if len(set(pts)) != len(pts):
        return SplitResult(algorithm, lower, upper, "Failure",
                           f"duplicate boundaries {hexes} would create an empty bundle (Pulsar: cannot create "
                           "bundle object for an empty key range)", pts)
    reason = f"split {rng} at {hexes} into {len(pts) + 1} bundles" + (f"; {note}" if note else "")
    return SplitResult(algorithm, lower, upper, "Split", reason, pts)


def range_equally_divide(lower: int, upper: int) -> SplitResult:
    """``RangeEquallyDivideBundleSplitAlgorithm``: one boundary at ``lower + (upper − lower) // 2``.

    The default algorithm (``defaultNamespaceBundleSplitAlgorithm``).

    Examples
    --------
    >>> format_bound(range_equally_divide(0xC0000000, 0xFFFFFFFF).boundaries[0])
    '0xdfffffff'
    >>> range_equally_divide(5, 6).label
    'Failure'
    """
    lower, upper = _check_range(lower, upper)
    return _finish(RANGE_EQUALLY_DIVIDE, lower, upper, [lower + (upper - lower) // 2], "")


def topic_count_equally_divide(lower: int, upper: int, topics: Sequence[str]) -> SplitResult:
    """``TopicCountEquallyDivideBundleSplitAlgorithm``: cut between the two middle topic hashes.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    topics : sequence of str
        The bundle's owned topics (full names, each partition separately).

    Notes
    -----
    ``≤ 1`` topic → Skip. ``H`` = sorted CRC-32 of the names; ``s = H[max(n//2 − 1, 0)]``,
    ``e = H[n//2]``; boundary ``s + (e − s)//2``. The boundary can equal ``s``, and even the
    bundle's lower bound, in which case ``splitBundles`` refuses it (Failure), as in Pulsar.

    Examples
    --------
    >>> topic_count_equally_divide(0, 0xFFFFFFFF, ["persistent://a/b/t"]).reason
    'the bundle has 1 topic (≤ 1): no split'
    """
    lower, upper = _check_range(lower, upper)
    topics = list(topics or ())
    n = len(topics)
    if n <= 1:
        return SplitResult(TOPIC_COUNT_EQUALLY_DIVIDE, lower, upper, "Skip",
                           f"the bundle has {n} topic{'s' if n != 1 else ''} (≤ 1): no split")
    h = sorted(topic_hash(t) for t in topics)
    s, e = h[max(n // 2 - 1, 0)], h[n // 2]
    note = f"{n} topics, middle hashes {format_bound(s)} and {format_bound(e)}"
    return _finish(TOPIC_COUNT_EQUALLY_DIVIDE, lower, upper, [s + (e - s) // 2], "", note)


def specified_positions_divide(lower: int, upper: int, positions: Sequence[int] | None,
                               topics: Sequence[str] | None = None, *, force: bool = False) -> SplitResult:
    """``SpecifiedPositionsBundleSplitAlgorithm``: split at the given positions inside the range.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    positions : sequence of int
        Requested split points (``splitBoundaries`` of the admin call). Required.
    topics : sequence of str, optional
        The bundle's owned topics; with ``force=False`` a bundle with ≤ 1 topic is not split.
    force : bool, default False
        Split even with ≤ 1 topic.

    Notes
    -----
    Positions outside ``(lower, upper)`` are dropped silently by Pulsar; the reason names them.
    No position left → Skip. Empty/None positions → Failure (``IllegalArgumentException``).

    Examples
    --------
    >>> r = specified_positions_divide(0, 0x40000000, [0x10000000, 0x50000000], force=True)
    >>> r.label, [format_bound(x) for x in r.boundaries]
    ('Split', ['0x10000000'])
    """
    lower, upper = _check_range(lower, upper)
    if not positions:
        return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Failure",
                           "specified_positions_divide needs split positions (SplitBoundaries can't be empty)")
    pos = sorted(int(p) for p in positions)
    if not force:
        n = len(topics or ())
        if n <= 1:
            return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Skip",
                               f"the bundle has {n} topic{'s' if n != 1 else ''} (≤ 1) and force is off: no split")
    inside = [p for p in pos if lower < p < upper]
    dropped = [p for p in pos if not lower < p < upper]
    window = f"({format_bound(lower)}, {format_bound(upper)})"
    if not inside:
        return SplitResult(SPECIFIED_POSITIONS_DIVIDE, lower, upper, "Skip",
                           f"no position inside {window}: "
                           f"{', '.join(format_bound(p) for p in dropped)} are outside: no split")
    note = (f"ignored {len(dropped)} position(s) outside {window}: {', '.join(format_bound(p) for p in dropped)}"
            if dropped else "")
    return _finish(SPECIFIED_POSITIONS_DIVIDE, lower, upper, inside, "", note)



def flow_or_qps_equally_divide(
    lower: int,
    upper: int,
    topics: Sequence[str],
    msg_rate: Sequence[float | None],
    throughput: Sequence[float | None],
    *,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    flowOrQpsDifferenceThresholdPercentage: int = 10,
) -> SplitResult:
    """``FlowOrQpsEquallyDivideBundleSplitAlgorithm``: cut where accumulated traffic exceeds the limits.

    Parameters
    ----------
    lower, upper : int
        The bundle's range.
    topics : sequence of str
        The bundle's owned topics (full names).
    msg_rate, throughput : sequence of float or None
        Per topic ``msgRateIn + msgRateOut`` (msg/s) and ``msgThroughputIn + msgThroughputOut``
        (bytes/s); ``None``/NaN = no stats for that topic.
    loadBalancerNamespaceBundleMaxMsgRate, loadBalancerNamespaceBundleMaxBandwidthMbytes,
    flowOrQpsDifferenceThresholdPercentage
        The config keys of the same names (R, B in MB, d in %).

    Notes
    -----
    ``≤ 1`` owned topic → Skip. Topics without stats or with ``rate ≤ 0 and throughput ≤ 0`` are
    left out; fewer than 2 left, or ``Σrate < R·(1+d)`` and ``Σthr < B·2^20·(1+d)`` → Skip. Then walk
    the sorted hashes accumulating rate and throughput; when adding topic ``i`` would exceed ``R``
    or ``B·2^20``, emit ``H[i−1] + (H[i] − H[i−1])//2 + 1`` and restart at topic ``i``. Topics with
    the same hash share one map entry (the last one wins), exactly like Pulsar's ``HashMap``.

    The broker only builds this algorithm's input when ``defaultNamespaceBundleSplitAlgorithm`` is
    ``flow_or_qps_equally_divide``; that gate lives in :func:`split_bundle`, not here.

    Examples
    --------
    >>> r = flow_or_qps_equally_divide(0, 0xFFFFFFFF, ["persistent://a/b/x", "persistent://a/b/y"],
    ...                                [10.0, 10.0], [0.0, 0.0], loadBalancerNamespaceBundleMaxMsgRate=100)
    >>> r.label
    'Skip'
    """
    lower, upper = _check_range(lower, upper)
    topics = list(topics or ())
    if len(msg_rate) != len(topics) or len(throughput) != len(topics):
        raise InputError("flow_or_qps_equally_divide: topics, msg_rate and throughput must have the same length")
    algo = FLOW_OR_QPS_EQUALLY_DIVIDE
    if len(topics) <= 1:
        return SplitResult(algo, lower, upper, "Skip",
                           f"the bundle has {len(topics)} topic{'s' if len(topics) != 1 else ''} (≤ 1): no split")
    max_rate = int(loadBalancerNamespaceBundleMaxMsgRate)
    max_bytes = int(loadBalancerNamespaceBundleMaxBandwidthMbytes) * _MIBI
    diff = int(flowOrQpsDifferenceThresholdPercentage) / 100.0
    info: dict[int, tuple[float, float]] = {}
    hashes: list[int] = []
    total_rate = total_thr = 0.0
    for name, r, t in zip(topics, msg_rate, throughput):
        r, t = _num(r), _num(t)
        if r is None or t is None:  # topicStats == null
            continue
        if r <= 0 and t <= 0:  # skip empty topic
            continue
        h = topic_hash(name)
        hashes.append(h)
        info[h] = (r, t)
        total_thr += t
        total_rate += r
    if len(info) < 2:
        return SplitResult(algo, lower, upper, "Skip",
                           f"only {len(info)} topic(s) with traffic (need ≥ 2): no split")
    if total_rate < max_rate * (1 + diff) and total_thr < max_bytes * (1 + diff):
        return SplitResult(algo, lower, upper, "Skip",
                           f"bundle rate {total_rate:,.6g} msg/s < {max_rate}·(1+{diff:g}) and throughput "
                           f"{total_thr:,.0f} B/s < {max_bytes}·(1+{diff:g}): no split")
    hashes.sort()
    out: list[int] = []
    acc_r, acc_t = info[hashes[0]]
    for i in range(1, len(hashes)):
        r, t = info[hashes[i]]
        if acc_r + r > max_rate or acc_t + t > max_bytes:
            s, e = hashes[i - 1], hashes[i]
            out.append(s + (e - s) // 2 + 1)
            acc_r, acc_t = r, t
        else:
            acc_r += r
            acc_t += t
    note = (f"{len(hashes)} topics with traffic, {total_rate:,.6g} msg/s, {total_thr:,.0f} B/s; limits "
            f"{max_rate} msg/s, {max_bytes} B/s per bundle")
    return _finish(algo, lower, upper, out, f"traffic never exceeds a limit while walking the hashes: no split "
                   f"({note})", note)
