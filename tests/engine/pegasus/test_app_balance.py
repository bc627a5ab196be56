"""Per-table balance (reference §4): role-swap path, copy primary (N/M rule), copy secondary,
options, the checker's count. Every expected value below is worked out by hand in the comments.
"""
from engine.pegasus.app_balance import BalanceRun, copy_primary
from engine.pegasus.balancer import balance, check
from engine.pegasus.config import PegasusConfig
from engine.pegasus.disks import FirstDisk
from engine.pegasus.ford_fulkerson import build_primary_graph
from engine.pegasus.plan import run_plan

from .helpers import cluster, moves, n, state, table

# PATH_TABLE clusters are built with the insertion order n1, n2, n3, n4 (``order=``; the
# default would be first appearance: n1, n2, n4, n3) -> node-map order (Appendix A) n4, n3, n2, n1 -> ids n4=1 n3=2
# n2=3 n1=4, sink = 5.
PATH_TABLE = ["1>2,4", "1>2,4", "2>3,4", "4>1,2"]


def test_app001_node_ids_follow_the_node_map_order():
    run = BalanceRun(state(cluster([table(1, "t", PATH_TABLE)], 4, order=[1, 2, 3, 4])), PegasusConfig(), FirstDisk())
    assert run.vec[1:-1] == [n(4), n(3), n(2), n(1)]


def test_app002_graph_capacities_of_a_role_swap_path():
    # primaries n1 2, n2 1, n3 0, n4 1; low = high = 1: n1 higher, n3 lower
    st = state(cluster([table(1, "t", PATH_TABLE)], 4, order=[1, 2, 3, 4]))
    run = BalanceRun(st, PegasusConfig(), FirstDisk())
    g = build_primary_graph(st, st.apps[1], run.ids, run.vec)
    assert (g.low, g.high, g.higher, g.lower) == (1, 1, 1, 1)
    cap = g.cap
    n1, n2, n3, n4, sink = 4, 3, 2, 1, 5
    assert cap[0][n1] == 1 and cap[n3][sink] == 1 and cap[n2][sink] == 0 and cap[n4][sink] == 0
    assert cap[n1][n2] == 2 and cap[n1][n4] == 2          # partitions 0 and 1
    assert cap[n2][n3] == 1 and cap[n2][n4] == 1          # partition 2
    assert cap[n4][n1] == 1 and cap[n4][n2] == 1          # partition 3
    path = g.find_shortest_path()
    assert path.flow == 1 and path.vertices == [n1, n2, n3]   # n1 -> n2 -> n3


def test_app003_role_swap_path_becomes_two_move_primaries():
    # sink end first: n2 -> n3 swaps partition 2; then n1 -> n2 swaps the first of 0 and 1
    res = balance(state(cluster([table(1, "t", PATH_TABLE)], 4, order=[1, 2, 3, 4])))
    assert moves(res.proposals) == [("move_pri", "1.0", 1, 2), ("move_pri", "1.2", 2, 3)]
    p = res.proposals[0]
    assert [a[0] for a in p.actions] == ["DOWNGRADE_TO_SECONDARY", "UPGRADE_TO_PRIMARY"]
    assert "10.0.0.1:34801(2) -> 10.0.0.2:34801 -> 10.0.0.3:34801(0)" in p.reason
    assert p.details["low"] == 1 and p.details["flow"] == 1


def test_app004_disk_heuristic_takes_the_primary_on_the_busiest_disk():
    # n1 leads 0 (data0), 1 (data1), 4 (data1): data1 holds 2 primaries -> partition 1 goes first
    spec = ["1>2,3", "1>2,3", "2>1,3", "3>1,2", "1>2,3", "4>1,2"]
    disks = {0: {1: "data0"}, 1: {1: "data1"}, 4: {1: "data1"}, 2: {1: "data0"}, 3: {1: "data0"},
             5: {1: "data0"}}
    snap = cluster([table(1, "t", spec, disks=disks)], 4, node_disks={1: ("data0", "data1")})
    res = balance(state(snap))
    assert moves(res.proposals)[0][:2] == ("move_pri", "1.1")
    assert res.proposals[0].details["from_disk_load"] == 2


def test_app005_corner_case_graph_for_8_partitions_on_3_nodes_4_2_2():
    # 3 nodes, order n3 n2 n1 -> ids n3=1 n2=2 n1=3, sink 4; low 2, high 3; higher 1, lower 0
    spec = ["1>2,3"] * 4 + ["2>1,3"] * 2 + ["3>1,2"] * 2
    st = state(cluster([table(1, "t", spec)], 3))
    run = BalanceRun(st, PegasusConfig(), FirstDisk())
    g = build_primary_graph(st, st.apps[1], run.ids, run.vec)
    assert (g.low, g.high, g.higher, g.lower) == (2, 3, 1, 0)
    assert g.cap[0][3] == 1                 # n1: 4 - 2 = 2, minus the corner unit
    assert g.cap[2][4] == 1 and g.cap[1][4] == 1   # n2, n3 at low gain a sink unit
    assert g.cap[0][4] == 0                 # the source->sink unit is added and removed (Q12)
    path = g.find_shortest_path()
    assert path.flow == 1 and path.vertices == [3, 1]      # n1 -> n3 (smaller id first)
    res = balance(st)
    assert moves(res.proposals) == [("move_pri", "1.0", 1, 3)]


def test_app006_copy_primary_until_n_over_m():
    # 8 partitions on n1..n3, n4 just added: primaries 3/3/2/0, low = 2 -> no path to n4 ->
    # copy_primary: max is (3, largest id) = n1 (id 4) -> n4; then n2 (3) -> n4; n4 = 2 = low: stop
    spec = ["1>2,3"] * 3 + ["2>1,3"] * 3 + ["3>1,2"] * 2
    res = balance(state(cluster([table(1, "t", spec)], 4)))
    assert moves(res.proposals) == [("copy_pri", "1.0", 1, 4), ("copy_pri", "1.3", 2, 4)]
    p = res.proposals[0]
    assert [a[0] for a in p.actions] == ["ADD_SECONDARY_FOR_LB", "DOWNGRADE_TO_SECONDARY",
                                         "UPGRADE_TO_PRIMARY", "REMOVE"]
    assert "floor(8/4) = 2" in p.reason and p.details["have_lower_than_average"] is True


def test_app007_only_move_primary_never_copies():
    spec = ["1>2,3"] * 3 + ["2>1,3"] * 3 + ["3>1,2"] * 2
    st = state(cluster([table(1, "t", spec)], 4))
    res = balance(st, PegasusConfig(only_move_primary=True))
    # no path and no copy: the primary stage is idle, so the secondary stage runs this round
    assert {p.type for p in res.proposals} == {"copy_sec"}


def test_app008_copy_primary_corner_rule_max_minus_min():
    # called directly with have_lower_than_average = False: stops at max - min <= 1
    spec = ["1>2,3"] * 5 + ["2>1,3"] + ["3>1,2"] * 2
    st = state(cluster([table(1, "t", spec)], 3))
    run = BalanceRun(st, PegasusConfig(), FirstDisk())
    assert copy_primary(run, st.apps[1], False)
    # counts n1 5, n2 1, n3 2 (ids n3=1 n2=2 n1=3): min n2 -> copy 1.0 (5/2/2 -> 4/2/2); min is
    # now (2, id 1) = n3 -> copy 1.1 (3/2/3); max (3, id 3) n1 - min n2 = 1: stop. Both targets
    # already hold a secondary of those partitions: copy_primary has no membership check (Q11).
    assert moves(run.proposals()) == [("copy_pri", "1.0", 1, 2), ("copy_pri", "1.1", 1, 3)]


def test_app009_copy_secondary_until_max_minus_min_at_most_one():
    # primaries 1 each; replicas n1 4, n2 4, n3 3, n4 1 (ids n4=1 n3=2 n2=3 n1=4)
    # max (4, id 4) = n1: partition 0 is its primary, 1 is fine -> 1.1 n1 -> n4 (4/4/3/2 -> 3/4/3/2)
    # max n2: 1.0 is a secondary there and absent from n4 -> 1.0 n2 -> n4; all 3: stop
    spec = ["1>2,3", "2>1,3", "3>1,2", "4>1,2"]
    res = balance(state(cluster([table(1, "t", spec)], 4)))
    assert moves(res.proposals) == [("copy_sec", "1.0", 2, 4), ("copy_sec", "1.1", 1, 4)]
    assert [a[0] for a in res.proposals[0].actions] == ["ADD_SECONDARY_FOR_LB", "REMOVE"]
    assert res.proposals[0].actions[0][1] == n(1)          # target = the partition's primary
    plan = run_plan(cluster([table(1, "t", spec)], 4))
    totals = [p + s for p, s in plan.final_counts[1].values()]
    assert max(totals) - min(totals) <= 1 and plan.stop_reason.startswith("balanced")


def test_app010_only_primary_balancer_skips_the_secondary_stage():
    spec = ["1>2,3", "2>1,3", "3>1,2", "4>1,2"]
    st = state(cluster([table(1, "t", spec)], 4))
    assert balance(st, PegasusConfig(only_primary_balancer=True)).proposals == ()
    assert check(st, PegasusConfig(only_primary_balancer=True)).total == 0


def test_app011_balancer_in_turn_stops_after_the_first_table_with_work():
    t1 = table(1, "a", PATH_TABLE)
    t2 = table(2, "b", PATH_TABLE)
    st = state(cluster([t1, t2], 4))
    both = balance(st)
    assert {p.gpid.app_id for p in both.proposals} == {1, 2}
    one = balance(st, PegasusConfig(balancer_in_turn=True))
    assert {p.gpid.app_id for p in one.proposals} == {1}
    # the checker never stops early
    assert check(st, PegasusConfig(balancer_in_turn=True)).move_pri == 4


def test_app012_ignored_and_bulk_loading_tables_are_skipped():
    t1 = table(1, "a", PATH_TABLE)
    t2 = table(2, "b", PATH_TABLE, is_bulk_loading=True)
    st = state(cluster([t1, t2], 4))
    assert {p.gpid.app_id for p in balance(st).proposals} == {1}
    assert balance(st, PegasusConfig(ignored_app_list=(1,))).proposals == ()


def test_app013_checker_counts_both_stages_on_the_unmodified_state():
    # unbalanced sample: round 1 = the 7 role swaps; the checker adds the copy_sec it would do
    # on the state *before* the swaps (10), while the plan needs 2 copy_pri + 1 move + 8 copy_sec
    from engine.pegasus.parse import load_snapshot
    snap = load_snapshot("samples/pegasus/unbalanced.txt")
    oc = check(state(snap))
    assert (oc.move_pri, oc.copy_pri, oc.copy_sec, oc.total) == (7, 0, 10, 17)
    plan = run_plan(snap)
    assert plan.rounds[0].operation_count.total == oc.move_pri + oc.copy_pri
    assert plan.operation_count_plan.to_json() == {"move_pri": 8, "copy_pri": 2, "copy_sec": 8,
                                                   "total": 18}
    assert plan.operation_count_after.total == 0


def test_app014_balanced_docs_example_has_nothing_to_do():
    spec = [f"{i % 4 + 1}>{(i + 1) % 4 + 1},{(i + 2) % 4 + 1}" for i in range(8)]
    st = state(cluster([table(2, "temp", spec)], 4))
    assert all(st.nodes[n(i)].primary_count(2) == 2 and st.nodes[n(i)].secondary_count(2) == 4
               for i in range(1, 5))
    assert balance(st).proposals == () and check(st).total == 0
