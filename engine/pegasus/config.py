"""Meta-server settings the Pegasus balancer honours, as a frozen dataclass.

Every field maps to one Pegasus config key (``[meta_server]`` / ``[replication]`` in the meta
server's ``config.ini``) or remote command, with Pegasus' default (reference §10). Changes are
``dataclasses.replace(cfg, ...)``; being frozen, a config is hashable and a natural cache key.
"""
from __future__ import annotations

import configparser
from dataclasses import dataclass, field, fields, replace

from ..errors import InputError

__all__ = ["PegasusConfig", "QUIRKS", "BUG_QUIRKS", "FUNCTION_LEVELS", "parse_quirks"]

#: meta function levels (``meta_function_level``) by name -> value
FUNCTION_LEVELS = {"stopped": 100, "blind": 200, "freezed": 300, "steady": 400, "lively": 500}

#: every quirk of reference §9 and how Shedlab treats it
QUIRKS = {
    "Q1": "cluster table skews start at 1 at every stage (emulated; switchable: fix = true skew)",
    "Q2": "equal-skew tables in flip_map hinted-insert order (emulated, always)",
    "Q3": "random disk choice in pick_up_move (injectable: seeded or always-first)",
    "Q4": "node ids and tie-breaks from unordered_map order (emulated, always)",
    "Q5": "copy_secondary low bound = partition_count // N (emulated; no observable effect)",
    "Q6": "cluster totals include ineligible tables (emulated, always)",
    "Q7": "cluster target disks not updated within a stage (emulated; switchable)",
    "Q8": "cluster mode balances secondaries and primaries separately (by design)",
    "Q9": "empty inputs are undefined behaviour in C++ (always treated as 'no move')",
    "Q10": "get_node_loads size check (unreachable; not modelled)",
    "Q11": "copy_primary has no membership check (emulated; unreachable after FF failed)",
    "Q12": "FF corner case adds/removes a source->sink unit (emulated; net 0)",
    "Q13": "balance checker reports 0 in cluster mode (emulated; switchable)",
}

#: the quirks that are plain bugs and can be switched off (``fixed_quirks``)
BUG_QUIRKS = ("Q1", "Q7", "Q13")


def _f(default, section, key, doc):
    return field(default=default, metadata={"section": section, "key": key, "doc": doc})


@dataclass(frozen=True)
class PegasusConfig:
    """Balancer settings (Pegasus config keys and defaults).

    Notes
    -----
    ``meta_function_level`` defaults to ``"lively"`` here because Shedlab's question is "what
    would the balancer do"; Pegasus starts in ``meta_function_level_on_start = steady`` (cure
    only, the balancer just counts) and operators switch to lively to balance.

    ``fixed_quirks`` names the bug quirks (:data:`BUG_QUIRKS`) to switch off; empty = the real
    code's behaviour. ``ignored_app_list`` and ``assign_secondary_black_list`` are the remote
    commands ``meta.lb.ignored_app_list`` and ``meta.lb.assign_secondary_black_list``.
    """

    balance_cluster: bool = _f(False, "meta_server", "balance_cluster",
                               "cluster-level balance instead of per table")
    only_primary_balancer: bool = _f(False, "meta_server", "only_primary_balancer",
                                     "never run the secondary stage")
    only_move_primary: bool = _f(False, "meta_server", "only_move_primary",
                                 "never fall back to copy_primary")
    balancer_in_turn: bool = _f(False, "meta_server", "balancer_in_turn",
                                "stop after the first table that produced proposals")
    balance_op_count_per_round: int = _f(10, "meta_server", "balance_op_count_per_round",
                                         "cluster mode: proposals per stage and round")
    min_live_node_count_for_unfreeze: int = _f(3, "meta_server", "min_live_node_count_for_unfreeze",
                                               "freeze when fewer nodes are alive")
    node_live_percentage_threshold_for_update: int = _f(
        65, "meta_server", "node_live_percentage_threshold_for_update",
        "freeze when fewer than this % of nodes are alive")
    meta_function_level: str = _f("lively", "meta_server", "meta_function_level_on_start",
                                  "freezed / steady (cure only) / lively (cure + balance)")
    lb_interval_ms: int = _f(10000, "replication", "lb_interval_ms",
                             "period of check_all_partitions (simulated clock step)")
    replica_assign_delay_ms_for_dropouts: int = _f(
        600000, "meta_server", "replica_assign_delay_ms_for_dropouts",
        "wait this long for a dropped replica to come back before adding a fresh one")
    max_reserved_dropped_replicas: int = _f(1, "meta_server", "max_reserved_dropped_replicas",
                                            "dropped replicas remembered beyond max_replica_count")
    add_secondary_enable_flow_control: bool = _f(False, "meta_server",
                                                 "add_secondary_enable_flow_control",
                                                 "limit add-secondary proposals per node and pass")
    add_secondary_max_count_for_one_node: int = _f(10, "meta_server",
                                                   "add_secondary_max_count_for_one_node",
                                                   "the per-node limit of the flow control")
    mutation_2pc_min_replica_count: int = _f(2, "replication", "mutation_2pc_min_replica_count",
                                             "replicas needed to write (0 = derived)")
    ignored_app_list: tuple = _f((), "meta_server", "ignored_app_list",
                                 "app ids the balancer skips (meta.lb.ignored_app_list)")
    assign_secondary_black_list: tuple = _f((), "meta_server", "assign_secondary_black_list",
                                            "host:port never given a new secondary")
    fixed_quirks: frozenset = _f(frozenset(), "shedlab", "fixed_quirks",
                                 "bug quirks switched off (Q1, Q7, Q13)")

    def __post_init__(self):
        if self.meta_function_level not in FUNCTION_LEVELS:
            raise InputError(f"unknown meta function level {self.meta_function_level!r} "
                             f"(one of {', '.join(FUNCTION_LEVELS)})", field="meta_function_level")
        object.__setattr__(self, "fixed_quirks", frozenset(self.fixed_quirks))
        object.__setattr__(self, "ignored_app_list", tuple(int(x) for x in self.ignored_app_list))
        object.__setattr__(self, "assign_secondary_black_list",
                           tuple(str(x) for x in self.assign_secondary_black_list))
        bad = sorted(self.fixed_quirks - set(BUG_QUIRKS))
        if bad:
            raise InputError(f"quirk(s) {', '.join(bad)} cannot be switched off "
                             f"(switchable: {', '.join(BUG_QUIRKS)})", field="fixed_quirks")
        for name in ("balance_op_count_per_round", "min_live_node_count_for_unfreeze"):
            if getattr(self, name) < 1:
                raise InputError("must be at least 1", field=name)
        for name in ("lb_interval_ms", "replica_assign_delay_ms_for_dropouts",
                     "max_reserved_dropped_replicas", "add_secondary_max_count_for_one_node",
                     "mutation_2pc_min_replica_count"):
            if getattr(self, name) < 0:
                raise InputError("must not be negative", field=name)
        if not 0 <= self.node_live_percentage_threshold_for_update <= 100:
            raise InputError("must be within 0..100", field="node_live_percentage_threshold_for_update")

    def quirk(self, name: str) -> bool:
        """True when quirk ``name`` behaves as in the real code (not switched off)."""
        return name not in self.fixed_quirks

    @property
    def level(self) -> int:
        return FUNCTION_LEVELS[self.meta_function_level]

    def to_ini(self) -> str:
        """The settings as ``config.ini`` lines (``[meta_server]``, ``[replication]``)."""
        sections: dict = {}
        for f in fields(self):
            sec = f.metadata["section"]
            if sec == "shedlab":
                continue
            v = getattr(self, f.name)
            if isinstance(v, bool):
                v = str(v).lower()
            elif isinstance(v, tuple):
                v = ",".join(str(x) for x in v)
            sections.setdefault(sec, []).append(f"{f.metadata['key']} = {v}")
        return "\n".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items())

    @classmethod
    def from_ini(cls, text: str, source: str | None = None, **overrides) -> "PegasusConfig":
        """Read the keys this class knows from a meta server ``config.ini``; others are ignored."""
        cp = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            cp.read_string(text)
        except configparser.Error as exc:
            raise InputError(f"not an ini file: {exc}".splitlines()[0], source=source) from None
        values: dict = {}
        for f in fields(cls):
            sec, key = f.metadata["section"], f.metadata["key"]
            if not cp.has_option(sec, key):
                continue
            raw = cp.get(sec, key).strip()
            try:
                if isinstance(f.default, bool):
                    if raw.lower() not in ("true", "false"):
                        raise ValueError("expected true or false")
                    values[f.name] = raw.lower() == "true"
                elif isinstance(f.default, int):
                    values[f.name] = int(raw)
                elif isinstance(f.default, tuple):
                    values[f.name] = tuple(x.strip() for x in raw.split(",") if x.strip())
                else:
                    values[f.name] = raw
            except ValueError as exc:
                raise InputError(str(exc), source=source, field=f"{sec}.{key}") from None
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes) -> "PegasusConfig":
        """``dataclasses.replace`` shortcut."""
        return replace(self, **changes)


def parse_quirks(text: str | None) -> frozenset:
    """``"all"`` / ``"Q1,Q13"`` -> the set of bug quirks to switch off (``InputError`` if unknown)."""
    if text is None:
        return frozenset()
    items = [x.strip().upper() for x in str(text).split(",") if x.strip()]
    if not items or items == ["ALL"]:
        return frozenset(BUG_QUIRKS)
    bad = [x for x in items if x not in BUG_QUIRKS]
    if bad:
        raise InputError(f"unknown or non-switchable quirk {bad[0]!r} "
                         f"(switchable: {', '.join(BUG_QUIRKS)} or 'all')", field="--no-quirks")
    return frozenset(items)
