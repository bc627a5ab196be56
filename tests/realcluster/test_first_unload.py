"""A real two-broker Pulsar 4.0 cluster (the released jars from Maven Central, `make realcluster-deps`):
broker-1 carries six bundles of skewed traffic, broker-2 joins empty, and the real leader sheds with
ThresholdShedder + LeastLongTermMessageRate. The engine, replaying the leader's cycles from the
recorded metadata-store snapshots, must unload the bundle the leader unloads, to the same broker; the
snapshots hold, for every broker, the report whose usage the leader printed at that cycle.

Takes about five minutes (two broker JVMs, ZooKeeper + a bookie, a few one-minute shedding cycles)."""
import shutil

import pytest

from realcluster.cluster import CLASSPATH_FILE
from realcluster.compare import compare_run
from realcluster.run import record

pytestmark = [pytest.mark.realcluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    if not CLASSPATH_FILE.exists():
        pytest.fail(f"{CLASSPATH_FILE} missing: `make test` resolves it (scripts/realcluster-deps.sh)")
    if shutil.which("java") is None:
        pytest.fail("java is missing: `make test` installs it (scripts/system-deps.sh)")
    base = tmp_path_factory.mktemp("realcluster")
    out = base / "run"
    record("first-unload", out, base / "work", cycles=6, until_unload=True, base_port=13000)
    return out


def test_leader_unloads_and_engine_predicts_bundle_and_destination(run_dir):
    res = compare_run(run_dir)
    led = [r for r in res["cycles"] if r["leader"]]
    assert led, "the real leader never unloaded within six cycles: " + str(res["cycles"])
    first = led[0]
    bundle, src, dest = first["leader"][0]
    assert src == "127.0.0.1:13081" and dest == "127.0.0.1:13082"
    # the recording is what the leader read: up to that cycle, each broker's report in each snapshot
    # prints the usage ThresholdShedder printed for it
    upto = res["cycles"][: res["cycles"].index(first) + 1]
    assert all(how in ("log", "log-other-version") for r in upto for how in r["inputs"].values()), upto
    assert any(r["inputs"] for r in upto), upto
    # the engine's cycle at the same snapshot: the same bundle, from the same broker, to the same broker
    assert first["engine"] == first["leader"], first
    # and no cycle before it where the engine would have shed while the leader did not
    before = res["cycles"][: res["cycles"].index(first)]
    assert all(not r["engine"] for r in before), before
