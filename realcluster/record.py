"""Record a run of a real cluster: what the leader saw at each shedding cycle, and what it did.

The recorder polls the metadata store every second (``/loadbalance/brokers/*``,
``/loadbalance/bundle-data/**``, ``/loadbalance/broker-time-average/*``: the nodes the modular leader
reads and writes) and tails the leader's log. Each shedding cycle of the leader shows in its log (the
strategy's own lines: ThresholdShedder's per-broker line at DEBUG, AvgShedder's "sorted broker list",
"Only 1 broker available"). The leader's "Unloading bundle: B from broker A to dest broker D" lines are
its actions.

A cycle's snapshot is the metadata store as it stood at the cycle's first line, node by node: the
leader reads the brokers' reports from its own cache, refreshed on each change notification, not at
the cycle, so a report written in the second before the cycle is one the leader already has. The
snapshot is built once a dump taken at least :data:`SETTLE_MS` after the cycle exists: each node is the
newest version seen (in the dumps around the cycle) whose modification time (the store's ``mtime``,
same clock as the log) is not after the cycle; a node created after it is left out. ThresholdShedder
also prints, for every broker, the resource usage it read (``cpu: …%, memory: …%, …``); where a
broker's chosen report does not print the same, the version of that report that does is taken
instead (a notification still in flight at the cycle), and the cycle's ``inputs`` in ``run.json``
says, per broker, ``log`` (matched as chosen), ``log-other-version`` or ``no-match``.

Output directory::

    timeline/NNN-<cycle ms>/loadbalance/{brokers,bundle-data,broker-time-average}/...   (a ZooKeeper
        /loadbalance dump per cycle: `python -m engine replay timeline --observed --conf broker.conf`)
    actions.jsonl        the leader's unloads ({"time", "strategy", "bundle", "broker", "destination"})
    broker.conf          the load-balancer settings every broker ran with
    run.json             scenario, Pulsar version, brokers, leader, traffic (topic, bundle, rate), cycles
                         (time, snapshot, unloads; ThresholdShedder's: ``leader_usage``, the usage it
                         printed per broker, and ``inputs``, how each broker's report matched it)
    extras/NNN/<broker>.load-report.json   GET /admin/v2/broker-stats/load-report after each cycle
    extras/NNN/<broker>.metrics.txt        the pulsar_lb_* lines of GET /metrics after each cycle
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from operator import itemgetter
from pathlib import Path

from engine.javacompat import percent_usage

from .cluster import HOST, Cluster, http

LINE = re.compile(r"^(\d{13}) \[(.*?)\] (\w+)\s+(\S+) - (.*)$")
UNLOAD = re.compile(r"\[(\w+)\] Unloading bundle: (\S+) from broker (\S+) to dest broker (\S+)")
# ThresholdShedder's per-broker lines end with the broker's LocalBrokerData.printResourceUsage()
USAGE = re.compile(r"^(?:\[(\S+)\] broker is |Attempting to shed load on (\S+), ).*\((cpu: [^()]*)\)\s*$")
USAGE_FIELDS = ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")
CYCLE_GAP_MS = 15_000
SETTLE_MS = 1_500  # a cycle's snapshot waits for a dump this long after the cycle's first line
WINDOW_MS = 120_000  # the dumps a cycle's nodes are looked up in: from this long before the cycle


def parse_usage(text: str) -> dict:
    """``"cpu: 80.23%, memory: 25.39%, ..."`` -> ``{"cpu": 80.23, ...}``."""
    out = {}
    for part in text.split(","):
        k, _, v = part.strip().partition(":")
        try:
            out[k.strip()] = float(v.strip().rstrip("%"))
        except ValueError:
            continue
    return out


def report_usage(data: bytes) -> dict | None:
    """The percentages a LocalBrokerData report prints (``percentUsage()``: float32 usage / limit * 100)."""
    try:
        rep = json.loads(data)
        return {k: percent_usage(float((rep.get(k) or {}).get("usage", 0.0)),
                                 float((rep.get(k) or {}).get("limit", 0.0))) for k in USAGE_FIELDS}
    except (ValueError, TypeError, AttributeError):
        return None


def usage_matches(logged: dict, data: bytes) -> bool:
    got = report_usage(data)
    return got is not None and all(abs(got[k] - v) <= 0.011 for k, v in logged.items() if k in got)


def values_at(history: dict, t: int) -> dict:
    """key -> its newest value written at or before ``t`` (``history``: key -> ``[(written ms, value, or
    None for a deletion)]``); keys deleted or first written after ``t`` are left out."""
    out = {}
    for key, versions in history.items():
        got = [x for x in versions if x[0] <= t]
        if got:
            value = max(got, key=itemgetter(0))[1]
            if value is not None:
                out[key] = value
    return out


def nodes_at(dumps: list, t: int, logged: dict | None = None) -> tuple:
    """``(files, inputs)``: the metadata store at time ``t`` from ``dumps`` (``[(dump ms, {path: (data,
    mtime, ctime)})]``, in time order), and per broker whose printed usage is in ``logged`` which version
    of its report matched it (see the module's docstring)."""
    before = [x for x in dumps if x[0] <= t]
    if not before:
        return None, {}
    versions: dict = {}  # path -> {mtime: data}
    for _d, files in dumps:
        for rel, (data, mtime, _c) in files.items():
            versions.setdefault(rel, {})[mtime] = data
    paths = set(before[-1][1])
    for d, files in dumps:
        if d > t:
            paths.update(rel for rel, (_x, _m, ctime) in files.items() if ctime <= t)
    out = values_at({rel: versions[rel].items() for rel in paths}, t)  # (a node seen only as written after t: left out)
    inputs = {}
    for rel in sorted(out):
        vs = versions[rel]
        top, _, broker = rel.partition("loadbalance/brokers/")
        if top or not broker or not logged or broker not in logged:
            continue
        if usage_matches(logged[broker], out[rel]):
            inputs[broker] = "log"
            continue
        other = [m for m in sorted(vs, key=lambda m: abs(m - t)) if usage_matches(logged[broker], vs[m])]
        if other:
            out[rel] = vs[other[0]]
            inputs[broker] = "log-other-version"
        else:
            inputs[broker] = "no-match"
    return out, inputs


def is_marker(logger: str, msg: str) -> bool:
    return (logger.endswith("ThresholdShedder") or logger.endswith("AvgShedder")
            or msg.startswith("Only 1 broker available"))


class Recorder:
    load_reports = True  # GET /admin/v2/broker-stats/load-report (the ELM answers 500)

    def __init__(self, cluster: Cluster, out: Path, leader_log: Path):
        self.cluster = cluster
        self.out = Path(out)
        self.leader_log = Path(leader_log)
        self.dumps: deque = deque(maxlen=WINDOW_MS // 1000 + 20)
        self.cycles: list = []  # {"time", "snapshot"}
        self._pending: list = []  # cycles whose snapshot waits for a later dump
        self._extras_threads: list = []
        self.actions: list = []
        self._pos = 0
        self._partial = ""
        self._stop = threading.Event()
        self._thread = None
        self._zk = None
        self.errors: list = []

    # -- the metadata store -------------------------------------------------------------------
    def _dump(self) -> dict:
        zk = self._zk
        files = {}

        def walk(path: str, rel: str):
            kids = zk.get_children(path)
            if not kids:
                data, stat = zk.get(path)
                files[rel] = (data or b"", stat.mtime, stat.ctime)
                return
            for k in kids:
                walk(f"{path}/{k}", f"{rel}/{k}")

        for top in ("brokers", "bundle-data", "broker-time-average"):
            p = f"/loadbalance/{top}"
            if zk.exists(p):
                for k in zk.get_children(p):
                    walk(f"{p}/{k}", f"loadbalance/{top}/{k}")
        return files

    def _open(self) -> None:
        from kazoo.client import KazooClient  # pinned in requirements-dev.txt

        self._zk = KazooClient(hosts=f"{HOST}:{self.cluster.zk_port}", timeout=20)
        self._zk.start(timeout=60)

    def _close(self) -> None:
        self._zk.stop()
        self._zk.close()

    def _poll(self) -> None:
        self._open()
        try:
            while not self._stop.is_set():
                t = int(time.time() * 1000)
                try:
                    self.dumps.append((t, self._dump()))
                except Exception as exc:  # a node deleted between list and get: next poll
                    self.errors.append(f"{t}: dump: {exc!r}")
                self._read_log()
                self._settle()
                self._stop.wait(1.0)
        finally:
            self._close()

    # -- the leader's log -----------------------------------------------------------------------
    def _read_log(self) -> None:
        if not self.leader_log.exists():
            return
        with open(self.leader_log, "r", errors="replace") as f:
            f.seek(self._pos)
            chunk = f.read()
            self._pos = f.tell()
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            m = LINE.match(line)
            if not m:
                continue
            t, logger, msg = int(m.group(1)), m.group(4), m.group(5)
            act = self.unload_of(msg)
            if act:
                self.actions.append({"time": t, **act})
                if self.cycles:
                    self.cycles[-1].setdefault("unloads", []).append(act["bundle"])
            elif self.is_marker(logger, msg):
                if not self.cycles or t > self.cycles[-1]["time"] + CYCLE_GAP_MS:
                    self._cycle(t)
            u = USAGE.match(msg) if logger.endswith("ThresholdShedder") else None
            if u and self.cycles and t <= self.cycles[-1]["time"] + CYCLE_GAP_MS:
                self.cycles[-1].setdefault("leader_usage", {})[u.group(1) or u.group(2)] = parse_usage(u.group(3))

    def _cycle(self, t: int) -> None:
        entry = {"time": t, "snapshot": None, "index": len(self.cycles) + 1}
        self._pending.append(entry)  # (first: :meth:`settled`, read by another thread, never counts it early)
        self.cycles.append(entry)

    def _settle(self, final: bool = False) -> None:
        """Write the snapshot of each pending cycle that has a dump :data:`SETTLE_MS` after it (all of
        them when ``final``)."""
        last = self.dumps[-1][0] if self.dumps else None
        while self._pending:
            entry = self._pending[0]
            if not final and (last is None or last < entry["time"] + SETTLE_MS):
                return
            idx, t = entry.pop("index"), entry["time"]
            files = self._snapshot_files(entry)
            if files is None:
                self.errors.append(f"{t}: cycle {idx} before the first metadata-store dump: no snapshot")
            else:
                entry["snapshot"] = self._write_snapshot(f"{idx:03d}-{t}", files)
                th = threading.Thread(target=self._extras, args=(idx,), daemon=True)
                th.start()
                self._extras_threads.append(th)
            self._pending.pop(0)  # (last: settled once its snapshot is written)

    def _snapshot_files(self, entry: dict):
        t = entry["time"]
        dumps = [x for x in self.dumps if t - WINDOW_MS <= x[0]]
        files, inputs = nodes_at(dumps, t, entry.get("leader_usage"))
        if inputs:
            entry["inputs"] = inputs
        before = [d for d, _f in dumps if d <= t]
        if before:
            entry["dump_time"] = before[-1]
        return files

    def _write_snapshot(self, name: str, files: dict) -> str:
        root = self.out / "timeline" / name
        for rel, data in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        return name

    @staticmethod
    def unload_of(msg: str):
        u = UNLOAD.search(msg)
        if u:
            return {"strategy": u.group(1), "bundle": u.group(2), "broker": u.group(3), "destination": u.group(4)}
        return None

    is_marker = staticmethod(is_marker)

    def _extras(self, idx: int) -> None:
        d = self.out / "extras" / f"{idx:03d}"
        d.mkdir(parents=True, exist_ok=True)
        for b in self.cluster.brokers:
            if b.proc is None or not b.proc.alive():
                continue
            try:
                if self.load_reports:
                    rep = http("GET", f"{b.url}/admin/v2/broker-stats/load-report", timeout=20)
                    (d / f"{b.name}.load-report.json").write_text(json.dumps(rep, indent=1, sort_keys=True))
                text = http("GET", f"{b.url}/metrics/", raw=True, timeout=30).decode("utf-8", "replace")
                keep = [ln for ln in text.splitlines() if "pulsar_lb_" in ln]
                (d / f"{b.name}.metrics.txt").write_text("\n".join(keep) + "\n")
            except Exception as exc:
                self.errors.append(f"extras {idx} {b.name}: {exc!r}")

    # -- control ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._poll, daemon=True, name="recorder")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=60)
        self._read_log()
        self._settle(final=True)
        for th in self._extras_threads:  # the last cycle's load reports, before the brokers stop
            th.join(timeout=60)

    def settled(self) -> int:
        """Cycles whose snapshot is written (or known to have none)."""
        return len(self.cycles) - len(self._pending)

    def wait_cycles(self, n: int, timeout: float, until=None) -> None:
        """Until ``n`` cycles after those seen so far are recorded with their snapshots (or ``until()``
        is true), at most ``timeout`` seconds."""
        start = len(self.cycles)
        end = time.time() + timeout
        while time.time() < end and self.settled() < start + n:
            if until is not None and until():
                return
            time.sleep(1.0)

    def write(self, meta: dict) -> None:
        with open(self.out / "actions.jsonl", "w") as f:
            for a in self.actions:
                f.write(json.dumps(a, sort_keys=True) + "\n")
        meta = dict(meta, cycles=self.cycles, recorder_errors=self.errors[:50])
        (self.out / "run.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
