"""The Pegasus page's sources: the shipped samples and uploads (decoded, size-checked, parsed once).

The page's source store holds either ``{"kind": "sample", "name": FILE}`` (a file of
``samples/pegasus``) or ``{"kind": "upload", "label": NAME, "snapshot": {...}}`` (the upload already
parsed and validated, in Shedlab's JSON form). The uploaded file name is only ever shown.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from engine.errors import InputError
from engine.pegasus import parse_snapshot, snapshot_to_json

from .. import uploads

__all__ = ["SAMPLES_DIR", "MAX_UPLOAD_BYTES", "DEFAULT_SAMPLE", "list_samples", "safe_label", "source_from_sample",
           "source_from_upload", "source_key", "source_digest"]

SAMPLES_DIR = Path(__file__).resolve().parent.parent.parent / "samples" / "pegasus"
#: largest upload accepted (also given to ``dcc.Upload(max_size=...)``)
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
DEFAULT_SAMPLE = "unbalanced.txt"
_ALLOWED_EXT = (".txt", ".log", ".out", ".json", "")


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


def source_key(source: dict) -> tuple:
    """``(kind, name, snapshot JSON text)`` of a store value (``InputError`` when it holds none)."""
    if not isinstance(source, dict) or source.get("kind") not in ("sample", "upload"):
        raise InputError("no cluster loaded", field="source")
    if source["kind"] == "sample":
        return ("sample", str(source.get("name")), "")
    text = json.dumps(source.get("snapshot"), sort_keys=True)
    return ("upload", safe_label(source.get("label")), text)


def source_digest(source: dict) -> str:
    """Short id of a source (for download file names)."""
    kind, name, text = source_key(source)
    return hashlib.sha256(f"{kind}:{name}:{text}".encode()).hexdigest()[:8]
