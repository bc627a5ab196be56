"""Predicted vs actual over a History range: the load manager's counters (what the cluster did) against
the engine's replay with the cluster's broker.conf (``dashboard.history.predicted``), its command line,
figure and report.

The Prometheus export mirrors what a 3-broker modular cluster emits (apache/pulsar):
``pulsar_lb_cpu_usage`` (``LoadManagerReport`` metrics: ``broker`` = advertised address without port,
``metric="loadBalancing"``), ``pulsar_broker_throughput_in`` (only ``cluster``; the scrape adds
``instance=<ip:port>``), ``pulsar_bundle_msg_throughput_in`` … (``ModularLoadManagerImpl`` bundle metrics:
``broker`` = advertised address, ``bundle``, ``metric="loadBalancing"``) and the leader's
``pulsar_lb_unload_bundle_count`` (``metric="bundleUnloading"``, ``cluster`` only), as
``/api/v1/query_range`` JSON.
"""
from __future__ import annotations

import json

import pytest

from dashboard.export import build_agreement_report
from dashboard.figures.history import agreement_figure
from dashboard.history.cli import main
from dashboard.history.ingest import ingest
from dashboard.history.predicted import history_agreement
from engine.errors import UsageError

T0 = 1767571200  # 2026-01-05T00:00:00Z
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
BIG, SMALL, OTHER = "t/n/0x00000000_0x40000000", "t/n/0x40000000_0x80000000", "t/n/0x80000000_0xffffffff"
MB = 1024 * 1024
# ThresholdShedder without history smoothing: the cpu spike of minute 5 alone decides
CONF = ("loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder\n"
        "loadBalancerHistoryResourcePercentage=0\n")
MINUTES = 90


def _owner(bundle, minute):
    if bundle == BIG:
        return "10.0.0.1" if minute <= 5 else "10.0.0.2"  # the leader moved it after the spike
    return {SMALL: "10.0.0.1", OTHER: "10.0.0.3"}[bundle]


def _export(tmp_path, counters=("pulsar_lb_unload_bundle_count", "pulsar_lb_unload_broker_count"), bundles=True):
    res = []

    def add(labels, fn):
        res.append({"metric": {"cluster": "c1", "job": "broker", **labels},
                    "values": [[T0 + 60 * m, repr(float(fn(m)))] for m in range(MINUTES)]})

    for h in HOSTS:
        inst = f"{h}:8080"
        add({"__name__": "pulsar_lb_cpu_usage", "broker": h, "metric": "loadBalancing", "instance": inst},
            lambda m, h=h: (95.0 if h == "10.0.0.1" else 10.0) if m == 5 else 30.0)
        add({"__name__": "pulsar_broker_throughput_in", "instance": inst}, lambda m: 60.0 * MB)
        for b in (BIG, SMALL, OTHER) if bundles else ():
            res.append({"metric": {"__name__": "pulsar_bundle_msg_throughput_in", "cluster": "c1", "job": "broker",
                                   "broker": h, "bundle": b, "metric": "loadBalancing", "instance": inst},
                        "values": [[T0 + 60 * m, repr(50.0 * MB if b == BIG else 5.0 * MB)]
                                   for m in range(MINUTES) if _owner(b, m) == h]})
    for counter in counters:  # one cycle, 1 broker, 1 bundle
        add({"__name__": counter, "metric": "bundleUnloading", "instance": "10.0.0.2:8080"},
            lambda m: 0 if m <= 5 else 1)
    f = tmp_path / "export.json"
    f.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": res}}))
    ds = tmp_path / "ds"
    ingest([f], ds)
    return ds


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return _export(tmp_path_factory.mktemp("agree"))


def test_hagree001_the_engine_with_the_clusters_conf_agrees_with_the_counters(dataset):
    ag = history_agreement(dataset, conf_text=CONF)
    m = ag.metrics
    assert ag.strategy == "ThresholdShedder"
    assert m["observed_unloads"] == 1.0 and m["predicted_unloads"] == 1.0
    assert m["agreement"] == 1.0 and m["basis"] == "unloads per hour (counts)"
    # who shed comes from the bundle series changing broker, with the same broker ids as the metrics
    h = ag.hours.set_index(ag.hours["hour"].dt.hour)
    assert h.loc[0, "observed_brokers"] == ["10.0.0.1:8080"] == h.loc[0, "predicted_brokers"]
    assert h.loc[1, "predicted"] == 0 == h.loc[1, "observed"]
    assert m["broker_precision"] == 1.0 and m["broker_recall"] == 1.0
    assert "brokers shed, summed over the shedding cycles: the cluster 1 (unload_broker counter), the engine 1" \
        in ag.notes
    fig = agreement_figure(ag)
    assert fig.layout.meta["agreement"] == 1.0 and "agreement 100 %" in fig.layout.title.text


def test_hagree002_a_conf_that_would_not_shed_disagrees_visibly(dataset, tmp_path, capsys):
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF + "loadBalancerSheddingEnabled=false\n")
    assert main(["agreement", str(dataset), "--conf", str(conf), "--html", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    assert "agreement 0 %" in out and "recall 0 %" in out and "10.0.0.1:8080" in out
    html = (tmp_path / "r.html").read_text()
    assert "id='predicted-vs-actual'" in html and "Jaccard" in html and "fig-agreement" in html
    assert main(["agreement", str(dataset), "--conf", str(conf), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["metrics"]["observed_unloads"] == 1.0 and d["metrics"]["predicted_unloads"] == 0.0
    # a strategy the History replay does not run (the extensible load manager's) is refused with the way out
    with pytest.raises(UsageError, match="engine replay TIMELINE --observed"):
        history_agreement(dataset, conf_text="loadBalancerLoadSheddingStrategy="
                                             "org.apache.pulsar.broker.loadbalance.extensions.scheduler.TransferShedder\n")
    with pytest.raises(UsageError, match="compares up to 7"):  # the page's synchronous comparison is bounded
        history_agreement(dataset, "2026-01-01", "2026-01-20", conf_text=CONF, max_days=7)
    conf.write_text("loadBalancerSheddingIntervalMinutes=soon\n")
    assert main(["agreement", str(dataset), "--conf", str(conf)]) == 2
    assert "broker.conf" in capsys.readouterr().err


def test_hagree003_report_of_a_timeline_shows_each_unload_side_by_side(tmp_path):
    from tests.engine.test_agreement import SMALL as TS, START, _cfg, _snap
    from engine.agreement import compare_timeline
    from engine.cli.replay import replay_timeline

    snaps = [_snap(0, 95, START), _snap(1, 92, {**START, TS: "c:8080"}), _snap(2, 92, {**START, TS: "c:8080"})]
    _, cycles, _ = replay_timeline(snaps, _cfg())
    ag = compare_timeline(snaps, cycles, source="night.jsonl", strategy="OverloadShedder")
    html = build_agreement_report(ag, agreement_figure(ag), conf=CONF)
    assert "predicted only" in html and "observed only" in html and TS in html and "agreement" in html


def test_hagree004_the_tuner_report_of_a_timeline_includes_predicted_vs_actual():
    """A timeline opened in the Tuner (JSON lines upload): "Export report" carries the comparison."""
    import base64
    import uuid

    from dashboard import export, sources
    from dashboard.tuner import analysis
    from dashboard.tuner.state import build_config, coerce_state
    from engine.io import save_snapshot
    from tests.engine.test_agreement import MOVED, START, _snap

    import tempfile
    from pathlib import Path

    lines = []
    with tempfile.TemporaryDirectory() as d:
        for i, s in enumerate([_snap(0, 95, START), _snap(1, 50, MOVED), _snap(2, 50, MOVED)]):
            save_snapshot(s, Path(d) / "s.json")
            lines.append(json.dumps(json.loads((Path(d) / "s.json").read_text())))
    url = "data:application/json;base64," + base64.b64encode("\n".join(lines).encode()).decode()
    got = sources.ingest_files(uuid.uuid4().hex, [url], ["night.jsonl"])
    assert not got.errors, got.errors
    st, _ = coerce_state({"src": got.sources[0]["id"], "shed": "OverloadShedder"})
    cfg, _ = build_config(st)
    a = analysis.analyze(sources.get_snapshot(st.src, 0), cfg, 0)
    html = export.build_report(a, st)
    assert "id='predicted-vs-actual'" in html and "agreement" in html and "fig-agreement" in html
    assert "100 %" in html and "<b>both</b>" in html
    assert "predicted-vs-actual" not in export.build_report(a, st, agreement=None)


def test_hagree005_a_range_without_the_bundle_counter_compares_the_brokers_shed(tmp_path, capsys):
    """``pulsar_lb_unload_broker_count`` and ``pulsar_lb_bundles_split_count`` but no
    ``pulsar_lb_unload_bundle_count`` and no bundle metrics: the brokers shed per hour are compared (the
    modular leader counts a broker once per cycle in which it unloaded a bundle)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ds = _export(tmp_path / "a", counters=("pulsar_lb_unload_broker_count", "pulsar_lb_bundles_split_count"),
                 bundles=False)
    ag = history_agreement(ds, conf_text=CONF)
    m = ag.metrics
    assert m["unit"] == "brokers shed" and m["basis"] == "brokers shed per hour (counts)"
    assert m["observed_unloads"] == 1.0 and m["predicted_unloads"] == 1.0 and m["agreement"] == 1.0
    assert any("no unload_bundle counter" in n and "unload_broker" in n for n in ag.notes)
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF)
    assert main(["agreement", str(ds), "--conf", str(conf)]) == 0
    assert "brokers shed predicted 1" in capsys.readouterr().out
    assert agreement_figure(ag).layout.yaxis.title.text == "brokers shed"
    # only the split counter: the refusal names what the range has and what it needs
    ds2 = _export(tmp_path / "b", counters=("pulsar_lb_bundles_split_count",), bundles=False)
    assert main(["agreement", str(ds2), "--conf", str(conf)]) == 2
    err = capsys.readouterr().err
    assert "counters bundles_split but none that counts unloads" in err
    assert "pulsar_lb_unload_bundle_count" in err and "pulsar_lb_unload_broker_count" in err
