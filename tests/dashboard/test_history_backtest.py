"""The History backtest through the engine's one driver (engine.backtest): every modular shedding
strategy of the registry, pandas and Spark alike, streamed batch by batch, sweep keys from the spec."""
from __future__ import annotations


import pandas as pd
import pytest

from dashboard.history.dataset import read_long, wide_brokers, wide_bundles
from dashboard.history.generate import generate
from engine.backtest import EVENT_COLUMNS, backtest_frames, backtest_spec, shedding_strategies, sweep_keys
from engine.config import LoadBalancerConfig
from engine.errors import UsageError
from engine.results import SheddingResult, Selection
from engine.strategies import StrategySpec, registry


@pytest.fixture(scope="module")
def gen_ds(tmp_path_factory):
    """5 brokers × 1 day with bundle metrics and the generator's incidents (broker loss, hot bundle)."""
    p = tmp_path_factory.mktemp("hist") / "gen"
    generate(p, brokers=5, days=1, seed=7, start="2026-01-05", bundles_per_broker=3)
    return p


def _firing(name: str) -> dict:
    """The strategy's first grid key at the first value of its spec's grid (the most eager one of the
    shipped grids): it fires on the test data."""
    key, values = registry.spec(name).sweep_grid[0]
    return {key: str(values[0])}


def test_backtest001_every_modular_shedding_strategy_and_only_those():
    names = shedding_strategies()
    want = [s.name for s in registry.specs(role="shedding") if s.runs_in("modular")]
    assert names == want and len(names) >= 4
    for s in registry.specs(role="shedding"):
        if not s.runs_in("modular"):
            with pytest.raises(UsageError, match="backtests support"):
                backtest_spec(s.name)


def test_backtest002_sweep_keys_come_from_the_strategy_spec():
    """The History sweep offers a strategy's own keys (its grid first) and the driver's, never another
    strategy's; the page's defaults are the spec's grid."""
    from dashboard.history.service import sweep_defaults

    for name in shedding_strategies():
        spec = registry.spec(name)
        opts, xk, xv, yk, yv = sweep_defaults(name)
        keys = [o["value"] for o in opts]
        assert keys == sweep_keys(spec)
        assert (xk, yk) == (spec.sweep_grid[0][0], spec.sweep_grid[1][0])
        assert [float(v) for v in xv.split(",")] == [float(v) for v in spec.sweep_grid[0][1]]
        own = set(spec.config_keys) | {"loadBalancerSheddingIntervalMinutes", "loadBalancerSheddingGracePeriodMinutes"}
        assert set(keys) <= own | {k for k, _v in spec.sweep_grid}, name


def _split_batches(frame: pd.DataFrame, sizes):
    """``frame`` in consecutive batches whose sizes cycle through ``sizes``."""
    i, n = 0, 0
    while i < len(frame):
        size = sizes[n % len(sizes)]
        yield frame.iloc[i:i + size].reset_index(drop=True)
        i, n = i + size, n + 1


@pytest.mark.parametrize("name", shedding_strategies())
def test_backtest003_streamed_in_small_batches_equals_one_replay(gen_ds, name):
    """The Spark UDF body fed in odd-sized batches (minutes cut across batches) gives exactly the
    events of one replay of the whole frame, state JSON included — real bundles and synthetic ones."""
    from dashboard.history.backtest import stream_cells

    cfg = LoadBalancerConfig().with_values(_firing(name))
    long = read_long(gen_ds)
    bw, kw = wide_brokers(long), wide_bundles(long)
    fired = 0
    for use_bundles in (True, False):
        ref = backtest_frames(bw, kw if use_bundles else None, name, cfg, state_limit=50)
        fired += len(ref)
        rows = bw.assign(bundle=None)
        if use_bundles:
            rows = pd.concat([rows, kw.assign(**{c: float("nan") for c in bw.columns if c not in kw.columns})],
                             ignore_index=True)
        rows = rows.assign(cell=0).sort_values(["cell", "timestamp"], kind="stable").reset_index(drop=True)
        # a minute is 20 rows with bundles (5 with synthetic ones): batches of 7 end inside a minute, batches
        # of 45 hold whole minutes and cut others
        got = list(stream_cells(_split_batches(rows, (7, 45)), name, cfg, 8, 50, "auto", use_bundles))
        ev = pd.concat(got, ignore_index=True) if got else pd.DataFrame(columns=["cell"] + EVENT_COLUMNS)
        assert (ev["cell"] == 0).all()
        pd.testing.assert_frame_equal(ev.drop(columns="cell").reset_index(drop=True), ref.reset_index(drop=True),
                                      check_dtype=False)
    assert fired > 0, f"{name} should fire on the test data with {_firing(name)}"


class _HottestFirst:
    """A plug-in strategy defined in this test: every minute, the hottest broker's first bundle."""

    name = "HottestFirstShedder"

    def find_bundles_for_unloading(self, view, conf, recently_unloaded):
        j = int(view.cpu.argmax())
        own = [k for k in view.owned[j].tolist() if view.bundles[k] not in recently_unloaded]
        res = SheddingResult(self.name, "Skip", "nothing")
        if own:
            res.label, res.reason = "Success", "hottest"
            res.scores = {b: float(view.cpu[i]) for i, b in enumerate(view.brokers)}
            res.selected.append(Selection(view.brokers[j], view.bundles[own[0]], 1.0, "B/s"))
        return res

    def on_active_brokers_change(self, brokers):
        pass

    def state(self):
        return {}

    def load_state(self, state):
        pass

    def reset(self):
        pass


def test_backtest004_a_plugin_strategy_is_backtested_without_edits(gen_ds):
    from engine.strategies.spec import EmptyState

    spec = StrategySpec(name="HottestFirstShedder", fqn="org.example.HottestFirstShedder", roles={"shedding"},
                        load_manager="modular", config_keys=("loadBalancerSheddingGracePeriodMinutes",),
                        requires_placement=None, sweep_grid=(("loadBalancerSheddingGracePeriodMinutes", (1, 5)),
                                                             ("loadBalancerSheddingIntervalMinutes", (1, 2))),
                        state_type=EmptyState, factory=_HottestFirst, explains=frozenset(), title="test plug-in")
    registry.register(spec)
    try:
        assert "HottestFirstShedder" in shedding_strategies()
        from layouts.history import _strategy_options

        assert "HottestFirstShedder" in [o["value"] for o in _strategy_options()]
        ev = backtest_frames(wide_brokers(read_long(gen_ds)), None, "HottestFirstShedder", LoadBalancerConfig())
        assert len(ev) > 0 and set(ev["strategy"]) == {"HottestFirstShedder"} and (ev["n_bundles"] == 1).all()
        from dashboard.history.service import sweep_defaults

        assert sweep_defaults("HottestFirstShedder")[1] == "loadBalancerSheddingGracePeriodMinutes"
    finally:
        registry.unregister("HottestFirstShedder")


# ------------------------------------------------------------------------------------------ Spark


@pytest.mark.spark
@pytest.mark.parametrize("name", shedding_strategies())
def test_backtest005_pandas_and_spark_backtests_agree_for_every_strategy(spark, gen_ds, name):
    """The job runner's two engines give the same events (every column, state JSON included) and the
    same per-day counts, for each strategy, with real and with synthetic bundles."""
    from dashboard.history.jobs import run_job

    for bundles in ("auto", "synthetic"):
        p = {"strategy": name, "set": _firing(name), "bundles": bundles}
        a = run_job("backtest", gen_ds, p, engine="pandas", use_cache=False)
        b = run_job("backtest", gen_ds, p, engine="spark", use_cache=False)
        ea = a["events"].sort_values(["timestamp", "broker"], kind="stable").reset_index(drop=True)
        eb = b["events"].sort_values(["timestamp", "broker"], kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(ea, eb, check_dtype=False)
        da, db = (x["per_day"].sort_values("day")[["day", "events", "bundles"]].values.tolist() for x in (a, b))
        assert da == db


@pytest.mark.spark
def test_backtest006_a_backtest_in_time_segments_equals_one_stream_and_reports_progress(spark, gen_ds):
    """The page's backtest runs as consecutive Spark jobs (the state carried between them, progress
    reported in between): exactly the events of one replay, the state JSON limit included."""
    from dashboard.history.backtest import backtest
    from dashboard.history.sparkio import read_history, to_pandas

    cfg = LoadBalancerConfig().with_values(_firing("AvgShedder"))
    seen = []
    r = backtest(read_history(spark, gen_ds), "AvgShedder", cfg, bundles="synthetic", segments=3, state_limit=10,
                 progress=lambda d, t, txt: seen.append((d, t)))
    ev = to_pandas(r["events"], ["timestamp", "broker"])
    ref = backtest_frames(wide_brokers(read_long(gen_ds)), None, "AvgShedder", cfg, state_limit=10)
    ref = ref.sort_values(["timestamp", "broker"], kind="stable").reset_index(drop=True)
    assert len(ref) > 10 and r["_info"]["segments"] == 3
    pd.testing.assert_frame_equal(ev.drop(columns="cell").reset_index(drop=True), ref, check_dtype=False)
    assert seen[0] == (0, 3) and seen[-1] == (3, 3) and len(seen) == 4
    for x in r["_info"]["_persisted"]:
        x.unpersist()


@pytest.mark.parametrize("seed", [0, 1])
def test_backtest_keeps_its_recently_unloaded_map_as_forget_expired_would(seed):
    """A backtest keeps its recently unloaded bundles in place (expired ones taken from the front while
    their times rise in order) and falls back to filtering the whole map once a bundle is unloaded again
    or a minute comes out of order: after every minute the map holds the same bundles, times and order as
    ``forget_expired`` applied to a plain dict, and so does the memory it carries."""
    import random

    from engine.backtest import Backtest
    from engine.cadence import MINUTE_MS, forget_expired

    rng = random.Random(seed)
    bt = Backtest("ThresholdShedder", LoadBalancerConfig().with_values(
        {"loadBalancerSheddingGracePeriodMinutes": "5"}), initial={"recently_unloaded": {"t/n/0": 0}})
    mirror = {"t/n/0": 0}
    now, fell_back = MINUTE_MS, False
    for minute in range(400):
        now += MINUTE_MS * rng.choice([1, 1, 1, 2, 7]) if minute != 300 else -3 * MINUTE_MS
        bt._forget(now)
        mirror = forget_expired(mirror, now, 5)
        assert list(bt.recently.items()) == list(mirror.items()), minute
        picked = [f"t/n/{rng.randrange(60)}" for _ in range(rng.randrange(4))]
        if minute < 250:  # a fresh name each time until then: the in-order path
            picked = [f"t/n/new{minute}-{i}" for i in range(len(picked))]
        bt._unloaded(picked, now)
        for b in picked:
            mirror[b] = now
        fell_back |= not bt._in_order
        assert bt.carried()["recently_unloaded"] == mirror
    assert fell_back


def test_broker_block_reads_a_categorical_broker_column_as_its_strings():
    """A day's broker column arrives as a categorical (names once, not once per row): the block equals the
    one built from the same names as plain strings — the codes into the sorted names present — with
    categories unsorted and some unused, and with a missing name (read the ordinary way)."""
    import numpy as np

    from dashboard.history.dataset import BROKER_METRICS
    from engine.backtest import BrokerBlock

    rng = np.random.default_rng(3)
    names = ["b9:8080", "b10:8080", "a1:8080", "b2:8080"]
    n = 40
    frame = pd.DataFrame({"timestamp": np.repeat(np.arange(10) * 60_000, 4), "broker": [names[i % 4] for i in range(n)],
                          **{m: rng.random(n) for m in BROKER_METRICS}})
    plain = BrokerBlock(frame)
    cats = pd.Categorical(frame["broker"], categories=["zz:1", *names[::-1], "aa:1"])  # unsorted, two unused
    cat = BrokerBlock(frame.assign(broker=cats))
    assert plain.names == cat.names == sorted(names)
    for attr in ("ts", "codes", "metrics", "starts", "ends"):
        np.testing.assert_array_equal(getattr(plain, attr), getattr(cat, attr))
    missing = frame.assign(broker=pd.Categorical([None, *frame["broker"][1:]], categories=names))
    assert BrokerBlock(missing).names == BrokerBlock(missing.assign(broker=missing["broker"].astype(object))).names


def test_day_blocks_read_from_the_files_equal_blocks_of_their_rows_as_frames(tmp_path):
    """A sweep task builds its blocks straight from the day files' columns, a row group at a time: each block
    whole minutes (a minute cut by a row group waits for the next), and a day's blocks joined the same rows,
    names and metrics as the block of a pandas frame of that day — whether the rows are in (timestamp,
    broker) order (as written: streamed) or not (read whole and sorted), with a time segment cut out of
    them, with a row missing its broker name, and with the names stored as a dictionary (each row group
    its own) or as plain strings."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from dashboard.history.dataset import BROKER_METRICS
    from dashboard.history.sweep import _day_blocks
    from engine.backtest import BrokerBlock

    rng = np.random.default_rng(5)
    names = ["b9:8080", "b10:8080", "a1:8080", "b2:8080"]
    days = {"2026-01-01": "sorted", "2026-01-02": "shuffled", "2026-01-03": "missing", "2026-01-04": "plain"}
    files, frames = [], {}
    for d, (day, how) in enumerate(days.items()):
        t0 = pd.Timestamp(day, tz="UTC")
        # (b9 reports from minute 10 on: the first row groups' dictionaries lack it)
        rows = [(t0 + pd.Timedelta(minutes=m), b) for m in range(30) for b in sorted(names)
                if m >= 10 or b != "b9:8080"]
        f = pd.DataFrame(rows, columns=["timestamp", "broker"]).assign(
            **{m: rng.random(len(rows)) for m in BROKER_METRICS})
        if how == "shuffled":
            f = f.sample(frac=1, random_state=d).reset_index(drop=True)
        if how == "missing":
            f.loc[7, "broker"] = None
        frames[day] = f
        path = tmp_path / f"day={day}" / "part-00000.parquet"
        path.parent.mkdir()
        table = pa.Table.from_pandas(f, preserve_index=False)
        if how != "plain":
            table = table.set_column(1, "broker", pc.dictionary_encode(table.column("broker")))
        pq.write_table(table.cast(table.schema.set(0, pa.field("timestamp", pa.timestamp("ms", tz="UTC")))), path,
                       row_group_size=29)  # (row groups that cut minutes)
        files.append(str(path))
    assert pq.ParquetFile(files[0]).num_row_groups == 4

    def day_of(b):
        return str(pd.Timestamp(int(b.ts[0]), unit="ms").date())

    lo = int(pd.Timestamp("2026-01-02 00:10", tz="UTC").value // 1_000_000)
    segments = (((None, None), list(days)), ((lo, None), list(days)[1:]), ((lo, lo + 7 * 60_000), list(days)[1:2]))
    for seg, want_days in segments:
        got = list(_day_blocks({"files": files}, *seg))
        for x, y in zip(got, got[1:]):  # whole minutes, in time order
            assert x.ts[-1] < y.ts[0]
        assert sorted({day_of(b) for b in got}) == want_days
        for day in want_days:
            mine = [b for b in got if day_of(b) == day]
            # (streamed: a block per row group read; a day out of order or missing a name: one block)
            assert len(mine) == 1 if days[day] in ("shuffled", "missing") else len(mine) == 4
            f = frames[day]
            if seg[0] is not None:
                f = f[f["timestamp"] >= pd.Timestamp(seg[0], unit="ms", tz="UTC")]
            if seg[1] is not None:
                f = f[f["timestamp"] < pd.Timestamp(seg[1], unit="ms", tz="UTC")]
            want = BrokerBlock(f.assign(broker=pd.Categorical(f["broker"])))  # (as a categorical: a missing name too)
            for b in mine:
                assert b.names == sorted(b.names) and set(b.codes.tolist()) == set(range(len(b.names)))
            np.testing.assert_array_equal(np.concatenate([b.ts for b in mine]), want.ts)
            assert [b.names[c] for b in mine for c in b.codes.tolist()] == [want.names[c] for c in want.codes.tolist()]
            np.testing.assert_array_equal(np.concatenate([b.metrics for b in mine]), want.metrics)
            assert sum(len(b.starts) for b in mine) == (
                30 if seg[0] is None or day != "2026-01-02" else 7 if seg[1] else 20)
