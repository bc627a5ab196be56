"""``python -m dashboard.collect`` (see :mod:`dashboard.collect.cli`)."""
import sys

from .cli import main

sys.exit(main())
