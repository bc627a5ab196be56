"""Input and run-size limits: every bound Shedlab puts on what it reads and on the work it accepts.

Each limit has a default and an environment variable that changes it; the value is read from the
environment each time it is checked (a test, a notebook or the app can change it at run time).
``docs/security.md`` ("Input limits") lists them; :func:`limits_table` prints the same table.

=================================  ========================  =========================================
variable                           default                   what it bounds
=================================  ========================  =========================================
``SHEDLAB_MAX_INPUT_MB``           100                       bytes read from one input file, stream,
                                                             device or upload
``SHEDLAB_MAX_NESTING``            64                        nesting depth of JSON / YAML documents
``SHEDLAB_MAX_YAML_MB``            10                        size of a YAML document (scenarios,
                                                             broker maps)
``SHEDLAB_MAX_YAML_NODES``         1,000,000                 YAML nodes after aliases are expanded
                                                             ("billion laughs")
``SHEDLAB_MAX_ZIP_MEMBERS``        200,000                   files in one zip archive
``SHEDLAB_MAX_ZIP_MB``             400                       bytes a zip archive expands to (counted
                                                             while reading, not taken from headers)
``SHEDLAB_MAX_RUN_MB``             4,096                     memory a run is estimated to need:
                                                             ``shed --cycles``, a simulation (brokers
                                                             × minutes, bundles, topics), a topic list
``SHEDLAB_MAX_SIM_STEPS``          5,000,000                 steps a simulation is estimated to take:
                                                             brokers × minutes + brokers × bundles
                                                             placed by lookup
=================================  ========================  =========================================

Numeric fields of the inputs have fixed ranges (:data:`MAX_EPOCH_MS`, :data:`MAX_COUNT`,
:data:`MAX_QUANTITY`), checked with the field named.

Departures from Pulsar: Pulsar's Jackson readers take any ``long`` for a time and any finite
``double`` for a rate; Shedlab refuses times after year 9999 and rates, usages and limits above
1e19 (far beyond anything a broker reports, and what keeps sums over a cluster finite). Counts are
Java ``int`` fields in Pulsar too, so their range is Pulsar's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .errors import InputError, UsageError

__all__ = ["Limit", "LIMITS", "limit", "limit_bytes", "check_run_memory", "limits_table", "MAX_EPOCH_MS",
           "MAX_COUNT", "MAX_JAVA_LONG", "MAX_QUANTITY", "MAX_SIMULATION_MINUTES", "CYCLE_BYTES_PER_BROKER",
           "CYCLE_BYTES_PER_BUNDLE", "TOPIC_BYTES_TEXT", "TOPIC_BYTES_JSON", "TOPIC_BYTES_READ",
           "simulation_bytes", "simulation_steps", "check_run_steps", "cycles_bytes", "epoch_ms", "FIXED_RANGES", "fixed_ranges_table"]

#: latest timestamp accepted (9999-12-31T23:59:59.999Z, in epoch milliseconds): dates stay printable
MAX_EPOCH_MS = 253_402_300_799_999
#: largest count accepted (topics, bundles, producers, consumers, samples): Java's Integer.MAX_VALUE
MAX_COUNT = 2**31 - 1
#: Java's Long.MAX_VALUE (long fields that are not times)
MAX_JAVA_LONG = 2**63 - 1
#: largest rate / throughput / usage / limit accepted (above Long.MAX_VALUE, so every value a Java
#: long or a real report holds passes; sums over millions of bundles stay finite)
MAX_QUANTITY = 1e19
#: longest simulation (the scenario format's cap: one year of minutes)
MAX_SIMULATION_MINUTES = 525_600

# Memory a run needs, measured on this code (tracemalloc / peak RSS; bench scripts' sizes) and
# rounded up. They only have to be right within a small factor: the limit refuses absurd runs.
#: one shedding cycle kept for the report: per broker (scores, lines, state) and per bundle
CYCLE_BYTES_PER_BROKER = 1_000
CYCLE_BYTES_PER_BUNDLE = 100
#: ``engine bundles``: per topic, text report / JSON report (one row per topic) / just reading it
TOPIC_BYTES_TEXT = 300
TOPIC_BYTES_JSON = 650
TOPIC_BYTES_READ = 150
#: simulator: per broker-minute (12 recorded series + the broker table), per workload-minute (its
#: traffic series), per bundle, per topic, per minute (events)
SIM_BYTES_PER_BROKER_MINUTE = 400
SIM_BYTES_PER_WORKLOAD_MINUTE = 64
SIM_BYTES_PER_BUNDLE = 1_000
SIM_BYTES_PER_TOPIC = 300
SIM_BYTES_PER_MINUTE = 4_000


@dataclass(frozen=True)
class Limit:
    """One limit: its environment variable, default, unit and what it bounds."""

    env: str
    default: float
    unit: str  # "MB" or "" (a count)
    what: str

    def value(self) -> float:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            v = float(raw)
        except ValueError:
            raise UsageError(f"{self.env}={raw!r} is not a number") from None
        if not v > 0 or v == float("inf"):
            raise UsageError(f"{self.env}={raw!r} must be a positive number")
        return v


LIMITS: dict[str, Limit] = {lim.env: lim for lim in (
    Limit("SHEDLAB_MAX_INPUT_MB", 100, "MB", "bytes read from one input file, stream, device or upload"),
    Limit("SHEDLAB_MAX_NESTING", 64, "", "nesting depth of a JSON or YAML document"),
    Limit("SHEDLAB_MAX_YAML_MB", 10, "MB", "size of a YAML document"),
    Limit("SHEDLAB_MAX_YAML_NODES", 1_000_000, "", "YAML nodes, aliases expanded"),
    Limit("SHEDLAB_MAX_ZIP_MEMBERS", 200_000, "", "files in one zip archive"),
    Limit("SHEDLAB_MAX_ZIP_MB", 400, "MB", "bytes a zip archive expands to (counted while reading)"),
    Limit("SHEDLAB_MAX_RUN_MB", 4096, "MB", "memory a run is estimated to need (cycles, simulation, topics)"),
    Limit("SHEDLAB_MAX_SIM_STEPS", 5_000_000, "", "steps a simulation is estimated to take (brokers × minutes, "
          "+ brokers × bundles placed by lookup)"),
)}


def limit(env: str) -> int:
    """The current value of a count limit (``SHEDLAB_MAX_NESTING``, ...)."""
    return int(LIMITS[env].value())


def limit_bytes(env: str) -> int:
    """The current value of a size limit in bytes (``SHEDLAB_MAX_INPUT_MB``, ...)."""
    return int(LIMITS[env].value() * 1024 * 1024)


def _mb(n: float) -> str:
    return f"{n / 1048576:,.0f} MB" if n >= 1048576 else f"{n / 1048576:,.2f} MB"


def check_run_memory(need: float, what: str, source: str | None = None, field: str | None = None) -> None:
    """Refuse a run estimated to need more than ``SHEDLAB_MAX_RUN_MB`` before it starts.

    The message says the estimate, the limit and how to raise it.
    """
    cap = limit_bytes("SHEDLAB_MAX_RUN_MB")
    if need > cap:
        raise InputError(f"{what} would need about {_mb(need)} of memory, over the {_mb(cap)} limit "
                         f"(set SHEDLAB_MAX_RUN_MB to raise it)", source=source, field=field)


def simulation_steps(brokers: int, minutes: int, placements: int = 0) -> float:
    """Steps a simulation takes, each about the same work (tens of microseconds): every minute, each
    broker's load report, its share of the leader's view and of the shedding check (brokers ×
    minutes); each bundle placed by a lookup scores every broker (brokers × placements). 1,000
    brokers for a day of minutes are 1.44 M steps."""
    return float(brokers) * (int(minutes) + int(placements))


def check_run_steps(steps: float, what: str, source: str | None = None, field: str | None = None) -> None:
    """Refuse a simulation estimated to take more than ``SHEDLAB_MAX_SIM_STEPS`` steps before it starts
    (the message says the estimate, the limit and how to raise it)."""
    cap = LIMITS["SHEDLAB_MAX_SIM_STEPS"].value()
    if steps > cap:
        raise InputError(f"{what} would take about {steps:,.0f} steps (brokers × minutes + brokers × bundles "
                         f"placed), over the {cap:,.0f} limit (set SHEDLAB_MAX_SIM_STEPS to raise it)",
                         source=source, field=field)


def cycles_bytes(cycles: int, brokers: int, bundles: int) -> float:
    """Memory ``shed --cycles N`` keeps for its report."""
    return float(cycles) * (CYCLE_BYTES_PER_BROKER * max(brokers, 1) + CYCLE_BYTES_PER_BUNDLE * bundles)


def simulation_bytes(brokers: int, minutes: int, bundles: int, topics: int, workloads: int) -> float:
    """Memory a simulation needs: recorded series (brokers × minutes), traffic series (workloads ×
    minutes), per-bundle and per-topic state, events."""
    return (float(brokers) * minutes * SIM_BYTES_PER_BROKER_MINUTE
            + float(workloads) * minutes * SIM_BYTES_PER_WORKLOAD_MINUTE
            + float(bundles) * SIM_BYTES_PER_BUNDLE + float(topics) * SIM_BYTES_PER_TOPIC
            + float(minutes) * SIM_BYTES_PER_MINUTE)


def _num(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,}"


def limits_table(current: bool = False) -> str:
    """The limits as a Markdown table (variable, default, what it bounds); ``current=True`` adds the
    value in force now (from the environment). ``docs/security.md`` holds ``limits_table()``."""
    head = "| variable | default |" + (" now |" if current else "") + " what it bounds |"
    rows = [head, "|---|---|" + ("---|" if current else "") + "---|"]
    for lim in LIMITS.values():
        unit = f" {lim.unit}" if lim.unit else ""
        now = f" {_num(lim.value())}{unit} |" if current else ""
        rows.append(f"| `{lim.env}` | {_num(lim.default)}{unit} |{now} {lim.what} |")
    return "\n".join(rows)


#: ranges fixed in the code (not settable): name, bound, where it applies
FIXED_RANGES = (
    ("timestamps (`lastUpdate`, `startTimestamp`, `updatedAt`, `now`, unload times)",
     f"0 .. {MAX_EPOCH_MS:,} ms (year 9999)", "snapshots, ELM data, timelines, History inputs (rows dropped)"),
    ("counts (topics, bundles, producers, consumers, samples)", f"0 .. {MAX_COUNT:,} (Java int)",
     "load reports, bundle data"),
    ("`cacheSize`", f"0 .. {MAX_JAVA_LONG:,} (Java long)", "bundle stats"),
    ("rates, throughputs, usages, limits, scenario numbers without their own range", f"finite, at most {MAX_QUANTITY:.0e} in absolute value",
     "snapshots, scenarios"),
    ("simulated minutes (`minutes:`, `--minutes`)", f"1 .. {MAX_SIMULATION_MINUTES:,} (one year)",
     "`engine simulate`, `history generate --simulator`"),
    ("scenario name templates", "`{i}` or `{i:FORMAT}` with a width under 100", "scenario `count:` entries"),
)


def fixed_ranges_table() -> str:
    """:data:`FIXED_RANGES` as a Markdown table."""
    rows = ["| value | range | where |", "|---|---|---|"]
    rows += [f"| {a} | {b} | {c} |" for a, b, c in FIXED_RANGES]
    return "\n".join(rows)


def epoch_ms(v, source: str | None = None, field: str | None = None) -> int:
    """A time in epoch milliseconds: a finite, non-negative number no later than year 9999
    (:data:`MAX_EPOCH_MS`), as an int; ``InputError`` naming the field otherwise."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise InputError(f"expected epoch milliseconds, got {v!r}", source=source, field=field)
    if v < 0 or v > MAX_EPOCH_MS:
        raise InputError(f"expected epoch milliseconds between 0 and {MAX_EPOCH_MS} (year 9999), got {v:g}",
                         source=source, field=field)
    return int(v)
