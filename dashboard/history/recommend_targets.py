"""What one trial of a recommendation runs: a backtest on a History range (pandas or Spark) or a scenario
simulation, for a batch of configs at once, and the objective's measures of each.

* :class:`HistoryTarget` reads the range once and runs each batch of configs in one pass over it
  (:class:`engine.backtest.BacktestSet`: each minute's view built once for every config due then), on
  pandas in this process, or on Spark: the batch dealt into groups, each group one task that reads the
  day files itself and streams them through its BacktestSet, as the sweep does (:mod:`.sweep`).
* :class:`ScenarioTarget` simulates the scenario once per config and seed (placement draws at random, so
  several seeds give the spread).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from engine.config import LoadBalancerConfig
from engine.errors import InputError, UsageError

from .objective import HISTORY, SCENARIO, history_measures, scenario_measures, usage_range_per_minute

__all__ = ["HistoryTarget", "ScenarioTarget", "split_days", "parse_holdout"]


def parse_holdout(text) -> int:
    """``"7d"``, ``"7"`` or ``7`` → 7 (days); ``UsageError`` otherwise."""
    s = str(text).strip().lower()
    if s.endswith("d"):
        s = s[:-1]
    try:
        n = int(s)
    except ValueError:
        raise UsageError(f"--holdout takes a number of days such as 7d, got {text!r}") from None
    if not 0 <= n <= 3660:
        raise UsageError(f"--holdout must be 0..3660 days, got {n}")
    return n


def split_days(meta: dict, start, end, holdout_days: int | None) -> tuple[list, list]:
    """The range's days cut in ``(fit days, held-out days)``: the last ``holdout_days`` are held out
    (default: a quarter of the days, at least one when there are two or more; 0: none)."""
    from .jobs import days_in_range

    days = days_in_range(meta, start, end)
    if not days:
        raise InputError("the time range holds no day of the dataset", field="range")
    h = max(1, len(days) // 4) if holdout_days is None and len(days) >= 2 else int(holdout_days or 0)
    if h >= len(days):
        raise UsageError(f"--holdout {h}d leaves no day to fit on: the range has {len(days)} day(s)")
    return (days[:-h] if h else days), (days[-h:] if h else [])


class HistoryTarget:
    """Backtests of one strategy on the days ``days`` of a History dataset."""

    where = HISTORY

    def __init__(self, dataset, days: list, strategy: str, *, bundles: str = "auto", synthetic_bundles: int = 8,
                 weights=None, engine: str = "pandas"):
        from .dataset import read_meta

        self.dataset, self.days, self.strategy = dataset, list(days), strategy
        self.bundles, self.k = bundles, int(synthetic_bundles)
        self.engine = engine
        self.start, self.end = self.days[0], self.days[-1]
        self.label = self.start if self.start == self.end else f"{self.start} .. {self.end}"
        self.backtests = 0
        self.replayed = 0.0  # backtests counted by the share of the days replayed (a pruned one: its stages)
        meta = read_meta(dataset)
        self._has_bundles = bool(meta.get("has_bundles")) and bundles != "synthetic"
        self._bw, self._kw = self._read()
        w = weights if weights is not None else LoadBalancerConfig().weights
        self.minutes_ms, self.usage_range = usage_range_per_minute(self._bw, w)
        self.n_days = max(len(self.minutes_ms), 1) / 1440.0
        if engine == "spark":
            self._bw = None  # Spark reads the day files in its tasks

    def _read(self):
        from .dataset import read_long, wide_brokers, wide_bundles
        from .layout import has_wide, read_wide

        if has_wide(self.dataset):
            bw = read_wide(self.dataset, self.start, self.end)
            long = (read_long(self.dataset, self.start, self.end, bundles=True, categorical=True)
                    if self._has_bundles and self.engine != "spark" else None)
        else:
            long = read_long(self.dataset, self.start, self.end, categorical=True)
            bw = wide_brokers(long)
        if not len(bw):
            raise InputError(f"no broker minutes in {self.label}", field="range")
        kw = None
        if long is not None and self.bundles != "synthetic":
            kw = wide_bundles(long)
            if kw.empty and self.bundles != "real":
                kw = None
        return bw, kw

    def stage_cuts(self) -> list[int]:
        """Where the fit data is cut into stages for pruning (epoch ms of the first minute of each later
        stage): at each fit week with two weeks or more, else at the first third of the minutes."""
        ts = self.minutes_ms
        if len(ts) < 3:
            return []
        if len(self.days) >= 14:
            starts = [int(pd.Timestamp(d).value // 1_000_000) for d in self.days[7::7]]
            return [c for c in starts if ts[0] < c <= ts[-1]]
        return [int(ts[len(ts) // 3])]

    def evaluate(self, configs, measures, progress=None, *, strategies=None, judge=None) -> list:
        """The measures of each config over the days (one pass for the batch). ``strategies``: each
        config's strategy (default: the target's); ``judge(stage, index, measures so far) -> stop``
        after each stage but the last (:meth:`stage_cuts`): a stopped config's entry is ``None``."""
        strategies = list(strategies) if strategies is not None else [self.strategy] * len(configs)
        if self.engine == "spark":
            return self._spark_staged(configs, strategies, measures, judge, progress)
        return self._staged(configs, strategies, measures, judge, progress)

    def _spark_staged(self, configs, strategies, measures, judge, progress):
        """The batch on Spark, cut at :meth:`stage_cuts` when a ``judge`` may stop members there: one job
        per stage, each config's strategy memory carried from one stage's job to the next (the same
        events as one pass), a stopped config left out of the later stages."""
        cuts = self.stage_cuts() if judge is not None else []
        edges = [None, *cuts, None]
        total = max(len(self.minutes_ms), 1)
        self.backtests += len(configs)
        events: dict[int, list] = {j: [] for j in range(len(configs))}
        carried: dict[int, dict] = {}
        stopped: set[int] = set()
        for i in range(len(edges) - 1):
            lo, hi = edges[i], edges[i + 1]
            live = [j for j in range(len(configs)) if j not in stopped]
            if not live:
                break
            for s in dict.fromkeys(strategies[j] for j in live):
                idx = [j for j in live if strategies[j] == s]
                got = self._spark([configs[j] for j in idx], progress, s, lo, hi,
                                  {n: carried[j] for n, j in enumerate(idx) if j in carried}, marks=hi is not None)
                for n, j in enumerate(idx):
                    ev, st = got[n]
                    events[j].append(ev)
                    if st is not None:
                        carried[j] = st
            if hi is None:
                break
            seen = self.minutes_ms < hi
            share = float(seen.sum()) / total
            for j in live:
                ev = pd.concat(events[j], ignore_index=True) if len(events[j]) > 1 else events[j][0]
                m = history_measures(ev, self.minutes_ms[seen], self.usage_range[seen],
                                     max(float(seen.sum()), 1.0) / 1440.0, measures)
                if judge(i, j, m):
                    stopped.add(j)
                    self.replayed -= 1.0 - share
        self.replayed += len(configs)
        out = []
        for j in range(len(configs)):
            if j in stopped:
                out.append(None)
                continue
            ev = pd.concat(events[j], ignore_index=True) if len(events[j]) > 1 else events[j][0]
            out.append(history_measures(ev, self.minutes_ms, self.usage_range, self.n_days, measures))
        return out

    def _staged(self, configs, strategies, measures, judge, progress):
        """One pass over the days for every config (:class:`engine.backtest.BacktestSet`, strategies may
        differ per member), cut at :meth:`stage_cuts` when a ``judge`` may stop members there."""
        from engine.backtest import Backtest, BacktestSet, BrokerBlock, BundleBlock, _ms, events_frame

        members = [Backtest(s, c, synthetic_bundles=self.k, state_limit=0) for s, c in zip(strategies, configs)]
        bts = BacktestSet(members)
        self.backtests += len(configs)
        kb = BundleBlock(self._kw) if self._kw is not None else None
        cuts = self.stage_cuts() if judge is not None else []
        edges = [None, *cuts, None]
        t = _ms(self._bw["timestamp"]) if cuts else None
        total = max(len(self.minutes_ms), 1)
        stopped: set[int] = set()
        for i in range(len(edges) - 1):
            lo, hi = edges[i], edges[i + 1]
            part = self._bw if not cuts else self._bw[((t >= lo) if lo is not None else True)
                                                      & ((t < hi) if hi is not None else True)]
            live = [bt for j, bt in enumerate(members) if j not in stopped]
            if len(part) and any(bt.enabled for bt in live):
                bts.members = live
                bts.feed(BrokerBlock(part), kb, progress)
            if hi is None:
                break
            seen = self.minutes_ms < hi
            share = float(seen.sum()) / total
            for j, bt in enumerate(members):
                if j in stopped:
                    continue
                m = history_measures(events_frame(list(bt.events)), self.minutes_ms[seen], self.usage_range[seen],
                                     max(float(seen.sum()), 1.0) / 1440.0, measures)
                if judge(i, j, m):
                    stopped.add(j)
                    self.replayed -= 1.0 - share
        self.replayed += len(configs)
        return [None if j in stopped else
                history_measures(bt.finish(), self.minutes_ms, self.usage_range, self.n_days, measures)
                for j, bt in enumerate(members)]

    def _spark(self, configs, progress, strategy=None, lo_ms=None, hi_ms=None, initial=None, marks=False):
        """Configs on Spark over the minutes ``[lo_ms, hi_ms)`` (``None``: open): dealt into groups (the
        executor cores, the heaviest first), each group one task reading the range's day files and
        streaming them through its BacktestSet. ``initial`` (config index → carried state): where a config
        starts; ``marks``: return each config's state after the last minute too. Per config:
        ``(events frame, carried state or None)``."""
        import json

        from dashboard.spark import get_spark, job_group

        from .sparkio import read_broker_minutes
        from .sweep import _file_source, cell_groups, default_groups

        spark = get_spark()
        df = read_broker_minutes(spark, self.dataset, self.start, self.end)
        source = _file_source(df, "synthetic", None)
        if source is None:
            raise UsageError("recommend on Spark reads a dataset's wide layout with synthetic bundles "
                             "(--bundles synthetic); use --engine pandas otherwise")
        cells = list(range(len(configs)))
        ivals = [max(1, int(c.loadBalancerSheddingIntervalMinutes)) for c in configs]
        groups = cell_groups(cells, ivals, default_groups(spark, len(cells)))
        udf = _configs_udf(source, strategy or self.strategy, self.k,
                           {g: [(c, configs[c]) for c in grp] for g, grp in enumerate(groups)},
                           lo_ms, hi_ms, dict(initial or {}), marks)
        with job_group(spark, "recommend", "shedlab recommend"):
            rows = (spark.range(0, len(groups), 1, len(groups))
                    .mapInPandas(udf, schema="cell long, timestamp long, n_bundles long, state string").toPandas())
        out = []
        for c in cells:
            part = rows[rows["cell"] == c]
            end = part[part["timestamp"] < 0]
            part = part[part["timestamp"] >= 0]
            out.append((pd.DataFrame({"timestamp": pd.to_datetime(part["timestamp"].to_numpy(), unit="ms"),
                                      "n_bundles": part["n_bundles"].to_numpy(dtype=np.int64)}),
                        json.loads(end["state"].iloc[0]) if len(end) else None))
        return out


def _configs_udf(source: dict, strategy: str, k: int, members: dict, lo_ms=None, hi_ms=None, initial=None,
                 marks: bool = False):
    """``mapInPandas`` over one row per group (``id``): the group's configs streamed over the day files'
    minutes in ``[lo_ms, hi_ms)``, each starting from ``initial[config]`` when given; with ``marks`` one
    more row per config after the last minute (``timestamp`` -1, ``state`` its carried state, JSON)."""
    initial = initial or {}

    def fn(batches):
        import json

        from engine.backtest import Backtest, BacktestSet

        from .sweep import _day_blocks, fed_by_day

        for b in batches:
            for g in b["id"].tolist():
                cells = members[int(g)]
                bts = BacktestSet(Backtest(strategy, cfg, synthetic_bundles=k, state_limit=0, initial=initial.get(c))
                                  for c, cfg in cells)
                for _day in fed_by_day(bts, _day_blocks(source, lo_ms, hi_ms)):
                    rows = []
                    for (c, _cfg), bt in zip(cells, bts.members):
                        rows.extend((c, e["timestamp"], e["n_bundles"], None) for e in bt.events)
                        bt.events.clear()
                    if rows:
                        yield pd.DataFrame(rows, columns=["cell", "timestamp", "n_bundles", "state"])
                if marks:
                    yield pd.DataFrame([(c, -1, 0, json.dumps(bt.carried(), sort_keys=True))
                                        for (c, _cfg), bt in zip(cells, bts.members)],
                                       columns=["cell", "timestamp", "n_bundles", "state"])

    return fn


class ScenarioTarget:
    """Simulations of a scenario, one per config and seed; each measure is the mean over the seeds and
    its spread (min, max) is kept."""

    where = SCENARIO

    def __init__(self, scenario, seeds: list[int], *, minutes: int | None = None):
        from engine.simulator import load_scenario

        self.scenario = load_scenario(scenario) if isinstance(scenario, str) else scenario
        self.seeds = [int(s) for s in seeds]
        self.minutes = minutes
        self.label = f"seed{'s' if len(self.seeds) > 1 else ''} {', '.join(map(str, self.seeds))}"
        self.backtests = 0
        self.spread: list[dict] = []

    def evaluate(self, configs, measures, progress=None, *, strategies=None, judge=None) -> list:
        """The mean measures of each config over the seeds. ``judge(stage, index, mean so far) -> stop``
        after each seed but the last: a stopped config's entry is ``None`` (its spread too).
        ``strategies`` is not used: each config names its strategy."""
        from engine.simulator import simulate

        out, self.spread = [], []
        total = len(configs) * len(self.seeds)
        for i, cfg in enumerate(configs):
            per = []
            for j, s in enumerate(self.seeds):
                if progress is not None:
                    progress(i * len(self.seeds) + j, total)
                per.append(scenario_measures(simulate(self.scenario, cfg, seed=s, minutes=self.minutes), measures))
                self.backtests += 1
                if judge is not None and j < len(self.seeds) - 1 and judge(j, i, self._mean(per)):
                    per = None
                    break
            if per is None:
                out.append(None)
                self.spread.append(None)
                continue
            keys = per[0].keys()
            out.append(self._mean(per))
            self.spread.append({k: [float(min(p[k] for p in per)), float(max(p[k] for p in per))] for k in keys})
        return out

    @staticmethod
    def _mean(per: list[dict]) -> dict:
        return {k: float(np.mean([p[k] for p in per])) for k in per[0]}
