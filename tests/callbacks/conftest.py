"""Run callback bodies as plain functions, with ``ctx.triggered_id`` set the way Dash sets it."""
import json
from contextvars import copy_context

import pytest
from dash._callback_context import context_value
from dash._utils import AttributeDict


def run_with_trigger(fn, trigger, *args, prop="value"):
    """Call ``fn(*args)`` as if ``trigger`` (an id, a dict id or None) had fired it."""
    def run():
        if trigger is None:
            triggered = []
        else:
            tid = json.dumps(trigger, sort_keys=True, separators=(",", ":")) if isinstance(trigger, dict) else trigger
            triggered = [{"prop_id": f"{tid}.{prop}", "value": None}]
        context_value.set(AttributeDict(triggered_inputs=triggered))
        return fn(*args)
    return copy_context().run(run)


@pytest.fixture
def trig():
    return run_with_trigger


@pytest.fixture
def sid():
    import uuid

    return uuid.uuid4().hex
