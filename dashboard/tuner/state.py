"""The Tuner's whole state as one small value: source, strategies, changed keys, seed.

This is what the browser keeps (in the session ``CONFIG`` store), what a permalink encodes and what
every service (analysis, report, why-not, export) is called with. Building the engine config from
it never raises: a bad key or value is dropped and reported in one line naming it, so a broken
permalink or an odd imported file cannot lose the rest of the user's settings.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from engine.config import PULSAR_4_DEFAULTS, LoadBalancerConfig, key_info, release_defaults, to_broker_conf
from engine.releases import DEFAULT_VERSION, VersionReading, version_from_reports
from engine.errors import InputError, ShedlabError
from engine.strategies import registry

from engine.strategies import registry

from ..keys import coerce_values

__all__ = ["TunerState", "STRATEGY_KEYS", "build_config", "state_from_config", "changed_values", "coerce_state",
           "clamp_int", "DEFAULT_SHED", "DEFAULT_PLACE"]

_DEFAULT = LoadBalancerConfig()
#: Pulsar's default strategies (short names), from the config's defaults
DEFAULT_SHED = _DEFAULT.shedding_strategy
DEFAULT_PLACE = _DEFAULT.placement_strategy

#: the two keys the state keeps as ``shed`` / ``place`` (short names) rather than as values
STRATEGY_KEYS = ("loadBalancerLoadSheddingStrategy", "loadBalancerLoadPlacementStrategy")


@dataclass(frozen=True)
class TunerState:
    """Source, strategies (short names), every changed ``broker.conf`` key (as text) and the seed."""

    src: str = ""
    shed: str = DEFAULT_SHED
    place: str = DEFAULT_PLACE
    values: tuple = ()  # sorted ((key, text), ...)
    seed: int = 0
    step: int | None = None  # timeline step (None = last)

    @property
    def value_dict(self) -> dict:
        return dict(self.values)

    def with_values(self, values: Mapping[str, str]) -> "TunerState":
        return replace(self, values=tuple(sorted(values.items())))

    def to_json(self) -> dict:
        return {"src": self.src, "shed": self.shed, "place": self.place, "values": dict(self.values),
                "seed": self.seed, "step": self.step}

    @classmethod
    def from_json(cls, data) -> "TunerState":
        """From the browser's Store (anything malformed falls back to defaults, never raises)."""
        state, _ = coerce_state(data)
        return state


def clamp_int(v, default, lo=None, hi=None):
    """``v`` as an int within ``[lo, hi]``; ``default`` when it is not a finite number."""
    try:
        x = int(float(v))
    except (TypeError, ValueError, OverflowError):
        return default
    if lo is not None:
        x = max(lo, x)
    if hi is not None:
        x = min(hi, x)
    return x


def coerce_state(data) -> tuple[TunerState, list[str]]:
    """A :class:`TunerState` from untrusted JSON, with one message per thing dropped."""
    errors: list[str] = []
    if not isinstance(data, Mapping):
        return TunerState(), errors
    shed = data.get("shed") if isinstance(data.get("shed"), str) else None
    place = data.get("place") if isinstance(data.get("place"), str) else None
    raw = data.get("values") if isinstance(data.get("values"), Mapping) else {}
    # the strategy keys may come as values (a sample's or a broker.conf's keys): they set shed / place
    if not shed and isinstance(raw.get(STRATEGY_KEYS[0]), str):
        shed = raw[STRATEGY_KEYS[0]].rsplit(".", 1)[-1]
    if not place and isinstance(raw.get(STRATEGY_KEYS[1]), str):
        # the fully qualified name: the extensible LeastResourceUsageWithWeight shares the modular one's
        # short class name (``registry.placement_name`` tells them apart by package)
        place = raw[STRATEGY_KEYS[1]].strip()
    try:
        shed = registry.shedding_name(shed) if shed else DEFAULT_SHED
    except ShedlabError:
        errors.append(f"unknown shedding strategy {shed[:80]!r}; using {DEFAULT_SHED}")
        shed = DEFAULT_SHED
    try:
        place = registry.placement_name(place) if place else DEFAULT_PLACE
    except ShedlabError:
        errors.append(f"unknown placement strategy {place[:80]!r}; using {DEFAULT_PLACE}")
        place = DEFAULT_PLACE
    values, bad = coerce_values(raw, skip=STRATEGY_KEYS, base=_DEFAULT)
    errors += bad
    step = data.get("step")
    state = TunerState(
        src=data.get("src") if isinstance(data.get("src"), str) and len(data["src"]) <= 256 else "",  # ids are short
        shed=shed, place=place, values=tuple(sorted(values.items())),
        seed=clamp_int(data.get("seed"), 0, 0, 2**31 - 1),
        step=None if step in (None, "") else clamp_int(step, None, 0),
    )
    return state, errors


def build_config(state: TunerState, versions: Mapping | None = None,
                 reading: VersionReading | None = None) -> tuple[LoadBalancerConfig, list[str]]:
    """The engine config of a state, and one line per key or value that had to be dropped.

    ``versions``: the brokers' reported versions; ``reading``: :func:`~engine.releases.version_from_reports`
    of them when the caller keeps it (a snapshot's is read once: 10 ms at 10,000 brokers).

    Keys are applied one by one, so a bad value loses only itself. A placement that is itself a
    shedding strategy (AvgShedder) with a different shedding strategy is what Pulsar refuses at
    start-up: reported, and the placement falls back to the shedding strategy's default placement
    (:func:`engine.strategies.registry.default_placement`) so the page still shows a decision.
    """
    errors: list[str] = []
    chosen = state.value_dict.get("pulsarVersion") or ""
    if not chosen and versions:  # read from the data: the brokers' brokerVersionString
        if reading is None:
            reading = version_from_reports(dict(versions))
        if reading.chosen:
            chosen = reading.chosen
        elif reading.mixed:
            errors.append(f"{reading.note}; deciding as Pulsar {DEFAULT_VERSION} until you pick the leader's "
                          f"release")
    try:
        cfg = release_defaults(chosen or None)
    except InputError as exc:
        errors.append(f"{exc}; ignored")
        cfg = release_defaults(None)
    for k, v in state.values:
        if k == "pulsarVersion":
            continue
        try:
            key_info(k)
        except KeyError:
            errors.append(f"field {k}: unknown load-balancer key; ignored")
            continue
        try:
            cfg = cfg.with_values({k: v})
        except InputError as exc:
            errors.append(f"{exc}; ignored")
    shed, place = state.shed, state.place
    if shed not in registry.names("shedding"):
        errors.append(f"unknown shedding strategy {shed!r}; using {DEFAULT_SHED}")
        shed = DEFAULT_SHED
    if place not in registry.names("placement"):
        errors.append(f"unknown placement strategy {place!r}; using {DEFAULT_PLACE}")
        place = DEFAULT_PLACE
    if registry.needs_own_shedding(place, shed):
        alt = registry.default_placement(shed)
        errors.append(f"loadBalancerLoadPlacementStrategy={place} needs loadBalancerLoadSheddingStrategy="
                      f"{place} (Pulsar refuses to start with {shed}); showing {alt}")
        place = alt
    elif place not in registry.manager_placements(shed):
        alt = registry.default_placement(shed)
        errors.append(f"placement {place} does not run with {shed}'s load manager; showing {alt}")
        place = alt
    cfg = cfg.with_values({STRATEGY_KEYS[0]: registry.fqn(shed), STRATEGY_KEYS[1]: registry.fqn(place)})
    return cfg, errors


def changed_values(cfg: LoadBalancerConfig, base: LoadBalancerConfig | None = None) -> dict[str, str]:
    """``{key: text}`` of every key that differs from Pulsar 4.x (strategy keys excluded)."""
    out = {}
    for line in to_broker_conf(cfg, base or PULSAR_4_DEFAULTS).splitlines():
        k, _, v = line.partition("=")
        if k and k not in STRATEGY_KEYS:
            out[k] = v
    return out


def state_from_config(cfg: LoadBalancerConfig, src: str = "", seed: int = 0, step=None) -> TunerState:
    """The state that reproduces ``cfg`` (its release too, unless it is the default one)."""
    values = changed_values(cfg)
    if cfg.pulsarVersion != DEFAULT_VERSION:
        values["pulsarVersion"] = cfg.pulsarVersion
    return TunerState(src=src, shed=cfg.shedding_strategy, place=cfg.placement_strategy,
                      values=tuple(sorted(values.items())), seed=seed, step=step)
