"""The History page's recommendation: the form's values checked, the study run in the page's background
process, the result kept in the app cache (the browser gets a key, never the result or a server path)."""
from __future__ import annotations

import re
import uuid

from engine.errors import InputError, UsageError

from .objective import HISTORY, SCENARIO, parse_objective

__all__ = ["page_params", "scenario_page_params", "run_page_recommendation", "page_result", "key_options",
           "scenario_key_options", "PAGE_MAX_TRIALS", "DEFAULT_OBJECTIVE", "DEFAULT_SCENARIO_OBJECTIVE"]

#: the page runs at most this many trials per click (the command line takes more)
PAGE_MAX_TRIALS = 300
DEFAULT_OBJECTIVE = "min unloads_per_day; hot_unanswered(20) <= 60"
#: the Simulator's: fewest unloads while the usage range stays under 30 points in 95 % of minutes
DEFAULT_SCENARIO_OBJECTIVE = "min unloads_per_day; usage_range_p95 <= 30"
#: the Simulator page runs at most this many trials per click (each one simulation per fit seed)
PAGE_MAX_SCENARIO_TRIALS = 100
_KEY = re.compile(r"^recommend:[0-9a-f]{32}$")
CACHE_EXPIRE = 7 * 86400


def key_options(strategy: str | None) -> tuple[list[dict], list[str]]:
    """The keys a recommendation can search for ``strategy`` and the default choice (its sweep keys)."""
    from engine.backtest import backtest_spec, sweep_keys

    from .jobs import DEFAULT_STRATEGY

    try:
        spec = backtest_spec(strategy or DEFAULT_STRATEGY)
    except (UsageError, InputError):
        spec = backtest_spec(DEFAULT_STRATEGY)
    return [{"label": k, "value": k} for k in sweep_keys(spec)], [k for k, _v in spec.sweep_grid]


def _int(v, name: str, lo: int, hi: int) -> int | None:
    if v in (None, ""):
        return None
    try:
        n = int(float(str(v)))
    except (TypeError, ValueError):
        raise UsageError(f"{name} is a whole number, got {str(v)[:20]!r}") from None
    if not lo <= n <= hi:
        raise UsageError(f"{name} must be in {lo}..{hi}, got {n}")
    return n


def page_params(*, path, start, end, strategy, overrides, bundles, objective, keys, trials, holdout) -> dict:
    """The form → recommendation params (``UsageError`` / ``InputError`` with a clear message)."""
    from .service import parse_overrides

    if not isinstance(objective, str):
        raise UsageError("the objective is empty: say what to minimise, e.g. 'min unloads_per_day'")
    parse_objective(objective, HISTORY)  # a bad objective is said before anything runs
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) and len(k) < 100 for k in keys)):
        raise UsageError("keys: pick them from the list")
    return {"dataset": path, "start": start or None, "end": end or None, "strategy": strategy or None,
            "set": parse_overrides(overrides), "bundles": bundles if bundles in ("auto", "synthetic") else "auto",
            "objective": objective, "keys": list(keys) if keys else None,
            "trials": _int(trials, "trials", 1, PAGE_MAX_TRIALS) or 30,
            "holdout": _int(holdout, "held-out days", 0, 3660), "engine": "auto"}


def scenario_key_options(shed: str | None) -> tuple[list[dict], list[str]]:
    """The keys a scenario recommendation can search for run A's strategy ``shed``, its sweep keys chosen."""
    from engine.backtest import sweep_keys
    from engine.strategies import registry

    try:
        spec = registry.spec(shed or "AvgShedder")
    except (UsageError, InputError):
        spec = registry.spec("AvgShedder")
    return [{"label": k, "value": k} for k in sweep_keys(spec)], [k for k, _v in spec.sweep_grid]


def scenario_page_params(state, *, objective, keys, trials, seeds, search) -> dict:
    """The Simulator's form → recommendation params: run A (its strategy, placement, base preset and
    changed keys) is the current setting, on the page's scenario, minutes and seed. ``search``: ``"a"``
    (run A's strategy's keys) or ``"any"`` (the strategy searched too)."""
    from dashboard.simulator.runs import minutes_of
    from dashboard.simulator.scenarios import load

    if not isinstance(objective, str):
        raise UsageError("the objective is empty: say what to minimise, e.g. 'min unloads_per_day'")
    parse_objective(objective, SCENARIO)
    if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) and len(k) < 100 for k in keys)):
        raise UsageError("keys: pick them from the list")
    sp = state.a
    return {"scenario": load(state.scenario), "scenario_id": state.scenario, "minutes": minutes_of(state),
            "seed": int(state.seed), "strategy": "any" if search == "any" else sp.shed,
            "current_strategy": sp.shed, "placement": sp.place,
            "preset": sp.preset or None, "set": dict(sp.values), "objective": objective,
            "keys": list(keys) if keys else None,
            "trials": _int(trials, "trials", 1, PAGE_MAX_SCENARIO_TRIALS) or 12,
            "seeds": _int(seeds, "held-out seeds", 0, 20), "batch": 4}


def run_page_recommendation(params: dict, progress=None) -> dict:
    """Run (or continue) the study in this background process; ``{"ok", "key"}`` or ``{"ok": False,
    "error"}``. The page's Cancel ends the process: the finished trials are in the study, a new click
    continues it."""
    from dashboard.cache import get_cache
    from dashboard.spark import cancel_on_sigterm, stop_spark

    from .dataset import dataset_by_name
    from .jobs import describe_error
    from .recommend_run import run_recommendation

    cancel_on_sigterm()
    try:
        res = run_recommendation(params, progress, dataset_resolver=dataset_by_name)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a message on the page
        return {"ok": False, "error": describe_error(exc)}
    finally:
        stop_spark()
    res.pop("dataset", None)  # server paths stay on the server (and a scenario object is not a result)
    res["study"].pop("path", None)
    key = f"recommend:{uuid.uuid4().hex}"
    get_cache().set(key, res, expire=CACHE_EXPIRE)
    return {"ok": True, "key": key}


def page_result(job) -> dict | None:
    """The result a finished run stored (``None`` for a missing, expired or malformed key)."""
    from dashboard.cache import get_cache

    if not isinstance(job, dict) or not job.get("ok") or not isinstance(job.get("key"), str):
        return None
    if not _KEY.match(job["key"]):
        return None
    got = get_cache().get(job["key"])
    return got if isinstance(got, dict) else None
