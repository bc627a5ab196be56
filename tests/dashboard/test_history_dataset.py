"""History datasets: the generator, ingestion of every input format, bad data, unreadable files."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dashboard.history.dataset import (BROKER_METRICS, META_FILE, SCHEMA, fingerprint, read_long, read_meta,
                                       wide_brokers, write_long)
from dashboard.history.generate import generate
from dashboard.history.ingest import ingest, normalise, read_input
from engine.errors import InputError
from engine.javacompat import percent_usage

T0 = 1_767_571_200  # 2026-01-05T00:00Z, seconds


def _prom(series, status="success"):
    return {"status": status, "data": {"resultType": "matrix", "result": series}}


# ------------------------------------------------------------------------------------ generator
def test_hist001_generator_is_deterministic_and_follows_the_schema(tmp_path):
    a = generate(tmp_path / "a", brokers=4, days=2, seed=11, bundles_per_broker=2)
    b = generate(tmp_path / "b", brokers=4, days=2, seed=11, bundles_per_broker=2)
    assert a["rows"] == b["rows"] and a["days"] == ["2026-01-05", "2026-01-06"]
    for day in a["days"]:
        ta = pq.read_table(tmp_path / "a" / f"day={day}" / "part-00000.parquet")
        tb = pq.read_table(tmp_path / "b" / f"day={day}" / "part-00000.parquet")
        assert ta.schema.equals(SCHEMA) and ta.equals(tb)
    df = read_long(tmp_path / "a")
    assert (df["timestamp"].dt.second == 0).all() and np.isfinite(df["value"]).all() and (df["value"] >= 0).all()
    assert not df.duplicated(["timestamp", "broker", "bundle", "metric"]).any()
    # broker rows: 4 brokers × 2880 minutes × 9 metrics minus the broker-loss incident (180 minutes)
    assert (df["bundle"].isna()).sum() == (4 * 2880 - 180) * 9
    loss = a["params"]["incident_list"][0]
    w = wide_brokers(df)
    gone = w[(w["broker"] == loss["broker"]) & (w["timestamp"] >= "2026-01-06 14:00") & (w["timestamp"] < "2026-01-06 17:00")]
    assert loss["kind"] == "broker loss" and gone.empty
    # percentages went through float32 like Pulsar's
    cpu = w["cpu"].to_numpy()
    assert (cpu.astype(np.float32).astype(np.float64) == cpu).all()
    # a different seed gives a different history
    c = generate(tmp_path / "c", brokers=4, days=2, seed=12, bundles_per_broker=2)
    assert not read_long(tmp_path / "c")["value"].equals(df["value"])
    assert c["rows"] == a["rows"]


def test_hist002_generator_rows_without_bundle_metrics_and_incidents(tmp_path):
    m = generate(tmp_path / "g", brokers=3, days=1, seed=1, bundle_metrics=False, incidents=False)
    assert m["rows"] == 3 * 1440 * 9 and not m["has_bundles"] and m["metrics"] == BROKER_METRICS


def test_hist003_read_meta_and_range(tmp_path):
    generate(tmp_path / "g", brokers=2, days=2, seed=1, bundles_per_broker=1)
    df = read_long(tmp_path / "g", "2026-01-06", "2026-01-06")
    assert df["timestamp"].min() == pd.Timestamp("2026-01-06") and df["timestamp"].max() == pd.Timestamp("2026-01-06 23:59")
    df = read_long(tmp_path / "g", "2026-01-05T10:00", "2026-01-05T10:04", bundles=False)
    assert df["timestamp"].nunique() == 5 and df["bundle"].isna().all()
    with pytest.raises(InputError, match="not a Shedlab history dataset"):
        read_meta(tmp_path)
    with pytest.raises(InputError, match="no such dataset"):
        read_meta(tmp_path / "nope")


def test_hist004_fingerprint_changes_with_the_data(tmp_path):
    generate(tmp_path / "g", brokers=2, days=1, seed=1, bundles_per_broker=1)
    f1 = fingerprint(tmp_path / "g")
    assert fingerprint(tmp_path / "g") == f1
    generate(tmp_path / "g", brokers=2, days=1, seed=2, bundles_per_broker=1, overwrite=True)
    assert fingerprint(tmp_path / "g") != f1


def test_hist005_writer_refuses_to_clobber_other_directories(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        generate(tmp_path / "x", brokers=1, days=1)
    with pytest.raises(InputError, match="not a Shedlab history dataset"):
        generate(tmp_path / "x", brokers=1, days=1, overwrite=True)
    assert (tmp_path / "x" / "keep.txt").exists()


# ------------------------------------------------------------------------------------ ingestion formats
def test_hist010_ingest_prometheus_query_range(tmp_path):
    series = [
        {"metric": {"__name__": "pulsar_lb_cpu_usage", "broker": "b1:8080", "metric": "loadBalancing"},
         "values": [[T0, "10.5"], [T0 + 60, "11"]]},
        {"metric": {"__name__": "pulsar_lb_directMemory_usage", "broker": "b1:8080"}, "values": [[T0, "3"]]},
        {"metric": {"__name__": "pulsar_broker_rate_in", "broker": "b2:8080"}, "values": [[T0, "100"]]},
        {"metric": {"__name__": "pulsar_bundle_msg_rate_in", "broker": "b1:8080", "namespace": "t/n",
                    "bundle": "0x00000000_0xffffffff"}, "values": [[T0, "7"]]},
    ]
    f = tmp_path / "prom.json"
    f.write_text(json.dumps([_prom(series[:2]), _prom(series[2:])]))  # a list of responses
    m = ingest([f], tmp_path / "ds")
    df = read_long(tmp_path / "ds")
    got = {(r.broker, r.metric, r.bundle): r.value for r in df[df["timestamp"] == pd.Timestamp(T0, unit="s")].itertuples()}
    assert got == {("b1:8080", "cpu", None): 10.5, ("b1:8080", "direct_memory", None): 3.0,
                   ("b2:8080", "msg_rate_in", None): 100.0,
                   ("b1:8080", "bundle_msg_rate_in", "t/n/0x00000000_0xffffffff"): 7.0}
    assert m["has_bundles"] and m["report"]["inputs"][0]["format"] == "prometheus"


def test_hist011_prometheus_without_name_uses_the_file_name_or_metric(tmp_path):
    resp = _prom([{"metric": {"broker": "b1:8080"}, "values": [[T0, "5"]]}])
    f = tmp_path / "pulsar_broker_throughput_out.json"
    f.write_text(json.dumps(resp))
    raw, fmt = read_input(f)
    assert fmt == "prometheus" and raw["metric"].tolist() == ["pulsar_broker_throughput_out"]
    g = tmp_path / "export.json"
    g.write_text(json.dumps(resp))
    with pytest.raises(InputError, match="__name__"):
        read_input(g)
    raw, _ = read_input(g, metric="pulsar_lb_cpu_usage")
    assert raw["metric"].tolist() == ["pulsar_lb_cpu_usage"]
    v = tmp_path / "vector.json"  # an instant query is read too
    v.write_text(json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "pulsar_lb_cpu_usage", "broker": "b1:8080"}, "value": [T0, "4"]}]}}))
    assert read_input(v)[0]["value"].tolist() == ["4"]


def test_hist012_ingest_long_csv_and_parquet(tmp_path):
    rows = pd.DataFrame({"timestamp": ["2026-01-05T00:00:00Z", str(T0 + 60), str((T0 + 120) * 1000)],
                         "broker": ["b1:8080"] * 3, "metric": ["cpu", "pulsar_lb_cpu_usage", "msg_rate_in"],
                         "value": ["1.5", "2.5", "30"]})
    rows.to_csv(tmp_path / "l.csv", index=False)
    ingest([tmp_path / "l.csv"], tmp_path / "csv")
    got = read_long(tmp_path / "csv")
    assert got["timestamp"].tolist() == [pd.Timestamp(T0, unit="s") + pd.Timedelta(minutes=i) for i in range(3)]
    assert got["metric"].tolist() == ["cpu", "cpu", "msg_rate_in"] and got["value"].tolist() == [1.5, 2.5, 30.0]
    pq_rows = pd.DataFrame({"timestamp": pd.to_datetime([T0, T0], unit="s", utc=True), "broker": ["b1:8080"] * 2,
                            "metric": ["msg_rate_in", "topics"], "value": [5.0, 3.0],
                            "bundle": ["t/n/0x00000000_0xffffffff"] * 2})
    pq_rows.to_parquet(tmp_path / "l.parquet")
    m = ingest([tmp_path / "l.parquet"], tmp_path / "pq")
    got = read_long(tmp_path / "pq")
    assert sorted(got["metric"]) == ["bundle_msg_rate_in", "bundle_topics"]  # plain names on bundle rows
    assert m["report"]["inputs"][0]["format"] == "parquet"


def test_hist013_ingest_loaddata_timeline_with_float32_percentages(tmp_path):
    from engine.io import save_snapshot
    from engine.synth import make_snapshot

    d = tmp_path / "timeline"
    d.mkdir()
    for i in range(3):
        ld = make_snapshot({"b1:8080": dict(cpu=30 + i, bandwidth_in=12, bundles={"t/n/0x00000000_0x80000000": dict(rate=900, topics=4)}),
                            "b2:8080": dict(cpu=55, bundles={"t/n/0x80000000_0xffffffff": dict(rate=100)})},
                           now_ms=T0 * 1000 + i * 60_000)
        save_snapshot(ld, d / f"{i:03d}.json")
    m = ingest([d], tmp_path / "ds")
    df = read_long(tmp_path / "ds")
    w = wide_brokers(df)
    first = w[(w["broker"] == "b1:8080")].iloc[0]
    assert first["cpu"] == percent_usage(30 * 800 / 100, 800)  # Pulsar's float32 rule
    assert m["has_bundles"] and set(df["metric"]) >= {"bundle_topics", "msg_rate_in", "bandwidth_in"}
    assert w["timestamp"].nunique() == 3


# ------------------------------------------------------------------------------------ bad data
def _raw(rows):
    return pd.DataFrame(rows, columns=["timestamp", "broker", "metric", "value", "bundle"])


def test_hist020_bad_values_are_dropped_and_counted():
    ms = T0 * 1000
    rep = {}
    out = normalise(_raw([
        (ms, "b1", "cpu", "abc", None), (ms, "b1", "memory", "", None), (ms, "b1", "bandwidth_in", "NaN", None),
        (ms, "b1", "bandwidth_out", "+Inf", None), (ms, "b1", "msg_rate_in", "-3", None),
        (ms, "b1", "msg_rate_out", "12", None), (ms, None, "cpu", "1", None), (ms, "b1", "weird", "1", None),
        (float("nan"), "b1", "cpu", "1", None), (ms, "b1", "bundle_topics", "3", None),
    ]), report=rep)
    assert out[["metric", "value"]].values.tolist() == [["msg_rate_out", 12.0]]
    assert rep["dropped_non_numeric"] == 2 and rep["dropped_not_finite"] == 2 and rep["dropped_negative"] == 1
    assert rep["dropped_no_broker"] == 1 and rep["dropped_unknown_metric"] == 1 and rep["unknown_metrics"] == ["weird"]
    assert rep["dropped_bad_timestamp"] == 1 and rep["dropped_bundle_metric_without_bundle"] == 1


def test_hist021_duplicates_latest_sample_of_a_minute_wins():
    ms = T0 * 1000
    rep = {}
    out = normalise(_raw([(ms + 30_000, "b1", "cpu", 5, None), (ms + 10_000, "b1", "cpu", 4, None),
                          (ms + 30_000, "b1", "cpu", 6, None), (ms, "b1", "cpu", 1, None)]), report=rep)
    assert out["value"].tolist() == [6.0] and out["timestamp"].tolist() == [ms] and rep["duplicates_removed"] == 3


def test_hist022_short_gaps_filled_long_gaps_kept():
    ms = T0 * 1000
    rows = [(ms + m * 60_000, "b1", "cpu", float(m), None) for m in (0, 1, 4, 11)]
    rep = {}
    out = normalise(_raw(rows), max_gap=5, report=rep)
    assert out.sort_values("timestamp")["value"].tolist() == [0, 1, 1, 1, 4, 11]  # 2 minutes carried, 6 left
    assert rep["gaps_filled"] == 2 and rep["gaps_left"] == 1
    assert len(normalise(_raw(rows), max_gap=0)) == 4


def test_hist023_brokers_appearing_and_disappearing_stay_absent(tmp_path):
    ms = T0 * 1000
    rows = [(ms + m * 60_000, "a", "cpu", 10.0, None) for m in range(30)]
    rows += [(ms + m * 60_000, "late", "cpu", 20.0, None) for m in range(10, 30)]
    rows += [(ms + m * 60_000, "early", "cpu", 30.0, None) for m in range(0, 12)]
    ingest_df = _raw(rows)
    f = tmp_path / "x.csv"
    ingest_df.to_csv(f, index=False)
    ingest([f], tmp_path / "ds")
    w = wide_brokers(read_long(tmp_path / "ds"))
    per_minute = w.groupby("timestamp")["broker"].apply(sorted)
    assert per_minute.iloc[0] == ["a", "early"] and per_minute.iloc[11] == ["a", "early", "late"]
    assert per_minute.iloc[29] == ["a", "late"]
    # a present broker missing a metric: 0 (Pulsar's default ResourceUsage)
    assert (w["bandwidth_in"] == 0).all()


def test_hist024_nothing_usable_is_a_clear_error(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("timestamp,broker,metric,value\n1767571200,b1,cpu,abc\n")
    with pytest.raises(InputError, match="no usable rows"):
        ingest([f], tmp_path / "ds")


@pytest.mark.parametrize("name,content,message", [
    ("junk.parquet", b"PAR1 this is not parquet", "cannot read as Parquet"),
    ("broken.json", b'{"status": "success", "data": ', "not valid JSON"),
    ("error.json", json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode(),
     "Prometheus returned an error: bad_data parse error"),
    ("noresult.json", json.dumps({"status": "success", "data": {"resultType": "matrix"}}).encode(), "data.result"),
    ("cols.csv", b"time,host,value\n1,2,3\n", "missing column(s) timestamp, broker, metric"),
    ("empty.csv", b"", "cannot read as CSV"),
    ("binary.bin", bytes(range(256)) * 8, "cannot read as CSV"),
    ("other.json", b'{"hello": 1}', 'missing "brokers"'),
])
def test_hist025_unreadable_files_get_one_clear_message(tmp_path, name, content, message):
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(InputError) as exc:
        ingest([f], tmp_path / "ds")
    assert message in str(exc.value) and name in str(exc.value)


def test_hist026_missing_input_and_cli_exit_status(tmp_path, capsys):
    from dashboard.history.cli import main

    with pytest.raises(InputError, match="no such file"):
        ingest([tmp_path / "missing.json"], tmp_path / "ds")
    assert main(["ingest", str(tmp_path / "missing.json"), "--out", str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err  # the ingest's stage lines, then the one-line error
    assert err.splitlines()[-1].startswith("error: ") and "no such file" in err and "Traceback" not in err
    assert main(["generate", "--out", str(tmp_path / "g"), "--brokers", "2", "--days", "1"]) == 0
    assert (tmp_path / "g" / META_FILE).exists()
    assert main(["aggregate", str(tmp_path / "nope"), "--engine", "pandas"]) == 2


@pytest.mark.parametrize("cmd", [["generate", "--brokers", "2", "--days", "1"], ["ingest", "IN"]])
def test_hist026b_an_out_that_cannot_be_a_directory_is_exit_2_naming_the_option(tmp_path, capsys, cmd):
    from dashboard.history.cli import main

    src = tmp_path / "in.json"
    src.write_text("{}")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cmd = [str(src) if c == "IN" else c for c in cmd]
    for out, why in (("/proc/x", "cannot create the directory: No such file or directory"),
                     (str(a_file), "cannot create the directory"), (str(a_file / "sub"), "cannot create the directory")):
        assert main(cmd + ["--out", out]) == 2, out
        err = capsys.readouterr().err
        assert err.strip() == f"error: --out {out}: {why}" or (err.startswith(f"error: --out {out}: {why}")
                                                               and err.count("\n") == 1), err
        assert "Traceback" not in err and "FileNotFoundError" not in err and "Errno" not in err
    assert a_file.read_text() == "x"


def test_hist027_write_long_round_trip(tmp_path):
    ms = T0 * 1000
    df = pd.DataFrame({"timestamp": [ms, ms + 86_400_000], "broker": ["b", "b"], "metric": ["cpu", "cpu"],
                       "value": [1.0, 2.0], "bundle": [None, None]})
    m = write_long(df, tmp_path / "ds", source="test")
    assert m["days"] == ["2026-01-05", "2026-01-06"] and m["rows"] == 2
    assert read_long(tmp_path / "ds")["value"].tolist() == [1.0, 2.0]


def test_hist028_simulator_driven_history(tmp_path):
    from dashboard.history.cli import main
    from dashboard.history.generate import from_simulation, simulator_available

    if not simulator_available():
        pytest.skip("engine.simulator has no run_scenario")
    m = from_simulation(tmp_path / "sim", "bigo-homogeneous-start", minutes=20, seed=1)
    w = wide_brokers(read_long(tmp_path / "sim"))
    assert m["source"] == "simulator" and w["timestamp"].nunique() == 20 and len(m["brokers"]) >= 2
    assert (w["msg_rate_in"] == w["msg_rate_out"]).all()
    assert main(["generate", "--out", str(tmp_path / "sim2"), "--simulator", "bigo-homogeneous-start",
                 "--minutes", "5"]) == 0
