"""The path search against a literal transcription of the reference pseudo-code (§4.4.2)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.pegasus.ford_fulkerson import INT_MAX, PrimaryGraph, find_shortest_path


def reference_search(cap, n):
    """§4.4.2 as written: widest-path Dijkstra, single pass, ties to the smallest index."""
    size, sink = n + 2, n + 1
    flow, prev, visit = [0] * size, [-1] * size, [False] * size
    flow[0] = INT_MAX
    while not visit[sink]:
        u, best = -1, 0
        for v in range(size):
            if not visit[v] and flow[v] > best:
                u, best = v, flow[v]
        if u == -1:
            break
        visit[u] = True
        for v in range(size):
            if not visit[v]:
                m = min(flow[u], cap[u][v])
                if m > flow[v]:
                    flow[v], prev[v] = m, u
    if visit[sink] and flow[sink] != 0:
        return flow[sink], prev
    return None


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 9))
    size = n + 2
    cap = [[0] * size for _ in range(size)]
    for u in range(size - 1):
        for v in range(1, size):
            if u != v and draw(st.integers(0, 3)) == 0:
                cap[u][v] = draw(st.integers(0, 4))
    for v in range(size):
        cap[v][0] = 0                      # nothing flows back into the source
    return n, cap


@settings(max_examples=300, deadline=None, derandomize=True)
@given(graphs())
def test_ff001_same_path_as_the_reference(g):
    n, cap = g
    ref = reference_search(cap, n)
    got = find_shortest_path(PrimaryGraph(n, 0, 0, 0, 0, cap))
    if ref is None:
        assert got is None
    else:
        flow, prev = ref
        assert got is not None and got.flow == flow
        assert got.prev[n + 1] == prev[n + 1]
        chain, cur = [], prev[n + 1]
        while cur != 0:
            chain.append(cur)
            cur = prev[cur]
        assert got.vertices == chain[::-1]


def test_ff002_ties_go_to_the_smallest_id_and_the_first_writer():
    # source -> 1 and 2 with equal capacity; both reach the sink (3) with 1: vertex 1 is expanded
    # first and writes the sink's predecessor; vertex 2 cannot overwrite it (not strictly larger)
    cap = [[0, 2, 2, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]]
    path = find_shortest_path(PrimaryGraph(2, 0, 0, 0, 0, cap))
    assert path.vertices == [1] and path.flow == 1
