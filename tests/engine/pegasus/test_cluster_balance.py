"""Cluster-level balance (reference §5): stages, stop conditions, quirks Q1/Q2/Q3/Q6/Q13."""
from engine.pegasus.app_balance import BalanceRun
from engine.pegasus.balancer import balance, check
from engine.pegasus.cluster_balance import get_cluster_migration_info, get_skew
from engine.pegasus.config import PegasusConfig
from engine.pegasus.disks import DiskChooser, FirstDisk, make_disk_chooser
from engine.pegasus.parse import load_snapshot
from engine.pegasus.plan import run_plan, skews

from .helpers import cluster, moves, state, table

CLUSTER = PegasusConfig(balance_cluster=True)
FIXED_Q1 = PegasusConfig(balance_cluster=True, fixed_quirks={"Q1"})

# Tables A (app 1) and B (app 2), 4 partitions each, one primary per node and table.
# Secondaries of A per node: n1 3, n2 3, n3 1, n4 1; of B: 1, 1, 3, 3; cluster: 4 each.
A = ["1>2,3", "2>1,4", "3>1,2", "4>1,2"]
B = ["1>3,4", "2>3,4", "3>4,1", "4>3,2"]


class LastDisk(DiskChooser):
    """Always the last candidate disk (the other end of ``std::rand() % n``)."""

    name = "last"

    def __call__(self, n):
        return n - 1


def test_cluster001_q1_every_table_starts_with_skew_1():
    st = state(cluster([table(1, "a", A), table(2, "b", B)], 4))
    run = BalanceRun(st, CLUSTER, FirstDisk())
    info = get_cluster_migration_info(run, "copy_sec")
    assert info.apps_skew == {1: 1, 2: 1} and info.true_skew_at_start == {1: 2, 2: 2}
    assert get_skew({}) == 1                               # uint32(0 - UINT32_MAX)
    run = BalanceRun(st, FIXED_Q1, FirstDisk())
    assert get_cluster_migration_info(run, "copy_sec").apps_skew == {1: 2, 2: 2}


def test_cluster002_q1_stop_test_fires_while_tables_are_skewed():
    # recorded skews 1 and cluster secondary skew 0: nothing moves although A and B have skew 2
    plan = run_plan(cluster([table(1, "a", A), table(2, "b", B)], 4), CLUSTER)
    assert plan.proposals == [] and plan.stop_reason.startswith("balanced")
    assert skews(plan.final_counts)["tables"][1]["secondary"] == 2


def test_cluster003_fixed_q1_moves_secondaries_hand_checked():
    # 1st move: A (ties in app order); max nodes n1, n2 (3) = cluster max, min n3, n4; disks
    #   (n1, default) and (n2, default) hold 3 each -> first: n1; first pid of {1.1, 1.2, 1.3}
    #   absent from n3 = 1.1 -> 1.1 n1 -> n3.  2nd: A skew 2, cluster min {n1,n2} max {n3}: A max
    #   n2 / min n4 (not cluster extremes) -> 1.0 n2 -> n4; A skew 0.  3rd: B n3 -> n1 (2.1),
    #   4th: B n4 -> n2 (2.0). Then every skew is 0.
    plan = run_plan(cluster([table(1, "a", A), table(2, "b", B)], 4), FIXED_Q1)
    r1 = plan.rounds[0]
    assert r1.stage == "cluster_secondary"
    assert moves(sorted(r1.proposals, key=lambda p: p.seq)) == [
        ("copy_sec", "1.1", 1, 3), ("copy_sec", "1.0", 2, 4),
        ("copy_sec", "2.1", 3, 1), ("copy_sec", "2.0", 4, 2)]
    assert [p.seq for p in r1.proposals] == [2, 1, 4, 3]          # migration list: gpid order
    final = skews(plan.final_counts)
    assert final["cluster"]["primary"] <= 1 and final["cluster"]["secondary"] <= 1
    assert all(v["secondary"] == 0 for v in final["tables"].values())


def test_cluster004_disk_choice_is_injectable():
    st = state(cluster([table(1, "a", A), table(2, "b", B)], 4))
    # last of (n1, default), (n2, default) -> n2: 1.0 and 1.2 are on n3 already -> 1.3 n2 -> n3
    first = balance(st, FIXED_Q1, LastDisk())
    assert min(first.proposals, key=lambda p: p.seq).gpid == (1, 3)
    a = balance(st, FIXED_Q1, make_disk_chooser(11))
    b = balance(st, FIXED_Q1, make_disk_chooser(11))
    assert moves(a.proposals) == moves(b.proposals)


def test_cluster005_appendix_b_order_table_3_before_table_1():
    # A (1) and B (3) skew 2, C (2) skew 1 -> flip_map order [(1, 2), (2, 3), (2, 1)]: B first;
    # B max n3, n4 = cluster max, min n1, n2 = cluster min; (n3, default) first -> 3.1 n3 -> n1
    C = ["1>3,4", "2>3,4", "3>1,2"]
    st = state(cluster([table(1, "a", A), table(2, "c", C), table(3, "b", B)], 4))
    res = balance(st, FIXED_Q1)
    first = min(res.proposals, key=lambda p: p.seq)
    assert first.gpid == (3, 1) and moves([first]) == [("copy_sec", "3.1", 3, 1)]


def test_cluster006_q1_and_q6_can_unbalance_a_balanced_table():
    # Y (app 1) is balanced (2 secondaries per node); X (app 2, ignored) skews the cluster totals
    # (n4 holds none of X). Q1: Y's recorded skew is 1 and the cluster skew 2 -> move a secondary
    # of Y from a cluster-max node to n4 (1.0 n1 -> n4): Y's skew goes 0 -> 2 (Q6: X counted).
    Y = ["2>1,3", "3>1,4", "4>2,3", "1>2,4"]
    X = ["1>2,3", "2>1,3", "3>1,2"]
    snap = cluster([table(1, "y", Y), table(2, "x", X)], 4)
    cfg = PegasusConfig(balance_cluster=True, ignored_app_list=(2,))
    plan = run_plan(snap, cfg)
    assert moves(plan.proposals) == [("copy_sec", "1.0", 1, 4)]
    assert skews(plan.initial_counts)["tables"][1]["secondary"] == 0
    assert skews(plan.final_counts)["tables"][1]["secondary"] == 2
    fixed = run_plan(snap, cfg.replace(fixed_quirks={"Q1"}))
    assert fixed.proposals == []


def test_cluster007_balance_op_count_per_round_limits_a_stage():
    plan = run_plan(cluster([table(1, "a", A), table(2, "b", B)], 4),
                    FIXED_Q1.replace(balance_op_count_per_round=3))
    assert [len(r.proposals) for r in plan.rounds][:2] == [3, 1]


def test_cluster008_fewer_than_3_nodes_no_cluster_stage():
    snap = cluster([table(1, "a", ["1>2", "1>2"], max_rc=2)], 2)
    cfg = CLUSTER.replace(min_live_node_count_for_unfreeze=1)
    run = BalanceRun(state(snap), cfg, FirstDisk())
    assert get_cluster_migration_info(run, "copy_sec") is None
    # the role-swap stage still runs: 2 primaries on n1 -> one moves to n2
    assert moves(balance(state(snap), cfg).proposals) == [("move_pri", "1.0", 1, 2)]


def test_cluster009_under_replicated_partition_stops_the_stage():
    snap = cluster([table(1, "a", A + ["1>2"])], 4)          # partition 4 has one secondary
    run = BalanceRun(state(snap), CLUSTER, FirstDisk())
    assert get_cluster_migration_info(run, "copy_sec") is None


def test_cluster010_q13_checker_reports_zero_in_cluster_mode():
    st = state(cluster([table(1, "a", A), table(2, "b", B)], 4))
    assert check(st, FIXED_Q1).total == 0
    fixed = check(st, PegasusConfig(balance_cluster=True, fixed_quirks={"Q1", "Q13"}))
    assert fixed.copy_sec == 4 and fixed.total == 4


def test_cluster011_unbalanced_sample_ends_with_skew_at_most_one():
    plan = run_plan(load_snapshot("samples/pegasus/unbalanced.txt"), CLUSTER)
    stages = [r.stage for r in plan.rounds]
    assert stages[0] == "primary" and "cluster_secondary" in stages
    # role swaps one table per round (in turn): round 1 only touches table 2
    assert {p.gpid.app_id for p in plan.rounds[0].proposals} == {2}
    final = plan.skews()
    assert final["cluster"]["primary"] <= 1 and final["cluster"]["secondary"] <= 1
    assert plan.stop_reason.startswith("balanced")


def test_cluster012_seeded_disk_choice_is_reproducible_over_a_plan():
    snap = load_snapshot("samples/pegasus/dead-node-two-disks.json")
    a = run_plan(snap, CLUSTER, seed=3)
    b = run_plan(snap, CLUSTER, seed=3)
    assert moves(a.proposals) == moves(b.proposals)
    assert a.disk_choice == "random(seed=3)" and run_plan(snap, CLUSTER).disk_choice == "first"
