"""Campaigns: cases through the engine and the oracle, decisions compared, disagreements explained or shrunk.

What is compared: for shedding, every cycle's ``(broker, bundle)`` unloads in the order Pulsar issues them;
for placement, the set of best brokers (the one Pulsar draws from at random) and the pick when that set has
a single broker; for TransferShedder, every cycle's set of unload decisions, the reason its unload counter
records for a skipped cycle and the hit count after the cycle; for the extensible placement, the candidates
after the broker filters, whether a filter failed, the best brokers and the pick when there is one. An error on
one side only is a disagreement too.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from . import engine_side, gen
from .departures import explain  # noqa: F401  (re-exported)


def decision(ans: dict, kind: str):
    """The comparable part of an answer."""
    if "error" in ans:
        return ("error",)
    if kind == "bundle":  # an error is compared as an error, whatever its text
        def norm(x):
            return "error" if isinstance(x, str) and x.startswith("error") else x
        return [[norm(x) for x in ans["lookups"]], [norm(x) for x in ans["splits"]]]
    if kind == "filters":
        return [([tuple(c) for c in s["calls"]], s["chosen"]) for s in ans["steps"]]
    if kind == "shed":
        return [[tuple(p) for p in cyc] for cyc in ans["cycles"]]
    if kind == "transfer":  # every cycle's unloads (a set in Pulsar: sorted), its counted skip, its hit count
        return [(sorted((tuple(r) for r in cyc["decisions"]), key=json.dumps), sorted(cyc["counter"].items()),
                 cyc["hitCount"])
                for cyc in ans["cycles"]]
    if kind == "extplace":  # the filtered candidates, a filter failure, the best set and a sole best's pick
        return [(tuple(s["candidates"]), s["filterError"], tuple(sorted(s["best"] or [])),
                 s["chosen"] if len(s["best"] or []) == 1 else None) for s in ans["steps"]]
    return [(tuple(sorted(s["best"] or [])), s["chosen"] if len(s["best"] or []) == 1 else None)
            for s in ans["steps"]]


def agree(case: dict, oracle_ans: dict, engine_ans: dict) -> bool:
    return decision(oracle_ans, case["kind"]) == decision(engine_ans, case["kind"])


@dataclass
class Tally:
    line: str
    strategy: str
    tried: int = 0
    agreed: int = 0
    #: departure name -> (count, smallest case seen, its oracle answer, its engine answer)
    departures: dict = field(default_factory=dict)
    #: unexplained disagreements: (case, oracle answer, engine answer), the smallest few
    unexplained: list = field(default_factory=list)
    unexplained_count: int = 0

    def add(self, case, o, e, version):
        self.tried += 1
        if agree(case, o, e):
            self.agreed += 1
            return
        name = explain(self.line, case, o, e)
        size = len(json.dumps(case))
        if name is None:
            self.unexplained_count += 1
            self.unexplained.append((size, case, o, e))
            self.unexplained.sort(key=lambda t: t[0])
            del self.unexplained[3:]
            return
        n, best, bo, be = self.departures.get(name, (0, None, None, None))
        if best is None or size < len(json.dumps(best)):
            best, bo, be = case, o, e
        self.departures[name] = (n + 1, best, bo, be)


def run(line: str, version: str, strategies, n: int, seed: int = 0, oracle=None, batch: int = 500,
        engine_version: str | None = None, progress=None) -> dict[str, Tally]:
    """``n`` cases per strategy on one line; one JVM for all of them."""
    from .jvm import Oracle

    from concurrent.futures import ThreadPoolExecutor

    own = oracle is None
    o = oracle or Oracle(version)
    out = {}
    batches = [(s, start) for s in strategies for start in range(0, n, batch)]

    def ask(item):
        s, start = item
        cases = list(gen.sample(s, min(batch, n - start), seed=seed, start=start))
        return cases, o.ask(cases)

    try:
        with ThreadPoolExecutor(1) as pool:  # the JVM answers the next batch while the engine does this one
            nxt = pool.submit(ask, batches[0]) if batches else None
            for i, (s, _) in enumerate(batches):
                cases, answers = nxt.result()
                nxt = pool.submit(ask, batches[i + 1]) if i + 1 < len(batches) else None
                t = out.setdefault(s, Tally(line, s))
                for c, a in zip(cases, answers):
                    t.add(c, a, engine_side.answer(c, engine_version), version)
                if progress:
                    progress(line, s, t)
    finally:
        if own:
            o.close()
    return out


def run_lines(lines: dict, strategies, n: int, oracles: dict, seed: int = 0, batch: int = 250,
              workers: int | None = None, counts: dict | None = None) -> dict:
    """``n`` cases per strategy on several lines at once: each case is generated and written as JSON once
    and fed to every line's JVM, while the engine decides the same batch for each line in a pool of
    ``workers`` processes (default: one per core), a few batches ahead of the tally. ``lines``: line ->
    version; ``oracles``: version -> :class:`Oracle`; ``counts``: strategy -> its own number of cases (else
    ``n``). Returns line -> strategy -> :class:`Tally` (the engine decides as each line's version)."""
    import multiprocessing
    import os
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    out = {line: {} for line in lines}
    counts = counts or {}
    batches = [(s, start) for s in strategies for start in range(0, counts.get(s, n), batch)]
    # one thread per JVM: a JVM's batches are asked one after the other, in order
    askers = {line: ThreadPoolExecutor(1) for line in lines}
    engines = ProcessPoolExecutor(workers or os.cpu_count() or 1,
                                  mp_context=multiprocessing.get_context("forkserver"))
    try:
        pending = deque()

        def start(item):
            s, first = item
            cases = list(gen.sample(s, min(batch, counts.get(s, n) - first), seed=seed, start=first))
            text = "".join(json.dumps(c, separators=(",", ":")) + "\n" for c in cases)
            pending.append((s, cases,
                            {line: askers[line].submit(oracles[v].ask, cases, text) for line, v in lines.items()},
                            engines.submit(engine_answers_lines, cases, list(lines.values()))))

        todo = iter(batches)
        for item in todo:
            start(item)
            if len(pending) >= 3:
                break
        while pending:
            s, cases, asked, decided = pending.popleft()
            nxt = next(todo, None)
            if nxt is not None:
                start(nxt)
            by_version = decided.result()
            for line, v in lines.items():
                t = out[line].setdefault(s, Tally(line, s))
                for c, a, e in zip(cases, asked[line].result(), by_version[v]):
                    t.add(c, a, e, v)
    finally:
        for a in askers.values():
            a.shutdown(wait=True)
        engines.shutdown(wait=True, cancel_futures=True)
    return out


def engine_answers_lines(cases: list, versions: list) -> dict:
    """The engine's answers to a batch of cases decided as each of ``versions`` (runs in a worker process):
    version -> answers. Each case's snapshots are read once for all the versions."""
    out: dict = {v: [] for v in versions}
    for c in cases:
        memo: dict = {}
        for v in versions:
            out[v].append(engine_side.answer(c, v, memo))
    return out


# ------------------------------------------------------------------ shrinking
def _still_fails(case, oracle, engine_version, line, departure=None) -> bool:
    """The case still disagrees: unexplained (``departure`` None), or as that listed departure."""
    o = oracle.ask([case])[0]
    e = engine_side.answer(case, engine_version)
    return not agree(case, o, e) and explain(line, case, o, e) == departure


def _candidates(case: dict):
    """Smaller variants of a case: a cycle / step less, a broker less, a bundle less, a number rounded."""
    if case["kind"] == "bundle":
        yield from _bundle_candidates(case)
        return
    if case["kind"] == "filters":
        yield from _filters_candidates(case)
        return
    if case["kind"] in ("transfer", "extplace"):
        yield from _ext_candidates(case)
        return
    key = "cycles" if case["kind"] == "shed" else "steps"
    seq = case[key]
    yield from _one_less(case, key)
    for i in range(len(seq)):
        data = seq[i] if key == "cycles" else seq[i]["data"]
        for bid in list(data["brokers"]):
            c = copy.deepcopy(case)
            for item in c[key]:
                d = item if key == "cycles" else item["data"]
                d["brokers"].pop(bid, None)
                d.get("timeAverageData", {}).pop(bid, None)
                if key == "steps":
                    item["candidates"] = [x for x in item["candidates"] if x != bid]
            yield c
        for bid, rep in data["brokers"].items():
            for b in list(rep["bundles"]):
                c = copy.deepcopy(case)
                for item in c[key]:
                    d = item if key == "cycles" else item["data"]
                    r = d["brokers"].get(bid)
                    if r and b in r["bundles"]:
                        r["bundles"].remove(b)
                        r["lastStats"].pop(b, None)
                        d["bundleData"].pop(b, None)
                yield c
    c = copy.deepcopy(case)
    dropped = False
    for item in c[key]:
        d = item if key == "cycles" else item["data"]
        owned = {b for r in d["brokers"].values() for b in r["bundles"]}
        for b in [b for b in d["bundleData"] if b not in owned]:
            del d["bundleData"][b]
            dropped = True
    if dropped:
        yield c
    if case.get("recentlyUnloadedBundles") or any((s if key == "cycles" else s["data"]).get("recentlyUnloadedBundles")
                                                   for s in seq):
        c = copy.deepcopy(case)
        for item in c[key]:
            (item if key == "cycles" else item["data"])["recentlyUnloadedBundles"] = {}
        yield c


def _filters_candidates(case: dict):
    """A placement less, a broker less (its bundles, preallocations and domain membership too), a policy less."""
    for i in range(len(case["bundles"]) - 1, -1, -1):
        if len(case["bundles"]) > 1:
            c = copy.deepcopy(case)
            del c["bundles"][i]
            yield c
    for bid in list(case["data"]["brokers"]):
        if len(case["data"]["brokers"]) < 2:
            break
        c = copy.deepcopy(case)
        d = c["data"]
        rep = d["brokers"].pop(bid)
        for b in rep["bundles"]:
            if b not in c["bundles"]:
                d["bundleData"].pop(b, None)
        d.get("timeAverageData", {}).pop(bid, None)
        d.get("preallocatedBundleData", {}).pop(bid, None)
        for dom in c["policies"].get("failureDomains", {}).values():
            dom["brokers"] = [x for x in dom["brokers"] if x != bid]
        yield c
    for part in ("namespaceIsolationPolicies", "antiAffinityGroups", "failureDomains"):
        for name in list(case["policies"].get(part, {})):
            c = copy.deepcopy(case)
            del c["policies"][part][name]
            yield c


def _one_less(case: dict, key: str):
    """The case with one of its cycles / steps left out (the last first), while it has more than one."""
    for i in range(len(case[key]) - 1, -1, -1):
        if len(case[key]) > 1:
            c = copy.deepcopy(case)
            del c[key][i]
            yield c


def _ext_candidates(case: dict):
    """A cycle / step less, a broker less (everywhere), a top bundle less, the recently unloaded maps emptied."""
    key = "cycles" if case["kind"] == "transfer" else "steps"
    seq = case[key]
    yield from _one_less(case, key)
    names = {b for item in seq for b in list(item["brokerLoadData"]) + list(item.get("available") or [])
             + list(item.get("brokerLookupData") or {})}
    for bid in sorted(names):
        c = copy.deepcopy(case)
        for item in c[key]:
            for k in ("brokerLoadData", "topBundlesLoadData", "brokerLookupData"):
                (item.get(k) or {}).pop(bid, None)
            if "available" in item:
                item["available"] = [x for x in item["available"] if x != bid]
        for k in ("recentlyUnloadedBrokers",):
            (c.get(k) or {}).pop(bid, None)
        yield c
    for i, item in enumerate(seq):
        for bid, top in (item.get("topBundlesLoadData") or {}).items():
            for j in range(len(top["topBundlesLoadData"]) - 1, -1, -1):
                c = copy.deepcopy(case)
                del c[key][i]["topBundlesLoadData"][bid]["topBundlesLoadData"][j]
                yield c
    for k in ("recentlyUnloadedBundles", "recentlyUnloadedBrokers"):
        if case.get(k):
            c = copy.deepcopy(case)
            c[k] = {}
            yield c


def _bundle_candidates(case: dict):
    """A lookup less, a split less, a split's topic less."""
    for key in ("lookups", "splits"):
        for i in range(len(case[key]) - 1, -1, -1):
            if len(case[key]) > 1:
                c = copy.deepcopy(case)
                del c[key][i]
                yield c
    for j, s in enumerate(case["splits"]):
        for i in range(len(s.get("topics") or ()) - 1, -1, -1):
            c = copy.deepcopy(case)
            t = c["splits"][j]
            del t["topics"][i]
            for k in ("msgRate", "throughput"):
                if k in t:
                    del t[k][i]
            yield c


def shrink(case: dict, oracle, line: str, engine_version: str | None = None, budget: int = 400,
           departure: str | None = None) -> dict:
    """A smaller case that still disagrees the same way (greedy: keep any smaller variant that still does)."""
    cur = case
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for c in _candidates(cur):
            tries += 1
            if tries >= budget:
                break
            if _still_fails(c, oracle, engine_version, line, departure):
                cur, changed = c, True
                break
    return cur
