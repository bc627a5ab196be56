"""The strategy registry: every :class:`~engine.strategies.spec.StrategySpec`, found once, asked by all.

The pairing rule (a shedding strategy's placement), the manager factory, the pickers, slider sets,
sweep grids and the invariant tests ask this module; no other module names a strategy to decide
behaviour.

Discovery is lazy (the first call imports the strategy modules), so strategy modules may import the
engine freely and the engine may import this module at any time without an import circle:

* the shipped strategy modules, in a fixed order that puts Pulsar's defaults first (the pickers
  show them in registration order), then any other module of ``engine/shedding``,
  ``engine/placement`` or ``engine/extensible`` whose source assigns ``SPEC`` or ``SPECS`` at top level
  (a new strategy module needs no edit here);
* the modules named, comma-separated, in the environment variable ``SHEDLAB_STRATEGY_MODULES``
  (plug-ins, set by the operator; imported once, each defines ``SPEC`` or ``SPECS``);
* :func:`register` (a plug-in registering itself, a test fixture).

The pairing rule is Pulsar's (``ModularLoadManagerImpl.initialize``): a placement strategy that is
also a shedding strategy (AvgShedder) runs only with itself as the shedding strategy, and a strategy
runs only in its own load manager. Where we depart: :func:`placement_for` gives a shedding
strategy's ``requires_placement`` as the placement it is set up with when none is chosen (Pulsar
leaves ``loadBalancerLoadPlacementStrategy`` as configured); :func:`placements_allowed` still lists
every placement Pulsar would accept with it.

Examples
--------
>>> from engine.strategies import registry
>>> registry.spec("org.apache.pulsar.broker.loadbalance.impl.AvgShedder").name
'AvgShedder'
>>> registry.placement_for("AvgShedder"), registry.placement_for("ThresholdShedder")
('AvgShedder', None)
>>> "AvgShedder" in registry.placements_allowed("ThresholdShedder")
False
>>> [s.name for s in registry.specs(role="shedding")][:2]
['ThresholdShedder', 'AvgShedder']
"""
from __future__ import annotations

import importlib
import os
import re
import threading
from pathlib import Path

from .. import config
from ..errors import InputError, UsageError
from .spec import StrategySpec

__all__ = ["specs", "spec", "find", "names", "explains", "placement_for", "placements_allowed", "default_placement",
           "manager_placements", "needs_own_shedding", "paired_placement", "register", "unregister",
           "shedding_name", "placement_name", "fqn", "ENV", "SHEDDING", "PLACEMENT", "FQN", "BUILTIN_MODULES"]

#: environment variable naming plug-in strategy modules (comma-separated, importable names)
ENV = "SHEDLAB_STRATEGY_MODULES"

#: the shipped strategy modules, in registration order (Pulsar's defaults first: the pickers' order)
BUILTIN_MODULES = (
    "engine.shedding.threshold_shedder",
    "engine.placement.least_long_term_message_rate",
    "engine.placement.least_resource_usage_with_weight",
    "engine.shedding.avg_shedder",
    "engine.shedding.overload_shedder",
    "engine.shedding.uniform_load_shedder",
    "engine.placement.round_robin",
    "engine.extensible.transfer_shedder",
    "engine.extensible.placement",
)
#: packages scanned for further strategy modules (a top-level ``SPEC =`` / ``SPECS =``)
_SCANNED = ("shedding", "placement", "extensible")
_DECLARES = re.compile(r"^SPECS?\s*(:[^=\n]*)?=", re.M)

_SPECS: dict[str, StrategySpec] = {}
#: short name -> factory (the strategy class for the shipped ones) of the shedding / placement strategies;
#: the registry's own tables, kept for the callers of the former ``engine.strategies`` module
SHEDDING: dict[str, object] = {}
PLACEMENT: dict[str, object] = {}
#: short name -> Pulsar's fully qualified class name
FQN: dict[str, str] = {}

_lock = threading.RLock()
_state = {"loaded": False, "loading": False}


def _check_keys(s: StrategySpec) -> None:
    """Every key ``s`` reads or sweeps is a key of the config or one ``s`` declares (``new_keys``);
    its declarations are the config's to accept (a new name, or the same declaration again)."""
    own = {k.name for k in s.new_keys}
    for k in (*s.config_keys, *(key for key, _v in s.sweep_grid)):
        if k not in own and not config.is_key(k):
            raise UsageError(f"strategy {s.name}: {k!r} is not a broker.conf key the config knows; a strategy "
                             f"that reads a new key declares it in its module: StrategySpec(new_keys="
                             f"(ConfigKey({k!r}, default, unit, doc, lo, hi, step),))")
    try:
        config.declare_keys(s.new_keys)
    except InputError as exc:
        raise UsageError(f"strategy {s.name}: {exc.message}") from None


def register(s: StrategySpec) -> StrategySpec:
    """Add a strategy, declaring the ``broker.conf`` keys it adds to the config. Registering the same spec
    again is a no-op; another spec under a registered name, or a spec reading a key that is neither the
    config's nor declared by the spec, is a :class:`~engine.errors.UsageError`."""
    if not isinstance(s, StrategySpec):
        raise UsageError(f"register() takes a StrategySpec, got {type(s).__name__}")
    with _lock:
        old = _SPECS.get(s.name)
        if old is not None:
            if old == s:
                return old
            raise UsageError(f"strategy {s.name!r} is already registered (by {old.fqn})")
        _check_keys(s)
        _SPECS[s.name] = s
        if s.is_shedding:
            SHEDDING[s.name] = s.factory
        if s.is_placement:
            PLACEMENT[s.name] = s.factory
        FQN[s.name] = s.fqn
    return s


def unregister(name: str) -> None:
    """Remove a strategy registered under ``name`` (a test's plug-in, after the test)."""
    with _lock:
        gone = _SPECS.pop(name, None)
        if gone is not None:
            kept = {k.name for other in _SPECS.values() for k in other.new_keys}
            config.forget_keys(k.name for k in gone.new_keys if k.name not in kept)
        SHEDDING.pop(name, None)
        PLACEMENT.pop(name, None)
        FQN.pop(name, None)


def _register_module(modname: str) -> None:
    try:
        mod = importlib.import_module(modname)
    except ImportError as exc:
        raise UsageError(f"cannot import strategy module {modname!r}: {exc}") from exc
    found = []
    if getattr(mod, "SPEC", None) is not None:
        found.append(mod.SPEC)
    found.extend(getattr(mod, "SPECS", None) or ())
    if not found:
        raise UsageError(f"strategy module {modname!r} defines neither SPEC nor SPECS")
    for s in found:
        register(s)


def _scanned_modules() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    out = []
    for pkg in _SCANNED:
        for py in sorted((root / pkg).glob("*.py")):
            name = f"engine.{pkg}.{py.stem}"
            if py.stem.startswith("_") or name in BUILTIN_MODULES:
                continue
            try:
                text = py.read_text(encoding="utf-8")
            except OSError:
                continue
            if _DECLARES.search(text):
                out.append(name)
    return out


def _plugin_modules() -> list[str]:
    return [m.strip() for m in os.environ.get(ENV, "").split(",") if m.strip()]


def _load() -> None:
    """Discover the strategies (once; re-entrant calls during discovery see what is registered so far)."""
    if _state["loaded"]:
        return
    with _lock:
        if _state["loaded"] or _state["loading"]:
            return
        _state["loading"] = True
        try:
            for m in (*BUILTIN_MODULES, *_scanned_modules(), *_plugin_modules()):
                _register_module(m)
            _state["loaded"] = True
        finally:
            _state["loading"] = False


# ------------------------------------------------------------------------------------------ queries
def specs(role: str | None = None, load_manager: str | None = None) -> list[StrategySpec]:
    """Registered strategies in registration order; ``role`` ``"shedding"`` / ``"placement"`` and
    ``load_manager`` (a manager that can run them) narrow the list."""
    _load()
    out = list(_SPECS.values())
    if role is not None:
        out = [s for s in out if role in s.roles]
    if load_manager is not None:
        out = [s for s in out if s.runs_in(load_manager)]
    return out


def _resolve(name, table, kind: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"empty {kind} strategy name")
    n = name.strip()
    if n in table:
        return n
    for k, full in FQN.items():  # exact class name first: two packages may share a simple name
        if full == n and k in table:
            return k
    short = n.rsplit(".", 1)[-1]
    if short in table and (n == short or FQN.get(short) == n or n.startswith("org.apache.pulsar.")):
        return short
    low = {k.lower(): k for k in table}
    if short.lower() in low:
        return low[short.lower()]
    known = ", ".join(sorted(table))
    raise UsageError(f"unknown {kind} strategy {name!r}; known: {known}")


def spec(name: str) -> StrategySpec:
    """The spec of a strategy given its short or fully qualified name (any role)."""
    _load()
    return _SPECS[_resolve_any(name)]


def find(name) -> StrategySpec | None:
    """The spec of a strategy given its short or fully qualified name, or None for anything else (a page's
    picker value, a permalink's text)."""
    if not isinstance(name, str) or not name:
        return None
    try:
        return spec(name)
    except UsageError:
        return None


def names(role: str | None = None) -> list[str]:
    """Short names of the registered strategies of ``role`` (all roles when None), in registration order."""
    return [s.name for s in specs(role=role)]


def explains(name) -> frozenset:
    """What a strategy's results carry for figures and why-not (its spec's ``explains``; empty for an
    unknown name)."""
    s = find(name)
    return s.explains if s is not None else frozenset()


def _resolve_any(name) -> str:
    try:
        return _resolve(name, _SPECS, "")
    except UsageError:
        raise UsageError(f"unknown strategy {name!r}; known: {', '.join(sorted(_SPECS))}") from None


def shedding_name(name: str) -> str:
    """Short name of a shedding strategy given its short or fully qualified name."""
    _load()
    return _resolve(name, SHEDDING, "shedding")


def placement_name(name: str) -> str:
    """Short name of a placement strategy given its short or fully qualified name."""
    _load()
    return _resolve(name, PLACEMENT, "placement")


def fqn(name: str) -> str:
    """Pulsar's fully qualified class name of a registered strategy (``name`` itself if unknown)."""
    _load()
    return FQN.get(name, name)


# ------------------------------------------------------------------------------------------ pairing
def placement_for(shedding: str) -> str | None:
    """The placement a shedding strategy is paired with (its ``requires_placement``), or ``None``
    when any placement its load manager runs will do."""
    return spec(shedding_name(shedding)).requires_placement


def placements_allowed(shedding: str) -> list[str]:
    """Placements (short names, registration order) that can run with a shedding strategy: those its
    load manager runs, minus a placement that is itself a shedding strategy of another name
    (Pulsar refuses to start when ``loadBalancerLoadPlacementStrategy`` is AvgShedder and
    ``loadBalancerLoadSheddingStrategy`` is not)."""
    s = spec(shedding_name(shedding))
    return [p.name for p in specs(role="placement", load_manager=s.load_manager)
            if not p.is_shedding or p.name == s.name]


def manager_placements(shedding) -> list[str]:
    """Every placement the shedding strategy's load manager runs (Pulsar's default shedding strategy's
    for an unknown name), including one that is itself a shedding strategy and so runs only with
    itself (:func:`needs_own_shedding`): the pickers list it, disabled."""
    from ..config import PULSAR_4_DEFAULTS

    s = find(shedding) or spec(PULSAR_4_DEFAULTS.loadBalancerLoadSheddingStrategy)
    return [p.name for p in specs(role="placement", load_manager=s.load_manager)]


def needs_own_shedding(placement, shedding) -> bool:
    """True when ``placement`` is also a shedding strategy (one instance plays both roles, as AvgShedder)
    and ``shedding`` is another one: Pulsar refuses to start with that pair."""
    p = find(placement)
    return p is not None and p.is_shedding and p.name != shedding


def paired_placement(shedding) -> str | None:
    """The placement picked with a shedding strategy when one instance plays both roles (AvgShedder's
    ``requires_placement`` is itself), else None: a placement the user chose stays when it can run."""
    s = find(shedding)
    req = s.requires_placement if s is not None and s.is_shedding else None
    p = find(req)
    return req if p is not None and p.is_shedding and req == s.name else None


def default_placement(shedding: str) -> str | None:
    """The placement a shedding strategy gets when the chosen one cannot run with it: its paired
    placement, else Pulsar's default placement when allowed, else the first allowed one."""
    req = placement_for(shedding)
    if req is not None:
        return req
    allowed = placements_allowed(shedding)
    from ..config import LoadBalancerConfig

    pulsar_default = placement_name(LoadBalancerConfig().loadBalancerLoadPlacementStrategy)
    if pulsar_default in allowed:
        return pulsar_default
    return allowed[0] if allowed else None
