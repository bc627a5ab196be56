"""A strategy that reads a new ``broker.conf`` key declares it in its own module, and nowhere else.

``tests/fixtures/own_key_strategy.py`` (CeilingShedder) declares ``loadBalancerCeilingShedderPercentage``
in its spec's ``new_keys``. Registered the operator's way (``SHEDLAB_STRATEGY_MODULES``, in a fresh
process: the rest of the suite must not see the key), the key is then one of the config's — parsed from
and written to ``broker.conf``, read by the strategy — and the Tuner shows its slider with the declared
default and range. A spec that reads a key that is neither the config's nor declared is refused when it
registers, naming the strategy and the key.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import UsageError
from engine.strategies import registry
from engine.strategies.spec import ConfigKey, EmptyState, StrategySpec

ROOT = Path(__file__).resolve().parents[2]
KEY = "loadBalancerCeilingShedderPercentage"

PROBE = r'''
import json
from engine.config import key_info, parse_broker_conf, to_broker_conf
from engine.synth import make_snapshot
from engine.view import LoadView
from engine.strategies import registry
from dashboard import ids
from dashboard.tuner.state import build_config, coerce_state
from layouts import tuner as LT

KEY = "loadBalancerCeilingShedderPercentage"
state, errors = coerce_state({"shed": "CeilingShedder", "values": {KEY: "75"}})
found = {}
stack = [LT.controls(state)]
while stack:
    c = stack.pop()
    if isinstance(c, (list, tuple)):
        stack.extend(c)
    elif c is not None and not isinstance(c, (str, int, float)):
        if getattr(c, "id", None) == ids.tuner_key(KEY):
            found = {"value": c.value, "min": c.min, "max": c.max, "step": c.step}
        stack.append(getattr(c, "children", None))
cfg, cfg_errors = build_config(state)
view = LoadView.from_load_data(make_snapshot({
    "a:8080": {"cpu": 80, "bundles": {"t/n/0x00000000_0x80000000": {"rate": 100, "throughput": 2e6}}},
    "b:8080": {"cpu": 20}}))
shed = registry.spec("CeilingShedder").factory()
print(json.dumps({
    "errors": errors + cfg_errors, "slider": found, "info": key_info(KEY), "value": getattr(cfg, KEY),
    "conf": to_broker_conf(cfg), "parsed": getattr(parse_broker_conf(KEY + "=60\n").config, KEY),
    "at_75": shed.run(view, cfg, {})[0].label,
    "at_default": shed.run(view, cfg.with_values({KEY: "90"}), {})[0].label,
    "options": [o["value"] for o in LT.strategy_options("shedding")],
}))
'''


@pytest.fixture(scope="module")
def probed():
    env = dict(os.environ, SHEDLAB_STRATEGY_MODULES="tests.fixtures.own_key_strategy")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    got = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout.strip().splitlines()[-1])


def test_a_strategy_s_own_key_has_its_slider_in_the_tuner(probed):
    assert "CeilingShedder" in probed["options"] and probed["errors"] == []
    assert probed["slider"] == {"value": 75, "min": 50, "max": 100, "step": 1}
    info = probed["info"]
    assert (info["default"], info["unit"], info["type"]) == (90, "%", "int") and "CeilingShedder" in info["doc"]


def test_the_declared_key_is_the_config_s_and_reaches_the_strategy(probed):
    assert probed["value"] == 75 and probed["conf"].splitlines()[-1] == f"{KEY}=75"
    assert probed["parsed"] == 60
    # broker a at 80 %: above a 75 % ceiling, below the 90 % default
    assert (probed["at_75"], probed["at_default"]) == ("Success", "Skip")


def _spec(name, keys, new_keys=()):
    return StrategySpec(name=name, fqn=f"org.example.{name}", roles={"shedding"}, load_manager="modular",
                        config_keys=keys, requires_placement=None, sweep_grid=(), state_type=EmptyState,
                        factory=object, explains=(), title=name, new_keys=new_keys)


def test_a_spec_reading_an_undeclared_key_is_refused_when_it_registers():
    with pytest.raises(UsageError, match=r"strategy TypoShedder: 'loadBalancerTypoPercentage' is not a broker.conf "
                                         r"key .* declares it in its module"):
        registry.register(_spec("TypoShedder", ("maxUnloadPercentage", "loadBalancerTypoPercentage")))
    assert "TypoShedder" not in {s.name for s in registry.specs()}


def test_a_declaration_may_not_redefine_a_key():
    with pytest.raises(UsageError, match="maxUnloadPercentage is already a key of the config"):
        registry.register(_spec("RedefiningShedder", ("maxUnloadPercentage",),
                                (ConfigKey("maxUnloadPercentage", 0.9, "ratio", "another default"),)))
    assert "RedefiningShedder" not in {s.name for s in registry.specs()}
