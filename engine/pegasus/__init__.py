"""Apache Pegasus meta-server replica balancing: cure, per-table and cluster balance.

Pure Python (stdlib, numpy, pandas). Follows ``pegasus-balancing.md`` decision by decision,
quirks included (see :data:`engine.pegasus.config.QUIRKS`); the quirks that are plain bugs can be
switched off with ``PegasusConfig(fixed_quirks=...)``.

Typical use::

    from engine.pegasus import load_snapshot, run_plan, PegasusConfig
    plan = run_plan(load_snapshot("samples/pegasus/unbalanced.txt"), PegasusConfig())
    for p in plan.proposals:
        print(p.round, p.type, p.gpid, p.from_node, p.to_node, p.reason)
"""
from .balancer import BalanceResult, balance, check, score
from .config import BUG_QUIRKS, QUIRKS, PegasusConfig, parse_quirks
from .cure import CurePass, CureResult, cure, cure_pass
from .flip_map import flip_map_order
from .health import HealthSummary, partition_health, table_health
from .model import DEFAULT_DISK, DroppedReplica, Gpid, HostPort, Node, Partition, Snapshot, Table
from .node_order import NodeMap, hash_bytes, hp_hash, iteration_order
from .parse import (MAX_BYTES, build_snapshot, load_snapshot, parse_snapshot, parse_snapshot_json,
                    parse_snapshot_text, snapshot_to_json)
from .plan import Plan, Round, run_plan, skews
from .proposals import BALANCE_TYPES, CURE_TYPES, OperationCount, Proposal
from .state import ClusterState

__all__ = [
    "BalanceResult", "balance", "check", "score",
    "BUG_QUIRKS", "QUIRKS", "PegasusConfig", "parse_quirks",
    "CurePass", "CureResult", "cure", "cure_pass",
    "flip_map_order",
    "HealthSummary", "partition_health", "table_health",
    "DEFAULT_DISK", "DroppedReplica", "Gpid", "HostPort", "Node", "Partition", "Snapshot", "Table",
    "NodeMap", "hash_bytes", "hp_hash", "iteration_order",
    "MAX_BYTES", "build_snapshot", "load_snapshot", "parse_snapshot", "parse_snapshot_json",
    "parse_snapshot_text", "snapshot_to_json",
    "Plan", "Round", "run_plan", "skews",
    "BALANCE_TYPES", "CURE_TYPES", "OperationCount", "Proposal",
    "ClusterState",
]
