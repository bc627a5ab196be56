"""Typed getters for scenario validation: every problem an :class:`~engine.errors.InputError` naming
the file and the field path (``brokers[2].cores``, ``events[0].broker``...).

>>> _V("s.yaml").num({"cores": -1}, "cores", "brokers[0]", lo=0)
Traceback (most recent call last):
...
engine.errors.InputError: s.yaml: field brokers[0].cores: must be at least 0, got -1
"""
from __future__ import annotations

import math
import re
import string

from ..errors import InputError
from ..limits import MAX_SCENARIO_NUMBER

__all__ = []

class _V:
    """Typed getters raising :class:`InputError` with the file and the field path."""

    def __init__(self, source):
        self.source = source

    def err(self, path, msg):
        return InputError(msg, source=self.source, field=path or None)

    def obj(self, x, path) -> dict:
        if not isinstance(x, dict):
            raise self.err(path, f"expected a mapping, got {_tname(x)}")
        return x

    def lst(self, x, path) -> list:
        if not isinstance(x, list):
            raise self.err(path, f"expected a list, got {_tname(x)}")
        return x

    def keys(self, d, allowed, path):
        bad = [k for k in d if k not in allowed]
        if bad:
            hint = ""
            if isinstance(bad[0], bool):
                hint = " (YAML reads an unquoted on/off/yes/no key as a boolean: quote it)"
            raise self.err(_j(path, str(bad[0])), f"unknown key{hint}; expected one of: {', '.join(sorted(allowed))}")

    def num(self, d, key, path, default=None, *, lo=None, hi=None, integer=False, required=False,
            allow_none=False, lo_open=False):
        f = _j(path, key)
        if key not in d or d[key] is None:
            if required:
                raise self.err(f, "required")
            if d.get(key, 0) is None and allow_none:
                return None
            return default
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, str):
                try:
                    v = float(v)
                except ValueError:
                    raise self.err(f, f"expected a number, got {v!r}") from None
            else:
                raise self.err(f, f"expected a number, got {_tname(v)}")
        v = float(v)
        if not math.isfinite(v):
            raise self.err(f, f"expected a finite number, got {v}")
        if hi is None and abs(v) > MAX_SCENARIO_NUMBER:  # every number has a range (engine.limits)
            raise self.err(f, f"out of range: {v:g} is larger than {MAX_SCENARIO_NUMBER:g}")
        if integer:
            if not v.is_integer():
                raise self.err(f, f"expected an integer, got {v:g}")
            v = int(v)
        if lo is not None and (v <= lo if lo_open else v < lo):
            raise self.err(f, f"must be {'greater than' if lo_open else 'at least'} {lo:g}, got {v:g}")
        if hi is not None and v > hi:
            raise self.err(f, f"must be at most {hi:g}, got {v:g}")
        return v

    def string(self, d, key, path, default=None, required=False):
        f = _j(path, key)
        if key not in d or d[key] is None:
            if required:
                raise self.err(f, "required")
            return default
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.err(f, f"expected a string, got {_tname(v)}")
        v = str(v).strip()
        if required and not v:
            raise self.err(f, "must not be empty")
        return v


def _tname(x) -> str:
    return "null" if x is None else {dict: "mapping", list: "list", str: "string", bool: "boolean"}.get(
        type(x), type(x).__name__)


def _j(path, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _expand(v: _V, items, path):
    """Entries with ``count: N`` expand into N copies whose string fields get ``{i}`` formatted."""
    out = []
    for i, raw in enumerate(v.lst(items, path)):
        p = _j(path, i)
        d = v.obj(raw, p)
        n = v.num(d, "count", p, None, lo=1, hi=100_000, integer=True)
        if n is None:
            out.append((p, d))
            continue
        start = v.num(d, "first", p, 0, lo=0, integer=True)
        for j in range(start, start + n):
            e = {}
            for k, x in d.items():
                if k in ("count", "first"):
                    continue
                if isinstance(x, str) and "{" in x:
                    _check_template(v, x, _j(p, k))
                    try:
                        x = x.format(i=j)
                    except (KeyError, IndexError, ValueError) as exc:
                        raise v.err(_j(p, k), f"bad template {x!r}: {exc}") from None
                e[k] = x
            out.append((f"{p}#{j}", e))
    return out


_TEMPLATE_SPEC = re.compile(r"[<>^=]?0?\d{0,2}[dxXob]?")


def _check_template(v: _V, x: str, path: str) -> None:
    """Templates name only ``{i}``, with at most a short format (``{i:03d}``): no attribute or index
    look-ups (``{i.__class__}``), no 1 GB padding (``{i:>999999999}``)."""
    try:
        parts = list(string.Formatter().parse(x))
    except ValueError as exc:
        raise v.err(path, f"bad template {x[:80]!r}: {exc}") from None
    for _lit, fname, spec, conv in parts:
        if fname is None:
            continue
        if fname != "i" or conv or not _TEMPLATE_SPEC.fullmatch(spec or ""):
            raise v.err(path, f"bad template {x[:80]!r}: only {{i}} or {{i:FORMAT}} with a width under 100 "
                              "are allowed")


