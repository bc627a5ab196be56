"""``engine/pegasus`` modules each declare ``__all__`` (purity itself: tests/engine/test_layers.py)."""
import ast
from pathlib import Path

import engine.pegasus


def test_purity001_every_module_declares_all():
    root = Path(engine.pegasus.__file__).parent
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                     for t in n.targets) for n in tree.body), path
