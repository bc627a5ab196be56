"""Run the malformed command-line corpus (``tests/malformed_corpus.py``) in-process and print the
counts per kind: inputs tried, exit 0, exit 2, other exits, crashes (an exception escaping
``main``, i.e. a traceback).

    .venv/bin/python scripts/fuzz_counts.py [--verbose]
"""
from __future__ import annotations

import collections
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.malformed_corpus import build_corpus  # noqa: E402


def run_case(case) -> tuple[str, str]:
    """(outcome, last stderr line): outcome is ``exit0``, ``exit2``, ``exitN`` or ``crash``."""
    from dashboard.collect.cli import main as collect_main
    from dashboard.history.cli import main as history_main
    from engine.cli import main as engine_main

    entry = {"engine": engine_main, "history": history_main, "collect": collect_main}[case.entry]
    old = {k: os.environ.get(k) for k in case.env}
    os.environ.update(case.env)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = entry(list(case.argv))
            except SystemExit as e:
                rc = e.code
        outcome = f"exit{rc}"
    except Exception as exc:  # noqa: BLE001 - counted as a crash
        outcome = "crash"
        err.write(f"{type(exc).__name__}: {exc}")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    lines = err.getvalue().strip().splitlines()
    return outcome, lines[-1] if lines else ""


def main(argv=None) -> int:
    verbose = "--verbose" in (argv or sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="shedlab-corpus-") as d:
        cases = build_corpus(Path(d))
        per = collections.defaultdict(collections.Counter)
        for c in cases:
            outcome, line = run_case(c)
            per[c.kind][outcome] += 1
            if verbose:
                print(f"{outcome:6} {c.kind:16} {c.label[:40]:40} {line[:140]}")
    print(f"| kind | tried | exit 0 | exit 2 | other exit | crashes |\n|---|---|---|---|---|---|")
    tot = collections.Counter()
    for kind, cnt in per.items():
        n = sum(cnt.values())
        other = n - cnt["exit0"] - cnt["exit2"] - cnt["crash"]
        tot.update({"n": n, "0": cnt["exit0"], "2": cnt["exit2"], "o": other, "c": cnt["crash"]})
        print(f"| {kind} | {n} | {cnt['exit0']} | {cnt['exit2']} | {other} | {cnt['crash']} |")
    print(f"| **all** | {tot['n']} | {tot['0']} | {tot['2']} | {tot['o']} | {tot['c']} |")
    return 1 if tot["c"] or tot["o"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
