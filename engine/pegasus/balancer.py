"""The greedy load balancer: one balancer round, the balance checker and the score (§2.3).

``balance`` is what a ``lively`` meta server runs when every partition is healthy; ``check``
(``balance_operation_count``) is what a ``steady`` one reports instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .app_balance import BalanceRun, app_policy_balance
from .cluster_balance import cluster_policy_balance
from .config import PegasusConfig
from .disks import make_disk_chooser
from .proposals import OperationCount, count_operations

__all__ = ["BalanceResult", "balance", "check", "score", "all_replica_infos_collected"]


@dataclass(frozen=True)
class BalanceResult:
    """One balancer call: the proposals (gpid order) and why it stopped where it did."""

    proposals: tuple
    info_collected: bool
    reason: str

    @property
    def operation_count(self) -> OperationCount:
        if not self.info_collected:
            return OperationCount(total=-1)
        return count_operations(self.proposals)


def all_replica_infos_collected(state) -> bool:
    """Every node reported where its replicas live (a serving entry per hosted partition)."""
    in_map = set(state.map_nodes())
    if any(not state.nodes[hp].has_collected_replicas for hp in in_map):
        return False
    return not any(hp in in_map for _g, hp in state.serving_gaps)


def _run(state, config: PegasusConfig, checker: bool, chooser) -> BalanceResult:
    n = len(state.node_map)
    if n < config.min_live_node_count_for_unfreeze:
        return BalanceResult((), True, f"only {n} node(s) < min_live_node_count_for_unfreeze "
                                       f"{config.min_live_node_count_for_unfreeze}")
    if not all_replica_infos_collected(state):
        return BalanceResult((), False, "replica info (disk tags) not collected from every node")
    run = BalanceRun(state, config, make_disk_chooser(chooser))
    if not config.balance_cluster:
        app_policy_balance(run, checker)
    elif not checker:
        cluster_policy_balance(run)
    elif not config.quirk("Q13"):
        cluster_policy_balance(run)              # fixed Q13: count one cluster round
    props = tuple(run.proposals())
    return BalanceResult(props, True, "proposals" if props else "nothing to balance")


def balance(state, config: PegasusConfig | None = None, chooser=None) -> BalanceResult:
    """One balancer round (``greedy_load_balancer::balance``) on the current state.

    Parameters
    ----------
    state : ClusterState
        Every node in the node map must be alive (``can_run_balancer`` guarantees it).
    config : PegasusConfig, optional
    chooser : DiskChooser, int, numpy Generator or None
        The cluster policy's random disk choice (``None`` = always the first).

    Returns
    -------
    BalanceResult

    Notes
    -----
    ``balance_cluster`` picks the cluster policy. The state is not changed.
    """
    return _run(state, config or PegasusConfig(), False, chooser)


def check(state, config: PegasusConfig | None = None) -> OperationCount:
    """The balance checker's ``balance_operation_count`` (steady mode).

    Runs the per-table policy with ``checker=True``: every table (no in-turn stop) and both stages
    on the same unmodified state, and counts. It predicts the *first* lively round, not the whole
    plan: role swaps are found one path per table and round, and secondaries are counted on the
    state before the primaries move.

    Notes
    -----
    Quirk Q13 (emulated unless fixed): with ``balance_cluster`` the checker reports 0; with the
    fix it counts one cluster-policy round (always-first disk choice). ``total == -1`` when replica
    info is missing.
    """
    return _run(state, config or PegasusConfig(), True, None).operation_count


def score(state) -> tuple:
    """``greedy_load_balancer::score``: (primary stddev, total replica stddev), rounded.

    Over alive nodes hosting something; the sample stddev is used when a dead node still holds
    primaries (resp. replicas); 0 with fewer than two samples.
    """
    def stddev(values, sample):
        k = len(values)
        if k < 2:
            return 0.0
        mean = sum(values) / k
        var = sum((v - mean) ** 2 for v in values) / (k - 1 if sample else k)
        x = math.sqrt(var)
        return int((x + 0.005) * 100) / 100

    alive = [ns for hp, ns in state.nodes.items()
             if ns.alive and ns.partition_count() != 0 and hp in state.node_map]
    dead = [ns for ns in state.nodes.values() if not ns.alive]
    pri = stddev([ns.primary_count() for ns in alive], any(ns.primary_count() for ns in dead))
    tot = stddev([ns.partition_count() for ns in alive], any(ns.partition_count() for ns in dead))
    return pri, tot
