""""Why not?": the threshold missed, by how much, and the slider value the real engine flips at."""
from dashboard import sources
from dashboard.tuner import analysis, whynot
from dashboard.tuner.state import build_config, coerce_state
from engine.samples import SAMPLES


def _a(name, shed=None, place=None, **values):
    st, _ = coerce_state({"src": f"sample:{name}", "shed": shed, "place": place,
                          "values": {**{k: str(v) for k, v in SAMPLES[name].config.items()}, **values}})
    return analysis.analyze(sources.get_snapshot(st.src), build_config(st)[0], 0)


def test_whynot001_broker_below_the_line():
    a = _a("bigo-threshold-first-unload")
    w = whynot.explain(a, "10.0.0.32:8080")
    assert w.kind == "broker" and not w.outcome
    assert "17.81 % is below average + threshold 27.35 %: missed by 9.54 points" in w.missed[0]
    flip = {f.key: f for f in w.flips}["loadBalancerBrokerThresholdShedderPercentage"]
    assert flip.value == 0 and flip.text.startswith("lower loadBalancerBrokerThresholdShedderPercentage from 10 % to 0 %")
    # the flip is real: at 0 % the engine selects .32
    b = analysis.analyze(a.snap, a.config.with_values({"loadBalancerBrokerThresholdShedderPercentage": "0"}), 0)
    assert any(s.broker == "10.0.0.32:8080" for s in b.result.selected)


def test_whynot002_the_shedding_broker_and_its_bundle():
    a = _a("bigo-threshold-first-unload")
    w = whynot.explain(a, "10.0.0.206:8080")
    assert w.outcome and w.headline == "10.0.0.206:8080 sheds this cycle"
    flips = {f.key: f.value for f in w.flips}
    assert flips["loadBalancerBrokerThresholdShedderPercentage"] == 12  # 28.95 < 17.35 + 12
    assert flips["loadBalancerBundleUnloadMinThroughputThreshold"] == 15  # needs 14.7 MB/s
    other = next(b for b in a.view.bundles if b not in a.unloaded_bundles and b.startswith("bigo/")
                 and whynot._broker_of(a.view, b) == "10.0.0.206:8080")
    w = whynot.explain(a, other)
    assert w.kind == "bundle" and "largest bundles" in " ".join(w.missed)


def test_whynot003_avgshedder_hit_counts():
    a = _a("avgshedder-pairing-6-brokers")
    w = whynot.explain(a, "broker-4:8080")
    assert "gap 60.00 >= high threshold 40" in w.missed[0]
    assert "high hits 1 of 2" in w.missed[1] and "1 more cycle(s) at gap >= 40" in w.missed[1]
    flips = {f.key: f.value for f in w.flips}
    assert flips["loadBalancerAvgShedderHitCountHighThreshold"] == 1
    w2 = whynot.explain(a, "broker-4:8080", cycles=2)
    assert w2.notes[0].endswith("within 2 cycles")


def test_whynot004_unknown_and_budget():
    a = _a("bigo-threshold-first-unload")
    w = whynot.explain(a, "nobody:1")
    assert w.kind == "unknown" and "not in this snapshot" in w.headline
    fl, n, notes = whynot.flips(a, "10.0.0.32:8080", budget_s=0.0)
    assert fl == [] and any("stopped after" in x for x in notes)
