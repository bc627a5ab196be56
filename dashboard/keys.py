"""Which ``broker.conf`` keys the Tuner shows, grouped, with slider ranges and value formatting.

The keys come from the strategy registry (each spec's ``config_keys``) plus the keys the load manager
running the shedding strategy reads (``engine.config.LOAD_MANAGER_KEYS`` by the spec's
``load_manager``), so a strategy added to the registry gets its sliders without touching the
dashboard.

Values travel through the browser as ``broker.conf`` strings (``"10"``, ``"0.9"``, ``"false"``):
exact, JSON-friendly and what :meth:`engine.config.LoadBalancerConfig.with_values` parses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine.config import LOAD_MANAGER_KEYS, PULSAR_4_DEFAULTS, PULSAR_5_DEFAULTS, key_info
from engine.errors import InputError, ShedlabError
from engine.strategies import registry
from engine.strategies.spec import MODULAR

__all__ = ["WEIGHT_KEYS", "MANAGER_KEYS", "Group", "KeySpec", "key_spec", "groups_for", "fmt_conf_value",
           "value_to_conf", "conf_to_value", "format_value", "shedding_names", "placement_names",
           "strategy_class", "uses_own_manager", "allowed_placements", "default_placement", "needs_own_shedding",
           "paired_placement", "explains"]

#: the modular load manager's resource weights (PIP-357 spelling)
WEIGHT_KEYS = ("loadBalancerCPUResourceWeight", "loadBalancerDirectMemoryResourceWeight",
               "loadBalancerBandwidthInResourceWeight", "loadBalancerBandwidthOutResourceWeight",
               "loadBalancerMemoryResourceWeight")

#: keys ModularLoadManager's selectBroker / doLoadShedding read whatever the strategies are (§4.2, §4.3)
MANAGER_KEYS = LOAD_MANAGER_KEYS[MODULAR]

_MB = 1024 * 1024


def _spec(name: str | None):
    """The registry's spec of a strategy, or None for an unknown name."""
    if not name:
        return None
    try:
        return registry.spec(name)
    except ShedlabError:
        return None


def _default_shedding() -> str:
    return registry.shedding_name(PULSAR_4_DEFAULTS.loadBalancerLoadSheddingStrategy)


def shedding_names() -> list[str]:
    """Registered shedding strategies (short names), in the registry's order (Pulsar's defaults first)."""
    return [s.name for s in registry.specs(role="shedding")]


def placement_names() -> list[str]:
    """Registered placement strategies (short names), in the registry's order (Pulsar's defaults first)."""
    return [s.name for s in registry.specs(role="placement")]


def allowed_placements(shedding: str | None) -> list[str]:
    """Placements the shedding strategy's load manager runs (Pulsar's default shedding strategy for
    an unknown name). A placement that is itself a shedding strategy is listed although it runs only
    with itself (:func:`needs_own_shedding`): the pickers show it, disabled, and picking it picks its
    shedding strategy too."""
    s = _spec(shedding) or registry.spec(_default_shedding())
    return [p.name for p in registry.specs(role="placement", load_manager=s.load_manager)]


def needs_own_shedding(placement: str | None, shedding: str | None) -> bool:
    """True when ``placement`` is also a shedding strategy (one instance plays both roles, as
    AvgShedder) and ``shedding`` is another one: Pulsar refuses to start with that pair."""
    p = _spec(placement)
    return p is not None and p.is_shedding and p.name != shedding


def default_placement(shedding: str | None) -> str:
    """The placement a shedding strategy gets when the chosen one cannot run with it
    (:func:`engine.strategies.registry.default_placement`)."""
    s = _spec(shedding)
    return (registry.default_placement(s.name if s is not None else _default_shedding())
            or (allowed_placements(shedding) or [""])[0])


def paired_placement(shedding: str | None) -> str | None:
    """The placement picked with a shedding strategy when one instance plays both roles (AvgShedder's
    ``requires_placement`` is itself), else None: the user's placement stays when it can run."""
    s = _spec(shedding)
    req = s.requires_placement if s is not None and s.is_shedding else None
    p = _spec(req)
    return req if p is not None and p.is_shedding and req == s.name else None


def strategy_class(kind: str, name: str | None):
    """The factory (the class, for the shipped strategies) of a registered shedding
    (``kind="shedding"``) or placement strategy, or None."""
    s = _spec(name)
    if s is None or kind not in s.roles:
        return None
    return s.factory


def uses_own_manager(shedding: str | None) -> bool:
    """True when the shedding strategy runs in another load manager than the modular one (the
    extensible one brings its own scheduler, filters and keys)."""
    s = _spec(shedding)
    return s is not None and s.load_manager != MODULAR


def explains(name: str | None) -> frozenset:
    """What a strategy's results carry for the figures and why-not (its spec's ``explains``)."""
    s = _spec(name)
    return s.explains if s is not None else frozenset()


# ------------------------------------------------------------------------------------------ formatting
@dataclass(frozen=True)
class Fmt:
    """How a value of a key is shown: ``value * scale`` with ``digits`` decimals and ``unit``."""

    unit: str = ""
    scale: float = 1.0
    digits: int = 0

    def to_json(self) -> dict:
        return {"unit": self.unit, "scale": self.scale, "digits": self.digits}


def _fmt_for(unit: str, step) -> Fmt:
    if unit == "B/s":
        return Fmt("MB/s", 1.0 / _MB, 0 if (step or 0) >= _MB else 2)
    digits = 0
    if step is not None and not float(step).is_integer():
        digits = max(0, min(4, -int(math.floor(math.log10(abs(float(step)) or 1)))))
    shown = {"ratio": "", "weight": "×", "x": "×", "points": "pts", "percent": "%"}.get(unit, unit)
    return Fmt(shown, 1.0, digits)


def format_value(v, fmt: Fmt) -> str:
    """``12`` with ``Fmt("%")`` → ``'12 %'``; the same rule the clientside label uses."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "—"
    if not isinstance(v, (int, float)):
        text = fmt_conf_value(v)
        return text if text else "(empty)"
    x = float(v) * fmt.scale
    s = f"{x:,.{fmt.digits}f}"
    if not fmt.unit:
        return s
    return f"{s}{fmt.unit}" if fmt.unit == "×" else f"{s} {fmt.unit}"


def fmt_conf_value(v) -> str:
    """A typed value as ``broker.conf`` text (``True`` → ``'true'``, ``0.9`` → ``'0.9'``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return repr(float(v))
        return repr(round(v, 10))
    if isinstance(v, (frozenset, set)):
        return ",".join(sorted(v))
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


def canon_conf_value(key: str, text: str) -> str:
    """A key's value text in canonical form (``"0.90"`` → ``"0.9"``), so "changed from the default"
    is a string comparison; :class:`~engine.errors.InputError` naming the key for a bad value."""
    return fmt_conf_value(getattr(PULSAR_4_DEFAULTS.with_values({key: str(text).strip()}), key))


def coerce_values(raw, *, skip=(), base=None, who: str = "") -> tuple[dict, list[str]]:
    """``{key: canonical text}`` from untrusted ``{key: value}`` (the browser's stores, a link), and one
    message per entry dropped (prefixed by ``who``): keys in ``skip`` are left out silently, unknown
    keys and bad values with a message, values equal to ``base``'s (when given) as unchanged."""
    values, errors = {}, []
    for k, v in (raw.items() if hasattr(raw, "items") else ()):
        if not isinstance(k, str) or k in skip:
            continue
        if isinstance(v, (bool, int, float)):
            v = fmt_conf_value(v)
        if not isinstance(v, str):
            errors.append(f"{who}field {k[:60]}: not a value; ignored")
            continue
        if not _known(k):
            errors.append(f"{who}field {k[:60]}: unknown load-balancer key; ignored")
            continue
        try:
            canon = canon_conf_value(k, v)
        except InputError as exc:
            errors.append(f"{who}{exc}; ignored")
            continue
        if base is None or canon != fmt_conf_value(getattr(base, k)):
            values[k] = canon
    return values, errors


# ------------------------------------------------------------------------------------------ key specs
@dataclass(frozen=True)
class KeySpec:
    """One control of the Tuner: a ``broker.conf`` key, its widget and its range."""

    key: str
    kind: str  # "slider" | "bool" | "text"
    type: str  # config field type: int | float | bool | str | ...
    unit: str
    doc: str
    default: object  # Pulsar 4.x default
    default5: object  # Pulsar 5.0 default
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    fmt: Fmt = field(default_factory=Fmt)

    def range_for(self, value) -> tuple[float, float]:
        """The slider range, widened to include ``value`` (an imported or linked value may be outside)."""
        lo, hi = self.lo, self.hi
        try:
            v = float(value)
        except (TypeError, ValueError):
            return lo, hi
        return (min(lo, v), max(hi, v))

    def marks(self, value=None) -> dict:
        """Slider marks: the ends, Pulsar's default (marked ◆) and the 5.0 default when it differs.

        A default's label near an end is anchored inside the track instead of centred on its tick
        (it would be cut off); :func:`spaced_marks` drops the labels that would overlap.
        """
        lo, hi = self.range_for(value)
        span = float(hi - lo) or 1.0

        def lab(x):
            return format_value(x, self.fmt)

        def anchored(x, style):
            f = (float(x) - lo) / span
            if f < 0.1:
                style["transform"] = "translateX(-8px)"
            elif f > 0.9:
                style["transform"] = "translateX(calc(-100% + 8px))"
            return style

        marks = {_num(x): {"label": lab(x), "style": anchored(x, {})} for x in (lo, hi)}
        if isinstance(self.default, (int, float)) and not isinstance(self.default, bool):
            marks[_num(self.default)] = {"label": "◆ " + lab(self.default),
                                         "style": anchored(self.default, {"color": "#1f6feb", "fontWeight": 600})}
        if (isinstance(self.default5, (int, float)) and not isinstance(self.default5, bool)
                and self.default5 != self.default):
            marks[_num(self.default5)] = {"label": "5.0: " + lab(self.default5),
                                          "style": anchored(self.default5, {"color": "#8250df"})}
        return marks

    def to_value(self, conf: str):
        return conf_to_value(self, conf)


def _num(x):
    x = float(x)
    return int(x) if x.is_integer() else x


def spaced_marks(marks: dict, lo, hi, gap: float = 0.16) -> dict:
    """Slider marks whose labels do not overlap: the defaults (◆ 4.x, then 5.0) first, then the ends,
    each dropped when closer than ``gap`` of the range to a mark already kept (the defaults are also
    written under the slider)."""
    span = float(hi) - float(lo) or 1.0
    label = {k: v.get("label", "") if isinstance(v, dict) else v for k, v in marks.items()}
    special = [k for k in marks if label[k].startswith(("◆", "5.0:"))]
    ranked = special + sorted((k for k in marks if k not in special), key=lambda k: k != lo)
    kept: dict = {}
    for k in ranked:
        if all(abs(float(k) - float(j)) / span >= gap for j in kept):
            kept[k] = marks[k]
    return kept


def key_spec(key: str) -> KeySpec:
    """The control for ``key`` from the config metadata (:func:`engine.config.key_info`)."""
    info = key_info(key)
    t = info["type"]
    d4 = info["default"]
    d5 = getattr(PULSAR_5_DEFAULTS, key)
    if t == "bool":
        return KeySpec(key, "bool", t, info["unit"], info["doc"], d4, d5)
    if t in ("int", "float") and info.get("lo") is not None and info.get("hi") is not None:
        step = info.get("step")
        if step is None:
            step = 1 if t == "int" else (float(info["hi"]) - float(info["lo"])) / 100.0
        return KeySpec(key, "slider", t, info["unit"], info["doc"], d4, d5, float(info["lo"]), float(info["hi"]),
                       float(step), _fmt_for(info["unit"], step))
    return KeySpec(key, "text", t, info["unit"], info["doc"], d4, d5, fmt=_fmt_for(info["unit"], None))


def value_to_conf(spec: KeySpec, v) -> str:
    """A widget value as ``broker.conf`` text (sliders snap to their step; ints stay ints)."""
    if spec.kind == "bool":
        if isinstance(v, str):
            return "true" if v.strip().lower() == "true" else "false"
        return "true" if v else "false"
    if spec.kind == "text":
        return "" if v is None else str(v).strip()
    if v is None:
        return fmt_conf_value(spec.default)
    x = float(v)
    if spec.step:
        base = spec.lo if spec.lo is not None else 0.0
        x = base + round((x - base) / spec.step) * spec.step  # snap to the slider grid
        if spec.step < 1:
            x = round(x, -int(math.floor(math.log10(spec.step))) + 2)
    if spec.type == "int":
        return str(int(round(x)))
    return fmt_conf_value(float(x))


def conf_to_value(spec: KeySpec, conf: str | None):
    """``broker.conf`` text → the widget value (``None`` → the 4.x default)."""
    if conf is None:
        conf = fmt_conf_value(spec.default)
    if spec.kind == "bool":
        return str(conf).strip().lower() == "true"
    if spec.kind == "text":
        return conf
    try:
        x = float(conf)
    except ValueError:
        x = float(spec.default)
    return int(x) if spec.type == "int" else x


# ------------------------------------------------------------------------------------------ groups
@dataclass(frozen=True)
class Group:
    """A titled group of controls (shedding, placement, weights, load manager)."""

    title: str
    subtitle: str
    keys: tuple


def groups_for(shedding: str | None, placement: str | None) -> list[Group]:
    """The controls to show for a pair of strategies, grouped, each key once.

    Shedding keys first, then the placement keys it does not share, the resource weights either
    reads, and the load manager's own keys (modular manager only).
    """
    sspec, pspec = _spec(shedding), _spec(placement)
    skeys = sspec.config_keys if sspec is not None else ()
    own = uses_own_manager(shedding)
    pkeys = pspec.config_keys if pspec is not None else ()
    seen: set = set()
    out = []

    def take(keys, pred=lambda k: True):
        got = []
        for k in keys:
            if k in seen or not pred(k) or not _known(k):
                continue
            seen.add(k)
            got.append(k)
        return tuple(got)

    not_w = lambda k: k not in WEIGHT_KEYS  # noqa: E731
    s = take(skeys, not_w)
    if s:
        out.append(Group(f"Shedding · {shedding}", "what the shedding strategy compares", s))
    p = take(pkeys, lambda k: not_w(k) and k not in MANAGER_KEYS)
    if p:
        out.append(Group(f"Placement · {placement}", "how a destination is chosen", p))
    w = take([k for k in WEIGHT_KEYS if k in skeys or k in pkeys])
    if w:
        out.append(Group("Resource weights", "max(cpu·w, direct memory·w, bandwidth in·w, out·w)", w))
    mkeys = LOAD_MANAGER_KEYS.get(sspec.load_manager if sspec is not None else MODULAR, ())
    m = take(mkeys)
    if m:
        out.append(Group("Load manager", "the scheduler, the grace period, the top-K report and the candidate filters"
                         if own else "candidate filters and the overload retry of selectBroker", m))
    return out


def _known(key: str) -> bool:
    try:
        key_info(key)
        return True
    except KeyError:
        return False


def default_conf(key: str) -> str:
    """Pulsar 4.x default of a key as ``broker.conf`` text (the release: ``""``, read from the data)."""
    if key == "pulsarVersion":
        return ""
    return fmt_conf_value(getattr(PULSAR_4_DEFAULTS, key))
