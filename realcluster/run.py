"""Drive one recorded run: ``python -m realcluster SCENARIO --out DIR [--cycles N]``.

1. ZooKeeper + a bookie, the cluster metadata, then broker-1 (the leader: it is elected first);
2. the recorder starts (every leader cycle from now on becomes a snapshot);
3. namespace ``shedlab/skew`` with 8 bundles and one producer per chosen topic (one topic per bundle,
   rates :data:`realcluster.scenarios.SKEW_RATES`): broker-1 is the only broker, it owns them all;
4. broker-2 joins: the forced imbalance; with three brokers, ``shedlab/light`` (one bundle, one topic)
   gets its traffic next (placed on broker-2, the least loaded) and broker-3 joins;
5. ``N`` leader cycles after the last broker joined (or, ``--until-unload``, the cycle after the
   leader's first unload), everything stops and the run is written (see :mod:`realcluster.record`).
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path

from .cluster import HOST, Cluster, ClusterError
from .elm import ElmRecorder
from .record import Recorder
from .scenarios import LIGHT_RATE, SCENARIOS, SKEW_RATES
from .traffic import Traffic

PULSAR_VERSION = "4.0.7"
RECORDED = ("threshold", "avgshedder", "transfer")  # what `make realcluster` records
RUN_FILES = {"timeline", "extras", "actions.jsonl", "run.json", "broker.conf"}
SKEW_NS, LIGHT_NS = "shedlab/skew", "shedlab/light"


def log(msg: str) -> None:
    print(f"[realcluster {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def topic_bundles(cluster: Cluster) -> dict:
    """topic -> bundle of every loaded topic, from each broker's ``/admin/v2/broker-stats/topics``
    (refreshed every ``statsUpdateFrequencyInSecs``, 60 s)."""
    out = {}
    for b in cluster.brokers:
        if b.proc is None or not b.proc.alive():
            continue
        try:
            stats = cluster.admin("GET", "/admin/v2/broker-stats/topics", broker=b) or {}
        except OSError:
            continue
        for ns, bundles in stats.items():
            for bundle, kinds in bundles.items():
                for topics in kinds.values():
                    for t in topics:
                        out[t] = f"{ns}/{bundle}"
    return out


def choose_topics(n: int) -> dict:
    """``n`` topics of ``shedlab/skew`` (8 bundles), each in a bundle of its own, by the engine's own
    bundle hashing (CRC-32 of the topic name, as Pulsar's ``NamespaceBundleFactory``); the run checks
    it against the bundles the brokers report (``run.json`` ``traffic``)."""
    from engine.bundles.ranges import bundle_of, initial_boundaries

    chosen, seen = {}, set()
    for i in range(400):
        t = f"persistent://{SKEW_NS}/t-{i}"
        bundle = bundle_of(t, initial_boundaries(8))
        if bundle not in seen:
            seen.add(bundle)
            chosen[t] = bundle
        if len(chosen) == n:
            return chosen
    raise ClusterError(f"no {n} distinct bundles among 400 topic names")


def record(scenario: str, out: Path, workdir: Path, cycles: int = 6, until_unload: bool = False,
           base_port: int = 12000, cpu_quota_us: int = 25000) -> dict:
    sc = SCENARIOS[scenario]
    out = Path(out)
    cluster = Cluster(Path(workdir), base_port=base_port, cpu_quota_us=cpu_quota_us)
    cluster.wipe()
    if out.exists():  # a previous run's files are replaced; anything else is left alone
        if any(x.name not in RUN_FILES for x in out.iterdir()):
            raise ClusterError(f"{out} holds files that are not a recorded run's: choose another --out")
        for x in out.iterdir():
            shutil.rmtree(x) if x.is_dir() else x.unlink()
    rec = traffic = light = None
    t0 = time.time()
    try:
        log(f"{scenario}: ZooKeeper + bookie in {workdir}")
        cluster.start_metadata()
        brokers = [cluster.add_broker(sc["conf"]) for _ in range(sc["brokers"])]
        log("broker-1 (the leader)")
        cluster.start_broker(brokers[0], limit=False)
        service = f"pulsar://{HOST}:{brokers[0].binary_port}"
        if sc.get("elm"):
            rec = ElmRecorder(cluster, out, brokers[0].proc.log, service)
        else:
            rec = Recorder(cluster, out, brokers[0].proc.log)
        rec.start()
        cluster.admin("PUT", "/admin/v2/tenants/shedlab", {"allowedClusters": ["shedlab"]})
        cluster.admin("PUT", f"/admin/v2/namespaces/{SKEW_NS}", {"bundles": {"numBundles": 8}})
        cluster.admin("PUT", f"/admin/v2/namespaces/{LIGHT_NS}", {"bundles": {"numBundles": 1}})
        chosen = choose_topics(len(SKEW_RATES))
        rates = dict(zip(chosen, SKEW_RATES))
        log(f"traffic on broker-1: {len(rates)} topics, {sum(SKEW_RATES)} msg/s")
        traffic = Traffic(service, rates, cluster.workdir / "client.log")
        traffic.start()
        cluster.limit(brokers[0])  # its topics are loaded: from now on it runs on its quota
        time.sleep(30)
        log("broker-2 joins")
        cluster.start_broker(brokers[1])
        light_topic = None
        if len(brokers) > 2:
            rec.wait_cycles(1, 90)
            light_topic = f"persistent://{LIGHT_NS}/light-0"
            light = Traffic(service, {light_topic: LIGHT_RATE}, cluster.workdir / "client-light.log")
            light.start()
            time.sleep(20)
            log("broker-3 joins")
            cluster.start_broker(brokers[2])
        log(f"recording {cycles} cycles" + (" (or until the cycle after the first unload)" if until_unload else ""))
        if until_unload:
            rec.wait_cycles(cycles, cycles * 75 + 60, until=lambda: bool(rec.actions))
            if rec.actions:
                rec.wait_cycles(1, 90)
        else:
            rec.wait_cycles(cycles, cycles * 75 + 60)
        leader = cluster.leader()
        where = topic_bundles(cluster)
    finally:
        try:
            for t in (traffic, light):
                if t is not None:
                    t.stop()
            if rec is not None:
                rec.stop()
        finally:  # the processes stop whatever happened above (an interrupt included)
            cluster.stop()
    conf_keys = {k: v for k, v in brokers[0].conf.items()
                 if k.startswith(("loadBalancer", "minUnloadMessage")) or k == "loadManagerClassName"}
    (out / "broker.conf").write_text("# the load-balancer settings every broker of the run had (the rest: defaults)\n"
                                     + "".join(f"{k}={v}\n" for k, v in sorted(conf_keys.items())))
    meta = {"scenario": scenario, "title": sc["title"], "pulsar_version": PULSAR_VERSION,
            "brokers": {b.name: b.broker_id for b in brokers}, "leader": leader,
            "cpu_limit_percent": cluster.cpu_quota_us / 1000 if cluster.cgroups_ok else None,
            "cgroups": bool(cluster.cgroups_ok),
            "traffic": [{"topic": t, "bundle": chosen[t], "bundle_reported": where.get(t), "msg_per_s": r,
                         "bytes": 1024} for t, r in rates.items()]
                       + ([{"topic": light_topic, "bundle": where.get(light_topic), "msg_per_s": LIGHT_RATE,
                            "bytes": 1024}] if light_topic else []),
            "sent": {**traffic.sent, **(light.sent if light else {})}, "send_errors": traffic.errors,
            "seconds": round(time.time() - t0)}
    rec.write(meta)
    log(f"done in {meta['seconds']} s: {len(rec.cycles)} cycles, {len(rec.actions)} unloads -> {out}")
    return meta


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    signal.signal(signal.SIGTERM, _interrupt)  # `timeout`, `kill`: stop the cluster as Ctrl-C does
    p = argparse.ArgumentParser(prog="python -m realcluster", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS) + ["all"],
                   help="one run, or `all`: " + ", ".join(RECORDED) + " (each into OUT/NAME)")
    p.add_argument("--out", required=True, help="directory the run is written to")
    p.add_argument("--workdir", default="/tmp/shedlab-realcluster", help="data and logs of the processes")
    p.add_argument("--cycles", type=int, default=6, help="leader cycles to record after the last broker joined")
    p.add_argument("--until-unload", action="store_true", help="stop at the cycle after the leader's first unload")
    p.add_argument("--base-port", type=int, default=12000)
    a = p.parse_args(argv)
    runs = [(n, Path(a.out) / n) for n in RECORDED] if a.scenario == "all" else [(a.scenario, Path(a.out))]
    for name, out in runs:
        try:
            meta = record(name, out, Path(a.workdir), a.cycles, a.until_unload, a.base_port)
        except ClusterError as exc:
            print(f"realcluster: {exc}", file=sys.stderr)
            return 1
        print(json.dumps({k: meta[k] for k in ("scenario", "leader", "seconds")}))
    return 0
