"""Bundles page services: topic sources, the namespace layout, metrics, auto split, split previews.

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

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from engine import bundles as B
from engine.config import PULSAR_4_DEFAULTS, LoadBalancerConfig, key_info
from engine.errors import InputError
from engine.io import load_data_from_json
from engine.topics_input import TopicList, parse_bundle_topics, parse_topics_list, read_topics_text

from . import uploads
from .cache import get_cache
from .memo import Memo

__all__ = [
    "MAX_UPLOAD_BYTES", "GEN", "DEFAULT_TOPIC", "DEFAULT_NAMESPACE", "VIVO_BUNDLES", "VIVO_PARTITIONS",
    "VIVO_OBSERVED_MAX", "PARTITIONS_RANGE", "BUNDLES_RANGE", "TRIALS", "SEED", "THRESHOLD_KEYS",
    "OPT_INPUT_LAYOUT", "OPT_EXPAND",
    "TopicSource", "BundlesView", "Summary", "Comparison", "ComparisonRow",
    "safe_label", "threshold_specs", "threshold_ladder", "config_from_inputs", "sample_options", "source_options",
    "parse_source_id", "ingest_upload", "load_source", "slider_state", "namespaces_of", "build_view", "summarize",
    "auto_split_for", "bundle_status", "bundle_options", "default_split_bundle", "parse_positions",
    "split_previews", "vivo_comparison", "occupancy",
]

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

_ID = re.compile(r"^gen$|^sample:([a-z0-9][a-z0-9-]{0,80})$|^upload:([0-9a-f]{20})$")
_UPLOAD_TTL = int(float(os.getenv("SHEDLAB_UPLOAD_TTL_DAYS", "7")) * 86400)


# ------------------------------------------------------------------------------------------ values
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


# ------------------------------------------------------------------------------------------ config
def threshold_ladder(key: str) -> tuple:
    """Values a threshold slider steps through: 1-2-5 steps inside the key's range, plus its default.

    The split keys span four orders of magnitude (0 … 10,000 topics), so a linear slider could not
    reach the small values that matter on a small namespace.

    Examples
    --------
    >>> threshold_ladder("flowOrQpsDifferenceThresholdPercentage")
    (0, 1, 2, 3, 4, 5, 10, 20, 50, 100)
    """
    info = key_info(key)
    lo, hi, default = int(info["lo"] or 0), int(info["hi"] or 100), int(info["default"])
    vals = {lo, hi, default}
    vals.update(v for v in range(0, 6) if lo <= v <= hi)
    p = 1
    while p <= hi:
        vals.update(m * p for m in (1, 2, 5) if lo <= m * p <= hi)
        p *= 10
    if info["unit"] == "bundles":
        vals.update(2 ** i for i in range(13) if lo <= 2 ** i <= hi)
    return tuple(sorted(vals))


def threshold_specs() -> list[dict]:
    """One slider per split key: key, unit, default, doc, the value ladder and the default's index."""
    out = []
    for k in THRESHOLD_KEYS:
        info = key_info(k)
        ladder = threshold_ladder(k)
        out.append({"key": k, "unit": info["unit"], "default": info["default"], "doc": info["doc"],
                    "ladder": ladder, "index": ladder.index(int(info["default"]))})
    return out


def config_from_inputs(values: dict | None = None, algorithm: str | None = None,
                       auto_enabled: bool = True) -> LoadBalancerConfig:
    """The config the page's controls describe: Pulsar 4 defaults with the split keys replaced.

    Parameters
    ----------
    values : dict
        ``{broker.conf key: ladder index}`` from the threshold sliders (an index out of range or not
        an integer raises :class:`InputError`).
    algorithm : str, optional
        ``defaultNamespaceBundleSplitAlgorithm``.
    auto_enabled : bool
        ``loadBalancerAutoBundleSplitEnabled``.
    """
    changes: dict = {"loadBalancerAutoBundleSplitEnabled": bool(auto_enabled)}
    for k, i in (values or {}).items():
        if k not in THRESHOLD_KEYS:
            raise InputError(f"not a split key: {k!r}", field=k)
        ladder = threshold_ladder(k)
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(ladder):
            raise InputError(f"slider position {i!r} out of range", field=k)
        changes[k] = ladder[i]
    if algorithm:
        if algorithm not in B.SPLIT_ALGORITHMS:
            raise InputError(f"unknown split algorithm {algorithm!r}", field="defaultNamespaceBundleSplitAlgorithm")
        changes["defaultNamespaceBundleSplitAlgorithm"] = algorithm
    return PULSAR_4_DEFAULTS.with_values(changes)


# ------------------------------------------------------------------------------------------ sources
safe_label = uploads.safe_label


def parse_source_id(source_id) -> tuple[str, str]:
    """``"sample:x"`` → ``("sample", "x")``; anything else than the three forms raises."""
    if not isinstance(source_id, str):
        raise InputError("no topic source chosen", field="source")
    m = _ID.match(source_id.strip())
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
    # guessed file; the same file again keeps its id (issue 14)
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


def _num_or_none(v, what: str) -> float | None:
    if v in (None, ""):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, got {v!r}", field=what) from None
    if not math.isfinite(x) or x < 0:
        raise InputError(f"{what} must be a finite number ≥ 0, got {v!r}", field=what)
    return x


def _int_in(v, lo: int, hi: int, what: str) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a whole number, got {v!r}", field=what) from None
    if not lo <= i <= hi:
        raise InputError(f"{what} must be in {lo}..{hi}, got {i}", field=what)
    return i


# ------------------------------------------------------------------------------------------ the view
@lru_cache(maxsize=32)
def _generated_view(topic: str, namespace: str, partitions: int, bundles: int, rate, kbps) -> BundlesView:
    topic = (topic or "").strip() or DEFAULT_TOPIC
    namespace = (namespace or "").strip() or DEFAULT_NAMESPACE
    try:
        names = B.partition_names(topic, partitions, namespace=namespace)
    except InputError as exc:
        raise InputError(exc.message, source=f"topic {topic!r} in namespace {namespace!r}") from None
    kw = {}
    note = ""
    if rate is not None or kbps is not None:
        kw["msg_rate"] = [rate or 0.0] * partitions
        kw["throughput"] = [(kbps or 0.0) * 1024.0] * partitions
        note = "traffic: the same rate on every partition (the fields above)"
    lay = B.build_layout(names, bundles, namespace=namespace, **kw)
    base = names[0].rsplit(B.PARTITIONED_TOPIC_SUFFIX, 1)[0]
    return BundlesView(lay, f"{base}: {partitions} partition{'s' if partitions != 1 else ''} on {bundles} bundles",
                       "slider", msg_rate=lay.msg_rate, throughput=lay.throughput, traffic_note=note,
                       namespaces=(namespace,))


def _pick(a, ix):
    return None if a is None else a[ix]


@lru_cache(maxsize=6)
def _source_view(source_id: str, namespace: str | None, bundles: int, input_layout: bool,
                 expand: int | None) -> BundlesView:
    src = load_source(source_id)
    tl = src.topics
    groups = tl.by_namespace()
    if not groups:
        raise InputError("the source holds no topics", source=src.label)
    ns = namespace if namespace in groups else next(iter(groups))
    ix = groups[ns]
    names = [tl.names[i] for i in ix]
    rate, thr, sess = _pick(tl.msg_rate, ix), _pick(tl.throughput, ix), _pick(tl.sessions, ix)
    notes = []
    if expand:
        base = [n for n in names if not B.parse_topic_name(n).is_partitioned]
        if base:
            if rate is not None:
                notes.append("per-topic traffic dropped: names were expanded into partitions")
            tl2 = parse_topics_list(names, partitions_of={n: expand for n in base}, source=src.label)
            names, rate, thr, sess = list(tl2.names), None, None, None
            notes.append(f"{len(base):,} name{'s' if len(base) != 1 else ''} expanded into {expand} partitions each")
    known = (tl.layouts or {}).get(ns)
    if input_layout and known is not None:
        boundaries, layout_source = known, "input"
    else:
        boundaries, layout_source = B.initial_boundaries(bundles), "slider"
        if input_layout and known is None:
            notes.append("the input does not name a complete set of bundles for this namespace: "
                         "using the bundles slider")
    lay = B.build_layout(names, boundaries, namespace=ns, msg_rate=rate, throughput=thr, sessions=sess)
    owners = None
    msg_rate, throughput, sessions = lay.msg_rate, lay.throughput, lay.sessions
    traffic_note = "traffic: per-topic rates of the input (instantaneous)" if rate is not None else ""
    bundle_names = lay.bundle_names()
    if layout_source == "input" and src.owners:
        owners = tuple(src.owners.get(b) for b in bundle_names)
    elif src.owners:
        notes.append("owners are known only for the bundles the snapshot names: tick "
                     "\u201cuse the bundles the input names\u201d")
    if layout_source == "input" and src.bundle_traffic and msg_rate is None:
        t = [src.bundle_traffic.get(b) for b in bundle_names]
        msg_rate = np.array([np.nan if x is None else x[0] for x in t])
        throughput = np.array([np.nan if x is None else x[1] for x in t])
        sessions = np.array([0 if x is None else x[2] for x in t], dtype=np.int64)
        traffic_note = "traffic: the leader's long-term BundleData of each bundle (what auto split compares)"
    what = f"{len(names):,} topic{'s' if len(names) != 1 else ''} of {ns} on {lay.n_bundles:,} bundles"
    where = "bundles named by the input" if layout_source == "input" else "initial bundles"
    return BundlesView(lay, f"{src.label}: {what} ({where})", layout_source, owners, msg_rate, throughput,
                       sessions, traffic_note, tuple(groups), tuple(notes))


def build_view(source_id: str = GEN, *, namespace: str | None = None, topic: str = DEFAULT_TOPIC,
               gen_namespace: str = DEFAULT_NAMESPACE, partitions=VIVO_PARTITIONS[0], bundles=VIVO_BUNDLES,
               options=(), rate=None, kbps=None) -> BundlesView:
    """The layout the page's controls describe.

    Parameters
    ----------
    source_id : str
        ``gen``, ``sample:<name>`` or ``upload:<hash>``.
    namespace : str, optional
        Namespace of a multi-namespace source (default: the first one).
    topic, gen_namespace : str
        The generated topic and its namespace ("topic ``t`` with N partitions in namespace ``a/b``").
    partitions, bundles : int
        The sliders. ``partitions`` also expands a list's base names with :data:`OPT_EXPAND`.
    options : sequence of str
        :data:`OPT_INPUT_LAYOUT` (use the bundles the input names), :data:`OPT_EXPAND`.
    rate, kbps : float, optional
        Generated source only: msg/s and KB/s of every partition.

    Raises
    ------
    InputError
        Bad names, values out of range, an unknown source.
    """
    partitions = _int_in(partitions, *PARTITIONS_RANGE, "partitions")
    bundles = _int_in(bundles, *BUNDLES_RANGE, "bundles")
    options = set(options or ())
    kind, _ = parse_source_id(source_id)
    if kind == GEN:
        return _generated_view(str(topic or ""), str(gen_namespace or ""), partitions, bundles,
                               _num_or_none(rate, "msg/s per partition"), _num_or_none(kbps, "KB/s per partition"))
    return _source_view(source_id, namespace or None, bundles, OPT_INPUT_LAYOUT in options,
                        partitions if OPT_EXPAND in options else None)


# ------------------------------------------------------------------------------------------ metrics
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
        v = _generated_view(str(topic or ""), str(namespace or ""), int(k), int(bundles), None, None)
        rows.append(ComparisonRow(int(k), int(bundles), B.distribution(v.counts, "topics"),
                                  v.layout.expected(trials=TRIALS, seed=SEED), occupancy(v.counts)))
    reported = B.expected_max_over_mean(VIVO_PARTITIONS[0], VIVO_BUNDLES, observed_max=VIVO_OBSERVED_MAX,
                                        trials=4 * TRIALS, seed=SEED)
    first = _generated_view(str(topic or ""), str(namespace or ""), int(partitions[0]), int(bundles), None, None)
    name = first.label.rsplit(":", 1)[0]
    return Comparison(name, tuple(rows), reported)
