"""The scale-out path for real: a standalone Spark master and one worker from the pyspark distribution
on 127.0.0.1; the jobs pointed at it through ``LB_SPARK_MASTER`` — ingest of Prometheus JSON, the
aggregate job, a backtest and a small sweep — give the same results as local mode (and the ingest the
same dataset as the pandas ingest). Both daemons are always stopped. Results travel between the
processes as Parquet and JSON files."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from tests.dashboard.standalone_jobs import run_all

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _prometheus_inputs(ds, out):
    """The generated dataset's broker metrics as query_range JSON, one file per metric (Pulsar's labels:
    ``broker`` = host on the load-report percentages, the scrape's ``instance`` = host:port on all)."""
    from dashboard.history.dataset import BROKER_METRICS, read_long

    names = {"cpu": "pulsar_lb_cpu_usage", "memory": "pulsar_lb_memory_usage",
             "direct_memory": "pulsar_lb_directMemory_usage", "bandwidth_in": "pulsar_lb_bandwidth_in_usage",
             "bandwidth_out": "pulsar_lb_bandwidth_out_usage", "msg_rate_in": "pulsar_broker_rate_in",
             "msg_rate_out": "pulsar_broker_rate_out", "msg_throughput_in": "pulsar_broker_throughput_in",
             "msg_throughput_out": "pulsar_broker_throughput_out"}
    long = read_long(ds, bundles=False)
    out.mkdir()
    for m in BROKER_METRICS:
        rows = long[long["metric"] == m]
        result = []
        for b, g in rows.groupby("broker"):
            lab = {"__name__": names[m], "cluster": "c1", "instance": b, "job": "broker"}
            if "usage" in names[m]:
                lab.update(broker=b.rsplit(":", 1)[0], metric="loadBalancing")
            ts = g["timestamp"].to_numpy().astype("datetime64[s]").astype("int64").tolist()
            result.append({"metric": lab, "values": [[t, repr(float(v))] for t, v in zip(ts, g["value"])]})
        (out / f"{names[m]}.json").write_text(json.dumps({"status": "success", "data": {
            "resultType": "matrix", "result": result}}))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _port_open(port) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive_workers(ui_port) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _stop(proc):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # the daemon's own process group (started with a new session)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def _run_jobs(ds, out, inputs, env=None):
    """The jobs in a process of their own pointed at ``env``'s Spark, or (no ``env``) in this process on the
    session the dashboard tests share; their results read back."""
    if env is None:
        run_all(ds, out, inputs)
    else:
        p = subprocess.run([sys.executable, "-m", "tests.dashboard.standalone_jobs", str(ds), str(out), str(inputs)],
                           cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
    res = {"info": json.loads((out / "info.json").read_text()), "ingested": out / "ingested"}
    for f in out.glob("*.parquet"):
        job, name = f.stem.split("-", 1)
        res.setdefault(job, {})[name] = pd.read_parquet(f)
    return res


def test_standalone001_cluster_gives_the_same_results_as_local(tmp_path, spark):
    from dashboard.history.generate import generate
    from dashboard.spark import java_available, spark_home

    ok, why = java_available()
    if not ok:
        pytest.skip(f"Spark needs Java: {why}")
    home = spark_home()
    spark_class = home / "bin" / "spark-class"
    assert spark_class.exists(), spark_class
    ds = tmp_path / "ds"
    generate(ds, brokers=4, days=1, seed=9, bundles_per_broker=2)
    inputs = _prometheus_inputs(ds, tmp_path / "prometheus")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("LB_SPARK", "SPARK_"))}
    base_env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SHEDLAB_CACHE_DIR=str(tmp_path / "cache"),
                    PYTHONPATH=str(ROOT), SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"))
    port, ui, wui = _free_port(), _free_port(), _free_port()
    master = worker = None
    logs = []
    try:
        mlog = open(tmp_path / "master.log", "w")
        logs.append(mlog)
        master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(port), "--webui-port", str(ui)], env=base_env, stdout=mlog,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: _port_open(port) and _port_open(ui), 90, "the Spark master")
        wlog = open(tmp_path / "worker.log", "w")
        logs.append(wlog)
        worker = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker",
                                   f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                                   "--webui-port", str(wui), "--work-dir", str(tmp_path / "work")],
                                  env=base_env, stdout=wlog, stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: _alive_workers(ui) >= 1, 90, "the worker to register")

        cluster_env = dict(base_env, LB_SPARK_MASTER=f"spark://127.0.0.1:{port}", LB_SPARK_EXECUTOR_MEMORY="512m",
                           LB_SPARK_DRIVER_MEMORY="1g", LB_SPARK_CORES_MAX="1")
        on_cluster = _run_jobs(ds, tmp_path / "cluster", inputs, cluster_env)
        assert on_cluster["info"]["master"] == f"spark://127.0.0.1:{port}"
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as r:
            assert json.load(r).get("completedapps"), "the jobs did not run on the standalone cluster"
    finally:
        _stop(worker)
        _stop(master)
        for f in logs:
            f.close()
    assert master.poll() is not None and worker.poll() is not None

    local = _run_jobs(ds, tmp_path / "local", inputs)  # local mode: the session of this test process
    assert local["info"]["master"] == "local[2]"
    for job, frames in (("aggregate", ("minute", "hour", "day", "brokers", "top")),
                        ("backtest", ("events", "per_day")), ("sweep", ("cells",))):
        for name in frames:
            a, b = on_cluster[job][name], local[job][name]
            pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False,
                                          rtol=1e-12)
    assert len(local["backtest"]["events"]) > 0
    # ingest on the cluster: the pandas ingest's dataset and report, row for row
    from dashboard.history.dataset import read_long
    from dashboard.history.ingest import ingest

    ref = ingest(sorted(inputs.glob("*.json")), tmp_path / "ingested-pandas", name="ingested")
    assert on_cluster["info"]["ingest_report"] == json.loads(json.dumps(ref["report"]))
    assert on_cluster["info"]["rows"] == ref["rows"] > 0
    key = ["timestamp", "broker", "bundle", "metric"]
    want = read_long(tmp_path / "ingested-pandas").sort_values(key).reset_index(drop=True)
    for got in (on_cluster["ingested"], local["ingested"]):
        pd.testing.assert_frame_equal(read_long(got).sort_values(key).reset_index(drop=True), want, check_exact=True)
