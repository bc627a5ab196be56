"""Shared test fixtures. Browser tests are marked ``e2e``; Spark tests ``spark``."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("SHEDLAB_CACHE_DIR", str(ROOT / ".shedlab-cache" / "test"))
