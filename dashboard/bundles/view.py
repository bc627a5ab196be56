"""The namespace layout the Bundles page's controls describe: generated, or from a source's topics
(memoised per process, so moving a slider back and forth does not recompute anything)."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from engine import bundles as B
from engine.errors import InputError
from engine.topics_input import parse_topics_list

from .model import (BUNDLES_RANGE, DEFAULT_NAMESPACE, DEFAULT_TOPIC, GEN, OPT_EXPAND, OPT_INPUT_LAYOUT,
                    PARTITIONS_RANGE, VIVO_BUNDLES, VIVO_PARTITIONS, BundlesView)
from .sources import load_source, parse_source_id

__all__ = ["build_view", "generated_view"]


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


@lru_cache(maxsize=32)
def generated_view(topic: str, namespace: str, partitions: int, bundles: int, rate, kbps) -> BundlesView:
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
        return generated_view(str(topic or ""), str(gen_namespace or ""), partitions, bundles,
                               _num_or_none(rate, "msg/s per partition"), _num_or_none(kbps, "KB/s per partition"))
    return _source_view(source_id, namespace or None, bundles, OPT_INPUT_LAYOUT in options,
                        partitions if OPT_EXPAND in options else None)
