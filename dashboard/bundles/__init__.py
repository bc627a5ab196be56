"""Bundles page services: topic sources, the namespace layout, metrics, auto split, split previews.

One concept per module: :mod:`.model` (constants and values), :mod:`.config` (the split keys' sliders),
:mod:`.sources` (source ids, samples, uploads), :mod:`.view` (the layout the controls describe),
:mod:`.metrics` (distribution, auto split, split previews, the vivo comparison), :mod:`.page` (what each
panel draws, one call each); all re-exported here.

No Dash imports: :mod:`callbacks.bundles` calls these functions and hands the results to
:mod:`dashboard.figures.bundles` and the small view helpers of :mod:`layouts.bundles`.

Sources
-------
The page's source dropdown holds a *source id*:

``gen``             "topic ``t`` with ``K`` partitions in namespace ``a/b``" (the page's fields)
``sample:<name>``   a shipped snapshot sample whose ``bundleTopics`` are known
``upload:<hash>``   a file dropped on the page: ``pulsar-admin topics list`` /
                    ``list-partitioned-topics`` text, ``broker-stats topics`` JSON, or a LoadData
                    snapshot JSON with ``bundleTopics``

An upload is decoded, size-checked and parsed once, then kept in the app's diskcache under the hash
of its content (the browser only holds the id). The uploaded file name is only ever shown, never
used as a path. Every computation is deterministic (seeded Monte-Carlo) and memoised per process,
so moving a slider back and forth does not recompute anything.
"""
from __future__ import annotations

from .config import config_from_inputs, threshold_ladder, threshold_specs
from .metrics import (auto_split_for, bundle_options, bundle_status, default_split_bundle, occupancy, parse_positions,
                      split_previews, summarize, vivo_comparison)
from .model import (BUNDLES_RANGE, DEFAULT_NAMESPACE, DEFAULT_TOPIC, GEN, MAX_UPLOAD_BYTES, MB, OPT_EXPAND,
                    OPT_INPUT_LAYOUT, PARTITIONS_RANGE, SEED, THRESHOLD_KEYS, TRIALS, VIVO_BUNDLES, VIVO_OBSERVED_MAX,
                    VIVO_PARTITIONS, BundlesView, Comparison, ComparisonRow, Summary, TopicSource)
from .sources import (ingest_upload, load_source, namespaces_of, parse_source_id, parse_upload_bytes, safe_label,
                      sample_options, slider_state, source_options)
from .page import LayoutAnalysis, SplitAnalysis, analyse_layout, analyse_split
from .view import build_view

__all__ = [
    "MB", "MAX_UPLOAD_BYTES", "GEN", "DEFAULT_TOPIC", "DEFAULT_NAMESPACE", "VIVO_BUNDLES", "VIVO_PARTITIONS",
    "VIVO_OBSERVED_MAX", "PARTITIONS_RANGE", "BUNDLES_RANGE", "TRIALS", "SEED", "THRESHOLD_KEYS",
    "OPT_INPUT_LAYOUT", "OPT_EXPAND",
    "TopicSource", "BundlesView", "Summary", "Comparison", "ComparisonRow",
    "safe_label", "threshold_specs", "threshold_ladder", "config_from_inputs", "sample_options", "source_options",
    "parse_source_id", "ingest_upload", "load_source", "slider_state", "namespaces_of", "build_view", "summarize",
    "auto_split_for", "bundle_status", "bundle_options", "default_split_bundle", "parse_positions",
    "split_previews", "vivo_comparison", "occupancy", "parse_upload_bytes",
    "LayoutAnalysis", "SplitAnalysis", "analyse_layout", "analyse_split",
]
