"""Cure (``partition_guardian``): give partitions back their primary and secondaries (§3).

:func:`cure` decides for one partition, :func:`cure_pass` is the cure part of
``check_all_partitions`` (every partition, add-secondary actions sent urgent first with optional
flow control). Proposed-but-unconfirmed replicas are counted in ``newly_partitions`` so that one
pass spreads new primaries and secondaries over the nodes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .health import min_2pc_replica_count
from .proposals import Proposal

__all__ = ["HEALTHY", "ILL", "DEAD", "CureResult", "CurePass", "cure", "cure_pass",
           "less_primaries_key", "less_partitions_key", "confirm_cure_action"]

HEALTHY, ILL, DEAD = "healthy", "ill", "dead"

_ADD = ("ADD_SECONDARY", "ADD_SECONDARY_FOR_LB")


@dataclass
class CureResult:
    """Outcome of :func:`cure` for one partition."""

    status: str
    action: Proposal | None = None
    reason: str = ""
    waiting_until: int | None = None


@dataclass
class CurePass:
    """One cure pass over every partition (``check_all_partitions`` up to the balancer)."""

    sent: list = field(default_factory=list)
    held: list = field(default_factory=list)       # add-secondary actions held by flow control
    healthy: int = 0
    total: int = 0
    waiting: list = field(default_factory=list)    # (gpid, until_ms, reason)
    stuck: list = field(default_factory=list)      # (gpid, reason): ill/dead without an action

    @property
    def all_healthy(self) -> bool:
        return self.healthy == self.total


def less_primaries_key(state, hp, app_id: int) -> tuple:
    """``less_primaries``: (primaries of the app, replicas of the app, primaries, replicas),
    pending cure proposals included."""
    ns, nw = state.nodes[hp], state.newly[hp]
    return (ns.primary_count(app_id) + nw.primaries.get(app_id, 0),
            ns.partition_count(app_id) + nw.partitions.get(app_id, 0),
            ns.primary_count() + nw.total_primaries,
            ns.partition_count() + nw.total_partitions)


def less_partitions_key(state, hp, app_id: int) -> tuple:
    """``less_partitions``: (replicas of the app, replicas), pending cure proposals included."""
    ns, nw = state.nodes[hp], state.newly[hp]
    return (ns.partition_count(app_id) + nw.partitions.get(app_id, 0),
            ns.partition_count() + nw.total_partitions)


def _argmin_first(cands, key):
    best, best_k = None, None
    for c in cands:
        k = key(c)
        if best is None or k < best_k:
            best, best_k = c, k
    return best, best_k


def _cure_proposal(ptype, config_type, pc, app, target, node, reason, details, frm=None):
    return Proposal(ptype, pc.gpid, app.app_name, frm, None if frm else node,
                    ((config_type, target, node),), "cure", reason, details)


def _valid_pending(state, pc, prop: Proposal) -> bool:
    ctype, target, node = prop.actions[0]
    if not state.is_alive(target) or not state.is_alive(node):
        return False
    if ctype == "ASSIGN_PRIMARY":
        return node == target and not pc.primary and node not in pc.secondaries
    if ctype == "UPGRADE_TO_PRIMARY":
        return node == target and not pc.primary and node in pc.secondaries
    if ctype in _ADD:
        return target == pc.primary and node not in pc.secondaries
    if ctype in ("REMOVE", "DOWNGRADE_TO_INACTIVE"):
        return target == pc.primary and pc.is_member(node)
    if ctype == "DOWNGRADE_TO_SECONDARY":
        return node == target and target == pc.primary
    return False


def _undo_newly(state, pc, prop: Proposal) -> None:
    if prop.details.get("from_balancer"):
        return
    ctype, _target, node = prop.actions[0]
    nw = state.newly[node]
    if ctype == "ASSIGN_PRIMARY":
        nw.remove_primary(pc.gpid.app_id, only_primary=False)
    elif ctype == "UPGRADE_TO_PRIMARY":
        nw.remove_primary(pc.gpid.app_id, only_primary=True)
    elif ctype in _ADD:
        nw.remove_partition(pc.gpid.app_id)


def confirm_cure_action(state, prop: Proposal, max_reserved: int = 1) -> None:
    """Execute a sent cure action and ``reconfig``: pop it, undo its pending counters."""
    pc = state.pc(prop.gpid)
    ctype, _target, node = prop.actions[0]
    if pc.lb_actions and pc.lb_actions[0] is prop:
        pc.lb_actions.pop(0)
    if not pc.lb_actions:
        state.pending.discard(pc.gpid)
    _undo_newly(state, pc, prop)
    state.apply_action(prop.gpid, "ADD_SECONDARY" if ctype in _ADD else ctype, node, max_reserved)


def _on_missing_primary(state, config, pc, app) -> CureResult:
    app_id = app.app_id
    if pc.secondaries:
        cands = [s for s in pc.secondaries if state.is_alive(s)]
        if not cands:
            return CureResult(DEAD, reason=f"partition {pc.gpid} of {app.app_name} has no primary "
                                           f"and none of its secondaries is alive")
        node, k = _argmin_first(cands, lambda hp: less_primaries_key(state, hp, app_id))
        state.newly[node].add_primary(app_id, only_primary=True)
        reason = (f"partition {pc.gpid} of {app.app_name} has no primary: upgrade secondary {node} "
                  f"(of {len(cands)} alive) with the fewest (primaries of the table, replicas of "
                  f"the table, primaries, replicas) = {k}, pending proposals included")
        return CureResult(ILL, _cure_proposal("upgrade_pri", "UPGRADE_TO_PRIMARY", pc, app, node,
                                              node, reason, {"key": list(k)}), reason)
    if not pc.last_drops:
        cands = [hp for hp in state.map_nodes() if state.nodes[hp].alive]
        if not cands:
            return CureResult(ILL, reason=f"partition {pc.gpid}: no alive node to assign a primary")
        node, k = _argmin_first(cands, lambda hp: less_primaries_key(state, hp, app_id))
        state.newly[node].add_primary(app_id, only_primary=False)
        reason = (f"partition {pc.gpid} of {app.app_name} has no replica: assign primary to {node}, "
                  f"first of {len(cands)} alive nodes (node-map order) with the fewest (primaries "
                  f"of the table, replicas of the table, primaries, replicas) = {k}, pending "
                  f"proposals included")
        return CureResult(ILL, _cure_proposal("assign_pri", "ASSIGN_PRIMARY", pc, app, node, node,
                                              reason, {"key": list(k)}), reason)
    return _on_ddd(state, config, pc, app)


def _on_ddd(state, config, pc, app) -> CureResult:
    """Every replica dead (``DDD``): recover a primary only when it is safe (§3.3 case C)."""
    g = pc.gpid
    if len(pc.last_drops) == 1:
        node = pc.last_drops[-1]
        chosen, why = node, f"the only last drop {node}"
    else:
        prev_hp, recent_hp = pc.last_drops[-2], pc.last_drops[-1]
        infos = []
        for hp in (prev_hp, recent_hp):
            if not state.is_alive(hp):
                return CureResult(DEAD, reason=f"partition {g} (DDD): last drop {hp} is not alive")
            d = next((x for x in pc.dropped if x.node == hp), None)
            if d is None or d.ballot == -1:
                if not state.nodes[hp].has_collected_replicas:
                    return CureResult(DEAD, reason=f"partition {g} (DDD): no replica info from {hp}")
                infos.append((hp, -1, -1, -1))
            else:
                infos.append((hp, d.ballot, d.last_committed_decree, d.last_prepared_decree))
        (_, b1, c1, p1), (_, b2, c2, p2) = infos
        if b1 == -1 and b2 == -1:
            return CureResult(DEAD, reason=f"partition {g} (DDD): ballots of both last drops unknown")
        gap1, gap2 = b1 - b2, c1 - c2
        if gap1 * gap2 < 0:
            return CureResult(DEAD, reason=f"partition {g} (DDD): larger ballot has the smaller "
                                           f"committed decree")
        larger_cd, larger_pd = max(c1, c2), max(p1, p2)
        if larger_pd < pc.last_committed_decree or larger_pd < larger_cd:
            return CureResult(DEAD, reason=f"partition {g} (DDD): prepared decree {larger_pd} "
                                           f"behind the committed decree")
        if gap1 != 0:
            chosen = prev_hp if gap1 > 0 else recent_hp
            why = f"the larger ballot ({max(b1, b2)})"
        elif gap2 != 0:
            chosen = prev_hp if gap2 > 0 else recent_hp
            why = f"the larger committed decree ({larger_cd})"
        else:
            chosen = prev_hp if p1 > p2 else recent_hp
            why = "the larger prepared decree" if p1 != p2 else "the most recent drop"
    state.newly[chosen].add_primary(app.app_id, only_primary=False)
    reason = f"partition {g} of {app.app_name}: every replica dead (DDD); assign primary to {why}"
    return CureResult(DEAD, _cure_proposal("assign_pri", "ASSIGN_PRIMARY", pc, app, chosen, chosen,
                                           reason, {"ddd": True}), reason)


def _on_missing_secondary(state, config, pc, app) -> CureResult:
    g = pc.gpid
    delay = config.replica_assign_delay_ms_for_dropouts
    black = set(config.assign_secondary_black_list)
    min2pc = min_2pc_replica_count(pc.max_replica_count, config.mutation_2pc_min_replica_count)
    rc = pc.replica_count
    last = pc.dropped[-1] if pc.dropped else None
    if pc.max_replica_count > min2pc and rc < min2pc:
        why = f"only {rc} replica(s) < mutation_2pc_min_replica_count {min2pc}"
    elif last is None:
        why = "no dropped replica to wait for"
    elif last.time_ms + delay < state.now_ms:
        why = (f"dropped replica {last.node} left at {last.time_ms} ms and "
               f"replica_assign_delay_ms_for_dropouts {delay} ms has passed (now {state.now_ms})")
    elif str(last.node) in black:
        why = f"last dropped node {last.node} is black-listed"
    else:
        why = None
    node = None
    how = ""
    if why is not None:                                         # emergency
        if not 0 <= pc.prefered_dropped < len(pc.dropped):
            pc.prefered_dropped = len(pc.dropped) - 1
        while pc.prefered_dropped >= 0:
            cand = pc.dropped[pc.prefered_dropped]
            pc.prefered_dropped -= 1
            if state.is_alive(cand.node):
                node, how = cand.node, f"dropped replica {cand.node} is alive: add it back"
                break
        if node is None or str(node) in black:
            cands = [hp for hp in state.map_nodes() if state.nodes[hp].alive
                     and not pc.is_member(hp) and str(hp) not in black]
            node, k = _argmin_first(cands, lambda hp: less_partitions_key(state, hp, app.app_id))
            if node is not None:
                how = (f"fresh node {node}: first of {len(cands)} candidates (node-map order) with "
                       f"the fewest (replicas of the table, replicas) = {k}, pending included")
    else:
        if state.is_alive(last.node):
            node, how = last.node, f"last dropped replica {last.node} is back: add it"
            why = "within replica_assign_delay_ms_for_dropouts"
        else:
            until = last.time_ms + delay + 1
            return CureResult(ILL, reason=(
                f"partition {g} of {app.app_name} misses a secondary; waiting for {last.node} "
                f"(dropped at {last.time_ms} ms) until replica_assign_delay_ms_for_dropouts "
                f"{delay} ms has passed"), waiting_until=until)
    if node is None:
        return CureResult(ILL, reason=f"partition {g} of {app.app_name}: no node can take a "
                                      f"new secondary")
    state.newly[node].add_partition(app.app_id)
    reason = (f"partition {g} of {app.app_name} has {rc}/{pc.max_replica_count} replicas; "
              f"{why}; {how}")
    prop = _cure_proposal("add_sec", "ADD_SECONDARY", pc, app, pc.primary, node, reason,
                          {"emergency": why is not None, "replica_count": rc})
    return CureResult(ILL, prop, reason)


def _on_redundant_secondary(state, config, pc, app) -> CureResult:
    node, _ = _argmin_first(pc.secondaries, lambda hp: -state.nodes[hp].partition_count())
    total = state.nodes[node].partition_count()
    reason = (f"partition {pc.gpid} of {app.app_name} has {pc.replica_count} replicas > "
              f"max_replica_count {pc.max_replica_count}: remove the secondary on {node}, the "
              f"busiest node ({total} replicas)")
    prop = _cure_proposal("remove_sec", "REMOVE", pc, app, pc.primary, node, reason,
                          {"from_balancer": True, "node_replicas": total}, frm=node)
    return CureResult(ILL, prop, reason)


def cure(state, config, gpid) -> CureResult:
    """``partition_guardian::cure`` for one partition.

    Parameters
    ----------
    state : ClusterState
        Its pending counters (``newly``) and the partition's pending actions are updated.
    config : PegasusConfig
    gpid : Gpid

    Returns
    -------
    CureResult
        ``healthy``, ``ill`` or ``dead``, with the proposal (if any) and a reason.

    Notes
    -----
    Config keys: ``replica_assign_delay_ms_for_dropouts`` (``meta.lb.assign_delay_ms``),
    ``assign_secondary_black_list``, ``mutation_2pc_min_replica_count``. A pending proposal
    (held by flow control) is returned again while still valid; an invalid one is dropped and its
    counters undone. Candidate scans keep the first minimum in node-map order (quirk Q4).
    """
    app = state.apps[gpid.app_id]
    pc = app.pcs[gpid.pidx]
    if pc.lb_actions:
        front = pc.lb_actions[0]
        if _valid_pending(state, pc, front):
            return CureResult(ILL, front, front.reason)
        for prop in pc.lb_actions:
            _undo_newly(state, pc, prop)
        pc.lb_actions.clear()
        state.pending.discard(gpid)
    if not pc.primary:
        res = _on_missing_primary(state, config, pc, app)
    elif len(pc.secondaries) + 1 < pc.max_replica_count:
        res = _on_missing_secondary(state, config, pc, app)
    elif len(pc.secondaries) >= pc.max_replica_count:
        res = _on_redundant_secondary(state, config, pc, app)
    else:
        return CureResult(HEALTHY)
    if res.action is not None:
        pc.lb_actions.append(res.action)
        state.pending.add(gpid)
    return res


def cure_pass(state, config) -> CurePass:
    """The cure part of ``check_all_partitions``: every partition, then send add-secondaries.

    Tables are scanned by name (``exist_apps``), partitions by index; partitions with an invalid
    ballot (-1) are skipped (and not healthy). Add-secondary proposals go out urgent first (the
    partition has no secondary), then the rest; with ``add_secondary_enable_flow_control`` a node
    receives at most ``add_secondary_max_count_for_one_node`` per pass, the others stay pending.
    """
    out = CurePass()
    adds = []
    todo: dict = {}
    for g in state.unhealthy | state.pending:            # every other partition is healthy
        todo.setdefault(g.app_id, []).append(g)
    for app in sorted(state.apps.values(), key=lambda a: a.app_name):
        if app.status in ("AS_CREATING", "AS_DROPPING", "AS_DROPPED"):
            continue
        look = sorted(todo.get(app.app_id, ()))
        out.healthy += app.partition_count - len(look)
        for g in look:
            pc = app.pcs[g.pidx]
            if pc.ballot == -1:
                out.stuck.append((pc.gpid, "invalid ballot (-1)"))
                continue
            if (pc.primary and not pc.lb_actions
                    and len(pc.secondaries) + 1 == pc.max_replica_count):
                out.healthy += 1                      # what cure() would say, without the call
                continue
            res = cure(state, config, pc.gpid)
            if res.status == HEALTHY:
                out.healthy += 1
                continue
            if res.action is None:
                if res.waiting_until is not None:
                    out.waiting.append((pc.gpid, res.waiting_until, res.reason))
                else:
                    out.stuck.append((pc.gpid, res.reason))
            elif res.action.actions[0][0] in _ADD:
                adds.append(res.action)
            else:
                out.sent.append(res.action)
        out.total += app.partition_count
    running: dict = {}
    done = set()
    for urgent in (True, False):
        for i, prop in enumerate(adds):
            if i in done:
                continue
            pc = state.pc(prop.gpid)
            if urgent and pc.secondaries:
                continue
            node = prop.actions[0][2]
            if (config.add_secondary_enable_flow_control
                    and running.get(node, 0) >= config.add_secondary_max_count_for_one_node):
                continue
            out.sent.append(prop)
            done.add(i)
            running[node] = running.get(node, 0) + 1
    out.held = [p for i, p in enumerate(adds) if i not in done]
    return out
