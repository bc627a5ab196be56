"""Record a run of a real cluster: what the leader saw at each shedding cycle, and what it did.

The recorder polls the metadata store every second (``/loadbalance/brokers/*``,
``/loadbalance/bundle-data/**``, ``/loadbalance/broker-time-average/*``: the nodes the modular leader
reads and writes) and tails the leader's log. Each shedding cycle of the leader shows in its log (the
strategy's own lines: ThresholdShedder's per-broker line at DEBUG, AvgShedder's "sorted broker list",
"Only 1 broker available"); for each cycle the last metadata-store dump taken before the cycle's first
line becomes one snapshot of the timeline. The leader's "Unloading bundle: B from broker A to dest
broker D" lines are its actions.

Output directory::

    timeline/NNN-<cycle ms>/loadbalance/{brokers,bundle-data,broker-time-average}/...   (a ZooKeeper
        /loadbalance dump per cycle: `python -m engine replay timeline --observed --conf broker.conf`)
    actions.jsonl        the leader's unloads ({"time", "strategy", "bundle", "broker", "destination"})
    broker.conf          the load-balancer settings every broker ran with
    run.json             scenario, Pulsar version, brokers, leader, cycles, traffic (topic, bundle, rate)
    extras/NNN/<broker>.load-report.json   GET /admin/v2/broker-stats/load-report after each cycle
    extras/NNN/<broker>.metrics.txt        the pulsar_lb_* lines of GET /metrics after each cycle
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from pathlib import Path

from .cluster import HOST, Cluster, http

LINE = re.compile(r"^(\d{13}) \[(.*?)\] (\w+)\s+(\S+) - (.*)$")
UNLOAD = re.compile(r"\[(\w+)\] Unloading bundle: (\S+) from broker (\S+) to dest broker (\S+)")
CYCLE_GAP_MS = 15_000


def is_marker(logger: str, msg: str) -> bool:
    return (logger.endswith("ThresholdShedder") or logger.endswith("AvgShedder")
            or msg.startswith("Only 1 broker available"))


class Recorder:
    load_reports = True  # GET /admin/v2/broker-stats/load-report (the ELM answers 500)

    def __init__(self, cluster: Cluster, out: Path, leader_log: Path):
        self.cluster = cluster
        self.out = Path(out)
        self.leader_log = Path(leader_log)
        self.dumps: deque = deque(maxlen=120)
        self.cycles: list = []  # {"time", "snapshot"}
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
                data, _ = zk.get(path)
                files[rel] = data or b""
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

    def _cycle(self, t: int) -> None:
        before = [d for d in self.dumps if d[0] <= t - 500]
        idx = len(self.cycles) + 1
        entry = {"time": t, "snapshot": None}
        self.cycles.append(entry)
        if not before:
            self.errors.append(f"{t}: cycle {idx} before the first metadata-store dump: no snapshot")
            return
        dump_t, files = before[-1]
        name = self._write_snapshot(f"{idx:03d}-{t}", files)
        entry.update(snapshot=name, dump_time=dump_t)
        threading.Thread(target=self._extras, args=(idx,), daemon=True).start()

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

    def wait_cycles(self, n: int, timeout: float, until=None) -> None:
        """Until ``n`` more cycles are recorded (or ``until()`` is true), at most ``timeout`` seconds."""
        start = len(self.cycles)
        end = time.time() + timeout
        while time.time() < end and len(self.cycles) < start + n:
            if until is not None and until():
                return
            time.sleep(1.0)

    def write(self, meta: dict) -> None:
        with open(self.out / "actions.jsonl", "w") as f:
            for a in self.actions:
                f.write(json.dumps(a, sort_keys=True) + "\n")
        meta = dict(meta, cycles=self.cycles, recorder_errors=self.errors[:50])
        (self.out / "run.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
