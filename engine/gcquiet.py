"""Cyclic garbage collection held off while many young objects are built.

A burst of allocations (a parsed document, a view's per-broker records) triggers collection passes
over every object the process holds; when the burst makes no reference cycles, waiting until it is
done changes nothing but the number of passes.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["no_gc"]


@contextmanager
def no_gc():
    """Collection off for the ``with`` block (nested blocks leave it to the outermost)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
