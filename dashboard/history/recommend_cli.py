"""``python -m dashboard.history recommend``: a setting for an objective, on a History range or a scenario.

::

    python -m dashboard.history recommend DATASET --strategy AvgShedder \\
        --objective "min unloads_per_day; hot_unanswered(20) <= 5" --trials 40 [--holdout 7d] [--json]
    python -m dashboard.history recommend --scenario bigo-jitter --strategy ThresholdShedder \\
        --objective "min unloads_per_day; usage_range_p95 <= 25" --trials 30 [--seeds 3] [--fit-seeds 2]
    python -m dashboard.history recommend sample --strategy AvgShedder,ThresholdShedder ...   (or any)

The study is stored in the cache directory: the same command again continues it (``--trials`` is the
total), ``--fresh`` starts over. Exit status 2 on a bad objective, key, range or option (one line).
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["add_parser", "run", "params_from_args"]


def add_parser(sub, kv) -> None:
    r = sub.add_parser("recommend", help="search a strategy's keys for an objective; validate on held-out data")
    r.add_argument("dataset", nargs="?", help="a History dataset (path or name); omit with --scenario")
    r.add_argument("--scenario", help="a shipped scenario name or a scenario file, instead of a dataset")
    r.add_argument("--strategy", help="the shedding strategy (default: AvgShedder; a scenario: its own); several "
                                      "comma-separated, or 'any': the strategy is searched too")
    r.add_argument("--placement", help="with --scenario: the placement strategy")
    r.add_argument("--objective", action="append", required=True,
                   help="goals and constraints, ';'-separated: 'min unloads_per_day; hot_unanswered(20) <= 5' "
                        "(repeatable: the parts are joined)")
    r.add_argument("--trials", type=int, default=30, help="complete trials the study should hold (default 30)")
    r.add_argument("--holdout", help="History: the last N days held out, e.g. 7d (default: a quarter of the days)")
    r.add_argument("--seeds", type=int, help="scenario: held-out seeds (default 3)")
    r.add_argument("--fit-seeds", type=int, help="scenario: seeds each trial is simulated on (default 2)")
    r.add_argument("--minutes", type=int, help="scenario: minutes to simulate")
    r.add_argument("--no-prune", action="store_true",
                   help="run every trial to the end (default: one goal prunes trials hopeless after a stage)")
    r.add_argument("--keys", help="keys to search, comma-separated (default: the strategy's sweep keys)")
    r.add_argument("--range", action="append", default=[], metavar="KEY=LO:HI", help="a key's range (repeatable)")
    r.add_argument("--set", type=kv, action="append", default=[], metavar="KEY=VALUE",
                   help="the current setting (repeatable), over Pulsar's defaults or the scenario's config")
    r.add_argument("--conf", help="the current setting as a broker.conf file")
    r.add_argument("--start")
    r.add_argument("--end")
    r.add_argument("--engine", default="pandas", choices=["pandas", "spark", "auto"])
    r.add_argument("--bundles", choices=["auto", "real", "synthetic"])
    r.add_argument("--synthetic-bundles", type=int, default=8)
    r.add_argument("--batch", type=int, default=8, help="trials run together in one pass over the history")
    r.add_argument("--seed", type=int, default=0, help="the sampler's seed (and the scenario's first seed)")
    r.add_argument("--fresh", action="store_true", help="drop the stored study and start over")
    r.add_argument("--html", metavar="FILE", help="also write the self-contained HTML report")
    r.add_argument("--json", action="store_true")
    r.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")


def params_from_args(a) -> dict:
    from engine.errors import UsageError

    values = {}
    if a.conf:
        from engine.config import parse_broker_conf, to_broker_conf
        from engine.io import read_input_text

        cfg = parse_broker_conf(read_input_text(Path(a.conf)), source=a.conf).config
        values.update(dict(line.split("=", 1) for line in to_broker_conf(cfg).splitlines() if "=" in line))
    values.update(dict(a.set))
    if a.synthetic_bundles is not None and not 1 <= a.synthetic_bundles <= 100_000:
        raise UsageError("--synthetic-bundles must be in 1..100,000")
    return {"dataset": a.dataset, "scenario": a.scenario, "strategy": a.strategy, "placement": a.placement,
            "objective": a.objective, "trials": a.trials, "holdout": a.holdout, "seeds": a.seeds,
            "minutes": a.minutes, "fit_seeds": a.fit_seeds, "prune": not a.no_prune, "keys": [k.strip() for k in a.keys.split(",") if k.strip()] if a.keys else None,
            "ranges": a.range, "set": values, "start": a.start, "end": a.end, "engine": a.engine,
            "bundles": a.bundles, "synthetic_bundles": a.synthetic_bundles, "batch": a.batch, "seed": a.seed,
            "fresh": a.fresh}


def run(a) -> int:
    from dashboard.spark import set_cli_conf

    from .recommend_run import recommendation_text, run_recommendation

    set_cli_conf(a.spark_conf)
    res = run_recommendation(params_from_args(a))
    if a.html:
        from dashboard.recommend_report import build_recommend_report

        Path(a.html).write_text(build_recommend_report(res))
    print(json.dumps(res, indent=1, default=str) if a.json else recommendation_text(res))
    return 0
