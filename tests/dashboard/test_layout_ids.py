"""Start-up consistency: every callback id exists in the layouts, every id comes from dashboard/ids.py.

Dash builds ``app.validation_layout`` from the shell and every registered page's ``layout()`` on the
first request; the Tuner's controls are rendered by a callback, so they are built here for every
strategy pair too.
"""
import json

import pytest
from dash.development.base_component import Component

from dashboard import ids

DASH_INTERNAL = {"_pages_location", "_pages_content", "_pages_store", "_pages_dummy"}


def _walk(node, out):
    if isinstance(node, (list, tuple)):
        for x in node:
            _walk(x, out)
        return
    if not isinstance(node, Component):
        return
    i = getattr(node, "id", None)
    if i is not None:
        out.append(i)
    for prop in node._prop_names:
        v = getattr(node, prop, None)
        if isinstance(v, (Component, list, tuple)):
            _walk(v, out)


def _parse(spec: str):
    spec = spec.split("@", 1)[0]
    i, _, prop = spec.rpartition(".")
    return (json.loads(i) if i.startswith("{") else i), prop


@pytest.fixture(scope="module")
def dash_app():
    import app as appmod

    appmod.server.test_client().get("/")  # first request: pages build the validation layout
    return appmod.app


@pytest.fixture(scope="module")
def layout_ids(dash_app):
    from layouts import tuner
    from engine.strategies import registry
    from dashboard.tuner.state import TunerState

    found = []
    _walk(dash_app.validation_layout, found)
    for shed in registry.names("shedding"):
        for place in registry.manager_placements(shed):
            _walk(tuner.controls(TunerState(shed=shed, place=place)), found)
    return found


def _callback_ids(dash_app):
    out = []
    for cb in dash_app._callback_list:
        outputs = cb["output"].strip(".").split("...")
        for o in outputs:
            out.append(("output",) + _parse(o))
        for kind in ("inputs", "state"):
            for d in cb[kind]:
                i = d["id"]
                out.append((kind, json.loads(i) if isinstance(i, str) and i.startswith("{") else i, d["property"]))
    return out


def test_ids001_every_callback_id_is_in_a_layout(dash_app, layout_ids):
    strings = {i for i in layout_ids if isinstance(i, str)}
    types = {i.get("type") for i in layout_ids if isinstance(i, dict)}
    missing = []
    for kind, i, prop in _callback_ids(dash_app):
        if isinstance(i, dict):
            if i.get("type") not in types:
                missing.append((kind, i, prop))
        elif i not in strings and i not in DASH_INTERNAL:
            missing.append((kind, i, prop))
    assert not missing, missing


def test_ids002_every_layout_id_comes_from_the_ids_module(layout_ids):
    known = set(ids.all_ids().values())
    strays = [i for i in layout_ids if isinstance(i, str) and i not in known and i not in DASH_INTERNAL]
    strays += [i for i in layout_ids if isinstance(i, dict) and i.get("type") not in known]
    assert not strays, strays


def test_ids003_ids_are_unique(layout_ids):
    names = ids.all_ids()
    assert len(set(names.values())) == len(names)  # nobody spells an id twice
    strings = [i for i in layout_ids if isinstance(i, str)]
    from layouts import PAGES
    from collections import Counter
    dup = [i for i, n in Counter(strings).items() if n > 1]
    assert not dup, dup


def test_ids004_every_page_layout_works_without_arguments():
    import importlib

    from layouts import PAGES

    for mod, _path, _title in PAGES:
        assert isinstance(importlib.import_module(f"layouts.{mod}").layout(), Component)
