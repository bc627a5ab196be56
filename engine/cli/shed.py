"""``python -m engine shed SNAPSHOT``: N shedding cycles as the leader would run them.

JSON contract (``--json``)::

    {"strategy": NAME, "placement": NAME, "config_changes": {KEY: VALUE},
     "warnings": [TEXT],
     "cycles": [{"cycle": 1, "now": MS, "strategy": NAME, "label": "Success"|"Skip", "reason": TEXT,
                "reason_code": CODE,    # Pulsar's UnloadDecision.Reason names (+ HitCount), see engine.results
                 "unloads": [{"broker": SRC, "bundle": B, "destination": DST or null, "reason": TEXT,
                              "msg_rate": FLOAT, "throughput": FLOAT, "placement": PLACEMENT}, ...],
                 "skipped": [{"broker", "bundle", "destination", "reason"}],
                 "scores": {BROKER: NUMBER}, "score_unit": "%"|"msg/s", "lines": {NAME: NUMBER},
                 "verdicts": [...], "pairs": [...], "notes": [...], "state": {...},
                 "decisions": [{"label", "reason", "broker", "bundle", "destination", "detail",
                                "swap"}]}, ...]}     # "decisions": extensible load manager only

PLACEMENT (where ``selectBroker`` put the bundle)::

    {"bundle", "broker", "strategy", "random": BOOL, "candidate_count": N,
     "filters": [{"name", "count", "removed_count", "note"}], "score": NUMBER or null, "score_unit",
     "best": [ID], "retried", "first_choice", "preallocated", "from_plan", "reason", "lines"}

``--candidates`` gives each placement's per-candidate detail instead, the shape ``place --json``
prints: ``"candidates": [ID]``, ``"scores": {ID: NUMBER}`` and ``"filters": [{"name", "candidates",
"removed", "note", "reasons"}]`` (on 1,000 brokers that is ~100 KB per unload, 165 MB for one cycle of
the 100,000-bundle bench snapshot, so it is not the default).

Unloads are in the order Pulsar issues them. Cycles run on unchanged load reports, one shedding
interval apart, with strategy state carried over and unloaded bundles entering the grace period.

``--policies FILE`` (repeatable): the cluster's isolation / anti-affinity / failure-domain policy files
(:mod:`engine.policies`), for modular and ELM snapshots alike; a bad file exits 2 naming it.

``--commands``: instead, print every cycle's unloads as the ``pulsar-admin namespaces unload`` lines
that would carry them out (``--rest``: as the admin REST calls), a dry run — see :mod:`engine.commands`.
"""
from __future__ import annotations

import sys

from ..config import changed_keys
from ..io import load_snapshot
from ..managers import make_manager as _make_manager
from . import print_json
from .common import add_config_args, add_policies_args, attach_policy_files, build_config
from .format import cycle_text


def register(sub):
    p = sub.add_parser("shed", help="run shedding cycles on a snapshot",
                       description="Run N load-shedding cycles on a snapshot as Pulsar's leader would.")
    p.add_argument("snapshot", help="LoadData JSON, load-report directory, ZooKeeper dump (dir or zip), or the "
                                    "Extensible Load Manager's data (pulsar-client consume output, {key, value} "
                                    "JSON lines, a BrokerLoadData value, a zip of them)")
    p.add_argument("--broker", metavar="ID", help="the broker of a single BrokerLoadData value "
                                                   "(default: the file name without its extension)")
    add_config_args(p)
    p.add_argument("--cycles", type=int, default=1, help="number of shedding cycles (default 1)")
    p.add_argument("--candidates", action="store_true",
                   help="with --json: each placement's per-candidate detail (every candidate, its score, each "
                        "filter's candidates and removed brokers); without it a placement gives their counts "
                        "and the destination's score (on 1,000 brokers the detail is ~100 KB per unload)")
    add_policies_args(p)
    add_commands_args(p)
    p.set_defaults(func=run)


def add_commands_args(p) -> None:
    """``--commands`` / ``--rest`` (shared with ``replay``)."""
    p.add_argument("--commands", action="store_true",
                   help="print the unloads as pulsar-admin commands (a dry run: nothing is sent to any cluster)")
    p.add_argument("--rest", action="store_true",
                   help="with --commands: print the admin REST calls (PUT /admin/v2/namespaces/...) instead")


def commands_style(args) -> str | None:
    """``"pulsar-admin"``, ``"rest"`` or ``None`` (no commands asked for); a usage error for a
    combination that cannot be printed."""
    from ..errors import UsageError

    if getattr(args, "rest", False) and not getattr(args, "commands", False):
        raise UsageError("--rest goes with --commands")
    if not getattr(args, "commands", False):
        return None
    if getattr(args, "json", False):
        raise UsageError("--commands prints commands, not JSON: use one or the other")
    return "rest" if args.rest else "pulsar-admin"


def print_commands(cycles, style: str, lm, source: str) -> None:
    from ..commands import commands_text

    print(commands_text(cycles, style, context=[f"{lm.shedding.name} + {lm.placement.name} on {source}"]))


def run(args) -> int:
    from ..errors import UsageError

    if args.cycles < 1:
        raise UsageError("--cycles must be at least 1")
    style = commands_style(args)
    if args.candidates and not args.json:
        raise UsageError("--candidates goes with --json (the per-candidate detail of each placement)")
    ld = load_snapshot(args.snapshot, broker=args.broker)
    cfg = build_config(args, [ld])
    attach_policy_files(args, [ld])
    lm = _make_manager(ld, cfg, seed=args.seed)
    check_cycles(args.cycles, len(lm.view.brokers), len(lm.view.bundles))
    cycles = lm.run_cycles(args.cycles)
    if style:
        for w in ld.warnings:
            print(f"warning: {w}", file=sys.stderr)
        print_commands(cycles, style, lm, args.snapshot)
    elif args.json:
        print_json({"strategy": lm.shedding.name, "placement": lm.placement.name,
                    "pulsar_version": cfg.pulsarVersion, "release_note": args.release_note,
                    "config_changes": {k: v[1] for k, v in changed_keys(cfg).items()},
                    "warnings": ld.warnings, "cycles": [c.to_json(candidates=args.candidates) for c in cycles]})
    else:
        for w in ld.warnings:
            print(f"warning: {w}")
        print(f"{lm.shedding.name} + {lm.placement.name} on {len(lm.view.brokers)} brokers, "
              f"{len(lm.view.bundles)} bundles; {args.release_note}")
        for c in cycles:
            print(cycle_text(c))
    return 0


def check_cycles(cycles: int, brokers: int, bundles: int) -> None:
    """Refuse ``--cycles`` whose report would need more than ``SHEDLAB_MAX_RUN_MB`` (before running)."""
    from ..limits import check_run_memory, cycles_bytes

    check_run_memory(cycles_bytes(cycles, brokers, bundles),
                     f"--cycles {cycles:,} on {brokers:,} brokers and {bundles:,} bundles")


def make_manager(ld, cfg, seed=None):
    """Former home of :func:`engine.managers.make_manager` (import it from there)."""
    return _make_manager(ld, cfg, seed=seed)
