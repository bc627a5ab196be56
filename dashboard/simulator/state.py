"""The Simulator page's state: scenario, length, seed and the two sides (A and B) as one small value.

A side is a shedding and a placement strategy on a base config (the scenario file's, or a preset under
the scenario's keys) plus the ``broker.conf`` keys the user changed. The browser keeps the state, the URL
carries it (:mod:`.link`) and every service is called with it; building it from untrusted input never
raises (a bad key or value is dropped with one message naming it).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Mapping

from engine.config import PRESETS, LoadBalancerConfig
from engine.errors import InputError

from ..keys import coerce_values
from ..tuner.state import clamp_int
from .strategies import default_placement, pair_problem, placement_names, shedding_names
from .scenarios import DEFAULT_SCENARIO, PRESET_LABELS, base_config, load
from .snapshot import snapshot_source

__all__ = ["SIDES", "CONTROLLED_KEYS", "MAX_MINUTES", "DEFAULT_PRESET_A", "RunSpec", "SimState", "default_state",
           "coerce_spec", "coerce_state", "source_strategies"]

SIDES = ("a", "b")
#: keys a side sets through its strategy pickers, never as values
CONTROLLED_KEYS = ("loadBalancerLoadSheddingStrategy", "loadBalancerLoadPlacementStrategy", "loadManagerClassName")
#: longest run the page accepts (two simulated days; the CLI has no limit)
MAX_MINUTES = 2880
#: what a new user sees: run A on BIGO's AvgShedder settings (its strategies are the preset's) ...
DEFAULT_PRESET_A = "bigo-avgshedder"
#: ... against run B on Pulsar 4.x's shedding strategy with the placement BIGO compared it with
_DEFAULT_PLACE_B = "LeastResourceUsageWithWeight"


def _short(kind: str, name: str) -> str:
    from engine.strategies import placement_name, shedding_name

    return shedding_name(name) if kind == "shedding" else placement_name(name)


def _preset_side(preset: str) -> tuple[str, str]:
    cfg = PRESETS[preset]
    return (_short("shedding", cfg.loadBalancerLoadSheddingStrategy),
            _short("placement", cfg.loadBalancerLoadPlacementStrategy))


@dataclass(frozen=True)
class RunSpec:
    """One side: strategies (short names), base config (a preset name, "" = the scenario's) and the
    ``broker.conf`` keys changed from that base (as text, sorted)."""

    shed: str = field(default_factory=lambda: _preset_side(DEFAULT_PRESET_A)[0])
    place: str = field(default_factory=lambda: _preset_side(DEFAULT_PRESET_A)[1])
    preset: str = ""
    values: tuple = ()

    @property
    def value_dict(self) -> dict:
        return dict(self.values)

    def with_values(self, values: Mapping[str, str]) -> "RunSpec":
        return replace(self, values=tuple(sorted(values.items())))

    def label(self) -> str:
        """``"AvgShedder"`` (one instance plays both roles) or ``"ThresholdShedder + LeastResourceUsageWithWeight"``."""
        return self.shed if self.place == self.shed else f"{self.shed} + {self.place}"

    def to_json(self) -> dict:
        return {"shed": self.shed, "place": self.place, "preset": self.preset, "values": dict(self.values)}


def _default_a() -> RunSpec:
    shed, place = _preset_side(DEFAULT_PRESET_A)
    return RunSpec(shed, place, DEFAULT_PRESET_A)


def _default_b() -> RunSpec:
    return RunSpec(_preset_side("pulsar-4")[0], _DEFAULT_PLACE_B, "")


@dataclass(frozen=True)
class SimState:
    """The whole page: scenario, minutes (None = the scenario's), seed, and the two sides."""

    scenario: str = DEFAULT_SCENARIO
    minutes: int | None = None
    seed: int = 0
    a: RunSpec = field(default_factory=_default_a)
    b: RunSpec = field(default_factory=_default_b)

    def side(self, s: str) -> RunSpec:
        return self.a if s == "a" else self.b

    def with_side(self, s: str, spec: RunSpec) -> "SimState":
        return replace(self, **{s: spec})

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "minutes": self.minutes, "seed": self.seed, "a": self.a.to_json(),
                "b": self.b.to_json()}

    def digest(self) -> str:
        """A stable hash of what a run depends on (the cache key's last part)."""
        return hashlib.blake2s(json.dumps(self.to_json(), sort_keys=True).encode(), digest_size=12).hexdigest()


def default_state() -> SimState:
    """What a new user sees: BIGO's homogeneous start, BIGO's AvgShedder vs ThresholdShedder + LRUWW."""
    return SimState()


def coerce_spec(data, base: LoadBalancerConfig | None = None, side: str = "") -> tuple[RunSpec, list[str]]:
    """A :class:`RunSpec` from untrusted JSON, and one message per thing dropped or changed.

    ``base`` is the side's base config (scenario + preset); values equal to it are dropped. Pairs
    Pulsar refuses (a placement that needs another shedding strategy, a placement of another load
    manager) are fixed the way the Tuner fixes them, with a message.
    """
    who = f"run {side.upper()}: " if side else ""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        data = {}
    shed = data.get("shed") if isinstance(data.get("shed"), str) else None
    place = data.get("place") if isinstance(data.get("place"), str) else None
    if shed not in shedding_names():
        fallback = RunSpec().shed
        if shed:
            errors.append(f"{who}unknown shedding strategy {shed!r}; using {fallback}")
        shed = fallback
    if place not in placement_names():
        if place:
            errors.append(f"{who}unknown placement strategy {place!r}")
        place = default_placement(shed)
    problem = pair_problem(shed, place)
    if problem:
        alt = default_placement(shed)
        errors.append(f"{who}{problem}; placement set to {alt}")
        place = alt
    preset = data.get("preset") if isinstance(data.get("preset"), str) else ""
    if preset not in PRESET_LABELS:
        errors.append(f"{who}unknown preset {preset[:40]!r}; using the scenario file's config")
        preset = ""
    raw = data.get("values") if isinstance(data.get("values"), Mapping) else {}
    values, bad = coerce_values(raw, skip=CONTROLLED_KEYS, base=base, who=who)
    errors += bad
    return RunSpec(shed, place, preset, tuple(sorted(values.items()))), errors


def coerce_state(data) -> tuple[SimState, list[str]]:
    """A :class:`SimState` from untrusted JSON (the browser's stores, a decoded link); never raises."""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        return default_state(), errors
    d = default_state()
    scen = data.get("scenario") if isinstance(data.get("scenario"), str) else d.scenario
    sc = None
    try:
        sc = load(scen)
    except InputError as exc:
        errors.append(f"{exc} — showing {DEFAULT_SCENARIO}")
        scen = DEFAULT_SCENARIO
        sc = load(scen)
    minutes = clamp_int(data.get("minutes"), None, 1)
    if minutes is not None and minutes > MAX_MINUTES:
        errors.append(f"minutes: at most {MAX_MINUTES} on this page; using {MAX_MINUTES}")
        minutes = MAX_MINUTES
    seed = clamp_int(data.get("seed"), 0, 0, 2**31 - 1)
    sides = {}
    for s in SIDES:
        raw = data.get(s)
        preset = raw.get("preset") if isinstance(raw, Mapping) and isinstance(raw.get("preset"), str) else ""
        base = base_config(sc, preset if preset in PRESET_LABELS else "")
        sides[s], errs = coerce_spec(raw if isinstance(raw, Mapping) else d.side(s).to_json(), base, s)
        errors += errs
    return SimState(scen, minutes, seed, sides["a"], sides["b"]), errors


def source_strategies(state: SimState) -> tuple[SimState, list[str]]:
    """Run A on the strategies of the snapshot's source when the picker switches to a snapshot: an ELM
    snapshot runs the ELM's shedding and placement, a sample its own strategies. Unchanged for a
    scenario file or a source that names none."""
    from ..sources import sample_state

    src = snapshot_source(state.scenario)
    vals = ((sample_state(src) or {}).get("values") or {}) if src else {}
    raw = vals.get("loadBalancerLoadSheddingStrategy")
    if not raw:
        return state, []
    try:
        shed = _short("shedding", raw)
        place = _short("placement", vals["loadBalancerLoadPlacementStrategy"]) if vals.get(
            "loadBalancerLoadPlacementStrategy") else default_placement(shed)
        base = base_config(load(state.scenario))
    except Exception:  # noqa: BLE001 - a name this build does not know: keep the form as it is
        return state, []
    if (state.a.shed, state.a.place, state.a.preset, state.a.values) == (shed, place, "", ()):
        return state, []
    a, errs = coerce_spec({"shed": shed, "place": place, "preset": "", "values": {}}, base, "a")
    return state.with_side("a", a), [f"run A: {a.label()}, the strategies of the snapshot's source"] + errs
