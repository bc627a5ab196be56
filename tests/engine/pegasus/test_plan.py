"""The plan runner: rounds, per-step counts, samples, freeze / steady levels, JSON shape."""
import json

from engine.pegasus.config import PegasusConfig
from engine.pegasus.parse import load_snapshot
from engine.pegasus.plan import run_plan

from .helpers import cluster, moves, n, table

SAMPLES = "samples/pegasus"


def test_plan001_balanced_sample_has_no_proposal():
    plan = run_plan(load_snapshot(f"{SAMPLES}/balanced-4-nodes.txt"))
    assert plan.rounds == () and plan.stop_reason.startswith("balanced")
    assert plan.operation_count_before.total == 0
    assert all(v == (2, 4) for v in plan.final_counts[2].values())


def test_plan002_unbalanced_sample_round_by_round():
    plan = run_plan(load_snapshot(f"{SAMPLES}/unbalanced.txt"))
    assert [(r.kind, r.stage) for r in plan.rounds] == [
        ("balance", "primary"), ("balance", "primary"), ("balance", "secondary")]
    assert moves(plan.rounds[1].proposals) == [
        ("copy_pri", "2.1", 1, 4), ("copy_pri", "2.2", 1, 4), ("move_pri", "3.7", 2, 3)]
    for app_id in (2, 3):
        assert len({v for v in plan.final_counts[app_id].values()}) == 1   # perfectly even
    assert all(p.round == r.number for r in plan.rounds for p in r.proposals)


def test_plan003_node_added_gets_its_share():
    plan = run_plan(load_snapshot(f"{SAMPLES}/node-added.txt"))
    new = n(4)
    assert plan.initial_counts[2][new] == (0, 0)
    assert plan.final_counts[2][new] == (3, 6)            # temp: 12 partitions / 4 nodes
    assert plan.rounds[0].stage == "primary" and {p.type for p in plan.rounds[0].proposals} == {"copy_pri"}
    assert all(p.to_node == new for p in plan.proposals)


def test_plan004_counts_at_each_step_match_the_round_snapshots():
    plan = run_plan(load_snapshot(f"{SAMPLES}/unbalanced.txt"))
    step = 0
    assert plan.counts_at(0) == plan.initial_counts
    for r in plan.rounds:
        step += len(r.proposals)
        assert plan.counts_at(step) == r.counts
    assert plan.counts_at(10_000) == plan.final_counts
    one = plan.counts_at(1)
    p = plan.proposals[0]                                    # move_pri 2.0 n1 -> n3
    assert one[2][p.from_node] == (4, 4) and one[2][p.to_node] == (2, 6)


def test_plan005_freeze_protection_stops_everything():
    snap = cluster([table(1, "t", ["1>2,3", "1>2,3", "1>2,3", "1>2,3"])], 4, dead=(3, 4))
    plan = run_plan(snap)
    # 2 alive of 4 < min_live_node_count_for_unfreeze 3: dead replicas are downgraded, no cure
    assert [r.kind for r in plan.rounds] == ["meta"]
    assert plan.stop_reason.startswith("freezed: 2 alive node(s) < min_live_node_count_for_unfreeze 3")


def test_plan006_steady_level_only_counts():
    plan = run_plan(load_snapshot(f"{SAMPLES}/unbalanced.txt"),
                    PegasusConfig(meta_function_level="steady"))
    assert plan.rounds == ()
    assert "balance_operation_count total=17" in plan.stop_reason


def test_plan007_max_rounds_is_a_safety_stop():
    plan = run_plan(load_snapshot(f"{SAMPLES}/unbalanced.txt"), max_rounds=1)
    assert len(plan.rounds) == 1 and "max_rounds" in plan.stop_reason


def test_plan008_json_is_plain_data_and_frames():
    plan = run_plan(load_snapshot(f"{SAMPLES}/unbalanced.txt"))
    data = json.loads(json.dumps(plan.to_json()))
    assert data["format"] == "shedlab-pegasus-plan/1"
    assert data["operation_count"]["plan"]["total"] == 18
    assert data["counts"]["after"]["cluster"][0] == {"node": "10.0.0.1:34801", "primary": 6,
                                                     "secondary": 12, "total": 18}
    assert data["skew"]["after"]["cluster"] == {"primary": 0, "secondary": 0, "total": 0}
    assert sorted(x["id"] for x in data["nodes"]) == [1, 2, 3, 4]
    df = plan.proposals_frame()
    assert list(df["step"]) == list(range(1, 19)) and set(df["type"]) == {"move_pri", "copy_pri", "copy_sec"}
    cf = plan.counts_frame(0)
    assert (cf["primary"] == cf["primary_before"]).all()


def test_plan009_dead_node_with_replicas_blocks_nothing_after_downgrade():
    snap = cluster([table(1, "t", ["1>2,3", "2>3,4", "3>4,1", "4>1,2", "1>3,4"])], 5, dead=(4,))
    plan = run_plan(snap, PegasusConfig(replica_assign_delay_ms_for_dropouts=0))
    assert plan.rounds[0].kind == "meta"
    assert plan.final_counts[1][n(4)] == (0, 0)
    assert plan.health("after")[0].fully_healthy == 5
    assert plan.stop_reason.startswith("balanced")


def test_plan_steady_with_a_dead_empty_node_counts_like_the_meta_server():
    """``check_all_partitions`` asks ``can_run_balancer()`` before the steady-level count: a dead node
    hosting nothing leaves the node map first, so the checker counts over the alive nodes (it raised
    "balancer called with dead node ... in the node map"); a dead node still holding replicas blocks
    the count as it blocks the balancer."""
    one = cluster([table(1, "t", ["1>2,3"])], nodes=4, dead=(4,))
    plan = run_plan(one, PegasusConfig(meta_function_level="steady"))
    assert plan.rounds == () and plan.stop_reason.startswith("steady: every partition healthy")
    assert plan.operation_count_before.total == 0 and n(4) not in plan.node_order
    # a dead empty node counts as no node at all: the same count as the cluster without it
    skewed = [table(1, "t", ["1>2,3"] * 3)]
    steady = PegasusConfig(meta_function_level="steady")
    with_dead = run_plan(cluster(skewed, nodes=4, dead=(4,)), steady).operation_count_before
    without = run_plan(cluster(skewed, nodes=3), steady).operation_count_before
    assert with_dead == without and with_dead.move_pri > 0
    # the same from the command line: exit 0 and the count, no AssertionError
    import subprocess
    import sys
    text = """>>> nodes -d
[details]
address  status   replica_count  primary_count  secondary_count
a:1      ALIVE    1              1              0
b:1      ALIVE    1              0              1
c:1      ALIVE    1              0              1
d:1      UNALIVE  0              0              0

>>> app t -d
[general]
app_name          : t
app_id            : 1
partition_count   : 1
max_replica_count : 3

[replicas]
pidx  ballot  replica_count  primary  secondaries
0     3       3/3            a:1      [b:1,c:1]
"""
    r = subprocess.run([sys.executable, "-m", "engine", "pegasus", "-", "--level", "steady"], input=text,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    assert "balance_operation_count total=0" in r.stdout and "Traceback" not in r.stderr


def test_plan_steady_is_blocked_by_a_dead_node_with_replicas():
    from engine.pegasus.plan import _can_run_balancer
    from engine.pegasus.state import ClusterState

    st = ClusterState(cluster([table(1, "t", ["1>2,4"])], nodes=4, dead=(4,)))
    assert _can_run_balancer(st).startswith(f"dead node {n(4)} still holds replicas")
    empty = ClusterState(cluster([table(1, "t", ["1>2,3"])], nodes=4, dead=(4,)))
    assert _can_run_balancer(empty) == "" and n(4) not in empty.map_nodes()
