"""The standalone-cluster test's jobs: ingest of Prometheus JSON, the aggregate job, a backtest and a small
sweep on whatever Spark session the process has, their frames written as Parquet (nested values as JSON
text) and the session's master and the ingest report as JSON. Run in-process (local mode) or as
``python -m tests.dashboard.standalone_jobs DATASET OUT INPUTS`` (pointed at a cluster through the
environment)."""
import json
import sys
from pathlib import Path


def run_all(ds, out: Path, inputs_dir) -> None:
    from dashboard.history.ingest_spark import ingest_spark
    from dashboard.history.jobs import run_job
    from dashboard.spark import get_spark

    out.mkdir()
    inputs = sorted(Path(inputs_dir).glob("*.json"))
    ingested = ingest_spark(inputs, out / "ingested", name="ingested")
    res = {
        "aggregate": run_job("aggregate", str(ds), {"top_n": 3}, engine="spark", use_cache=False),
        "backtest": run_job("backtest", str(ds), {"strategy": "AvgShedder",
                                                  "set": {"loadBalancerAvgShedderHitCountLowThreshold": "4"}},
                            engine="spark", use_cache=False),
        "sweep": run_job("sweep", str(ds), {"x_key": "loadBalancerAvgShedderLowThreshold", "x_values": [10, 20],
                                            "y_key": "loadBalancerAvgShedderHitCountLowThreshold",
                                            "y_values": [4]},
                         engine="spark", use_cache=False),
    }
    for job, frames in res.items():
        for name, frame in frames.items():
            if name.startswith("_") or not hasattr(frame, "to_parquet"):
                continue
            f = frame.copy()
            for c in f.columns:  # nested values (lists of timestamps, details) as JSON text
                if f[c].dtype == object and f[c].map(lambda x: isinstance(x, (list, dict, tuple))).any():
                    f[c] = f[c].map(lambda x: json.dumps(x, default=str))
            f.to_parquet(out / f"{job}-{name}.parquet")
    (out / "info.json").write_text(json.dumps({"master": get_spark().sparkContext.master,
                                               "ingest_report": ingested["report"], "rows": ingested["rows"]}))


if __name__ == "__main__":
    run_all(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
