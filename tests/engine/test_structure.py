"""The project's shape, checked from the source (``ast``, nothing is imported).

* **No import circles** among the project's modules (``engine``, ``dashboard``, ``callbacks``,
  ``layouts``, ``app.py``). Imports inside functions count as much as module-level ones: a function-level
  import hides a circle from the interpreter at import time, not from the design (the two modules still
  need each other, and the next module-level import between them fails). Only imports under
  ``if TYPE_CHECKING:`` are left out, as they never run. ``import a.b`` and ``from a.b import c`` are an
  edge to ``a.b.c`` when that is a module of ours, else to ``a.b``; a package's ``__init__`` is not
  counted as imported by each of its submodules' imports (re-exporting from ``__init__`` is the
  package's public face, not a circle).
* **Import direction**: ``engine`` imports none of ``dashboard``, ``callbacks``, ``layouts``, ``app``,
  ``dash``, ``plotly``, ``pyspark``; ``dashboard`` imports none of ``callbacks``, ``layouts``, ``app``;
  ``layouts`` imports no ``callbacks``.
* **Module size**: no module over 900 lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "dashboard", "callbacks", "layouts")
MAX_LINES = 900

FORBIDDEN = {
    "engine": ("dashboard", "callbacks", "layouts", "app", "dash", "plotly", "pyspark"),
    "dashboard": ("callbacks", "layouts", "app"),
    "layouts": ("callbacks",),
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    files = [root / "app.py"] if (root / "app.py").exists() else []
    for pkg in PACKAGES:
        files += sorted((root / pkg).rglob("*.py"))
    return {_module_name(p, root): p for p in files if "__pycache__" not in p.parts}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every import statement, at any depth, except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imported_names(module: str, path: Path) -> set[str]:
    """The dotted names a module imports (absolute; ``from x import y`` gives ``x.y``, ``from x import *``
    gives ``x``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    names: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
            continue
        if node.level:
            base = module.split(".")
            if not is_pkg:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            prefix = ".".join([*base, node.module] if node.module else base)
        else:
            prefix = node.module or ""
        # ``from x import y`` is ``x.y``, which resolves to ``x`` when ``y`` is not a submodule
        names.update(prefix if a.name == "*" else f"{prefix}.{a.name}" for a in node.names)
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        edges = set()
        for name in imported_names(mod, path):
            # the longest prefix that is one of our modules
            parts = name.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != mod:
                edges.add(".".join(parts))
        graph[mod] = edges
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(root: str) -> None:  # iterative, so a deep graph cannot hit the recursion limit
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for mod in sorted(graph):
        if mod not in index:
            visit(mod)
    return sorted(out)


def _a_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One concrete circle inside a component, for the failure message."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
            if child not in prev:
                prev[child] = node
                queue.append(child)
    return comp


MODULES = project_modules()
GRAPH = import_graph(MODULES)


def test_the_checker_sees_a_circle_and_a_relative_import(tmp_path):
    pkg = tmp_path / "engine"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from .sub import b\nA = 1\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine import a\n"
        "def f():\n    from ..a import A\n    return A\n")
    mods = project_modules(tmp_path)
    assert set(mods) == {"engine", "engine.a", "engine.sub", "engine.sub.b"}
    graph = import_graph(mods)
    assert graph["engine"] == {"engine.a"}
    assert graph["engine.a"] == {"engine.sub.b"}
    assert graph["engine.sub.b"] == {"engine.a"}  # the function-level import counts, TYPE_CHECKING not
    assert import_circles(graph) == [["engine.a", "engine.sub.b"]]


def test_no_import_circles():
    circles = import_circles(GRAPH)
    assert not circles, "import circles:\n" + "\n".join(
        " -> ".join(_a_cycle(GRAPH, c)) + f"   (component of {len(c)}: {', '.join(c)})" for c in circles)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_import_direction(layer):
    bad = []
    for mod, path in MODULES.items():
        if mod != layer and not mod.startswith(layer + "."):
            continue
        for name in sorted(imported_names(mod, path)):
            top = name.split(".")[0]
            if top in FORBIDDEN[layer]:
                bad.append(f"{mod} imports {name}")
    assert not bad, f"{layer} must not import {', '.join(FORBIDDEN[layer])}:\n" + "\n".join(sorted(set(bad)))


def test_module_size():
    big = {mod: n for mod, path in MODULES.items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: " + ", ".join(f"{m} ({n})" for m, n in sorted(big.items()))
