"""``python -m engine findings``: every figure of the field-findings articles, the article's number beside
the simulator's (:mod:`engine.simulator.findings`).

Prints the table (or ``--json``). ``--out docs/findings.md`` writes the generated page; ``--readme
README.md`` replaces the README's findings section (between its markers) with the generated table;
``--check`` writes nothing and exits 1 when a figure leaves its tolerance or a named file differs
from what the command generates now. ``--minutes N`` shortens every run (a quick look; the figures are
calibrated on the full runs, so ``--check`` refuses it). ``--finding ID`` (repeatable) runs only those.

Exit status: 0 when every figure is within tolerance (and, with ``--check``, the files are current);
1 otherwise; 2 on a bad option.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from . import print_json


def register(sub):
    p = sub.add_parser("findings", help="the articles' figures beside the simulator's (docs/findings.md)",
                       description="Run every field finding's scenario and compare each figure with the article's.")
    p.add_argument("--out", metavar="FILE", help="write the generated page (docs/findings.md)")
    p.add_argument("--readme", metavar="FILE", help="replace the findings section of this README (between its markers)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a figure is out of tolerance or --out/--readme files are stale")
    p.add_argument("--finding", action="append", metavar="ID", help="only this finding (repeatable)")
    p.add_argument("--minutes", type=int, help="shorten every run (not with --check)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..simulator import findings as F

    if args.finding:
        unknown = [i for i in args.finding if i not in F.FINDINGS]
        if unknown:
            raise UsageError(f"unknown finding {unknown[0]!r}; known: {', '.join(F.FINDINGS)}")
    if args.minutes is not None and (args.minutes < 1 or args.minutes > 100_000):
        raise UsageError("--minutes must be between 1 and 100000")
    if args.check and (args.minutes or args.finding):
        raise UsageError("--check runs every finding at full length: drop --minutes / --finding")
    if (args.out or args.readme) and (args.minutes or args.finding) and not args.check:
        raise UsageError("--out / --readme write the full table: drop --minutes / --finding")
    results = F.run_findings(args.finding, minutes=args.minutes)
    bad = [r for r in results if not r.ok]
    stale = []
    if args.out:
        text = F.findings_markdown(results)
        stale += _write_or_check(Path(args.out), text, args.check)
    if args.readme:
        p = Path(args.readme)
        try:
            old = p.read_text(encoding="utf-8")
            new = F.replace_readme_block(old, F.readme_block(results))
        except OSError as exc:
            raise UsageError(f"{args.readme}: cannot read ({exc.strerror})") from None
        except ValueError as exc:
            raise UsageError(f"{args.readme}: {exc}") from None
        stale += _write_or_check(p, new, args.check, old=old)
    if args.json:
        print_json({"figures": F.results_json(results), "within": len(results) - len(bad), "total": len(results),
                    "stale": stale})
    else:
        sys.stdout.write(F.table_markdown(results))
        sys.stdout.write(f"\n{len(results) - len(bad)} of {len(results)} figures within tolerance\n")
        for s in stale:
            sys.stdout.write(f"stale: {s} is not what `python -m engine findings` generates now\n")
    return 1 if bad or stale else 0


def _write_or_check(path: Path, text: str, check: bool, old: str | None = None) -> list:
    if check:
        try:
            cur = old if old is not None else path.read_text(encoding="utf-8")
        except OSError:
            return [str(path)]
        return [] if cur == text else [str(path)]
    path.write_text(text, encoding="utf-8")
    return []
