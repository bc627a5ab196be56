"""What the Bundles page draws for its controls, one call per panel: the layout with its metrics and the
auto-split picks, and the split previews of one bundle."""
from __future__ import annotations

from dataclasses import dataclass

from engine import bundles as B
from engine.config import LoadBalancerConfig

from .config import config_from_inputs
from .metrics import (auto_split_for, bundle_options, bundle_status, default_split_bundle, parse_positions,
                      split_previews, summarize)
from .model import GEN, BundlesView, Summary
from .sources import load_source
from .view import build_view

__all__ = ["LayoutAnalysis", "SplitAnalysis", "analyse_layout", "analyse_split"]


@dataclass(frozen=True)
class LayoutAnalysis:
    """The layout panel: the view and config, its metrics, the auto-split picks (status and reason per
    bundle), what the counts are of, the source's description and the split-bundle picker."""

    view: BundlesView
    config: LoadBalancerConfig
    summary: Summary
    auto: B.AutoSplitResult
    status: list
    reasons: list
    ranges: list
    quantity: str
    source_text: str | None
    bundle_options: list
    split_bundle: int


@dataclass(frozen=True)
class SplitAnalysis:
    """The split panel: the bundle's range, its topics' hashes and each algorithm's split."""

    bundle: int
    lower: int
    upper: int
    hashes: list
    results: list


def analyse_layout(source_id: str, view_kw: dict, config_kw: dict, split_bundle=None) -> LayoutAnalysis:
    """The layout the controls describe (:func:`build_view` keywords ``view_kw``, :func:`config_from_inputs`
    keywords ``config_kw``) and everything drawn of it; raises :class:`~engine.errors.InputError`."""
    view = build_view(source_id or GEN, **view_kw)
    cfg = config_from_inputs(**config_kw)
    summary = summarize(view)
    auto = auto_split_for(view, cfg)
    src_text = None if (source_id or GEN) == GEN else load_source(source_id).describe()
    lay = view.layout
    reasons = [d.reason if d.hits else "" for d in auto.decisions]
    return LayoutAnalysis(view, cfg, summary, auto, bundle_status(auto), reasons, B.bundle_ranges(lay.boundaries),
                          "partitions" if lay.single_partitioned_topic() else "topics", src_text,
                          bundle_options(view), default_split_bundle(view, split_bundle))


def analyse_split(source_id: str, view_kw: dict, config_kw: dict, bundle, positions=None,
                  force: bool = False) -> SplitAnalysis:
    """The split of ``bundle`` (the most loaded one when it is not a bundle of the layout) with each
    algorithm; raises :class:`~engine.errors.InputError` for bad controls or positions."""
    view = build_view(source_id or GEN, **view_kw)
    cfg = config_from_inputs(**config_kw)
    pos = parse_positions(positions)
    i = default_split_bundle(view, bundle)
    results = split_previews(view, i, cfg, pos, force)
    lay = view.layout
    hashes = lay.hashes[lay.index == i]
    return SplitAnalysis(i, int(lay.boundaries[i]), int(lay.boundaries[i + 1]), hashes.tolist(), results)
