"""Moved to :mod:`dashboard.tuner.analysis` (the Tuner's service package); this module re-exports it for the
modules and tests that still import ``dashboard.analysis``."""
from dashboard.tuner.analysis import *  # noqa: F401,F403
from dashboard.tuner.analysis import __all__  # noqa: F401
