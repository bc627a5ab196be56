"""Proposals: what the balancer (or cure) asks the replica servers to do, and why.

A balancer proposal is one ``configuration_balancer_request`` of the migration list (reference
§1.5): a balance type, a partition, ``from`` and ``to`` and the ordered action list that
``generate_balancer_request`` builds. Cure proposals (§3) carry one action. Every proposal has a
human-readable ``reason`` and the numbers behind it in ``details``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .model import Gpid, HostPort

__all__ = [
    "MOVE_PRI",
    "COPY_PRI",
    "COPY_SEC",
    "BALANCE_TYPES",
    "CURE_TYPES",
    "Proposal",
    "OperationCount",
    "balancer_actions",
    "count_operations",
]

MOVE_PRI = "move_pri"
COPY_PRI = "copy_pri"
COPY_SEC = "copy_sec"
#: balancer proposal types (names of ``meta.lb.get_balance_operation_count``)
BALANCE_TYPES = (MOVE_PRI, COPY_PRI, COPY_SEC)
#: cure / meta proposal types: ASSIGN_PRIMARY, UPGRADE_TO_PRIMARY, ADD_SECONDARY,
#: REMOVE (redundant secondary), DOWNGRADE_TO_INACTIVE of a dead primary / secondary
CURE_TYPES = ("assign_pri", "upgrade_pri", "add_sec", "remove_sec", "drop_pri", "drop_sec")

#: change of (primaries, secondaries) on the ``from`` and ``to`` node, by proposal type
DELTAS = {
    MOVE_PRI: ((-1, +1), (+1, -1)),
    COPY_PRI: ((-1, 0), (+1, 0)),
    COPY_SEC: ((0, -1), (0, +1)),
    "assign_pri": (None, (+1, 0)),
    "upgrade_pri": (None, (+1, -1)),
    "add_sec": (None, (0, +1)),
    "remove_sec": ((0, -1), None),
    "drop_pri": ((-1, 0), None),
    "drop_sec": ((0, -1), None),
}
__all__.append("DELTAS")


@dataclass(frozen=True)
class Proposal:
    """One proposal of a plan.

    Attributes
    ----------
    type : str
        ``move_pri`` / ``copy_pri`` / ``copy_sec`` (balancer) or one of :data:`CURE_TYPES`.
    gpid : Gpid
        The partition (``app_id.pidx``).
    table : str
        Its table name.
    from_node, to_node : HostPort or None
        Source and destination (cure proposals have only one of them).
    actions : tuple of (str, HostPort or None, HostPort or None)
        ``(config_type, target, node)`` in execution order.
    stage : str
        ``primary`` / ``secondary`` (per-table policy), ``cluster_secondary`` /
        ``cluster_primary`` (cluster policy), ``cure``, ``meta``.
    reason : str
        Why, with the counts behind it.
    details : dict
        The numbers quoted in ``reason``.
    round : int
        1-based round of the plan (0 before the plan runner numbers it).
    seq : int
        Order in which the balancer produced it within its round (the migration list itself is
        iterated in gpid order).
    """

    type: str
    gpid: Gpid
    table: str
    from_node: HostPort | None
    to_node: HostPort | None
    actions: tuple = ()
    stage: str = ""
    reason: str = ""
    details: dict = field(default_factory=dict, compare=False)
    round: int = 0
    seq: int = 0

    @property
    def is_balance(self) -> bool:
        return self.type in BALANCE_TYPES

    def numbered(self, round_no: int, seq: int) -> "Proposal":
        return replace(self, round=round_no, seq=seq)

    def to_json(self) -> dict:
        return {
            "round": self.round,
            "seq": self.seq,
            "type": self.type,
            "gpid": str(self.gpid),
            "app_id": self.gpid.app_id,
            "pidx": self.gpid.pidx,
            "table": self.table,
            "from": str(self.from_node) if self.from_node else None,
            "to": str(self.to_node) if self.to_node else None,
            "stage": self.stage,
            "reason": self.reason,
            "details": self.details,
            "actions": [[a, str(t) if t else None, str(n) if n else None] for a, t, n in self.actions],
        }


def balancer_actions(btype: str, primary: HostPort | None, frm: HostPort, to: HostPort) -> tuple:
    """``generate_balancer_request``: the action list of a balancer proposal.

    Examples
    --------
    >>> a, b = HostPort("n1", 1), HostPort("n2", 1)
    >>> [x[0] for x in balancer_actions("copy_pri", a, a, b)]
    ['ADD_SECONDARY_FOR_LB', 'DOWNGRADE_TO_SECONDARY', 'UPGRADE_TO_PRIMARY', 'REMOVE']
    """
    if btype == MOVE_PRI:
        return (("DOWNGRADE_TO_SECONDARY", frm, frm), ("UPGRADE_TO_PRIMARY", to, to))
    if btype == COPY_PRI:
        return (("ADD_SECONDARY_FOR_LB", frm, to), ("DOWNGRADE_TO_SECONDARY", frm, frm),
                ("UPGRADE_TO_PRIMARY", to, to), ("REMOVE", to, frm))
    if btype == COPY_SEC:
        return (("ADD_SECONDARY_FOR_LB", primary, to), ("REMOVE", primary, frm))
    raise ValueError(f"unknown balance type {btype!r}")


@dataclass(frozen=True)
class OperationCount:
    """``balance_operation_count``: proposals by type (``total == -1``: replica info missing)."""

    move_pri: int = 0
    copy_pri: int = 0
    copy_sec: int = 0
    total: int = 0

    def to_json(self) -> dict:
        return {"move_pri": self.move_pri, "copy_pri": self.copy_pri, "copy_sec": self.copy_sec,
                "total": self.total}


def count_operations(proposals) -> OperationCount:
    """``greedy_load_balancer::report``: count a migration list by type."""
    c = {t: 0 for t in BALANCE_TYPES}
    for p in proposals:
        if p.type in c:
            c[p.type] += 1
    return OperationCount(c[MOVE_PRI], c[COPY_PRI], c[COPY_SEC], sum(c.values()))
