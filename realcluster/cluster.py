"""A real multi-broker Pulsar on this machine, from the released jars on Maven Central.

Processes (each its own JVM, every port on 127.0.0.1):

* ``meta``: Pulsar's standalone starter with ``--no-broker`` and ``PULSAR_STANDALONE_USE_ZOOKEEPER=1``:
  a ZooKeeper metadata store and one bookie, nothing else;
* ``PulsarClusterMetadataSetup``: the cluster's metadata (run once);
* one ``PulsarBrokerStarter`` per broker, each with its own ``broker.conf``.

Each broker runs in its own cgroup (v1 ``cpu`` + ``cpuacct``, with a CPU quota, set once the broker
is ready): the JVM reports that
cgroup's CPU time and quota, so Pulsar's ``LinuxBrokerHostUsageImpl`` measures each broker's own CPU
against its own limit, as if it were its own host. The NIC is not separated: Pulsar counts only
physical NICs (a veth pair is ``/virtual/``, so network namespaces would not help), loopback traffic
crosses none, and this machine's one NIC (virtio) has an unknown speed (``-1``): every broker reports
bandwidth limit -1000, 0 %. See README "A real Pulsar cluster in the lab".

The class path comes from ``realcluster/target/classpath.txt`` (``make realcluster-deps``: Maven
resolves ``realcluster/pom.xml``; the jars stay in ``~/.m2``).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLASSPATH_FILE = HERE / "target" / "classpath.txt"
HOST = "127.0.0.1"
CLUSTER = "shedlab"
CGROUP_ROOT = Path("/sys/fs/cgroup")

JAVA_OPENS = [
    "--add-opens", "java.base/java.nio=ALL-UNNAMED",
    "--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
    # Pulsar reads the cgroup's CPU usage and quota through the JDK's container metrics
    "--add-exports", "java.base/jdk.internal.platform=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
]

LOG4J = """status = warn
appender.f.type = File
appender.f.name = F
appender.f.fileName = ${sys:shedlab.log}
appender.f.layout.type = PatternLayout
appender.f.layout.pattern = %d{UNIX_MILLIS} [%t] %-5level %logger{36} - %msg%n
rootLogger.level = info
rootLogger.appenderRef.f.ref = F
logger.th.name = org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder
logger.th.level = debug
logger.zk.name = org.apache.zookeeper
logger.zk.level = warn
logger.bk.name = org.apache.bookkeeper
logger.bk.level = warn
"""

# The settings every broker of the lab gets (Pulsar's broker.conf names). The load-balancer keys a
# scenario chooses are added on top (see realcluster/scenarios.py).
BASE_CONF = {
    "clusterName": CLUSTER,
    "bindAddress": HOST,
    "advertisedAddress": HOST,
    "managedLedgerDefaultEnsembleSize": "1",
    "managedLedgerDefaultWriteQuorum": "1",
    "managedLedgerDefaultAckQuorum": "1",
    "functionsWorkerEnabled": "false",
    "transactionCoordinatorEnabled": "false",
    "topicLevelPoliciesEnabled": "false",
    "systemTopicEnabled": "false",
    "allowAutoTopicCreation": "true",
    "brokerDeleteInactiveTopicsEnabled": "false",
    "exposeTopicLevelMetricsInPrometheus": "false",
    "webSocketServiceEnabled": "false",
    "managedLedgerCacheSizeMB": "16",
    "dispatcherMaxReadBatchSize": "50",
    "numIOThreads": "2",
    "numHttpServerThreads": "8",
    "numOrderedExecutorThreads": "2",
    "numExecutorThreadPoolSize": "2",
    "managedLedgerNumSchedulerThreads": "2",
    "bookkeeperClientNumWorkerThreads": "2",
    "bookkeeperClientNumIoThreads": "2",
}


class ClusterError(RuntimeError):
    pass


def classpath() -> str:
    if not CLASSPATH_FILE.exists():
        raise ClusterError(f"{CLASSPATH_FILE} is missing: run `make realcluster-deps` (Maven resolves "
                           "realcluster/pom.xml)")
    return CLASSPATH_FILE.read_text().strip()


def http(method: str, url: str, body=None, timeout: float = 30.0, raw: bool = False):
    data = None
    headers = {}
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        out = r.read()
    if raw:
        return out
    return json.loads(out) if out.strip() else None


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path
    cgroup: str | None = None

    def alive(self) -> bool:
        return self.popen.poll() is None


def _cgroup_paths(name: str) -> list[Path]:
    return [CGROUP_ROOT / "cpu" / name, CGROUP_ROOT / "cpuacct" / name]


def make_cgroup(name: str, quota_us: int) -> bool:
    """A v1 cpu+cpuacct cgroup ``name`` with CPU quota ``quota_us`` per 100 ms; False when this machine
    cannot (no cgroup v1 cpu/cpuacct hierarchies, or no right to create one)."""
    try:
        for p in _cgroup_paths(name):
            p.mkdir(exist_ok=True)
        (CGROUP_ROOT / "cpu" / name / "cpu.cfs_period_us").write_text("100000")
        (CGROUP_ROOT / "cpu" / name / "cpu.cfs_quota_us").write_text(str(quota_us))
        return True
    except OSError:
        return False


def set_quota(name: str, quota_us: int) -> None:
    (CGROUP_ROOT / "cpu" / name / "cpu.cfs_quota_us").write_text(str(quota_us))


def remove_cgroup(name: str) -> None:
    for p in _cgroup_paths(name):
        try:
            p.rmdir()
        except OSError:
            pass


@dataclass
class Broker:
    name: str
    web_port: int
    binary_port: int
    conf: dict
    proc: Proc | None = None
    cgroup: str | None = None

    @property
    def broker_id(self) -> str:
        return f"{HOST}:{self.web_port}"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.web_port}"


@dataclass
class Cluster:
    """``workdir``: data and logs; ``base_port``: ZooKeeper at base+181, bookie base+182, broker i at
    web base+81+i and binary base+651+i (i from 0)."""

    workdir: Path
    base_port: int = 12000
    heap_mb: int = 384
    cpu_quota_us: int = 25000
    procs: list = field(default_factory=list)
    brokers: list = field(default_factory=list)
    cgroups_ok: bool | None = None

    @property
    def zk_port(self) -> int:
        return self.base_port + 181

    @property
    def metadata_url(self) -> str:
        return f"zk:{HOST}:{self.zk_port}"

    def _java(self, name: str, main: str, args: list, env_extra=None, heap_mb=None, cgroup=None) -> Proc:
        log = self.workdir / f"{name}.log"
        cmd = ["java", f"-Xmx{heap_mb or self.heap_mb}m", "-XX:MaxDirectMemorySize=256m", *JAVA_OPENS,
               f"-Dlog4j.configurationFile={self.workdir / 'log4j2.properties'}", f"-Dshedlab.log={log}",
               "-Dpulsar.log.level=info", "-cp", classpath(), main, *args]
        env = dict(os.environ)
        env.update(env_extra or {})

        def enter_cgroup():  # runs in the child before exec: the JVM starts inside its own cgroup
            if cgroup:
                for p in _cgroup_paths(cgroup):
                    (p / "tasks").write_text(str(os.getpid()))

        out = open(self.workdir / f"{name}.out", "wb")
        popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.workdir,
                                 start_new_session=True, preexec_fn=enter_cgroup if cgroup else None)
        out.close()
        p = Proc(name, popen, log, cgroup)
        self.procs.append(p)
        return p

    def start_metadata(self, timeout: float = 180.0) -> None:
        """ZooKeeper + one bookie (the standalone starter without its broker), then the cluster metadata."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j2.properties").write_text(LOG4J)
        # the bookie stays writable on a nearly full disk: BookKeeper turns it read-only above 95 % of the
        # disk used (diskUsageThreshold), and then every new topic fails with "Not enough non-faulty
        # bookies"; a test run writes a few megabytes
        (self.workdir / "standalone.conf").write_text(f"clusterName={CLUSTER}\nbindAddress={HOST}\n"
                                                       f"advertisedAddress={HOST}\n"
                                                       "diskUsageThreshold=0.9999\ndiskUsageWarnThreshold=0.9999\n"
                                                       "diskUsageLwmThreshold=0.9999\n")
        p = self._java("meta", "org.apache.pulsar.PulsarStandaloneStarter",
                       ["--config", str(self.workdir / "standalone.conf"), "--no-broker", "--no-functions-worker",
                        "--no-stream-storage", "--advertised-address", HOST,
                        "--zookeeper-port", str(self.zk_port), "--bookkeeper-port", str(self.base_port + 182),
                        "--zookeeper-dir", str(self.workdir / "zk"), "--bookkeeper-dir", str(self.workdir / "bk")],
                       env_extra={"PULSAR_STANDALONE_USE_ZOOKEEPER": "1"}, heap_mb=256)
        self._wait_log(p, "Local BK[0] started", timeout)
        setup = self._java("setup", "org.apache.pulsar.PulsarClusterMetadataSetup",
                           ["--cluster", CLUSTER, "--metadata-store", self.metadata_url,
                            "--configuration-metadata-store", self.metadata_url,
                            "--web-service-url", f"http://{HOST}:{self.base_port + 81}",
                            "--broker-service-url", f"pulsar://{HOST}:{self.base_port + 651}"], heap_mb=128)
        rc = setup.popen.wait(timeout=timeout)
        self.procs.remove(setup)
        if rc != 0:
            raise ClusterError(f"PulsarClusterMetadataSetup exited with {rc}: see {setup.log}")

    def _wait_log(self, p: Proc, text: str, timeout: float) -> None:
        end = time.time() + timeout
        while time.time() < end:
            if not p.alive():
                raise ClusterError(f"{p.name} exited with {p.popen.returncode}: see {p.log} and "
                                   f"{self.workdir / (p.name + '.out')}")
            if p.log.exists() and text in p.log.read_text(errors="replace"):
                return
            time.sleep(1.0)
        raise ClusterError(f"{p.name} did not log {text!r} within {timeout:.0f} s: see {p.log}")

    def add_broker(self, lb_conf: dict) -> Broker:
        i = len(self.brokers)
        b = Broker(f"broker-{i + 1}", self.base_port + 81 + i, self.base_port + 651 + i, {})
        conf = dict(BASE_CONF)
        conf.update({"metadataStoreUrl": self.metadata_url, "configurationMetadataStoreUrl": self.metadata_url,
                     "brokerServicePort": str(b.binary_port), "webServicePort": str(b.web_port)})
        conf.update({k: str(v) for k, v in lb_conf.items()})
        b.conf = conf
        self.brokers.append(b)
        return b

    def start_broker(self, b: Broker, timeout: float = 300.0, limit: bool = True) -> None:
        """Start ``b`` and wait until it is ready. Its CPU quota is set then (a JVM starting on a quarter
        of a core takes minutes); with ``limit=False`` it is left to :meth:`limit`, so a broker can first
        load its topics at full speed (the first producers create topics, ledgers and ownerships on cold
        code, which on a quarter core under load can outlast the client's operation timeout)."""
        path = self.workdir / f"{b.name}.conf"
        path.write_text("".join(f"{k}={v}\n" for k, v in b.conf.items()))
        b.cgroup = None
        if self.cgroups_ok is not False:
            cg = f"shedlab-{self.base_port}-{b.name}"
            self.cgroups_ok = make_cgroup(cg, -1)
            b.cgroup = cg if self.cgroups_ok else None
        b.proc = self._java(b.name, "org.apache.pulsar.PulsarBrokerStarter", ["-c", str(path)], cgroup=b.cgroup)
        self.wait_ready(b, timeout)
        if limit:
            self.limit(b)

    def limit(self, b: Broker) -> None:
        """Set ``b``'s CPU quota (a no-op without cgroups)."""
        if b.cgroup:
            set_quota(b.cgroup, self.cpu_quota_us)

    def wait_ready(self, b: Broker, timeout: float) -> None:
        end = time.time() + timeout
        while time.time() < end:
            if not b.proc.alive():
                raise ClusterError(f"{b.name} exited with {b.proc.popen.returncode}: see {b.proc.log}")
            try:
                if http("GET", f"{b.url}/admin/v2/brokers/ready", raw=True, timeout=5).strip() == b"ok":
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(2.0)
        raise ClusterError(f"{b.name} not ready within {timeout:.0f} s: see {b.proc.log}")

    def admin(self, method: str, path: str, body=None, broker: Broker | None = None, raw=False):
        b = broker or self.brokers[0]
        return http(method, f"{b.url}{path}", body, raw=raw)

    def leader(self) -> str:
        return self.admin("GET", "/admin/v2/brokers/leaderBroker")["brokerId"]

    def broker_by_id(self, broker_id: str) -> Broker:
        return next(b for b in self.brokers if b.broker_id == broker_id)

    def stop(self) -> None:
        """Stop every process this cluster started (SIGTERM to each one's own session, then SIGKILL)."""
        for p in reversed(self.procs):
            if p.alive():
                try:
                    os.killpg(p.popen.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.time() + 30
        for p in reversed(self.procs):
            try:
                p.popen.wait(timeout=max(0.1, end - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.popen.wait(timeout=10)
            if p.cgroup:
                remove_cgroup(p.cgroup)
        self.procs.clear()

    def wipe(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
