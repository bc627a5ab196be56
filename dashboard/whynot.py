"""Moved to :mod:`dashboard.tuner.whynot` (the Tuner's service package); this module re-exports it for the
modules and tests that still import ``dashboard.whynot``."""
from dashboard.tuner.whynot import *  # noqa: F401,F403
from dashboard.tuner.whynot import __all__  # noqa: F401
