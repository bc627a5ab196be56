"""The plan runner: the meta server's loop, round after round, until nothing is proposed.

One round is one ``check_all_partitions`` that produced something: dead replicas downgraded, cure
proposals, or one balancer migration list. Each round's proposals are applied (as if every action
had completed) before the next round starts, which is what the real meta server waits for (a
partition with pending actions is not healthy, so the next balance round only starts when the
previous one is done). The result is the full plan, a snapshot of the per-node counts after every
round, and the final per-node primary / secondary / total counts per table and for the cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .balancer import balance, check
from .config import FUNCTION_LEVELS, PegasusConfig
from .cure import confirm_cure_action, cure_pass
from .disks import make_disk_chooser
from .health import table_health
from .model import Snapshot
from .proposals import DELTAS, OperationCount, Proposal, count_operations
from .state import ClusterState

__all__ = ["Round", "Plan", "run_plan", "effective_level", "counts_json", "skews"]


@dataclass(frozen=True)
class Round:
    """One round of the plan.

    Attributes
    ----------
    number : int
        1-based.
    kind : str
        ``meta`` (dead replicas downgraded), ``cure``, ``wait`` (cure waits for
        ``replica_assign_delay_ms_for_dropouts``) or ``balance``.
    stage : str
        What produced it (``primary``, ``secondary``, ``cluster_secondary``, ...).
    proposals : tuple of Proposal
        Numbered with this round (migration-list order: gpid).
    operation_count : OperationCount
        ``balance_operation_count`` reported after this round (``report(list)``).
    now_ms : int
        Simulated clock when the round was decided.
    counts : dict
        ``{app_id: {HostPort: (primaries, secondaries)}}`` after the round (kept as a compact
        array: apps x nodes x 2).
    note : str
    """

    number: int
    kind: str
    stage: str
    proposals: tuple
    operation_count: OperationCount
    now_ms: int
    counts_array: np.ndarray = field(repr=False, compare=False)
    index: tuple = field(repr=False, compare=False)        # (app ids, nodes)
    note: str = ""

    @property
    def counts(self) -> dict:
        apps, nodes = self.index
        arr = self.counts_array
        return {a: {hp: (int(arr[i, j, 0]), int(arr[i, j, 1])) for j, hp in enumerate(nodes)}
                for i, a in enumerate(apps)}


def effective_level(state: ClusterState, cfg: PegasusConfig) -> tuple:
    """(level value, reason): ``meta_function_level`` with the freeze protection applied."""
    level = cfg.level
    alive, dead = state.alive_count()
    if level > FUNCTION_LEVELS["freezed"]:
        if alive < cfg.min_live_node_count_for_unfreeze:
            return FUNCTION_LEVELS["freezed"], (
                f"freezed: {alive} alive node(s) < min_live_node_count_for_unfreeze "
                f"{cfg.min_live_node_count_for_unfreeze}")
        if alive * 100 < cfg.node_live_percentage_threshold_for_update * (alive + dead):
            return FUNCTION_LEVELS["freezed"], (
                f"freezed: {alive} of {alive + dead} nodes alive < "
                f"node_live_percentage_threshold_for_update {cfg.node_live_percentage_threshold_for_update}%")
    return level, cfg.meta_function_level


def skews(counts: dict, nodes=None) -> dict:
    """Per table and cluster skews (max - min over ``nodes``, default all) of primaries,
    secondaries and totals."""
    out = {"tables": {}, "cluster": {}}
    cluster: dict = {}
    for app_id, per_node in counts.items():
        if nodes is not None:
            per_node = {hp: v for hp, v in per_node.items() if hp in nodes}
        p = [v[0] for v in per_node.values()]
        s = [v[1] for v in per_node.values()]
        t = [a + b for a, b in per_node.values()]
        out["tables"][app_id] = {"primary": _skew(p), "secondary": _skew(s), "total": _skew(t)}
        for hp, (a, b) in per_node.items():
            c = cluster.setdefault(hp, [0, 0])
            c[0] += a
            c[1] += b
    vals = list(cluster.values())
    out["cluster"] = {"primary": _skew([v[0] for v in vals]), "secondary": _skew([v[1] for v in vals]),
                      "total": _skew([v[0] + v[1] for v in vals])}
    return out


def _skew(values) -> int:
    return (max(values) - min(values)) if values else 0


def _drop_dead(state: ClusterState, cfg: PegasusConfig) -> list:
    """Downgrade replicas on dead nodes to inactive (what the meta server does when a node dies)."""
    out = []
    if not any(not ns.alive and ns.partition_count() for ns in state.nodes.values()):
        return out
    for app in state.apps.values():
        for pc in app.pcs:
            victims = [(pc.primary, "drop_pri")] if pc.primary and not state.is_alive(pc.primary) else []
            victims += [(s, "drop_sec") for s in pc.secondaries if not state.is_alive(s)]
            for node, ptype in victims:
                role = "primary" if ptype == "drop_pri" else "secondary"
                reason = (f"{node} is dead (UNALIVE): the meta server downgrades its {role} of "
                          f"{pc.gpid} ({app.app_name}) to inactive; it becomes a dropped replica")
                out.append(Proposal(ptype, pc.gpid, app.app_name, node, None,
                                    (("DOWNGRADE_TO_INACTIVE", pc.primary if role == "secondary"
                                      else node, node),), "meta", reason, {"role": role}))
                state.apply_action(pc.gpid, "DOWNGRADE_TO_INACTIVE", node,
                                   cfg.max_reserved_dropped_replicas)
    return out


def _apply_balance(state: ClusterState, prop: Proposal, cfg: PegasusConfig) -> None:
    for ctype, _target, node in prop.actions:
        state.apply_action(prop.gpid, ctype, node, cfg.max_reserved_dropped_replicas)


@dataclass(frozen=True)
class Plan:
    """A full plan: rounds of proposals, counts before / after / per round, and why it stopped.

    Use :meth:`to_json` for the stable JSON shape (documented in :mod:`engine.cli.pegasus`),
    :meth:`counts_at` to walk the plan step by step, :meth:`proposals_frame` for a table.
    """

    snapshot: Snapshot
    config: PegasusConfig
    rounds: tuple
    initial_counts: dict = field(repr=False)
    final_state: Snapshot = field(repr=False)
    stop_reason: str = ""
    operation_count_before: OperationCount | None = None
    operation_count_after: OperationCount | None = None
    node_order: tuple = ()
    disk_choice: str = "first"

    # ------------------------------------------------------------------ access
    @property
    def proposals(self) -> list:
        """Every proposal in plan order (round by round)."""
        return [p for r in self.rounds for p in r.proposals]

    @property
    def balance_proposals(self) -> list:
        return [p for p in self.proposals if p.is_balance]

    @property
    def final_counts(self) -> dict:
        return self.rounds[-1].counts if self.rounds else self.initial_counts

    @property
    def operation_count_plan(self) -> OperationCount:
        """Sum of what the balancer reported after each of its rounds."""
        return count_operations(self.balance_proposals)

    def counts_at(self, step: int) -> dict:
        """Counts after the first ``step`` proposals (0 = before the plan).

        Proposals of a round touch distinct partitions, so applying them one at a time is
        consistent; at the end of a round the result equals that round's snapshot.
        """
        step = max(0, min(int(step), len(self.proposals)))
        counts = {a: {hp: list(v) for hp, v in per.items()} for a, per in self.initial_counts.items()}
        for p in self.proposals[:step]:
            dfrom, dto = DELTAS[p.type]
            per = counts[p.gpid.app_id]
            if dfrom:
                c = per[p.from_node]
                c[0] += dfrom[0]
                c[1] += dfrom[1]
            if dto:
                c = per[p.to_node]
                c[0] += dto[0]
                c[1] += dto[1]
        return {a: {hp: tuple(v) for hp, v in per.items()} for a, per in counts.items()}

    def health(self, which: str = "before") -> list:
        snap = self.snapshot if which == "before" else self.final_state
        flag = self.config.mutation_2pc_min_replica_count
        return [table_health(t.app_name, t.partitions, t.max_replica_count, flag) for t in snap.tables]

    @property
    def alive_nodes(self) -> set:
        """Nodes alive in the snapshot (the ones the balancer spreads replicas over)."""
        return {n.address for n in self.snapshot.nodes if n.alive}

    def skews(self, step: int | None = None) -> dict:
        """:func:`skews` over the alive nodes at ``step`` (default: end of the plan)."""
        counts = self.final_counts if step is None else self.counts_at(step)
        return skews(counts, self.alive_nodes)

    def table_names(self) -> dict:
        return {t.app_id: t.app_name for t in self.snapshot.tables}

    # ------------------------------------------------------------------ tables
    def proposals_frame(self) -> pd.DataFrame:
        """One row per proposal: step, round, type, gpid, table, from, to, stage, reason."""
        rows = [{"step": i + 1, "round": p.round, "type": p.type, "gpid": str(p.gpid),
                 "table": p.table, "from": str(p.from_node) if p.from_node else "",
                 "to": str(p.to_node) if p.to_node else "", "stage": p.stage, "reason": p.reason}
                for i, p in enumerate(self.proposals)]
        cols = ["step", "round", "type", "gpid", "table", "from", "to", "stage", "reason"]
        return pd.DataFrame(rows, columns=cols)

    def counts_frame(self, step: int | None = None) -> pd.DataFrame:
        """Per node and table: primary, secondary, total before and at ``step`` (default: end)."""
        after = self.final_counts if step is None else self.counts_at(step)
        names = self.table_names()
        rows = []
        for app_id, per in self.initial_counts.items():
            for hp in sorted(per):
                b, a = per[hp], after[app_id][hp]
                rows.append({"table": names[app_id], "node": str(hp),
                             "primary_before": b[0], "secondary_before": b[1],
                             "total_before": b[0] + b[1], "primary": a[0], "secondary": a[1],
                             "total": a[0] + a[1]})
        return pd.DataFrame(rows, columns=["table", "node", "primary_before", "secondary_before",
                                           "total_before", "primary", "secondary", "total"])

    def to_json(self) -> dict:
        """The plan as plain JSON data (see :mod:`engine.cli.pegasus` for the contract)."""
        names = self.table_names()
        ids = {hp: i for i, hp in enumerate(self.node_order, start=1)}
        return {
            "format": "shedlab-pegasus-plan/1",
            "source": self.snapshot.source,
            "config": {k: (sorted(v) if isinstance(v, frozenset) else
                           list(v) if isinstance(v, tuple) else v)
                       for k, v in self.config.__dict__.items()},
            "disk_choice": self.disk_choice,
            "nodes": [{"address": str(n.address), "alive": n.alive, "disks": list(n.disks),
                       "id": ids.get(n.address)} for n in self.snapshot.nodes],
            "tables": [{"app_id": t.app_id, "app_name": t.app_name,
                        "partition_count": t.partition_count,
                        "max_replica_count": t.max_replica_count} for t in self.snapshot.tables],
            "rounds": [{"round": r.number, "kind": r.kind, "stage": r.stage, "now_ms": r.now_ms,
                        "note": r.note, "operation_count": r.operation_count.to_json(),
                        "proposals": [p.to_json() for p in r.proposals]} for r in self.rounds],
            "operation_count": {
                "before": self.operation_count_before.to_json() if self.operation_count_before else None,
                "after": self.operation_count_after.to_json() if self.operation_count_after else None,
                "plan": self.operation_count_plan.to_json(),
            },
            "counts": {"before": counts_json(self.initial_counts, names),
                       "after": counts_json(self.final_counts, names)},
            "skew": {"before": _skews_json(self.initial_counts, names, self.alive_nodes),
                     "after": _skews_json(self.final_counts, names, self.alive_nodes)},
            "health": {"before": [h.to_json() for h in self.health("before")],
                       "after": [h.to_json() for h in self.health("after")]},
            "stop_reason": self.stop_reason,
            "warnings": list(self.snapshot.warnings),
        }


def counts_json(counts: dict, names: dict) -> dict:
    """``{"tables": {name: [{node, primary, secondary, total}]}, "cluster": [...]}``."""
    tables, cluster = {}, {}
    for app_id, per in counts.items():
        rows = []
        for hp in sorted(per):
            p, s = per[hp]
            rows.append({"node": str(hp), "primary": p, "secondary": s, "total": p + s})
            c = cluster.setdefault(hp, [0, 0])
            c[0] += p
            c[1] += s
        tables[names.get(app_id, str(app_id))] = rows
    return {"tables": tables,
            "cluster": [{"node": str(hp), "primary": v[0], "secondary": v[1], "total": v[0] + v[1]}
                        for hp, v in sorted(cluster.items())]}


def _skews_json(counts: dict, names: dict, nodes=None) -> dict:
    s = skews(counts, nodes)
    return {"tables": {names.get(a, str(a)): v for a, v in s["tables"].items()},
            "cluster": s["cluster"]}


def _can_run_balancer(state: ClusterState) -> str:
    """The meta server's ``can_run_balancer()``, which ``check_all_partitions`` asks before the
    balancer runs or (``steady``) only counts: a dead node still holding replicas blocks it, a dead
    empty node leaves the node map, a table being created, dropped or recalled makes it wait. Returns
    why the balancer cannot run ("" when it can)."""
    blocked = [hp for hp in state.map_nodes()
               if not state.nodes[hp].alive and state.nodes[hp].partition_count() != 0]
    if blocked:
        return f"dead node {blocked[0]} still holds replicas: balancer blocked"
    for hp in state.map_nodes():
        if not state.nodes[hp].alive:
            state.erase_node(hp)
    if any(a.status in ("AS_CREATING", "AS_DROPPING", "AS_RECALLING") for a in state.apps.values()):
        return "a table is being created, dropped or recalled: balancer waits"
    return ""


def run_plan(snapshot: Snapshot, config: PegasusConfig | None = None, seed=None,
             max_rounds: int | None = None) -> Plan:
    """Run the meta server's loop on ``snapshot`` until nothing more is proposed.

    Parameters
    ----------
    snapshot : Snapshot
    config : PegasusConfig, optional
        Defaults to Pegasus' defaults with ``meta_function_level = lively``.
    seed : None, "first", int or numpy.random.Generator
        The cluster policy's random disk choice (quirk Q3): ``None``/``"first"`` always takes the
        first candidate disk (reproducible); an int seeds a ``numpy.random.Generator``.
    max_rounds : int, optional
        Safety stop (default ``1000 + number of partitions``).

    Returns
    -------
    Plan

    Notes
    -----
    Per round, in the order of ``check_all_partitions``: replicas on dead nodes are downgraded
    (shown as ``drop_pri`` / ``drop_sec``; the meta server does this when it notices a node died,
    a simplification of ``on_change_node_state``); freeze protection
    (``min_live_node_count_for_unfreeze``, ``node_live_percentage_threshold_for_update``) stops
    everything else; cure proposals are applied; while a missing secondary waits for
    ``replica_assign_delay_ms_for_dropouts`` the clock jumps to the end of the wait (a ``wait``
    round); the balancer runs only when every partition is healthy and ``can_run_balancer`` lets it
    (no dead node holds replicas; dead empty nodes leave the node map; no table being created, dropped
    or recalled), and in ``steady`` level only counts, after the same check. The clock advances
    by ``lb_interval_ms`` per round. Every proposal is applied as a whole (all its actions) before
    the next round; new replicas go to the target's disk with the fewest replicas of the table.
    The plan ends at the first balancer round without proposals; with a random disk choice
    (``seed``) a later round could still draw a disk that yields a move in cluster mode (the real
    meta server keeps trying every ``lb_interval_ms``), with the default always-first choice an
    empty round is final.

    Examples
    --------
    >>> from engine.pegasus.parse import parse_snapshot_text
    >>> text = '''[general]
    ... app_name: t
    ... app_id: 1
    ... partition_count: 3
    ... max_replica_count: 3
    ...
    ... [replicas]
    ... pidx ballot replica_count primary secondaries
    ... 0 3 3/3 a:1 [b:1,c:1]
    ... 1 3 3/3 a:1 [b:1,c:1]
    ... 2 3 3/3 a:1 [b:1,c:1]
    ... '''
    >>> plan = run_plan(parse_snapshot_text(text, "x.txt"))
    >>> [(p.type, str(p.gpid), str(p.from_node), str(p.to_node)) for p in plan.proposals]
    [('move_pri', '1.0', 'a:1', 'c:1'), ('move_pri', '1.1', 'a:1', 'b:1')]
    """
    cfg = config or PegasusConfig()
    chooser = make_disk_chooser(seed)
    disk_choice = chooser.name if seed is None or chooser.name == "first" else (
        f"random(seed={seed})" if isinstance(seed, int) else "random")
    state = ClusterState(snapshot)
    initial_counts = state.counts()
    index = (tuple(initial_counts), tuple(state.nodes))
    app_pos = {a: i for i, a in enumerate(index[0])}
    node_pos = {hp: j for j, hp in enumerate(index[1])}
    current = np.array([[initial_counts[a][hp] for hp in index[1]] for a in index[0]],
                       dtype=np.int32).reshape(len(index[0]), len(index[1]), 2)
    limit = max_rounds if max_rounds is not None else 1000 + snapshot.partition_total
    rounds: list = []
    before = after = None
    node_order: tuple = ()
    stop = ""

    def add_round(kind, stage, props, note="", op=None):
        n = len(rounds) + 1
        numbered = tuple(p.numbered(n, p.seq or i + 1) for i, p in enumerate(props))
        for p in numbered:                               # counts follow the proposals' deltas
            dfrom, dto = DELTAS[p.type]
            i = app_pos[p.gpid.app_id]
            if dfrom:
                current[i, node_pos[p.from_node]] += dfrom
            if dto:
                current[i, node_pos[p.to_node]] += dto
        rounds.append(Round(n, kind, stage, numbered, op or OperationCount(), state.now_ms,
                            current.copy(), index, note))

    while True:
        if len(rounds) >= limit:
            stop = f"stopped after {limit} rounds (max_rounds)"
            break
        level, why = effective_level(state, cfg)
        if level < FUNCTION_LEVELS["freezed"]:
            stop = f"meta function level {cfg.meta_function_level}: no cure, no balance"
            break
        dropped = _drop_dead(state, cfg)
        if dropped:
            add_round("meta", "dead nodes", dropped,
                      f"{len(dropped)} replica(s) on dead nodes downgraded to inactive")
            continue
        if level == FUNCTION_LEVELS["freezed"]:
            stop = f"{why}: no cure, no balance"
            break
        cp = cure_pass(state, cfg)
        applied, undeliverable = [], []
        for prop in cp.sent:
            node = prop.actions[0][2]
            if state.is_alive(node):
                confirm_cure_action(state, prop, cfg.max_reserved_dropped_replicas)
                applied.append(prop)
            else:
                undeliverable.append(prop)
        if applied:
            note = f"{len(applied)} cure proposal(s)"
            if cp.held:
                note += f"; {len(cp.held)} add-secondary held by flow control"
            add_round("cure", "cure", applied, note)
            state.now_ms += cfg.lb_interval_ms
            continue
        if not cp.all_healthy:
            if cp.waiting:
                until = min(u for _g, u, _r in cp.waiting)
                gpids = ", ".join(str(g) for g, _u, _r in cp.waiting[:5])
                wait_from = state.now_ms
                state.now_ms = max(until, state.now_ms + cfg.lb_interval_ms)
                add_round("wait", "cure", (), f"cure waits (replica_assign_delay_ms_for_dropouts "
                          f"{cfg.replica_assign_delay_ms_for_dropouts} ms) for a dropped replica of "
                          f"{gpids}: clock {wait_from} -> {state.now_ms} ms")
                continue
            bad = cp.total - cp.healthy
            detail = (cp.stuck[0][1] if cp.stuck else
                      undeliverable[0].reason + " (target not alive)" if undeliverable else "")
            stop = f"{bad} partition(s) not healthy and cure cannot fix them: {detail}"
            break
        stop = _can_run_balancer(state)
        if stop:
            break
        if level == FUNCTION_LEVELS["steady"]:
            before = check(state, cfg)
            stop = (f"steady: every partition healthy; the balancer only counts "
                    f"(balance_operation_count total={before.total})")
            break
        if before is None:
            before = check(state, cfg)
            node_order = tuple(state.map_nodes())
        res = balance(state, cfg, chooser)
        if not res.info_collected:
            stop = "replica info (disk tags) not collected: the balancer reports -1 and waits"
            break
        if not res.proposals:
            after = check(state, cfg)
            stop = "balanced: the balancer has nothing more to propose"
            break
        stages = sorted({p.stage for p in res.proposals})
        for prop in res.proposals:
            _apply_balance(state, prop, cfg)
        add_round("balance", "+".join(stages), res.proposals,
                  f"{len(res.proposals)} balancer proposal(s)", res.operation_count)
        state.now_ms += cfg.lb_interval_ms

    return Plan(snapshot, cfg, tuple(rounds), initial_counts, state.to_snapshot(), stop,
                before, after, node_order, disk_choice)


