"""Constants shared by the bundle modules: range bounds, split algorithm names, ``broker.conf`` defaults.

Also the lookup error and two scalar helpers (JSON-safe values, optional numbers) used by several modules.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
PARTITIONED_TOPIC_SUFFIX = "-partition-"

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPECIFIED_POSITIONS_DIVIDE = "specified_positions_divide"
FLOW_OR_QPS_EQUALLY_DIVIDE = "flow_or_qps_equally_divide"

#: the four split algorithm names, in Pulsar's order
SPLIT_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE, SPECIFIED_POSITIONS_DIVIDE,
                    FLOW_OR_QPS_EQUALLY_DIVIDE)

#: the ``broker.conf`` keys this module honours, with Pulsar 4.x defaults
BUNDLE_CONFIG_DEFAULTS: dict[str, Any] = {
    "defaultNumberOfNamespaceBundles": 4,
    "defaultNamespaceBundleSplitAlgorithm": RANGE_EQUALLY_DIVIDE,
    "supportedNamespaceBundleSplitAlgorithms": SPLIT_ALGORITHMS,
    "flowOrQpsDifferenceThresholdPercentage": 10,
    "loadBalancerAutoBundleSplitEnabled": True,
    "loadBalancerNamespaceBundleMaxTopics": 1000,
    "loadBalancerNamespaceBundleMaxSessions": 1000,
    "loadBalancerNamespaceBundleMaxMsgRate": 30000,
    "loadBalancerNamespaceBundleMaxBandwidthMbytes": 100,
    "loadBalancerNamespaceMaximumBundles": 128,
}

_MIBI = 1024 * 1024  # LoadManagerShared.MIBI / the flow algorithm's MBytes
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MAX = 2**31 - 1


class BundleLookupError(InputError):
    """A topic whose hash is exactly ``0xffffffff``: Pulsar's bundle lookup throws for it."""



def _clean(v):
    """JSON-safe scalar: numpy → Python, NaN/±inf → None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _num(x) -> float | None:
    if x is None:
        return None
    v = float(x)
    return None if math.isnan(v) else v

