"""The numpydoc examples of the extensible modules run as doctests."""
import doctest
import importlib

import pytest

MODULES = ["engine.extensible", "engine.extensible.broker_load_data", "engine.extensible.top_bundles",
           "engine.extensible.snapshot", "engine.extensible.filters", "engine.extensible.placement",
           "engine.extensible.transfer_shedder", "engine.extensible.load_manager", "engine.extensible.samples",
           "engine.extensible.readers"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
