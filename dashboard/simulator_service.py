"""The Simulator page's services moved to the :mod:`dashboard.simulator` package; this name re-exports it
for the callers that still import it."""
from dashboard.simulator import *  # noqa: F401,F403
from dashboard.simulator import __all__  # noqa: F401
