"""Ingest on Spark writes the dataset the pandas ingest writes: per input format, the same rows (row for
row), the same metadata and report (every count of dropped, de-duplicated and filled rows), the same
``actions`` table and the same wide layout; bad inputs are refused with the same message. One
``local[2]`` session for the module, small inputs."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dashboard.history.dataset import actual_actions, read_long, read_meta
from dashboard.history.ingest import ingest
from dashboard.history.layout import has_wide, read_wide
from engine.errors import InputError

pytestmark = pytest.mark.spark

T0 = 1767571200  # 2026-01-05T00:00:00Z
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]


def _both(tmp_path, inputs, **kw):
    """Ingest with pandas and with Spark; assert the two datasets are the same; return the Spark meta."""
    from dashboard.history.ingest_spark import ingest_spark

    a, b = tmp_path / "pd", tmp_path / "sp"
    ma = ingest(inputs, a, name="x", **kw)
    stages = []
    mb = ingest_spark(inputs, b, name="x", progress=lambda d, t, txt: stages.append(txt), **kw)
    assert [s for s in stages if s.startswith("stage")][:4] == [
        "stage 1/4: reading %d input(s) on Spark" % len(inputs), "stage 2/4: resolving clusters and broker ids",
        "stage 3/4: cleaning and writing the dataset (long and wide layouts)", "stage 4/4: writing the metadata"]
    for m in (ma, mb):
        m.pop("created")
        m["layouts"]["wide"].pop("fingerprint")
    assert json.dumps(mb) == json.dumps(ma)  # same keys in the same order (the report too), same values
    fa, fb = read_meta(a), read_meta(b)
    fa.pop("created"), fb.pop("created")
    assert fb["layouts"]["wide"]["rows"] == fa["layouts"]["wide"]["rows"]
    la, lb = read_long(a), read_long(b)
    key = ["timestamp", "broker", "bundle", "metric"]
    la = la.sort_values(key, na_position="first").reset_index(drop=True)
    lb = lb.sort_values(key, na_position="first").reset_index(drop=True)
    pd.testing.assert_frame_equal(lb, la, check_exact=True)
    assert has_wide(b)
    pd.testing.assert_frame_equal(read_wide(b), read_wide(a), check_exact=True)
    pd.testing.assert_frame_equal(actual_actions(b), actual_actions(a), check_exact=True)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "staging left behind"
    return mb


def _qr(series):
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": lab, "values": [[t, v] for t, v in pts]} for lab, pts in series]}}


def _prom_files(tmp_path, days=2, gap_at_midnight=True):
    """Two days of query_range JSON, one file per metric per day, Pulsar's label shapes, with bad values,
    duplicates within a minute, gaps (one across midnight) and an unload counter."""
    files = []
    rng = np.random.default_rng(5)
    for d in range(days):
        t0 = T0 + d * 86400
        for name in ("pulsar_lb_cpu_usage", "pulsar_broker_rate_in", "pulsar_lb_unload_broker_count"):
            series = []
            for i, h in enumerate(HOSTS):
                minutes = [m for m in range(0, 1440, 1)
                           if not (gap_at_midnight and i == 0 and (d == 0 and m >= 1438 or d == 1 and m < 2))
                           and not (i == 1 and 100 <= m < 140)]
                pts = [(t0 + 60 * m, repr(round(float(rng.uniform(0, 90)), 3))) for m in minutes]
                if name == "pulsar_lb_unload_broker_count":
                    pts = [(t0 + 60 * m, repr(float(m // 100 + d * 15))) for m in minutes]
                if d == 0 and i == 2 and name == "pulsar_lb_cpu_usage":
                    pts[5] = (pts[5][0], "NaN")
                    pts[6] = (pts[6][0], "abc")
                    pts[7] = (pts[7][0], "-3")
                    pts.append((t0 + 60 * 8 + 30, "12.5"))  # a second sample in minute 8: the latest wins
                    pts.append((t0 + 60 * 9 + 59.5, "+Inf"))
                labels = {"__name__": name, "cluster": "c1", "job": "broker", "instance": f"{h}:8080"}
                if name == "pulsar_lb_cpu_usage":
                    labels.update(broker=h, metric="loadBalancing")
                if name == "pulsar_lb_unload_broker_count":
                    labels.update(metric="bundleUnloading")
                series.append((labels, pts))
            f = tmp_path / f"{name}-{d}.json"
            f.write_text(json.dumps(_qr(series)))
            files.append(f)
    return files


def test_ingest_spark001_prometheus_json_equals_pandas(spark, tmp_path):
    files = _prom_files(tmp_path)
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, files)
    rep = meta["report"]
    assert rep["dropped_non_numeric"] == 1 and rep["dropped_not_finite"] == 2 and rep["dropped_negative"] == 1
    assert rep["duplicates_removed"] == 1 and rep["gaps_filled"] > 0 and rep["gaps_left"] > 0
    assert meta["report"]["actions"]["rows"] > 0
    assert sorted(meta["brokers"]) == [f"{h}:8080" for h in HOSTS]
    # the gap across midnight (2 minutes before, 2 after) is filled on both sides of the day boundary
    lb = read_long(out / "sp", bundles=False)
    b0 = lb[(lb["broker"] == "10.0.0.1:8080") & (lb["metric"] == "cpu")]
    assert len(b0) == 2 * 1440


def test_ingest_spark002_vmexport_and_promtool_equal_pandas(spark, tmp_path):
    lines = []
    for i, h in enumerate(HOSTS):
        ts = [(T0 + 60 * m) * 1000 for m in range(300) if not (i == 0 and 50 <= m < 53)]
        vals = [float(m % 37) if m % 50 else None for m in range(len(ts))]
        vals[3] = "7.5"  # a number as text
        for k in range(0, len(ts), 40):  # VictoriaMetrics splits a long series into several lines
            lines.append(json.dumps({"metric": {"__name__": "pulsar_broker_rate_out", "instance": f"{h}:8080",
                                                "cluster": "c1"}, "values": vals[k:k + 40],
                                     "timestamps": ts[k:k + 40]}))
    vm = tmp_path / "export.jsonl"
    vm.write_text("\n".join(lines) + "\n")
    dump = tmp_path / "dump.txt"
    dump.write_text("".join(f'{{__name__="pulsar_lb_memory_usage", broker="{h}", cluster="c1", '
                            f'instance="{h}:8080"}} {m * 0.5} {(T0 + 60 * m) * 1000}\n'
                            for h in HOSTS for m in range(200)))
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [vm, dump])
    assert [i["format"] for i in meta["report"]["inputs"]] == ["vmexport", "promtool"]
    assert meta["report"]["dropped_non_numeric"] > 0


def test_ingest_spark003_csv_and_parquet_equal_pandas(spark, tmp_path):
    rows = []
    for m in range(180):
        for h in HOSTS:
            rows.append((T0 + 60 * m, f"{h}:8080", "cpu", str(10 + m % 7), ""))
            rows.append((T0 + 60 * m, f"{h}:8080", "msg_rate_in", str(100.0 + m), ""))
            rows.append((T0 + 60 * m, f"{h}:8080", "pulsar_bundle_msg_rate_in", str(m * 0.25), "t/ns/0x0_0x8"))
    rows += [(T0, "10.0.0.1:8080", "cpu", "inf", ""), (T0, "", "cpu", "5", ""), ("yesterday", "10.0.0.2:8080", "cpu", "5", ""),
             (T0, "10.0.0.3:8080", "no_such_metric", "5", ""), (T0, "10.0.0.3:8080", "bundle_topics", "5", "")]
    df = pd.DataFrame(rows, columns=["timestamp", "broker", "metric", "value", "bundle"])
    csv = tmp_path / "long.csv"
    df.to_csv(csv, index=False)
    pq_df = df.iloc[: len(df) // 2].copy()
    pq_df["timestamp"] = pd.to_datetime(pd.to_numeric(pq_df["timestamp"], errors="coerce"), unit="s", utc=True)
    pq_df["value"] = pd.to_numeric(pq_df["value"], errors="coerce")
    pq_df.loc[pq_df.index[:4], "value"] = [np.nan, -1.0, np.inf, 2.0]
    parquet = tmp_path / "long.parquet"
    pq_df.to_parquet(parquet)
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [csv, parquet])  # object values (CSV) beside numbers (Parquet): NaN counts as not finite
    rep = meta["report"]
    assert rep["unknown_metrics"] == ["no_such_metric"] and rep["dropped_bundle_metric_without_bundle"] == 1
    assert meta["has_bundles"]
    out2 = tmp_path / "cmp2"
    out2.mkdir()
    meta2 = _both(out2, [parquet])  # numbers only: NaN counts as non-numeric, as pandas does
    assert meta2["report"]["dropped_non_numeric"] >= 1


def test_ingest_spark004_timeline_equals_pandas(spark, tmp_path):
    from engine.io import save_snapshot
    from engine.synth import make_snapshot

    d = tmp_path / "timeline"
    d.mkdir()
    for i in range(4):
        ld = make_snapshot({"b1:8080": dict(cpu=30 + i, bandwidth_in=12,
                                            bundles={"t/n/0x00000000_0x80000000": dict(rate=900, topics=4)}),
                            "b2:8080": dict(cpu=55, bundles={"t/n/0x80000000_0xffffffff": dict(rate=100)})},
                           now_ms=T0 * 1000 + i * 60_000 + (3 * 60_000 if i == 3 else 0))
        save_snapshot(ld, d / f"{i:03d}.json")
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [d])
    assert meta["report"]["inputs"][0]["format"] == "timeline" and meta["report"]["gaps_filled"] > 0


def test_ingest_spark005_errors_name_the_same_file_and_field(spark, tmp_path):
    from dashboard.history.ingest_spark import ingest_spark

    good = _prom_files(tmp_path, days=1)[0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"instance": "a:1"}, "values": [[T0, "1"]]}]}}))
    broken = tmp_path / "broken.json"
    broken.write_text('{"status": "success", "data": {')
    for inputs in ([good, bad, broken], [good, broken, bad], [tmp_path / "missing.json"]):
        with pytest.raises(InputError) as pa_:
            ingest(inputs, tmp_path / "o1")
        with pytest.raises(InputError) as sp_:
            ingest_spark(inputs, tmp_path / "o2")
        assert str(sp_.value) == str(pa_.value)
        assert (sp_.value.source, sp_.value.field) == (pa_.value.source, pa_.value.field)
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps(_qr([({"__name__": "pulsar_lb_cpu_usage", "cluster": c, "broker": "h"},
                                       [(T0, "1")]) for c in ("c1", "c2")])))
    for kw in ({}, {"cluster": "c3"}):
        with pytest.raises(InputError) as pa_:
            ingest([mixed], tmp_path / "o1", **kw)
        with pytest.raises(InputError) as sp_:
            ingest_spark([mixed], tmp_path / "o2", **kw)
        assert str(sp_.value) == str(pa_.value)
    (tmp_path / "o3").mkdir()
    (tmp_path / "o3" / "f").write_text("x")
    with pytest.raises(InputError, match="not empty"):
        ingest_spark([good], tmp_path / "o3")
    assert not (tmp_path / "o2").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_ingest_spark006_cluster_filter_and_no_usable_rows(spark, tmp_path):
    from dashboard.history.ingest_spark import ingest_spark

    f = tmp_path / "two.json"
    f.write_text(json.dumps(_qr(
        [({"__name__": "pulsar_lb_cpu_usage", "cluster": c, "broker": h, "instance": f"{h}:8080"},
          [(T0 + 60 * m, str(m)) for m in range(30)]) for c in ("c1", "c2") for h in HOSTS]
        + [({"__name__": "pulsar_lb_cpu_usage", "broker": "10.0.0.1", "instance": "10.0.0.1:8080"},
            [(T0 + 60 * m, str(m)) for m in range(30, 40)])])))
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [f], cluster="c2")
    assert meta["report"]["rows_other_clusters"] == 90 and meta["report"]["rows_without_cluster"] == 10
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(_qr([({"__name__": "pulsar_lb_cpu_usage", "broker": "h"}, [(T0, "NaN")])])))
    with pytest.raises(InputError) as pa_:
        ingest([nan], tmp_path / "o1")
    with pytest.raises(InputError) as sp_:
        ingest_spark([nan], tmp_path / "o2")
    assert str(sp_.value) == str(pa_.value) and "no usable rows" in str(sp_.value)


def test_ingest_spark007_engine_choice(tmp_path, monkeypatch):
    from dashboard.history.ingest_spark import choose_engine

    f = tmp_path / "a.json"
    f.write_bytes(b"x" * 2048)
    monkeypatch.delenv("SHEDLAB_INGEST_ENGINE", raising=False)
    assert choose_engine([f]) == "pandas"
    assert choose_engine([f], "spark") == "spark"
    monkeypatch.setenv("SHEDLAB_INGEST_ENGINE", "spark")
    assert choose_engine([f]) == "spark" and choose_engine([f], "pandas") == "pandas"
    monkeypatch.setenv("SHEDLAB_INGEST_ENGINE", "pandas")
    monkeypatch.setenv("SHEDLAB_INGEST_SPARK_MB", "0.001")
    assert choose_engine([f]) == "pandas"
    monkeypatch.setenv("SHEDLAB_INGEST_ENGINE", "auto")
    from dashboard.spark import java_available

    assert choose_engine([f]) == ("spark" if java_available()[0] else "pandas")
    monkeypatch.setenv("SHEDLAB_INGEST_ENGINE", "fast")
    with pytest.raises(InputError, match="SHEDLAB_INGEST_ENGINE"):
        choose_engine([f])


def test_ingest_spark008_fast_rules_give_the_general_rules_answers(monkeypatch):
    """The per-distinct-value label rules and the all-text value rule (what big inputs take) answer as
    the general element-by-element rules on awkward spellings."""
    from dashboard.history import ingest as I

    rng = np.random.default_rng(1)
    pool = ["1", "-2.5", " 3 ", "nan", "NaN", " -Inf", "+Infinity", "infinity", "abc", "", "1e999", "-1e999", "0x10",
            "1_000", "+5", ".5", "5.", "1e-400", "99999999999999999999999", "-0", "inf ", "Inf", "+inf", "NAN", "None"]
    n = 20000
    df = pd.DataFrame({"timestamp": 1.7e12 + 60_000 * (np.arange(n) % 50),
                       "broker": pd.Series(rng.choice(["b1", " b2 ", "", "nan", "None", None, "http://b3/"], n),
                                           dtype=object),
                       "metric": pd.Series(rng.choice(["cpu", " pulsar_lb_cpu_usage", "msg_rate_in", "topics", "x",
                                                       "bundle_topics"], n), dtype=object),
                       "value": pd.Series(rng.choice(pool, n), dtype=object),
                       "bundle": pd.Series(rng.choice(["t/n/0x0_0x1", " ", None, "nan", "None"], n), dtype=object)})
    fast_rep = {}
    fast = I.validate_rows(df, fast_rep)
    monkeypatch.setattr(I.pd.api.types, "infer_dtype", lambda *a, **k: "mixed")  # every rule element by element
    slow_rep = {}
    slow = I.validate_rows(df, slow_rep)
    assert fast_rep == slow_rep and fast_rep["dropped_not_finite"] > 0 and fast_rep["dropped_non_numeric"] > 0
    pd.testing.assert_frame_equal(fast, slow)


def test_ingest_spark009_command_line_engine_and_stage_lines(spark, tmp_path, capsys):
    from dashboard.history.cli import main

    files = [str(f) for f in _prom_files(tmp_path, days=1)]
    assert main(["ingest", *files, "--out", str(tmp_path / "sp"), "--engine", "spark", "--json"]) == 0
    err = capsys.readouterr().err
    assert [ln.split(":")[1].strip() for ln in err.splitlines() if ln.startswith("ingest: stage")][:4] == \
        ["stage 1/4", "stage 2/4", "stage 3/4", "stage 4/4"]
    assert main(["ingest", *files, "--out", str(tmp_path / "pd"), "--engine", "pandas", "--json"]) == 0
    assert "stage" not in capsys.readouterr().err  # the pandas path: no stage line (an error stays one line)
    key = ["timestamp", "broker", "bundle", "metric"]
    pd.testing.assert_frame_equal(read_long(tmp_path / "sp").sort_values(key).reset_index(drop=True),
                                  read_long(tmp_path / "pd").sort_values(key).reset_index(drop=True), check_exact=True)


@pytest.mark.parametrize("max_gap", [0, 2, 5])
def test_ingest_spark010_ties_and_gap_limits_equal_pandas(spark, tmp_path, max_gap):
    """Same timestamp in two files (the one read last wins), gaps of exactly max_gap and max_gap + 1
    minutes, one across midnight, and no filling at all with max_gap 0."""
    def qr(pts):
        return _qr([({"__name__": "pulsar_lb_cpu_usage", "broker": h, "instance": f"{h}:8080"}, pts)
                    for h in HOSTS[:2]])

    day1 = T0 + 86400
    a = [(T0 + 60 * m, str(m)) for m in range(0, 1440) if m not in (100, 101, 200, 201, 202, 1439)]
    a += [(day1 + 60 * m, str(m + 7)) for m in range(2, 30)]
    b = [(T0 + 60 * m, str(1000 + m)) for m in (5, 6, 7)] + [(T0 + 60 * 8 + 1, "3")]
    f1, f2 = tmp_path / "a.json", tmp_path / "b.json"
    f1.write_text(json.dumps(qr(a)))
    f2.write_text(json.dumps(qr(b)))
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [f1, f2], max_gap=max_gap)
    rep = meta["report"]
    assert rep["duplicates_removed"] == 2 * 4
    assert (rep["gaps_filled"] > 0) == (max_gap > 0)


def test_ingest_spark011_broker_groups_and_inputs_out_of_day_order_equal_pandas(spark, tmp_path):
    """The clean-and-write tasks take brokers in groups and read the staged inputs in day order: an input
    of the last day listed first, one spanning three days with gaps across both midnights, ties with a
    later input, an input whose timestamps are all refused, rows without a broker; more brokers than
    tasks, so every day is written by several tasks."""
    hosts = [f"10.0.1.{i}:8080" for i in range(9)]
    day = 86400

    def frame(rows):
        return pd.DataFrame(rows, columns=["timestamp", "broker", "metric", "value", "bundle"])

    late = frame([(T0 + 2 * day + 60 * m, h, "cpu", str(m % 11), "") for m in range(0, 300, 3) for h in hosts])
    span = []
    for i, h in enumerate(hosts):
        for m in range(0, 3 * 1440, 7 if i % 2 else 1):
            if i == 4 and (1437 <= m < 1441 or 2875 <= m < 2885):  # a short gap and a long one across midnight
                continue
            span.append((T0 + 60 * m, h, "msg_rate_in", str(m), ""))
            if m % 5 == 0:
                span.append((T0 + 60 * m, h, "pulsar_bundle_msg_rate_in", str(m / 4), f"t/ns/0x{i}_0x8"))
    span = frame(span)
    ties = frame([(T0 + 60 * m, h, "msg_rate_in", str(1000 + m), "") for m in range(1430, 1450)
                  for h in hosts[:4]] + [(T0 + 60, "", "cpu", "5", ""), (T0 + day, None, "cpu", "6", "")])
    refused = frame([("yesterday", hosts[0], "cpu", "1", ""), (-5, hosts[1], "cpu", "2", ""), ("", hosts[2], "cpu", "3", "")])
    files = []
    for name, df in (("late", late), ("span", span), ("ties", ties), ("refused", refused)):
        f = tmp_path / f"{name}.csv"
        df.to_csv(f, index=False)
        files.append(f)
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, files, max_gap=5)
    rep = meta["report"]
    assert rep["gaps_filled"] > 0 and rep["gaps_left"] > 0 and rep["duplicates_removed"] > 0
    assert rep["dropped_bad_timestamp"] == 3 and rep["dropped_no_broker"] == 2
    parts = [len(list(d.glob("part-*.parquet"))) for d in sorted((out / "sp").glob("day=*"))]
    assert len(parts) == 3 and min(parts) > 1, parts


def test_ingest_spark012_label_rule_per_combination_equals_validate_rows():
    """Spark's clean-and-write tasks apply the label rules once per distinct (broker, metric, bundle) and
    count its rows: on awkward spellings, the rows kept (metric, bundle, broker as rewritten), every
    count and the unknown names equal validate_rows' row by row."""
    from dashboard.history import ingest as I

    brokers = ["b1", " b2 ", "", "nan", "None", None, float("nan"), "http://b3/", 7]
    metrics = ["cpu", " pulsar_lb_cpu_usage", "msg_rate_in", "topics", "x", "bundle_topics", " pulsar_bundle_topics ",
               "pulsar_broker_rate_in", None, "memory "]
    bundles = ["t/n/0x0_0x1", " t/n/0x1_0x2 ", " ", "", None, "nan", "None", float("nan")]
    rows = [(b, m, u) for b in brokers for m in metrics for u in bundles]
    weight = [1 + i % 3 for i in range(len(rows))]
    rep_rows = [r for r, w in zip(rows, weight) for _ in range(w)]
    df = pd.DataFrame({"timestamp": 1.7e12, "broker": pd.Series([r[0] for r in rep_rows], dtype=object),
                       "metric": pd.Series([r[1] for r in rep_rows], dtype=object), "value": 1.0,
                       "bundle": pd.Series([r[2] for r in rep_rows], dtype=object)})
    rep = {}
    kept = I.validate_rows(df, rep)
    counts, unknown, want = {}, set(), []
    for (b, m, u), w in zip(rows, weight):
        drop, name, metric, bundle, broker = I.label_rule(m, u, b)
        if drop is None:
            want += [(metric, bundle, broker)] * w
        else:
            counts[drop] = counts.get(drop, 0) + w
            if drop == "dropped_unknown_metric":
                unknown.add(name)
    got = list(zip(kept["metric"], kept["bundle"], kept["broker"]))
    assert got == want and len(want) > 0
    for key in ("dropped_unknown_metric", "dropped_bundle_metric_without_bundle", "dropped_no_broker"):
        assert rep.get(key, 0) == counts.get(key, 0) and counts[key] > 0, key
    assert rep["unknown_metrics"] == sorted(unknown)[:50]


def test_ingest_spark013_counters_paired_by_instance_equal_pandas(spark, tmp_path):
    """A counter known only by the scrape's instance takes the broker a ``pulsar_lb_*`` series with both
    ``broker=`` and ``instance=`` pairs it with, on Spark as with pandas; one no series names stays the
    cluster's."""
    from tests.dashboard.test_history_prometheus import _paired_series

    s, dns = _paired_series()
    f = tmp_path / "export.json"
    f.write_text(json.dumps(_qr([(lab, [(t, repr(float(v))) for t, v in pts]) for lab, pts in s])))
    out = tmp_path / "cmp"
    out.mkdir()
    meta = _both(out, [f])
    assert meta["report"]["counter_ids_unmatched"] == ["10.9.9.9:8080"]
    a = actual_actions(out / "sp")
    assert {(r.counter, r.broker) for r in a.itertuples()} == {("unload_broker", dns["10.0.0.2"]),
                                                              ("bundles_split", None)}
