"""engine/ is pure: no dash, plotly or pyspark imports (house style rule 1); doctests of the engine run."""
import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import engine

ENGINE = Path(engine.__file__).resolve().parent
FORBIDDEN = {"dash", "plotly", "pyspark", "flask", "kaleido"}


def test_engine_imports_nothing_from_the_ui_or_spark():
    bad = []
    for py in ENGINE.rglob("*.py"):
        tree = ast.parse(py.read_text(), filename=str(py))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for n in names:
                if n.split(".")[0] in FORBIDDEN:
                    bad.append(f"{py.relative_to(ENGINE.parent)}: {n}")
    assert not bad, bad


def _modules():
    for m in pkgutil.walk_packages([str(ENGINE)], prefix="engine."):
        if m.name.endswith("__main__"):
            continue
        yield m.name


@pytest.mark.parametrize("name", list(_modules()))
def test_doctests(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
