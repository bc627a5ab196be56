"""What a run produced: :class:`SimulationResult` (the tables, the summary, the leader's state)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..config import LoadBalancerConfig
from .metrics import json_clean
from .scenario_spec import Scenario

__all__ = ["SimulationResult"]


@dataclass
class SimulationResult:
    """Everything a run produced.

    Attributes
    ----------
    events : pandas.DataFrame
        Tidy event log, one row per event, in time order: ``minute, time, kind, broker, bundle,
        destination, reason, placement, random, from_plan, bad_placement, dest_usage, avg_usage,
        src_score, dst_score, score_unit, msg_rate, throughput, unavailable_s, scores,
        placement_scores, cycle, detail, label, reason_code``. Kinds: ``unload``, ``unload-skipped``,
        ``assign``, ``split``, ``broker-added``, ``broker-removed``, ``leader-change``,
        ``config-change``, ``cpu``, ``check`` (one per shedding run, with its reason). ``scores`` /
        ``placement_scores`` are JSON strings ``{broker: score}``. ``label`` (``Success`` / ``Skip``)
        and ``reason_code`` (Pulsar's ``UnloadDecision.Reason`` names, plus ``HitCount``) are the
        shedding cycle's, on ``check``, ``unload`` and ``unload-skipped`` rows (empty elsewhere).
    brokers : pandas.DataFrame
        One row per minute and running broker: real ``cpu, bandwidth_in, bandwidth_out,
        direct_memory, memory, usage`` (%; ``usage`` = weighted max with the config weights),
        ``reported_usage`` (what its last written report says), ``score`` (what the shedding strategy
        compared at that minute's check; NaN without a check), ``msg_rate, throughput`` (in + out,
        real), ``bundles``, ``wrote_report``.
    cluster : pandas.DataFrame
        One row per minute: ``brokers, msg_rate, throughput, msg_rate_ratio, throughput_ratio,
        cpu_max, cpu_min, cpu_range, usage_mean, usage_std, usage_range, score_gap, unloads,
        unloads_total, bad_placements, assigns, splits`` (+ ``load_std, target_std`` when the leader is
        the Extensible Load Manager's, see :mod:`engine.simulator.metrics`).
    summary : dict
        One row of numbers for the whole run (see :func:`engine.simulator.metrics.summarize`).
    leader_state : dict
        What the leader at the end remembers, in display form (``Leader.state()``).
    strategy_state : dict
        The leader's strategies' memories at the end as their state values' ``to_json()``, keyed by
        strategy name (lossless: ``registry.spec(name).state_type.from_json(d)`` gives the value back;
        a snapshot scenario's ``strategy_state`` takes this form).
    """

    scenario: Scenario
    config: LoadBalancerConfig
    seed: int
    minutes: int
    events: pd.DataFrame
    brokers: pd.DataFrame
    cluster: pd.DataFrame
    summary: dict
    leader_state: dict = field(default_factory=dict)
    cancelled: bool = False
    elapsed_s: float = 0.0
    strategy_state: dict = field(default_factory=dict)

    def summary_frame(self) -> pd.DataFrame:
        """The summary as a one-row DataFrame."""
        return pd.DataFrame([self.summary])

    def broker_averages(self, last: int = 10) -> dict:
        """Per broker running at the end: cpu, msg_rate, throughput, bundles averaged over the last
        ``last`` minutes."""
        b = self.brokers
        if b.empty:
            return {}
        end = int(b["minute"].max())
        alive = set(b.loc[b["minute"] == end, "broker"])
        tail = b[(b["minute"] > end - last) & b["broker"].isin(alive)]
        g = tail.groupby("broker", sort=True)
        out = {}
        for bid, df in g:
            out[bid] = {"cpu": float(df["cpu"].mean()), "usage": float(df["usage"].mean()),
                        "msg_rate": float(df["msg_rate"].mean()), "throughput": float(df["throughput"].mean()),
                        "bundles": int(round(float(df["bundles"].iloc[-1])))}
        return out

    def to_json(self, *, events: str = "decisions") -> dict:
        """The command line's JSON contract (see :mod:`engine.cli.simulate`).

        ``events``: ``"decisions"`` (everything but ``check`` rows), ``"all"`` or ``"none"``.
        """
        ev = self.events
        if events == "decisions":
            ev = ev[ev["kind"] != "check"]
        elif events == "none":
            ev = ev.iloc[:0]
        rows = json_clean(ev.to_dict(orient="records"))
        return {"scenario": self.scenario.name, "strategy": self.summary.get("strategy"),
                "placement": self.summary.get("placement"), "seed": self.seed, "minutes": self.minutes,
                "cancelled": self.cancelled, "summary": json_clean(self.summary),
                "brokers": json_clean(self.broker_averages(10)), "strategy_state": json_clean(self.strategy_state),
                "events": rows}

    def write(self, out_dir, fmt: str = "csv") -> list:
        """Write ``events``, ``brokers``, ``cluster`` and ``summary`` as CSV or Parquet files."""
        from pathlib import Path

        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, df in (("events", self.events), ("brokers", self.brokers), ("cluster", self.cluster),
                         ("summary", self.summary_frame())):
            p = d / f"{name}.{ 'parquet' if fmt == 'parquet' else 'csv'}"
            if fmt == "parquet":
                df.to_parquet(p, index=False)
            else:
                df.to_csv(p, index=False)
            paths.append(p)
        return paths

