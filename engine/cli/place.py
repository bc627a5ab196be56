"""``python -m engine place SNAPSHOT --bundle NAME``: one placement through ``selectBroker``.

JSON contract (``--json``)::

    {"bundle": B, "broker": ID or null, "random": BOOL, "strategy": NAME,
     "candidates": [ID, ...], "filters": [{"name", "candidates", "removed", "note"}, ...],
     "scores": {ID: NUMBER}, "score_unit": TEXT, "best": [ID, ...], "retried": BOOL,
     "first_choice": ID or null, "preallocated": BOOL, "from_plan": BOOL, "reason": TEXT, "lines": {...}}

``random`` is true when the pick was a draw among several brokers.
"""
from __future__ import annotations

from ..io import load_snapshot
from ..managers import make_manager
from . import print_json
from .common import add_config_args, add_policies_args, attach_policy_files, build_config
from .format import placement_text


def register(sub):
    p = sub.add_parser("place", help="place one bundle",
                       description="Where would the leader place this bundle? (selectBroker: filters, "
                                   "strategy, overload retry)")
    p.add_argument("snapshot", help="as for `shed` (the Extensible Load Manager's data too)")
    p.add_argument("--broker", metavar="ID", help="the broker of a single BrokerLoadData value "
                                                   "(default: the file name without its extension)")
    p.add_argument("--bundle", required=True, help="bundle name, e.g. tenant/ns/0x00000000_0x40000000")
    p.add_argument("--candidates", help="comma-separated brokers: run only the strategy on these")
    p.add_argument("--non-persistent", action="store_true", help="the bundle holds non-persistent topics")
    p.add_argument("--assign", action="store_true",
                   help="as a new assignment (reuse and record a preallocation)")
    add_policies_args(p)
    add_config_args(p)
    p.set_defaults(func=run)


def _shedding_spec(name: str):
    """The spec of ``name`` as a shedding strategy, or ``None``."""
    from ..errors import UsageError
    from ..strategies import registry

    try:
        return registry.spec(registry.shedding_name(name))
    except UsageError:
        return None


def _is_placement_name(name: str) -> bool:
    """``place --strategy X`` names the placement, unless X is only a shedding strategy of a load manager
    other than the default one (e.g. TransferShedder: it selects its manager and is kept as the strategy)."""
    from ..strategies.spec import MODULAR

    s = _shedding_spec(name)
    return s is None or s.load_manager == MODULAR


def run(args) -> int:
    # `place --strategy X` names the *placement* strategy (one that is also a shedding strategy needs
    # itself as the shedding one too); a shedding strategy with its own load manager is kept as the strategy
    if args.strategy and not args.placement and _is_placement_name(args.strategy):
        from ..strategies import placement_name, registry

        args.placement = placement_name(args.strategy)
        # a placement that is also a shedding strategy (AvgShedder) runs with itself as the shedding one
        args.strategy = args.placement if registry.spec(args.placement).is_shedding else None
    ld = load_snapshot(args.snapshot, broker=args.broker)
    cfg = build_config(args, [ld])
    attach_policy_files(args, [ld])
    lm = make_manager(ld, cfg, seed=args.seed)
    cands = [c.strip() for c in args.candidates.split(",") if c.strip()] if args.candidates else None
    if args.assign:
        dec = lm.select_broker_for_assignment(args.bundle, non_persistent=args.non_persistent)
    else:
        dec = lm.select_broker(args.bundle, candidates=cands, non_persistent=args.non_persistent)
    if args.json:
        print_json(dec.to_json())
    else:
        for w in ld.warnings:
            print(f"warning: {w}")
        print(placement_text(dec))
    return 0
