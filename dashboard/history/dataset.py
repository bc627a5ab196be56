"""History datasets by name: the app's roots, the listing, name -> path, and the shipped sample.

The format itself (schema, writer, metadata, pandas readers, the cluster's actions) is
:mod:`.store`; everything it defines is re-exported here, so ``from dashboard.history.dataset import
read_long`` and the rest keep working. This module sits above :mod:`.store` and :mod:`.generate` (the
sample is generated on first use); neither imports it back.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

from engine.errors import InputError

from .store import (  # noqa: F401  (the format, re-exported)
    ACTIONS_COLUMNS, ACTIONS_FILE, ALL_METRICS, BROKER_METRICS, BUNDLE_METRICS, META_FILE, MINUTE_MS, RATE_METRICS,
    RESOURCE_METRICS, RESULTS_DIR, SCHEMA, DatasetWriter, _day_name, _dict_array, _iso, _pivot, actual_actions,
    data_files, day_of, fingerprint, is_dataset, parse_time, read_long, read_meta, to_table, wide_brokers,
    wide_bundles, write_actions, write_long,
)
from .store import __all__ as _STORE_ALL

__all__ = [*_STORE_ALL, "datasets_root", "list_datasets", "sample_dataset", "resolve_dataset", "history_roots",
           "dataset_by_name", "DATASET_NAME_MAX", "SAMPLE_NAME", "SAMPLE_VERSION", "SAMPLE_PARAMS"]

SAMPLE_NAME = "sample"
SAMPLE_VERSION = 2  # bump when the generator changes, so the sample is regenerated


def datasets_root() -> Path:
    """The app's own datasets directory (the shipped sample is generated there): ``SHEDLAB_HISTORY_DIR``
    or ``<cache dir>/history`` (created ``0700`` like the cache)."""
    env = os.getenv("SHEDLAB_HISTORY_DIR")
    if env:
        root = Path(env)
        root.mkdir(parents=True, exist_ok=True)
        return root
    from dashboard.cache import cache_dir, private_dir

    return private_dir(cache_dir() / "history")


#: longest dataset name the web app accepts
DATASET_NAME_MAX = 128
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,%d}" % (DATASET_NAME_MAX - 1))


def history_roots() -> list[Path]:
    """The directories whose sub-directories the web app offers as datasets, by name: the app's own
    (:func:`datasets_root`), then every entry of ``SHEDLAB_HISTORY_ROOTS`` (separated by ``:`` or ``,``).
    Resolved (symlinks followed once, here, from the operator's setting); missing ones are skipped."""
    roots = [datasets_root()]
    for part in re.split(r"[:,]", os.getenv("SHEDLAB_HISTORY_ROOTS", "")):
        if part.strip():
            roots.append(Path(part.strip()).expanduser())
    out = []
    for r in roots:
        try:
            r = r.resolve(strict=True)
        except OSError:
            continue
        if r.is_dir() and r not in out:
            out.append(r)
    return out


def list_datasets(root=None) -> list[dict]:
    """``[{"id", "name", "path", "rows", "start", "end", "has_bundles"}]`` of every dataset under ``root``
    (default: every :func:`history_roots` directory). ``id`` is the directory name — what the web app
    shows and accepts (:func:`dataset_by_name`); the first root wins when two hold the same name."""
    roots = [Path(root)] if root else history_roots()
    out, seen = [], set()
    for r in roots:
        try:
            entries = sorted(r.iterdir()) if r.is_dir() else []
        except OSError:
            continue
        for d in entries:
            if d.name in seen or not _NAME.fullmatch(d.name) or d.is_symlink() or not d.is_dir() or not is_dataset(d):
                continue
            try:
                m = read_meta(d)
            except InputError:
                continue
            seen.add(d.name)
            out.append({"id": d.name, "name": m.get("name") or d.name, "path": str(d), "rows": m.get("rows", 0),
                        "start": m.get("start"), "end": m.get("end"), "has_bundles": m.get("has_bundles", False)})
    return out


def dataset_by_name(name) -> Path:
    """The dataset a web request names, or :class:`InputError` — the only way the web app opens one.

    ``name`` is a directory name under one of :func:`history_roots` (at most :data:`DATASET_NAME_MAX`
    characters of ``A-Z a-z 0-9 . _ -``, not starting with a dot), or the absolute path of such a
    directory as earlier versions stored it. The directory must not be a symlink and must resolve to a
    direct child of its root. Every refusal says the same "unknown dataset" (nothing about whether a path
    exists). The sample is generated on first use. Never a user path: the command line, the operator's
    own tool, takes paths through :func:`resolve_dataset`."""
    unknown = InputError("unknown dataset (pick one from the list)", field="dataset")
    if not isinstance(name, str) or not name or len(name) > 4096 or "\x00" in name:  # os.path raises on NUL
        raise unknown
    roots = history_roots()
    if name.startswith("/"):  # a stored absolute path: accepted only as a root's direct child
        p = Path(name)
        if p.parent not in roots and Path(os.path.realpath(p.parent)) not in roots:
            raise unknown
        name = p.name
    if not _NAME.fullmatch(name):
        raise unknown
    if name == SAMPLE_NAME:
        sample_dataset()
    for r in roots:
        cand = r / name
        try:
            if cand.is_symlink() or not cand.is_dir():
                continue
            real = cand.resolve(strict=True)
        except OSError:
            continue
        if real.parent == r and is_dataset(real):
            return real
    raise unknown


def resolve_dataset(name_or_path) -> Path:
    """A dataset path from a path or a name under :func:`history_roots` (the sample is created on
    demand). For the command line and the Python API (the operator's own paths); the web app uses
    :func:`dataset_by_name`."""
    p = Path(str(name_or_path))
    if is_dataset(p):
        return p
    if str(name_or_path) == SAMPLE_NAME:
        return sample_dataset()
    try:
        return dataset_by_name(str(name_or_path))
    except InputError:
        pass
    read_meta(p)  # raises the clear error
    return p


#: parameters of the shipped sample (small and deterministic; generated on first use)
SAMPLE_PARAMS = dict(brokers=10, days=2, seed=7, start="2026-01-05", bundles_per_broker=4, bundle_metrics=True)


def sample_dataset(root=None) -> Path:
    """The sample history (10 brokers × 2 days, with bundle metrics), generated on first use."""
    from .generate import generate  # the generator writes through .store; it never imports this module

    root = Path(root) if root else datasets_root()
    p = root / SAMPLE_NAME
    if is_dataset(p):
        meta = read_meta(p)
        if meta.get("params", {}).get("sample_version") == SAMPLE_VERSION:
            return p
    tmp = root / f".{SAMPLE_NAME}-{os.getpid()}-{time.time_ns()}"
    generate(tmp, **SAMPLE_PARAMS, name=SAMPLE_NAME, extra_params={"sample_version": SAMPLE_VERSION})
    if p.exists():
        shutil.rmtree(p, ignore_errors=True)
    try:
        tmp.rename(p)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return p
