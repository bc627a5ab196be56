"""Every Dash component id, in one module: nobody spells an id twice.

Each page owns one section. Pattern-matching ids are built by helper functions.
"""
from __future__ import annotations

# ---------------------------------------------------------------- shell (app-wide)
URL = "url"
NAV = "nav"
SESSION = "session-id"          # dcc.Store(storage_type="session"): per-tab id
SOURCE = "source-store"         # dcc.Store(storage_type="session"): the picked source
ALERT = "global-alert"

# ---------------------------------------------------------------- tuner page

# ---------------------------------------------------------------- simulator page

# ---------------------------------------------------------------- history page

# ---------------------------------------------------------------- bundles page

# ---------------------------------------------------------------- pegasus page


def all_ids() -> dict[str, str]:
    """Every string id defined here (name -> id); used by the start-up consistency check."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, str)}
