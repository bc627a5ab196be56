"""``python -m engine bundles``: which bundle each topic lands in, how lumpy that is, and a split.

Usage::

    python -m engine bundles TOPICS [--bundles N] [--split ALGORITHM] [--split-bundle RANGE]
                             [--positions P[,P...]] [--force] [--partitions-of NAME=K]...
                             [--preset NAME] [--conf broker.conf] [--set KEY=VALUE]...
                             [--trials N] [--seed N] [--limit N] [--json]

``TOPICS`` is a file or a generator spec:

* a ``pulsar-admin topics list`` / ``topics list-partitioned-topics`` text file (one name per line;
  ``--partitions-of NAME=K`` expands a partitioned topic listed by its base name into its ``K``
  partitions), or a JSON array of names;
* ``pulsar-admin broker-stats topics`` JSON (per-topic traffic and the bundle each topic was
  reported in);
* a LoadData snapshot JSON with ``bundleTopics``;
* ``gen:NAME:K[,NAME:K...]``: the ``K`` partitions Pulsar creates for ``NAME`` (``gen:NAME`` = one
  non-partitioned topic), e.g. the vivo case ``gen:persistent://vivo/ns/t:30 --bundles 180``.

For each namespace in the input the command prints the bundle layout and its distribution metrics
(topics per bundle: max, mean, max/mean, Gini, empty bundles; traffic per bundle when the input has
it), how that compares with random layouts of the same size (Monte-Carlo, ``--trials``/``--seed``;
random partition names when the namespace holds the partitions of one topic, else independent hashes),
the split of the most loaded bundle (by msg rate when known, else by topics; or ``--split-bundle``)
with ``--split`` (default ``defaultNamespaceBundleSplitAlgorithm``), and the bundles the auto-split
check would pick. The layout is ``--bundles N`` initial bundles; without it, the bundles the input
names when they cover the namespace's whole range, else ``defaultNumberOfNamespaceBundles`` (4).

Config: ``--preset NAME``, ``--conf broker.conf`` and ``--set KEY=VALUE`` work as in the other
commands (:func:`engine.cli.common.build_config`); the keys used here are those of
:data:`engine.bundles.BUNDLE_CONFIG_DEFAULTS` (e.g. ``--set loadBalancerNamespaceBundleMaxTopics=50``;
``--preset pulsar-5`` makes new namespaces 32 bundles).
``flow_or_qps_equally_divide`` only runs when it is also the default algorithm, as in Pulsar:
``--split flow_or_qps_equally_divide --set defaultNamespaceBundleSplitAlgorithm=flow_or_qps_equally_divide``.

Exit status: 0 (also when a split is refused: the refusal is a result), 2 on bad input or usage with
one line ``error: ...`` on stderr.

JSON contract (``--json``; stable, keys only ever added)::

    {
      "source": str, "format": "topics-list" | "broker-stats" | "bundle-topics" | "generated",
      "topics_total": int,
      "config": {broker.conf key: value, ...},            # the keys used, after --set
      "topics": [{"topic": str, "namespace": str, "hash": int, "hash_hex": "0x%08x",
                  "bundle": str | null,                  # null: hash 0xffffffff, Pulsar cannot serve it
                  "index": int,                          # -1 with bundle null
                  "reported_bundle": str | null}, ...],  # as given by broker-stats / bundleTopics
      "namespaces": [{
          "namespace": str, "topics": int, "bundles": int,
          "layout_source": "--bundles" | "input" | "defaultNumberOfNamespaceBundles",
          "boundaries": ["0x%08x", ...],
          "partitioned_topics": {name: partitions present},
          "per_bundle": [{"bundle": str, "range": str, "lower": int, "upper": int, "topics": int,
                          "msg_rate": float | null, "throughput": float | null,
                          "has_non_persistent": bool}, ...],
          "distribution": {"topics": D, "msg_rate": D | null, "throughput": D | null},
              # D = {"quantity", "bundles", "total", "max", "min", "mean", "max_over_mean",
              #      "gini", "empty", "argmax"}   (max_over_mean, gini: null when the total is 0)
          "expected": {"topics", "bundles", "method": "monte-carlo",
                       "model": "multinomial" | "partition-names",   # see expected_max_over_mean
                       "trials", "seed", "mean_max",
                       "mean_max_over_mean", "p05", "p50", "p95", "observed_max",
                       "observed_max_over_mean", "p_at_least_observed", "p_at_most_observed",
                       "verdict": "typical" | "unlucky" | "lucky"},
          "split": {"algorithm", "bundle", "range", "label": "Split" | "Skip" | "Failure", "reason",
                    "boundaries": [int], "boundaries_hex": [str], "children": [range str]},
          "boundaries_after_split": ["0x%08x", ...],
          "auto_split": {"enabled", "config", "to_split": [bundle], "decisions": [
              {"bundle", "namespace", "broker", "label", "reason", "hits": [{"key", "quantity",
               "value", "limit"}], "topics", "sessions", "msg_rate", "throughput"}]},
          "reported": {"topics": int, "hash_in_reported_bundle": int,
                       "same_bundle_as_layout": int} | null,
          "unassignable": [topic]
      }, ...]
    }

Notes
-----
The auto-split check here uses the traffic the input carries (``broker-stats`` rates are recent,
not the long-term averages Pulsar's ``BundleSplitterTask`` compares) and per-topic sessions.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import bundles as B
from ..config import PRESETS
from ..errors import InputError, UsageError
from ..topics_input import TopicList, load_topics
from .common import build_config

__all__ = ["register", "run", "MAX_BUNDLES"]

#: largest --bundles accepted (memory/time guard; Pulsar namespaces have far fewer)
MAX_BUNDLES = 1 << 20


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bundles",
        help="topic → bundle (CRC-32), distribution metrics, split preview",
        description="Where Pulsar puts each topic (CRC-32 of the full name over the bundle ranges), how even "
                    "that is, and what a split of the busiest bundle would give.",
    )
    p.add_argument("topics", metavar="TOPICS",
                   help="topics list / broker-stats topics JSON / snapshot with bundleTopics, or gen:NAME:K[,...]")
    p.add_argument("--bundles", type=int, metavar="N", help="number of initial bundles of each namespace")
    p.add_argument("--split", metavar="ALGORITHM", choices=B.SPLIT_ALGORITHMS,
                   help="split algorithm: " + ", ".join(B.SPLIT_ALGORITHMS)
                        + " (default: defaultNamespaceBundleSplitAlgorithm)")
    p.add_argument("--split-bundle", metavar="RANGE",
                   help="bundle to split: 0xLOWER_0xUPPER (in every namespace) or TENANT/NS/0xLOWER_0xUPPER "
                        "(default: the most loaded bundle)")
    p.add_argument("--positions", metavar="P[,P...]", help="split positions for specified_positions_divide")
    p.add_argument("--force", action="store_true", help="specified_positions_divide: split even with ≤ 1 topic")
    p.add_argument("--partitions-of", action="append", default=[], metavar="NAME=K",
                   help="expand partitioned topic NAME (listed by its base name) into K partitions; repeatable")
    p.add_argument("--conf", metavar="broker.conf", help="read load-balancer keys from a broker.conf")
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (default pulsar-4)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a broker.conf key (repeatable); used here: " + ", ".join(B.BUNDLE_CONFIG_DEFAULTS))
    p.add_argument("--trials", type=int, default=1000, help="Monte-Carlo trials for the expected spread (1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the Monte-Carlo trials (0)")
    p.add_argument("--limit", type=int, default=20, help="rows of the text tables; 0 = all (20)")
    p.add_argument("--json", action="store_true", help="print the JSON contract instead of text")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------------------------
# argument parsing helpers
# --------------------------------------------------------------------------------------------

def _parse_partitions_of(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        name, sep, k = item.rpartition("=")
        if not sep or not name or not k.strip().isdigit():
            raise UsageError(f"--partitions-of wants NAME=K with K a whole number, got {item!r}")
        out[name.strip()] = int(k)
    return out


def _config(args) -> dict:
    """The bundle keys after ``--preset`` → ``--conf`` → ``--set`` (the shared config rules)."""
    cfg = build_config(args)
    return {k: getattr(cfg, k, default) for k, default in B.BUNDLE_CONFIG_DEFAULTS.items()}


def _positions(text):
    if text is None:
        return None
    try:
        return [B.java_long_decode(x.strip()) for x in text.split(",") if x.strip()]
    except InputError:
        raise UsageError(f"--positions wants numbers like 0x20000000,0x30000000; got {text!r}") from None


# --------------------------------------------------------------------------------------------
# the work
# --------------------------------------------------------------------------------------------

def _namespace_report(tl: TopicList, ns: str, ix: np.ndarray, args, conf: dict) -> tuple[dict, B.NamespaceLayout]:
    if args.bundles is not None:
        boundaries, src = B.initial_boundaries(args.bundles), "--bundles"
    elif tl.layouts and ns in tl.layouts:
        boundaries, src = tl.layouts[ns], "input"
    else:
        boundaries, src = B.initial_boundaries(conf["defaultNumberOfNamespaceBundles"]), \
            "defaultNumberOfNamespaceBundles"
    names = [tl.names[i] for i in ix]
    sel = lambda a: None if a is None else a[ix]  # noqa: E731
    layout = B.build_layout(names, boundaries, namespace=ns, msg_rate=sel(tl.msg_rate),
                            throughput=sel(tl.throughput), sessions=sel(tl.sessions))

    target = None
    if args.split_bundle:
        sb = args.split_bundle.strip()
        if "/" in sb:
            bns, lo, up = B.parse_bundle_name(sb)
            target = (lo, up) if bns == ns else None
        else:
            target = B.parse_range(sb)
        if target is not None:
            b = layout.boundaries
            i = int(np.searchsorted(b, target[0]))
            if i >= b.size - 1 or b[i] != target[0] or b[i + 1] != target[1]:
                raise UsageError(f"--split-bundle {sb} is not a bundle of {ns} (layout from {src}: "
                                 f"{layout.n_bundles} bundles)")
    split_conf = {k: conf[k] for k in (
        "defaultNamespaceBundleSplitAlgorithm", "supportedNamespaceBundleSplitAlgorithms",
        "loadBalancerNamespaceBundleMaxMsgRate", "loadBalancerNamespaceBundleMaxBandwidthMbytes",
        "flowOrQpsDifferenceThresholdPercentage")}
    if args.split == B.FLOW_OR_QPS_EQUALLY_DIVIDE and layout.topic_msg_rate is None and \
            conf["defaultNamespaceBundleSplitAlgorithm"] == B.FLOW_OR_QPS_EQUALLY_DIVIDE:
        raise UsageError("flow_or_qps_equally_divide needs per-topic traffic: give broker-stats topics JSON")
    split = layout.split(target, args.split, positions=_positions(args.positions), force=args.force, **split_conf)
    auto = layout.auto_split(**{k: conf[k] for k in (
        "loadBalancerAutoBundleSplitEnabled", "loadBalancerNamespaceBundleMaxTopics",
        "loadBalancerNamespaceBundleMaxSessions", "loadBalancerNamespaceBundleMaxMsgRate",
        "loadBalancerNamespaceBundleMaxBandwidthMbytes", "loadBalancerNamespaceMaximumBundles")})
    expected = layout.expected(trials=args.trials, seed=args.seed)

    reported = None
    if tl.reported_bundles is not None:
        rep = [tl.reported_bundles[i] for i in ix]
        have = [j for j, r in enumerate(rep) if r is not None]
        inside = same = 0
        names_now = layout.bundle_names()
        for j in have:
            _, lo, up = B.parse_bundle_name(rep[j])
            h = int(layout.hashes[j])
            inside += lo <= h < up
            k = int(layout.index[j])
            same += k >= 0 and names_now[k] == rep[j]
        reported = {"topics": len(have), "hash_in_reported_bundle": inside, "same_bundle_as_layout": same}

    frame = layout.to_frame()
    per_bundle = [
        {"bundle": r.bundle, "range": r.range, "lower": int(r.lower), "upper": int(r.upper), "topics": int(r.topics),
         "msg_rate": None if np.isnan(r.msg_rate) else float(r.msg_rate),
         "throughput": None if np.isnan(r.throughput) else float(r.throughput),
         "has_non_persistent": bool(r.has_non_persistent)}
        for r in frame.itertuples(index=False)
    ]
    parts = TopicList(tuple(names), tl.format).partitioned_topics()
    rep = {
        "namespace": ns,
        "topics": len(names),
        "bundles": layout.n_bundles,
        "layout_source": src,
        "boundaries": [B.format_bound(x) for x in layout.boundaries],
        "partitioned_topics": parts,
        "per_bundle": per_bundle,
        "distribution": {k: (None if v is None else v.to_json()) for k, v in layout.distributions().items()},
        "expected": expected.to_json(),
        "split": split.to_json(),
        "boundaries_after_split": [B.format_bound(x) for x in split.apply(layout.boundaries)],
        "auto_split": auto.to_json(),
        "reported": reported,
        "unassignable": layout.unassignable,
    }
    return rep, layout


def build_report(args, topic_rows: int | None = None) -> tuple[dict, list]:
    """The JSON report of the module docstring (and the layouts, for text output).

    ``topic_rows`` limits the ``topics`` list to the first rows (text output); ``None`` = all.
    """
    if args.bundles is not None and not 1 <= args.bundles <= MAX_BUNDLES:
        raise UsageError(f"--bundles must be in 1..{MAX_BUNDLES}, got {args.bundles}")
    if args.trials < 1 or args.trials > 100_000:
        raise UsageError(f"--trials must be in 1..100000, got {args.trials}")
    conf = _config(args)
    from ..limits import TOPIC_BYTES_JSON, TOPIC_BYTES_TEXT

    # refused before the run when the topics would need more than SHEDLAB_MAX_RUN_MB
    tl = load_topics(args.topics, partitions_of=_parse_partitions_of(args.partitions_of),
                     bytes_per_topic=TOPIC_BYTES_TEXT if topic_rows is not None else TOPIC_BYTES_JSON)
    if len(tl) == 0:
        raise InputError("no topics in the input", source=tl.source)
    groups = tl.by_namespace()
    if args.split_bundle and "/" in args.split_bundle:
        bns = B.parse_bundle_name(args.split_bundle.strip())[0]
        if bns not in groups:
            raise UsageError(f"--split-bundle {args.split_bundle}: namespace {bns} has no topics in the input")
    want = len(tl) if topic_rows is None else min(topic_rows, len(tl))
    namespaces, layouts, topics_json = [], [], [None] * len(tl)
    for ns, ix in groups.items():
        rep, layout = _namespace_report(tl, ns, ix, args, conf)
        namespaces.append(rep)
        layouts.append(layout)
        names_now = layout.bundle_names()
        for j, i in enumerate(ix):
            if i >= want:
                break
            k = int(layout.index[j])
            h = int(layout.hashes[j])
            topics_json[i] = {"topic": tl.names[i], "namespace": ns, "hash": h, "hash_hex": f"0x{h:08x}",
                              "bundle": names_now[k] if k >= 0 else None, "index": k,
                              "reported_bundle": tl.reported_bundles[i] if tl.reported_bundles else None}
    conf_json = {k: (list(v) if isinstance(v, tuple) else v) for k, v in conf.items()}
    report = {"source": tl.source, "format": tl.format, "topics_total": len(tl), "config": conf_json,
              "topics": topics_json[:want], "namespaces": namespaces}
    return report, layouts


def run(args) -> int:
    report, layouts = build_report(args, None if args.json or args.limit <= 0 else args.limit)
    if args.json:
        from . import print_json

        print_json(report)
    else:
        _print_text(report, layouts, args.limit)
    return 0


# --------------------------------------------------------------------------------------------
# text output
# --------------------------------------------------------------------------------------------

def _f(x, nd=2) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.{nd}f}"


def _print_text(report: dict, layouts: list, limit: int) -> None:
    out = sys.stdout.write
    nns = len(report["namespaces"])
    out(f"source: {report['source']} ({report['format']}), {report['topics_total']:,} topics in "
        f"{nns} namespace{'s' if nns != 1 else ''}\n")
    for rep, layout in zip(report["namespaces"], layouts):
        d = rep["distribution"]["topics"]
        out(f"\nnamespace {rep['namespace']}: {rep['bundles']:,} bundles (layout from {rep['layout_source']}), "
            f"{rep['topics']:,} topics\n")
        if rep["partitioned_topics"]:
            pt = ", ".join(f"{k} ({v})" for k, v in list(rep["partitioned_topics"].items())[:5])
            more = len(rep["partitioned_topics"]) - 5
            out(f"  partitioned topics (partitions present): {pt}{f', … {more} more' if more > 0 else ''}\n")
        out(f"  topics per bundle: max {_f(d['max'])}, mean {_f(d['mean'])}, max/mean {_f(d['max_over_mean'])}, "
            f"Gini {_f(d['gini'])}, empty {d['empty']:,} of {d['bundles']:,}\n")
        for q, unit in (("msg_rate", "msg/s"), ("throughput", "B/s")):
            dq = rep["distribution"][q]
            if dq is not None:
                out(f"  {q.replace('_', ' ')} per bundle ({unit}): max {_f(dq['max'])}, mean {_f(dq['mean'])}, "
                    f"max/mean {_f(dq['max_over_mean'])}, Gini {_f(dq['gini'])}\n")
        e = rep["expected"]
        verdict = {"unlucky": "unlucky: fuller than random layouts usually are",
                   "lucky": "lucky: flatter than random layouts usually are",
                   "typical": "typical for random hashing"}.get(e["verdict"], e["verdict"])
        prob = (f"P(max ≤ {e['observed_max']}) = {e['p_at_most_observed']:.1%}" if e["verdict"] == "lucky"
                else f"P(max ≥ {e['observed_max']}) = {e['p_at_least_observed']:.1%}")
        out(f"  random layouts ({e['method']}, {e['model']} model, {e['trials']} trials, seed {e['seed']}): "
            f"max/mean median {_f(e['p50'])}, 90% within [{_f(e['p05'])}, {_f(e['p95'])}]; {prob} → {verdict}\n")
        if rep["reported"]:
            r = rep["reported"]
            out(f"  reported bundles: {r['hash_in_reported_bundle']:,} of {r['topics']:,} topics hash into the bundle "
                f"they were reported in; {r['same_bundle_as_layout']:,} are in the same bundle in this layout\n")
        s = rep["split"]
        out(f"  split {s['bundle']} with {s['algorithm']}: {s['label']}: {s['reason']}\n")
        if s["label"] == "Split":
            out(f"    children: {', '.join(s['children'])}\n")
        a = rep["auto_split"]
        chosen = a["to_split"]
        c = a["config"]
        out(f"  auto split: {len(chosen)} of {rep['bundles']:,} bundles would split "
            f"(topics > {c['loadBalancerNamespaceBundleMaxTopics']}, sessions > "
            f"{c['loadBalancerNamespaceBundleMaxSessions']}, "
            f"rate > {c['loadBalancerNamespaceBundleMaxMsgRate']} msg/s, "
            f"throughput > {c['loadBalancerNamespaceBundleMaxBandwidthMbytes']} MB/s; at most "
            f"{c['loadBalancerNamespaceMaximumBundles']} bundles{'' if a['enabled'] else '; auto split disabled'})\n")
        for dec in a["decisions"]:
            if dec["hits"]:
                out(f"    {dec['bundle']}: {dec['label']}: {dec['reason']}\n")
        if rep["unassignable"]:
            out(f"  {len(rep['unassignable'])} topic(s) hash to 0xffffffff (Pulsar's lookup fails): "
                f"{', '.join(rep['unassignable'][:5])}\n")
        rows = sorted(rep["per_bundle"], key=lambda r: (-r["topics"], r["lower"]))
        shown = rows if limit <= 0 else rows[:limit]
        out(f"  bundles{'' if len(shown) == len(rows) else f' (top {len(shown)} of {len(rows):,} by topics)'}:\n")
        traffic = rep["distribution"]["msg_rate"] is not None
        out(f"    {'range':<23} {'topics':>7}" + (f" {'msg/s':>12} {'B/s':>14}" if traffic else "") + "\n")
        for r in shown:
            out(f"    {r['range']:<23} {r['topics']:>7,}"
                + (f" {_f(r['msg_rate']):>12} {_f(r['throughput']):>14}" if traffic else "") + "\n")
    shown = report["topics"]
    total = report["topics_total"]
    out(f"\ntopics{'' if len(shown) == total else f' (first {len(shown)} of {total:,})'}:\n")
    for t in shown:
        out(f"  {t['topic']}  {t['hash_hex']}  {t['bundle'] or 'unassignable (hash 0xffffffff)'}\n")
