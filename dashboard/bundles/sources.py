"""The Bundles page's topic sources: the source id, the shipped samples with topics, uploads (decoded,
size-checked, parsed once and cached), and what the sliders can do for a source.

``gen``             "topic ``t`` with ``K`` partitions in namespace ``a/b``" (the page's fields)
``sample:<name>``   a shipped snapshot sample whose ``bundleTopics`` are known
``upload:<hash>``   a file dropped on the page: ``pulsar-admin topics list`` /
                    ``list-partitioned-topics`` text, ``broker-stats topics`` JSON, or a LoadData
                    snapshot JSON with ``bundleTopics``

The uploaded file name is only ever shown, never used as a path.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

from engine.errors import InputError
from engine.io import load_data_from_json
from engine.topics_input import parse_bundle_topics, read_topics_text

from .. import uploads
from ..cache import get_cache
from ..memo import Memo
from .model import GEN, MAX_UPLOAD_BYTES, OPT_EXPAND, OPT_INPUT_LAYOUT, TopicSource

__all__ = ["safe_label", "parse_source_id", "sample_options", "source_options", "parse_upload_bytes",
           "ingest_upload", "load_source", "slider_state", "namespaces_of"]

_ID = re.compile(r"gen|sample:([a-z0-9][a-z0-9-]{0,80})|upload:([0-9a-f]{20})")
_UPLOAD_TTL = int(float(os.getenv("SHEDLAB_UPLOAD_TTL_DAYS", "7")) * 86400)


safe_label = uploads.safe_label


def parse_source_id(source_id) -> tuple[str, str]:
    """``"sample:x"`` → ``("sample", "x")``; anything else than the three forms raises."""
    if not isinstance(source_id, str):
        raise InputError("no topic source chosen", field="source")
    m = _ID.fullmatch(source_id.strip())
    if not m:
        raise InputError(f"not a topic source: {source_id[:60]!r}", field="source")
    if source_id == GEN:
        return GEN, ""
    if m.group(1):
        return "sample", m.group(1)
    return "upload", m.group(2)


@lru_cache(maxsize=1)
def _samples_with_topics() -> tuple:
    from engine.samples import SAMPLES, load_sample

    out = []
    for name, s in SAMPLES.items():
        try:
            ld = load_sample(name)
        except Exception:  # noqa: BLE001 - a broken sample must not break the page
            continue
        if getattr(ld, "bundle_topics", None):
            out.append((name, s.title))
    return tuple(out)


def sample_options() -> list[dict]:
    """Dropdown options of the shipped samples that list their topics (``bundleTopics``)."""
    return [{"label": f"Snapshot sample: {title}", "value": f"sample:{name}"} for name, title in _samples_with_topics()]


def source_options(uploads: list | None = None) -> list[dict]:
    """The source dropdown: generated, the samples with topics, then this page's uploads."""
    opts = [{"label": "Generated: one partitioned topic", "value": GEN}]
    samples = sample_options()
    opts += samples or [{"label": "Snapshot samples: none of the shipped samples lists bundleTopics",
                         "value": "sample:none", "disabled": True}]
    return opts + [o for o in (uploads or []) if isinstance(o, dict) and str(o.get("value", "")).startswith("upload:")]


def _snapshot_source(obj: dict, label: str, kind: str) -> TopicSource:
    """Topics, owners and per-bundle long-term traffic of a LoadData snapshot JSON."""
    topics = parse_bundle_topics(obj, source=label)
    owners: dict = {}
    traffic: dict = {}
    try:
        ld = load_data_from_json(obj, label)
    except InputError:
        ld = None  # bundleTopics alone (no brokers): topics only
    if ld is not None and hasattr(ld, "owners"):
        owners = {b: bs[0] for b, bs in ld.owners().items() if bs}
        sessions: dict = {}
        for bd in ld.brokers.values():
            for b, st in getattr(bd.local, "last_stats", {}).items():
                sessions[b] = int(st.consumer_count + st.producer_count)
        for b, d in getattr(ld, "bundle_data", {}).items():
            lt = d.long_term
            traffic[b] = (float(lt.total_msg_rate()), float(lt.total_msg_throughput()), sessions.get(b, 0))
        for b, s in sessions.items():
            traffic.setdefault(b, (0.0, 0.0, s))
    return TopicSource(kind, label, topics, owners, traffic)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def parse_upload_bytes(raw: bytes, label: str) -> TopicSource:
    """Parse an uploaded file: topics list text, a JSON array, broker-stats JSON or a snapshot."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}): expected a topics list or JSON", source=label) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    obj = None
    if text.lstrip()[:1] == "{":
        from engine.bounded import loads_json

        obj = loads_json(text, label)  # size and nesting limits before parsing (engine.bounded)
    if isinstance(obj, dict) and ("bundleTopics" in obj or "brokers" in obj):
        src = _snapshot_source(obj, label, "upload")
    else:
        src = TopicSource("upload", label, read_topics_text(text, source=label))
    if len(src.topics) == 0:
        raise InputError("no topic names in the file", source=label)
    return src


def ingest_upload(contents, filename) -> tuple[str, str]:
    """Decode, size-check and parse an upload, keep it in the cache; ``(source id, label)``.

    Raises :class:`InputError` naming the file (its display label) and the problem.
    """
    label = safe_label(filename)
    raw = uploads.decode_data_url(contents, label, MAX_UPLOAD_BYTES)
    src = parse_upload_bytes(raw, label)
    # keyed by the server's secret, not a plain content hash: nobody opens someone's topic list by hashing a
    # guessed file; the same file again keeps its id
    digest = uploads.keyed_digest(raw)
    get_cache().set(f"bundles:upload:{digest}", src, expire=_UPLOAD_TTL)
    _memo.put(digest, src)
    return f"upload:{digest}", label


_memo = Memo(8)  # the last topic sources read, as live objects


def load_source(source_id: str) -> TopicSource | None:
    """The parsed source behind an id (``None`` for ``gen``: it is built from the page's fields)."""
    kind, name = parse_source_id(source_id)
    if kind == GEN:
        return None
    if kind == "sample":
        if name not in dict(_samples_with_topics()):
            raise InputError(f"sample {name!r} has no bundleTopics", field="source")
        src = _memo.get(f"sample:{name}")
        if src is None:
            from engine.samples import load_sample

            src = _snapshot_source(load_sample(name).to_json(), name, "sample")
            _memo.put(f"sample:{name}", src)
        return src
    src = _memo.get(name)
    if src is None:
        src = get_cache().get(f"bundles:upload:{name}")
        if not isinstance(src, TopicSource):
            raise InputError("this upload is no longer on the server: drop the file again", field="source")
        _memo.put(name, src)
    return src


def slider_state(source_id, namespace=None, options=()) -> tuple[bool, bool]:
    """``(partitions slider disabled, bundles slider disabled)`` for the current source and options.

    The partitions slider drives the generated topic (or the expansion of a list's base names); the
    bundles slider is ignored while the layout comes from the input.
    """
    options = set(options or ())
    try:
        src = load_source(source_id or GEN)
    except InputError:
        return False, False
    if src is None:
        return False, False
    nss = list(src.topics.by_namespace())
    ns = namespace if namespace in nss else (nss[0] if nss else None)
    uses_input = OPT_INPUT_LAYOUT in options and ns in (src.topics.layouts or {})
    return OPT_EXPAND not in options, uses_input


def namespaces_of(source_id: str) -> list[str]:
    """The namespaces of a source, in order of first appearance (``[]`` for ``gen``)."""
    src = load_source(source_id)
    return [] if src is None else list(src.topics.by_namespace())
