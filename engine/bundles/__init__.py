"""Namespace bundles exactly as Pulsar builds them: topic → bundle hashing, ranges, splits, auto split.

A namespace's 32-bit hash range ``[0x00000000, 0xffffffff]`` is cut into bundles by sorted
*boundaries* ``p0 = 0 < p1 < … < pn = 0xffffffff``; bundle ``i`` is ``[p_i, p_{i+1})`` (the last
one is closed). A topic belongs to the bundle holding the CRC-32 of its full name. Load moves
bundle by bundle, so how evenly topics (and partitions, each hashed on its own) land in bundles
decides how lumpy the load is: see the vivo case (``field-findings.md`` §4) and
:func:`expected_max_over_mean`.

Everything here is pure (stdlib + numpy + pandas) and works on plain values: names, boundary
arrays, per-bundle counts and rates. Results are small dataclasses with ``to_json()``.

One concept per module; every public name is also importable from ``engine.bundles``:

* ``topics`` — topic names (``TopicName``, short-name completion, partitions);
* ``ranges`` — CRC-32 hashing, ranges and boundaries, bundle lookup, boundary edits;
* ``algorithms`` — the four split algorithms and :class:`SplitResult`;
* ``split`` — splitting one bundle of a layout as a broker does (algorithm choice, owned topics);
* ``autosplit`` — ``BundleSplitterTask``: which bundles the leader splits;
* ``distribution`` — Gini, max/mean, the spread random names would give;
* ``layout`` — :class:`NamespaceLayout`: one namespace's topics assigned to its bundles;
* ``constants`` — bounds, algorithm names, ``broker.conf`` defaults.

Examples
--------
>>> b = initial_boundaries(4)
>>> [format_bound(x) for x in b]
['0x00000000', '0x40000000', '0x80000000', '0xc0000000', '0xffffffff']
>>> hex(topic_hash("persistent://public/default/my-topic"))
'0x2bad45f7'
>>> bundle_of("my-topic", b)
'public/default/0x00000000_0x40000000'
>>> r = range_equally_divide(0x00000000, 0x40000000)
>>> r.label, [format_bound(x) for x in r.boundaries]
('Split', ['0x20000000'])
>>> apply_split(b, 0, 0x40000000, r.boundaries)[:3]
(0, 536870912, 1073741824)

Notes
-----
Pulsar sources reproduced (reference ``pulsar-load-balancing.md`` §7): ``TopicName``,
``ConsistentHashingTopicBundleAssigner``, ``NamespaceBundles.getBundle``, ``NamespaceBundle``,
``NamespaceBundleFactory.getBundle/splitBundles/canSplitBundle``, ``PoliciesUtil.getBundles``, the
four ``*BundleSplitAlgorithm`` classes, ``NamespaceService.getBundleSplitOption`` and
``BundleSplitterTask.findBundlesToSplit``.

Config keys honoured (as keyword arguments named exactly like the ``broker.conf`` keys, with
Pulsar's defaults; :func:`auto_split_from_config` and :func:`split_from_config` read them from a
config object by attribute name): ``defaultNumberOfNamespaceBundles``,
``defaultNamespaceBundleSplitAlgorithm``, ``supportedNamespaceBundleSplitAlgorithms``,
``flowOrQpsDifferenceThresholdPercentage``, ``loadBalancerAutoBundleSplitEnabled``,
``loadBalancerNamespaceBundleMaxTopics``, ``loadBalancerNamespaceBundleMaxSessions``,
``loadBalancerNamespaceBundleMaxMsgRate``, ``loadBalancerNamespaceBundleMaxBandwidthMbytes``,
``loadBalancerNamespaceMaximumBundles``. ``topicBundleAssignmentStrategy`` is assumed to be the
default ``ConsistentHashingTopicBundleAssigner`` (a custom assigner cannot be emulated).

Deliberate differences from Pulsar:

* **Hash exactly ``0xffffffff``.** Java's lookup indexes one past the last bundle and throws
  ``IndexOutOfBoundsException`` (the topic cannot be served). Here :func:`bundle_of` raises
  :class:`BundleLookupError`; the bulk :func:`bundle_indices` / :func:`assign_bundles` return the
  documented flag ``-1`` for such topics (and they are left out of every count) so one unlucky
  name does not abort a million-topic run.
* **Stricter parsing.** Bundle ranges must have exactly two ``_``-separated halves inside
  ``[0, 0xffffffff]`` (Java ignores a third half and only fails later); topic names with an empty
  tenant, cluster or namespace are rejected (Java's regex accepts empty names).
* **Errors are values.** Where Pulsar logs and returns ``null`` (no split) the result has
  ``label="Skip"``; where it throws, ``label="Failure"``; both carry the reason.
* **Iteration order is the caller's.** ``BundleSplitterTask`` walks brokers and each broker's
  ``lastStats`` in Java hash-map order, which matters only when ``loadBalancerNamespaceMaximumBundles``
  cuts a round short; :func:`auto_split` walks the bundles in the order given.
* **Expected spread is Monte-Carlo**, not exact (see :func:`expected_max_over_mean`); it is an
  analysis aid with no Pulsar counterpart.
"""
from __future__ import annotations

from .algorithms import (
    SplitResult,
    flow_or_qps_equally_divide,
    range_equally_divide,
    specified_positions_divide,
    topic_count_equally_divide,
)
from .autosplit import AutoSplitDecision, AutoSplitResult, ThresholdHit, auto_split, auto_split_from_config
from .constants import (
    BUNDLE_CONFIG_DEFAULTS,
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    FULL_LOWER_BOUND,
    FULL_UPPER_BOUND,
    PARTITIONED_TOPIC_SUFFIX,
    RANGE_EQUALLY_DIVIDE,
    SPECIFIED_POSITIONS_DIVIDE,
    SPLIT_ALGORITHMS,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    BundleLookupError,
)
from .distribution import (
    PARTITION_MODEL_MAX_HASHES,
    Distribution,
    ExpectedSpread,
    distribution,
    expected_max_over_mean,
    gini,
)
from .layout import NamespaceLayout, build_layout
from .ranges import (
    apply_split,
    assign_bundles,
    boundaries_from_ranges,
    bundle_indices,
    bundle_name,
    bundle_of,
    bundle_ranges,
    can_split_bundle,
    check_boundaries,
    divide_range,
    format_bound,
    format_range,
    initial_boundaries,
    java_long_decode,
    parse_bundle_name,
    parse_range,
    topic_hash,
    topic_hashes,
)
from .split import split_bundle, split_from_config
from .topics import TopicName, normalize_topic_name, parse_topic_name, partition_names

__all__ = [
    # constants
    "FULL_LOWER_BOUND",
    "FULL_UPPER_BOUND",
    "RANGE_EQUALLY_DIVIDE",
    "TOPIC_COUNT_EQUALLY_DIVIDE",
    "SPECIFIED_POSITIONS_DIVIDE",
    "FLOW_OR_QPS_EQUALLY_DIVIDE",
    "SPLIT_ALGORITHMS",
    "BUNDLE_CONFIG_DEFAULTS",
    "PARTITIONED_TOPIC_SUFFIX",
    "BundleLookupError",
    # topic names
    "TopicName",
    "parse_topic_name",
    "normalize_topic_name",
    "partition_names",
    # hashing and lookup
    "topic_hash",
    "topic_hashes",
    "initial_boundaries",
    "check_boundaries",
    "boundaries_from_ranges",
    "java_long_decode",
    "format_bound",
    "format_range",
    "parse_range",
    "bundle_name",
    "parse_bundle_name",
    "bundle_ranges",
    "bundle_indices",
    "assign_bundles",
    "bundle_of",
    # splits
    "SplitResult",
    "can_split_bundle",
    "range_equally_divide",
    "topic_count_equally_divide",
    "specified_positions_divide",
    "flow_or_qps_equally_divide",
    "split_bundle",
    "split_from_config",
    "divide_range",
    "apply_split",
    # auto split
    "ThresholdHit",
    "AutoSplitDecision",
    "AutoSplitResult",
    "auto_split",
    "auto_split_from_config",
    # metrics
    "Distribution",
    "distribution",
    "gini",
    "ExpectedSpread",
    "expected_max_over_mean",
    "PARTITION_MODEL_MAX_HASHES",
    "NamespaceLayout",
    "build_layout",
]
