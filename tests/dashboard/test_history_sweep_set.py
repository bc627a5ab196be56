"""One pass for many cells (engine.backtest.BacktestSet): each minute read once and its LoadView built once,
shared by the cells due that minute — and every cell's events exactly those of its own Backtest."""
from __future__ import annotations

import pandas as pd
import pytest

from dashboard.history.dataset import read_long, wide_brokers, wide_bundles
from dashboard.history.generate import generate
from engine.backtest import Backtest, BacktestSet, backtest_frames, backtest_set_frames, broker_blocks, BundleBlock
from engine.backtest import shedding_strategies
from engine.config import LoadBalancerConfig
from engine.strategies import registry
from tests.engine.test_shed_order import same_view


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    """5 brokers × 1 day with bundle metrics and the generator's incidents: (broker rows, bundle rows)."""
    p = tmp_path_factory.mktemp("hist") / "gen"
    generate(p, brokers=5, days=1, seed=7, start="2026-01-05", bundles_per_broker=3)
    long = read_long(p)
    return wide_brokers(long), wide_bundles(long)


def _grid(name: str) -> list[LoadBalancerConfig]:
    """The strategy's first grid key (two of its grid values) × the shedding interval 1 and 3 minutes and
    a grace period of 2 or the default: cells that run on different minutes and skip different bundles."""
    key, values = registry.spec(name).sweep_grid[0]
    out = []
    for v in list(values)[:2]:
        for interval, grace in ((1, None), (3, 2), (2, None)):
            kv = {key: str(v), "loadBalancerSheddingIntervalMinutes": str(interval)}
            if grace is not None:
                kv["loadBalancerSheddingGracePeriodMinutes"] = str(grace)
            out.append(LoadBalancerConfig().with_values(kv))
    return out


@pytest.mark.parametrize("bundles", ["real", "synthetic"])
@pytest.mark.parametrize("name", shedding_strategies())
def test_sweepset001_every_cell_equals_its_own_backtest(frames, name, bundles):
    """Every shedding strategy, cells varying a strategy key and the driver's interval and grace: each cell's
    events (state JSON included) equal one Backtest per cell; the set builds one view per minute."""
    bw, kw = frames
    kw = kw if bundles == "real" else None
    cfgs = _grid(name)
    got = backtest_set_frames(bw, kw, name, cfgs, state_limit=50)
    fired = 0
    for cfg, ev in zip(cfgs, got):
        want = backtest_frames(bw, kw, name, cfg, state_limit=50)
        pd.testing.assert_frame_equal(ev, want)
        fired += len(want)
    assert fired > 0, name  # the grid fires somewhere on this day: the comparison means something


@pytest.mark.parametrize("name", ["AvgShedder", "ThresholdShedder"])
def test_sweepset001b_counting_drivers_tally_what_the_events_say(frames, name):
    """A driver that counts instead of recording (what a sweep's tasks run) gives, per UTC day, the events'
    count, their bundles and their distinct minutes — also across a warm-up (``emit_from``), a start from
    a carried state, and counts taken batch after batch (block after block)."""
    bw, kw = frames
    day = 86_400_000
    for cfg in _grid(name):
        events = Backtest(name, cfg, state_limit=0)
        counting = Backtest(name, cfg, state_limit=0, tally=True)
        got = []
        for block in broker_blocks([bw.iloc[: len(bw) // 3], bw.iloc[len(bw) // 3:]]):
            events.feed(block, BundleBlock(kw))
            counting.feed(block, BundleBlock(kw))
            got += counting.take_tally()
        assert counting.events == [] and counting.take_tally() == []
        ev = events.finish()
        want = {}
        for d, g in ev.groupby(ev["timestamp"].astype("int64") // 10**6 // day):
            want[int(d)] = (len(g), int(g["n_bundles"].sum()), g["timestamp"].nunique())
        tally = {}
        for d, e, b, m in got:
            t = tally.setdefault(d, [0, 0, 0])
            t[0], t[1], t[2] = t[0] + e, t[1] + b, t[2] + m
        assert {d: tuple(t) for d, t in tally.items()} == want
        assert counting.n_events == len(ev) and counting.carried() == events.carried()
    assert sum(want_e for want_e, *_ in want.values()) > 0  # (the last cell fires: the counts mean something)
    # a warm-up and a carried start: counted like recorded
    cfg = _grid(name)[0]
    mid = int(bw["timestamp"].astype("int64").iloc[len(bw) // 2] // 10**6)
    a = backtest_frames(bw, kw, name, cfg, state_limit=0, emit_from=mid)
    b = Backtest(name, cfg, state_limit=0, tally=True, emit_from=mid)
    b.feed(next(iter(broker_blocks([bw]))), BundleBlock(kw))
    assert sum(e for _d, e, _b, _m in b.take_tally()) == len(a)


def test_sweepset002_one_view_per_minute_and_view_key(frames):
    """Views are built once per minute and view key: with intervals 1 and 3 every minute has one view;
    members with another number of synthetic bundles get their own view (and still equal their Backtest)."""
    bw, _kw = frames
    name = "AvgShedder"
    c1 = LoadBalancerConfig()
    c3 = LoadBalancerConfig().with_values({"loadBalancerSheddingIntervalMinutes": "3"})
    members = [Backtest(name, c1), Backtest(name, c3), Backtest(name, c1, synthetic_bundles=4),
               Backtest(name, c3, synthetic_bundles=4)]
    s = BacktestSet(members)
    for block in broker_blocks([bw]):
        s.feed(block)
    minutes = bw["timestamp"].nunique()
    assert s.views_built == 2 * minutes
    for bt, (cfg, k) in zip(members, ((c1, 8), (c3, 8), (c1, 4), (c3, 4))):
        want = backtest_frames(bw, None, name, cfg, synthetic_bundles=k)
        pd.testing.assert_frame_equal(bt.finish(), want)
        assert bt.minutes == minutes


def test_sweepset003_blocks_in_time_and_disabled_members(frames):
    """Fed day by day in two blocks (cut mid-day) and with a member whose shedding is off: the same."""
    bw, kw = frames
    name = "ThresholdShedder"
    ts = bw["timestamp"].sort_values().unique()
    cut = ts[len(ts) // 3]
    parts = [bw[bw["timestamp"] < cut], bw[bw["timestamp"] >= cut]]
    cfgs = [LoadBalancerConfig(), LoadBalancerConfig().with_values({"loadBalancerSheddingEnabled": "false"}),
            LoadBalancerConfig().with_values({"loadBalancerBrokerThresholdShedderPercentage": "5"})]
    members = [Backtest(name, c) for c in cfgs]
    s = BacktestSet(members)
    kb = BundleBlock(kw)
    for block in broker_blocks(parts):
        s.feed(block, kb)
    for bt, cfg in zip(members, cfgs):
        pd.testing.assert_frame_equal(bt.finish(), backtest_frames(bw, kw, name, cfg))
    assert members[1].finish().empty


def test_sweepset004_cell_groups_balance_shedding_minutes():
    from dashboard.history.sweep import cell_groups

    cells = list(range(6))
    assert cell_groups(cells, [1] * 6, 2) == [[0, 2, 4], [1, 3, 5]]
    assert cell_groups(cells, [1] * 6, 1) == [cells]
    assert cell_groups(cells, [1] * 6, 10) == [[c] for c in cells]  # never more groups than cells
    # interval 1 cells weigh 3x interval 3 cells: 2 heavy + 6 light split evenly
    got = cell_groups(list(range(8)), [1, 1, 3, 3, 3, 3, 3, 3], 2)
    assert sorted(c for g in got for c in g) == list(range(8))
    assert [sum(1 / [1, 1, 3, 3, 3, 3, 3, 3][c] for c in g) for g in got] == pytest.approx([2.0, 2.0])


@pytest.mark.parametrize("groups", [None, 1, 3, 4])
def test_sweepset005_spark_groups_equal_one_backtest_per_cell(spark, tmp_path_factory, groups):
    """The Spark sweep in G groups (one task each, one BacktestSet per group) gives every cell the counts of
    its own Backtest — including a grid varying the shedding interval (cells due on different minutes)."""
    from dashboard.history.sparkio import read_bundle_rows, read_broker_minutes, to_pandas
    from dashboard.history.sweep import sweep

    p = tmp_path_factory.mktemp("hist") / "gen"
    generate(p, brokers=5, days=1, seed=7, start="2026-01-05", bundles_per_broker=3)
    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerSheddingIntervalMinutes"
    cells = to_pandas(sweep(read_broker_minutes(spark, p), "AvgShedder", None, xk, [10, 20], yk, [1, 2],
                            bundle_df=read_bundle_rows(spark, p), groups=groups), ["cell"])
    assert cells[["x", "y"]].values.tolist() == [[10, 1], [20, 1], [10, 2], [20, 2]]
    long = read_long(p)
    bw, kw = wide_brokers(long), wide_bundles(long)
    for c in cells.itertuples():
        cfg = LoadBalancerConfig().with_values({xk: str(c.x), yk: str(int(c.y))})
        ev = backtest_frames(bw, kw, "AvgShedder", cfg, state_limit=0)
        assert (c.events, c.bundles, c.minutes) == (len(ev), ev["n_bundles"].sum(), ev["timestamp"].nunique())
    assert cells["events"].sum() > 0


def test_sweepset006_spark_segments_carry_each_cells_state(spark, tmp_path_factory):
    """The grouped sweep as consecutive time segments (the page's progress): each cell's state carried from
    one segment to the next — the same counts as one stream, with progress between the segments."""
    from dashboard.history.sparkio import read_bundle_rows, read_broker_minutes, to_pandas
    from dashboard.history.sweep import sweep

    p = tmp_path_factory.mktemp("hist") / "gen2"
    generate(p, brokers=4, days=2, seed=3, start="2026-01-05", bundles_per_broker=3)
    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHitCountLowThreshold"
    args = (read_broker_minutes(spark, p), "AvgShedder", None, xk, [10, 20], yk, [2, 8])
    seen = []
    one = to_pandas(sweep(*args, bundle_df=read_bundle_rows(spark, p), groups=2), ["cell"])
    seg = to_pandas(sweep(*args, bundle_df=read_bundle_rows(spark, p), groups=2, segments=3,
                          progress=lambda d, t, txt: seen.append((d, t, txt))), ["cell"])
    pd.testing.assert_frame_equal(one, seg)
    assert [(d, t) for d, t, _x in seen] == [(0, 3), (1, 3), (2, 3), (3, 3)] and "segment 2 of 3" in seen[1][2]
    long = read_long(p)
    bw, kw = wide_brokers(long), wide_bundles(long)
    for c in seg.itertuples():
        cfg = LoadBalancerConfig().with_values({xk: str(c.x), yk: str(int(c.y))})
        ev = backtest_frames(bw, kw, "AvgShedder", cfg, state_limit=0)
        assert (c.events, c.bundles, c.minutes, c.days_with_events) == (
            len(ev), ev["n_bundles"].sum(), ev["timestamp"].nunique(), ev["timestamp"].dt.date.nunique())
    assert seg["events"].sum() > 0


@pytest.mark.parametrize("segments", [None, 3])
def test_sweepset007_tasks_read_the_wide_day_files_themselves(spark, tmp_path_factory, segments):
    """Synthetic bundles on a local wide layout: each group's task reads the day files itself (no rows
    through the JVM) — over a range starting and ending mid-day, in one job or time segments — and every
    cell still equals its own pandas backtest over that range."""
    from dashboard.history.sparkio import read_broker_minutes, to_pandas
    from dashboard.history.sweep import _file_source, sweep

    p = tmp_path_factory.mktemp("hist") / "gen3"
    generate(p, brokers=4, days=3, seed=5, start="2026-01-05", bundles_per_broker=2)
    start, end = "2026-01-05T20:00:00Z", "2026-01-07T03:59:00Z"
    df = read_broker_minutes(spark, p, start, end)
    assert _file_source(df, "synthetic", None) is not None
    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerSheddingIntervalMinutes"
    seen = []
    cells = to_pandas(sweep(df, "AvgShedder", None, xk, [10, 20, 30], yk, [1, 2], bundles="synthetic", groups=2,
                            segments=segments, progress=lambda d, t, txt: seen.append(d)), ["cell"])
    assert len(seen) == (4 if segments else 0)
    bw = wide_brokers(read_long(p))
    bw = bw[(bw["timestamp"] >= pd.Timestamp("2026-01-05 20:00")) & (bw["timestamp"] <= pd.Timestamp("2026-01-07 03:59"))]
    for c in cells.itertuples():
        cfg = LoadBalancerConfig().with_values({xk: str(c.x), yk: str(int(c.y))})
        ev = backtest_frames(bw, None, "AvgShedder", cfg, state_limit=0)
        assert (c.events, c.bundles, c.minutes, c.days_with_events) == (
            len(ev), ev["n_bundles"].sum(), ev["timestamp"].nunique(), ev["timestamp"].dt.date.nunique()), c
    assert cells["events"].sum() > 0


def test_sweepset008_run_job_pandas_and_spark_agree(spark, tmp_path_factory):
    """The job runner's two sweeps — pandas (one pass, every cell) and Spark (groups; with a progress bar,
    time segments over the day files) — give the same table, and it equals one backtest per cell."""
    from dashboard.history.jobs import run_job

    p = tmp_path_factory.mktemp("hist") / "gen4"
    generate(p, brokers=4, days=2, seed=11, start="2026-01-05", bundles_per_broker=2)
    params = {"x_key": "loadBalancerAvgShedderLowThreshold", "x_values": [10, 25],
              "y_key": "loadBalancerSheddingIntervalMinutes", "y_values": [1, 3, 5], "bundles": "synthetic"}
    seen = []
    a = run_job("sweep", p, params, engine="pandas", use_cache=False)["cells"]
    b = run_job("sweep", p, {**params, "groups": 2}, engine="spark", use_cache=False,
                progress=lambda d, t, txt: seen.append(txt))["cells"]
    cols = ["cell", "x", "y", "events", "bundles", "minutes", "days_with_events"]
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True), check_dtype=False)
    assert any("segment 2 of 2" in t for t in seen)
    bw = wide_brokers(read_long(p))
    for c in a.itertuples():
        cfg = LoadBalancerConfig().with_values({params["x_key"]: str(c.x), params["y_key"]: str(int(c.y))})
        assert c.events == len(backtest_frames(bw, None, "AvgShedder", cfg, state_limit=0))
    assert a["events"].sum() > 0


def test_sweepset009_result_is_every_cell_in_order_with_spark_types_and_no_second_job(spark, tmp_path_factory):
    """The grouped sweep's table: one row per grid cell in cell order (a cell where nothing fires is listed
    with zeros), ``cell`` and the counts Spark longs, ``x``/``y`` doubles; reading it back into pandas runs
    no further Spark job (the counts were summed from the tasks' collected rows)."""
    from dashboard.history.sparkio import read_broker_minutes, to_pandas
    from dashboard.history.sweep import sweep

    p = tmp_path_factory.mktemp("hist") / "gen5"
    generate(p, brokers=4, days=1, seed=5, start="2026-01-05", bundles_per_broker=2)
    xk, yk = "loadBalancerAvgShedderLowThreshold", "loadBalancerAvgShedderHitCountLowThreshold"
    # a low threshold of 95 points never fires on the generator's loads
    sdf = sweep(read_broker_minutes(spark, p), "AvgShedder", None, xk, [10, 95], yk, [2, 8], bundles="synthetic",
                groups=2)
    assert [(f.name, f.dataType.simpleString()) for f in sdf.schema.fields] == [
        ("cell", "bigint"), ("x", "double"), ("y", "double"), ("events", "bigint"), ("bundles", "bigint"),
        ("minutes", "bigint"), ("days_with_events", "bigint")]
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("sweepset009", "reading the sweep back")
    try:
        cells = to_pandas(sdf)
        assert list(tracker.getJobIdsForGroup("sweepset009")) == []
    finally:
        spark.sparkContext.setJobGroup("", "")
    assert cells["cell"].tolist() == [0, 1, 2, 3]
    assert cells[["x", "y"]].values.tolist() == [[10, 2], [95, 2], [10, 8], [95, 8]]
    assert [str(cells[c].dtype) for c in ("events", "bundles", "minutes", "days_with_events")] == ["int64"] * 4
    fired, never = cells[cells["x"] == 10], cells[cells["x"] == 95]
    assert (fired["events"] > 0).all() and (fired["days_with_events"] == 1).all()
    assert never[["events", "bundles", "minutes", "days_with_events"]].values.tolist() == [[0, 0, 0, 0]] * 2
    # and as Spark reads it: the same rows
    assert [tuple(r) for r in sdf.collect()] == [tuple(r) for r in cells.itertuples(index=False)]


@pytest.mark.parametrize("name", shedding_strategies())
def test_sweepset010_replays_leave_no_cyclic_garbage(frames, name):
    """A replay frees each round's results by reference counting alone: nothing it builds (pairs, their
    lazily written reasons, selections, decisions) refers back to what holds it. A cycle per triggered
    pair left millions of objects to the cyclic collector in a month's sweep (a quarter of its time)."""
    import gc

    bw, _kw = frames
    members = [Backtest(name, cfg, synthetic_bundles=8, state_limit=0, tally=True) for cfg in _grid(name)]
    bts = BacktestSet(members)
    gc.collect()
    gc.disable()
    try:
        for block in broker_blocks([bw]):
            bts.feed(block)
        fired = sum(t[1] for bt in members for t in bt.take_tally())
        left = gc.collect()
    finally:
        gc.enable()
    assert fired > 0
    assert left == 0


@pytest.mark.parametrize("name", shedding_strategies())
def test_sweepset011_a_runner_kept_on_its_working_copy_decides_as_the_value_contract(frames, name):
    """A backtest's runner keeps the strategy's working copy as the memory and builds the value only when
    asked: every event (with the state before its minute), the counts and the memory carried at the end
    equal the same replay threaded through ``result, state = strategy.run(view, conf, recently, state)``
    minute after minute — from an empty memory and from one carried in the middle of the day; one broker
    leaves for two hours and comes back (what the strategies forget of it)."""
    bw, kw = frames
    ts = bw["timestamp"]
    gone = (bw["broker"] == bw["broker"].iloc[0]) & (ts >= ts.quantile(0.3)) & (ts < ts.quantile(0.3) + pd.Timedelta(hours=2))
    bw = bw[~gone]
    half = bw[bw["timestamp"] < bw["timestamp"].iloc[len(bw) // 2]]
    kb = BundleBlock(kw)

    def replay(lazy: bool, initial=None, state_limit=10_000, tally=False, rows=bw, cfg=None):
        bt = Backtest(name, cfg, synthetic_bundles=8, state_limit=state_limit, initial=initial, tally=tally)
        if not lazy:
            assert bt._runner.lazy  # every shipped strategy runs the interface's own cycle
            bt._runner.lazy = False
        for block in broker_blocks([rows]):
            bt.feed(block, kb)
        return bt

    cfg = next((c for c in _grid(name) if replay(True, cfg=c).n_events), None)  # a cell that fires this day
    assert cfg is not None, name
    start = replay(False, rows=half, cfg=cfg).carried()
    assert start == replay(True, rows=half, cfg=cfg).carried()
    for initial in (None, start):
        kept, threaded = replay(True, initial, cfg=cfg), replay(False, initial, cfg=cfg)
        pd.testing.assert_frame_equal(kept.finish(), threaded.finish())
        assert kept.carried() == threaded.carried()
        assert kept.n_events == threaded.n_events
        counted, counted_t = replay(True, initial, 0, True, cfg=cfg), replay(False, initial, 0, True, cfg=cfg)
        assert counted.take_tally() == counted_t.take_tally()
        assert counted.carried() == threaded.carried()


@pytest.mark.parametrize("name", ["AvgShedder", "ThresholdShedder"])
def test_sweepset005_synthetic_bundles_decide_as_sorted(frames, name):
    """Over synthetic bundles (a broker's load split evenly) the views say so (``even_shares``) and share
    one per-broker shed order minute after minute; the events — which bundles, in which order — equal
    those of the same backtest whose views sort every broker's bundles by value each minute."""

    class Sorting(Backtest):
        def view(self, *args, **kwargs):
            v = super().view(*args, **kwargs)
            v.even_shares = False  # (the views sort as any view does)
            return v

    bw, _kw = frames
    low = "loadBalancerAvgShedderLowThreshold" if name == "AvgShedder" else "loadBalancerBrokerThresholdShedderPercentage"
    for value in ("2", "5"):
        cfg = LoadBalancerConfig().with_values({low: value, "loadBalancerAvgShedderHitCountLowThreshold": "1"})
        even, plain = Backtest(name, cfg), Sorting(name, cfg)
        views = []
        for block in broker_blocks([bw]):
            even.feed(block)
            plain.feed(block)
            n = block.ends[0] - block.starts[0]
            views.append(even.view(int(block.ts[0]), block.names_of(block.codes[:n]), block.rows(0, n)))
            views.append(even.view(int(block.ts[-1]), block.names_of(block.codes[:n]), block.rows(0, n)))
        got, want = even.finish(), plain.finish()
        assert len(want) > 0 and want["n_bundles"].lt(8).any()  # pairs that take some of a broker's bundles
        pd.testing.assert_frame_equal(got, want)
        assert all(v.even_shares for v in views) and views[0].owned_in_shed_order is views[1].owned_in_shed_order
        # (made once for the broker list, not by each minute's view that asks)
        assert views[0].first_in_shed_order is views[-1].first_in_shed_order
        assert views[0].broker_set is views[-1].broker_set == frozenset(views[-1].brokers)
    # a later minute's view (the first one's, at that minute) equals the one a new driver builds for it
    a, b = int(block.starts[-1]), int(block.ends[-1])
    minute = (int(block.ts[a]), block.names_of(block.codes[a:b]), block.rows(a, b))
    later, fresh = even.view(*minute), Backtest(name, cfg).view(*minute)
    assert "shed_rank" in later.__dict__  # (carried over from the first minute's view)
    same_view(later, fresh)


def test_sweepset012_a_task_hands_its_counts_over_once_a_day(tmp_path_factory):
    """Blocks of a few minutes over two days (none crossing midnight, as a task reads them), fed through
    ``fed_by_day``: it pauses once after each day's last block (the counts handed over then are that day's,
    complete); the counts equal those of one backtest fed the two days whole."""
    from dashboard.history.sweep import fed_by_day

    p = tmp_path_factory.mktemp("hist") / "gen2d"
    generate(p, brokers=4, days=2, seed=3, start="2026-01-05", bundles_per_broker=2)
    bw = wide_brokers(read_long(p))
    cfg = LoadBalancerConfig().with_values({"loadBalancerAvgShedderLowThreshold": "5",
                                            "loadBalancerAvgShedderHitCountLowThreshold": "2"})
    ts = bw["timestamp"].sort_values().unique()
    midnight = pd.Timestamp("2026-01-06", tz=ts[0].tz)
    cuts = sorted({ts[0], *ts[100::200], midnight, ts[-1] + pd.Timedelta(minutes=1)})  # 200 minutes, by day
    parts = [bw[(bw["timestamp"] >= a) & (bw["timestamp"] < b)] for a, b in zip(cuts, cuts[1:])]
    assert len(parts) > 10
    bt = Backtest("AvgShedder", cfg, synthetic_bundles=8, state_limit=0, tally=True)
    handed = [(day, bt.take_tally()) for day in fed_by_day(BacktestSet([bt]), broker_blocks(parts))]
    assert [d for d, _ in handed] == [20458, 20459]  # (2026-01-05 and -06, as epoch days)
    assert [[t[0] for t in got] for _d, got in handed] == [[20458], [20459]]
    whole = Backtest("AvgShedder", cfg, synthetic_bundles=8, state_limit=0, tally=True)
    for block in broker_blocks([bw[bw["timestamp"].dt.day == 5], bw[bw["timestamp"].dt.day == 6]]):
        whole.feed(block)
    assert [t for _d, got in handed for t in got] == whole.take_tally()
    assert sum(t[1] for _d, got in handed for t in got) > 0
