"""Recording the Extensible Load Manager: its load data lives on two non-persistent system topics and
its bundle ownership on the service-unit state channel (a persistent system topic), not in the
metadata store.

The recorder reads the three topics with the real client from the moment broker-1 is up:
``loadbalancer-broker-load-data`` (key: broker id, value: ``BrokerLoadData``),
``loadbalancer-top-bundles-load-data`` (key: broker id, value: ``TopBundlesLoadData``) and
``loadbalancer-service-unit-state`` (key: bundle, value: ``ServiceUnitStateData``; a bundle's owner is
the ``dstBroker`` of its last ``Owned`` state). Each leader cycle (the ``UnloadScheduler``'s "Available
brokers" line, printed with ``loadBalancerDebugModeEnabled=true``) becomes one snapshot: the Shedlab
container ``{"brokerLoadData", "topBundlesLoadData", "bundleOwnership", "brokerLookupData"}`` of the
values as they stood at the cycle's line: per key, the newest value whose publish time (set by the
broker, on the log's clock) is not after it, from the messages read up to 1.5 s after the cycle — the
leader's table views take a value within milliseconds of its publication, and a broker publishes its
load data right next to the one-minute cycle (both timers start with it) (the last, the broker
registry, from the metadata store's
``/loadbalance/brokers/<id>``: a broker that has joined but not yet published load data is available
all the same, and the leader skips the cycle — ``NoLoadData`` — as the engine then does) (``timeline/NNN-<ms>.json``). The leader's actions are its "Unloading bundle:
Unload[...]" lines.
"""
from __future__ import annotations

import json
import re
import threading

from .cluster import HOST
from .record import Recorder, values_at

SYSTEM = "pulsar/system"
BROKER_LOAD = f"non-persistent://{SYSTEM}/loadbalancer-broker-load-data"
TOP_BUNDLES = f"non-persistent://{SYSTEM}/loadbalancer-top-bundles-load-data"
CHANNEL = f"persistent://{SYSTEM}/loadbalancer-service-unit-state"
ELM_UNLOAD = re.compile(r"\[(\w+)\] Unloading bundle: Unload\[sourceBroker=([^,]+), serviceUnit=([^,]+), "
                        r"destBroker=Optional(?:\[([^\]]+)\]|\.empty)")


HISTORY = 16  # values kept per key of a topic (one a minute, or on a large change)


class ElmRecorder(Recorder):
    load_reports = False

    def __init__(self, cluster, out, leader_log, service_url: str):
        super().__init__(cluster, out, leader_log)
        self.service_url = service_url
        self.tables = {BROKER_LOAD: {}, TOP_BUNDLES: {}, CHANNEL: {}}  # topic -> key -> [(publish ms, value)]
        self._lock = threading.Lock()
        self._readers = []

    @staticmethod
    def is_marker(logger: str, msg: str) -> bool:
        return logger.endswith("UnloadScheduler") and (msg.startswith("Available brokers")
                                                       or msg.startswith("Only 1 broker available"))

    @staticmethod
    def unload_of(msg: str):
        u = ELM_UNLOAD.search(msg)
        if u:
            return {"strategy": u.group(1), "bundle": u.group(3), "broker": u.group(2), "destination": u.group(4)}
        return None

    def _open(self) -> None:
        import pulsar

        super()._open()  # the metadata store: the broker registry (/loadbalance/brokers/<id>)
        self._client = pulsar.Client(self.service_url, operation_timeout_seconds=60,
                                     logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn,
                                                              str(self.cluster.workdir / "client-elm.log")))
        for topic in self.tables:
            th = threading.Thread(target=self._read_topic, args=(topic,), daemon=True, name=f"read {topic}")
            th.start()
            self._readers.append(th)

    def _read_topic(self, topic: str) -> None:
        import pulsar

        reader = None
        while reader is None and not self._stop.is_set():
            try:
                reader = self._client.create_reader(topic, pulsar.MessageId.earliest)
            except Exception as exc:  # the system topic does not exist yet
                self.errors.append(f"reader {topic}: {exc!r}")
                self._stop.wait(5)
        while not self._stop.is_set():
            try:
                msg = reader.read_next(timeout_millis=1000)
            except Exception:
                continue
            key, raw, published = msg.partition_key(), msg.data(), msg.publish_timestamp()
            try:
                value = json.loads(raw) if raw else None
            except ValueError:
                self.errors.append(f"{topic} {key}: not JSON")
                continue
            with self._lock:
                versions = self.tables[topic].setdefault(key, [])
                versions.append((published, value))
                del versions[:-HISTORY]
        try:
            reader.close()
        except Exception:
            pass

    def _close(self) -> None:
        super()._close()
        for th in self._readers:
            th.join(timeout=10)
        try:
            self._client.close()
        except Exception:
            pass

    def _registry(self) -> dict:
        """broker id -> its ``BrokerLookupData`` (the registry: the brokers the leader counts as available,
        with or without load data)."""
        out = {}
        zk = self._zk
        if zk.exists("/loadbalance/brokers"):
            for b in zk.get_children("/loadbalance/brokers"):
                data, _ = zk.get(f"/loadbalance/brokers/{b}")
                if data:
                    out[b] = json.loads(data)
        return out

    def _dump(self) -> dict:
        """The broker registry (the topics' values are kept with their publish times)."""
        return {"brokerLookupData": self._registry()}

    def _snapshot_files(self, entry: dict):
        """The topics' values published at or before the cycle's line, the registry of the last copy
        taken before it."""
        t = entry["time"]
        before = [x for x in self.dumps if x[0] <= t]
        if not before:
            return None
        entry["dump_time"] = before[-1][0]
        with self._lock:
            load, top, channel = (values_at(self.tables[k], t) for k in (BROKER_LOAD, TOP_BUNDLES, CHANNEL))
        owners = {b: v.get("dstBroker") for b, v in channel.items()
                  if v.get("state") == "Owned" and v.get("dstBroker")}
        return json.loads(json.dumps({"brokerLoadData": load, "topBundlesLoadData": top, "bundleOwnership": owners,
                                      "brokerLookupData": before[-1][1]["brokerLookupData"]}))

    def _write_snapshot(self, name: str, files: dict) -> str:
        if not files["brokerLoadData"]:
            self.errors.append(f"{name}: no broker load data yet: no snapshot")
            return None
        d = self.out / "timeline"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.json").write_text(json.dumps(files, indent=1, sort_keys=True))
        return f"{name}.json"


__all__ = ["ElmRecorder", "HOST"]
