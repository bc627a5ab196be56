"""The recorder's snapshot of a leader cycle is the metadata store as the leader had it at the cycle:
node versions placed by their modification time against the cycle's log line, and, where
ThresholdShedder printed the usage it read for a broker, the version of that broker's report that
prints the same. Built from a recorded LocalBrokerData report and the leader's own log lines."""
import json
from pathlib import Path

from realcluster.cluster import Cluster
from realcluster.record import Recorder, nodes_at, parse_usage, report_usage

ROOT = Path(__file__).resolve().parents[2]
REPORT = next((ROOT / "samples" / "realcluster" / "threshold" / "timeline").glob("001-*/loadbalance/brokers/*"))
A, B = "127.0.0.1:13081", "127.0.0.1:13082"
T = 1796294128440  # the cycle's first line


def report(cpu_usage: float) -> bytes:
    rep = json.loads(REPORT.read_bytes())
    rep["cpu"] = {"usage": cpu_usage, "limit": 25.0}
    return json.dumps(rep).encode()


def node(data: bytes, mtime: int, ctime: int = T - 600_000) -> tuple:
    return (data, mtime, ctime)


OLD, NEW = report(10.0), report(20.0)  # cpu 40 % then 80 %


def test_a_report_written_between_the_last_dump_and_the_cycle_is_in_the_snapshot():
    dumps = [(T - 800, {f"loadbalance/brokers/{A}": node(OLD, T - 30_000)}),
             (T + 700, {f"loadbalance/brokers/{A}": node(NEW, T - 300)})]
    files, inputs = nodes_at(dumps, T)
    assert files == {f"loadbalance/brokers/{A}": NEW} and inputs == {}


def test_a_report_written_after_the_cycle_and_a_node_created_after_it_are_not():
    dumps = [(T - 800, {f"loadbalance/brokers/{A}": node(OLD, T - 30_000)}),
             (T + 700, {f"loadbalance/brokers/{A}": node(NEW, T + 100),
                        f"loadbalance/brokers/{B}": node(OLD, T + 200, ctime=T + 200)})]
    files, _ = nodes_at(dumps, T)
    assert files == {f"loadbalance/brokers/{A}": OLD}
    # no dump before the cycle: no snapshot at all
    assert nodes_at(dumps[1:], T) == (None, {})


def test_the_usage_the_leader_printed_picks_the_version_it_read():
    dumps = [(T - 800, {f"loadbalance/brokers/{A}": node(OLD, T - 30_000)}),
             (T + 700, {f"loadbalance/brokers/{A}": node(NEW, T - 40)})]  # its notification still in flight
    printed_old = {A: {k: round(v, 2) for k, v in report_usage(OLD).items()}}
    files, inputs = nodes_at(dumps, T, printed_old)
    assert files[f"loadbalance/brokers/{A}"] == OLD and inputs == {A: "log-other-version"}
    printed_new = {A: {k: round(v, 2) for k, v in report_usage(NEW).items()}}
    files, inputs = nodes_at(dumps, T, printed_new)
    assert files[f"loadbalance/brokers/{A}"] == NEW and inputs == {A: "log"}
    files, inputs = nodes_at(dumps, T, {A: dict(printed_new[A], cpu=55.0)})
    assert files[f"loadbalance/brokers/{A}"] == NEW and inputs == {A: "no-match"}


def test_a_cycle_of_the_leaders_log_becomes_a_snapshot_once_a_later_dump_exists(tmp_path):
    usage_a = "cpu: 80.00%, memory: 24.41%, directMemory: 7.81%, bandwidthIn: 0.00%, bandwidthOut: 0.00%"
    usage_b = "cpu: 40.00%, memory: 24.41%, directMemory: 7.81%, bandwidthIn: 0.00%, bandwidthOut: 0.00%"
    th = "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"
    mlm = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
    log = tmp_path / "broker-1.log"
    log.write_text(
        f"{T} [pulsar-load-manager-1-1] INFO  {th} - Attempting to shed load on {A}, which has max resource "
        f"usage above avgUsage and threshold 80.0% > 60.0% + 5.0% -- Offloading at least 0.55 MByte/s of "
        f"traffic, left throughput 0.82 MByte/s ({usage_a})\n"
        f"{T + 4} [pulsar-load-manager-1-1] DEBUG {th} - [{B}] broker is not overloaded, ignoring at this "
        f"point ({usage_b})\n"
        f"{T + 14} [pulsar-load-manager-1-1] INFO  {mlm} - [ThresholdShedder] Unloading bundle: "
        f"shedlab/skew/0x20000000_0x40000000 from broker {A} to dest broker {B}\n")
    rec = Recorder(Cluster(tmp_path / "work"), tmp_path / "run", log)
    rec.out.mkdir()
    rec.dumps.append((T - 800, {f"loadbalance/brokers/{A}": node(OLD, T - 30_000),
                                f"loadbalance/brokers/{B}": node(OLD, T - 30_000)}))
    rec._read_log()
    rec._settle()
    cyc = rec.cycles[0]
    assert cyc["leader_usage"] == {A: parse_usage(usage_a), B: parse_usage(usage_b)}
    assert rec.actions[0]["bundle"] == "shedlab/skew/0x20000000_0x40000000" and rec.actions[0]["destination"] == B
    assert cyc["snapshot"] is None and rec.settled() == 0  # no dump after the cycle yet: a run waits on
    rec.dumps.append((T + 1600, {f"loadbalance/brokers/{A}": node(NEW, T - 200),
                                 f"loadbalance/brokers/{B}": node(OLD, T - 30_000)}))
    rec._settle()
    assert cyc["snapshot"] == f"001-{T}" and cyc["inputs"] == {A: "log", B: "log"} and rec.settled() == 1
    brokers = tmp_path / "run" / "timeline" / cyc["snapshot"] / "loadbalance" / "brokers"
    assert (brokers / A).read_bytes() == NEW and (brokers / B).read_bytes() == OLD


def test_the_elm_snapshot_holds_the_values_published_by_the_cycle():
    """The Extensible Load Manager's load data and bundle states are topic messages: a cycle's snapshot
    holds, per key, the newest value published at or before the cycle's line — a broker's load data
    published 40 ms before the cycle is in it, one published 30 ms after is not — and a bundle
    released after the cycle is still owned in it."""
    from realcluster.elm import BROKER_LOAD, CHANNEL, TOP_BUNDLES, ElmRecorder, values_at

    shipped = json.loads(next((ROOT / "samples" / "realcluster" / "transfer" / "timeline").glob("004-*.json"))
                         .read_text())
    b1 = sorted(shipped["brokerLoadData"])[0]
    before, after = dict(shipped["brokerLoadData"][b1]), dict(shipped["brokerLoadData"][b1])
    before["cpu"] = {"usage": 0.0, "limit": 25.0}
    after["cpu"] = {"usage": 24.0, "limit": 25.0}
    bundle = "shedlab/skew/0x00000000_0x20000000"
    owned = {"state": "Owned", "dstBroker": b1, "versionId": 1}
    released = {"state": "Releasing", "sourceBroker": b1, "dstBroker": B, "versionId": 2}
    rec = ElmRecorder(Cluster(Path("/nonexistent")), Path("/nonexistent/run"), Path("/nonexistent/log"),
                      "pulsar://127.0.0.1:1")
    rec.tables[BROKER_LOAD][b1] = [(T - 60_000, before), (T - 40, shipped["brokerLoadData"][b1]), (T + 30, after)]
    rec.tables[TOP_BUNDLES][b1] = [(T - 5_000, shipped["topBundlesLoadData"][b1])]
    rec.tables[CHANNEL][bundle] = [(T - 90_000, owned), (T + 200, released)]
    rec.tables[CHANNEL]["shedlab/light/0x00000000_0xffffffff"] = [(T + 100, owned)]  # assigned after the cycle
    rec.dumps.append((T - 700, {"brokerLookupData": shipped["brokerLookupData"]}))
    files = rec._snapshot_files({"time": T})
    assert files["brokerLoadData"] == {b1: shipped["brokerLoadData"][b1]}
    assert files["topBundlesLoadData"] == {b1: shipped["topBundlesLoadData"][b1]}
    assert files["bundleOwnership"] == {bundle: b1}
    assert files["brokerLookupData"] == shipped["brokerLookupData"]
    # a deletion (an empty message) published by the cycle removes the key
    assert values_at({"k": [(T - 9, {"a": 1}), (T - 1, None)]}, T) == {}
    # no registry copy before the cycle: no snapshot
    rec.dumps.clear()
    assert rec._snapshot_files({"time": T}) is None
