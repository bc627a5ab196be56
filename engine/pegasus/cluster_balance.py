"""Cluster-level balance (``cluster_balance_policy``, ``balance_cluster=true``), reference §5.

A round: (1) per-table role swaps only, one table per round; if none, (2) move secondaries so that
every table and the per-node secondary totals are balanced; if none, (3) the same for primaries.
Stages (2) and (3) produce at most ``balance_op_count_per_round`` proposals.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .app_balance import BalanceRun, execute_balance, primary_balance
from .flip_map import flip_map_order
from .proposals import COPY_PRI, COPY_SEC, Proposal, balancer_actions

__all__ = [
    "ClusterMigrationInfo",
    "get_skew",
    "get_cluster_migration_info",
    "get_next_move",
    "apply_move",
    "cluster_replica_balance",
    "cluster_policy_balance",
    "Move",
]

_UINT32 = 1 << 32
PRIMARY, SECONDARY = "PRIMARY", "SECONDARY"


def get_skew(counts: dict) -> int:
    """``max - min`` of the values as ``uint32``; an empty map gives 1 (``0 - UINT32_MAX``).

    Examples
    --------
    >>> get_skew({"a": 3, "b": 1}), get_skew({})
    (2, 1)
    """
    if not counts:
        return (0 - 0xFFFFFFFF) % _UINT32
    vals = counts.values()
    return (max(vals) - min(vals)) % _UINT32


def _min_max_sets(counts: dict):
    lo, hi = min(counts.values()), max(counts.values())
    return (sorted(k for k, v in counts.items() if v == lo),
            sorted(k for k, v in counts.items() if v == hi))


class PartitionMaps:
    """``app_migration_info.partitions`` (pidx -> {node: PRIMARY/SECONDARY}), built lazily:
    a partition's map is read from the configuration until a move changes it."""

    __slots__ = ("pcs", "changed")

    def __init__(self, pcs):
        self.pcs = pcs
        self.changed: dict = {}

    def __len__(self) -> int:
        return len(self.pcs)

    def __getitem__(self, pidx: int) -> dict:
        m = self.changed.get(pidx)
        if m is None:
            pc = self.pcs[pidx]
            m = {pc.primary: PRIMARY}
            for s in pc.secondaries:
                m[s] = SECONDARY
            self.changed[pidx] = m
        return m

    def status(self, pidx: int, node):
        m = self.changed.get(pidx)
        if m is not None:
            return m.get(node)
        pc = self.pcs[pidx]
        if node == pc.primary:
            return PRIMARY
        return SECONDARY if node in pc.secondaries else None


@dataclass
class AppMigrationInfo:
    partitions: PartitionMaps             # pidx -> {node: PRIMARY/SECONDARY}
    replicas_count: dict                  # node -> count of the stage's role


@dataclass
class NodeMigrationInfo:
    partitions: dict                      # disk tag -> set of gpids
    future_partitions: set = field(default_factory=set)


@dataclass
class ClusterMigrationInfo:
    """``cluster_migration_info``: the stage's simulated state."""

    type: str
    apps_skew: dict
    apps_info: dict
    nodes_info: dict
    replicas_count: dict
    true_skew_at_start: dict


@dataclass
class Move:
    gpid: object
    source: object
    source_disk: str
    target: object
    type: str
    why: dict


def _count(ns, btype: str, app_id=None) -> int:
    if btype == COPY_SEC:
        return ns.partition_count(app_id) - ns.primary_count(app_id)
    return ns.primary_count(app_id)


def get_cluster_migration_info(run: BalanceRun, btype: str):
    """``get_cluster_migration_info``; ``None`` = no cluster balancing this stage.

    Notes
    -----
    Quirk Q1 (emulated unless ``fixed_quirks`` has ``Q1``): every table's recorded skew starts
    at 1. Quirk Q6 (emulated): per-node totals count every table, eligible or not.
    """
    state, cfg = run.state, run.config
    nodes = run.vec[1:-1]
    if len(nodes) < 3:
        return None
    apps = [a for a in state.apps.values()
            if a.eligible and a.app_id not in cfg.ignored_app_list]
    apps_info, apps_skew, true_skew = {}, {}, {}
    for app in apps:
        want = app.max_replica_count - 1
        if any(len(pc.secondaries) != want for pc in app.pcs):
            return None
        parts = PartitionMaps(app.pcs)
        rc = {hp: _count(state.nodes[hp], btype, app.app_id) for hp in nodes}
        apps_info[app.app_id] = AppMigrationInfo(parts, rc)
        true_skew[app.app_id] = get_skew(rc)
        apps_skew[app.app_id] = get_skew({}) if cfg.quirk("Q1") else true_skew[app.app_id]
    eligible = set(apps_info)
    nodes_info = {}
    all_eligible = len(eligible) == len(state.apps)
    for hp in nodes:
        disks = {}
        for tag, gpids in sorted(state.disk_index[hp].items()):
            sel = set(gpids) if all_eligible else {g for g in gpids if g.app_id in eligible}
            if sel:
                disks[tag] = sel
        nodes_info[hp] = NodeMigrationInfo(disks)
    replicas_count = {hp: _count(state.nodes[hp], btype) for hp in nodes}
    return ClusterMigrationInfo(btype, apps_skew, apps_info, nodes_info, replicas_count, true_skew)


def _disk_partitions(info: ClusterMigrationInfo, node, app_id: int) -> dict:
    status = SECONDARY if info.type == COPY_SEC else PRIMARY
    parts = info.apps_info[app_id].partitions
    out = {}
    for tag, gpids in info.nodes_info[node].partitions.items():
        sel = sorted(g for g in gpids if g.app_id == app_id and parts.status(g.pidx, node) == status)
        if sel:
            out[tag] = sel
    return out


def _pick_up_move(run, info, max_nodes, min_nodes, app_id, selected):
    entries = []
    for node in max_nodes:
        for tag, gpids in _disk_partitions(info, node, app_id).items():
            entries.append((node, tag, gpids))
    if not entries:                                     # C++: undefined (Q9) -> no move
        return None
    top = max(len(e[2]) for e in entries)
    best = sorted((e for e in entries if len(e[2]) == top), key=lambda e: (e[0], e[1]))
    index = run.chooser(len(best))                      # std::rand() % n  (Q3)
    if not 0 <= index < len(best):
        raise AssertionError("disk chooser returned an index out of range")
    src, tag, gpids = best[index]
    for target in min_nodes:
        for g in gpids:
            if g.app_id not in info.apps_info or g in selected:
                continue
            if info.apps_info[g.app_id].partitions.status(g.pidx, target) is None:
                return Move(g, src, tag, target, info.type,
                            {"disk_choices": len(best), "disk_index": index,
                             "disk_load": len(gpids)})
    return None


def get_next_move(run: BalanceRun, info: ClusterMigrationInfo, selected: set):
    """``get_next_move``: the next move of the stage, or ``None`` (stop)."""
    order = flip_map_order(sorted(info.apps_skew.items()))
    if not order:                                       # no eligible table: C++ UB (Q9)
        return None
    max_app_skew = order[-1][0]
    if max_app_skew == 0:
        return None
    server_skew = get_skew(info.replicas_count)
    if max_app_skew <= 1 and server_skew <= 1:
        return None
    cmin, cmax = _min_max_sets(info.replicas_count)
    for skew, app_id in order:
        if skew != max_app_skew:
            continue
        amap = info.apps_info[app_id].replicas_count
        amin, amax = _min_max_sets(amap)
        imin = [x for x in amin if x in set(cmin)]
        imax = [x for x in amax if x in set(cmax)]
        if max(amap.values()) <= min(amap.values()) + 1 and (not imin or not imax):
            continue
        move = _pick_up_move(run, info, imax or amax, imin or amin, app_id, selected)
        if move is not None:
            move.why.update({
                "app_skew": skew, "server_skew": server_skew,
                "app_from": amap[move.source], "app_to": amap[move.target],
                "cluster_from": info.replicas_count[move.source],
                "cluster_to": info.replicas_count[move.target],
                "cluster_max": max(info.replicas_count.values()),
                "cluster_min": min(info.replicas_count.values()),
                "source_is_cluster_max": bool(imax), "target_is_cluster_min": bool(imin),
            })
            return move
    return None


def apply_move(run: BalanceRun, info: ClusterMigrationInfo, move: Move, selected: set) -> bool:
    """``apply_move``: update the stage's simulated counts and add the proposal.

    Notes
    -----
    Quirk Q7 (emulated unless ``fixed_quirks`` has ``Q7``): the moved-in replica is not added to
    the target's disk sets. With the fix it is filed under the disk the replica server would pick
    (fewest replicas of the table, then in total).
    """
    g, src, dst = move.gpid, move.source, move.target
    ainfo = info.apps_info.get(g.app_id)
    status = SECONDARY if move.type == COPY_SEC else PRIMARY
    if ainfo is None or g.app_id not in info.apps_skew:
        return False
    if src not in info.replicas_count or dst not in info.replicas_count:
        return False
    if src not in ainfo.replicas_count or dst not in ainfo.replicas_count:
        return False
    if g.pidx >= len(ainfo.partitions) or ainfo.partitions.status(g.pidx, src) != status:
        return False
    if src not in info.nodes_info or dst not in info.nodes_info:
        return False
    if move.source_disk not in info.nodes_info[src].partitions:
        return False
    app = run.state.apps[g.app_id]
    skew_before = info.apps_skew[g.app_id]
    pmap = ainfo.partitions[g.pidx]
    primary_hp = next((hp for hp, st in pmap.items() if st == PRIMARY), None)
    ainfo.replicas_count[src] -= 1
    ainfo.replicas_count[dst] += 1
    del pmap[src]
    pmap[dst] = status
    info.nodes_info[src].partitions[move.source_disk].discard(g)
    info.nodes_info[dst].future_partitions.add(g)
    if not run.config.quirk("Q7"):
        tag = run.state._choose_disk(dst, g.app_id)
        info.nodes_info[dst].partitions.setdefault(tag, set()).add(g)
    what = "secondaries" if move.type == COPY_SEC else "primaries"
    w = move.why
    recorded = "recorded " if run.config.quirk("Q1") else ""
    reason = (f"cluster {what}: table {app.app_name} has the largest {recorded}skew "
              f"{skew_before} ({src} {w['app_from']}, {dst} {w['app_to']} {what} of the table); "
              f"cluster {what} per node: max {w['cluster_max']}, min {w['cluster_min']} "
              f"(skew {w['server_skew']}; {src} {w['cluster_from']}, {dst} {w['cluster_to']}); "
              f"move {g} from disk {move.source_disk} of {src} ({w['disk_load']} {what} of the "
              f"table, disk {w['disk_index'] + 1} of {w['disk_choices']} equally loaded) to {dst}")
    pri = primary_hp if move.type == COPY_SEC else src
    run.add(Proposal(move.type, g, app.app_name, src, dst,
                     balancer_actions(move.type, pri, src, dst),
                     "cluster_secondary" if move.type == COPY_SEC else "cluster_primary",
                     reason, dict(w, recorded_skew=skew_before)))
    selected.add(g)
    info.apps_skew[g.app_id] = get_skew(ainfo.replicas_count)
    info.replicas_count[src] -= 1
    info.replicas_count[dst] += 1
    return True


def cluster_replica_balance(run: BalanceRun, btype: str) -> bool:
    """One stage; ``True`` = nothing to do here, go on with the next stage."""
    info = get_cluster_migration_info(run, btype)
    if info is None:
        return False
    selected: set = set()
    while True:
        move = get_next_move(run, info, selected)
        if move is None:
            break
        if not apply_move(run, info, move, selected):
            break
        if len(run.migration) >= run.config.balance_op_count_per_round:
            break
    return len(run.migration) == 0


def cluster_policy_balance(run: BalanceRun) -> None:
    """``cluster_balance_policy::balance`` (non-checker only).

    Notes
    -----
    Config keys: ``balance_cluster``, ``balance_op_count_per_round``, ``ignored_app_list``.
    Quirks: Q1, Q2 (flip_map order), Q3 (disk choice, injectable), Q6, Q7, Q8 (secondaries and
    primaries balanced separately: total replicas may end with skew 2), Q9 (treated as no move).
    """
    if not execute_balance(run, False, True, True, primary_balance):
        return
    if not cluster_replica_balance(run, COPY_SEC):
        return
    cluster_replica_balance(run, COPY_PRI)
