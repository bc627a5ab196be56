"""The parameter sweep on run A: its keys and default grid (the strategy's own), the plan, the runs, a
clicked cell, and run A's current cell."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Callable, Mapping

from engine.config import key_info
from engine.errors import InputError

from ..cache import get_cache
from ..keys import canon_conf_value, fmt_conf_value, key_spec
from .strategies import strategy_keys, sweep_grid
from .runs import TTL, check_key, minutes_of, run_kwargs, session_of
from .scenarios import base_config, load
from .state import RunSpec, SimState, coerce_state

__all__ = ["MAX_AXIS", "SWEEP_BUDGET", "sweep_keys", "sweep_defaults", "sweep_choice", "parse_axis", "plan_sweep", "run_sweep",
           "sweep_cell", "sweep_current", "load_sweep"]

#: values per sweep axis, and the simulated broker-minutes a sweep may cost in total
MAX_AXIS = 6
SWEEP_BUDGET = 1_500_000


def sweep_keys(shed: str, place: str | None = None) -> list[dict]:
    """Dropdown options: every numeric key the side's strategies (and its load manager) read."""
    return [{"label": k, "value": k, "title": key_spec(k).doc} for k in strategy_keys(shed, place)]


def _axis_default(key: str) -> str:
    spec = key_spec(key)
    lo, hi, d = spec.lo, spec.hi, float(spec.default)
    span = (hi - lo) / 4.0
    vals = sorted({min(hi, max(lo, d + i * span / 2.0)) for i in (-2, -1, 0, 1, 2)})
    return ", ".join(fmt_conf_value(int(round(v)) if spec.type == "int" else round(v, 4)) for v in vals)


def _axis_text(values) -> str:
    return ", ".join(v if isinstance(v, str) else fmt_conf_value(v) for v in values)


def sweep_defaults(shed: str, place: str | None = None) -> tuple:
    """(x key, x values, y key, y values) to start from for a strategy: its declared sweep grid, else its
    first two numeric keys around their defaults."""
    grid = sweep_grid(shed)
    if len(grid) >= 2:
        (x, xs), (y, ys) = grid[0], grid[1]
        return x, _axis_text(xs), y, _axis_text(ys)
    keys = [o["value"] for o in sweep_keys(shed, place)]
    if not keys:
        return None, "", None, ""
    x = keys[0]
    y = keys[1] if len(keys) > 1 else keys[0]
    return x, _axis_default(x), y, _axis_default(y)


def sweep_choice(shed: str | None, place: str | None, x_key=None, y_key=None) -> tuple[list, tuple | None]:
    """The sweep form for run A's strategies: the key options, and the default grid to show — None when
    the keys picked (``x_key``, ``y_key``) still apply."""
    from .state import RunSpec

    shed = shed or RunSpec().shed
    opts = sweep_keys(shed, place)
    keys = {o["value"] for o in opts}
    if x_key in keys and y_key in keys:
        return opts, None
    return opts, sweep_defaults(shed, place)


def parse_axis(key, text) -> list[str]:
    """``"5, 10, 15"`` → canonical ``broker.conf`` texts of ``key`` (unique, in order); raises
    :class:`InputError` naming the key or the value."""
    if not isinstance(key, str) or not key:
        raise InputError("pick a key", field="sweep")
    try:
        key_info(key)
    except KeyError:
        raise InputError(f"unknown load-balancer key {key[:60]!r}", field="sweep") from None
    out = []
    for tok in re.split(r"[,\s;]+", str(text or "").strip()):
        if not tok:
            continue
        c = canon_conf_value(key, tok)
        if c not in out:
            out.append(c)
    if not out:
        raise InputError(f"no values for {key}", field="sweep")
    if len(out) > MAX_AXIS:
        raise InputError(f"{len(out)} values for {key}: at most {MAX_AXIS} per axis on this page "
                         f"(the history page's Spark sweep takes bigger grids)", field="sweep")
    return out


def plan_sweep(state: SimState, x_key, x_text, y_key, y_text) -> dict:
    """The grid a sweep runs on run A's settings (validated and capped; raises :class:`InputError`)."""
    xs, ys = parse_axis(x_key, x_text), parse_axis(y_key, y_text)
    if x_key == y_key:
        raise InputError("pick two different keys", field="sweep")
    sc = load(state.scenario)
    n = minutes_of(state)
    cost = len(xs) * len(ys) * n * max(1, len(sc.brokers))
    if cost > SWEEP_BUDGET:
        raise InputError(f"{len(xs)}×{len(ys)} runs of {n} minutes on {len(sc.brokers)} brokers is too big for the "
                         f"page (budget {SWEEP_BUDGET:,} broker-minutes): fewer values or fewer minutes",
                         field="sweep")
    return {"x_key": x_key, "x": xs, "y_key": y_key, "y": ys, "minutes": n}


def run_sweep(state: SimState, plan: dict, sid, progress: Callable | None = None) -> dict:
    """Run the grid on run A (one run per cell); ``{"key", "cached"}``. Cells hold the summary numbers."""
    from engine.simulator import run_scenario

    tag = replace(state, b=RunSpec("sweep", json.dumps(plan, sort_keys=True)))
    key = f"simsweep:{session_of(sid)}:{tag.digest()}"
    cache = get_cache()
    if key in cache:
        return {"key": key, "cached": True}
    sc = load(state.scenario)
    total = len(plan["x"]) * len(plan["y"])
    cells = []
    base_kw = run_kwargs(state, "a")
    i = 0
    for yv in plan["y"]:
        for xv in plan["x"]:
            kw = dict(base_kw)
            kw["set"] = {**(kw.get("set") or {}), plan["x_key"]: xv, plan["y_key"]: yv}
            if progress is not None:
                progress(i, total, f"sweep · cell {i + 1} of {total}: {plan['x_key']}={xv}, {plan['y_key']}={yv}")
            r = run_scenario(sc, **kw)
            s = r.summary
            cells.append({"x": xv, "y": yv, "unloads": s.get("unloads"), "settled_minute": s.get("settled_minute"),
                          "first_unload_minute": s.get("first_unload_minute"),
                          "bad_placements": s.get("bad_placements"), "usage_std": s.get("usage_std"),
                          "target_met_minute": s.get("target_met_minute")})
            i += 1
    payload = {"plan": plan, "state": state.to_json(), "cells": cells, "strategy": state.a.shed,
               "scenario": sc.name}
    cache.set(key, payload, expire=TTL)
    if progress is not None:
        progress(total, total, "sweep done")
    return {"key": key, "cached": False}


def sweep_cell(plan: dict | None, click) -> tuple | None:
    """``(x_key, x, y_key, y)`` of the heatmap cell a ``clickData`` points at, or None.

    Plotly reports a heatmap click's category ``x`` and ``y`` (``dcc.Graph`` drops a heatmap's
    2-D ``customdata``), so the keys come from the plan of the sweep on screen, and a value that is
    not on that plan's grid is refused."""
    if not isinstance(plan, Mapping) or not isinstance(click, Mapping):
        return None
    pts = click.get("points")
    pt = pts[0] if isinstance(pts, list) and pts and isinstance(pts[0], Mapping) else None
    if pt is None:
        return None
    x, y = str(pt.get("x")), str(pt.get("y"))
    if x not in plan.get("x", []) or y not in plan.get("y", []):
        return None
    return plan["x_key"], x, plan["y_key"], y


def sweep_current(sweep: dict, saved) -> dict | None:
    """Run A's current values of the sweep's two keys (``{key: text}``), to outline its cell; None when
    run A no longer runs the swept strategy on the swept scenario."""
    if not isinstance(saved, Mapping):
        return None
    try:
        st = coerce_state(saved)[0]
    except Exception:  # noqa: BLE001 - a browser value: no outline rather than an error
        return None
    if st.scenario != sweep["state"]["scenario"] or st.a.shed != sweep["strategy"]:
        return None
    try:
        base = base_config(load(st.scenario), st.a.preset)
    except InputError:
        return None
    p = sweep["plan"]
    vals = st.a.value_dict
    return {k: vals.get(k, fmt_conf_value(getattr(base, k))) for k in (p["x_key"], p["y_key"])}


def load_sweep(key: str, sid) -> dict:
    check_key(key, sid, "sweep")
    got = get_cache().get(key)
    if got is None:
        raise InputError("the sweep is no longer on the server: run it again")
    return got
