"""The Simulator's scenarios: the picker's options, loading a picker value safely, facts, base configs.

A picker value is a shipped scenario name (``findings/NAME`` for the calibrated ones), an uploaded
``scenario:<hash>`` or ``snapshot:<source id>`` (:mod:`.snapshot`); anything else is refused — a browser
value is never used as a path.
"""
from __future__ import annotations

import re
from functools import lru_cache

from engine.config import PRESETS, LoadBalancerConfig
from engine.errors import InputError

from .snapshot import snapshot_scenario, snapshot_source

__all__ = ["DEFAULT_SCENARIO", "PRESET_LABELS", "scenario_options", "load", "scenario_facts", "base_config"]

DEFAULT_SCENARIO = "bigo-homogeneous-start"
#: base config of a side: "" = the scenario file's (its preset, else Pulsar 4.x) + its keys
PRESET_LABELS = {"": "scenario file", "pulsar-4": "Pulsar 4.x defaults", "pulsar-5": "Pulsar 5.0 defaults",
                 "bigo-avgshedder": "BIGO AvgShedder"}
_SHIPPED = re.compile(r"(findings/)?[a-z0-9][a-z0-9-]{0,80}")  # findings/: calibrated scenarios
_UPLOADED = re.compile(r"scenario:[0-9a-f]{20}")


@lru_cache(maxsize=1)
def _shipped() -> tuple:
    from engine.simulator import list_scenarios, load_scenario
    from engine.simulator.findings import FINDINGS_DIR

    # the calibrated scenarios of the field findings (samples/scenarios/findings/), as "findings/NAME"
    found = [{"name": f"findings/{p.stem}", "title": sc.title, "description": sc.description, "path": str(p)}
             for p in sorted(FINDINGS_DIR.glob("*.yaml")) for sc in [load_scenario(p)]]
    return tuple(list_scenarios()) + tuple(found)


def scenario_options(sid=None, extra: str | None = None) -> list[dict]:
    """Options of the scenario picker: shipped scenarios, then this session's uploads."""
    from ..sources import list_scenarios as session_scenarios

    opts = [{"label": f"{s['name']} — {s['title']}", "value": s["name"], "title": s["description"]}
            for s in _shipped()]
    for x in session_scenarios(sid) if sid else []:
        title = x.get("title") or x.get("name") or ""
        opts.append({"label": f"Uploaded · {x['label']}" + (f" — {title}" if title else ""), "value": x["id"]})
    if extra and extra not in {o["value"] for o in opts}:
        try:
            sc = load(extra)
            what = "The current snapshot" if snapshot_source(extra) else "Uploaded"
            opts.append({"label": f"{what} · {sc.title or sc.name}", "value": extra})
        except InputError:
            pass
    return opts


@lru_cache(maxsize=32)
def _load_cached(scenario_id: str):
    from engine.simulator import load_scenario, parse_scenario

    if _UPLOADED.fullmatch(scenario_id):
        from ..sources import get_scenario

        got = get_scenario(scenario_id)
        return parse_scenario(got["data"], source=got["info"].get("label", "upload"))
    if snapshot_source(scenario_id) is not None:
        return snapshot_scenario(snapshot_source(scenario_id))
    return load_scenario(scenario_id)


def load(scenario_id):
    """The validated :class:`~engine.simulator.Scenario` of a picker value (a shipped name, an
    uploaded ``scenario:<hash>``, or ``snapshot:<source id>``: the snapshot of a sample, upload, live or
    History source as the start state, :mod:`engine.simulator.from_snapshot`). Anything else raises
    :class:`InputError` — a browser value is never used as a path."""
    if not isinstance(scenario_id, str) or not scenario_id:
        raise InputError("no scenario chosen", field="scenario")
    if _UPLOADED.fullmatch(scenario_id) or (snapshot_source(scenario_id) is not None and len(scenario_id) <= 200):
        return _load_cached(scenario_id)
    if not _SHIPPED.fullmatch(scenario_id) or scenario_id not in {s["name"] for s in _shipped()}:
        raise InputError(f"unknown scenario {scenario_id[:60]!r}", field="scenario")
    return _load_cached(scenario_id)


def scenario_facts(sc) -> dict:
    """Small facts shown beside the picker."""
    started = sum(1 for b in sc.brokers if b.join == 0)
    return {"name": sc.name, "title": sc.title or sc.name, "description": sc.description, "minutes": sc.minutes,
            "brokers": len(sc.brokers), "started": started, "namespaces": len(sc.namespaces),
            "bundles": sum((n.bundles or 0) for n in sc.namespaces), "events": len(sc.events),
            "workloads": len(sc.workloads)}


def base_config(sc, preset: str = "") -> LoadBalancerConfig:
    """A side's base: ``preset`` (or the scenario's own) + the scenario's ``config`` keys."""
    return sc.lb_config(PRESETS[preset] if preset else None)
