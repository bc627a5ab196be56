"""``python -m engine pegasus SNAPSHOT``: the plan Pegasus' meta server would execute.

SNAPSHOT is the text of ``app NAME -d`` (one or more, optionally with ``nodes -d``) or Shedlab's
JSON form (see :mod:`engine.pegasus.parse`). The command runs cure and the balancer round after
round until nothing more is proposed and prints the proposals round by round (``move_pri`` /
``copy_pri`` / ``copy_sec`` with the partition ``app_id.pidx``, from, to, and the reason) and the
final per-node primary / secondary / total counts per table and for the cluster.

Options map to Pegasus settings: ``--cluster-balance`` (``balance_cluster``), ``--only-primary``
(``only_primary_balancer``), ``--only-move-primary`` (``only_move_primary``),
``--balancer-in-turn`` (``balancer_in_turn``), ``--level steady|lively``
(``meta_function_level``), ``--assign-delay-ms`` (``replica_assign_delay_ms_for_dropouts``),
``--config`` (a meta server ``config.ini``; flags win). ``--seed N`` makes the cluster policy's
disk choice random (seeded); without it the first candidate disk is taken. ``--no-quirks``
switches off the bug quirks (all, or a list such as ``Q1,Q13``; write it after SNAPSHOT or as
``--no-quirks=Q1``).

Exit status: 0 with a plan (also when nothing needs to move), 2 with one line ``error: ...`` on
bad input or usage.

JSON output (``--json``), a stable contract (``format = "shedlab-pegasus-plan/1"``)::

    {
      "format": "shedlab-pegasus-plan/1",
      "source": "samples/pegasus/unbalanced.txt",
      "config": {"balance_cluster": false, ..., "fixed_quirks": []},   # PegasusConfig fields
      "disk_choice": "first" | "random(seed=N)",
      "nodes": [{"address": "10.0.0.1:34801", "alive": true, "disks": ["default"],
                 "id": 3}],                 # id = node-map order used by the balancer (or null)
      "tables": [{"app_id": 2, "app_name": "temp", "partition_count": 8, "max_replica_count": 3}],
      "rounds": [
        {"round": 1, "kind": "balance",     # meta | cure | wait | balance
         "stage": "primary",                # primary, secondary, cluster_secondary, cure, ...
         "now_ms": 0, "note": "...",
         "operation_count": {"move_pri": 7, "copy_pri": 0, "copy_sec": 0, "total": 7},
         "proposals": [
           {"round": 1, "seq": 1, "type": "move_pri", "gpid": "2.0", "app_id": 2, "pidx": 0,
            "table": "temp", "from": "10.0.0.1:34801", "to": "10.0.0.3:34801",
            "stage": "primary", "reason": "table temp: ...", "details": {...},
            "actions": [["DOWNGRADE_TO_SECONDARY", "10.0.0.1:34801", "10.0.0.1:34801"], ...]}
         ]}
      ],
      "operation_count": {"before": {...} | null,     # balance checker before the first round
                          "after": {...} | null,      # ... and at the end (0 when converged)
                          "plan": {...}},             # balancer proposals of the whole plan
      "counts": {"before": {"tables": {"temp": [{"node": "10.0.0.1:34801", "primary": 5,
                                                  "secondary": 3, "total": 8}, ...]},
                            "cluster": [{"node": ..., "primary": ..., "secondary": ...,
                                         "total": ...}]},
                 "after": {...same shape...}},
      "skew": {"before": {"tables": {"temp": {"primary": 5, "secondary": 7, "total": 8}},
                          "cluster": {"primary": ..., "secondary": ..., "total": ...}},
               "after": {...}},                       # max - min over alive nodes
      "health": {"before": [{"table": "temp", "partition_count": 8,
                             "fully_healthy_partition_count": 8, "unhealthy_partition_count": 0,
                             "write_unhealthy_partition_count": 0,
                             "read_unhealthy_partition_count": 0, "by_status": {...}}],
                 "after": [...]},
      "stop_reason": "balanced: the balancer has nothing more to propose",
      "warnings": []
    }

Proposal types: ``move_pri``, ``copy_pri``, ``copy_sec`` (balancer); ``assign_pri``,
``upgrade_pri``, ``add_sec``, ``remove_sec`` (cure); ``drop_pri``, ``drop_sec`` (replicas of a
dead node downgraded). ``from`` / ``to`` are ``null`` where a type has no such node.
"""
from __future__ import annotations

import re

from ..errors import UsageError
from . import print_json

__all__ = ["register", "run", "build_config", "format_plan"]

_QUIRK_LIST = re.compile(r"^\s*(all|[Qq]\d+(\s*,\s*[Qq]\d+)*)?\s*$")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pegasus",
        help="Pegasus replica balancing: the plan of cure + balancer rounds",
        description="What Apache Pegasus' meta server would do with a cluster: cure, then "
                    "balance round by round (text of `app NAME -d` / `nodes -d`, or JSON).",
    )
    p.add_argument("snapshot", metavar="SNAPSHOT", nargs="?", default=None,
                   help="app -d / nodes -d text, or JSON")
    p.add_argument("--cluster-balance", action="store_true", help="balance_cluster = true")
    p.add_argument("--only-primary", action="store_true", help="only_primary_balancer = true")
    p.add_argument("--only-move-primary", action="store_true", help="only_move_primary = true")
    p.add_argument("--balancer-in-turn", action="store_true", help="balancer_in_turn = true")
    p.add_argument("--level", choices=["freezed", "steady", "lively"], default=None,
                   help="meta function level (default lively)")
    p.add_argument("--assign-delay-ms", type=int, default=None, metavar="MS",
                   help="replica_assign_delay_ms_for_dropouts (default 600000)")
    p.add_argument("--op-count-per-round", type=int, default=None, metavar="N",
                   help="balance_op_count_per_round (cluster mode, default 10)")
    p.add_argument("--config", metavar="INI", default=None,
                   help="read [meta_server]/[replication] keys from a Pegasus config.ini")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="random disk choice of the cluster policy, seeded (default: first disk)")
    p.add_argument("--no-quirks", nargs="?", const="all", default=None, metavar="LIST",
                   help="switch off bug quirks: all (default) or e.g. Q1,Q13")
    p.add_argument("--max-rounds", type=int, default=None, metavar="N", help="safety stop")
    p.add_argument("--brief", action="store_true", help="omit the reasons")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def build_config(args):
    """A :class:`~engine.pegasus.config.PegasusConfig` from the parsed arguments."""
    from ..pegasus.config import PegasusConfig, parse_quirks

    changes = {}
    if args.cluster_balance:
        changes["balance_cluster"] = True
    if args.only_primary:
        changes["only_primary_balancer"] = True
    if args.only_move_primary:
        changes["only_move_primary"] = True
    if args.balancer_in_turn:
        changes["balancer_in_turn"] = True
    if args.level:
        changes["meta_function_level"] = args.level
    if args.assign_delay_ms is not None:
        changes["replica_assign_delay_ms_for_dropouts"] = args.assign_delay_ms
    if args.op_count_per_round is not None:
        changes["balance_op_count_per_round"] = args.op_count_per_round
    if args.no_quirks is not None:
        changes["fixed_quirks"] = parse_quirks(args.no_quirks)
    if args.config:
        from ..io import read_input_text

        text = read_input_text(args.config)  # bounded (SHEDLAB_MAX_INPUT_MB), devices and streams too
        return PegasusConfig.from_ini(text, source=args.config, **changes)
    return PegasusConfig(**changes)


def _node(hp) -> str:
    return str(hp) if hp else "-"


def format_plan(plan, brief: bool = False) -> str:
    """The plan as the text the command prints."""
    snap, cfg = plan.snapshot, plan.config
    lines = []
    alive = sum(1 for n in snap.nodes if n.alive)
    mode = "cluster balance (balance_cluster=true)" if cfg.balance_cluster else "per-table balance"
    opts = [k for k in ("only_primary_balancer", "only_move_primary", "balancer_in_turn")
            if getattr(cfg, k)]
    quirks = ("emulated" if not cfg.fixed_quirks
              else "switched off: " + ",".join(sorted(cfg.fixed_quirks)))
    lines.append(f"Pegasus plan for {snap.source or 'snapshot'}")
    lines.append(f"  {len(snap.nodes)} nodes ({alive} alive), {len(snap.tables)} table(s), "
                 f"{snap.partition_total} partitions; {mode}"
                 + (f" + {', '.join(opts)}" if opts else "")
                 + f"; level {cfg.meta_function_level}; quirks {quirks}; disk choice "
                 f"{plan.disk_choice}")
    for w in snap.warnings:
        lines.append(f"  warning: {w}")
    for r in plan.rounds:
        oc = r.operation_count
        head = f"round {r.number}  {r.kind} ({r.stage}): {r.note}"
        if r.kind == "balance":
            head += f"  [move_pri={oc.move_pri} copy_pri={oc.copy_pri} copy_sec={oc.copy_sec}]"
        lines.append(head)
        for p in r.proposals:
            lines.append(f"  {p.type:<11} {str(p.gpid):<7} {_node(p.from_node):>21} -> "
                         f"{_node(p.to_node):<21} {p.table}")
            if not brief:
                lines.append(f"      {p.reason}")
    if not plan.rounds:
        lines.append("no proposals")
    lines.append(f"stopped: {plan.stop_reason}")
    b, a, t = plan.operation_count_before, plan.operation_count_after, plan.operation_count_plan
    if b is not None:
        lines.append(f"balance_operation_count (checker) before: total={b.total} "
                     f"(move_pri={b.move_pri} copy_pri={b.copy_pri} copy_sec={b.copy_sec})"
                     + (f"; after: total={a.total}" if a is not None else ""))
    lines.append(f"plan: {t.total} balancer proposal(s) (move_pri={t.move_pri} "
                 f"copy_pri={t.copy_pri} copy_sec={t.copy_sec}), {len(plan.proposals) - t.total} "
                 f"cure/meta proposal(s), {len(plan.rounds)} round(s)")
    data = plan.to_json()
    lines.append("")
    lines.append("final per-node counts (before in brackets)")
    for name, rows in data["counts"]["after"]["tables"].items():
        lines.extend(_count_table(f"table {name}", rows, data["counts"]["before"]["tables"][name]))
    lines.extend(_count_table("cluster", data["counts"]["after"]["cluster"],
                              data["counts"]["before"]["cluster"]))
    sk = data["skew"]["after"]["cluster"]
    lines.append(f"cluster skew (max - min over alive nodes): primary {sk['primary']}, "
                 f"secondary {sk['secondary']}, total {sk['total']}")
    return "\n".join(lines)


def _count_table(title, rows, before_rows):
    before = {r["node"]: r for r in before_rows}
    w = max([len("node")] + [len(r["node"]) for r in rows])
    out = [title, f"  {'node':<{w}}  primary  secondary  total"]
    for r in rows:
        b = before.get(r["node"], {"primary": 0, "secondary": 0, "total": 0})
        out.append(f"  {r['node']:<{w}}  {r['primary']:>7}  {r['secondary']:>9}  {r['total']:>5}"
                   f"  ({b['primary']}/{b['secondary']}/{b['total']})")
    return out


def run(args) -> int:
    from ..pegasus.parse import load_snapshot
    from ..pegasus.plan import run_plan

    if args.max_rounds is not None and args.max_rounds < 1:
        raise UsageError("--max-rounds must be at least 1")
    if args.seed is not None and args.seed < 0:  # numpy's generators take non-negative seeds only
        raise UsageError(f"--seed must not be negative, got {args.seed}")
    if args.snapshot is None:
        # `--no-quirks SNAPSHOT`: argparse gave the file to the optional LIST
        if args.no_quirks is not None and not _QUIRK_LIST.match(args.no_quirks):
            args.snapshot, args.no_quirks = args.no_quirks, "all"
        else:
            raise UsageError("python -m engine pegasus: the SNAPSHOT file is required")
    cfg = build_config(args)
    snap = load_snapshot(args.snapshot)
    plan = run_plan(snap, cfg, seed=args.seed, max_rounds=args.max_rounds)
    if args.json:
        print_json(plan.to_json())
    else:
        print(format_plan(plan, brief=args.brief))
    return 0
