"""Cure (reference §3): missing primary / secondary, assign_delay_ms, pending counters, DDD."""
from engine.pegasus.config import PegasusConfig
from engine.pegasus.cure import DEAD, HEALTHY, ILL, cure, cure_pass
from engine.pegasus.model import Gpid, Partition
from engine.pegasus.node_order import iteration_order
from engine.pegasus.parse import parse_snapshot_text
from engine.pegasus.plan import run_plan

from .helpers import cluster, dropped, moves, n, part, state, table

CFG = PegasusConfig()
G0 = Gpid(1, 0)


def test_cure001_healthy_partition():
    st = state(cluster([table(1, "t", ["1>2,3"])], 3))
    assert cure(st, CFG, G0).status == HEALTHY


def test_cure002_missing_primary_upgrades_the_secondary_with_fewest_primaries():
    # n2 already leads partition 1, n3 leads nothing -> upgrade n3 (not the first listed, n2)
    st = state(cluster([table(1, "t", [">2,3", "2>1,3", "1>2,3"])], 3))
    res = cure(st, CFG, G0)
    assert res.status == ILL and moves([res.action]) == [("upgrade_pri", "1.0", None, 3)]
    assert res.action.actions == (("UPGRADE_TO_PRIMARY", n(3), n(3)),)


def test_cure003_pending_counters_spread_two_upgrades_in_one_pass():
    # equal loads: partition 0 takes n2 (first listed); its pending primary makes n3 win for 1
    st = state(cluster([table(1, "t", [">2,3", ">2,3", "1>2,3"])], 3))
    cp = cure_pass(st, CFG)
    assert moves(cp.sent) == [("upgrade_pri", "1.0", None, 2), ("upgrade_pri", "1.1", None, 3)]
    assert st.newly[n(2)].primaries == {1: 1} and st.newly[n(2)].partitions == {}


def test_cure004_new_table_gets_primaries_round_robin_in_node_map_order():
    text = """[general]
app_name : fresh
app_id : 1
partition_count : 5
max_replica_count : 3

[replicas]
pidx ballot replica_count primary secondaries
0 1 0/3 - []
1 1 0/3 - []
2 1 0/3 - []
3 1 0/3 - []
4 1 0/3 - []

[details]
address status replica_count primary_count secondary_count
10.0.0.1:34801 ALIVE 0 0 0
10.0.0.2:34801 ALIVE 0 0 0
10.0.0.3:34801 ALIVE 0 0 0
10.0.0.4:34801 ALIVE 0 0 0
"""
    snap = parse_snapshot_text(text, "fresh.txt")
    order = [n(int(h[0].rsplit(".", 1)[1])) for h in
             iteration_order([tuple(n(i)) for i in range(1, 5)])]
    st = state(snap)
    cp = cure_pass(st, CFG)
    assert [p.to_node for p in cp.sent] == order + order[:1]
    assert all(p.type == "assign_pri" for p in cp.sent)
    plan = run_plan(snap)
    assert [r.kind for r in plan.rounds[:3]] == ["cure", "cure", "cure"]
    assert plan.health("after")[0].fully_healthy == 5
    assert all(len(set(p.members)) == 3 for p in plan.final_state.tables[0].partitions)


def test_cure005_one_replica_is_an_emergency_fresh_node_by_fewest_replicas():
    # partition 0 has only its primary (1 < min2pc 2): add a secondary now, on the node with the
    # fewest replicas of the table (n4: 0), not a member
    st = state(cluster([table(1, "t", ["1", "1>2,3", "2>1,3"])], 4))
    res = cure(st, CFG, G0)
    assert moves([res.action]) == [("add_sec", "1.0", None, 4)]
    assert "mutation_2pc_min_replica_count" in res.reason
    assert res.action.actions == (("ADD_SECONDARY", n(1), n(4)),)


def _with_dropped(drops, now_ms, secondaries="2", dead=()):
    p = part(0, f"1>{secondaries}")
    p = Partition(p.pidx, p.primary, p.secondaries, 5, (), 0, p.disks, tuple(drops))
    return cluster([table(1, "t", [p, "1>2,3", "2>1,3"])], 4, dead=dead, now_ms=now_ms)


def test_cure006_dropped_replica_back_within_the_delay_is_added_back():
    st = state(_with_dropped([dropped(3, time_ms=1000)], now_ms=2000))
    res = cure(st, CFG, G0)
    assert moves([res.action]) == [("add_sec", "1.0", None, 3)]
    assert "is back" in res.reason


def test_cure007_assign_delay_ms_waits_for_a_dead_dropped_node():
    snap = _with_dropped([dropped(3, time_ms=1000)], now_ms=2000, dead=(3,))
    res = cure(state(snap), CFG, G0)
    assert res.action is None and res.waiting_until == 1000 + 600000 + 1
    # delay elapsed -> emergency: dropped n3 is dead -> fresh node (n4: fewest replicas)
    res = cure(state(snap), CFG.replace(replica_assign_delay_ms_for_dropouts=500), G0)
    assert moves([res.action]) == [("add_sec", "1.0", None, 4)]
    assert "replica_assign_delay_ms_for_dropouts 500 ms has passed" in res.reason


def test_cure008_plan_waits_then_cures():
    snap = _with_dropped([dropped(3, time_ms=1000)], now_ms=2000, dead=(3,))
    cfg = CFG.replace(replica_assign_delay_ms_for_dropouts=60000, min_live_node_count_for_unfreeze=3)
    plan = run_plan(snap, cfg)
    # n3 dies with replicas of 1.1 and 1.2 (dropped at 2000); 1.0 lost n3 at 1000: it is cured
    # first (clock jumps to 61001), the two others a round later (71001 > 62001), all on the
    # only fresh node n4; then the balancer moves a primary to n4
    kinds = [r.kind for r in plan.rounds]
    assert kinds == ["meta", "wait", "cure", "cure", "balance"]
    assert plan.rounds[2].now_ms == 61001 and plan.rounds[3].now_ms == 71001
    assert moves(plan.rounds[2].proposals) == [("add_sec", "1.0", None, 4)]
    assert moves(plan.rounds[3].proposals) == [("add_sec", "1.1", None, 4), ("add_sec", "1.2", None, 4)]


def test_cure009_black_listed_dropped_node_forces_a_fresh_node():
    snap = _with_dropped([dropped(3, time_ms=1000)], now_ms=2000)
    cfg = CFG.replace(assign_secondary_black_list=("10.0.0.3:34801",))
    res = cure(state(snap), cfg, G0)
    assert moves([res.action]) == [("add_sec", "1.0", None, 4)]


def test_cure010_redundant_secondary_removes_the_busiest_node():
    # 4 replicas > 3: secondaries n2 (3 replicas), n3 (2), n4 (4) -> remove n4's
    st = state(cluster([table(1, "t", ["1>2,3,4", "2>4,1", "4>2,1", "4>3,1"])], 4))
    res = cure(st, CFG, G0)
    assert moves([res.action]) == [("remove_sec", "1.0", 4, None)]
    assert res.action.actions == (("REMOVE", n(1), n(4)),)
    # tie (n2 and n4 both 3): the first listed secondary goes
    st = state(cluster([table(1, "t", ["1>2,3,4", "2>4,1", "4>2,1"])], 4))
    assert moves([cure(st, CFG, G0).action]) == [("remove_sec", "1.0", 2, None)]


def test_cure011_ddd_single_last_drop_gets_the_primary():
    p = Partition(0, None, (), 7, (n(2),))
    st = state(cluster([table(1, "t", [p, "1>2,3"])], 3))
    res = cure(st, CFG, G0)
    assert res.status == DEAD and moves([res.action]) == [("assign_pri", "1.0", None, 2)]


def test_cure012_ddd_two_last_drops_larger_ballot_wins_unless_unsafe():
    drops = (dropped(2, 10, ballot=5, lcd=100, lpd=100), dropped(3, 20, ballot=4, lcd=90, lpd=95))
    p = Partition(0, None, (), 7, (n(2), n(3)), 50, (), drops)
    res = cure(state(cluster([table(1, "t", [p, "1>2,3"])], 3)), CFG, G0)
    assert moves([res.action]) == [("assign_pri", "1.0", None, 2)]
    bad = (dropped(2, 10, ballot=5, lcd=80, lpd=100), dropped(3, 20, ballot=4, lcd=90, lpd=95))
    p = Partition(0, None, (), 7, (n(2), n(3)), 50, (), bad)
    res = cure(state(cluster([table(1, "t", [p, "1>2,3"])], 3)), CFG, G0)
    assert res.status == DEAD and res.action is None and "smaller committed decree" in res.reason


def test_cure013_flow_control_holds_adds_beyond_the_per_node_limit():
    # three partitions each miss a secondary; the fresh node is n4 for all of them
    st = state(cluster([table(1, "t", ["1>2", "2>3", "3>1"])], 4))
    cfg = CFG.replace(add_secondary_enable_flow_control=True, add_secondary_max_count_for_one_node=1)
    cp = cure_pass(st, cfg)
    assert [p.to_node for p in cp.sent] == [n(4)]
    assert len(cp.held) == 2
    again = cure_pass(st, cfg)                      # held proposals are still pending and valid
    assert [p.to_node for p in again.sent] == [n(4)] and len(again.held) == 2


def test_cure014_dead_node_sample_downgrades_then_upgrades_and_readds():
    from engine.pegasus.parse import load_snapshot
    plan = run_plan(load_snapshot("samples/pegasus/dead-node-two-disks.json"))
    assert [r.kind for r in plan.rounds] == ["meta", "cure", "wait", "cure"]
    assert {p.type for p in plan.rounds[0].proposals} == {"drop_pri", "drop_sec"}
    assert {p.type for p in plan.rounds[1].proposals} == {"upgrade_pri"}
    assert {p.type for p in plan.rounds[3].proposals} == {"add_sec"}
    assert all(h.fully_healthy == h.partition_count for h in plan.health("after"))
    # the dead node hosts nothing any more
    assert all(v == (0, 0) for v in [plan.final_counts[1][n(5)]])
