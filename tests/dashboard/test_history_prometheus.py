"""Prometheus history that means what it says: broker identity, the cluster label, the load manager's
counters and the VictoriaMetrics / promtool / scraped-/metrics readers.

Label shapes mirror what Pulsar emits (apache/pulsar):
* ``pulsar_lb_cpu_usage`` … — the modular load manager's ``LoadManagerReport`` metrics: ``cluster``,
  ``broker`` = advertised address without port, ``metric="loadBalancing"`` (reference-metrics, LoadBalancing);
* ``pulsar_broker_rate_in`` … — ``BrokerOperabilityMetrics``/``PrometheusMetricsGenerator``: only ``cluster``;
  Prometheus adds ``instance=<ip:port>`` and ``job`` when it scrapes;
* ``pulsar_lb_unload_broker_count`` — ``metric="bundleUnloading"``, ``cluster``, no broker (modular leader);
* ``pulsar_lb_unload_broker_breakdown_total`` — ``UnloadCounter#toMetrics`` (ELM): ``broker`` = advertised
  address, ``metric="bundleUnloading"``, ``result``, ``reason``.
Files: ``/api/v1/query_range`` JSON, VictoriaMetrics ``/api/v1/export`` lines, ``promtool tsdb dump`` lines
(``cmd/promtool/tsdb.go``: ``{labels} value timestamp_ms``) and ``curl /metrics`` text exposition.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from dashboard.history.cli import main
from dashboard.history.dataset import actual_actions, read_long
from dashboard.history.ingest import ingest
from engine.errors import InputError

T0 = 1767571200  # 2026-01-05T00:00:00Z
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
CPU = {"10.0.0.1": 80.0, "10.0.0.2": 40.0, "10.0.0.3": 20.0}
RATE = {"10.0.0.1": 1000.0, "10.0.0.2": 500.0, "10.0.0.3": 250.0}


def _series(cluster="c1", lb_id=lambda h: h, inst=lambda h: f"{h}:8080", minutes=3):
    """(labels, [(t_s, value)]) of a 3-broker cluster, modular load manager shapes."""
    out = []
    for h in HOSTS:
        ts = [T0 + 60 * i for i in range(minutes)]
        out.append(({"__name__": "pulsar_lb_cpu_usage", "cluster": cluster, "broker": lb_id(h),
                     "metric": "loadBalancing", "job": "broker", "instance": inst(h)}, [(t, CPU[h]) for t in ts]))
        out.append(({"__name__": "pulsar_broker_rate_in", "cluster": cluster, "job": "broker", "instance": inst(h)},
                    [(t, RATE[h]) for t in ts]))
    return out


def _query_range(series):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": lab, "values": [[t, repr(v)] for t, v in pts]} for lab, pts in series]}}


def _write_qr(path, series):
    path.write_text(json.dumps(_query_range(series)))
    return path


def _ratios(ds):
    df = read_long(ds)
    w = df.pivot_table(index=["timestamp", "broker"], columns="metric", values="value").reset_index()
    g = w.groupby("timestamp")
    return sorted(df["broker"].unique()), (g["msg_rate_in"].max() / g["msg_rate_in"].min()).unique().tolist(), \
        (g["cpu"].max() / g["cpu"].min()).unique().tolist()


def test_hprom001_broker_and_instance_labels_make_exactly_three_brokers(tmp_path):
    # pulsar_lb_* carry broker=<host> (no port), the rates only the scrape's instance=<ip:port>
    f = _write_qr(tmp_path / "export.json", _series())
    m = ingest([f], tmp_path / "ds")
    brokers, rate_ratio, cpu_ratio = _ratios(tmp_path / "ds")
    assert brokers == ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]
    assert rate_ratio == [4.0] and cpu_ratio == [4.0]
    assert m["report"]["broker_identity"] == ["broker", "instance"]


def test_hprom002_identities_that_do_not_line_up_are_refused_and_a_map_fixes_them(tmp_path, capsys):
    # broker = the advertised pod DNS name, instance = the pod IP: nothing says which is which
    dns = {h: f"pulsar-broker-{i}.pulsar-broker.pulsar.svc.cluster.local" for i, h in enumerate(HOSTS)}
    pod_ip = {h: f"10.244.{i}.5" for i, h in enumerate(HOSTS)}
    f = _write_qr(tmp_path / "export.json", _series(lb_id=dns.get, inst=lambda h: f"{pod_ip[h]}:8080"))
    with pytest.raises(InputError) as e:
        ingest([f], tmp_path / "ds")
    msg = str(e.value)
    assert "broker=<pulsar-broker-0" in msg and "instance=<10.244.0.5:8080" in msg and "--broker-map" in msg
    assert "6 brokers instead of 3" in msg
    assert main(["ingest", str(f), "--out", str(tmp_path / "ds")]) == 2
    assert "--broker-label" in capsys.readouterr().err
    mp = tmp_path / "brokers.yaml"
    mp.write_text("".join(f'"{dns[h]}": "{dns[h]}:8080"\n"{pod_ip[h]}:8080": "{dns[h]}:8080"\n' for h in HOSTS))
    assert main(["ingest", str(f), "--out", str(tmp_path / "ds"), "--broker-map", str(mp)]) == 0
    brokers, rate_ratio, cpu_ratio = _ratios(tmp_path / "ds")
    assert brokers == sorted(f"{dns[h]}:8080" for h in HOSTS) and rate_ratio == [4.0] and cpu_ratio == [4.0]
    # or one label for every series: the instance
    ingest([f], tmp_path / "ds2", broker_label="instance")
    assert len(_ratios(tmp_path / "ds2")[0]) == 3


def test_hprom003_cluster_filter_and_mixed_clusters(tmp_path):
    other = [(dict(lab, cluster="c2", instance=lab["instance"].replace("10.0.0", "10.9.9"),
                   **({"broker": lab["broker"].replace("10.0.0", "10.9.9")} if "broker" in lab else {})), pts)
             for lab, pts in _series(cluster="c2")]
    f = _write_qr(tmp_path / "export.json", _series() + other)
    with pytest.raises(InputError, match=r"mixes 2 clusters \(c1, c2\).*--cluster"):
        ingest([f], tmp_path / "ds")
    with pytest.raises(InputError, match="'c3' is not in the input; its clusters: c1, c2"):
        ingest([f], tmp_path / "ds", cluster="c3")
    ingest([f], tmp_path / "ds", cluster="c2")
    assert _ratios(tmp_path / "ds")[0] == ["10.9.9.1:8080", "10.9.9.2:8080", "10.9.9.3:8080"]


def test_hprom004_load_manager_counters_per_hour_reset_aware(tmp_path):
    s = _series(minutes=1)
    # modular leader: no broker label; a restart at 01:10 resets the counter to 1
    modular = [(T0, 5), (T0 + 1800, 7), (T0 + 3600 + 60, 9), (T0 + 3600 + 600, 1), (T0 + 3600 + 1200, 4)]
    s.append(({"__name__": "pulsar_lb_unload_broker_count", "cluster": "c1", "metric": "bundleUnloading",
               "job": "broker", "instance": "10.0.0.1:8080"}, modular))
    s.append(({"__name__": "pulsar_lb_unload_broker_breakdown_total", "cluster": "c1", "broker": "10.0.0.2",
               "metric": "bundleUnloading", "result": "Success", "reason": "Overloaded", "job": "broker",
               "instance": "10.0.0.2:8080"}, [(T0, 0), (T0 + 60, 2), (T0 + 3600, 3)]))
    # ServiceUnitStateChannelImpl#getMetrics: unload/transfer events the channel published
    s.append(({"__name__": "pulsar_sunit_state_chn_event_publish_ops_total", "cluster": "c1", "broker": "10.0.0.2",
               "metric": "sunitStateChn", "event": "Unload", "result": "Total", "job": "broker",
               "instance": "10.0.0.2:8080"}, [(T0, 10), (T0 + 120, 13)]))
    f = _write_qr(tmp_path / "export.json", s)
    m = ingest([f], tmp_path / "ds")
    assert m["report"]["counter_resets"] == 1 and m["report"]["actions"]["rows"] == 5
    a = actual_actions(tmp_path / "ds")
    got = {(r.hour.hour, r.counter, r.broker, r.result, r.reason): r.increase for r in a.itertuples()}
    assert got == {(0, "unload_broker", "10.0.0.1:8080", None, None): 2.0,
                   (1, "unload_broker", "10.0.0.1:8080", None, None): 2.0 + 1 + 3,
                   (0, "unload_broker_breakdown", "10.0.0.2:8080", "Success", "Overloaded"): 2.0,
                   (1, "unload_broker_breakdown", "10.0.0.2:8080", "Success", "Overloaded"): 1.0,
                   (0, "channel_event_publish", "10.0.0.2:8080", "Total", None): 3.0}
    assert a.loc[a["counter"] == "channel_event_publish", "event"].tolist() == ["Unload"]
    assert len(actual_actions(tmp_path / "ds", start="2026-01-05T01:00:00Z")) == 2
    assert "unload_broker" not in set(read_long(tmp_path / "ds")["metric"])  # not a metric


def _vm_lines(series):
    return "".join(json.dumps({"metric": lab, "values": [v for _, v in pts],
                               "timestamps": [t * 1000 for t, _ in pts]}) + "\n" for lab, pts in series)


def _promtool(series):
    out = []
    for lab, pts in series:
        ls = ", ".join(f'{k}="{v}"' for k, v in sorted(lab.items()))
        out += [f"{{{ls}}} {v} {t * 1000}" for t, v in pts]
    return "\n".join(out) + "\n"


def _scrapes(root, series):
    """What `curl -s http://<broker>/metrics > scrapes/<ip:port>/$(date +%s).prom` leaves."""
    by = {}
    for lab, pts in series:
        lab = dict(lab)
        inst, name = lab.pop("instance"), lab.pop("__name__")
        lab.pop("job")
        for t, v in pts:
            ls = ",".join(f'{k}="{v2}"' for k, v2 in lab.items())
            by.setdefault((inst, t), []).append((name, f"{name}{{{ls}}} {v}"))
    for (inst, t), lines in by.items():
        d = root / inst
        d.mkdir(parents=True, exist_ok=True)
        text = "".join(f"# TYPE {n} gauge\n{line}\n" for n, line in sorted(lines))
        (d / f"{t}.prom").write_text(text)
    return root


def test_hprom005_every_reader_gives_the_same_dataset_and_counts(tmp_path):
    s = _series()
    s[0] = (s[0][0], s[0][1] + [(T0 + 180, float("nan"))])  # Prometheus writes NaN: dropped, counted
    (tmp_path / "vm.jsonl").write_text(_vm_lines(s).replace("NaN", '"NaN"'))
    (tmp_path / "dump.txt").write_text(_promtool(s))
    _scrapes(tmp_path / "scrapes", s)
    ref = ingest([_write_qr(tmp_path / "qr.json", s)], tmp_path / "ds-qr")
    base = read_long(tmp_path / "ds-qr")
    for name, fmt in (("vm.jsonl", "vmexport"), ("dump.txt", "promtool"), ("scrapes", "exposition")):
        m = ingest([tmp_path / name], tmp_path / f"ds-{fmt}")
        assert m["report"]["inputs"][0]["format"] == fmt
        assert m["report"]["dropped_not_finite"] == ref["report"]["dropped_not_finite"] == 1
        assert m["rows"] == ref["rows"] == 18
        pd.testing.assert_frame_equal(read_long(tmp_path / f"ds-{fmt}"), base, check_categorical=False)
    bad = tmp_path / "bad.txt"
    bad.write_text('{__name__="pulsar_lb_cpu_usage"} 1\n')
    with pytest.raises(InputError, match="line 1"):
        ingest([bad], tmp_path / "ds-bad")


def test_hprom006_elm_counters_take_the_brokers_ids_and_never_make_a_broker(tmp_path):
    # only the scrape's instance on the rates; UnloadCounter#toMetrics puts broker=<advertised host> on the counter
    s = [x for x in _series(minutes=2) if x[0]["__name__"] == "pulsar_broker_rate_in"]
    s.append(({"__name__": "pulsar_lb_unload_bundle_total", "cluster": "c1", "broker": "10.0.0.2",
               "metric": "bundleUnloading", "job": "broker", "instance": "10.0.0.2:8080"}, [(T0, 4), (T0 + 60, 6)]))
    f = _write_qr(tmp_path / "export.json", s)
    ingest([f], tmp_path / "ds")
    assert sorted(read_long(tmp_path / "ds")["broker"].unique()) == ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]
    a = actual_actions(tmp_path / "ds")
    assert a[["counter", "broker", "increase"]].values.tolist() == [["unload_bundle", "10.0.0.2:8080", 2.0]]


def test_hprom007_a_long_csv_beside_an_export_lines_up_or_is_refused(tmp_path):
    # the long CSV names brokers in a column; the export's rates carry only instance=<ip:port>
    s = [x for x in _series(minutes=2) if x[0]["__name__"] == "pulsar_broker_rate_in"]
    f = _write_qr(tmp_path / "export.json", s)
    csv = tmp_path / "cpu.csv"
    csv.write_text("timestamp,broker,metric,value\n" + "".join(
        f"{T0 + 60 * i},{h},cpu,{CPU[h]}\n" for i in range(2) for h in HOSTS))
    ingest([f, csv], tmp_path / "ds")
    brokers, rate_ratio, cpu_ratio = _ratios(tmp_path / "ds")
    assert brokers == ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"] and cpu_ratio == [4.0]
    csv.write_text("timestamp,broker,metric,value\n" + "".join(
        f"{T0 + 60 * i},bk-{j},cpu,{CPU[h]}\n" for i in range(2) for j, h in enumerate(HOSTS)))
    with pytest.raises(InputError, match="broker column=<bk-0, bk-1, bk-2>.*--broker-map"):
        ingest([f, csv], tmp_path / "ds2")


def _paired_series():
    """``pulsar_lb_cpu_usage`` with ``broker=<advertised pod DNS name>`` and the scrape's
    ``instance=<pod IP:port>`` (the only broker series); the modular leader's
    ``pulsar_lb_unload_broker_count`` with the scrape's ``instance`` only (10.0.0.2's pod), and a
    ``pulsar_lb_bundles_split_count`` scraped from an address no broker series has."""
    dns = {h: f"pulsar-broker-{i}.pulsar-broker.pulsar.svc.cluster.local" for i, h in enumerate(HOSTS)}
    pod = {h: f"10.244.{i}.5:8080" for i, h in enumerate(HOSTS)}
    s = [x for x in _series(lb_id=dns.get, inst=pod.get, minutes=2) if x[0]["__name__"] == "pulsar_lb_cpu_usage"]
    s.append(({"__name__": "pulsar_lb_unload_broker_count", "cluster": "c1", "metric": "bundleUnloading",
               "job": "broker", "instance": pod["10.0.0.2"]}, [(T0, 1), (T0 + 60, 4)]))
    s.append(({"__name__": "pulsar_lb_bundles_split_count", "cluster": "c1", "metric": "bundlesSplit",
               "job": "broker", "instance": "10.9.9.9:8080"}, [(T0, 0), (T0 + 60, 2)]))
    return s, dns


def test_hprom008_counters_take_the_broker_their_instance_is_paired_with(tmp_path):
    s, dns = _paired_series()
    m = ingest([_write_qr(tmp_path / "export.json", s)], tmp_path / "ds")
    brokers = sorted(read_long(tmp_path / "ds")["broker"].unique())
    assert brokers == sorted(dns.values())
    a = actual_actions(tmp_path / "ds")
    got = {r.counter: (r.broker, r.increase) for r in a.itertuples()}
    # the leader's unloads are its broker's (the cpu series pairs instance 10.244.1.5:8080 with it); the
    # split counter from an address no series has is the cluster's: never a fourth broker
    assert got == {"unload_broker": (dns["10.0.0.2"], 3.0), "bundles_split": (None, 2.0)}
    assert set(a["broker"].dropna()) <= set(brokers)
    assert m["report"]["counter_ids_unmatched"] == ["10.9.9.9:8080"]
