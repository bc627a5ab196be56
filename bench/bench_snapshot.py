"""Big snapshots end to end: ``python -m engine shed`` and the Tuner upload on 1,000 brokers × 100,000 bundles.

The snapshot is the project's generated cluster (``engine.synth.random_snapshot``, the
``cluster-100-brokers`` sample's recipe) scaled to 1,000 brokers × 100 bundles, written as LoadData JSON
(``LoadData.to_json``, 64 MB) once into a temporary directory (``--keep DIR`` reuses it).

Measured:

* ``engine shed`` end to end — a fresh ``python -m engine shed FILE`` process (interpreter start,
  imports, read, parse, one ThresholdShedder cycle with its 1,800 placements, the text report), wall
  time and the process's peak RSS (``wait4``); the same with ``--json`` (its size printed) — budget
  ≤ 1 s;
* the Tuner upload — ``dashboard.sources.ingest_files`` on the file's data URL (base64 decode, parse,
  validation, the diskcache write) plus the first analysis the Tuner draws (``dashboard.tuner.analysis.analyze``),
  in this process — budget ≤ 1 s;
* with ``--compare``: the object reader (``engine.io.load_data_from_json`` + ``LoadView.from_load_data``)
  on the same file, once, for reference.

Each end-to-end run is repeated (``--runs``, default 5): the median is held against the budget, the
fastest shows the noise of this shared 2-core machine. The load average is printed with the table.

    .venv/bin/python bench/bench_snapshot.py [--runs 5] [--brokers 1000] [--bundles-per-broker 100] [--compare]
"""
from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))
from scratch import scratch_dir, use_cache_dir  # noqa: E402  (bench/scratch.py)

use_cache_dir("shedlab-bench-snap-")

BUDGET_S = 1.0


def make_snapshot(path: Path, brokers: int, per: int) -> None:
    import json

    from engine.synth import NOW, random_snapshot

    ld = random_snapshot(brokers, per, seed=100, namespaces=20, skew=0.6, now_ms=NOW)
    path.write_text(json.dumps(ld.to_json()))


def run_cli(args: list) -> tuple[float, int, int, float]:
    """(wall seconds, peak RSS in MB, stdout bytes, CPU seconds) of one ``python -m engine ...`` process."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=ROOT, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
        if p.returncode != 0:
            raise SystemExit(f"engine {' '.join(args)} failed ({p.returncode}): {err.strip()[:500]}")
        size = out.seek(0, 2)
    return wall, usage.ru_maxrss // 1024, size, usage.ru_utime + usage.ru_stime


def upload_once(url: str, sid: str):
    import dashboard.sources as S
    from dashboard.tuner.analysis import analyze
    from engine.config import LoadBalancerConfig

    S.clear_memory()
    c = time.process_time()
    t = time.perf_counter()
    got = S.ingest_files(sid, [url], ["cluster-1000.json"])
    t_ingest = time.perf_counter() - t
    if got.errors:
        raise SystemExit(f"upload failed: {got.errors}")
    snap = S.get_snapshot(got.sources[0]["id"])
    a = analyze(snap, LoadBalancerConfig(), 0)
    return time.perf_counter() - t, t_ingest, len(a.cycle.unloads), time.process_time() - c


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("--bundles-per-broker", type=int, default=100)
    ap.add_argument("--keep", metavar="DIR", help="write (or reuse) the snapshot in DIR")
    ap.add_argument("--compare", action="store_true", help="also time the object reader once")
    args = ap.parse_args(argv)

    d = Path(args.keep or scratch_dir("shedlab-bench-snap-"))
    d.mkdir(parents=True, exist_ok=True)
    snap = d / f"cluster-{args.brokers}x{args.bundles_per_broker}.json"
    if not snap.exists():
        t = time.perf_counter()
        make_snapshot(snap, args.brokers, args.bundles_per_broker)
        print(f"generated {snap} in {time.perf_counter() - t:.1f} s")
    mb = snap.stat().st_size / 1e6
    nk = args.brokers * args.bundles_per_broker

    rows = []
    for what, cli in (("engine shed (text)", ["shed", str(snap)]), ("engine shed --json", ["shed", str(snap), "--json"])):
        runs = [run_cli(cli) for _ in range(args.runs)]
        walls = [r[0] for r in runs]
        rows.append((what, statistics.median(walls), min(walls), statistics.median(r[3] for r in runs),
                     max(r[1] for r in runs), runs[-1][2], BUDGET_S))

    raw = snap.read_bytes()
    url = "data:application/json;base64," + base64.b64encode(raw).decode()
    up = [upload_once(url, f"bench-{i}") for i in range(args.runs)]
    rows.append(("Tuner upload + first analysis", statistics.median(u[0] for u in up), min(u[0] for u in up),
                 statistics.median(u[3] for u in up), None, None, BUDGET_S))
    rows.append(("  of which ingest_files (decode, parse, store)", statistics.median(u[1] for u in up),
                 min(u[1] for u in up), None, None, None, None))

    load = os.getloadavg()
    print(f"\nBig snapshot end to end: {args.brokers:,} brokers x {nk:,} bundles, LoadData JSON {mb:.0f} MB "
          f"({os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n")
    head = (f"{'what':<48} {'median s':>9} {'min s':>7} {'CPU s':>6} {'peak RSS MB':>12} {'output':>10} "
            f"{'budget s':>9}  verdict")
    print(head)
    print("-" * len(head))
    ok = True
    for what, med, fast, cpu, rss, size, budget in rows:
        verdict = ""
        if budget is not None:
            verdict = "OK" if med <= budget else "OVER"
            ok &= med <= budget
        out = "" if size is None else (f"{size / 1e6:.1f} MB" if size > 1e6 else f"{size / 1e3:.0f} KB")
        print(f"{what:<48} {med:>9.2f} {fast:>7.2f} {'' if cpu is None else f'{cpu:.2f}':>6} "
              f"{'' if rss is None else rss:>12} {out:>10} "
              f"{'' if budget is None else f'{budget:.1f}':>9}  {verdict}")
    print(f"\n({args.runs} runs each; the budget is held against the median wall time; CPU s = user + system "
          f"time of the process (median), what the work costs when the machine is not shared. The upload's first "
          f"analysis found {up[-1][2]} unloads.)")

    if args.compare:
        import gc
        import json

        from engine.io import load_data_from_json
        from engine.view import LoadView

        gc.collect()
        t = time.perf_counter()
        ld = load_data_from_json(json.loads(raw), str(snap))
        LoadView.from_load_data(ld)
        print(f"object reader (json.loads + load_data_from_json + LoadView.from_load_data), for reference: "
              f"{time.perf_counter() - t:.2f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
