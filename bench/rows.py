"""One row format for every bench script, so that ``bench/bench_all.py`` prints them as one table.

A bench script prints its own table as before and, when the environment variable
``SHEDLAB_BENCH_ROWS`` names a file, also appends each of its rows to that file as one JSON line:
measure, size, value and unit, the floor measured in the same run (engine rows), the growth for
10× the brokers (and the floor's own growth), the budget and the verdict (``True`` within, ``False`` over, ``None`` when the row
has no budget).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

ROWS_ENV = "SHEDLAB_BENCH_ROWS"


def emit(bench: str, measure: str, size: str, value: float, unit: str, *, floor: float | None = None,
         growth: float | None = None, budget: str = "", ok: bool | None = None, note: str = "",
         floor_growth: float | None = None) -> None:
    """Append one row to the file ``SHEDLAB_BENCH_ROWS`` names (nothing when it is not set)."""
    path = os.getenv(ROWS_ENV)
    if not path:
        return
    row = {"bench": bench, "measure": measure, "size": size, "value": float(value), "unit": unit,
           "floor": None if floor is None else float(floor), "growth": None if growth is None else float(growth),
           "budget": budget, "ok": ok, "note": note,
           "floor_growth": None if floor_growth is None else float(floor_growth)}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _value(r: dict) -> str:
    v, unit = r["value"], r["unit"]
    if unit == "s":
        return f"{v:,.1f} s"
    return f"{v:,.1f} {unit}"


def table(rows: list[dict]) -> str:
    """The rows as one text table."""
    head = (f"{'bench':<10} {'measure':<60} {'size':<16} {'value':>15} {'floor':>10} {'ratio':>6} "
            f"{'10x brokers':>11} {'floor 10x':>9} {'budget':<26} verdict")
    out = [head, "-" * len(head)]
    for r in rows:
        floor = r.get("floor")
        ratio = f"{r['value'] / floor:.2f}" if floor else ""
        growth = f"{r['growth']:.1f}x" if r.get("growth") is not None else ""
        fg = f"{r['floor_growth']:.1f}x" if r.get("floor_growth") is not None else ""
        verdict = {True: "ok", False: "OVER", None: ""}[r.get("ok")]
        out.append(f"{r['bench']:<10} {r['measure'][:60]:<60} {r['size']:<16} {_value(r):>15} "
                   f"{'' if floor is None else f'{floor:,.1f}':>10} {ratio:>6} {growth:>11} {fg:>9} "
                   f"{r.get('budget', '')[:26]:<26} {verdict}")
        if r.get("note"):
            out.append(f"{'':<10}   {r['note']}")
    return "\n".join(out)
