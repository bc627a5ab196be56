"""The primary-balance graph and its single augmenting-path search (``ford_fulkerson``).

Vertices are ``0`` (source), node ids ``1..N`` (node-map order) and ``N+1`` (sink). A node with
more primaries of the table than ``low = P // N`` gets a source edge of its surplus, the others a
sink edge of their deficit; ``cap[i][j]`` counts the partitions whose primary is on ``i`` with a
secondary on ``j`` (role swaps ``i -> j``). The search is a widest-path Dijkstra done once per
table and round (reference §4.4.1-4.4.2).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PrimaryGraph", "AugmentingPath", "build_primary_graph", "find_shortest_path"]

INT_MAX = 2**31 - 1


@dataclass
class AugmentingPath:
    """A source-to-sink path: ``vertices`` from the first real node to the last, ``flow`` swaps."""

    flow: int
    vertices: list
    prev: list


@dataclass
class PrimaryGraph:
    """``ford_fulkerson``'s capacity matrix plus the numbers behind it."""

    n: int
    low: int
    high: int
    higher: int
    lower: int
    cap: list

    @property
    def have_lower_than_average(self) -> bool:
        return self.lower != 0

    def find_shortest_path(self):
        return find_shortest_path(self)


def build_primary_graph(state, app, ids: dict, vec: list):
    """``ford_fulkerson::builder::build`` + ``make_graph``; ``None`` when the table is balanced.

    Parameters
    ----------
    state : ClusterState
    app : AppState
    ids : dict HostPort -> int
        Node ids ``1..N`` in node-map order.
    vec : list
        ``vec[id] -> HostPort`` (index 0 and N+1 unused).

    Notes
    -----
    Balanced = every node has ``low <= primaries <= high`` with ``high = ceil(P / N)``. Corner
    case (``higher > 0 and lower == 0``, quirk Q12 emulated): every vertex with source capacity
    loses one unit, every other vertex gains a unit of sink capacity; the source->sink unit that
    the loop adds at ``v = 0`` is removed again at ``v = N + 1``.
    """
    n = len(vec) - 2
    p_total = app.partition_count
    low = p_total // n
    high = -(-p_total // n)
    higher = lower = 0
    app_id = app.app_id
    counts = [0] * (n + 2)
    nodes = state.nodes
    for i in range(1, n + 1):
        c = len(nodes[vec[i]].primaries.get(app_id, ()))
        counts[i] = c
        if c > high:
            higher += 1
        elif c < low:
            lower += 1
    if higher == 0 and lower == 0:
        return None
    sink = n + 1
    cap = np.zeros((n + 2, n + 2), dtype=np.int64)
    pcs = app.pcs
    rows, cols = [], []
    for i in range(1, n + 1):
        c = counts[i]
        if c > low:
            cap[0, i] = c - low
        else:
            cap[i, sink] = low - c
        for g in state.nodes[vec[i]].primaries.get(app_id, ()):
            for s in pcs[g.pidx].secondaries:
                rows.append(i)
                cols.append(ids[s])
    if rows:
        np.add.at(cap, (np.asarray(rows), np.asarray(cols)), 1)
    if higher > 0 and lower == 0:
        for v in range(0, n + 2):
            if cap[0, v] > 0:
                cap[0, v] -= 1
            else:
                cap[v, sink] += 1
    return PrimaryGraph(n, low, high, higher, lower, cap)


def find_shortest_path(graph: PrimaryGraph):
    """``ford_fulkerson::find_shortest_path``: one widest path, or ``None``.

    The unvisited vertex with the largest flow is expanded next (ties: smallest id); a neighbour's
    flow and predecessor change only on a strictly larger flow (first writer wins ties).
    """
    n = graph.n
    sink = n + 1
    cap = np.asarray(graph.cap, dtype=np.int64)
    size = n + 2
    flow = np.zeros(size, dtype=np.int64)
    prev = np.full(size, -1, dtype=np.int64)
    visit = np.zeros(size, dtype=bool)
    flow[0] = INT_MAX
    while not visit[sink]:
        cand = np.where(visit, 0, flow)
        pos = int(np.argmax(cand))              # first maximum = smallest id on ties
        if cand[pos] <= 0:
            break
        visit[pos] = True
        m = np.minimum(flow[pos], cap[pos])
        better = (~visit) & (m > flow)          # strictly larger: the first writer keeps ties
        flow[better] = m[better]
        prev[better] = pos
    if not visit[sink] or flow[sink] == 0:
        return None
    prev = [int(x) for x in prev]
    vertices = []
    cur = prev[sink]
    while cur != 0:
        vertices.append(cur)
        cur = prev[cur]
    vertices.reverse()
    return AugmentingPath(int(flow[sink]), vertices, prev)
