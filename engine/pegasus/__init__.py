"""Apache Pegasus meta-server replica balancing: cure, per-table and cluster balance.

Pure Python (stdlib, numpy, pandas). Follows ``pegasus-balancing.md`` decision by decision,
quirks included (see :data:`engine.pegasus.config.QUIRKS`); the quirks that are plain bugs can be
switched off with ``PegasusConfig(fixed_quirks=...)``.

Departures from the reference (each also noted where it happens):

* C++ undefined behaviour (Q9) is "no move": no eligible table, no candidate disk, every node
  removed from a copy ordering, or min == max in a copy ordering (the C++ code would copy a
  replica to its own node). A max node without real candidates leaves the copy ordering.
* The plan runner applies each round's proposals as a whole before the next round (the meta
  server executes them action by action and waits for them); replicas on dead nodes are
  downgraded to inactive in one ``meta`` round (a simplification of ``on_change_node_state``);
  the clock advances ``lb_interval_ms`` per round and jumps to the end of an
  ``assign_delay_ms`` wait; ``hp_last_drops`` / ``dropped`` bookkeeping is the minimal one.
* A new replica's disk is chosen like the replica server's ``fs_manager`` (fewest replicas of
  the table, then fewest in total, then first): not part of the meta server, not in the reference.
* The node map order assumes a meta server that started on this state (``initialize_node_state``)
  unless the JSON gives ``node_map_order``; more than 2357 nodes are refused (growth not verified).
* Switchable bug quirks (``fixed_quirks``): Q1 (true table skews at stage start), Q7 (moved-in
  replicas filed under the target's disk), Q13 (the cluster-mode checker counts one cluster round,
  always-first disk). Q5 has no observable effect, so it has no switch.
* Add-secondary flow control counts per pass from zero.

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
