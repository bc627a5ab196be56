"""Per-table balance (``app_balance_policy``, the default with ``balance_cluster=false``).

For every table (ascending app id): the primary stage (role swaps along one augmenting path, or
``copy_primary`` when no path exists), and — in a round where no table needed primary work — the
secondary stage (``copy_secondary``). Reference §4.
"""
from __future__ import annotations

from .disks import calc_disk_load
from .ford_fulkerson import build_primary_graph
from .proposals import COPY_PRI, COPY_SEC, MOVE_PRI, Proposal, balancer_actions

__all__ = [
    "BalanceRun",
    "execute_balance",
    "primary_balance",
    "move_primary",
    "copy_primary",
    "copy_secondary",
    "app_policy_balance",
]


class BalanceRun:
    """One balancer call: node numbering (``init``), the migration list, options.

    Attributes
    ----------
    state : ClusterState
    config : PegasusConfig
    chooser : DiskChooser
        Random disk choice of the cluster policy.
    n : int
        ``_alive_nodes`` = number of nodes in the node map.
    ids : dict HostPort -> int
        Node ids ``1..N`` in node-map iteration order (Appendix A).
    vec : list
        ``vec[id] -> HostPort``.
    migration : dict Gpid -> Proposal
        The migration list, in the order proposals were made.
    """

    def __init__(self, state, config, chooser):
        self.state = state
        self.config = config
        self.chooser = chooser
        nodes = state.map_nodes()
        self.n = len(nodes)
        self.vec = [None] + nodes + [None]
        self.ids = {hp: i for i, hp in enumerate(nodes, start=1)}
        for hp in nodes:
            if not state.nodes[hp].alive:
                raise AssertionError(f"balancer called with dead node {hp} in the node map")
        self.migration: dict = {}

    def add(self, proposal: Proposal) -> None:
        if proposal.gpid in self.migration:
            raise AssertionError(f"duplicate proposal for {proposal.gpid}")
        self.migration[proposal.gpid] = proposal

    def proposals(self) -> list:
        """The migration list in ``std::map<gpid, ...>`` order, ``seq`` = production order."""
        made = list(self.migration.values())
        return sorted((p.numbered(0, i + 1) for i, p in enumerate(made)), key=lambda p: p.gpid)


def execute_balance(run: BalanceRun, checker: bool, in_turn: bool, only_move_primary: bool, op) -> bool:
    """Apply ``op`` to every balanced-at-all table; ``False`` = stop (info missing / in turn)."""
    cfg = run.config
    for app in run.state.apps.values():
        if app.app_id in cfg.ignored_app_list or not app.eligible:
            continue
        if not op(run, app, only_move_primary):
            return False
        if not checker and run.migration and in_turn:
            return False
    return True


def primary_balance(run: BalanceRun, app, only_move_primary: bool) -> bool:
    """Primary stage of one table: one role-swap path, else ``copy_primary``.

    Returns ``False`` only when replica info (disk tags) is missing.

    Notes
    -----
    Honours ``only_move_primary`` (never copy). Balanced when every node has
    ``P // N <= primaries <= ceil(P / N)``.
    """
    if run.n < run.config.min_live_node_count_for_unfreeze:
        raise AssertionError("primary_balance with fewer nodes than min_live_node_count_for_unfreeze")
    graph = build_primary_graph(run.state, app, run.ids, run.vec)
    if graph is None:
        return True
    path = graph.find_shortest_path()
    if path is not None:
        return move_primary(run, app, graph, path)
    if only_move_primary:
        return True
    return copy_primary(run, app, graph.have_lower_than_average)


def _disk(state, node, gpid):
    return state.apps[gpid.app_id].pcs[gpid.pidx].serving.get(node)


def move_primary(run: BalanceRun, app, graph, path) -> bool:
    """Turn an augmenting path into ``k = flow`` role swaps on every edge (sink end first).

    Among the candidate partitions of an edge ``frm -> to`` (primary on ``frm``, secondary on
    ``to``, gpid order) the one maximising ``primaries on frm's disk - primaries on to's disk``
    is taken first (ties: smallest gpid).
    """
    state = run.state
    app_id = app.app_id
    vec = run.vec
    k = path.flow
    chain = path.vertices                    # first real node ... last real node
    counts = [state.nodes[vec[v]].primary_count(app_id) for v in chain]
    path_txt = " -> ".join(
        f"{vec[v]}({c})" if i in (0, len(chain) - 1) else str(vec[v])
        for i, (v, c) in enumerate(zip(chain, counts)))
    prev = path.prev
    cur = prev[graph.n + 1]
    cur_load = calc_disk_load(state, app_id, vec[cur], True)
    if cur_load is None:
        return False
    while prev[cur] != 0:
        frm, to = vec[prev[cur]], vec[cur]
        prev_load = calc_disk_load(state, app_id, frm, True)
        if prev_load is None:
            return False
        candidates = [g for g in state.nodes[frm].sorted_primaries(app_id)
                      if to in app.pcs[g.pidx].secondaries]
        if k > len(candidates):
            raise AssertionError("path flow exceeds the role-swap candidates")
        for _ in range(k):
            best_i, best_v = -1, None
            for i, g in enumerate(candidates):
                v = prev_load.get(_disk(state, frm, g), 0) - cur_load.get(_disk(state, to, g), 0)
                if best_v is None or v > best_v:
                    best_i, best_v = i, v
            g = candidates.pop(best_i)
            dfrm, dto = _disk(state, frm, g), _disk(state, to, g)
            lf, lt = prev_load.get(dfrm, 0), cur_load.get(dto, 0)
            reason = (f"table {app.app_name}: primaries per node should be within "
                      f"[{graph.low}, {graph.high}] ({app.partition_count} partitions / {graph.n} "
                      f"nodes); augmenting path {path_txt} carries {k} role swap(s) per edge; "
                      f"{frm} is primary of {g} and {to} holds a secondary "
                      f"(disk {dfrm} has {lf} primaries on {frm}, disk {dto} has {lt} on {to})")
            run.add(Proposal(MOVE_PRI, g, app.app_name, frm, to,
                             balancer_actions(MOVE_PRI, frm, frm, to), "primary", reason,
                             {"low": graph.low, "high": graph.high, "flow": k,
                              "path": [str(vec[v]) for v in chain],
                              "path_primaries": [counts[0], counts[-1]],
                              "from_disk_load": lf, "to_disk_load": lt}))
            prev_load[dfrm] = lf - 1
            cur_load[dto] = lt + 1
        cur = prev[cur]
        cur_load, prev_load = prev_load, cur_load
    return True


def _copy_replicas(run: BalanceRun, app, primary: bool, have_lower: bool) -> bool:
    """``copy_replica_operation::start`` for copy_primary (``primary``) or copy_secondary."""
    state = run.state
    app_id = app.app_id
    n, vec = run.n, run.vec
    low = app.partition_count // n
    counts = [0] * (n + 2)
    loads = [None] * (n + 2)
    for i in range(1, n + 1):
        ns = state.nodes[vec[i]]
        counts[i] = ns.primary_count(app_id) if primary else ns.partition_count(app_id)
        loads[i] = calc_disk_load(state, app_id, vec[i], primary)
        if loads[i] is None:
            return False
    active = set(range(1, n + 1))
    btype = COPY_PRI if primary else COPY_SEC
    what = "primaries" if primary else "replicas"
    while active:                                           # empty set: Q9, "no move"
        mn = min(active, key=lambda i: (counts[i], i))
        mx = max(active, key=lambda i: (counts[i], i))
        if mn == mx:                                        # C++ would copy to itself (UB)
            break
        if primary:
            if have_lower and counts[mn] >= low:
                break
            if not have_lower and counts[mx] - counts[mn] <= 1:
                break
        elif counts[mx] <= low or counts[mx] - counts[mn] <= 1:
            break
        src, dst = vec[mx], vec[mn]
        src_ns, dst_ns = state.nodes[src], state.nodes[dst]
        pool = src_ns.sorted_primaries(app_id) if primary else src_ns.sorted_partitions(app_id)
        chosen, best = None, -1
        for g in pool:
            if g in run.migration:
                continue
            if not primary and (src_ns.served_as(g) == "PRIMARY" or dst_ns.served_as(g) != "INACTIVE"):
                continue
            load = loads[mx].get(_disk(state, src, g), 0)
            if load > best:
                chosen, best = g, load
        if chosen is None:
            active.discard(mx)                              # that node cannot give any more
            continue
        if primary:
            rule = (f"{dst} has {counts[mn]} < floor({app.partition_count}/{n}) = {low}"
                    if have_lower else f"max - min = {counts[mx] - counts[mn]} > 1")
            reason = (f"table {app.app_name}: no role-swap path; {src} has {counts[mx]} primaries "
                      f"(most), {dst} has {counts[mn]} (fewest): {rule}; copy primary {chosen} "
                      f"from disk {_disk(state, src, chosen)} ({best} primaries of the table)")
            pri = src
        else:
            reason = (f"table {app.app_name}: {src} hosts {counts[mx]} replicas of the table "
                      f"(most), {dst} hosts {counts[mn]} (fewest), difference "
                      f"{counts[mx] - counts[mn]} > 1; copy secondary {chosen} from disk "
                      f"{_disk(state, src, chosen)} ({best} replicas of the table)")
            pri = app.pcs[chosen.pidx].primary
        run.add(Proposal(btype, chosen, app.app_name, src, dst,
                         balancer_actions(btype, pri, src, dst),
                         "primary" if primary else "secondary", reason,
                         {"from_count": counts[mx], "to_count": counts[mn], "low": low,
                          "disk_load": best, "counting": what,
                          "have_lower_than_average": have_lower if primary else None}))
        counts[mx] -= 1
        counts[mn] += 1
    return True


def copy_primary(run: BalanceRun, app, have_lower_than_average: bool) -> bool:
    """``copy_primary_operation``: copy primaries from the node with most to the one with fewest.

    Notes
    -----
    Stops when the fewest reaches ``floor(P / N)`` if some node was below it (the "N/M" rule),
    otherwise (the corner case) when ``max - min <= 1``. Node order ``(count, id)``: the min is the
    smallest id among ties, the max the largest. Candidates are the real primaries of the max
    node not already in the migration list, on its most primary-loaded disk (loads computed once).
    Quirk Q11 emulated: no membership check on the target. Degenerate cases the C++ code leaves
    undefined (every node removed, min == max) end the copy (Q9).
    """
    return _copy_replicas(run, app, True, have_lower_than_average)


def copy_secondary(run: BalanceRun, app, _only_move_primary: bool = False) -> bool:
    """``copy_secondary_operation``: copy secondaries until ``max - min <= 1`` replicas of the table.

    Notes
    -----
    A candidate is a partition of the max node that it does not lead, not already in the
    migration list and absent from the min node. Quirk Q5 emulated: the extra stop test
    ``max <= partition_count // N`` uses the primaries' floor; it can never fire before
    ``max - min <= 1`` does, so there is no switch for it.
    """
    return _copy_replicas(run, app, False, False)


def app_policy_balance(run: BalanceRun, checker: bool) -> None:
    """``app_balance_policy::balance``: primary stage, then (if idle) the secondary stage.

    Notes
    -----
    Config keys: ``balancer_in_turn`` (non-checker only), ``only_move_primary``,
    ``only_primary_balancer``, ``ignored_app_list``.
    """
    cfg = run.config
    if not execute_balance(run, checker, cfg.balancer_in_turn, cfg.only_move_primary, primary_balance):
        return
    if not checker and run.migration:
        return
    if cfg.only_primary_balancer:
        return
    execute_balance(run, checker, cfg.balancer_in_turn, cfg.only_move_primary, copy_secondary)
