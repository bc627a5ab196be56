"""The Simulator's permalink: a :class:`~.state.SimState` as query parameters and back.

``/simulator?scenario=bigo-homogeneous-start&minutes=30&seed=0&a.shed=AvgShedder&a.place=AvgShedder
&a.preset=bigo-avgshedder&a.loadBalancerAvgShedderLowThreshold=10&b.shed=ThresholdShedder
&b.place=LeastResourceUsageWithWeight`` — the same conventions as the Tuner's (:mod:`dashboard.permalink`):
every changed key under its own ``broker.conf`` name, here prefixed by the side it belongs to.
"""
from __future__ import annotations

import re
from typing import Mapping
from urllib.parse import urlencode

from ..permalink import flat_params
from .scenarios import DEFAULT_SCENARIO
from .state import SIDES, SimState, coerce_state

__all__ = ["encode", "decode"]


def encode(state: SimState) -> str:
    """The query string (without ``?``) of a state, in a stable order."""
    items = [("scenario", state.scenario)]
    if state.minutes is not None:
        items.append(("minutes", str(state.minutes)))
    items.append(("seed", str(state.seed)))
    for s in SIDES:
        sp = state.side(s)
        items += [(f"{s}.shed", sp.shed), (f"{s}.place", sp.place)]
        if sp.preset:
            items.append((f"{s}.preset", sp.preset))
        items += [(f"{s}.{k}", v) for k, v in sorted(sp.values)]
    return urlencode(items, safe=":/,")


def decode(params: Mapping) -> tuple[SimState | None, list[str]]:
    """A state from query parameters (``layout(**kwargs)``); ``(None, [])`` when they carry none."""
    if not params:
        return None, []
    flat = flat_params(params)
    if not any(k in ("scenario", "minutes") or k[:2] in ("a.", "b.") for k in flat):
        return None, []
    errors = []
    data: dict = {"scenario": flat.get("scenario", DEFAULT_SCENARIO), "minutes": flat.get("minutes"),
                  "seed": flat.get("seed", "0")}
    for k in ("minutes", "seed"):
        if flat.get(k) not in (None, "") and not re.fullmatch(r"\d{1,10}", flat[k]):
            errors.append(f"link: {k}={flat[k][:20]!r} is not a whole number; ignored")
            data[k] = None if k == "minutes" else 0
    for s in SIDES:
        spec = {"values": {}}
        for k, v in flat.items():
            if not k.startswith(f"{s}."):
                continue
            name = k[2:]
            if name in ("shed", "place", "preset"):
                spec[name] = v
            else:
                spec["values"][name] = v
        data[s] = spec
    unknown = [k for k in flat if k not in ("scenario", "minutes", "seed") and k[:2] not in ("a.", "b.")]
    errors += [f"link: unknown parameter {k[:60]!r} ignored" for k in unknown]
    state, more = coerce_state(data)
    return state, errors + [m if m.startswith("link") else f"link: {m}" for m in more]
