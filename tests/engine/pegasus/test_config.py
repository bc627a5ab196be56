"""PegasusConfig: Pegasus keys and defaults (reference §10), ini round trip, quirk switches."""
import pytest

from engine.errors import InputError
from engine.pegasus.config import BUG_QUIRKS, QUIRKS, PegasusConfig, parse_quirks


def test_config001_defaults_are_pegasus_defaults():
    c = PegasusConfig()
    assert (c.balance_cluster, c.only_primary_balancer, c.only_move_primary, c.balancer_in_turn) == \
        (False, False, False, False)
    assert c.balance_op_count_per_round == 10 and c.min_live_node_count_for_unfreeze == 3
    assert c.node_live_percentage_threshold_for_update == 65 and c.lb_interval_ms == 10000
    assert c.replica_assign_delay_ms_for_dropouts == 600000
    assert c.max_reserved_dropped_replicas == 1 and c.mutation_2pc_min_replica_count == 2
    assert (c.add_secondary_enable_flow_control, c.add_secondary_max_count_for_one_node) == (False, 10)
    assert c.fixed_quirks == frozenset() and all(c.quirk(q) for q in QUIRKS)


def test_config002_ini_round_trip_and_unknown_keys_ignored():
    c = PegasusConfig(balance_cluster=True, balance_op_count_per_round=4, ignored_app_list=(3, 5),
                      assign_secondary_black_list=("a:1",))
    text = c.to_ini() + "\n[meta_server]\nsomething_else = 1\n"
    again = PegasusConfig.from_ini(c.to_ini() + "[core]\nx = 1\n")
    assert again == c
    assert "[meta_server]" in text and "balance_cluster = true" in text
    assert "replica_assign_delay_ms_for_dropouts = 600000" in text


def test_config003_bad_values_are_input_errors():
    with pytest.raises(InputError, match="meta_server.balance_op_count_per_round"):
        PegasusConfig.from_ini("[meta_server]\nbalance_op_count_per_round = ten\n", "c.ini")
    with pytest.raises(InputError, match="must be at least 1"):
        PegasusConfig(balance_op_count_per_round=0)
    with pytest.raises(InputError, match="cannot be switched off"):
        PegasusConfig(fixed_quirks={"Q4"})
    with pytest.raises(InputError, match="unknown meta function level"):
        PegasusConfig(meta_function_level="sleepy")


def test_config004_parse_quirks():
    assert parse_quirks(None) == frozenset()
    assert parse_quirks("all") == parse_quirks("") == frozenset(BUG_QUIRKS)
    assert parse_quirks("q1, Q13") == {"Q1", "Q13"}
    with pytest.raises(InputError, match="'Q5'"):
        parse_quirks("Q5")
    assert hash(PegasusConfig(fixed_quirks={"Q1"})) == hash(PegasusConfig(fixed_quirks=("Q1",)))
