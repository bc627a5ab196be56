"""One module adds a strategy everywhere, with no other file edited.

``tests/fixtures/plugin_strategy.py`` (not shipped) defines ``BiggestBrokerShedder``: its spec, state
type, keys and sweep grid. Registered the operator's way, ``SHEDLAB_STRATEGY_MODULES=
tests.fixtures.plugin_strategy``, in fresh processes (the registry discovers once per process, and the
rest of the suite must not see the plug-in), the tests find it in:

* the registry (the spec as declared, the pairing rule);
* the Tuner: the shedding picker's options, the state a permalink gives, the sliders shown for it, and
  the analysis of a sample snapshot;
* the Simulator: both sides' pickers, the sliders of a side, the sweep's default grid;
* the History page: its strategy picker, the sweep's default keys and grid, a backtest and a sweep on a
  generated dataset (pandas);
* the invariant suite (``tests/engine/test_invariants.py`` runs over the registry);
* the command line (``python -m engine shed`` and ``simulate``);

and its name is in no project file: only here and in the fixture (and in the docs that describe this).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.fixtures.plugin_strategy"
NAME = "BiggestBrokerShedder"
#: the plug-in's keys at values where it fires on the generated History dataset (cpu ~15-20 % at night,
#: bundles of ~3 MB/s)
FIRING = {"loadBalancerBrokerOverloadedThresholdPercentage": "15", "loadBalancerBundleUnloadMinThroughputThreshold": "0"}
WEIGHTS = ("loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
           "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight")


def _env() -> dict:
    env = dict(os.environ, SHEDLAB_STRATEGY_MODULES=MODULE)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _run(args: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=timeout)


def _fixture_spec():
    """The spec as the fixture declares it (imported here without registering it)."""
    from tests.fixtures.plugin_strategy import SPEC

    return SPEC


# ------------------------------------------------------------------------- what the fresh process looks at
def _walk(component):
    """Every Dash component under ``component`` (lists and children included)."""
    stack = [component]
    while stack:
        c = stack.pop()
        if isinstance(c, (list, tuple)):
            stack.extend(c)
            continue
        if c is None or isinstance(c, (str, int, float)):
            continue
        yield c
        stack.append(getattr(c, "children", None))


def _by_id(page, cid):
    return next(c for c in _walk(page) if getattr(c, "id", None) == cid)


def probe_registry(_tmp):
    from engine.strategies import registry

    s = registry.spec(NAME)
    return {"name": s.name, "fqn_lookup": registry.spec(s.fqn).name, "keys": list(s.config_keys),
            "grid": [[k, list(v)] for k, v in s.sweep_grid], "placement_for": registry.placement_for(NAME),
            "allowed": registry.placements_allowed(NAME),
            "shedding": [x.name for x in registry.specs(role="shedding")], "module": s.factory.__module__}


def probe_tuner(_tmp):
    from dashboard.state import coerce_state
    from layouts import tuner as LT

    options = [o["value"] for o in LT.strategy_options("shedding")]
    state, errors = coerce_state({"shed": NAME})
    sliders = [getattr(c, "data-key") for c in _walk(LT.controls(state)) if getattr(c, "data-key", None)]
    out = {"options": options, "shed": state.shed, "place": state.place, "errors": errors, "sliders": sliders,
           "placements": [o["value"] for o in LT.strategy_options("placement", NAME) if not o.get("disabled")]}
    # the analysis the page shows, on a shipped sample with the plug-in's threshold lowered
    from dashboard.analysis import analyze
    from dashboard.sources import get_snapshot
    from dashboard.state import build_config

    cfg, _ = build_config(state.with_values(FIRING))
    a = analyze(get_snapshot("sample:yahoo-japan-3-brokers"), cfg)
    out["analysis"] = {"strategy": a.result.strategy, "label": a.result.label,
                       "unloads": [[s.broker, s.bundle] for s in a.result.selected]}
    return out


def probe_simulator(_tmp):
    from dashboard import ids
    from dashboard import simulator as S
    from dashboard.simulator.strategies import strategy_keys
    from layouts import simulator as L

    page = L.layout(**{"scenario": "bigo-jitter", "a.shed": NAME})
    pickers = {side: [o["value"] for o in _by_id(page, ids.sim_side(ids.SIM_SHED, side)).options]
               for side in ("a", "b")}
    st, errors = S.coerce_state({"a": {"shed": NAME}})
    return {"pickers": pickers, "a_shed": st.a.shed, "errors": errors, "keys": list(S.side_keys(NAME)),
            "all_keys": list(strategy_keys(NAME)),
            "sweep": list(S.sweep_defaults(NAME)), "sweep_keys": [o["value"] for o in S.sweep_keys(NAME)]}


def probe_history(tmp):
    from dashboard import ids
    from dashboard.history.generate import generate
    from dashboard.history.jobs import run_job
    from dashboard.history.service import job_params, sweep_defaults
    from layouts import history as LH

    page = LH.layout()
    options = [o["value"] for o in _by_id(page, ids.HISTORY_STRATEGY).options]
    key_opts, xk, xv, yk, yv = sweep_defaults(NAME)
    ds = Path(tmp) / "gen"
    generate(ds, brokers=5, days=1, seed=7, start="2026-01-05", bundles_per_broker=3)
    span = dict(start="2026-01-05T00:00", end="2026-01-05T06:00")
    p = job_params("backtest", strategy=NAME, overrides="\n".join(f"{k}={v}" for k, v in FIRING.items()), **span)
    bt = run_job("backtest", ds, p, engine="pandas", use_cache=False)
    ev = bt["events"]
    sp = job_params("sweep", strategy=NAME, overrides="\n".join(f"{k}={v}" for k, v in FIRING.items()), x_key=xk, x_values=", ".join(xv.split(", ")[:2]), y_key=yk,
                    y_values=", ".join(yv.split(", ")[:2]), **span)
    sw = run_job("sweep", ds, sp, engine="pandas", use_cache=False)
    grid = sw.get("grid", sw.get("cells"))
    return {"options": options, "sweep_key_options": [o["value"] for o in key_opts], "grid": [xk, xv, yk, yv],
            "events": len(ev), "strategies": sorted(set(map(str, ev["strategy"]))) if len(ev) else [],
            "triggers": sorted(set(map(str, ev["trigger"]))) if len(ev) and "trigger" in ev else [],
            "sweep_cells": int(len(grid)) if grid is not None else -1, "sweep_keys": [sp["x_key"], sp["y_key"]]}


PROBES = {"registry": probe_registry, "tuner": probe_tuner, "simulator": probe_simulator, "history": probe_history}


def _probe_main(tmp: str) -> None:  # runs in the fresh process
    out = {}
    for name, fn in PROBES.items():
        try:
            out[name] = {"ok": True, "value": fn(tmp)}
        except Exception:  # noqa: BLE001 - each page reports its own failure
            out[name] = {"ok": False, "error": traceback.format_exc()[-4000:]}
    print("PROBE " + json.dumps(out, default=str))


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    code = f"import sys; from tests.dashboard.test_plugin_strategy import _probe_main; _probe_main({str(tmp)!r})"
    r = _run([sys.executable, "-c", code])
    assert r.returncode == 0, r.stderr[-4000:]
    line = next(x for x in r.stdout.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE "):])


def _part(found, name):
    got = found[name]
    assert got["ok"], f"the {name} part failed in the plug-in process:\n{got.get('error')}"
    return got["value"]


# ------------------------------------------------------------------------------------------ the proof
def test_registry_has_the_plugin_as_declared(found):
    spec = _fixture_spec()
    got = _part(found, "registry")
    assert got["name"] == NAME and got["fqn_lookup"] == NAME and got["module"] == MODULE
    assert got["keys"] == list(spec.config_keys)
    assert got["grid"] == [[k, list(v)] for k, v in spec.sweep_grid]
    assert len(spec.sweep_grid[0][1]) == 5 and len(spec.sweep_grid[1][1]) == 6
    assert NAME in got["shedding"] and got["placement_for"] is None
    assert "LeastLongTermMessageRate" in got["allowed"]


def test_tuner_offers_it_with_its_sliders_and_runs_it(found):
    got = _part(found, "tuner")
    assert NAME in got["options"]
    assert got["shed"] == NAME and got["errors"] == []
    assert got["place"] in got["placements"]
    assert set(_fixture_spec().config_keys) <= set(got["sliders"])
    assert got["analysis"]["strategy"] == NAME and got["analysis"]["label"] == "Success"
    # yahoo-japan-3-brokers: broker1 (CPU 89 %) is the hottest; its largest bundle goes
    assert [b for b, _ in got["analysis"]["unloads"]] == ["broker1:8080"]


def test_simulator_offers_it_on_both_sides_with_its_keys_and_grid(found):
    spec = _fixture_spec()
    got = _part(found, "simulator")
    assert NAME in got["pickers"]["a"] and NAME in got["pickers"]["b"]
    assert got["a_shed"] == NAME
    # a side's sliders: the strategy's own keys; the resource weights are in the side's "other keys"
    assert got["keys"] == [k for k in spec.config_keys if k not in WEIGHTS]
    assert got["sweep"] == [x for k, v in spec.sweep_grid_text() for x in (k, v)]
    assert set(spec.config_keys) <= set(got["all_keys"])
    assert {k for k, _ in spec.sweep_grid} <= set(got["sweep_keys"])


def test_history_backtests_and_sweeps_it_on_its_grid(found):
    spec = _fixture_spec()
    got = _part(found, "history")
    assert NAME in got["options"]
    assert got["grid"] == [x for k, v in spec.sweep_grid_text() for x in (k, v)]
    assert [k for k, _ in spec.sweep_grid] == got["sweep_keys"]
    assert set(k for k, _ in spec.sweep_grid) <= set(got["sweep_key_options"])
    assert got["events"] > 0 and got["strategies"] == [NAME]
    # the event log explains each unload from the result's own details (no branch on the name)
    assert got["triggers"] == ["hottest broker"]
    assert got["sweep_cells"] == 4


def test_the_invariant_suite_runs_it():
    r = _run([sys.executable, "-m", "pytest", "tests/engine/test_invariants.py", "-k", NAME, "-q",
              "-p", "no:cacheprovider", "-o", "addopts="])
    tail = (r.stdout + r.stderr)[-3000:]
    assert r.returncode == 0, tail
    assert " passed" in r.stdout and "deselected" in r.stdout, tail


def test_the_command_line_runs_it():
    snap = "samples/snapshots/yahoo-japan-3-brokers.json"
    r = _run([sys.executable, "-m", "engine", "shed", snap, "--strategy", NAME, "--json"])
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    cyc = doc["cycles"][0]
    assert doc["strategy"] == NAME and cyc["label"] == "Success"
    assert [u["broker"] for u in cyc["unloads"]] == ["broker1:8080"]
    # its own key: above the hottest broker's usage, nothing is shed
    r = _run([sys.executable, "-m", "engine", "shed", snap, "--strategy", NAME, "--json",
              "--set", "loadBalancerBrokerOverloadedThresholdPercentage=95"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["cycles"][0]["label"] == "Skip"
    r = _run([sys.executable, "-m", "engine", "simulate", "hot-bundle", "--strategy", NAME, "--json",
              "--events", "none", "--minutes", "30"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["summary"]["strategy"] == NAME


def test_no_project_file_names_the_plugin():
    """Nothing outside the fixture and this test names it: the project found it through the registry."""
    allowed = {Path("tests/fixtures/plugin_strategy.py"), Path("tests/dashboard/test_plugin_strategy.py")}
    hits = []
    for folder in ("engine", "dashboard", "callbacks", "layouts", "assets", "samples", "tests"):
        for f in (ROOT / folder).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".yaml", ".json", ".js", ".css"):
                rel = f.relative_to(ROOT)
                if rel not in allowed and NAME in f.read_text(errors="replace"):
                    hits.append(str(rel))
    assert NAME not in (ROOT / "app.py").read_text()
    assert not hits, hits


def test_the_fixture_example_runs():
    """The fixture's doctest (a 3-broker snapshot and the decision), the example docs/architecture.md shows."""
    import doctest

    import tests.fixtures.plugin_strategy as mod

    r = doctest.testmod(mod)
    assert r.attempted > 0 and r.failed == 0
