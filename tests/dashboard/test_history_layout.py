"""The wide broker-minute layout (dashboard.history.layout) and the Spark settings passthrough
(dashboard.spark): no Spark session needed."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.history.dataset import read_long, wide_brokers, write_long
from dashboard.history.layout import has_wide, read_wide, wide_table, write_wide

T0 = 1_767_571_200_000  # 2026-01-05T00:00Z


def _messy(tmp_path):
    """Two days; duplicates (the max wins), a broker without CPU some minutes, bundle rows beside."""
    rows = []
    for m in list(range(0, 90)) + list(range(1440, 1500)):
        ts = T0 + m * 60_000
        for j, b in enumerate(["b:8080", "a:8080", "c:8080"]):
            for k, metric in enumerate(["cpu", "memory", "bandwidth_in", "msg_rate_in", "msg_throughput_out"]):
                if b == "a:8080" and metric == "cpu" and m % 7 == 0:
                    continue
                rows.append((ts, b, metric, float(10 * j + k + m % 5), None))
            rows.append((ts, b, "bundle_msg_rate_in", 5.0, f"t/ns/0x{j:08x}_0xffffffff"))
    df = pd.DataFrame(rows, columns=["timestamp", "broker", "metric", "value", "bundle"])
    dup = df.iloc[::13].copy()
    dup["value"] += 100.0
    p = tmp_path / "messy"
    write_long(pd.concat([df, dup]), p, source="test")
    return p


def test_layout001_wide_equals_the_pivot_and_prunes_days(tmp_path):
    p = _messy(tmp_path)
    assert not has_wide(p)
    info = write_wide(p)
    assert has_wide(p) and info["rows"] == 150 * 3
    full = wide_brokers(read_long(p))
    pd.testing.assert_frame_equal(read_wide(p), full, check_dtype=False)
    assert full["cpu"].eq(0).any() and full["cpu"].max() >= 100  # the missing CPU is 0, duplicates the max
    day2 = read_wide(p, "2026-01-06", "2026-01-06T00:30")
    assert len(day2) == 31 * 3 and day2["timestamp"].min() == pd.Timestamp("2026-01-06")
    t = wide_table(read_long(p, "2026-01-05", "2026-01-05"))
    assert t.schema.names[:2] == ["timestamp", "broker"] and t.num_rows == 90 * 3
    ts = t.column("timestamp").to_numpy()
    assert np.all(ts[1:] >= ts[:-1])  # sorted by minute (then broker)


def test_layout002_a_changed_long_file_retires_the_wide_layout(tmp_path):
    p = _messy(tmp_path)
    write_wide(p)
    f = sorted(p.glob("day=*/*.parquet"))[0]
    f.write_bytes(f.read_bytes())  # a rewrite by another tool (new mtime)
    import os

    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10_000_000))
    assert not has_wide(p)  # the jobs fall back to the long layout


def test_layout003_spark_settings_passthrough(tmp_path, monkeypatch):
    from dashboard.spark import set_cli_conf, spark_settings, user_conf
    from engine.errors import UsageError

    f = tmp_path / "spark-defaults.conf"
    f.write_text("# comment\nspark.executor.memory 2g\nspark.sql.shuffle.partitions=6\n")
    monkeypatch.setenv("SHEDLAB_SPARK_DEFAULTS", str(f))
    monkeypatch.setenv("SHEDLAB_SPARK_CONF", "spark.sql.shuffle.partitions=7;spark.hadoop.fs.s3a.endpoint=http://s3:9000")
    try:
        set_cli_conf(["spark.sql.shuffle.partitions=9"])
        c = user_conf()
        assert c == {"spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "9",
                     "spark.hadoop.fs.s3a.endpoint": "http://s3:9000"}
        assert spark_settings()["conf"] == c
        with pytest.raises(UsageError, match="park.executor"):
            set_cli_conf(["park.executor.memory=2g"])
        monkeypatch.setenv("SHEDLAB_SPARK_CONF", "no-equals-sign")
        with pytest.raises(UsageError, match="SHEDLAB_SPARK_CONF"):
            user_conf()
    finally:
        set_cli_conf([])
