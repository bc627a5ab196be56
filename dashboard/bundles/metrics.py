"""What the Bundles page computes on a layout: distribution metrics and the expected spread, auto split,
the split previews of the four algorithms, and the vivo comparison (deterministic: seeded Monte-Carlo)."""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from engine import bundles as B
from engine.config import LoadBalancerConfig
from engine.errors import InputError

from .model import (DEFAULT_NAMESPACE, DEFAULT_TOPIC, SEED, TRIALS, VIVO_BUNDLES, VIVO_OBSERVED_MAX, VIVO_PARTITIONS,
                    BundlesView, Comparison, ComparisonRow, Summary)
from .view import generated_view

__all__ = ["summarize", "auto_split_for", "bundle_status", "bundle_options", "default_split_bundle",
           "parse_positions", "split_previews", "occupancy", "vivo_comparison"]


def summarize(view: BundlesView) -> Summary:
    """Topics per bundle (max, mean, max/mean, Gini, empty), traffic per bundle, expected spread.

    Kept on the view (views are memoised), so it lives exactly as long as its layout.
    """
    done = view.__dict__.get("_summary")
    if done is not None:
        return done
    lay = view.layout
    e = lay.expected(trials=TRIALS, seed=SEED)
    mr = B.distribution(np.nan_to_num(view.msg_rate), "msg_rate") if view.msg_rate is not None else None
    th = B.distribution(np.nan_to_num(view.throughput), "throughput") if view.throughput is not None else None
    out = Summary(B.distribution(lay.counts, "topics"), e, mr, th, len(lay.unassignable))
    object.__setattr__(view, "_summary", out)
    return out


def auto_split_for(view: BundlesView, cfg: LoadBalancerConfig) -> B.AutoSplitResult:
    """Which bundles ``BundleSplitterTask`` would pick under ``cfg``'s thresholds.

    Topics are the layout's counts; sessions and rates are the view's per-bundle values (for a
    snapshot with its own bundles: the long-term BundleData the leader compares).
    """
    lay = view.layout
    names = lay.bundle_names()
    rate = None if view.msg_rate is None else [None if np.isnan(x) else float(x) for x in view.msg_rate]
    thr = None if view.throughput is None else [None if np.isnan(x) else float(x) for x in view.throughput]
    sess = None if view.sessions is None else [int(x) for x in view.sessions]
    return B.auto_split_from_config(cfg, names, lay.counts.tolist(), sess, rate, thr,
                                    {lay.namespace: lay.n_bundles},
                                    brokers=list(view.owners) if view.owners else None)


def bundle_status(result: B.AutoSplitResult) -> list[str]:
    """Per bundle: ``"split"`` (chosen), ``"capped"`` (over a threshold but not chosen) or ``"ok"``."""
    return ["split" if d.label == "Split" else ("capped" if d.hits else "ok") for d in result.decisions]


def bundle_options(view: BundlesView, limit: int = 1024) -> list[dict]:
    """Options of the split-bundle dropdown: ``#i range · k topics``, busiest first."""
    lay = view.layout
    counts = lay.counts
    ranges = B.bundle_ranges(lay.boundaries)
    order = sorted(range(lay.n_bundles), key=lambda i: (-counts[i], i))[:limit]
    return [{"label": f"#{i} {ranges[i]} · {int(counts[i])} topic{'s' if counts[i] != 1 else ''}", "value": i}
            for i in order]


def default_split_bundle(view: BundlesView, current=None) -> int:
    """Keep ``current`` when it is still a bundle of the layout, else the most loaded bundle."""
    if isinstance(current, int) and not isinstance(current, bool) and 0 <= current < view.layout.n_bundles:
        return current
    return view.layout.most_loaded()


def parse_positions(text) -> list[int] | None:
    """``"0x10000000, 0x20000000"`` → ints (Java ``Long.decode`` syntax); empty → ``None``."""
    if text is None or not str(text).strip():
        return None
    out = []
    for part in re.split(r"[,\s]+", str(text).strip()):
        if not part:
            continue
        try:
            out.append(B.java_long_decode(part))
        except InputError:
            raise InputError(f"split position {part!r} is not a number like 0x20000000", field="positions") from None
    return out


def split_previews(view: BundlesView, bundle: int, cfg: LoadBalancerConfig, positions=None,
                   force: bool = False) -> list[B.SplitResult]:
    """The split of ``bundle`` with each of the four algorithms, as a broker would do it under ``cfg``.

    ``flow_or_qps_equally_divide`` needs per-topic traffic; without it the row is a ``Skip`` saying
    so (when Pulsar would run it at all: it refuses it unless it is the default algorithm).
    """
    lay = view.layout
    i = default_split_bundle(view, bundle)
    split_kw = {k: getattr(cfg, k) for k in ("defaultNamespaceBundleSplitAlgorithm",
                                             "supportedNamespaceBundleSplitAlgorithms",
                                             "loadBalancerNamespaceBundleMaxMsgRate",
                                             "loadBalancerNamespaceBundleMaxBandwidthMbytes",
                                             "flowOrQpsDifferenceThresholdPercentage")}
    out = []
    for alg in B.SPLIT_ALGORITHMS:
        try:
            out.append(lay.split(i, alg, positions=positions, force=force, **split_kw))
        except InputError as exc:
            lo, up = int(lay.boundaries[i]), int(lay.boundaries[i + 1])
            out.append(B.SplitResult(alg, lo, up, "Skip", f"not previewed: {exc.message} (this source has no "
                                     "per-topic traffic)", namespace=lay.namespace))
    return out


def occupancy(counts) -> tuple:
    """Number of bundles holding exactly k topics, for k = 0 … max."""
    c = np.asarray(counts, dtype=np.int64)
    return tuple(int(x) for x in np.bincount(c)) if c.size else ()


@lru_cache(maxsize=16)
def vivo_comparison(topic: str = DEFAULT_TOPIC, namespace: str = DEFAULT_NAMESPACE, bundles: int = VIVO_BUNDLES,
                    partitions: tuple = VIVO_PARTITIONS) -> Comparison:
    """The vivo case (field findings §4): one topic with 30 vs 120 partitions on 180 bundles.

    For each partition count: the layout's distribution, the expected max/mean of random partition
    names (typical vs unlucky), and how many bundles hold k partitions. ``reported`` ranks vivo's own
    layout (two bundles with 4 of 30 partitions) against random layouts.
    """
    rows = []
    for k in partitions:
        v = generated_view(str(topic or ""), str(namespace or ""), int(k), int(bundles), None, None)
        rows.append(ComparisonRow(int(k), int(bundles), B.distribution(v.counts, "topics"),
                                  v.layout.expected(trials=TRIALS, seed=SEED), occupancy(v.counts)))
    reported = B.expected_max_over_mean(VIVO_PARTITIONS[0], VIVO_BUNDLES, observed_max=VIVO_OBSERVED_MAX,
                                        trials=4 * TRIALS, seed=SEED)
    first = generated_view(str(topic or ""), str(namespace or ""), int(partitions[0]), int(bundles), None, None)
    name = first.label.rsplit(":", 1)[0]
    return Comparison(name, tuple(rows), reported)
