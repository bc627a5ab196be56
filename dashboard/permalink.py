"""The Tuner's state in the URL, and back.

``/tuner?src=sample:bigo-threshold-first-unload&shed=ThresholdShedder&place=LeastResourceUsageWithWeight
&seed=0&loadBalancerDistributeBundlesEvenlyEnabled=false`` — the source, both strategies, the seed and
every changed ``broker.conf`` key under its own name, so a link reads like the config it carries.
Optional: ``step`` (the snapshot of a timeline source).

Decoding is forgiving: an unknown key or a bad value is dropped with one message naming it; the
rest of the link still applies.
"""
from __future__ import annotations

from typing import Mapping
from urllib.parse import parse_qsl, urlencode

from engine.config import LoadBalancerConfig, key_info
from engine.errors import InputError

from .tuner.state import STRATEGY_KEYS, TunerState, coerce_state

__all__ = ["encode", "decode", "decode_query", "flat_params", "RESERVED"]

RESERVED = ("src", "shed", "place", "seed", "step")
#: longest parameter name or value a link may carry (a broker.conf value or a source id is far shorter)
MAX_PARAM_CHARS = 2048


def encode(state: TunerState) -> str:
    """The query string (without ``?``) of a state, in a stable order."""
    items = [("src", state.src), ("shed", state.shed), ("place", state.place), ("seed", str(state.seed))]
    if state.step is not None:
        items.append(("step", str(state.step)))
    items += sorted((k, v) for k, v in state.values if k not in STRATEGY_KEYS)
    return urlencode([(k, v) for k, v in items if v is not None and v != ""], safe=":/,")


def flat_params(params: Mapping) -> dict[str, str]:
    """Query parameters as ``{name: text}``: the last of repeated values, anything not text dropped."""
    flat = {}
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            v = v[-1] if v else ""
        if isinstance(k, str) and isinstance(v, str):
            flat[k] = v
    return flat


def decode(params: Mapping) -> tuple[TunerState | None, list[str]]:
    """A state from query parameters (``layout(**kwargs)`` of a page, or a parsed query string).

    Returns ``(None, [])`` when the parameters carry no Tuner state at all.
    """
    if not params:
        return None, []
    flat = flat_params(params)
    if not (set(flat) & set(RESERVED)) and not any(_is_key(k) for k in flat):
        return None, []
    errors = []
    for k, v in list(flat.items()):  # nothing a link carries is that long: drop it, name it briefly
        if len(k) > MAX_PARAM_CHARS or len(v) > MAX_PARAM_CHARS:
            errors.append(f"link: {k[:60]!r} is longer than {MAX_PARAM_CHARS} characters; ignored")
            del flat[k]
    values = {}
    base = LoadBalancerConfig()
    for k, v in list(flat.items()):
        if k in RESERVED:
            continue
        if k in STRATEGY_KEYS:
            flat.setdefault("shed" if k == STRATEGY_KEYS[0] else "place", v.rsplit(".", 1)[-1])
            continue
        if not _is_key(k):
            errors.append(f"link: unknown key {k[:60]!r} ignored")
            continue
        try:
            base.with_values({k: v})
        except InputError as exc:
            errors.append(f"link: {exc}; ignored")
            continue
        values[k] = v
    data = {"src": flat.get("src", ""), "shed": flat.get("shed"), "place": flat.get("place"), "values": values,
            "seed": flat.get("seed", 0), "step": flat.get("step")}
    for k in ("seed", "step"):
        if flat.get(k) not in (None, "") and not _is_int(flat[k]):
            errors.append(f"link: {k}={flat[k][:20]!r} is not a whole number; ignored")
            data[k] = None if k == "step" else 0
    state, more = coerce_state(data)
    return state, errors + [f"link: {m}" for m in more]


def decode_query(search: str | None) -> tuple[TunerState | None, list[str]]:
    """:func:`decode` of a raw ``?a=b&c=d`` string."""
    if not search:
        return None, []
    return decode(dict(parse_qsl(search.lstrip("?"), keep_blank_values=True)))


def _is_key(k) -> bool:
    try:
        key_info(k)
        return True
    except (KeyError, TypeError):
        return False


def _is_int(v: str) -> bool:
    try:
        int(v)
        return True
    except ValueError:
        return False
