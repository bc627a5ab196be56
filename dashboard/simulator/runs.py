"""The A/B runs: running both sides of a state (with progress), and the results cache.

Runs are the engine's (:func:`engine.simulator.run_scenario`); their tables are kept server-side in the
app's diskcache under ``simres:<session>:<params hash>`` (the sweep under ``simsweep:…``), so the
browser's stores hold only keys, and the same form opened again in the same session (after navigating
away, or from a permalink) shows the cached results instead of running again.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

import pandas as pd

from engine.config import LoadBalancerConfig
from engine.errors import InputError

from ..cache import get_cache
from ..memo import Memo
from ..sources import session_key
from .scenarios import load, scenario_facts
from .state import MAX_MINUTES, SIDES, SimState

__all__ = ["TTL", "RunData", "run_kwargs", "minutes_of", "session_of", "result_key", "check_key", "run_pair",
           "load_result", "cached_result"]

#: how long results stay in the cache (seconds)
TTL = 6 * 3600
_KEY = re.compile(r"sim(res|sweep):(anon|[0-9a-f]{32}):[0-9a-f]{24}")


def run_kwargs(state: SimState, side: str) -> dict:
    """Keyword arguments of :func:`engine.simulator.run_scenario` for one side."""
    sp = state.side(side)
    kw = {"strategy": sp.shed, "placement": sp.place, "seed": state.seed, "minutes": minutes_of(state)}
    if sp.preset:
        kw["preset"] = sp.preset
    if sp.values:
        kw["set"] = dict(sp.values)
    return kw


def minutes_of(state: SimState) -> int:
    """How many minutes a run of ``state`` lasts (the scenario's when the form leaves it empty; capped)."""
    sc = load(state.scenario)
    return min(state.minutes or sc.minutes, MAX_MINUTES)


def session_of(sid) -> str:
    """The session id (:func:`dashboard.sources.session_key`: exactly 32 hex digits) or ``"anon"``."""
    return session_key(sid) or "anon"


def result_key(sid, state: SimState, kind: str = "res") -> str:
    """``simres:<session>:<hash>`` — per session, per params."""
    return f"sim{kind}:{session_of(sid)}:{state.digest()}"


_mem = Memo(4)  # the last results read, as live objects


@dataclass
class RunData:
    """One finished run, as the page keeps it."""

    side: str
    label: str
    spec: dict
    summary: dict
    events: pd.DataFrame
    brokers: pd.DataFrame
    cluster: pd.DataFrame
    config: LoadBalancerConfig
    cancelled: bool = False
    elapsed_s: float = 0.0
    #: the strategies' memories at the end, ``{strategy name: state value .to_json()}`` (lossless:
    #: ``registry.spec(name).state_type.from_json`` gives the value back)
    strategy_state: dict = field(default_factory=dict)

    @property
    def extensible(self) -> bool:
        return "load_std" in self.cluster


def _progress_sink(progress: Callable | None, base: int, total: int, text: str):
    if progress is None:
        return None
    last = [-1]

    def cb(done, _total):
        pct = int(100 * (base + done) / max(total, 1))
        if pct != last[0]:
            last[0] = pct
            progress(base + done, total, f"{text} · minute {done} of {_total}")
    return cb


def run_pair(state: SimState, sid, progress: Callable | None = None) -> dict:
    """Run A and B (or take them from the cache); ``{"key", "cached", "elapsed_s"}``.

    ``progress(done, total, text)`` is called about a hundred times per run. Engine problems
    (an incompatible pair, a bad config event) raise :class:`InputError` naming them.
    """
    from engine.simulator import run_scenario

    key = result_key(sid, state)
    cache = get_cache()
    if key in cache:
        return {"key": key, "cached": True, "elapsed_s": 0.0}
    sc = load(state.scenario)
    n = minutes_of(state)
    t0 = time.perf_counter()
    runs = {}
    for i, s in enumerate(SIDES):
        sp = state.side(s)
        text = f"run {s.upper()} · {sp.shed} on {sc.name}"
        cb = _progress_sink(progress, i * n, 2 * n, text)
        r = run_scenario(sc, progress=cb, **run_kwargs(state, s))
        runs[s] = RunData(s, f"{s.upper()} · {sp.label()}", sp.to_json(), r.summary, r.events, r.brokers, r.cluster,
                          r.config, r.cancelled, r.elapsed_s, dict(getattr(r, "strategy_state", None) or {}))
    elapsed = time.perf_counter() - t0
    payload = {"state": state.to_json(), "runs": runs, "facts": scenario_facts(sc), "elapsed_s": elapsed,
               "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    cache.set(key, payload, expire=TTL)
    _mem.put(key, payload)
    if progress is not None:
        progress(2 * n, 2 * n, "done")
    return {"key": key, "cached": False, "elapsed_s": round(elapsed, 3)}


def check_key(key, sid, kind: str):
    """Refuse a results key of another session, of another kind, or malformed."""
    m = _KEY.fullmatch(key or "") if isinstance(key, str) else None
    if not m or m.group(1) != kind or m.group(2) != session_of(sid):
        raise InputError("these results belong to another session or are malformed: run again")


def load_result(key: str, sid) -> dict:
    """The payload of :func:`run_pair` (``{"state", "runs": {"a": RunData, "b": RunData}, …}``)."""
    check_key(key, sid, "res")
    got = _mem.get(key)
    if got is None:
        got = get_cache().get(key)
        if got is None:
            raise InputError("the results are no longer on the server (expired or cleared): press Run again")
        _mem.put(key, got)
    return got


def cached_result(state: SimState, sid) -> str | None:
    """The key of this state's results when this session already has them."""
    key = result_key(sid, state)
    return key if key in get_cache() else None
