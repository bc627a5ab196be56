"""``python -m engine simulate SCENARIO``: run a scenario minute by minute and report what happened.

``SCENARIO`` is a scenario file (YAML or JSON, see ``docs/scenarios.md``) or the name of a shipped
one (``samples/scenarios/NAME.yaml``). The load-balancer config is the scenario's (its ``preset`` and
``config`` keys on Pulsar 4.x defaults), then ``--preset`` (replaces the scenario's preset),
``--conf broker.conf``, ``--set KEY=VALUE``, ``--strategy`` / ``--placement``. ``--seed`` defaults
to the scenario's seed; the same seed gives the same output.

JSON contract (``--json``)::

    {"scenario": NAME, "strategy": SHORT_NAME, "placement": SHORT_NAME, "seed": INT, "minutes": INT,
     "cancelled": false,
     "summary": {"unloads": INT, "bad_placements": INT, "first_unload_minute": INT or null,
                 "settled_minute": INT or null, "msg_rate_ratio": FLOAT or null,
                 "throughput_ratio": FLOAT or null, "cpu_range": FLOAT,
                 ... every key of engine.simulator.metrics.SUMMARY_KEYS ...},
     "brokers": {BROKER_ID: {"cpu": PCT, "usage": PCT, "msg_rate": FLOAT, "throughput": FLOAT,
                             "bundles": INT}},
     "strategy_state": {STRATEGY: {...}},   # the strategies' memories at the end: each state
                                            # value's to_json() (lossless), by short name
     "events": [{"minute": INT, "time": ISO8601, "kind": "unload" | "unload-skipped" | "assign" |
                 "split" | "broker-added" | "broker-removed" | "leader-change" | "config-change" |
                 "cpu" | "check", "broker", "bundle", "destination", "reason", "placement",
                 "random": BOOL, "from_plan": BOOL, "bad_placement": BOOL, "dest_usage", "avg_usage",
                 "src_score", "dst_score", "score_unit", "msg_rate", "throughput",
                 "unavailable_s", "scores": JSON-TEXT, "placement_scores": JSON-TEXT,
                 "cycle": INT or null, "detail",
                 "label": "Success" | "Skip" | "",         # the shedding cycle's (check/unload rows)
                 "reason_code": "Overloaded" | "Underloaded" | "Balanced" | "HitCount" | ... | ""}, ...],
     "files": [PATH, ...]}            # only with --out

``--strategy TransferShedder`` runs the Extensible Load Manager (``loadManagerClassName`` is set to
``ExtensibleLoadManagerImpl``; placement ``ExtensibleLeastResourceUsageWithWeight`` unless
``--placement RoundRobinBrokerSelector``): every broker advances its ``BrokerLoadData`` EMA 12 times
a simulated minute (one per 5 s generation) and publishes it when its load report is due, the leader
runs TransferShedder every shedding interval (hit count, 180 s cool-down, transfers to the min broker).
Its ``summary`` adds ``load_std`` (std of the published ``weightedMaxEMA`` at the last check, %),
``target_std`` (``loadBalancerBrokerLoadTargetStd``, %) and ``target_met_minute``; unload and check
reasons start with Pulsar's codes (``Overloaded``, ``Underloaded``, ``HitCount``, ``CoolDown``,
``NoBundles``, ...). ``--out`` adds ``load_std`` and ``target_std`` to the cluster table. Example::

    python -m engine simulate bigo-scale-out --strategy TransferShedder --set loadBalancerBrokerLoadTargetStd=0.1

Ratios and ranges in ``summary`` are those of the last minute (``null`` when a broker carries no
traffic, i.e. the ratio is infinite); ``brokers`` values are averaged over the last 10 minutes of the
brokers running at the end. ``events`` leaves out the per-check ``check`` rows unless
``--events all``. ``--out DIR`` writes ``events``, ``brokers`` (per minute and broker), ``cluster``
(per minute) and ``summary`` as CSV (or Parquet with ``--format parquet``).

Exit status: 0 on success, 2 on a bad scenario, config or option (one line on stderr) — including
strategy pairs no load manager runs: TransferShedder with a modular placement (other than round
robin), an extensible placement with a modular shedding strategy, AvgShedder placement without
AvgShedder shedding, an extensible ``loadManagerClassName`` with a modular shedding strategy, or a
config event switching between the two load managers.
"""
from __future__ import annotations


from ..config import PRESETS, PULSAR_4_DEFAULTS, changed_keys, parse_broker_conf
from ..errors import InputError, UsageError
from ..releases import defaults_for, release
from ..io import read_input_text
from . import print_json
from .common import add_config_args, check_out_dir


def register(sub):
    p = sub.add_parser("simulate", help="simulate a cluster over time (scenario file)",
                       description="Simulate a Pulsar cluster minute by minute: traffic, load reports, "
                                   "shedding, placement, events.")
    p.add_argument("scenario", help="scenario file (YAML/JSON) or shipped scenario name")
    add_config_args(p)
    p.add_argument("--minutes", type=int, help="simulated minutes (default: the scenario's)")
    p.add_argument("--out", metavar="DIR", help="write events, brokers, cluster and summary tables here")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv", help="table format for --out")
    p.add_argument("--events", choices=("decisions", "all", "none"), default="decisions",
                   help="events in the JSON/text output (default: everything but the per-check rows)")
    p.set_defaults(func=run, seed=None)


def run(args) -> int:
    from ..simulator import load_scenario, run_scenario

    from ..limits import MAX_SIMULATION_MINUTES
    from ..simulator.scenario import check_scenario_size

    if args.minutes is not None and not 1 <= args.minutes <= MAX_SIMULATION_MINUTES:
        raise UsageError(f"--minutes must be in 1..{MAX_SIMULATION_MINUTES} (one year), got {args.minutes}")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must not be negative, got {args.seed}")
    if args.out:
        check_out_dir(args.out)
    sc = load_scenario(args.scenario)
    if args.minutes is not None:  # brokers x minutes of the run, before it starts
        check_scenario_size(sc, args.minutes, field="--minutes")
    base = PRESETS[args.preset] if args.preset else None
    version = getattr(args, "pulsar_version", None)
    if version:  # the release's defaults under the preset's keys; the scenario's keys on top; the release wins
        try:
            rel = release(version).version
        except InputError as exc:
            raise UsageError(f"--pulsar-version: {exc.message}") from None
        base = defaults_for(rel)
        if args.preset:
            keys = {k: v for k, (_o, v) in changed_keys(PRESETS[args.preset], PULSAR_4_DEFAULTS).items()
                    if k != "pulsarVersion"}
            base = base.with_values(keys) if keys else base
    cfg = sc.lb_config(base)
    if version:
        cfg = cfg.with_values({"pulsarVersion": rel})
    if args.conf:
        cfg = parse_broker_conf(read_input_text(args.conf), base=cfg, source=args.conf).config
    values = {}
    for item in args.set or []:
        if "=" not in item:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        values[k.strip()] = v.strip()
    res = run_scenario(sc, config=cfg, set=values or None, strategy=args.strategy, placement=args.placement,
                       minutes=args.minutes, seed=args.seed)
    try:
        files = [str(x) for x in res.write(args.out, args.format)] if args.out else []
    except OSError as exc:
        raise UsageError(f"--out {args.out}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        out = res.to_json(events=args.events)
        if files:
            out["files"] = files
        print_json(out)
        return 0
    print(_text(res, args.events))
    for f in files:
        print(f"wrote {f}")
    return 0


def _fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        if v != v:
            return "-"
        if v == float("inf"):
            return "inf"
        return f"{v:,.{nd}f}"
    return str(v)


def _text(res, events: str, limit: int = 40) -> str:
    s = res.summary
    sc = res.scenario
    lines = [f"{sc.name}: {sc.title}" if sc.title else sc.name,
             f"{s['strategy']} + {s['placement']}, seed {res.seed}, {res.minutes} minutes, "
             f"{s['brokers']} brokers, {s['bundles']} bundles"]
    lines.append(
        f"  unloads {s['unloads']} in {s['unload_rounds']} round(s) (first at minute {_fmt(s['first_unload_minute'])}, "
        f"last {_fmt(s['last_unload_minute'])}); bad placements {s['bad_placements']}; random placements "
        f"{s['random_placements']}; assignments {s['assigns']}; splits {s['splits']}")
    lines.append(
        f"  settled at minute {_fmt(s['settled_minute'])}; at the end: msg-rate max/min {_fmt(s['msg_rate_ratio'])}, "
        f"throughput max/min {_fmt(s['throughput_ratio'])}, CPU range {_fmt(s['cpu_range'], 1)} points, "
        f"usage std {_fmt(s['usage_std'], 1)}; oscillation {_fmt(s['oscillation'])} reversals per broker-hour")
    if "load_std" in s:
        lines.append(f"  load std (published weightedMaxEMA) {_fmt(s['load_std'], 1)} % at the last check, target "
                     f"{_fmt(s['target_std'], 1)} %; at or below the target from minute {_fmt(s['target_met_minute'])}")
    lines.append("  brokers (last 10 minutes): " + "; ".join(
        f"{b} cpu {v['cpu']:.1f} % {v['msg_rate']:,.0f} msg/s {v['bundles']} bundles"
        for b, v in list(res.broker_averages(10).items())[:12]))
    if events != "none":
        ev = res.events if events == "all" else res.events[res.events["kind"] != "check"]
        shown = ev.head(limit)
        for r in shown.itertuples(index=False):
            what = r.kind
            if r.kind == "unload":
                what = f"UNLOAD {r.bundle} {r.broker} -> {r.destination}" + (" [random]" if r.random else "") + (
                    " [onto a broker above average]" if r.bad_placement else "")
            elif r.kind == "assign":
                what = f"assign {r.bundle} -> {r.destination}" + (" [random]" if r.random else "")
            elif r.broker:
                what = f"{r.kind} {r.broker}" + (f" {r.bundle}" if r.bundle else "")
            line = f"  m{r.minute:>4} {what}: {r.reason}"
            if r.kind in ("unload", "assign") and r.placement:
                line += f" | placement: {r.placement}"
            lines.append(line)
        if len(ev) > limit:
            lines.append(f"  ... {len(ev) - limit} more event(s) (--json or --out for all)")
    return "\n".join(lines)
