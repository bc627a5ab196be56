"""Invariants over seeded random clusters, every mode.

* replaying the plan's action lists on a fresh state is valid step by step, and after every
  round each partition has exactly one primary and distinct secondaries on alive nodes;
* a round never increases the skew it targets;
* the balancer's operation counts: every round reports exactly its proposals, and the checker's
  count relates to the plan as §4.6 says (first round; 0 at the end).
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.pegasus.balancer import check
from engine.pegasus.config import PegasusConfig
from engine.pegasus.plan import run_plan, skews
from engine.pegasus.proposals import count_operations
from engine.pegasus.state import ClusterState

from .random_clusters import random_snapshot

MODES = {
    "per_table": PegasusConfig(),
    "per_table_in_turn": PegasusConfig(balancer_in_turn=True),
    "only_move_primary": PegasusConfig(only_move_primary=True),
    "cluster": PegasusConfig(balance_cluster=True),
    "cluster_fixed": PegasusConfig(balance_cluster=True, fixed_quirks={"Q1", "Q7", "Q13"}),
}
SEEDS = st.integers(0, 2**31 - 1)


def _replay_and_check(snap, plan):
    state = ClusterState(snap)
    alive = {x.address for x in snap.nodes if x.alive}
    for r in plan.rounds:
        for p in r.proposals:
            for ctype, _target, node in p.actions:
                state.apply_action(p.gpid, "ADD_SECONDARY" if ctype.startswith("ADD_SECONDARY")
                                   else ctype, node)
        assert state.counts() == r.counts
        for app in state.apps.values():
            for pc in app.pcs:
                members = ([pc.primary] if pc.primary else []) + pc.secondaries
                assert len(set(members)) == len(members)
                if r.kind == "balance":
                    assert pc.primary is not None and pc.primary in alive
                    assert len(pc.secondaries) == app.max_replica_count - 1
                    assert set(pc.secondaries) <= alive
    def layout(tables):     # members, roles and disks (the replay keeps no clock: drop times differ)
        return [[(p.primary, p.secondaries, p.disks, p.last_drops) for p in t.partitions]
                for t in tables]
    assert layout(state.to_snapshot().tables) == layout(plan.final_state.tables)


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=SEEDS)
def test_inv001_partitions_stay_valid_round_after_round(mode, seed):
    snap = random_snapshot(seed)
    plan = run_plan(snap, MODES[mode], seed=seed)
    assert "max_rounds" not in plan.stop_reason
    _replay_and_check(snap, plan)


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=SEEDS)
def test_inv002_a_round_never_increases_the_skew_it_targets(mode, seed):
    snap = random_snapshot(seed)
    cfg = MODES[mode]
    plan = run_plan(snap, cfg, seed=seed)
    alive = {x.address for x in snap.nodes if x.alive}
    prev = skews(plan.initial_counts, alive)
    for r in plan.rounds:
        cur = skews(r.counts, alive)
        tables = {p.gpid.app_id for p in r.proposals}
        if r.stage == "primary":                    # role swaps / copy primary: table primaries
            for a in tables:
                assert cur["tables"][a]["primary"] <= prev["tables"][a]["primary"]
        elif r.stage == "secondary":                # copy secondary: the table's replicas
            for a in tables:
                assert cur["tables"][a]["total"] <= prev["tables"][a]["total"]
                assert cur["tables"][a]["primary"] == prev["tables"][a]["primary"]
        elif not cfg.quirk("Q1"):                   # cluster stages, Q1 fixed: the largest table
            role = "secondary" if r.stage == "cluster_secondary" else "primary"   # skew first
            assert max(v[role] for v in cur["tables"].values()) <= \
                max(v[role] for v in prev["tables"].values())
        prev = cur


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=SEEDS)
def test_inv003_operation_count_equals_the_plan(mode, seed):
    snap = random_snapshot(seed)
    cfg = MODES[mode]
    plan = run_plan(snap, cfg)          # always-first disk: an empty round is a fixed point
    balance_rounds = [r for r in plan.rounds if r.kind == "balance"]
    # what the meta server reports after each balance round is exactly that round's list ...
    for r in balance_rounds:
        assert r.operation_count == count_operations(r.proposals)
        assert r.operation_count.total == len(r.proposals) > 0
    # ... so the reports add up to the plan length
    assert sum(r.operation_count.total for r in balance_rounds) == len(plan.balance_proposals) \
        == plan.operation_count_plan.total
    if cfg.balance_cluster and cfg.quirk("Q13"):
        assert plan.operation_count_before.total == 0          # the checker is blind (Q13)
        return
    # the checker (steady mode) runs both stages on the unmodified state: its primary part is
    # exactly the first lively round when every table is scanned (no in-turn stop) ...
    before = plan.operation_count_before
    if not cfg.balance_cluster and balance_rounds:
        first = count_operations(balance_rounds[0].proposals)
        if cfg.balancer_in_turn:                # the lively round stops after one table
            assert before.total >= first.total
        elif balance_rounds[0].stage == "secondary":
            assert before == first
        else:
            assert before.move_pri + before.copy_pri == first.total
    # ... and it reports 0 once the plan has converged
    if plan.stop_reason.startswith("balanced"):
        assert plan.operation_count_after.total == 0
        assert check(ClusterState(plan.final_state), cfg).total == 0


def test_inv004_plans_are_deterministic():
    snap = random_snapshot(12345, max_nodes=12, max_tables=4)
    for cfg in MODES.values():
        a, b = run_plan(snap, cfg, seed=7), run_plan(snap, cfg, seed=7)
        assert [p.to_json() for p in a.proposals] == [p.to_json() for p in b.proposals]
