"""Moved to :mod:`dashboard.tuner.transfer` (the Tuner's service package); this module re-exports it for the
modules and tests that still import ``dashboard.transfer``."""
from dashboard.tuner.transfer import *  # noqa: F401,F403
from dashboard.tuner.transfer import __all__  # noqa: F401
