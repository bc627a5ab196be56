"""One module per page, each with ``layout(**kwargs)`` that works with no arguments.

``PAGES`` is the single list ``app.py`` registers, in navigation order:
(module name, path, title).
"""
PAGES = [
    ("home", "/", "Home"),
    ("tuner", "/tuner", "Tuner"),
    ("simulator", "/simulator", "Simulator"),
    ("pegasus", "/pegasus", "Pegasus"),
    ("bundles", "/bundles", "Bundles"),
    ("history", "/history", "History"),
]
