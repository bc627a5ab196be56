"""Start a simulation from the current snapshot: the ``snapshot:<source id>`` picker value.

The shell's source (a sample, an upload, a live cluster or a History minute) becomes the start state of
a run (:mod:`engine.simulator.from_snapshot`): its brokers, bundles and traffic, held steady.
"""
from __future__ import annotations

__all__ = ["SNAPSHOT_PREFIX", "SNAPSHOT_MINUTES", "snapshot_source", "snapshot_scenario_id", "snapshot_scenario"]

#: the current snapshot source as the start state (engine.simulator.from_snapshot): "snapshot:<source id>"
SNAPSHOT_PREFIX = "snapshot:"
#: length of a run started from a snapshot when the form leaves minutes empty
SNAPSHOT_MINUTES = 60


def snapshot_source(scenario_id) -> str | None:
    """The source id of a ``snapshot:<source id>`` picker value (None for any other value)."""
    if isinstance(scenario_id, str) and scenario_id.startswith(SNAPSHOT_PREFIX):
        return scenario_id[len(SNAPSHOT_PREFIX):]
    return None


def snapshot_scenario_id(source_id: str) -> str:
    """The picker value that starts the simulation from ``source_id``'s snapshot."""
    return SNAPSHOT_PREFIX + source_id


def snapshot_scenario(source_id: str):
    """The :class:`~engine.simulator.from_snapshot.SnapshotScenario` of a source (its last step): the
    source's own broker.conf values (a sample's, a History minute's backtest, an ELM upload's shedding and
    placement) are the scenario's config."""
    from engine.simulator.from_snapshot import scenario_from_snapshot

    from ..sources import get_snapshot, parse_source_id, sample_state, source_info

    parse_source_id(source_id)  # a malformed id raises InputError before anything is read
    info = source_info(source_id)
    snap = get_snapshot(source_id)
    values = (sample_state(source_id) or {}).get("values") or {}
    label = str(info.get("label") or source_id)[:120]
    kind = "ELM snapshot" if info.get("elm") else "snapshot"
    step = f" (step {snap.step + 1} of {snap.steps})" if snap.steps > 1 else ""
    return scenario_from_snapshot(snap.ld, minutes=SNAPSHOT_MINUTES, config=values, name=f"{kind}: {label}",
                                  title=f"{label}{step}, traffic held steady")
