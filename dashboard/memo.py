"""A small thread-safe LRU of recently used objects, in front of the diskcache.

The diskcache shares parsed inputs and results between workers; this keeps the last few of them
as live Python objects in one process, so a slider move does not unpickle a snapshot again.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["Memo"]


class Memo:
    """``get``/``put`` with least-recently-used eviction beyond ``size`` entries."""

    def __init__(self, size: int):
        self.size = int(size)
        self._lock = threading.Lock()
        self._items: "OrderedDict[object, object]" = OrderedDict()

    def get(self, key):
        """The value, made most recent; ``None`` when absent."""
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
