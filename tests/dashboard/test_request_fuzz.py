"""The running app under hostile requests: a seeded request fuzz and 20 sessions at once.

One real server (``python app.py``: Flask's threaded server on a free 127.0.0.1 port, its own cache
directory) serves every test here. The fuzz sends a bounded number of crafted requests (about 340, seeded:
the same requests every run, well under a minute) of the kinds listed in :data:`KINDS` and asserts: no 5xx,
no traceback text in any response, no exception logged by the server while it ran (web_safety logs a
callback that raised as ``callback request failed: …`` with its traceback and answers 500 "internal error";
a callback handling junk values the careful way never gets there), and afterwards the
server still serves a session's upload made before the fuzz. The concurrency test has 20 sessions upload distinct snapshots and ask the Tuner about them at
once, each through the real callbacks over HTTP; each must see only its own data. ``test_fuzz005`` is the
same idea in process (Flask's test client): every non-background callback, every kind of junk, none raises.
"""
from __future__ import annotations

import base64
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from engine.samples import sample_json

ROOT = Path(__file__).resolve().parents[2]
SEED = 1414
KINDS = ("bad-json-body", "bad-envelope", "fuzzed-callback-values", "component-suites-path", "wrong-method",
         "huge-headers", "odd-page-url", "oversized-or-odd-body")
TRACE_MARKERS = ("Traceback (most recent call last)", 'File "/', "raise ", "site-packages")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``python app.py`` on 127.0.0.1 (the real Flask server), its log in a file; stopped at the end."""
    tmp = tmp_path_factory.mktemp("fuzz")
    port = _free_port()
    env = dict(os.environ, HOST="127.0.0.1", PORT=str(port), SHEDLAB_CACHE_DIR=str(tmp / "cache"),
               SHEDLAB_MAX_REQUEST_MB="4", DASH_DEBUG="false", PYTHONUNBUFFERED="1")
    env.pop("SHEDLAB_BASIC_AUTH_FILE", None)
    env.pop("SHEDLAB_TRUSTED_USER_HEADER", None)
    log = open(tmp / "server.log", "w+b")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            if requests.get(base + "/_dash-layout", timeout=5).status_code == 200:
                break
        except requests.RequestException:
            pass
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            log.seek(0)
            pytest.fail(f"the app did not start: {log.read()[-3000:].decode(errors='replace')}")
        time.sleep(0.3)
    deps = requests.get(base + "/_dash-dependencies", timeout=10).json()
    yield {"base": base, "deps": deps, "proc": proc, "log": tmp / "server.log"}
    log.flush()
    mark = (tmp / "server.log").stat().st_size
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the app did not stop on SIGTERM")
    log.close()
    at_exit = (tmp / "server.log").read_bytes()[mark:].decode(errors="replace")
    assert "Traceback" not in at_exit, at_exit[-2000:]  # a clean exit: nothing thrown while shutting down


# ------------------------------------------------------------------------------------------------ helpers
def _parse_id(s):
    return json.loads(s) if s.startswith("{") else s


def _outputs(dep) -> list | dict:
    """The ``outputs`` of a callback request, from the dependency's ``output`` string."""
    out = dep["output"]
    multi = out.startswith("..")
    parts = out.strip(".").split("...") if multi else [out]
    items = []
    for p in parts:
        ident, _, prop = p.rpartition(".")
        prop = prop.split("@")[0]
        i = _parse_id(ident)
        items.append([] if isinstance(i, dict) and "ALL" in json.dumps(i) else {"id": i, "property": prop})
    return items if multi else items[0]


def _item(d, value):
    i = _parse_id(d["id"])
    if isinstance(i, dict) and '"ALL"' in d["id"]:
        return []  # no component matches a wildcard
    return {"id": i, "property": d["property"], "value": value}


def callback_body(dep, values: dict, changed: str | None = None) -> dict:
    """A ``/_dash-update-component`` body as the renderer sends it; ``values`` maps ``"id.prop"`` to a value."""
    inputs = [_item(d, values.get(f"{d['id']}.{d['property']}")) for d in dep["inputs"]]
    state = [_item(d, values.get(f"{d['id']}.{d['property']}")) for d in dep["state"]]
    first = dep["inputs"][0]
    return {"output": dep["output"], "outputs": _outputs(dep), "inputs": inputs, "state": state,
            "changedPropIds": [changed or f"{first['id']}.{first['property']}"]}


def find_dep(deps, output_prefix: str, input_id: str | None = None):
    for d in deps:
        if d.get("clientside_function") is None and output_prefix in d["output"].lstrip(".")[:len(output_prefix) + 2] \
                and (input_id is None or any(i["id"] == input_id for i in d["inputs"])):
            return d
    raise AssertionError(f"no server callback for {output_prefix}")


def call(base, dep, values, changed=None, session=None):
    r = (session or requests).post(base + "/_dash-update-component", json=callback_body(dep, values, changed),
                                   timeout=60)
    return r


def upload(server, sid: str, raw: bytes, name: str):
    dep = find_dep(server["deps"], "source-picker.value", "source-upload")
    url = "data:application/json;base64," + base64.b64encode(raw).decode()
    r = call(server["base"], dep, {"source-upload.contents": [url], "source-upload.filename": [name],
                                   "session-id.data": sid})
    assert r.status_code == 200, r.text[:300]
    resp = r.json()["response"]
    return resp["source-picker"]["value"], resp["source-picker"]["options"]


def pick(server, sid: str, source_id: str):
    """The shell's source callback, as when the user picks ``source_id``: ``(source info, options)``."""
    dep = find_dep(server["deps"], "source-store.data", "source-picker")
    r = call(server["base"], dep, {"source-picker.value": source_id, "session-id.data": sid, "url.search": ""},
             changed="source-picker.value")
    assert r.status_code == 200, r.text[:300]
    resp = r.json()["response"]
    return resp["source-store"]["data"], resp["source-picker"]["options"]


def why_targets(server, info: dict) -> list[str]:
    """The Tuner's why-not target list for a source (reads the session's snapshot server-side)."""
    dep = find_dep(server["deps"], "tuner-why-target.options")
    r = call(server["base"], dep, {'{"page":"tuner","type":"page-source"}.data': info})
    assert r.status_code == 200, r.text[:300]
    return [o["value"] for o in r.json()["response"]["tuner-why-target"]["options"] if o["label"].startswith("broker")]


def snapshot_bytes(tag: str) -> bytes:
    """A modular LoadData snapshot (the ``avgshedder-pairing-6-brokers`` sample, ``LoadData`` JSON as
    ``engine.samples.sample_json`` writes it) whose broker ids carry ``tag``."""
    text = json.dumps(sample_json("avgshedder-pairing-6-brokers"))
    return text.replace("broker-", f"{tag}-broker-").encode()


# ------------------------------------------------------------------------------------------------ generator
def _junk(rng: random.Random, depth: int = 0, kind: int | None = None):
    k = kind if kind is not None else rng.randrange(9 if depth < 3 else 6)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([0, -1, 1e308, -1e308, 2**70, 3.5, True])
    if k == 2:
        return "".join(rng.choice("ab/.:%\x00\u202e<>'\"{}[]é") for _ in range(rng.randrange(1, 40)))
    if k == 3:
        return "x" * rng.choice([5000, 40_000, 300_000])
    if k == 4:
        return rng.choice(["sample:../../etc/passwd", "upload:" + "0" * 20, "upload:zz", "/etc/passwd", "../x",
                           "anon", "sample:bigo-threshold-first-unload", "history-snapshot:" + "0" * 24])
    if k == 5:
        return "data:application/json;base64," + base64.b64encode(rng.randbytes(rng.randrange(1, 200))).decode()
    if k == 6:
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if k == 7:
        return {rng.choice(["id", "src", "values", "steps", "nonce", "x"]): _junk(rng, depth + 1)
                for _ in range(rng.randrange(0, 4))}
    return "[" * 3000 + "]" * 3000


def crafted_requests(deps: list, n_callback: int = 120):
    """``(kind, method, path, kwargs)`` tuples, the same on every run (seeded)."""
    rng = random.Random(SEED)
    out = []
    upd = "/_dash-update-component"
    bodies = [b"{bad", b"", b"[]", b"null", b"1", b'"x"', b"\xff\xfe\x00", b"{" * 5000, b'{"output": ' * 2000,
              b'[' * 100_000 + b']' * 100_000, b'{"output": "x"}' + b" " * 10, b"\x00" * 1000]
    for i in range(60):
        raw = bodies[i] if i < len(bodies) else rng.randbytes(rng.randrange(1, 3000))
        ctype = rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded", None])
        out.append(("bad-json-body", "POST", upd, {"data": raw, "headers": {"Content-Type": ctype} if ctype else {}}))
    real = [d for d in deps if d.get("clientside_function") is None]
    for _ in range(40):
        d = rng.choice(real)
        body = callback_body(d, {})
        mut = rng.randrange(7)
        if mut == 0:
            body["output"] = "x" * rng.choice([10, 300_000])
        elif mut == 1:
            body["inputs"] = _junk(rng)
        elif mut == 2:
            body["outputs"] = rng.choice([None, "x", 3, [{"id": "x"}]])
        elif mut == 3:
            body["state"] = {"a": 1}
        elif mut == 4:
            body["inputs"] = [{"id": _junk(rng), "property": _junk(rng), "value": 1}]
        elif mut == 5:
            body["changedPropIds"] = _junk(rng)
        else:
            del body["outputs"]
        out.append(("bad-envelope", "POST", upd, {"json": body}))
    for i in range(n_callback):
        d = real[i % len(real)]  # every server callback in turn (each gets two or three), whichever input fired
        vals = {f"{x['id']}.{x['property']}": _junk(rng) for x in d["inputs"] + d["state"]}
        if rng.random() < 0.5:  # a well-formed session id half of the time
            vals["session-id.data"] = secrets.token_hex(16)
        fired = rng.choice(d["inputs"])
        out.append(("fuzzed-callback-values", "POST", upd,
                    {"json": callback_body(d, vals, changed=f"{fired['id']}.{fired['property']}")}))
    suites = ["dash/../../etc/passwd", "nope/x.js", "dash/dcc/", "dash/x.exe", "dash/%2e%2e/%2e%2e/etc/passwd",
              "plotly/" + "a" * 5000 + ".js", "dash/dcc/dash_core_components.v0_0_0m0.js", "", "dash",
              "dash/dcc/async-graph.js.map/..", "..%2f..%2fetc%2fpasswd", "dash/deps/react@18.3.1.min.js%00.txt"]
    for i in range(40):
        p = suites[i] if i < len(suites) else "/".join(_junk(rng).__repr__()[:30].replace("/", "") for _ in range(3))
        out.append(("component-suites-path", "GET", "/_dash-component-suites/" + p, {}))
    for _ in range(20):
        out.append(("wrong-method", rng.choice(["PUT", "DELETE", "PATCH", "GET", "OPTIONS"]),
                    rng.choice([upd, "/_dash-layout", "/_dash-dependencies", "/", "/tuner"]), {}))
    for i in range(10):
        h = {"X-Big": "a" * rng.choice([9000, 70_000, 300_000])} if i < 6 else {f"X-H{j}": "v" * 100 for j in range(200)}
        out.append(("huge-headers", "GET", "/_dash-layout", {"headers": h}))
    pages = ["/tuner?src=" + "x" * 5000, "/tuner?src=upload:" + "0" * 20, "/tuner?snapshot=../../etc/passwd",
             "/history?dataset=/root", "/tuner?src=sample:../../x&seed=1e999", "/simulator?scenario=" + "%00" * 50,
             "/bundles?" + "&".join(f"k{i}=v" for i in range(500)), "/%2e%2e/%2e%2e/etc/passwd", "/" + "a" * 8000]
    for i in range(40):
        p = pages[i] if i < len(pages) else rng.choice(["/tuner", "/history", "/simulator", "/bundles", "/"]) + \
            "?" + "&".join(f"{rng.choice(['src', 'seed', 'step', 'shed', 'place', 'snapshot', 'loadBalancerEnabled'])}="
                           f"{requests.utils.quote(str(_junk(rng))[:500])}" for _ in range(rng.randrange(1, 5)))
        out.append(("odd-page-url", "GET", p, {}))
    for i in range(10):
        if i < 3:
            out.append(("oversized-or-odd-body", "POST", upd, {"data": b"{" + b" " * (5 * 1024 * 1024) + b"}",
                                                               "headers": {"Content-Type": "application/json"}}))
        else:
            out.append(("oversized-or-odd-body", "POST", upd,
                        {"data": json.dumps(callback_body(rng.choice(real), {})).encode(),
                         "headers": {"Content-Type": rng.choice(["application/json; charset=utf-7", "multipart/form-data",
                                                                 "application/json", "text/html"]),
                                     "Content-Encoding": rng.choice(["gzip", "identity", "br"])}}))
    return out


def _send(base, kind, method, path, kw):
    try:
        r = requests.request(method, base + path, timeout=60, allow_redirects=False, **kw)
        return r.status_code, r.text
    except requests.ConnectionError:  # the server closed an over-long request line / header: not a 5xx
        return 0, ""


# ------------------------------------------------------------------------------------------------ tests
def test_fuzz001_crafted_requests_never_5xx_nor_traceback_and_state_survives(server):
    base = server["base"]
    sid = secrets.token_hex(16)
    before_id, _ = upload(server, sid, snapshot_bytes("keep"), "keep.json")
    mark = server["log"].stat().st_size
    reqs = crafted_requests(server["deps"])
    assert 300 <= len(reqs) <= 400
    codes: dict[str, Counter] = defaultdict(Counter)
    bad, raised = [], []
    t0 = time.time()
    with ThreadPoolExecutor(4) as pool:
        for (kind, method, path, _kw), (code, text) in zip(reqs, pool.map(lambda q: _send(base, *q), reqs)):
            codes[kind][code] += 1
            if code >= 500 or any(m in text for m in TRACE_MARKERS):
                bad.append((kind, method, path[:80], code, text[:200]))
            if code == 500 or "could not be processed" in text:  # a callback (or the body check) raised
                raised.append((kind, (_kw.get("json") or {}).get("output", "")[:80] if isinstance(_kw.get("json"), dict)
                               else path[:80]))
    took = time.time() - t0
    print(f"\nrequest fuzz: {len(reqs)} requests in {took:.1f} s")
    for kind in KINDS:
        print(f"  {kind:<24} {sum(codes[kind].values()):>4}  " + ", ".join(f"{c}:{n}" for c, n in sorted(codes[kind].items())))
    time.sleep(0.5)  # the server writes its log lines before answering; let the last ones land
    during = server["log"].read_bytes()[mark:].decode(errors="replace")
    failed = [line[:160] for line in during.splitlines() if line.startswith("callback request failed")]
    print(f"  callbacks that raised: {len(raised)}; exceptions logged: {len(failed)} "
          f"(tracebacks in the log: {during.count('Traceback (most recent call last)')})")
    assert not bad, bad[:5]
    # every callback the fuzz reaches validates its values: none raised (no 500, no 400 "could not be processed"),
    # and nothing in the server (callbacks, Dash, Flask) logged an exception while the fuzz ran
    assert not raised, raised[:5]
    assert not failed, failed[:5]
    assert "Traceback (most recent call last)" not in during, during[during.find("Traceback"):][:3000]
    assert took < 240
    # the server still serves what the session had before the fuzz
    info, opts = pick(server, sid, before_id)
    assert info["id"] == before_id and before_id in {o["value"] for o in opts}
    assert sorted(why_targets(server, info))[0].startswith("keep-broker-")
    assert requests.get(base + "/tuner", timeout=10).status_code == 200
    # log lines stay bounded: the 300 KB values sent above are not echoed
    longest = max((len(line) for line in server["log"].read_bytes().splitlines()), default=0)
    assert longest < 6000, longest


def test_fuzz002_twenty_sessions_upload_and_tune_at_once_and_see_only_their_own(server):
    sids = [secrets.token_hex(16) for _ in range(20)]

    def session(i):
        sid = sids[i]
        tag = f"s{i:02d}"
        src, _ = upload(server, sid, snapshot_bytes(tag), f"{tag}.json")
        info, opts = pick(server, sid, src)
        brokers = why_targets(server, info)
        uploads = [o["value"] for o in opts if not o["value"].startswith("sample:")]
        return tag, src, info, uploads, brokers

    with ThreadPoolExecutor(20) as pool:
        got = list(pool.map(session, range(20)))
    ids = [src for _, src, _, _, _ in got]
    assert len(set(ids)) == 20  # 20 distinct random ids (never a shared content hash)
    for tag, src, info, uploads, brokers in got:
        assert info["id"] == src and info["brokers"] == 6
        assert uploads == [src]  # the session's picker lists its own upload only
        assert brokers and all(b.startswith(f"{tag}-broker-") for b in brokers)
    # the same bytes uploaded by two sessions still get two ids; a malformed session id lists nothing
    a, _ = upload(server, sids[0], snapshot_bytes("same"), "same.json")
    b, _ = upload(server, sids[1], snapshot_bytes("same"), "same.json")
    assert a != b
    _, opts = pick(server, "anon", "sample:bigo-threshold-first-unload")
    assert all(o["value"].startswith("sample:") for o in opts)
    # a permalink carrying the id opens the upload for whoever has it
    info, opts = pick(server, secrets.token_hex(16), ids[3])
    assert info["id"] == ids[3]


def test_fuzz003_background_jobs_of_the_running_app_leave_no_zombie(server):
    """A background callback (the Simulator's run, here with values it refuses) forks a job; once it has
    finished, the server has reaped it without anyone fetching the result."""
    import psutil

    dep = find_dep(server["deps"], "sim-result.data")
    pids = []
    for junk in (None, "x", {"scenario": "../../etc/passwd"}):
        vals = {f"{x['id']}.{x['property']}": junk for x in dep["state"]}
        vals.update({"sim-run.n_clicks": 1, "session-id.data": secrets.token_hex(16)})
        r = call(server["base"], dep, vals, changed="sim-run.n_clicks")
        assert r.status_code < 500 and "Traceback" not in r.text
        if r.status_code == 202 or (r.headers.get("content-type", "").startswith("application/json")
                                    and "job" in r.json()):
            pids.append(int(str(r.json()["job"]).split("~")[0]))  # Dash signs it: "<pid>~<signature>"
    assert pids, "no background job started"
    parent = psutil.Process(server["proc"].pid)
    deadline = time.time() + 60
    while time.time() < deadline:
        kids = {p.pid: p for p in parent.children()}
        alive = [pid for pid in pids if pid in kids]
        try:
            zombies = [pid for pid in alive if kids[pid].status() == psutil.STATUS_ZOMBIE]
        except psutil.NoSuchProcess:
            continue
        if not alive:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"jobs still children of the server after 60 s (zombies: {zombies})")


def test_fuzz004_router_junk_pathname_is_404_and_bodies_must_match_the_callback(server):
    """Dash's pages router with a pathname that is not a path answers its 404 page (it raised
    ``UnsupportedRelativePath`` / ``AttributeError``); a real path still routes; a body whose items do not
    name the callback's inputs is a 400 naming the problem; the Tuner's step callback given junk stores
    answers like for no source (it raised ``AttributeError``)."""
    base, deps = server["base"], server["deps"]
    router = find_dep(deps, "_pages_content.children")
    for junk in ("upload:zz", 3.5, {"a": 1}, ["/tuner"], "/" + "a" * 5000):
        r = call(base, router, {"_pages_location.pathname": junk, "_pages_location.search": {"x": 1}})
        assert r.status_code == 200, (junk, r.text[:200])
        assert "404 - Page not found" in r.text
    r = call(base, router, {"_pages_location.pathname": "/tuner", "_pages_location.search": "?seed=3"})
    assert r.status_code == 200 and "404 - Page not found" not in r.text and "tuner-step" in r.text
    step = find_dep(deps, "tuner-step.max")
    body = callback_body(step, {})
    body["inputs"] = [{"id": "session-id", "property": "data", "value": 1}]
    r = requests.post(base + "/_dash-update-component", json=body, timeout=30)
    assert r.status_code == 400 and "do not match the callback" in r.text
    body["inputs"] = []
    r = requests.post(base + "/_dash-update-component", json=body, timeout=30)
    assert r.status_code == 400 and "inputs: 1 expected" in r.text
    for junk in (7, "x" * 300_000, [1, 2], {"id": {"a": 1}, "steps": "many"}, {"id": "sample:x", "steps": 2**70}):
        r = call(base, step, {'{"page":"tuner","type":"page-source"}.data': junk, "tuner-link.data": junk})
        assert r.status_code == 200, (str(junk)[:60], r.text[:200])
        assert r.json()["response"]["tuner-step-row"]["hidden"] is True  # no timeline: no slider


def _store_like(rng: random.Random):
    """Junk in the shapes of the app's own stores (a source, a Tuner base, a permalink, a run's result,
    a Tuner state, a click), so callbacks get past their first ``isinstance`` check."""
    j = lambda: _junk(rng)  # noqa: E731
    return rng.choice([
        lambda: {"id": rng.choice(["sample:bigo-threshold-first-unload", j()]), "steps": rng.choice([1, 3, j()]),
                 "warnings": j(), "label": j(), "kind": j()},
        lambda: {"values": rng.choice([{}, {"loadBalancerBrokerOverloadedThresholdPercentage": j()}, j()]),
                 "nonce": j(), "n": rng.choice([0, j()]), "messages": j()},
        lambda: {"state": rng.choice([{"src": "sample:bigo-threshold-first-unload", "step": j(), "values": j()}, j()]),
                 "errors": j()},
        lambda: {"key": j(), "error": j(), "warnings": j(), "cached": j(), "ok": j(), "params": j(), "meta": j(),
                 "job": rng.choice(["backtest", "sweep", "aggregate", j()])},
        lambda: {"src": rng.choice(["sample:bigo-threshold-first-unload", j()]), "shed": j(), "place": j(),
                 "values": j(), "seed": j(), "step": j(), "nonce": j()},
        lambda: {"points": [{"customdata": [rng.choice([0, 1, j()])], "x": j(), "y": j()}]},
    ])()


def test_fuzz005_every_callback_in_process_takes_junk_without_raising():
    """Every server callback except the background ones (they fork a job) gets 12 sets of junk values
    through Flask's test client (the app in this process, no network): one set per kind of junk (every
    value None, a number, a short odd string, a long string, a path-like id, a data URL, a list, a dict,
    deep brackets), then three in the shapes of the app's stores, each with a random input firing: no
    5xx (a callback that raised), no 400 "could not be processed" and nothing logged at ERROR (a
    callback that caught its own exception on junk)."""
    import logging

    import app as shedlab_app

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.name.split(".")[0] in ("choreographer", "kaleido"):
                return  # the figure-export browser's own chatter (a store naming a real source exports figures)
            if record.levelno >= logging.ERROR or record.exc_info:
                records.append(record.getMessage()[:200])

    client = shedlab_app.server.test_client()
    client.get("/")  # the first request registers Dash's pages router
    deps = client.get("/_dash-dependencies").get_json()
    cmap = shedlab_app.app.callback_map
    real = [d for d in deps if d.get("clientside_function") is None and not cmap[d["output"]].get("background")]
    assert len(real) >= 30
    rng = random.Random(SEED + 5)
    keep = Keep()
    logging.getLogger().addHandler(keep)
    raised, codes = [], Counter()
    try:
        for d in real:
            for kind in range(12):
                vals = {f"{x['id']}.{x['property']}": _junk(rng, kind=kind) if kind < 9 else
                        (_store_like(rng) if rng.random() < 0.6 else _junk(rng)) for x in d["inputs"] + d["state"]}
                if rng.random() < 0.5:
                    vals["session-id.data"] = secrets.token_hex(16)
                fired = rng.choice(d["inputs"])
                r = client.post("/_dash-update-component",
                                json=callback_body(d, vals, changed=f"{fired['id']}.{fired['property']}"))
                codes[r.status_code] += 1
                text = r.get_data(as_text=True)
                if r.status_code >= 500 or "could not be processed" in text or any(m in text for m in TRACE_MARKERS):
                    raised.append((d["output"][:80], r.status_code, text[:120]))
    finally:
        logging.getLogger().removeHandler(keep)
    print(f"\nin-process callback fuzz: {sum(codes.values())} requests to {len(real)} callbacks: "
          + ", ".join(f"{c}:{n}" for c, n in sorted(codes.items())))
    assert not raised, raised[:5]
    assert not records, records[:5]
