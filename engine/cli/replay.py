"""``python -m engine replay TIMELINE``: one shedding cycle per snapshot, state carried over.

"What would AvgShedder with these thresholds have done during last night's incident?"

JSON: the ``shed`` shape, one entry of ``cycles`` per snapshot (each with ``"snapshot": SOURCE``).
"""
from __future__ import annotations

from ..config import changed_keys
from ..io import load_timeline
from . import print_json
from .common import add_config_args, build_config
from .format import cycle_text
from .shed import make_manager


def register(sub):
    p = sub.add_parser("replay", help="replay a timeline of snapshots",
                       description="Run one shedding cycle per snapshot of a timeline, strategy state carried over.")
    p.add_argument("timeline", help="directory of snapshots (name order), or a JSON list / JSON lines file")
    add_config_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    cfg = build_config(args)
    snaps = load_timeline(args.timeline)
    lm = make_manager(snaps[0], cfg, args.seed)
    cycles = []
    warnings = []
    for i, ld in enumerate(snaps):
        if i:
            lm.update(ld)
        warnings.extend(ld.warnings)
        c = lm.do_load_shedding(ld.now)
        c.source = ld.source
        cycles.append(c)
    if args.json:
        print_json({"strategy": lm.shedding.name, "placement": lm.placement.name,
                    "config_changes": {k: v[1] for k, v in changed_keys(cfg).items()},
                    "warnings": warnings, "cycles": [c.to_json() for c in cycles]})
    else:
        for w in warnings:
            print(f"warning: {w}")
        for c in cycles:
            print(cycle_text(c))
    return 0
