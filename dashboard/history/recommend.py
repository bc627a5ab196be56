"""Recommend a setting: search a strategy's keys for the operator's objective, validate on held-out data.

The question an operator asks is "what should my ``broker.conf`` say so that ..." — an objective in their
words (:mod:`.objective`: goals and constraints over the measures Shedlab computes). This module answers
it with an Optuna study:

* **the space**: the keys the strategy reads (its spec's sweep keys by default, any of
  :func:`engine.backtest.sweep_keys` on request) over their ranges (the Tuner's slider range of the key,
  or ``KEY=LO:HI``);
* **the trials**: each trial one backtest on the fit days of a History range (:class:`.recommend_targets.
  HistoryTarget`: a batch of trials in one pass over the history, on pandas or Spark) or one simulation of
  a scenario per fit seed (:class:`.recommend_targets.ScenarioTarget`);
* **who proposes them**: a fresh study's first trial is the current setting when the space holds it (it
  is measured anyway, and every later proposal knows it), the rest of the first batch a Latin hypercube
  over the space (one strategy); after that Optuna's TPE sampler proposes each batch (several goals: a
  Pareto front; constraints: its constrained sampling) and, with one goal, about half of each batch
  are local moves around the best trial so far (feasible first), which refine what the sampler found
  on a space a coarse grid would cover with a few cells;
* **the study** lives in the app's cache directory (``studies/<name>.log``, Optuna's journal file), named
  by everything that defines it (dataset fingerprint, fit days, strategy, space, objective, current
  setting): the same request later continues it, a larger ``trials`` adds trials, nothing is repeated;
* **honest results**: the recommended and the current setting run side by side on the held-out days
  (or seeds); a recommendation that does not beat the current setting there says so.

* **pruning** (one goal): the fit data is replayed in stages (History: per fit week, or the first third
  of the fit minutes and the rest; a scenario: one fit seed after another) and a trial whose goal after a
  stage is worse than the median of the finished trials at that stage (Optuna's ``MedianPruner``) stops
  there — the rest of the batch's pass goes on without it (on Spark: one job per stage, each config's
  memory carried to the next). A constraint missed after a stage does not stop a trial: the rest of the
  fit data may bring it back within bounds, and the best settings often sit on a constraint's edge;
* **the strategy searched too**: given several strategies (or ``any``), each trial picks one
  (a categorical parameter) and then that strategy's keys (its own space, parameters named
  ``STRATEGY.KEY``).
"""
from __future__ import annotations

import hashlib
import json
import math
import warnings
from dataclasses import dataclass

import numpy as np

from engine.config import LoadBalancerConfig, to_broker_conf
from engine.errors import UsageError

from .objective import HISTORY, Objective

__all__ = ["KeyRange", "search_space", "strategy_spaces", "recommend", "study_dir", "MAX_TRIALS", "MAX_KEYS",
           "MAX_BATCH", "PRUNE_PENALTY"]

MAX_TRIALS = 2000
MAX_KEYS = 8
MAX_BATCH = 64
#: the intermediate value of a trial whose goal is not a number after a stage (pruning): it looks hopeless
PRUNE_PENALTY = 1e9


@dataclass(frozen=True)
class KeyRange:
    key: str
    type: str  # "int" | "float"
    lo: float
    hi: float
    step: float | None = None

    def to_json(self) -> dict:
        return {"key": self.key, "type": self.type, "lo": self.lo, "hi": self.hi, "step": self.step}

    def distribution(self):
        from optuna.distributions import FloatDistribution, IntDistribution

        if self.type == "int":
            return IntDistribution(int(self.lo), int(self.hi))
        return FloatDistribution(self.lo, self.hi, step=self.step)


def _parse_range(text: str) -> tuple[str, float, float]:
    if "=" not in text or ":" not in text.split("=", 1)[1]:
        raise UsageError(f"--range takes KEY=LO:HI, got {text!r}")
    k, v = text.split("=", 1)
    a, b = v.split(":", 1)
    try:
        lo, hi = float(a), float(b)
    except ValueError:
        raise UsageError(f"--range takes KEY=LO:HI with numbers, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        raise UsageError(f"--range {k.strip()}: LO must be below HI (finite numbers), got {text!r}")
    return k.strip(), lo, hi


def _default_range(key: str, ks, grid) -> tuple:
    """A key of the strategy's sweep grid: the grid's span widened by one grid step each side (inside the
    Tuner's slider range); another key: the slider range."""
    if not grid or ks.lo is None or ks.hi is None:
        return ks.lo, ks.hi
    vals = sorted(float(v) for v in grid)
    pad = (vals[-1] - vals[0]) / max(len(vals) - 1, 1)
    return max(ks.lo, vals[0] - pad), min(ks.hi, vals[-1] + pad)


def search_space(strategy: str, keys=None, ranges=None) -> list[KeyRange]:
    """The keys to search and their ranges. ``keys``: names (default: the spec's sweep grid keys), each one
    of :func:`engine.backtest.sweep_keys`; ``ranges``: ``["KEY=LO:HI", ...]`` (a key named only here is
    searched too), else the sweep grid's span widened by a step (:func:`_default_range`)."""
    from dashboard.keys import key_spec
    from engine.backtest import sweep_keys
    from engine.strategies import registry

    spec = registry.spec(strategy)
    allowed = sweep_keys(spec)
    given = {}
    for r in ranges or []:
        k, lo, hi = _parse_range(r)
        given[k] = (lo, hi)
    grid = dict(spec.sweep_grid)
    names = list(keys) if keys else [k for k, _v in spec.sweep_grid]
    names += [k for k in given if k not in names]
    if not names:
        raise UsageError(f"{spec.name} has no key to search")
    if len(names) > MAX_KEYS:
        raise UsageError(f"at most {MAX_KEYS} keys at once, got {len(names)}")
    out = []
    for k in names:
        if k not in allowed:
            raise UsageError(f"{k} is not a key {spec.name} reads; keys: {', '.join(allowed)}")
        ks = key_spec(k)
        lo, hi = given.get(k, _default_range(k, ks, grid.get(k)))
        if lo is None or hi is None:
            raise UsageError(f"{k} has no range: give one with --range {k}=LO:HI")
        if ks.type == "int":
            lo, hi = math.ceil(lo), math.floor(hi)
            if lo >= hi:
                raise UsageError(f"{k} takes whole numbers: the range holds only {lo}")
            out.append(KeyRange(k, "int", float(lo), float(hi)))
        else:
            step = ks.step if ks.step and ks.step > 0 else (hi - lo) / 100.0
            step = min(step, (hi - lo) / 20.0)
            step = float(f"{step:.1g}")
            n = math.floor((hi - lo) / step + 1e-9)
            out.append(KeyRange(k, "float", float(lo), float(lo + n * step), step))
    return out


def strategy_spaces(strategies: list[str], keys=None, ranges=None) -> dict[str, list[KeyRange]]:
    """Several strategies searched at once: each strategy's own space (:func:`search_space`). ``keys`` /
    ``ranges`` apply to the strategies that read them (a strategy none of them applies to gets its sweep
    keys); a key or range no strategy reads is refused. A strategy with no key to search is still a choice."""
    from engine.backtest import sweep_keys
    from engine.strategies import registry

    given = [_parse_range(r)[0] for r in ranges or []]
    out: dict[str, list[KeyRange]] = {}
    read = set()
    for s in strategies:
        spec = registry.spec(s)
        allowed = set(sweep_keys(spec))
        read |= allowed
        ks = [k for k in keys or [] if k in allowed] or None
        rs = [r for r, k in zip(ranges or [], given) if k in allowed]
        try:
            out[spec.name] = search_space(spec.name, ks, rs)
        except UsageError:
            if spec.sweep_grid or ks or rs:
                raise
            out[spec.name] = []
    for k in [*(keys or []), *given]:
        if k not in read:
            raise UsageError(f"{k} is not a key any of {', '.join(out)} reads")
    return out


def study_dir():
    """``<cache dir>/studies`` (private, like the rest of the cache)."""
    from dashboard.cache import cache_dir, private_dir

    return private_dir(cache_dir() / "studies")


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _open_study(name: str, objective: Objective, seed: int, done: int, n_startup: int, *, group: bool = False):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    path = study_dir() / f"{name}.log"
    storage = JournalStorage(JournalFileBackend(str(path)))

    def constraints(trial):
        return trial.user_attrs.get("constraints", [])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant_liar / constraints / group are "experimental" in Optuna
        sampler = optuna.samplers.TPESampler(seed=seed + done, multivariate=True, constant_liar=True,
                                             n_startup_trials=n_startup, group=group,
                                             constraints_func=constraints if objective.constraints else None)
        pruner = optuna.pruners.MedianPruner(n_startup_trials=max(n_startup, 1), n_warmup_steps=0)
        study = optuna.create_study(study_name=name, storage=storage, directions=objective.directions,
                                    sampler=sampler, pruner=pruner, load_if_exists=True)
    return study, path


def _value_text(kr: KeyRange | None, v) -> str:
    if kr is not None and kr.type == "int":
        return str(int(round(float(v))))
    x = float(v)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _pareto(points: list[list[float]], directions: list[str]) -> list[int]:
    """Indices of the non-dominated points."""
    sign = [1.0 if d == "minimize" else -1.0 for d in directions]
    pts = [[s * v for s, v in zip(sign, p)] for p in points]
    out = []
    for i, p in enumerate(pts):
        if not any(all(a <= b for a, b in zip(q, p)) and any(a < b for a, b in zip(q, p))
                   for j, q in enumerate(pts) if j != i):
            out.append(i)
    return out


def _gain(objective: Objective, m: dict, cur: dict) -> float:
    """Summed relative improvement of ``m`` over ``cur`` on the goals (positive: better)."""
    out = 0.0
    for g in objective.goals:
        a, b = m[g.measure.key], cur[g.measure.key]
        d = (b - a) if g.direction == "minimize" else (a - b)
        out += d / max(abs(b), 1e-9 + 1e-6 * abs(a), 1.0 if b == 0 else 0.0)
    return out


def _choose(objective: Objective, trials: list[dict], current: dict) -> dict | None:
    """The recommended trial: feasible, better than the current setting on the fit data if any is.
    One goal: the best value (ties: the smallest change). Several: on the Pareto front, among the points no
    worse than the current setting on any goal (else all of it), the largest summed relative improvement."""
    feas = [t for t in trials if t["feasible"]]
    if not feas:
        return None
    if len(objective.goals) == 1:
        g = objective.goals[0]
        sign = 1.0 if g.direction == "minimize" else -1.0
        return min(feas, key=lambda t: (sign * t["measures"][g.measure.key], t["distance"], t["number"]))
    front = [feas[i] for i in _pareto([objective.values(t["measures"]) for t in feas], objective.directions)]
    better = [t for t in front if _beats(objective, t["measures"], current)] or front
    return max(better, key=lambda t: (_gain(objective, t["measures"], current), -t["distance"], -t["number"]))


def _beats(objective: Objective, rec: dict, cur: dict) -> bool:
    """``rec`` beats ``cur``: meets the constraints (or misses them by less), no goal worse, one better."""
    rv, cv = objective.violations(rec), objective.violations(cur)
    if not objective.feasible(rec) and not all(max(a, 0) <= max(b, 0) for a, b in zip(rv, cv)):
        return False
    worse = any(g.better(cur[g.measure.key], rec[g.measure.key]) for g in objective.goals)
    better = any(g.better(rec[g.measure.key], cur[g.measure.key]) for g in objective.goals)
    return better and not worse


def _importances(study, spaces: dict, objective: Objective, multi: bool = False) -> dict:
    """Per goal: each key's share (PED-ANOVA, Optuna's evaluator that needs no extra library). Several
    strategies: the strategy itself and each ``STRATEGY.KEY``."""
    from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances
    from optuna.trial import TrialState

    keys = (["strategy"] + [f"{s}.{k.key}" for s, sp in spaces.items() for k in sp]) if multi \
        else [k.key for sp in spaces.values() for k in sp]
    done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]
    out = {}
    for i, g in enumerate(objective.goals):
        if len(keys) == 1:
            out[g.measure.key] = {keys[0]: 1.0}
            continue
        if len(done) < 4:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                imp = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator(),
                                            params=None if multi else keys,
                                            target=lambda t, i=i: t.values[i], normalize=True)
        except Exception:  # noqa: BLE001 - too few distinct trials: no importances rather than a failure
            continue
        out[g.measure.key] = {k: float(v) for k, v in imp.items()}
    return out


def _pct(a: float, b: float) -> str:
    if b == 0:
        return "" if a == 0 else " (from 0)"
    return f" ({100.0 * (a - b) / abs(b):+.0f} %)"


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.1f}" if abs(x) >= 10 else f"{x:.2f}"


def explain(objective: Objective, changes: list[tuple], fit: dict, cur_fit: dict, hold: dict | None,
            cur_hold: dict | None, beats: bool | None, importances: dict, labels: tuple) -> list[str]:
    """The recommendation in words: what changes, what it buys on the fit and held-out data."""
    out = []
    if fit is None:
        return ["No setting tried meets the constraints on the fit data: loosen them or widen the ranges."]
    if not changes:
        return ["No setting tried does better than the current one on the fit data: keep it."]
    out.append("Change " + ", ".join(f"{k} from {a} to {b}" for k, a, b in changes) + ".")
    for g in objective.goals:
        k = g.measure.key
        out.append(f"On the fit data ({labels[0]}): {k} {_fmt(fit[k])} instead of {_fmt(cur_fit[k])}"
                   f"{_pct(fit[k], cur_fit[k])} — {g.measure.words()}.")
    for c in objective.constraints:
        k = c.measure.key
        out.append(f"{k} {_fmt(fit[k])} (current {_fmt(cur_fit[k])}; limit {c.op} {c.bound:g}).")
    if hold is not None:
        parts = ", ".join(f"{g.measure.key} {_fmt(hold[g.measure.key])} vs {_fmt(cur_hold[g.measure.key])}"
                          for g in objective.goals)
        cons = "; ".join(f"{c.measure.key} {_fmt(hold[c.measure.key])} ({'met' if c.violation(hold[c.measure.key]) <= 0 else 'NOT met'})"
                         for c in objective.constraints)
        if beats:
            out.append(f"On the held-out data ({labels[1]}) it beats the current setting: {parts}"
                       + (f"; {cons}" if cons else "") + ".")
        else:
            out.append(f"On the held-out data ({labels[1]}) it does NOT beat the current setting: {parts}"
                       + (f"; {cons}" if cons else "") + ". Keep the current setting, or fit on more days.")
    else:
        out.append("No held-out data: the result is measured on the data it was fitted to.")
    for goal, imp in importances.items():
        top = [kv for kv in sorted(imp.items(), key=lambda kv: -kv[1]) if kv[1] >= 0.005][:6]
        out.append(f"What matters for {goal}: " + ", ".join(f"{k} {100 * v:.0f} %" for k, v in top) + ".")
    return out


def _inside(k: KeyRange, v) -> bool:
    """``v`` is a value the key's distribution can take (in range, on its step)."""
    try:
        d = k.distribution()
        return bool(d._contains(d.to_internal_repr(int(v) if k.type == "int" else float(v))))
    except (TypeError, ValueError):
        return False


def _snap(k: KeyRange, u: float):
    """A point ``u`` in [0, 1] of the key's range as one of its values (ints: whole, floats: on the step)."""
    x = k.lo + min(max(u, 0.0), 1.0) * (k.hi - k.lo)
    if k.type == "int":
        return int(min(max(round(x), k.lo), k.hi))
    n = round((x - k.lo) / k.step)
    return float(min(k.lo + n * k.step, k.hi))


def _design(keys: list[KeyRange], n: int, rng) -> list[dict]:
    """``n`` settings spread over the space (a Latin hypercube: each key's range cut in ``n`` strata, each
    stratum used once, the strata of the keys paired at random) — the start of a study, instead of
    independent random draws that may bunch up."""
    if n <= 0 or not keys:
        return []
    cols = [(rng.permutation(n) + rng.random(n)) / n for _k in keys]
    out, seen = [], set()
    for i in range(n):
        p = {k.key: _snap(k, c[i]) for k, c in zip(keys, cols)}
        t = tuple(p.values())
        if t not in seen:
            seen.add(t)
            out.append(p)
    return out


def _local_moves(keys: list[KeyRange], centre: dict, n: int, rng, seen: set, names=None) -> list[dict]:
    """Up to ``n`` untried settings near ``centre`` (the best setting so far): each moves a random subset
    of the keys (at least one) by a random non-zero offset of up to a fifth of the key's range (at least
    one step: a whole number, or the key's step), stopped at the range's edges. ``seen``: tuples of the settings
    already tried or asked (updated); ``names``: the parameter name of each key (default: the key)."""
    names = names or {k.key: k.key for k in keys}
    out = []
    d = len(keys)
    for _ in range(n):
        for _try in range(64):
            move = rng.random(d) < max(0.5, 1.0 / d)
            if not move.any():
                move[rng.integers(d)] = True
            p = dict(centre)
            for k, m in zip(keys, move):
                if not m:
                    continue
                unit = 1.0 if k.type == "int" else k.step
                r = max(1, int(round(0.2 * (k.hi - k.lo) / unit)))
                step = int(rng.integers(1, r + 1)) * (1 if rng.random() < 0.5 else -1)
                x = min(max(float(p[names[k.key]]) + step * unit, k.lo), k.hi)  # an edge stops the move
                p[names[k.key]] = int(round(x)) if k.type == "int" else _snap(k, (x - k.lo) / (k.hi - k.lo))
            t = _params_key(p)
            if t not in seen:
                seen.add(t)
                out.append(p)
                break
    return out


def _params_key(params: dict) -> tuple:
    return tuple(sorted((str(a), float(b) if not isinstance(b, str) else b) for a, b in params.items()))


def _incumbent(trials, sign: float):
    """The best complete trial of a one-goal study: feasible first (``constraints`` user attribute, all
    ≤ 0), then the goal; among infeasible ones the smallest total violation. ``None``: no complete trial."""
    best, key = None, None
    for t in trials:
        if not t.values:
            continue
        v = t.values[0]
        if not math.isfinite(v):
            continue
        over = sum(max(0.0, float(c)) for c in t.user_attrs.get("constraints", []))
        k = (over > 0, over, sign * v, t.number)
        if key is None or k < key:
            best, key = t, k
    return best


def _suggest(trial, name: str, k: KeyRange):
    if k.type == "int":
        return trial.suggest_int(name, int(k.lo), int(k.hi))
    return trial.suggest_float(name, k.lo, k.hi, step=k.step)


def _conf_lines_over(cfg: LoadBalancerConfig, base: LoadBalancerConfig) -> dict:
    """The keys of ``cfg`` that differ from ``base`` (a key back at its default included)."""
    return dict(line.split("=", 1) for line in to_broker_conf(cfg, base).splitlines() if "=" in line)


def recommend(fit_target, hold_target, objective: Objective, space, current: LoadBalancerConfig,
              *, trials: int = 30, batch: int = 8, seed: int = 0, identity: dict | None = None,
              fresh: bool = False, progress=None, info: dict | None = None, prune: bool = True,
              current_strategy: str | None = None, configure=None) -> dict:
    """Run (or continue) the study and return the recommendation as a JSON-able dict.

    ``fit_target`` / ``hold_target`` (or ``None``): :mod:`.recommend_targets` objects; ``space``: the
    keys of one strategy (a list of :class:`KeyRange`) or, the strategy searched too, a dict strategy →
    its keys (:func:`strategy_spaces`); ``current``: the operator's setting (each trial is it with the
    space's keys changed), running ``current_strategy``; ``configure(cfg, strategy)``: the config a trial
    of ``strategy`` runs (several strategies; default: ``cfg``); ``trials``: how many finished (complete
    or pruned) trials the study should hold (a stored study with fewer gets the rest; with as many, none
    run); ``identity``: what names the study besides the objective, space and current setting (dataset
    fingerprint and days, or scenario); ``fresh``: drop the stored study first; ``prune``: stop hopeless
    trials early (one goal only: Optuna prunes single-objective studies); ``progress(done, total, text)``."""
    from engine.strategies import registry
    from optuna.trial import TrialState

    if not 1 <= int(trials) <= MAX_TRIALS:
        raise UsageError(f"--trials must be in 1..{MAX_TRIALS}, got {trials}")
    if not 1 <= int(batch) <= MAX_BATCH:
        raise UsageError(f"--batch must be in 1..{MAX_BATCH}, got {batch}")
    multi = isinstance(space, dict)
    spaces = space if multi else {current_strategy: space}
    names = list(spaces)
    cur_s = current_strategy if current_strategy is not None else (names[0] if multi else None)
    configure = configure or (lambda cfg, _s: cfg)
    by_key = {s: {k.key: k for k in sp} for s, sp in spaces.items()}
    cur_values = {s: {k.key: getattr(current, k.key) for k in sp} for s, sp in spaces.items()}
    ident = {"v": 1, **(identity or {}), "objective": objective.text, "current": to_broker_conf(current),
             "seed": int(seed)}
    if multi:
        ident.update(strategies=names, current_strategy=cur_s,
                     space={s: [k.to_json() for k in sp] for s, sp in spaces.items()})
    else:
        ident["space"] = [k.to_json() for k in space]
    name = f"recommend-{_hash(ident)}"
    if fresh:
        for f in study_dir().glob(f"{name}.log*"):
            f.unlink()
    study, path = _open_study(name, objective, int(seed), 0, 0)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):  # a cancelled run's batch
        study.tell(t.number, state=TrialState.FAIL)
    finished = (TrialState.COMPLETE, TrialState.PRUNED)
    done = len(study.get_trials(deepcopy=False, states=finished))
    resumed = done > 0
    n_startup = max(4, min(10, int(trials) // 3))
    study, _p = _open_study(name, objective, int(seed), done, n_startup, group=multi)
    measures = objective.measures
    todo = max(0, int(trials) - done)
    report = progress or (lambda *a: None)
    one_goal = len(objective.goals) == 1
    prunable = bool(prune) and one_goal
    sign = 1.0 if objective.directions[0] == "minimize" else -1.0
    rng = np.random.default_rng([int(seed), done])
    seen = {_params_key(t.params) for t in study.get_trials(deepcopy=False)}
    # the first settings tried: the operator's own (when the space holds it: it is measured anyway, and the
    # sampler learns from it), then a spread design over the space (one strategy) instead of random draws
    design: list[tuple[dict, dict]] = []
    if done == 0 and todo:
        sp_cur = spaces[cur_s] if cur_s in spaces else []
        if sp_cur and all(_inside(k, cur_values[cur_s][k.key]) for k in sp_cur):
            cp = {(f"{cur_s}.{k.key}" if multi else k.key): (int(cur_values[cur_s][k.key]) if k.type == "int"
                                                            else float(cur_values[cur_s][k.key])) for k in sp_cur}
            if multi:
                cp = {"strategy": cur_s, **cp}
            design.append((cp, {"current": True}))
            seen.add(_params_key(cp))
        if not multi:
            n_design = min(todo, max(min(int(batch), todo), n_startup))
            for dp in _design(list(space), max(0, n_design - len(design)), rng):
                if _params_key(dp) not in seen:
                    seen.add(_params_key(dp))
                    design.append((dp, {}))

    def cfg_of(values: dict, s=None) -> LoadBalancerConfig:
        s = s if multi else None
        base = configure(current, s) if multi and s != cur_s else current
        return base.with_values({k: _value_text(by_key[s if multi else cur_s].get(k), v) for k, v in values.items()})

    def ask(fixed=None, attrs=None):
        if fixed is not None:
            study.enqueue_trial(fixed, user_attrs=attrs or None)
        if not multi:
            t = study.ask({k.key: k.distribution() for k in space})
            return t, None, dict(t.params)
        t = study.ask()
        s = t.suggest_categorical("strategy", names)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a range Optuna trims to its step
            return t, s, {k.key: _suggest(t, f"{s}.{k.key}", k) for k in spaces[s]}

    def propose(n: int, round_no: int) -> list:
        """``n`` trials: the design first; then (one goal) about half of each batch near the best trial so far
        (a local search that refines what the sampler found) and the rest from the sampler."""
        out = []
        while design and len(out) < n:
            dp, attrs = design.pop(0)
            out.append(ask(dp, attrs))
        rest = n - len(out)
        n_local = (rest + round_no % 2) // 2 if one_goal and rest else 0
        out += [ask() for _ in range(rest - n_local)]
        if n_local:
            best = _incumbent(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), sign)
            moves = []
            if best is not None:
                s_b = best.params.get("strategy") if multi else None
                sp = spaces[s_b] if multi else list(space)
                if sp:
                    nm = {k.key: (f"{s_b}.{k.key}" if multi else k.key) for k in sp}
                    seen.update(_params_key(t.params) for t in study.get_trials(deepcopy=False))
                    moves = _local_moves(sp, dict(best.params), n_local, rng, seen, nm)
            out += [ask(mp) for mp in moves]
            out += [ask() for _ in range(n_local - len(moves))]
        return out

    cur_fit = None
    new = pruned_now = 0
    round_no = 0
    while True:
        n = min(int(batch), todo - new)
        asked = propose(max(n, 0), round_no)
        round_no += 1
        configs = [cfg_of(v, s) for _t, s, v in asked]
        strategies = [s for _t, s, _v in asked] if multi else None
        trial_of = {j: t for j, (t, _s, _v) in enumerate(asked)}
        cur_j = None
        if cur_fit is None:
            cur_j = next((j for j, (t, _s, _v) in enumerate(asked) if t.user_attrs.get("current")), None)
            if cur_j is None:  # the current setting is not one of the trials: measured besides them
                configs.insert(0, current)
                if multi:
                    strategies.insert(0, cur_s)
                trial_of = {j + 1: t for j, t in trial_of.items()}
        stopped = {}

        def judge(step, j, m, trial_of=trial_of, stopped=stopped, cur_j=cur_j):
            t = trial_of.get(j)
            if t is None:
                return False
            # the goal so far; a constraint missed so far is no reason to stop (the rest of the fit data
            # may bring it back within bounds: the best settings often sit on the constraint's edge)
            v = objective.values(m)[0]
            if not math.isfinite(v):
                v = sign * PRUNE_PENALTY
            t.report(v, step)
            if j == cur_j:
                return False  # the current setting's measures are needed whole
            if t.should_prune():
                stopped[j] = (step, m)
                return True
            return False

        report(new, max(todo, 1), f"trials {done + new + 1}–{done + new + len(asked)} of {trials} "
                                  f"({fit_target.label})" if asked else "measuring the current setting")
        got = fit_target.evaluate(configs, measures, strategies=strategies, judge=judge if prunable else None)
        if cur_fit is None:
            if cur_j is None:
                cur_fit, got = got[0], got[1:]
            else:
                cur_fit = got[cur_j]
        off = len(configs) - len(asked)
        for j, ((t, _s, _v), m) in enumerate(zip(asked, got)):
            if j + off in stopped:
                step, part = stopped[j + off]
                t.set_user_attr("measures_partial", part)
                t.set_user_attr("pruned_step", step)
                study.tell(t, state=TrialState.PRUNED)
                pruned_now += 1
                continue
            t.set_user_attr("measures", m)
            t.set_user_attr("constraints", objective.violations(m))
            study.tell(t, objective.values(m))
        new += len(asked)
        if new >= todo:
            break
    report(todo, max(todo, 1), "held-out check")

    def split(params: dict) -> tuple:
        if not multi:
            return None, {k: _value_text(by_key[cur_s][k], v) for k, v in params.items()}
        s = params["strategy"]
        return s, {k.split(".", 1)[1]: _value_text(by_key[s].get(k.split(".", 1)[1]), v)
                   for k, v in params.items() if k != "strategy"}

    rows, pruned = [], []
    for t in study.get_trials(deepcopy=False, states=finished):
        s, values = split(t.params)
        if t.state == TrialState.PRUNED:
            pruned.append({"number": t.number, "values": values, "step": t.user_attrs.get("pruned_step"),
                           "measures": t.user_attrs.get("measures_partial") or {}, **({"strategy": s} if multi else {})})
            continue
        m = t.user_attrs.get("measures") or {}
        if any(x.measure.key not in m for x in objective.goals):
            continue
        sp = spaces[s if multi else cur_s]
        dist = math.sqrt(sum(((float(values[k.key]) - float(cur_values[s if multi else cur_s][k.key])) / (k.hi - k.lo)) ** 2
                             for k in sp) + (1.0 if multi and s != cur_s else 0.0))
        rows.append({"number": t.number, "values": values, "measures": m, "feasible": objective.feasible(m),
                     "distance": round(dist, 6), **({"strategy": s} if multi else {})})
    chosen = _choose(objective, rows, cur_fit)
    feasible_any = chosen is not None
    if chosen is not None and objective.feasible(cur_fit) and not _beats(objective, chosen["measures"], cur_fit):
        chosen = None  # nothing better than the current setting on the fit data
    feas = [r for r in rows if r["feasible"]]
    front = [feas[i]["number"] for i in _pareto([objective.values(r["measures"]) for r in feas],
                                                objective.directions)] if feas else []
    changes = []
    hold = cur_hold = beats = None
    spread = None
    s_rec = (chosen.get("strategy") or cur_s) if chosen is not None else cur_s
    if chosen is not None:
        cur_v = cur_values[s_rec if multi else cur_s]
        bk = by_key[s_rec if multi else cur_s]
        changes = [(k, _value_text(bk[k], cur_v[k]), v) for k, v in chosen["values"].items()
                   if _value_text(bk[k], cur_v[k]) != v]
        rec_cfg = cfg_of(chosen["values"], s_rec)
        if multi and s_rec != cur_s:  # the strategy (and what it needs to run) changes too
            a, b = _conf_lines_over(current, rec_cfg), _conf_lines_over(rec_cfg, current)
            changes = [(k, a.get(k, "(default)"), v) for k, v in b.items() if k not in chosen["values"]] + changes
        if hold_target is not None:
            cur_hold, hold = hold_target.evaluate([current, rec_cfg], measures,
                                                  strategies=[cur_s, s_rec] if multi else None)
            spread = getattr(hold_target, "spread", None) or None
            beats = _beats(objective, hold, cur_hold)
    importances = _importances(study, spaces, objective, multi)
    labels = (fit_target.label, hold_target.label if hold_target is not None else "")
    rec_conf = ""
    if chosen is not None:
        rec_conf = "\n".join(f"{k}={v}" for k, _a, v in changes)
    verdict = ("no-feasible-setting" if not feasible_any else "no-better-setting" if chosen is None else "no-holdout" if hold is None
               else "beats-current" if beats else "does-not-beat-current")
    space_json = ([{**k.to_json(), "strategy": s} for s, sp in spaces.items() for k in sp] if multi
                  else [k.to_json() for k in space])
    out = {
        "kind": fit_target.where, **(info or {}),
        "objective": objective.to_json(),
        "space": space_json,
        "current": {"values": {k: _value_text(by_key[cur_s].get(k), v) for k, v in cur_values.get(cur_s, {}).items()},
                    "broker_conf": to_broker_conf(current), "fit": cur_fit, "holdout": cur_hold,
                    "feasible": objective.feasible(cur_fit), **({"strategy": cur_s} if multi else {})},
        "recommended": None if chosen is None else {
            "number": chosen["number"], "values": chosen["values"], "fit": chosen["measures"], "holdout": hold,
            "changes": [{"key": k, "from": a, "to": b} for k, a, b in changes], "broker_conf": rec_conf,
            **({"strategy": s_rec} if multi else {})},
        "holdout": {"label": labels[1], "beats": beats, "spread": spread} if hold_target is not None else None,
        "fit_label": labels[0],
        "verdict": verdict,
        "explanation": explain(objective, changes, chosen["measures"] if chosen else None if not feasible_any
                               else {}, cur_fit, hold, cur_hold,
                               beats, importances, labels),
        "importances": importances,
        "trials": rows,
        "pruned": pruned,
        "pareto": front,
        "study": {"name": name, "path": str(path), "trials": len(rows), "new_trials": new, "resumed": resumed,
                  "pruned": len(pruned), "new_pruned": pruned_now,
                  "runs": fit_target.backtests + (hold_target.backtests if hold_target is not None else 0),
                  "replayed": round(getattr(fit_target, "replayed", fit_target.backtests)
                                    + (hold_target.backtests if hold_target is not None else 0), 3)},
    }
    if multi:
        out.update(strategy=s_rec, strategies=names)
    return out
