"""Moved to :mod:`dashboard.tuner.state` (the Tuner's service package); this module re-exports it for the
modules and tests that still import ``dashboard.state``."""
from dashboard.tuner.state import *  # noqa: F401,F403
from dashboard.tuner.state import __all__  # noqa: F401
