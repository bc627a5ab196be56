"""Every scale measure in one table: the engine with its floor, the simulator, the Tuner in Chromium, History.

Runs the bench scripts one after the other, each in its own process (so one's memory and JIT-warm
state do not help the next), lets each print its own table as it goes, and at the end prints every
row of every script as one table (``bench/rows.py``): measure, size, value, the floor measured in the
same run (the engine's bare-numpy floor, interleaved with the cycle it is held against), ratio,
growth for 10× the brokers, budget and verdict.

Parts (``--only a,b``; all by default):

* ``engine``: ``bench_scale.py --full --cli`` — every strategy's cycle at 1,000 × 100 and at the two
  1 M shapes, round-robin lookups, TransferShedder's view, the cold first cycle, ``shed --json``.
* ``simulator``: ``bench_simulator.py --large`` — 1,000 brokers × 100,000 bundles for an hour and a day.
* ``tuner``: ``bench_dashboard.py --brokers 1000 --bundles 100000`` — slider release to every figure.
* ``tuner-huge``: ``bench_dashboard.py --huge`` — 10,000 brokers × 1 M bundles: the upload to the first
  decision and the slider.
* ``history``: ``bench_history.py --brokers B --days D`` (``--history-brokers``, ``--history-days``;
  default 1,000 × 90) — ingest, aggregate, backtest and the 5 × 6 sweep on one and two executor
  cores, with the time per executor core. The default size takes hours on a 2-core machine.

    .venv/bin/python bench/bench_all.py [--only engine,simulator,tuner,tuner-huge,history] [--moves N]

Exit status 1 when a verdict is OVER or a part failed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import rows  # noqa: E402

PARTS = ("engine", "simulator", "tuner", "tuner-huge", "history")


def commands(a) -> dict[str, list[str]]:
    py, b = sys.executable, str(ROOT / "bench")
    return {
        "engine": [py, f"{b}/bench_scale.py", "--full", "--cli"],
        "simulator": [py, f"{b}/bench_simulator.py", "--large"],
        "tuner": [py, f"{b}/bench_dashboard.py", "--brokers", "1000", "--bundles", "100000", "--moves", str(a.moves)],
        "tuner-huge": [py, f"{b}/bench_dashboard.py", "--huge", "--moves", str(max(4, a.moves * 2 // 3))],
        "history": [py, f"{b}/bench_history.py", "--brokers", str(a.history_brokers), "--days", str(a.history_days),
                    *(["--sweep-days", str(a.sweep_days)] if a.sweep_days else []),
                    *(["--ingest-days", str(a.ingest_days)] if a.ingest_days else [])],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(PARTS), help="comma-separated parts: " + ", ".join(PARTS))
    ap.add_argument("--moves", type=int, default=12, help="slider releases per Tuner case")
    ap.add_argument("--history-brokers", type=int, default=1000)
    ap.add_argument("--history-days", type=int, default=90)
    ap.add_argument("--sweep-days", type=int, default=0, help="days the History sweep covers (0 = all)")
    ap.add_argument("--ingest-days", type=int, default=0,
                    help="days of Prometheus JSON the History ingest covers (0 = all; the JSON takes twice the dataset's disk)")
    a = ap.parse_args(argv)
    wanted = [p for p in a.only.split(",") if p]
    unknown = [p for p in wanted if p not in PARTS]
    if unknown:
        print(f"unknown part(s): {', '.join(unknown)}; choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    cmds = commands(a)
    out = Path(tempfile.mkdtemp(prefix="shedlab-bench-all-")) / "rows.jsonl"
    env = dict(os.environ, **{rows.ROWS_ENV: str(out)})
    failed, spent = [], {}
    for part in wanted:
        print(f"\n=== {part}: {' '.join(Path(c).name if c.endswith('.py') else c for c in cmds[part][1:])}", flush=True)
        t = time.monotonic()
        rc = subprocess.run(cmds[part], cwd=ROOT, env=env).returncode
        spent[part] = time.monotonic() - t
        if rc not in (0, 1):  # 1 = a verdict over budget (the rows say which); anything else = the part failed
            failed.append(f"{part} (exit status {rc})")
    got = rows.read(out)
    print("\n=== every measure, one table "
          f"(load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores; "
          + ", ".join(f"{p} {s / 60:.1f} min" for p, s in spent.items()) + ")\n")
    print(rows.table(got))
    over = [r for r in got if r.get("ok") is False]
    if failed:
        print("\nfailed: " + "; ".join(failed))
    print(f"\n{len(got)} rows, {sum(r.get('ok') is True for r in got)} within budget, {len(over)} over")
    return 1 if over or failed else 0


if __name__ == "__main__":
    sys.exit(main())
