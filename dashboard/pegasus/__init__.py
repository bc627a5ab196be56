"""Pegasus page services: shipped samples, upload checks, cached plans, step views, export, figures.

No Dash imports: the callbacks in :mod:`callbacks.pegasus` call these functions and hand the results to
the pure builders of :mod:`.figures`. One concept per module: :mod:`.sources` (samples and uploads),
:mod:`.plan` (the toggles and the cached plan), :mod:`.views` (counts, skew, health), :mod:`.export`
(CSV and JSON), :mod:`.figures`, :mod:`.page` (what each panel draws, one call each); all re-exported here.
"""
from __future__ import annotations

from .export import plan_csv, plan_json
from .figures import node_counts_figure, skew_figure
from .page import PlanView, StepView, plan_file, plan_view, step_view
from .plan import OPTION_KEYS, PageOptions, plan_for
from .sources import (DEFAULT_SAMPLE, MAX_UPLOAD_BYTES, SAMPLES_DIR, list_samples, safe_label, source_digest,
                      source_from_sample, source_from_upload)
from .views import health_rows, skew_points, step_rows

__all__ = ["SAMPLES_DIR", "MAX_UPLOAD_BYTES", "DEFAULT_SAMPLE", "OPTION_KEYS", "PageOptions", "list_samples",
           "source_from_sample", "source_from_upload", "plan_for", "step_rows", "skew_points", "health_rows",
           "plan_csv", "plan_json", "safe_label", "source_digest", "node_counts_figure", "skew_figure", "PlanView",
           "StepView", "plan_view", "step_view", "plan_file"]
