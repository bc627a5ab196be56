"""The Simulator page's services: its state (and permalink), A/B runs, the parameter sweep, the report.

The page compares two runs of one scenario: run A and run B, each a shedding and a placement strategy
on a base config plus the ``broker.conf`` keys the user changed. One concept per module:

* :mod:`.state` — the page's state value (:class:`SimState`, two :class:`RunSpec`) built from untrusted input;
* :mod:`.link` — that state as a permalink's query parameters and back;
* :mod:`.strategies` — the strategy pickers, the pairing rule and a side's sliders, asked of the registry;
* :mod:`.scenarios` / :mod:`.snapshot` — the scenario picker, loading a picker value, a snapshot as start;
* :mod:`.form` — the state the form's controls show, and what a control change does to it;
* :mod:`.runs` — running A and B with progress, the results cache;
* :mod:`.summary` / :mod:`.events` — the results side by side, the event log;
* :mod:`.sweep` — the parameter sweep on run A;
* :mod:`.report` — the figures in page order and the HTML report;
* :mod:`.results` — what each results panel and export shows, one call each;
* :mod:`.findings` — the field findings as one-click A/Bs.

Everything is re-exported here: ``from dashboard import simulator as S``.
"""
from __future__ import annotations

from .events import DEFAULT_KINDS, event_kinds, event_rows
from .form import NoChange, extra_text, form_echo, form_state, key_value_text, parse_extra, resolve_form, scenario_label
from .link import decode, encode
from .report import build_report, figures, report_filename
from .results import (ResultView, event_view, figures_export, finding_view, page_figures, report_export,
                      result_view, sweep_or_none, sweep_view)
from .runs import RunData, cached_result, load_result, result_key, run_kwargs, run_pair
from .scenarios import DEFAULT_SCENARIO, PRESET_LABELS, base_config, load, scenario_facts, scenario_options
from .snapshot import SNAPSHOT_MINUTES, SNAPSHOT_PREFIX, snapshot_scenario_id, snapshot_source
from .state import (CONTROLLED_KEYS, MAX_MINUTES, SIDES, RunSpec, SimState, coerce_spec, coerce_state, default_state,
                    source_strategies)
from .strategies import pairing_source, placement_options, required_placement, runs_extensible, shedding_options, side_keys
from .summary import SUMMARY_ROWS, check_codes, checks_frame, config_diff, summary_rows
from .sweep import (MAX_AXIS, SWEEP_BUDGET, load_sweep, parse_axis, plan_sweep, run_sweep, sweep_cell, sweep_choice,
                    sweep_current, sweep_defaults, sweep_keys)

__all__ = ["DEFAULT_SCENARIO", "PRESET_LABELS", "SIDES", "MAX_MINUTES", "MAX_AXIS", "SWEEP_BUDGET", "RunSpec",
           "SimState", "default_state", "coerce_spec", "coerce_state", "encode", "decode", "scenario_options",
           "load", "scenario_facts", "base_config", "side_keys", "run_kwargs", "result_key", "run_pair",
           "load_result", "cached_result", "sweep_cell", "sweep_current", "RunData", "summary_rows", "config_diff",
           "event_rows", "event_kinds", "check_codes", "checks_frame", "sweep_keys", "sweep_defaults", "parse_axis",
           "plan_sweep", "run_sweep", "load_sweep", "figures", "build_report", "report_filename", "parse_extra",
           "extra_text", "key_value_text", "CONTROLLED_KEYS", "SNAPSHOT_PREFIX", "SNAPSHOT_MINUTES",
           "snapshot_source", "snapshot_scenario_id", "source_strategies", "DEFAULT_KINDS", "SUMMARY_ROWS",
           "shedding_options", "placement_options", "runs_extensible", "required_placement",
           "pairing_source", "NoChange", "form_state", "resolve_form", "scenario_label",
           "ResultView", "page_figures", "result_view", "finding_view", "event_view", "sweep_view", "sweep_or_none",
           "figures_export", "report_export", "sweep_choice", "form_echo"]
