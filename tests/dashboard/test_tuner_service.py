"""The Tuner's service calls: one call per user action, the same answer as the steps it replaces."""
from dataclasses import replace

import pytest

from dashboard import sources
from dashboard.tuner import service
from dashboard.tuner.analysis import analyze, run_cycles
from dashboard.tuner.state import TunerState, build_config
from engine.errors import ShedlabError
from engine.releases import broker_versions

BIGO = "sample:bigo-threshold-first-unload"
YAHOO = "sample:yahoo-japan-3-brokers"


def _state(src=BIGO, shed="ThresholdShedder", place="LeastLongTermMessageRate", **values):
    return TunerState(src=src, shed=shed, place=place, values=tuple(sorted((k, str(v)) for k, v in values.items())))


def test_service001_tune_is_snapshot_config_analyse():
    st = _state(loadBalancerBrokerThresholdShedderPercentage=5, loadBalancerNoSuchKey=1)
    got = service.tune(st)
    cfg, errors = build_config(st, broker_versions(got.snap.ld))     # the release the brokers report
    assert cfg.pulsarVersion == "4.1.0"
    assert got.config == cfg and list(got.errors) == errors and any("loadBalancerNoSuchKey" in e for e in errors)
    want = analyze(sources.get_snapshot(st.src, st.step), cfg, st.seed)
    assert [(u.broker, u.bundle, u.destination) for u in got.analysis.cycle.unloads] == \
        [(u.broker, u.bundle, u.destination) for u in want.cycle.unloads]
    assert got.analysis.rev == want.rev and got.snap.id == want.snap.id
    with pytest.raises(ShedlabError):
        service.tune(_state(src="upload:nothing-here"))


def test_service002_cycles_clamped_and_hit_counts_only_for_the_std_strategy():
    st = _state()
    assert len(service.cycles(st, None).cycles) == 10  # the page's default
    run = service.cycles(st, -5)  # at least one cycle
    assert len(run.cycles) == 1 and run.hits is None
    assert len(service.cycles(st, 10**6).cycles) == service.MAX_CYCLES
    ts = _state(YAHOO, "TransferShedder", "ExtensibleLeastResourceUsageWithWeight")
    run = service.cycles(ts, 4)
    loaded = service.load(ts)
    plain = run_cycles(loaded.snap, loaded.config, ts.seed, 4)
    assert [len(c.unloads) for c in run.cycles] == [len(c.unloads) for c in plain]
    assert run.hits is not None and len(run.hits) == 4 and run.hits[0] >= 1


def test_service003_why_not_and_revisions():
    st = _state()
    assert service.why_not(st, "ghost:1") is None
    a = service.tune(st).analysis
    w = service.why_not(st, a.view.brokers[0], budget_s=0.5)
    assert w is not None and w.target == a.view.brokers[0] and w.kind == "broker"
    revs = service.revisions(a)
    assert revs["snapshot"] == f"{a.snap.id}|{a.snap.step}" and revs["scores"] == a.rev
    # the plan's token follows what the table shows: its first rows and the count, not the rows beyond
    # (on a copy: the analysis is memoised for the process)
    assert a.plan
    long = replace(a, plan=[dict(a.plan[0]) for _ in range(service.PLAN_ROWS + 3)])
    before = service.revisions(long)["plan"]
    long.plan[-1] = dict(long.plan[-1], reason="changed beyond the shown rows")
    assert service.revisions(long)["plan"] == before
    long.plan[0] = dict(long.plan[0], reason="changed in a shown row")
    assert service.revisions(long)["plan"] != before
    assert service.revisions(replace(long, plan=long.plan + [dict(a.plan[0])]))["plan"] != service.revisions(long)["plan"]


def test_service004_decided_moves_token_follows_every_move_and_skip():
    """The token of the decided moves (what the before/after and placement figures draw) is read from the
    cycle's indices: the same moves give the same token; another destination, another skip reason or
    one more unload give another; so does the ringed bundles' token when the unloaded bundles change."""
    import copy

    a = service.tune(_state(shed="AvgShedder", place="AvgShedder", loadBalancerAvgShedderHitCountLowThreshold=1,
                            loadBalancerAvgShedderHitCountHighThreshold=1, loadBalancerAvgShedderLowThreshold=2)).analysis
    assert a.cycle.unloads and "_index" in vars(a.cycle)  # (the indices the load manager gave)
    revs = service.revisions(a)

    def with_cycle(edit):
        c = copy.deepcopy(a.cycle)  # (its indices are not copied: looked up again from the names)
        edit(c)
        return service.revisions(replace(a, cycle=c))

    same = with_cycle(lambda c: None)
    assert (same["before_after"], same["topics"]) == (revs["before_after"], revs["topics"])
    other = next(b for b in a.view.brokers if b not in (a.cycle.unloads[0].destination, a.cycle.unloads[0].broker))
    moved = with_cycle(lambda c: setattr(c.unloads[0], "destination", other))
    assert moved["before_after"] != revs["before_after"] and moved["topics"] == revs["topics"]

    def skip_first(c):
        u = c.unloads.pop(0)
        u.skipped = "the destination broker is the same as the current owner"
        c.skipped.append(u)
    skipped = with_cycle(skip_first)
    assert skipped["before_after"] != revs["before_after"] and skipped["topics"] != revs["topics"]

    def reword(c):
        skip_first(c)
        c.skipped[-1].skipped = "no broker available to unload the bundle to"
    assert with_cycle(reword)["before_after"] != skipped["before_after"]
