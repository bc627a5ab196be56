"""Splitting one bundle of a layout as a broker does (``splitNamespaceBundle``): algorithm choice, owned topics."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from .algorithms import (
    SplitResult,
    flow_or_qps_equally_divide,
    range_equally_divide,
    specified_positions_divide,
    topic_count_equally_divide,
)
from .constants import (
    BUNDLE_CONFIG_DEFAULTS,
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    RANGE_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
    SPLIT_ALGORITHMS,
    TOPIC_COUNT_EQUALLY_DIVIDE,
)
from .ranges import initial_boundaries  # noqa: F401 (the doctests use it)
from .ranges import _resolve_bundle, check_boundaries, parse_bundle_name, topic_hashes

def split_bundle(
    boundaries: Sequence[int] | np.ndarray,
    bundle: str | int | tuple[int, int],
    algorithm: str | None = None,
    *,
    topics: Sequence[str] | None = None,
    msg_rate: Sequence[float | None] | None = None,
    throughput: Sequence[float | None] | None = None,
    positions: Sequence[int] | None = None,
    force: bool = False,
    namespace: str | None = None,
    defaultNamespaceBundleSplitAlgorithm: str = RANGE_EQUALLY_DIVIDE,
    supportedNamespaceBundleSplitAlgorithms: Sequence[str] = SPLIT_ALGORITHMS,
    loadBalancerNamespaceBundleMaxMsgRate: int = 30000,
    loadBalancerNamespaceBundleMaxBandwidthMbytes: int = 100,
    flowOrQpsDifferenceThresholdPercentage: int = 10,
) -> SplitResult:
    """Split one bundle of a layout the way a broker does on ``splitNamespaceBundle``.

    Parameters
    ----------
    boundaries : array-like of int
        The namespace's boundaries.
    bundle : str, int or (lower, upper)
        The bundle: a range ``0x..._0x...``, a full bundle name, its index, or its bounds.
    algorithm : str, optional
        One of :data:`SPLIT_ALGORITHMS`; ``None`` (auto split, or an admin call without one) uses
        ``defaultNamespaceBundleSplitAlgorithm``, and if that is unknown ``range_equally_divide``.
    topics : sequence of str, optional
        Topics of the namespace (full names); only those hashing into the bundle count as its
        owned topics.
    msg_rate, throughput : sequence, optional
        Per-topic traffic aligned with ``topics`` (for ``flow_or_qps_equally_divide``).
    positions, force
        For ``specified_positions_divide``.
    namespace : str, optional
        Namespace for the result's full bundle name.
    defaultNamespaceBundleSplitAlgorithm, supportedNamespaceBundleSplitAlgorithms,
    loadBalancerNamespaceBundleMaxMsgRate, loadBalancerNamespaceBundleMaxBandwidthMbytes,
    flowOrQpsDifferenceThresholdPercentage
        The ``broker.conf`` keys of the same names.

    Returns
    -------
    SplitResult
        ``Failure`` for an unsupported algorithm name (admin REST: 412), for
        ``flow_or_qps_equally_divide`` when it is not the default algorithm (Pulsar fails on the
        option type), and whenever ``splitBundles`` would throw.

    Notes
    -----
    Name resolution follows the admin path: a name outside ``supportedNamespaceBundleSplitAlgorithms``
    is refused before anything runs; a supported name Pulsar does not know (possible only with a
    hand-edited supported list), like ``None``, falls back to the configured default and then to
    ``range_equally_divide`` (``getNamespaceBundleSplitAlgorithmByName``).

    Examples
    --------
    >>> r = split_bundle(initial_boundaries(4), "0xc0000000_0xffffffff")
    >>> r.algorithm, r.children[0] == (0xC0000000, 0xDFFFFFFF)
    ('range_equally_divide', True)
    >>> split_bundle(initial_boundaries(4), 0, "flow_or_qps_equally_divide").label
    'Failure'
    """
    b = check_boundaries(boundaries)
    lower, upper = _resolve_bundle(b, bundle)
    supported = tuple(supportedNamespaceBundleSplitAlgorithms)
    if algorithm is not None and str(algorithm).strip():
        if algorithm not in supported:
            return SplitResult(str(algorithm), lower, upper, "Failure",
                               f"unsupported namespace bundle split algorithm {algorithm!r}; supported: "
                               f"{', '.join(supported)}", namespace=namespace)
        name = algorithm
    else:
        name = None
    # getNamespaceBundleSplitAlgorithmByName: unknown → the configured default → range_equally_divide
    if name not in SPLIT_ALGORITHMS:
        name = defaultNamespaceBundleSplitAlgorithm
    if name not in SPLIT_ALGORITHMS:
        name = RANGE_EQUALLY_DIVIDE
    owned, owned_rate, owned_thr = _owned(b, lower, upper, topics, msg_rate, throughput)
    if name == RANGE_EQUALLY_DIVIDE:
        r = range_equally_divide(lower, upper)
    elif name == TOPIC_COUNT_EQUALLY_DIVIDE:
        r = topic_count_equally_divide(lower, upper, owned)
    elif name == SPECIFIED_POSITIONS_DIVIDE:
        r = specified_positions_divide(lower, upper, positions, owned, force=force)
    else:
        if defaultNamespaceBundleSplitAlgorithm != FLOW_OR_QPS_EQUALLY_DIVIDE:
            r = SplitResult(name, lower, upper, "Failure",
                            "flow_or_qps_equally_divide needs it to be the configured default algorithm "
                            f"(defaultNamespaceBundleSplitAlgorithm is {defaultNamespaceBundleSplitAlgorithm!r}; "
                            "the broker builds the traffic option only then)")
        elif owned_rate is None:
            raise InputError("flow_or_qps_equally_divide needs per-topic msg_rate and throughput")
        else:
            r = flow_or_qps_equally_divide(
                lower, upper, owned, owned_rate, owned_thr,
                loadBalancerNamespaceBundleMaxMsgRate=loadBalancerNamespaceBundleMaxMsgRate,
                loadBalancerNamespaceBundleMaxBandwidthMbytes=loadBalancerNamespaceBundleMaxBandwidthMbytes,
                flowOrQpsDifferenceThresholdPercentage=flowOrQpsDifferenceThresholdPercentage)
    if namespace is None and isinstance(bundle, str) and "/" in bundle:
        namespace = parse_bundle_name(bundle)[0]
    return SplitResult(r.algorithm, r.lower, r.upper, r.label, r.reason, r.boundaries, namespace)


def split_from_config(cfg: Any, boundaries, bundle, algorithm: str | None = None, **kwargs) -> SplitResult:
    """:func:`split_bundle` with the split keys read from ``cfg`` by attribute name.

    Missing attributes fall back to Pulsar's defaults (:data:`BUNDLE_CONFIG_DEFAULTS`).
    """
    keys = ("defaultNamespaceBundleSplitAlgorithm", "supportedNamespaceBundleSplitAlgorithms",
            "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes",
            "flowOrQpsDifferenceThresholdPercentage")
    conf = {k: getattr(cfg, k, BUNDLE_CONFIG_DEFAULTS[k]) for k in keys}
    conf.update(kwargs)
    return split_bundle(boundaries, bundle, algorithm, **conf)


def _owned(b, lower, upper, topics, msg_rate, throughput):
    if topics is None:
        return [], None, None
    topics = list(topics)
    if not topics:
        return [], ([] if msg_rate is not None else None), ([] if throughput is not None else None)
    h = topic_hashes(topics)
    # [lower, upper); the last bundle is closed but its one extra hash, 0xffffffff, is served by
    # no bundle (Pulsar's lookup throws for it), so the half-open test is right for every bundle
    sel = np.flatnonzero((h >= lower) & (h < upper))
    owned = [topics[i] for i in sel]
    if msg_rate is None or throughput is None:
        return owned, None, None
    if len(msg_rate) != len(topics) or len(throughput) != len(topics):
        raise InputError("topics, msg_rate and throughput must have the same length")
    return owned, [msg_rate[i] for i in sel], [throughput[i] for i in sel]
