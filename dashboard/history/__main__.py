"""``python -m dashboard.history`` (see :mod:`dashboard.history.cli`)."""
import sys

from .cli import main

sys.exit(main())
