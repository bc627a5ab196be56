"""A recommendation from request parameters (the command line and the History page share this), and its
text for a terminal.

``params``: ``dataset`` (a path or name) or ``scenario`` (a shipped name or a file), ``strategy``,
``objective`` (text, :mod:`.objective`), ``trials``, ``holdout`` (days, History) or ``seeds`` (held-out
seeds, scenario), ``set`` (the current setting: broker.conf key → value over Pulsar's defaults or the
scenario's config), ``keys`` / ``ranges`` (the space, :func:`.recommend.search_space`), ``start`` /
``end``, ``bundles``, ``synthetic_bundles``, ``engine`` (``pandas`` | ``spark`` | ``auto``), ``batch``,
``seed``, ``minutes`` (scenario), ``placement`` / ``preset`` / ``current_strategy`` (scenario: the current
setting's placement, base preset, and shedding strategy when several are searched), ``fit_seeds`` (scenario: seeds each trial
is simulated on), ``prune`` (default on), ``fresh``.

``strategy`` may name several strategies (``"AvgShedder,ThresholdShedder"``, a list, or ``"any"``): the
study then searches the strategy too, each with its own keys. The current setting runs the scenario's
strategy (a scenario) or ``set``'s ``loadBalancerLoadSheddingStrategy``, else the first one named (History).
"""
from __future__ import annotations

from engine.config import LoadBalancerConfig
from engine.errors import UsageError

from .objective import HISTORY, SCENARIO, parse_objective

__all__ = ["run_recommendation", "recommendation_text", "strategy_list", "DEFAULT_SCENARIO_SEEDS",
           "DEFAULT_FIT_SEEDS"]

DEFAULT_SCENARIO_SEEDS = 3
#: a scenario trial is simulated on this many seeds (its measures are their mean; pruning between seeds)
DEFAULT_FIT_SEEDS = 2
MAX_SEEDS = 20


def strategy_list(value, kind: str) -> list[str] | None:
    """Several strategies named (comma-separated, a list, or ``any``): their registry names; one (or
    none): ``None``. ``any``: every strategy a History backtest runs, or (``kind`` scenario) every
    shedding strategy the Simulator runs."""
    from engine.backtest import backtest_spec, shedding_strategies
    from engine.strategies import registry

    if value is None or value == "":
        return None
    parts = value if isinstance(value, (list, tuple)) else str(value).split(",")
    parts = [str(x).strip() for x in parts if str(x).strip()]
    if len(parts) > 16:
        raise UsageError("at most 16 strategies at once")
    if [x.lower() for x in parts] == ["any"]:
        return shedding_strategies() if kind == HISTORY else [s.name for s in registry.specs(role="shedding")]
    if len(parts) < 2:
        return None
    check = backtest_spec if kind == HISTORY else registry.spec
    out = []
    for x in parts:
        name = check(x).name
        if kind == SCENARIO and not registry.spec(name).is_shedding:
            raise UsageError(f"{name} is not a shedding strategy")
        if name not in out:
            out.append(name)
    return out if len(out) > 1 else None


def _current(base: LoadBalancerConfig, values: dict | None) -> LoadBalancerConfig:
    return base.with_values({str(k): str(v) for k, v in (values or {}).items()}, source="--set")


def run_recommendation(params: dict, progress=None, *, dataset_resolver=None) -> dict:
    """The recommendation for ``params`` (see the module doc). ``dataset_resolver``: name → path (the web
    app passes :func:`.dataset.dataset_by_name`; default :func:`.dataset.resolve_dataset`)."""
    from engine.backtest import backtest_spec

    from .recommend import recommend, search_space, strategy_spaces
    from .recommend_targets import HistoryTarget, ScenarioTarget, parse_holdout, split_days

    p = dict(params)
    extra = {}
    trials = int(p["trials"]) if p.get("trials") is not None else 30
    batch, seed = int(p["batch"]) if p.get("batch") is not None else 8, int(p.get("seed") or 0)
    from .recommend import MAX_BATCH, MAX_TRIALS

    if not 1 <= trials <= MAX_TRIALS:  # before any data is read
        raise UsageError(f"--trials must be in 1..{MAX_TRIALS}, got {trials}")
    if not 1 <= batch <= MAX_BATCH:
        raise UsageError(f"--batch must be in 1..{MAX_BATCH}, got {batch}")
    if p.get("scenario"):
        from engine.simulator import load_scenario
        from engine.simulator.pairing import config_with_strategy

        obj = parse_objective(p.get("objective"), SCENARIO)
        from engine.config import PRESETS
        from engine.simulator import Scenario

        sc = p["scenario"] if isinstance(p["scenario"], Scenario) else load_scenario(p["scenario"])
        preset = p.get("preset") or None
        if preset and preset not in PRESETS:
            raise UsageError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
        several = strategy_list(p.get("strategy"), SCENARIO)
        strategy = None if several else (p.get("strategy") or None)
        base = sc.lb_config(PRESETS[preset] if preset else None)
        current = config_with_strategy(_current(base, p.get("set")), strategy or p.get("current_strategy"),
                                       p.get("placement"))
        from engine.strategies import registry

        name = registry.shedding_name(current.loadBalancerLoadSheddingStrategy)
        if strategy and registry.spec(strategy).name != name:
            raise UsageError(f"{strategy} does not run as the scenario's shedding strategy")
        space = strategy_spaces(several, p.get("keys"), p.get("ranges")) if several else \
            search_space(name, p.get("keys"), p.get("ranges"))
        if several:
            # a trial of another strategy runs the placement it pairs with (or Pulsar's default for it)
            extra = dict(current_strategy=name, configure=lambda cfg, s: config_with_strategy(cfg, s))
        n_hold = int(p.get("seeds") if p.get("seeds") is not None else DEFAULT_SCENARIO_SEEDS)
        if not 0 <= n_hold <= MAX_SEEDS:
            raise UsageError(f"--seeds must be in 0..{MAX_SEEDS}, got {n_hold}")
        n_fit = int(p.get("fit_seeds") if p.get("fit_seeds") is not None else DEFAULT_FIT_SEEDS)
        if not 1 <= n_fit <= MAX_SEEDS:
            raise UsageError(f"--fit-seeds must be in 1..{MAX_SEEDS}, got {n_fit}")
        minutes = p.get("minutes")
        if minutes is not None:
            from engine.limits import MAX_SIMULATION_MINUTES

            if not 1 <= int(minutes) <= MAX_SIMULATION_MINUTES:
                raise UsageError(f"--minutes must be in 1..{MAX_SIMULATION_MINUTES:,}")
        fit = ScenarioTarget(sc, [seed + 1 + i for i in range(n_fit)], minutes=minutes)
        hold = ScenarioTarget(sc, [seed + 1 + n_fit + i for i in range(n_hold)], minutes=minutes) if n_hold else None
        ident = {"scenario": sc.name, "scenario_hash": _scenario_hash(sc), "minutes": minutes, "fit": fit.seeds}
        info = {"scenario": sc.name, "strategy": name, "minutes": minutes,
                "scenario_id": p.get("scenario_id") or (p["scenario"] if isinstance(p["scenario"], str) else sc.name)}
    else:
        from .dataset import fingerprint, read_meta, resolve_dataset

        if not p.get("dataset"):
            raise UsageError("recommend needs a DATASET (or --scenario NAME)")
        ds = (dataset_resolver or resolve_dataset)(p["dataset"])
        obj = parse_objective(p.get("objective"), HISTORY)
        several = strategy_list(p.get("strategy"), HISTORY)
        current = _current(LoadBalancerConfig(), p.get("set"))
        if several:
            from engine.simulator.pairing import config_with_strategy
            from engine.strategies import registry

            named = (p.get("set") or {}).get("loadBalancerLoadSheddingStrategy")
            first = "AvgShedder" if str(p.get("strategy")).strip().lower() == "any" else several[0]
            name = backtest_spec(registry.shedding_name(named) if named else first).name
            current = config_with_strategy(current, name)
            space = strategy_spaces(several, p.get("keys"), p.get("ranges"))
            extra = dict(current_strategy=name, configure=lambda cfg, s: config_with_strategy(cfg, s))
        else:
            name = backtest_spec(p.get("strategy") or "AvgShedder").name
            space = search_space(name, p.get("keys"), p.get("ranges"))
        meta = read_meta(ds)
        holdout = parse_holdout(p["holdout"]) if p.get("holdout") not in (None, "") else None
        fit_days, hold_days = split_days(meta, p.get("start"), p.get("end"), holdout)
        engine = p.get("engine") or "pandas"
        if engine not in ("pandas", "spark", "auto"):
            raise UsageError(f"--engine must be pandas, spark or auto, got {engine!r}")
        if engine == "auto":
            from .jobs import PANDAS_MAX_ROWS, estimate_rows

            engine = "pandas" if estimate_rows(ds, fit_days[0], fit_days[-1], meta=meta) <= PANDAS_MAX_ROWS \
                else "spark"
        bundles = p.get("bundles") or "auto"
        if bundles not in ("auto", "real", "synthetic"):
            raise UsageError(f"--bundles must be auto, real or synthetic, got {bundles!r}")
        if engine == "spark" and bundles == "real":
            raise UsageError("recommend on Spark replays synthetic bundles; use --engine pandas for the "
                             "dataset's own bundle metrics")
        if engine == "spark":
            bundles = "synthetic"  # what the Spark trials replay (the day files' broker rows only)
        kw = dict(bundles=bundles, synthetic_bundles=int(p.get("synthetic_bundles") or 8),
                  weights=current.weights, engine=engine)
        if progress:
            progress(0, 1, f"reading {len(fit_days) + len(hold_days)} day(s) of {ds.name}")
        fit = HistoryTarget(ds, fit_days, name, **kw)
        hold = HistoryTarget(ds, hold_days, name, **kw) if hold_days else None
        ident = {"dataset": fingerprint(ds), "fit": fit_days, "bundles": bundles, "k": kw["synthetic_bundles"]}
        info = {"dataset": str(ds), "dataset_name": ds.name, "strategy": name, "engine": engine,
                "fit_days": fit_days, "holdout_days": hold_days}
    if p.get("prune") is False:
        ident["prune"] = False  # a study without pruning is another study (its trials all complete)
    return recommend(fit, hold, obj, space, current, trials=trials, batch=batch, seed=seed, identity=ident,
                     fresh=bool(p.get("fresh")), progress=progress, info=info, prune=p.get("prune") is not False,
                     **extra)


def _scenario_hash(sc) -> str:
    import hashlib
    raw = repr(sc)  # a frozen dataclass: a scenario file edited gives a new study
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def recommendation_text(res: dict) -> str:
    """The recommendation for a terminal: the verdict, the broker.conf lines, the measures side by side."""
    where = res.get("dataset_name") or res.get("scenario")
    st = res["study"]
    lines = [f"recommend {res['strategy']} on {where}: {res['objective']['text']}",
             f"  study {st['name']}: {st['trials'] + st.get('pruned', 0)} trials ("
             f"{'%d complete, %d pruned; ' % (st['trials'], st['pruned']) if st.get('pruned') else ''}"
             f"{st['new_trials']} new{', resumed' if st['resumed'] else ''}), "
             f"{st['runs']} "
             f"{'backtests' if res['kind'] == HISTORY else 'simulations'} this run"]
    rec = res.get("recommended")
    keys = [g["measure"] for g in res["objective"]["goals"]] + [c["measure"] for c in res["objective"]["constraints"]]
    w = max(len(k) for k in keys) + 2
    lines.append(f"  {'measure':<{w}}{'current':>12}{'recommended':>14}   data")
    for label, cur, new in (("fit", res["current"]["fit"], rec and rec["fit"]),
                            ("held out", res["current"].get("holdout"), rec and rec.get("holdout"))):
        if not cur:
            continue
        for k in keys:
            lines.append(f"  {k:<{w}}{cur[k]:>12.2f}{(new[k] if new else float('nan')):>14.2f}   {label}")
    lines.append("")
    lines += [f"  {s}" for s in res["explanation"]]
    if rec and rec["broker_conf"]:
        lines += ["", "broker.conf:", rec["broker_conf"]]
    return "\n".join(lines)
