"""Time-stepped simulation of a Pulsar cluster under the modular or the extensible load manager.

Brokers with capacities serve bundles whose traffic follows patterns over time; brokers write load
reports at Pulsar's cadence; the leader advances its bundle averages, sheds every interval, places
new and orphaned bundles; events add, remove or restart brokers, spike a CPU, change traffic or
config. Everything is seeded: the same seed gives the same run. ``strategy="TransferShedder"``
runs the Extensible Load Manager (:mod:`engine.extensible.sim_leader`: brokers advance their
``BrokerLoadData`` EMA every 5 s report and publish it, the leader runs TransferShedder).

Public API
----------
>>> from engine.simulator import run_scenario, compare, list_scenarios   # doctest: +SKIP
>>> r = run_scenario("bigo-homogeneous-start", strategy="ThresholdShedder",
...                  placement="LeastResourceUsageWithWeight", seed=1)   # doctest: +SKIP
>>> r.summary["unloads"], r.summary["settled_minute"]                    # doctest: +SKIP
>>> r.events.query("kind == 'unload'")[["minute", "broker", "destination", "reason"]]  # doctest: +SKIP

Modules: :mod:`.scenario` (files and validation), :mod:`.traffic` (patterns, topics),
:mod:`.leader` (the pluggable leader), :mod:`.pairing` (which strategies a run may use), :mod:`.run`
(the driver: the minute's phases in order), one module per phase (:mod:`.membership`, :mod:`.load`,
:mod:`.reports`, :mod:`.bundle_data`, :mod:`.split`, :mod:`.decisions`, :mod:`.recording`, on the
arrays :mod:`.cluster` builds), :mod:`.metrics` (tables, summary), :mod:`.result` (what a run
produced), :mod:`.compare` (runs side by side). The scenario format is documented in
``docs/scenarios.md``.
"""
from .leader import BrokerReports, Leader, ModularLeader, make_leader
from .compare import Comparison, compare
from .metrics import settled_minute, zigzag_reversals
from .run import EPOCH_MS, Simulation, SimulationResult, run_scenario, simulate
from .scenario import (
    SCENARIOS_DIR,
    EventSpec,
    Scenario,
    list_scenarios,
    load_scenario,
    parse_scenario,
    parse_scenario_text,
    scenario_path,
)

__all__ = ["BrokerReports", "Leader", "ModularLeader", "make_leader", "Comparison", "compare", "settled_minute", "zigzag_reversals",
           "EPOCH_MS", "Simulation", "SimulationResult", "run_scenario", "simulate", "SCENARIOS_DIR", "EventSpec",
           "Scenario", "list_scenarios", "load_scenario", "parse_scenario", "parse_scenario_text", "scenario_path"]
