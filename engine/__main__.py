"""``python -m engine``: see :mod:`engine.cli`."""
import sys

from engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
