"""Thin ``@dash.callback`` functions, one module per page. ``app.py`` imports this package once;
each submodule registers its callbacks through the global decorators (never ``from app import app``).
"""
import importlib

from layouts import PAGES

from . import shell  # noqa: E402,F401  (the app shell: source picker, uploads, live cluster)
from . import release_pickers, tuner_releases  # noqa: E402,F401  (release pickers: Simulator, History; Tuner diff)
from . import recommend  # noqa: E402,F401  ("Recommend a setting": History and Simulator cards)

for _name, _path, _title in PAGES:
    try:
        importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a page without callbacks
        if exc.name != f"{__name__}.{_name}":
            raise
