"""Disk loads (``calc_disk_load``) and the cluster policy's random disk choice (quirk Q3)."""
from __future__ import annotations

import numpy as np

from .model import HostPort

__all__ = ["calc_disk_load", "DiskChooser", "FirstDisk", "RandomDisk", "make_disk_chooser"]


def calc_disk_load(state, app_id: int, node: HostPort, only_primary: bool):
    """Replicas (or primaries) of one table per disk tag of ``node``.

    Parameters
    ----------
    state : ClusterState
    app_id : int
    node : HostPort
    only_primary : bool
        Count only the node's primaries of the table.

    Returns
    -------
    dict or None
        ``{disk_tag: count}`` (missing tags read as 0); ``None`` when a replica has no serving
        entry (replica info not collected: the balancer gives up).
    """
    ns = state.nodes[node]
    gpids = (ns.primaries if only_primary else ns.partitions).get(app_id, ())
    load: dict = {}
    app = state.apps[app_id]
    for g in gpids:
        tag = app.pcs[g.pidx].serving.get(node)
        if tag is None:
            return None
        load[tag] = load.get(tag, 0) + 1
    return load


class DiskChooser:
    """Picks an index in ``range(n)``: the ``std::rand() % n`` of ``pick_up_move``.

    Subclasses: :class:`FirstDisk` (always 0, reproducible) and :class:`RandomDisk` (seeded).
    The chooser is called even when ``n == 1`` (the C++ code consumes a random number then too).
    """

    name = "abstract"

    def __call__(self, n: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError


class FirstDisk(DiskChooser):
    """Always the first disk of the candidate set (reproducible runs)."""

    name = "first"

    def __call__(self, n: int) -> int:
        return 0


class RandomDisk(DiskChooser):
    """Uniform choice from a ``numpy.random.Generator`` (seeded)."""

    name = "random"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def __call__(self, n: int) -> int:
        return int(self.rng.integers(n))


def make_disk_chooser(seed=None) -> DiskChooser:
    """A chooser from ``None``/``"first"`` (always first), an int seed or a ``Generator``.

    Examples
    --------
    >>> make_disk_chooser()(5)
    0
    >>> a, b = make_disk_chooser(7), make_disk_chooser(7)
    >>> [a(10) for _ in range(5)] == [b(10) for _ in range(5)]
    True
    """
    if seed is None or (isinstance(seed, str) and seed == "first"):
        return FirstDisk()
    if isinstance(seed, DiskChooser):
        return seed
    if isinstance(seed, np.random.Generator):
        return RandomDisk(seed)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return RandomDisk(np.random.default_rng(int(seed)))
    raise TypeError(f"seed must be None, 'first', an int or a numpy Generator, not {type(seed).__name__}")
