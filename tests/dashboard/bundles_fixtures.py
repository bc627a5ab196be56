"""Hand-built inputs of the Bundles page tests: a snapshot with bundleTopics, topic files, data URLs."""
from __future__ import annotations

import base64
import json

from engine import bundles as B
from engine.synth import make_snapshot

NS = "vivo/ns"
N_BUNDLES = 8
BROKERS = ("broker-1.example:8080", "broker-2.example:8080", "broker-3.example:8080")


def snapshot_json(hot_rate: float = 40_000.0) -> dict:
    """3 brokers own the 8 bundles of ``vivo/ns`` round robin; topic ``t`` (12 partitions) and ``u`` (6).

    Every bundle carries 1,000 msg/s per topic it holds, except the fullest one which carries
    ``hot_rate`` (above the default ``loadBalancerNamespaceBundleMaxMsgRate`` of 30,000).
    """
    names = B.partition_names("t", 12, namespace=NS) + B.partition_names("u", 6, namespace=NS)
    lay = B.build_layout(names, N_BUNDLES)
    bnames = lay.bundle_names()
    counts = lay.counts
    hot = int(counts.argmax())
    brokers = {b: {"cpu": 20.0, "bundles": {}} for b in BROKERS}
    for i, bn in enumerate(bnames):
        rate = hot_rate if i == hot else 1000.0 * int(counts[i])
        brokers[BROKERS[i % 3]]["bundles"][bn] = {"rate": rate, "topics": int(counts[i]), "consumers": 2,
                                                 "producers": 1}
    ld = make_snapshot(brokers)
    ld.bundle_topics = {bn: lay.topics_in(i) for i, bn in enumerate(bnames) if counts[i]}
    return ld.to_json()


def data_url(raw: bytes, mime: str = "text/plain") -> str:
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def snapshot_upload() -> str:
    return data_url(json.dumps(snapshot_json()).encode(), "application/json")


TOPICS_LIST = "\n".join(B.partition_names("orders", 30, namespace="shop/prod")
                        + ["persistent://shop/prod/audit", "# a comment", ""]) + "\n"

PARTITIONED_LIST = "persistent://shop/prod/orders\npersistent://shop/prod/payments\n"

BROKER_STATS = {
    "shop/prod": {
        "0x00000000_0x80000000": {"persistent": {
            "persistent://shop/prod/a": {"msgRateIn": 10.0, "msgRateOut": 20.0, "msgThroughputIn": 1000.0,
                                         "msgThroughputOut": 2000.0, "producerCount": 1,
                                         "subscriptions": {"s": {"consumers": [{}, {}]}}}}},
        "0x80000000_0xffffffff": {"persistent": {
            "persistent://shop/prod/b": {"msgRateIn": 5.0, "msgRateOut": 5.0, "msgThroughputIn": 100.0,
                                         "msgThroughputOut": 100.0}}},
    }
}
