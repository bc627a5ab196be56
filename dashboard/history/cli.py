"""``python -m dashboard.history ...``: ingestion, generation, aggregation, backtest and sweep from a shell.

::

    python -m dashboard.history ingest FILE_OR_DIR... --out DATASET
                                       [--format auto|prometheus|vmexport|promtool|exposition|csv|parquet|timeline]
                                       [--cluster NAME] [--broker-label LABEL] [--broker-map FILE]
                                       [--metric NAME] [--max-gap 5] [--name NAME] [--force]
                                       [--engine auto|spark|pandas] [--spark-conf KEY=VALUE]...
    python -m dashboard.history generate --out DATASET [--brokers 10] [--days 2] [--seed 0] [--start 2026-01-05]
                                       [--bundles-per-broker 4] [--no-bundle-metrics] [--no-incidents] [--force]
    python -m dashboard.history generate --out DATASET --simulator SCENARIO [--minutes N] [--strategy S] [--seed 0]
    python -m dashboard.history aggregate DATASET [--start T] [--end T] [--weights 1,0,1,1] [--top 10]
    python -m dashboard.history backtest DATASET --strategy AvgShedder [--set KEY=VALUE]... [--conf broker.conf]
                                       [--bundles auto|real|synthetic] [--synthetic-bundles 8]
    python -m dashboard.history sweep DATASET --strategy AvgShedder --x KEY=V1,V2,... --y KEY=V1,V2,... [--set ...]

``--strategy`` is any shedding strategy of the modular load manager the strategy registry knows
(:func:`engine.backtest.shedding_strategies`; plug-ins from ``SHEDLAB_STRATEGY_MODULES`` too).
    python -m dashboard.history bundles DATASET [--top 20]
    python -m dashboard.history agreement DATASET --conf broker.conf [--start T] [--end T] [--json]
                                       [--html REPORT.html] [--engine auto|spark|pandas] [--no-cache]
    python -m dashboard.history list

Common options of the jobs: ``--engine spark|pandas|auto`` (default ``spark``: this command is for
big datasets and cron), ``--no-cache``, ``--json``. DATASET is a path or a name under the datasets
directory (``SHEDLAB_HISTORY_DIR``; ``sample`` is the shipped sample). Results are written as small
Parquet files under the app cache directory's ``results/`` (the app reads them) and cached. Spark settings come from
``LB_SPARK_MASTER`` / ``LB_SPARK_REMOTE``, ``SHEDLAB_SPARK_DEFAULTS`` / ``SHEDLAB_SPARK_CONF`` and
``--spark-conf KEY=VALUE`` (``--conf`` is the broker.conf here; see :mod:`dashboard.spark`). ``DATASET``
may be a Hadoop URI (``file://``, ``hdfs://``, ``s3a://``): the job then runs on Spark and
``--results URI`` says where its tables go (:mod:`dashboard.history.uri`). Exit status 0 on success,
2 on bad input or usage (one line, no traceback), 3 when Spark cannot start.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from engine.errors import InputError, UsageError

__all__ = ["main"]


def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _grid(text: str) -> tuple[str, list[float]]:
    k, v = _kv(text)
    try:
        vals = [float(x) for x in v.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KEY=V1,V2,... with numbers, got {text!r}") from None
    if not vals:
        raise argparse.ArgumentTypeError(f"no values in {text!r}")
    return k, vals


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m dashboard.history", description="Shedlab history at scale (Spark).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ingest", help="Prometheus query_range JSON, VictoriaMetrics export, promtool tsdb dump, "
                                      "scraped /metrics, long CSV or Parquet, LoadData timelines -> dataset")
    p.add_argument("inputs", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--format", default="auto", choices=["auto", "prometheus", "vmexport", "promtool", "exposition",
                                                        "csv", "parquet", "timeline"])
    p.add_argument("--cluster", help="keep the series of this `cluster` label (required when several are mixed)")
    p.add_argument("--broker-label", metavar="LABEL",
                   help="take every series' broker id from this label (default: broker, pod, kubernetes_pod_name, "
                        "instance — the first present)")
    p.add_argument("--broker-map", metavar="FILE", help="YAML/JSON {label value: broker id} applied to the ids")
    p.add_argument("--metric", help="metric name for series without __name__")
    p.add_argument("--max-gap", type=int, default=5, help="carry values over gaps of up to N minutes (default 5)")
    p.add_argument("--name")
    p.add_argument("--force", action="store_true", help="replace an existing dataset")
    p.add_argument("--json", action="store_true")
    p.add_argument("--engine", default="auto", choices=["auto", "spark", "pandas"],
                   help="auto (default): Spark above a size threshold (SHEDLAB_INGEST_SPARK_MB), else pandas; "
                        "env SHEDLAB_INGEST_ENGINE does the same")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting (repeatable), e.g. spark.executor.memory=8g; see dashboard/spark.py")
    g = sub.add_parser("generate", help="write a realistic generated history")
    g.add_argument("--out", required=True)
    g.add_argument("--brokers", type=int, default=10)
    g.add_argument("--days", type=int, default=2)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--start", default="2026-01-05")
    g.add_argument("--bundles-per-broker", type=int, default=4)
    g.add_argument("--no-bundle-metrics", action="store_true")
    g.add_argument("--no-incidents", action="store_true")
    g.add_argument("--simulator", metavar="SCENARIO",
                   help="drive the history with the simulator (a shipped scenario name or a file) instead")
    g.add_argument("--minutes", type=int, help="with --simulator: minutes to simulate")
    g.add_argument("--strategy", help="with --simulator: shedding strategy of the simulated leader")
    g.add_argument("--name")
    g.add_argument("--force", action="store_true")
    g.add_argument("--json", action="store_true")
    from .jobs import DEFAULT_STRATEGY

    for name, helptext in (("aggregate", "cluster aggregates per minute/hour/day, percentiles, hottest brokers"),
                           ("backtest", "replay a shedding strategy over the history"),
                           ("sweep", "backtest over a grid of two config keys"),
                           ("bundles", "per-bundle distribution over time")):
        j = sub.add_parser(name, help=helptext)
        j.add_argument("dataset")
        j.add_argument("--start")
        j.add_argument("--end")
        j.add_argument("--engine", default="spark", choices=["spark", "pandas", "auto"])
        j.add_argument("--no-cache", action="store_true")
        j.add_argument("--json", action="store_true")
        j.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting (repeatable), e.g. spark.executor.memory=8g; see dashboard/spark.py")
        j.add_argument("--results", metavar="URI", help="with a URI dataset: where the result tables go (default: DATASET/_results/...)")
        if name == "aggregate":
            j.add_argument("--weights", help="cpu,directMemory,bandwidthIn,bandwidthOut (default: the config's 1,0,1,1)")
            j.add_argument("--top", type=int, default=10)
        if name == "bundles":
            j.add_argument("--top", type=int, default=20)
        if name in ("backtest", "sweep"):
            j.add_argument("--strategy", default=DEFAULT_STRATEGY,
                           help=f"a shedding strategy of the modular load manager (default {DEFAULT_STRATEGY})")
            j.add_argument("--set", type=_kv, action="append", default=[], metavar="KEY=VALUE")
            j.add_argument("--conf", help="a broker.conf file (its load-balancer keys apply)")
            j.add_argument("--bundles", default="auto", choices=["auto", "real", "synthetic"])
            j.add_argument("--synthetic-bundles", type=int, default=8)
            j.add_argument("--chunks", type=int, default=1,
                           help="Spark: cut the history in N time chunks replayed in parallel, checked to give the "
                                "same events as one replay (default 1: one streaming task per backtest)")
        if name == "sweep":
            j.add_argument("--x", type=_grid, required=True, metavar="KEY=V1,V2,...")
            j.add_argument("--y", type=_grid, required=True, metavar="KEY=V1,V2,...")
            j.add_argument("--groups", type=int, default=0,
                           help="Spark: cells are dealt into N groups, each one task streaming the history once "
                                "(default 0: the executor cores, capped by the cells)")
    a = sub.add_parser("agreement", help="predicted vs actual: the load manager's counters (and bundle moves) "
                                         "against the engine run with the cluster's broker.conf")
    a.add_argument("dataset")
    a.add_argument("--conf", metavar="broker.conf", help="the cluster's broker.conf (default: Pulsar's defaults)")
    a.add_argument("--set", type=_kv, action="append", default=[], metavar="KEY=VALUE")
    a.add_argument("--start")
    a.add_argument("--end")
    a.add_argument("--json", action="store_true")
    a.add_argument("--html", metavar="FILE", help="also write the self-contained HTML report")
    a.add_argument("--engine", default="auto", choices=["spark", "pandas", "auto"],
                   help="the backtest that predicts: auto = pandas for small ranges, Spark for big ones")
    a.add_argument("--no-cache", action="store_true")
    sub.add_parser("list", help="list the datasets under the datasets directory").add_argument("--json", action="store_true")
    return ap


def _job_params(a) -> dict:
    p = {"start": a.start, "end": a.end}
    if a.cmd == "aggregate":
        if a.weights:
            try:
                p["weights"] = [float(x) for x in a.weights.split(",")]
            except ValueError:
                raise UsageError(f"--weights takes four numbers, got {a.weights!r}") from None
        p["top_n"] = a.top
    elif a.cmd == "bundles":
        p["top_n"] = a.top
    else:
        values = {}
        if a.conf:
            from pathlib import Path

            from engine.config import parse_broker_conf, to_broker_conf

            from engine.io import read_input_text

            text = read_input_text(Path(a.conf))  # bounded like every input (SHEDLAB_MAX_INPUT_MB)
            cfg = parse_broker_conf(text, source=a.conf).config
            values.update(dict(line.split("=", 1) for line in to_broker_conf(cfg).splitlines() if "=" in line))
        values.update(dict(a.set))
        p.update(strategy=a.strategy, set=values, bundles=a.bundles, synthetic_bundles=a.synthetic_bundles,
                 chunks=a.chunks)
        if a.cmd == "sweep":
            p.update(x_key=a.x[0], x_values=a.x[1], y_key=a.y[0], y_values=a.y[1])
            if a.groups:
                p["groups"] = a.groups
    return p


def _summary(job: str, res: dict) -> dict:
    if job == "aggregate":
        m, top = res["minute"], res["top"]
        return {"minutes": len(m), "brokers": len(res["brokers"]),
                "rate_ratio_max": float(m["rate_ratio"].max()) if len(m) else None,
                "cpu_range_max": float(m["cpu_range"].max()) if len(m) else None,
                "usage_std_mean": float(m["usage_std"].mean()) if len(m) else None,
                "top": [(r.broker, round(float(r.usage_mean), 2)) for r in top.itertuples()]}
    if job == "backtest":
        return {"events": len(res["events"]), "per_day": res["per_day"][["day", "events"]].values.tolist(),
                "pairs": [(r.broker, r.partner, int(r.events)) for r in res["per_pair"].head(20).itertuples()]}
    if job == "sweep":
        return {"cells": res["cells"][["x", "y", "events", "bundles"]].values.tolist()}
    return {"hours": len(res["hour"]), "top": res["top"][["bundle", "rate_mean"]].head(10).values.tolist()}


#: memory ``generate`` needs per row of one day (it writes day by day), measured, rounded up
GENERATE_BYTES_PER_DAY_ROW = 250


def _check_args(a) -> None:
    """Ranges of the numeric options, and runs sized against ``SHEDLAB_MAX_RUN_MB`` before they start
    (engine.limits): ``UsageError`` / ``InputError`` naming the option."""
    from engine.limits import MAX_SIMULATION_MINUTES, check_run_memory

    def rng(name, v, lo, hi):
        if v is not None and not lo <= v <= hi:
            raise UsageError(f"--{name} must be in {lo}..{hi:,}, got {v}")

    if a.cmd in ("ingest", "generate"):
        from engine.cli.common import check_out_dir

        check_out_dir(a.out)
    if a.cmd == "ingest":
        rng("max-gap", a.max_gap, 0, 10_080)
    elif a.cmd == "generate":
        rng("minutes", a.minutes, 1, MAX_SIMULATION_MINUTES)
        if a.seed is not None and a.seed < 0:
            raise UsageError(f"--seed must not be negative, got {a.seed}")
        if a.simulator and a.minutes:
            from engine.simulator import load_scenario
            from engine.simulator.scenario import check_scenario_size

            check_scenario_size(load_scenario(a.simulator), a.minutes, field="--minutes")
        if not a.simulator:
            rng("brokers", a.brokers, 1, 100_000)
            rng("days", a.days, 1, 3_660)
            rng("bundles-per-broker", a.bundles_per_broker, 0, 100_000)
            rows = a.brokers * 1440 * (9 + (0 if a.no_bundle_metrics else 5 * a.bundles_per_broker))
            check_run_memory(rows * GENERATE_BYTES_PER_DAY_ROW,
                             f"generating {a.brokers:,} brokers with {a.bundles_per_broker:,} bundles each",
                             field="--brokers")
    elif a.cmd in ("aggregate", "bundles"):
        rng("top", a.top, 1, 100_000)
    elif a.cmd in ("backtest", "sweep"):
        rng("synthetic-bundles", a.synthetic_bundles, 1, 100_000)
        rng("chunks", a.chunks, 1, 10_000)
        if a.cmd == "sweep":
            rng("groups", a.groups, 0, 10_000)
            for opt in ("x", "y"):
                vals = getattr(a, opt)[1]
                if len(vals) > 100 or not all(v == v and abs(v) != float("inf") for v in vals):
                    raise UsageError(f"--{opt} takes at most 100 finite numbers")


def main(argv=None) -> int:
    a = _parser().parse_args(argv)
    t = time.perf_counter()
    try:
        _check_args(a)
        if a.cmd == "list":
            from .dataset import list_datasets

            ds = list_datasets()
            print(json.dumps(ds, indent=1) if a.json else "\n".join(
                f"{d['name']:<24} {d['rows']:>13,} rows  {d['start']} .. {d['end']}  {d['path']}" for d in ds)
                or "no datasets")
            return 0
        if a.cmd == "agreement":
            return _agreement(a)
        if a.cmd == "ingest":
            from dashboard.spark import set_cli_conf

            from .ingest_spark import ingest_any, stage_printer

            set_cli_conf(a.spark_conf)
            meta = ingest_any(a.inputs, a.out, engine=a.engine, progress=stage_printer(), fmt=a.format,
                              metric=a.metric, max_gap=a.max_gap, overwrite=a.force, name=a.name, cluster=a.cluster,
                              broker_label=a.broker_label, broker_map=a.broker_map)
        elif a.cmd == "generate" and a.simulator:
            from .generate import from_simulation

            meta = from_simulation(a.out, a.simulator, minutes=a.minutes, seed=a.seed, strategy=a.strategy,
                                   overwrite=a.force, name=a.name)
        elif a.cmd == "generate":
            from .generate import generate

            meta = generate(a.out, brokers=a.brokers, days=a.days, seed=a.seed, start=a.start,
                            bundles_per_broker=a.bundles_per_broker, bundle_metrics=not a.no_bundle_metrics,
                            incidents=not a.no_incidents, overwrite=a.force, name=a.name)
        else:
            from dashboard.spark import set_cli_conf

            from .dataset import resolve_dataset
            from .jobs import run_job
            from .uri import is_uri

            set_cli_conf(a.spark_conf)
            # a Hadoop URI (file://, hdfs://, s3a://) is read through Spark; else a path or a dataset name
            ds = a.dataset if is_uri(a.dataset) else resolve_dataset(a.dataset)
            res = run_job(a.cmd, ds, _job_params(a), engine=a.engine, use_cache=not a.no_cache, write=True,
                          progress=None, results=a.results)
            out = {"dataset": str(ds), "job": a.cmd, "seconds": round(time.perf_counter() - t, 2),
                   "meta": res.get("_meta", {}), "summary": _summary(a.cmd, res)}
            print(json.dumps(out, indent=1, default=str) if a.json else _text(out))
            return 0
        info = {k: meta[k] for k in ("name", "rows", "start", "end", "has_bundles")}
        info["path"], info["report"] = str(a.out), meta.get("report", {})
        print(json.dumps(info, indent=1, default=str) if a.json else
              f"wrote {meta['rows']:,} rows ({meta['start']} .. {meta['end']}) to {a.out}"
              + (f"\nreport: {json.dumps(meta['report'], default=str)}" if meta.get("report") else ""))
        return 0
    except (InputError, UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - Spark failures become one line
        from dashboard.spark import SparkUnavailable

        from .jobs import describe_error

        print(f"error: {describe_error(exc)}", file=sys.stderr)
        return 3 if isinstance(exc, SparkUnavailable) else 1


def _agreement(a) -> int:
    from pathlib import Path

    from engine.agreement import agreement_text
    from engine.io import read_input_text

    from .dataset import resolve_dataset
    from .predicted import history_agreement

    ds = resolve_dataset(a.dataset)
    text = read_input_text(a.conf) if a.conf else ""
    text += "".join(f"\n{k}={v}" for k, v in a.set)
    ag = history_agreement(ds, a.start, a.end, conf_text=text, conf_source=a.conf or "--set", engine=a.engine,
                           use_cache=not a.no_cache)
    if a.html:
        from dashboard.export import build_agreement_report
        from dashboard.figures.history import agreement_figure

        try:
            Path(a.html).write_text(build_agreement_report(ag, agreement_figure(ag), conf=text))
        except OSError as exc:
            raise UsageError(f"--html {a.html}: cannot write: {exc.strerror or exc}") from None
    print(json.dumps(ag.to_json(), indent=1, default=str) if a.json else agreement_text(ag))
    return 0


def _text(out: dict) -> str:
    lines = [f"{out['job']} on {out['dataset']} in {out['seconds']} s ({out['meta'].get('engine', 'cache')})"]
    for k, v in out["summary"].items():
        lines.append(f"  {k}: {v}")
    return "\n".join(lines)
