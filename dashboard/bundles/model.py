"""The Bundles page's values: its constants, a parsed topic source, a namespace layout as the page shows
it, its metrics and the vivo comparison."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from engine import bundles as B
from engine.topics_input import TopicList

__all__ = ["MB", "MAX_UPLOAD_BYTES", "GEN", "DEFAULT_TOPIC", "DEFAULT_NAMESPACE", "VIVO_BUNDLES", "VIVO_PARTITIONS",
           "VIVO_OBSERVED_MAX", "PARTITIONS_RANGE", "BUNDLES_RANGE", "TRIALS", "SEED", "THRESHOLD_KEYS",
           "OPT_INPUT_LAYOUT", "OPT_EXPAND", "TopicSource", "BundlesView", "Summary", "Comparison", "ComparisonRow"]

MB = 1024 * 1024
#: largest upload accepted (printed beside the drop zone, given to ``dcc.Upload(max_size=...)`` and
#: re-checked here on the decoded bytes)
MAX_UPLOAD_BYTES = int(float(os.getenv("SHEDLAB_BUNDLES_MAX_UPLOAD_MB", "20")) * MB)
GEN = "gen"
DEFAULT_TOPIC = "t"
DEFAULT_NAMESPACE = "a/b"
#: field findings §4: one topic, 30 partitions on 180 bundles → two bundles held 4 partitions
VIVO_BUNDLES = 180
VIVO_PARTITIONS = (30, 120)
VIVO_OBSERVED_MAX = 4
#: slider ranges (the engine accepts more; a bar chart of more bundles is unreadable)
PARTITIONS_RANGE = (1, 512)
BUNDLES_RANGE = (1, 1024)
#: Monte-Carlo of the expected spread
TRIALS = 1000
SEED = 0
#: the split keys that get a slider, in the order shown
THRESHOLD_KEYS = (
    "loadBalancerNamespaceBundleMaxTopics",
    "loadBalancerNamespaceBundleMaxSessions",
    "loadBalancerNamespaceBundleMaxMsgRate",
    "loadBalancerNamespaceBundleMaxBandwidthMbytes",
    "loadBalancerNamespaceMaximumBundles",
    "flowOrQpsDifferenceThresholdPercentage",
)
#: values of the page's options checklist
OPT_INPUT_LAYOUT = "input-layout"   # use the bundles the input names (not the slider)
OPT_EXPAND = "expand"               # expand names that are not partitions into K partitions


@dataclass(frozen=True, eq=False)
class TopicSource:
    """A parsed topic source: names (+ traffic), and for snapshots the owners and bundle traffic.

    ``owners`` maps a full bundle name to its owner broker; ``bundle_traffic`` maps a full bundle
    name to ``(long-term msg/s, long-term bytes/s, sessions)`` as the leader sees it (BundleData and
    the owner's ``lastStats``). Both are empty unless the source is a snapshot.
    """

    kind: str
    label: str
    topics: TopicList
    owners: dict = field(default_factory=dict)
    bundle_traffic: dict = field(default_factory=dict)

    @property
    def is_snapshot(self) -> bool:
        return self.kind == "sample" or self.topics.format == "bundle-topics"

    def describe(self) -> str:
        fmt = {"topics-list": "topics list", "broker-stats": "broker-stats topics JSON",
               "bundle-topics": "snapshot bundleTopics", "generated": "generated"}.get(self.topics.format,
                                                                                     self.topics.format)
        parts = [f"{self.label}: {len(self.topics):,} topics ({fmt})"]
        nss = self.topics.by_namespace()
        parts.append(f"{len(nss)} namespace{'s' if len(nss) != 1 else ''}")
        if self.topics.has_traffic:
            parts.append("per-topic traffic")
        if self.owners:
            parts.append(f"owners of {len(self.owners):,} bundles")
        return ", ".join(parts)


@dataclass(frozen=True, eq=False)
class BundlesView:
    """One namespace's layout as the page shows it.

    Attributes
    ----------
    layout : engine.bundles.NamespaceLayout
    label : str
        What the layout is, in words ("persistent://a/b/t: 30 partitions on 180 bundles").
    layout_source : str
        ``"slider"`` (N initial bundles) or ``"input"`` (the bundles the input names).
    owners : tuple or None
        Owner broker per bundle (``None`` entries: nobody lists it), when known.
    msg_rate, throughput, sessions : ndarray or None
        Per bundle; from per-topic stats, or from the snapshot's BundleData (long-term).
    traffic_note : str
        Where the traffic comes from (empty when unknown).
    namespaces : tuple of str
        Every namespace of the source.
    notes : tuple of str
        Things the user should know (owners ignored because the slider sets the bundles, ...).
    """

    layout: B.NamespaceLayout
    label: str
    layout_source: str
    owners: tuple | None = None
    msg_rate: np.ndarray | None = None
    throughput: np.ndarray | None = None
    sessions: np.ndarray | None = None
    traffic_note: str = ""
    namespaces: tuple = ()
    notes: tuple = ()

    @property
    def counts(self) -> np.ndarray:
        return self.layout.counts

    def topics_in(self, i: int) -> list[str]:
        return self.layout.topics_in(i)


@dataclass(frozen=True)
class Summary:
    """Distribution metrics of a view: topics (and traffic) per bundle, and the expected spread."""

    topics: B.Distribution
    expected: B.ExpectedSpread
    msg_rate: B.Distribution | None = None
    throughput: B.Distribution | None = None
    unassignable: int = 0


@dataclass(frozen=True)
class ComparisonRow:
    partitions: int
    bundles: int
    distribution: B.Distribution
    expected: B.ExpectedSpread
    occupancy: tuple  # number of bundles holding k partitions, k = 0..max


@dataclass(frozen=True)
class Comparison:
    """The vivo comparison: the same topic with two partition counts on the same bundles."""

    topic: str
    rows: tuple
    reported: B.ExpectedSpread  # vivo's reported max (4 of 30 over 180) against random layouts

    @property
    def ratio_change(self) -> float:
        a, b = self.rows[0].distribution.max_over_mean, self.rows[-1].distribution.max_over_mean
        return float(b / a) if a else float("nan")
