"""``python -m engine replay TIMELINE``: one shedding cycle per snapshot, state carried over.

"What would AvgShedder with these thresholds have done during last night's incident?"

JSON: the ``shed`` shape, one entry of ``cycles`` per snapshot (each with ``"snapshot": SOURCE``).

``--commands`` (``--rest``): every cycle's unloads as the commands that would carry them out, a dry
run (:mod:`engine.commands`).

``--policies FILE`` (repeatable): the cluster's policy files (:mod:`engine.policies`), given to every
snapshot of the timeline.

``--observed``: predicted vs actual — the bundles whose owner changed between consecutive snapshots
(what the cluster did) against the unloads of the replay (what the engine, with ``--conf`` the
cluster's own ``broker.conf``, predicts), per hour, with the agreement figure of
:mod:`engine.agreement`. JSON: :meth:`engine.agreement.Agreement.to_json` under ``"agreement"``.
"""
from __future__ import annotations

import sys

from ..config import changed_keys
from ..io import load_timeline
from . import print_json
from .common import add_config_args, add_policies_args, attach_policy_files, build_config
from .format import cycle_text
from ..managers import make_manager
from .shed import add_commands_args, commands_style, print_commands

__all__ = ["register", "run", "replay_timeline"]


def register(sub):
    p = sub.add_parser("replay", help="replay a timeline of snapshots",
                       description="Run one shedding cycle per snapshot of a timeline, strategy state carried over.")
    p.add_argument("timeline", help="directory of snapshots (name order), or a JSON list / JSON lines file")
    p.add_argument("--observed", action="store_true",
                   help="compare with what the cluster did: ownership changes between consecutive snapshots")
    add_config_args(p)
    add_policies_args(p)
    add_commands_args(p)
    p.set_defaults(func=run)


def replay_timeline(snaps, cfg, seed: int = 0):
    """``(manager, cycles, warnings)``: one ``doLoadShedding`` cycle per snapshot, the manager (and its
    strategy state) carried from one snapshot to the next."""
    lm = make_manager(snaps[0], cfg, seed=seed)
    cycles, warnings = [], []
    for i, ld in enumerate(snaps):
        if i:
            lm.update(ld)
        warnings.extend(ld.warnings)
        c = lm.do_load_shedding(ld.now)
        c.source = ld.source
        cycles.append(c)
    return lm, cycles, warnings


def run(args) -> int:
    style = commands_style(args)
    snaps = load_timeline(args.timeline)
    cfg = build_config(args, snaps[:1])
    attach_policy_files(args, snaps)
    lm, cycles, warnings = replay_timeline(snaps, cfg, args.seed)
    if style:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        print_commands(cycles, style, lm, str(args.timeline))
        return 0
    ag = None
    if getattr(args, "observed", False):
        from ..agreement import agreement_text, compare_timeline

        ag = compare_timeline(snaps, cycles, source=str(args.timeline), strategy=lm.shedding.name)
    if args.json:
        out = {"strategy": lm.shedding.name, "placement": lm.placement.name,
               "pulsar_version": cfg.pulsarVersion, "release_note": args.release_note,
               "config_changes": {k: v[1] for k, v in changed_keys(cfg).items()},
               "warnings": warnings, "cycles": [c.to_json() for c in cycles]}
        if ag is not None:
            out["agreement"] = ag.to_json()
        print_json(out)
    elif ag is not None:
        for w in warnings:
            print(f"warning: {w}")
        print(agreement_text(ag))
    else:
        for w in warnings:
            print(f"warning: {w}")
        for c in cycles:
            print(cycle_text(c))
    return 0
