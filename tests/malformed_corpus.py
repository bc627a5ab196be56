"""A corpus of malformed command-line inputs, shared by the CLI corpus tests and
``scripts/fuzz_counts.py``.

:func:`build_corpus` writes the files under a directory and returns the :class:`Case` list: which
command line (``engine`` = ``python -m engine``, ``history`` = ``python -m dashboard.history``,
``collect`` = ``python -m dashboard.collect``), its arguments, and the environment the case runs
with (a few cases lower a limit so that the input that crosses it stays small and fast to build).
Every case is bad input: the expected answer is exit status 2 with one line on stderr, never a
traceback — except :data:`HARMLESS`, inputs that are odd but safe to run (exit 0).

Shapes of the well-formed parts (so that each case breaks exactly one thing):

* LoadData / load report JSON: ``LocalBrokerData`` as ``pulsar-admin broker-stats load-report`` prints
  it (``org.apache.pulsar.policies.data.loadbalancer.LocalBrokerData``: ``cpu``/``memory``/... as
  ``ResourceUsage {usage, limit}``, ``lastStats`` of ``NamespaceBundleStats``, ``lastUpdate`` in ms);
* ZooKeeper dump zip: the ``/loadbalance`` tree ``ModularLoadManagerImpl`` writes
  (``brokers/<id>``, ``bundle-data/<tenant>/<ns>/<range>``, ``broker-time-average/<id>``);
* Prometheus: the ``/api/v1/query_range`` answer (``{"status", "data": {"resultType": "matrix",
  "result": [{"metric", "values"}]}}``) of ``pulsar_lb_cpu_usage``;
* topic lists: ``pulsar-admin topics list`` text / a JSON array of names;
* scenarios: ``docs/scenarios.md``; Pegasus: the JSON form of :mod:`engine.pegasus.parse`.
"""
from __future__ import annotations

import io
import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Case", "build_corpus", "ROOT", "HARMLESS"]

#: labels of cases that run (exit 0): the odd part is ignored or within range
HARMLESS = {
    "shed --seed 2^70",            # any integer seeds Python's random
    "pegasus --max-rounds 1e12",   # a safety stop: the plan ends when the cluster is balanced
    "path-traversal",              # the '../' member is left out (names are never paths)
    "absolute-name",               # likewise
    "timestamp-1e23",              # History ingest drops the row and counts it (dropped_bad_timestamp)
}

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "snapshots" / "yahoo-japan-3-brokers.json"
SCENARIO = ROOT / "samples" / "scenarios" / "hot-bundle.yaml"
TOPICS = ROOT / "samples" / "topics" / "topics-list.txt"


@dataclass
class Case:
    kind: str
    label: str
    entry: str  # "engine" | "history" | "collect"
    argv: list
    env: dict = field(default_factory=dict)
    #: exit statuses that are right for this case (2: refused; 0 also for generated field mutations
    #: whose value may be legal, e.g. null meaning "the default")
    allowed: tuple = (2,)


#: values every numeric field is tried with (JSON text)
BAD_VALUES = ("1e23", "-1", "1e308", "-1e308", "0.5", "\"12\"", "\"x\"", "[]", "{}", "true", "null", "9" * 30)


def _numeric_paths(obj, path=(), seen=None, shape=()):
    """Paths of the numeric leaves of ``obj``, one per *shape* (map keys that are ids collapse), so
    that each field of each record type is tried once."""
    seen = set() if seen is None else seen
    if isinstance(obj, dict):
        for k, v in obj.items():
            sk = k if k.isidentifier() else "*"
            yield from _numeric_paths(v, path + (k,), seen, shape + (sk,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:2]):
            yield from _numeric_paths(v, path + (i,), seen, shape + ("[]",))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        if shape not in seen:
            seen.add(shape)
            yield path


def _mutate(obj, path, raw_value: str) -> str:
    """JSON text of ``obj`` with the leaf at ``path`` replaced by the JSON text ``raw_value``."""
    marker = "__SHEDLAB_MUTATION__"
    o = json.loads(json.dumps(obj))
    cur = o
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = marker
    return json.dumps(o).replace(f'"{marker}"', raw_value, 1)


def _report(bid="10.0.0.1:8080", **over):
    rep = {
        "brokerId": bid, "webServiceUrl": f"http://{bid}",
        "cpu": {"usage": 350.0, "limit": 800.0}, "memory": {"usage": 2048.0, "limit": 8192.0},
        "directMemory": {"usage": 512.0, "limit": 4096.0},
        "bandwidthIn": {"usage": 1000.0, "limit": 1250000.0}, "bandwidthOut": {"usage": 2000.0, "limit": 1250000.0},
        "msgRateIn": 100.0, "msgRateOut": 200.0, "msgThroughputIn": 1e5, "msgThroughputOut": 2e5,
        "lastUpdate": 1765000000000,
        "lastStats": {"public/default/0x00000000_0x80000000": {
            "msgRateIn": 100.0, "msgRateOut": 200.0, "msgThroughputIn": 1e5, "msgThroughputOut": 2e5,
            "consumerCount": 1, "producerCount": 1, "topics": 3, "cacheSize": 0}},
        "numTopics": 3, "numBundles": 1, "numConsumers": 1, "numProducers": 1,
        "bundles": ["public/default/0x00000000_0x80000000"],
    }
    rep.update(over)
    return rep


def _deep(n=100_000, open_="[", close="]"):
    return open_ * n + close * n


def _zip(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in members.items():
            z.writestr(name, content)
    return buf.getvalue()


def _zk_members(n_brokers=2):
    m = {}
    for i in range(n_brokers):
        bid = f"10.0.0.{i + 1}:8080"
        m[f"loadbalance/brokers/{bid}"] = json.dumps(_report(bid))
    m["loadbalance/bundle-data/public/default/0x00000000_0x80000000"] = json.dumps(
        {"shortTermData": {"maxSamples": 10, "numSamples": 1, "msgRateIn": 1.0, "msgRateOut": 1.0,
                           "msgThroughputIn": 1.0, "msgThroughputOut": 1.0},
         "longTermData": {"maxSamples": 1000, "numSamples": 1, "msgRateIn": 1.0, "msgRateOut": 1.0,
                          "msgThroughputIn": 1.0, "msgThroughputOut": 1.0}, "topics": 1})
    return m


def _patch_all(raw: bytes, sig: bytes, offset: int, fmt: str, value) -> bytes:
    """Set a field at ``offset`` of every record starting with ``sig`` (local / central headers)."""
    b = bytearray(raw)
    i = b.find(sig)
    while i >= 0:
        struct.pack_into(fmt, b, i + offset, value)
        i = b.find(sig, i + 4)
    return bytes(b)


def _encrypted(raw: bytes) -> bytes:
    # general-purpose flag bit 0 ("encrypted") in each local (offset 6) and central (offset 8) header
    b = bytearray(raw)
    for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = b.find(sig)
        while i >= 0:
            flags = struct.unpack_from("<H", b, i + off)[0]
            struct.pack_into("<H", b, i + off, flags | 1)
            i = b.find(sig, i + 4)
    return bytes(b)


def _lying_size(raw: bytes, size: int) -> bytes:
    """Every header claims ``size`` bytes uncompressed, whatever the member really holds."""
    raw = _patch_all(raw, b"PK\x03\x04", 22, "<I", size)
    return _patch_all(raw, b"PK\x01\x02", 24, "<I", size)


def _method(raw: bytes, method: int) -> bytes:
    raw = _patch_all(raw, b"PK\x03\x04", 8, "<H", method)
    return _patch_all(raw, b"PK\x01\x02", 10, "<H", method)


def build_corpus(d: Path) -> list[Case]:
    """Write the malformed inputs under ``d`` and return the cases (see the module docstring)."""
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []

    def w(name, content) -> str:
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(p)

    def snap(label, obj_or_text, name=None):
        text = obj_or_text if isinstance(obj_or_text, (str, bytes)) else json.dumps(obj_or_text)
        cases.append(Case("snapshot JSON", label, "engine", ["shed", w(name or f"snap-{label}.json", text)]))

    good = json.loads(SAMPLE.read_text())
    b0 = next(iter(good["brokers"]))
    # ---------------------------------------------------------------- snapshot JSON
    snap("deep-array", _deep())
    snap("deep-object", '{"a":' * 100_000 + "1" + "}" * 100_000)
    snap("deep-in-brokers", '{"brokers": {"b": ' + _deep(50_000) + "}}")
    snap("deep-strategy-state", '{"brokers": {}, "shedlabStrategyState": {"x": ' + _deep(5_000) + "}}")
    for fld, val in (("lastUpdate", "1e23"), ("lastUpdate", "-1"), ("lastUpdate", "1e400"),
                     ("lastUpdate", "NaN"), ("lastUpdate", "Infinity"), ("msgRateIn", "1e400"),
                     ("msgRateIn", "-Infinity"), ("numTopics", "1e30"), ("numBundles", "9" * 5000),
                     ("startTimestamp", "1e300"), ("lastUpdate", '"soon"'), ("cpu", "[]")):
        text = json.dumps(_report(), indent=1).replace(f'"{fld}": ', f'"{fld}": {val}, "x{fld}": ', 1)
        if f'"{fld}"' not in text:
            text = text.replace('"brokerId"', f'"{fld}": {val}, "brokerId"', 1)
        snap(f"{fld}={val[:12]}", text)
    bad_now = dict(good, now=1e23)
    snap("now=1e23", bad_now)
    bad_ru = dict(good, recentlyUnloadedBundles={"public/default/0x00000000_0x20000000": 1e23})
    snap("recentlyUnloaded=1e23", bad_ru)
    bad_stats = json.loads(json.dumps(good))
    bad_stats["brokers"][b0]["lastStats"][next(iter(bad_stats["brokers"][b0]["lastStats"]))]["topics"] = 1e25
    snap("bundle-topics=1e25", bad_stats)
    snap("not-utf8", b"\xff\xfe\x00{" + b"\x80" * 100)
    snap("empty", "")
    snap("truncated", SAMPLE.read_text()[: len(SAMPLE.read_text()) // 2])
    snap("list-of-numbers", "[1, 2, 3]")
    snap("huge-int-literal", '{"brokers": {}, "now": ' + "9" * 10_000 + "}")
    ext = json.loads((ROOT / "samples" / "extensible" / "transfer-shedder-5-brokers.json").read_text())
    eb = next(iter(ext["brokerLoadData"]))
    ext_bad = json.loads(json.dumps(ext))
    ext_bad["brokerLoadData"][eb]["updatedAt"] = 1e23
    snap("extensible-updatedAt=1e23", ext_bad)
    ext_bad2 = dict(ext, recentlyUnloadedBundles={"x/y/0x00000000_0xffffffff": 1e23})
    snap("extensible-recentlyUnloaded=1e23", ext_bad2)

    # ---------------------------------------------------------------- device files / streams
    for sub in ("shed", "replay", "pegasus"):
        cases.append(Case("device file", f"{sub} /dev/zero", "engine", [sub, "/dev/zero"],
                          env={"SHEDLAB_MAX_INPUT_MB": "1"}))
    cases.append(Case("device file", "simulate /dev/zero", "engine", ["simulate", "/dev/zero"],
                      env={"SHEDLAB_MAX_INPUT_MB": "1"}))
    cases.append(Case("device file", "bundles /dev/zero", "engine", ["bundles", "/dev/zero"],
                      env={"SHEDLAB_MAX_INPUT_MB": "1"}))
    cases.append(Case("device file", "--conf /dev/zero", "engine", ["shed", str(SAMPLE), "--conf", "/dev/zero"],
                      env={"SHEDLAB_MAX_INPUT_MB": "1"}))
    cases.append(Case("device file", "shed /dev/urandom", "engine", ["shed", "/dev/urandom"],
                      env={"SHEDLAB_MAX_INPUT_MB": "1"}))
    cases.append(Case("device file", "history ingest /dev/zero", "history",
                      ["ingest", "/dev/zero", "--format", "prometheus", "--out", str(d / "ds-zero")],
                      env={"SHEDLAB_MAX_INPUT_MB": "1"}))

    # ---------------------------------------------------------------- timelines
    def tl(label, text):
        cases.append(Case("timeline", label, "engine", ["replay", w(f"tl-{label}.json", text)]))

    tl("deep-list", _deep())
    tl("deep-in-snapshots", '{"snapshots": ' + _deep(60_000) + "}")
    tl("jsonl-deep-line", json.dumps(good) + "\n" + _deep(50_000) + "\n")
    tl("jsonl-1e23", json.dumps(good) + "\n" + json.dumps(dict(good, now=1e23)) + "\n")
    tl("jsonl-nan", json.dumps(good) + "\n" + '{"brokers": {}, "now": NaN}\n')
    tl("empty-list", "[]")
    tl("list-of-strings", '["a", "b"]')
    tl("jsonl-garbage", json.dumps(good) + "\n{not json\n")

    # ---------------------------------------------------------------- zips
    def zp(label, raw, env=None):
        cases.append(Case("zip", label, "engine", ["shed", w(f"zip-{label}.zip", raw)], env=env or {}))

    zk = _zip(_zk_members())
    reports = _zip({f"r{i}.json": json.dumps(_report(f"10.0.0.{i}:8080")) for i in range(1, 3)})
    zp("corrupt", b"PK\x03\x04" + bytes(range(256)) * 8)
    zp("truncated", zk[: len(zk) // 2])
    zp("encrypted-zk", _encrypted(zk))
    zp("encrypted-reports", _encrypted(reports))
    zp("lying-header-small", _lying_size(zk, 5))
    zp("lying-header-huge", _lying_size(reports, 0xFFFFFFF0))
    zp("unknown-method", _method(zk, 99))
    zp("corrupt-deflate", zk.replace(b'"cpu"', b'"cpu"', 1)[:40] + b"\x00" * 200 + zk[240:])
    zp("too-many-members", _zip({f"loadbalance/brokers/b{i}": "" for i in range(300)}),
       env={"SHEDLAB_MAX_ZIP_MEMBERS": "100"})
    bomb = _zip({"loadbalance/brokers/b1": b" " * (3 << 20)})
    zp("expands-too-far", bomb, env={"SHEDLAB_MAX_INPUT_MB": "1"})
    zp("path-traversal", _zip(dict(_zk_members(), **{"../../etc/evil": "x"})))
    zp("absolute-name", _zip(dict(_zk_members(), **{"/etc/evil": "x"})))
    zp("deep-json-member", _zip({"loadbalance/brokers/b1": _deep(50_000)}))
    zp("deep-json-report", _zip({"r.json": _deep(50_000)}))
    zp("report-1e23", _zip({"r.json": json.dumps(_report(lastUpdate=1e23))}))
    zp("empty-zip", _zip({}))
    zp("not-a-dump", _zip({"readme.txt": "hello"}))
    cases.append(Case("zip", "timeline-dir-with-bad-zip", "engine",
                      ["replay", str(Path(w("tl-dir/a.zip", _encrypted(zk))).parent)]))

    # ---------------------------------------------------------------- topic lists
    def tp(label, text, env=None, extra=()):
        cases.append(Case("topic list", label, "engine", ["bundles", w(f"topics-{label}.txt", text), *extra],
                          env=env or {}))

    tp("deep-json", _deep())
    tp("deep-broker-stats", '{"a/b": ' + '{"x": ' * 50_000 + "1" + "}" * 50_000 + "}")
    tp("json-nan", '["a/b/c", NaN]')
    tp("broker-stats-1e400", json.dumps({"public/default": {"0x00000000_0xffffffff": {"persistent": {
        "persistent://public/default/t": {"msgRateIn": 1.0}}}}}).replace("1.0", "1e400"))
    tp("binary", bytes(range(256)))
    cases.append(Case("topic list", "gen 10M topics --json", "engine",
                      ["bundles", "gen:persistent://a/b/t:10000000", "--json"]))
    cases.append(Case("topic list", "gen 1M topics over a lowered limit", "engine",
                      ["bundles", "gen:persistent://a/b/t:1000000"], env={"SHEDLAB_MAX_RUN_MB": "64"}))
    tp("many-lines-over-limit", "\n".join(f"persistent://a/b/t{i}" for i in range(200_000)),
       env={"SHEDLAB_MAX_RUN_MB": "16"})
    cases.append(Case("topic list", "--bundles 2^40", "engine", ["bundles", str(TOPICS), "--bundles", str(1 << 40)]))
    cases.append(Case("topic list", "--partitions-of huge", "engine",
                      ["bundles", w("topics-base.txt", "persistent://a/b/t\n"), "--partitions-of",
                       "persistent://a/b/t=1000000000"]))

    # ---------------------------------------------------------------- scenarios
    def sc(label, text, suffix=".yaml", extra=(), env=None):
        cases.append(Case("scenario", label, "engine", ["simulate", w(f"sc-{label}{suffix}", text), *extra],
                          env=env or {}))

    base = SCENARIO.read_text()
    sc("deep-yaml-flow", "name: x\nminutes: 5\nbrokers: " + _deep(20_000))
    sc("deep-yaml-block", "name: x\nminutes: 5\nnotes:\n" + "".join("  " * i + "- \n" for i in range(3000)))
    sc("deep-json", _deep(), suffix=".json")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8))
    sc("billion-laughs", laughs + "name: x\nminutes: 5\n")
    sc("billion-laughs-in-notes", "name: x\nminutes: 5\nnotes:\n  " + laughs.rstrip("\n").replace("\n", "\n  ") + "\n")
    sc("minutes-1e23", base.replace("minutes: 60", "minutes: 1e23"))
    sc("minutes-nan", base.replace("minutes: 60", "minutes: .nan"))
    sc("rate-inf", base.replace("rate: 120000", "rate: .inf"))
    sc("rate-1e300", base.replace("rate: 120000", "rate: 1e300"))
    sc("oversized", base.replace("count: 6", "count: 10000").replace("bundles: 16", "bundles: 65536")
       .replace("minutes: 60", "minutes: 525600"))
    sc("many-namespaces", base.replace(
        "namespaces:\n  - {name: shop/orders, bundles: 16, owners: round_robin}",
        "namespaces:\n  - {name: shop/orders, bundles: 16, owners: round_robin}\n"
        + "".join(f"  - {{name: t/n{i}, bundles: 65536}}\n" for i in range(200))))
    sc("format-width", base.replace('"broker-{i}.example:8080"', '"{i:>999999999}"'))
    sc("format-attr", base.replace('"broker-{i}.example:8080"', '"{i.__class__.__mro__}"'))
    sc("not-utf8", b"name: \xff\xfe\n")
    sc("yaml-python-tag", "name: !!python/object/apply:os.system ['true']\nminutes: 5\n")
    sc("many-workload-topics", base.replace("topics: 240", "topics: 100000000"))
    cases.append(Case("options", "simulate --minutes 1e9", "engine", ["simulate", str(SCENARIO), "--minutes", "1000000000"]))
    cases.append(Case("options", "simulate --minutes 1e9 (float text)", "engine",
                      ["simulate", str(SCENARIO), "--minutes", "1e9"]))

    # ---------------------------------------------------------------- other options
    cases.append(Case("options", "shed --cycles 1e9", "engine", ["shed", str(SAMPLE), "--cycles", "1000000000"]))
    cases.append(Case("options", "shed --cycles -5", "engine", ["shed", str(SAMPLE), "--cycles", "-5"]))
    cases.append(Case("options", "shed --seed 2^70", "engine", ["shed", str(SAMPLE), "--seed", str(1 << 70)]))
    cases.append(Case("options", "simulate --seed -1", "engine", ["simulate", str(SCENARIO), "--seed", "-1",
                                                                  "--minutes", "2"]))
    cases.append(Case("options", "simulate --out into a file", "engine",
                      ["simulate", str(SCENARIO), "--minutes", "2", "--out", w("a-file", "x") + "/sub"]))
    cases.append(Case("options", "simulate --out /proc", "engine",
                      ["simulate", str(SCENARIO), "--minutes", "2", "--out", "/proc/shedlab-out"]))
    cases.append(Case("options", "simulate --out unwritable", "engine",
                      ["simulate", str(SCENARIO), "--minutes", "2", "--out", "/sys/shedlab-out"]))
    cases.append(Case("options", "--set huge value", "engine",
                      ["shed", str(SAMPLE), "--set", "loadBalancerBrokerOverloadedThresholdPercentage=1e400"]))
    cases.append(Case("options", "--set nan", "engine",
                      ["shed", str(SAMPLE), "--set", "loadBalancerBrokerThresholdShedderPercentage=nan"]))
    cases.append(Case("options", "pegasus --max-rounds 1e12", "engine",
                      ["pegasus", str(ROOT / "samples" / "pegasus" / "unbalanced.txt"), "--max-rounds",
                       str(10 ** 12)]))
    cases.append(Case("options", "pegasus --op-count-per-round -1", "engine",
                      ["pegasus", str(ROOT / "samples" / "pegasus" / "unbalanced.txt"), "--op-count-per-round", "-1"]))

    # ---------------------------------------------------------------- broker.conf
    cases.append(Case("broker.conf", "binary", "engine", ["shed", str(SAMPLE), "--conf", w("bin.conf", bytes(range(256)))]))
    cases.append(Case("broker.conf", "nan threshold", "engine",
                      ["shed", str(SAMPLE), "--conf", w("nan.conf", "loadBalancerBrokerOverloadedThresholdPercentage=NaN\n")]))

    # ---------------------------------------------------------------- Pegasus
    def pg(label, text):
        cases.append(Case("pegasus", label, "engine", ["pegasus", w(f"pegasus-{label}.json", text)]))

    pg("deep-json", _deep())
    pg("deep-object", '{"format": "shedlab-pegasus/1", "nodes": ' + _deep(50_000) + "}")
    pg("now-1e23", json.dumps({"format": "shedlab-pegasus/1", "now_ms": 1e23, "nodes": [], "tables": []}))
    pg("binary", bytes(range(256)) * 4)

    # ---------------------------------------------------------------- Prometheus (history ingest)
    def pr(label, text, fmt="auto"):
        cases.append(Case("prometheus", label, "history",
                          ["ingest", w(f"prom-{label}.json", text), "--out", str(d / f"ds-{label}"),
                           "--format", fmt]))

    prom = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "pulsar_lb_cpu_usage", "broker": "10.0.0.1", "cluster": "c"},
         "values": [[1767571200, "12.5"], [1767571260, "13.0"]]}]}}
    pr("deep-json", _deep())
    pr("deep-in-result", '{"status": "success", "data": {"resultType": "matrix", "result": ' + _deep(50_000) + "}}",
       fmt="prometheus")
    pr("deep-vmexport-line", _deep(50_000) + "\n", fmt="vmexport")
    pr("timestamp-1e23", json.dumps(prom).replace("1767571200", "1e23"), fmt="prometheus")
    pr("value-nan-literal", json.dumps(prom).replace('"12.5"', "NaN"), fmt="prometheus")
    pr("binary", bytes(range(256)) * 8, fmt="prometheus")

    # ---------------------------------------------------------------- history options
    def hist(label, argv):
        cases.append(Case("history options", label, "history", argv))

    hist("generate --brokers huge", ["generate", "--out", str(d / "gen-a"), "--brokers", "100000",
                                     "--bundles-per-broker", "1000"])
    hist("generate --days 0", ["generate", "--out", str(d / "gen-b"), "--days", "0"])
    hist("generate --simulator --minutes 1e8", ["generate", "--out", str(d / "gen-c"), "--simulator", str(SCENARIO),
                                                "--minutes", "100000000"])
    hist("ingest --max-gap -1", ["ingest", str(TOPICS), "--out", str(d / "ds-gap"), "--max-gap", "-1"])
    hist("ingest --broker-map deep YAML", ["ingest", w("prom-ok.json", json.dumps(prom)), "--out", str(d / "ds-map"),
                                           "--broker-map", w("map-deep.yaml", "a: " + _deep(5_000))])
    hist("ingest --broker-map billion laughs", ["ingest", w("prom-ok2.json", json.dumps(prom)), "--out",
                                                str(d / "ds-map2"), "--broker-map", w("map-laughs.yaml", laughs)])
    hist("aggregate --top 0", ["aggregate", "sample", "--top", "0", "--engine", "pandas"])
    hist("sweep --x with nan", ["sweep", "sample", "--x", "a=1,nan", "--y", "b=1", "--engine", "pandas"])
    hist("sweep --groups -1", ["sweep", "sample", "--x", "a=1", "--y", "b=1", "--groups", "-1"])
    hist("unknown option", ["ingest", "--bogus"])

    # ---------------------------------------------------------------- collector options (no network:
    # every case is refused before a connection; 127.0.0.1:9 is the discard port)
    def coll(label, argv, env=None):
        cases.append(Case("collect options", label, "collect", argv, env=env or {}))

    out = str(d / "collected.json")
    coll("no admin url", ["--out", out])
    coll("admin url not a URL", ["--admin-url", "not a url", "--out", out])
    coll("--count 0", ["--admin-url", "http://127.0.0.1:9", "--count", "0", "--out", out])
    coll("--client-conf /dev/zero", ["--client-conf", "/dev/zero", "--out", out], env={"SHEDLAB_MAX_INPUT_MB": "1"})
    coll("--client-conf binary", ["--client-conf", w("client-bin.conf", bytes(range(256))), "--out", out])
    coll("--parallel -1", ["--admin-url", "http://127.0.0.1:9", "--parallel", "-1", "--out", out])
    coll("--every abc", ["--admin-url", "http://127.0.0.1:9", "--every", "abc", "--count", "2", "--out", out])
    coll("--token-file missing", ["--admin-url", "http://127.0.0.1:9", "--token-file", str(d / "nope"), "--out", out])
    coll("--retries 1e8", ["--admin-url", "http://127.0.0.1:9", "--retries", "100000000", "--out", out])
    coll("unknown option", ["--bogus"])

    # ---------------------------------------------------------------- every numeric field x BAD_VALUES
    def fields(kind, sub, obj, suffix=".json", extra=()):
        for path in _numeric_paths(obj):
            for val in BAD_VALUES:
                label = val[:12] + " at " + ".".join(map(str, path))[-60:]
                name = f"fld-{kind.replace(' ', '_')}-{len(cases)}{suffix}"
                cases.append(Case(f"{kind} fields", label, "engine", [sub, w(name, _mutate(obj, path, val)), *extra],
                                  allowed=(0, 2)))

    fields("snapshot", "shed", good)
    fields("load report", "shed", _report())
    fields("extensible", "shed", ext)
    fields("scenario", "simulate", __import__("yaml").safe_load(base), extra=("--minutes", "2"))
    fields("pegasus", "pegasus", json.loads((ROOT / "samples" / "pegasus" / "dead-node-two-disks.json").read_text()))
    fields("broker-stats topics", "bundles", json.loads((ROOT / "samples" / "topics" / "broker-stats-topics.json")
                                                         .read_text()))
    return cases
