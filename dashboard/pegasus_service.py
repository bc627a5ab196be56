"""Pegasus page services: shipped samples, upload checks, cached plans, step views, export.

No Dash imports: the callbacks in :mod:`callbacks.pegasus` call these functions and hand the
results to :mod:`dashboard.figures_pegasus`.

The page's source store holds either ``{"kind": "sample", "name": FILE}`` (a file of
``samples/pegasus``) or ``{"kind": "upload", "label": NAME, "snapshot": {...}}`` (the upload
already parsed and validated, in Shedlab's JSON form). Plans are computed by the engine and
cached per process (deterministic: same source + options -> same plan).
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from engine.errors import InputError
from engine.pegasus import (BUG_QUIRKS, PegasusConfig, load_snapshot, parse_snapshot,
                            parse_snapshot_json, run_plan, skews, snapshot_to_json)

from . import uploads

__all__ = [
    "SAMPLES_DIR",
    "MAX_UPLOAD_BYTES",
    "DEFAULT_SAMPLE",
    "OPTION_KEYS",
    "PageOptions",
    "list_samples",
    "source_from_sample",
    "source_from_upload",
    "plan_for",
    "step_rows",
    "skew_points",
    "health_rows",
    "plan_csv",
    "plan_json",
    "safe_label",
]

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples" / "pegasus"
#: largest upload accepted (also given to ``dcc.Upload(max_size=...)``)
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
DEFAULT_SAMPLE = "unbalanced.txt"
#: toggle values of the options checklist
OPTION_KEYS = ("cluster", "only_primary", "only_move_primary", "in_turn", "quirks")
_ALLOWED_EXT = (".txt", ".log", ".out", ".json", "")


@dataclass(frozen=True)
class PageOptions:
    """The page's toggles, hashable (a cache key)."""

    cluster: bool = False
    only_primary: bool = False
    only_move_primary: bool = False
    in_turn: bool = False
    quirks: bool = True
    seed: int | None = None

    @classmethod
    def from_inputs(cls, values, seed=None) -> "PageOptions":
        values = set(values or ())
        if seed in ("", None):
            seed = None
        else:
            try:
                seed = int(seed)
            except (TypeError, ValueError):
                raise InputError(f"seed {seed!r} is not an integer", field="seed") from None
            if seed < 0:
                raise InputError("seed must not be negative", field="seed")
        return cls("cluster" in values, "only_primary" in values, "only_move_primary" in values,
                   "in_turn" in values, "quirks" in values, seed)

    def config(self) -> PegasusConfig:
        return PegasusConfig(balance_cluster=self.cluster, only_primary_balancer=self.only_primary,
                             only_move_primary=self.only_move_primary,
                             balancer_in_turn=self.in_turn,
                             fixed_quirks=frozenset() if self.quirks else frozenset(BUG_QUIRKS))


def list_samples() -> list:
    """File names of the shipped samples (text and JSON), sorted."""
    if not SAMPLES_DIR.is_dir():
        return []
    return sorted(p.name for p in SAMPLES_DIR.iterdir()
                  if p.is_file() and p.suffix in (".txt", ".json"))


safe_label = uploads.safe_label


def source_from_sample(name: str) -> dict:
    """The source store value for a shipped sample (``InputError`` if unknown)."""
    if name not in list_samples():
        raise InputError(f"no sample named {name!r}", field="sample")
    return {"kind": "sample", "name": name}


def source_from_upload(contents: str, filename) -> dict:
    """Decode, size-check and parse an upload; the store value or ``InputError``."""
    label = safe_label(filename)
    raw = uploads.decode_data_url(contents, label, MAX_UPLOAD_BYTES)
    if Path(label).suffix.lower() not in _ALLOWED_EXT:
        raise InputError("expected a .txt (shell output) or .json file", source=label)
    snap = parse_snapshot(raw, label)
    return {"kind": "upload", "label": label, "snapshot": snapshot_to_json(snap),
            "warnings": list(snap.warnings)}


def _source_key(source: dict) -> tuple:
    if not isinstance(source, dict) or source.get("kind") not in ("sample", "upload"):
        raise InputError("no cluster loaded", field="source")
    if source["kind"] == "sample":
        return ("sample", str(source.get("name")), "")
    text = json.dumps(source.get("snapshot"), sort_keys=True)
    return ("upload", safe_label(source.get("label")), text)


@lru_cache(maxsize=32)
def _cached_plan(kind: str, name: str, text: str, options: PageOptions):
    if kind == "sample":
        if name not in list_samples():
            raise InputError(f"no sample named {name!r}", field="sample")
        snap = load_snapshot(SAMPLES_DIR / name)
        snap = replace(snap, source=name)          # show the name, not the server path
    else:
        snap = parse_snapshot_json(text, name)  # parsed within the nesting limit (engine.bounded)
    return run_plan(snap, options.config(), seed=options.seed)


def plan_for(source: dict, options: PageOptions):
    """The :class:`~engine.pegasus.plan.Plan` of a source store value (cached)."""
    kind, name, text = _source_key(source)
    return _cached_plan(kind, name, text, options)


def step_rows(plan, step: int, table: str | None = None) -> list:
    """Per node: primaries / secondaries / totals before and after ``step`` proposals.

    ``table`` = a table name, or ``None`` for the cluster (sum over tables).
    """
    before, after = plan.initial_counts, plan.counts_at(step)
    names = plan.table_names()
    app_ids = [a for a in before if table is None or names[a] == table]
    rows = []
    for hp in sorted({hp for a in app_ids for hp in before[a]}):
        pb = sum(before[a][hp][0] for a in app_ids)
        sb = sum(before[a][hp][1] for a in app_ids)
        pa = sum(after[a][hp][0] for a in app_ids)
        sa = sum(after[a][hp][1] for a in app_ids)
        rows.append({"node": str(hp), "primary_before": pb, "secondary_before": sb,
                     "total_before": pb + sb, "primary": pa, "secondary": sa, "total": pa + sa})
    return rows


def skew_points(plan, table: str | None = None) -> list:
    """``[{"step", "primary", "secondary", "total"}]`` at the start and after every round."""
    names = plan.table_names()
    out, step = [], 0

    def point(counts, step):
        s = skews(counts, plan.alive_nodes)
        if table is None:
            v = s["cluster"]
        else:
            app_id = next(a for a, nm in names.items() if nm == table)
            v = s["tables"][app_id]
        return {"step": step, **v}

    out.append(point(plan.initial_counts, 0))
    for r in plan.rounds:
        step += len(r.proposals)
        if r.proposals:
            out.append(point(r.counts, step))
    return out


def health_rows(plan) -> list:
    """Health per table, before and after the plan (the ``[healthy]`` section of ``app -d``)."""
    rows = []
    for b, a in zip(plan.health("before"), plan.health("after")):
        rows.append({"table": b.table, "partitions": b.partition_count,
                     "fully_healthy": (b.fully_healthy, a.fully_healthy),
                     "unhealthy": (b.unhealthy, a.unhealthy),
                     "write_unhealthy": (b.write_unhealthy, a.write_unhealthy),
                     "read_unhealthy": (b.read_unhealthy, a.read_unhealthy)})
    return rows


def plan_csv(plan) -> str:
    """The proposal list as CSV (step, round, type, gpid, table, from, to, stage, reason)."""
    buf = io.StringIO()
    plan.proposals_frame().to_csv(buf, index=False)
    return buf.getvalue()


def plan_json(plan) -> str:
    """The whole plan as JSON (the contract of ``python -m engine pegasus --json``)."""
    return json.dumps(plan.to_json(), indent=2, allow_nan=False)


def source_digest(source: dict) -> str:
    """Short id of a source (for download file names)."""
    kind, name, text = _source_key(source)
    return hashlib.sha256(f"{kind}:{name}:{text}".encode()).hexdigest()[:8]


__all__.append("source_digest")
