"""A shared deployment is safe by default: private cache directories, reaped background jobs,
bounded logs, sessions and upload ids, History datasets by name only, result eviction, optional login."""
from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard import sources
from dashboard.cache import UnsafeDirectory, private_dir
from engine.errors import InputError
from engine.samples import sample_json
from tests.dashboard.conftest import data_url

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------ directories
def test_sec001_private_dir_created_0700_tightened_or_refused(tmp_path):
    d = private_dir(tmp_path / "a" / "cache")
    assert oct(d.stat().st_mode & 0o777) == "0o700"
    open_ = tmp_path / "readable"
    open_.mkdir(mode=0o755)
    os.chmod(open_, 0o755)
    assert private_dir(open_).stat().st_mode & 0o777 == 0o700  # ours, readable by others: tightened
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UnsafeDirectory, match="writable by other users"):
        private_dir(shared)
    os.chmod(shared, 0o1777)  # sticky /tmp-like: still writable by others
    with pytest.raises(UnsafeDirectory):
        private_dir(shared)
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(UnsafeDirectory, match="symbolic link"):
        private_dir(link)


def test_sec002_app_refuses_to_start_on_a_cache_dir_others_may_write(tmp_path):
    shared = tmp_path / "cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    env = dict(os.environ, SHEDLAB_CACHE_DIR=str(shared))
    r = subprocess.run([sys.executable, "-c", "import app"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    assert "writable by other users" in r.stderr and "chmod 700" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (shared / "data").exists()  # nothing written into it


def test_sec003_cache_and_results_dirs_are_0700(tmp_path, monkeypatch):
    monkeypatch.setenv("SHEDLAB_CACHE_DIR", str(tmp_path / "c"))
    from dashboard.cache import cache_dir
    from dashboard.history.jobs import results_root

    assert cache_dir().stat().st_mode & 0o777 == 0o700
    assert results_root().stat().st_mode & 0o777 == 0o700


# ------------------------------------------------------------------------------------------ background jobs
def _job(_key, _progress_key, _args, _context):
    pass


def _zombie(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_sec004_finished_background_jobs_are_reaped(tmp_path):
    import diskcache
    from dash import DiskcacheManager

    from dashboard.cache import ReapingDiskcacheManager

    with diskcache.Cache(str(tmp_path / "jobs")) as c:
        pid = ReapingDiskcacheManager(c).call_job_fn("k", _job, [], {})
        deadline = time.time() + 20
        while time.time() < deadline:
            import psutil

            try:  # (the reaper may take the process between two of these reads: then it is gone)
                if not psutil.pid_exists(pid) or not _zombie(pid) and psutil.Process(pid).status() != "running":
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        assert not _zombie(pid)
        # Dash's own manager leaves the finished job a zombie until something waits for it
        pid2 = DiskcacheManager(c).call_job_fn("k2", _job, [], {})
        deadline = time.time() + 20
        while not _zombie(pid2) and time.time() < deadline:
            time.sleep(0.05)
        assert _zombie(pid2)
        os.waitpid(pid2, 0)


def _sleeper(key, progress_key, args, context):
    time.sleep(30)


def test_sec004b_a_reaped_jobs_pid_is_never_signalled(tmp_path):
    """Dash calls terminate_job with the pid of finished jobs; once reaped, that pid may be another
    process's: only a running job of ours is signalled, and Cancel still stops one."""
    import subprocess
    import sys

    import diskcache

    from dashboard.cache import ReapingDiskcacheManager

    with diskcache.Cache(str(tmp_path / "jobs")) as c:
        m = ReapingDiskcacheManager(c)
        pid = m.call_job_fn("k", _job, [], {})
        deadline = time.time() + 20
        while m.job_running(pid) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        assert not m.job_running(pid)
        # a process that is not one of our jobs (as a reused pid would be) is left alone
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            m.terminate_job(other.pid)
            m.terminate_job(pid)
            time.sleep(0.3)
            assert other.poll() is None
        finally:
            other.kill()
            other.wait()
        # a running job of ours is still cancelled
        pid3 = m.call_job_fn("k3", _sleeper, [], {})
        assert m.job_running(pid3)
        m.terminate_job(pid3)
        deadline = time.time() + 20
        while m.job_running(pid3) and time.time() < deadline:
            time.sleep(0.05)
        assert not m.job_running(pid3)


def test_sec004c_replaced_jobs_never_inherit_a_lock_and_always_finish(tmp_path):
    """Pressing Run while a job runs replaces it (Dash's ``oldJob``: the running job is terminated, a
    new one starts) while other threads of the server use SQLite (requests, the reaping, results being
    deleted). A job forked from that server could copy a lock one of them held and wait on it for good
    (7 of 20 kept jobs never answered here with a plain fork); every job that is not replaced must
    write its result."""
    import threading

    import diskcache

    from dashboard.cache import ReapingDiskcacheManager
    from tests.dashboard.jobfns import echo

    with diskcache.Cache(str(tmp_path / "jobs")) as c:
        m = ReapingDiskcacheManager(c)
        job_fn = m.make_job_fn(echo, False)
        stop = threading.Event()

        def churn(k):  # other server threads, using the same SQLite cache all the time
            i = 0
            while not stop.is_set():
                c.set(f"churn{k}:{i % 50}", b"x" * 2000)
                c.delete(f"churn{k}:{(i + 25) % 50}")
                i += 1

        threads = [threading.Thread(target=churn, args=(k,), daemon=True) for k in range(3)]
        for t in threads:
            t.start()
        kept, replaced, running = [], [], None
        try:
            for i in range(40):
                if running is not None:
                    m.terminate_job(running)  # the replacement: the running job is stopped
                pid = m.call_job_fn(f"res{i}", job_fn, [i], {})
                if i % 2:
                    kept.append(i)
                    running = None
                else:
                    replaced.append(pid)
                    running = pid
            deadline = time.time() + 120
            missing = set(kept)
            while missing and time.time() < deadline:
                missing = {i for i in missing if c.get(f"res{i}") is None}
                time.sleep(0.1)
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not missing, f"{len(missing)} of {len(kept)} jobs never wrote their result: {sorted(missing)}"
        assert all(c.get(f"res{i}") == {"v": i} for i in kept)
        assert not any(m.job_running(pid) for pid in replaced)


# ------------------------------------------------------------------------------------------ logs
def test_sec005_log_records_are_bounded():
    from dashboard.web_safety import LOG_MAX_CHARS, bound_log_records

    bound_log_records()
    buf = io.StringIO()
    h = logging.StreamHandler(buf)
    lg = logging.getLogger("shedlab.test.bounded")
    lg.addHandler(h)
    lg.propagate = False
    try:
        lg.warning("source %s unreadable", "x" * 300_000)
        try:
            raise KeyError("y" * 300_000)
        except KeyError:
            lg.exception("failed on %r", "z" * 300_000)
    finally:
        lg.removeHandler(h)
    text = buf.getvalue()
    assert len(text) < 12 * LOG_MAX_CHARS
    assert max(len(line) for line in text.splitlines()) <= LOG_MAX_CHARS + 40
    assert "(300,018 chars)" in text and "KeyError" in text and "(300,012 chars)" in text


# ------------------------------------------------------------------------------------------ sessions, uploads
def _snap(tag: str) -> bytes:
    return json.dumps(sample_json("avgshedder-pairing-6-brokers")).replace("broker-", f"{tag}-broker-").encode()


def test_sec006_malformed_session_ids_share_nothing_and_upload_ids_are_random():
    assert sources.session_key("anon") is None and sources.session_key("A" * 32) is None
    assert sources.session_key(None) is None and sources.session_key("0" * 300_000) is None
    got = sources.ingest_files("not-a-session", [data_url(_snap("m1"))], ["a.json"])
    up = got.sources[0]["id"]
    for other in ("not-a-session", "anon", None, "x" * 5000):
        assert up not in {o["value"] for o in sources.source_options(other)}
    # the same bytes in two sessions: two different ids, neither derived from the content
    import hashlib
    import secrets

    s1, s2 = secrets.token_hex(16), secrets.token_hex(16)
    a = sources.ingest_files(s1, [data_url(_snap("m2"))], ["a.json"]).sources[0]["id"]
    b = sources.ingest_files(s2, [data_url(_snap("m2"))], ["a.json"]).sources[0]["id"]
    assert a != b and a.split(":")[1] not in hashlib.sha256(_snap("m2")).hexdigest()
    assert a in {o["value"] for o in sources.source_options(s1)} and a not in {o["value"] for o in sources.source_options(s2)}
    assert sources.source_info(a)["brokers"] == 6  # whoever has the id (a permalink) opens it


def test_sec006b_only_exactly_32_hex_digits_are_a_session():
    """A session id with anything around its 32 hex digits (a trailing newline, which ``$`` lets
    through) is no session: it gets no session list and its Simulator results are "anon"'s."""
    import secrets

    from dashboard.simulator.runs import check_key, session_of

    sid = secrets.token_hex(16)
    assert sources.session_key(sid) == sid and session_of(sid) == sid
    for odd in (sid + "\n", "\n" + sid, sid + "\r\n", sid + " ", " " + sid, sid + "\x00", sid + "0"):
        assert sources.session_key(odd) is None, repr(odd)
        assert session_of(odd) == "anon", repr(odd)
    up = sources.ingest_files(sid + "\n", [data_url(_snap("nl"))], ["a.json"]).sources[0]["id"]
    assert up not in {o["value"] for o in sources.source_options(sid)}  # not filed under the real session
    assert up not in {o["value"] for o in sources.source_options(sid + "\n")}
    key = f"simres:{sid}:{'a' * 24}"
    check_key(key, sid, "res")
    for odd_key in (key + "\n", "x" + key):
        with pytest.raises(InputError):
            check_key(odd_key, sid, "res")


def test_sec007_session_store_is_server_made_and_unguessable():
    import app
    from dashboard import ids

    def find(c):
        if getattr(c, "id", None) == ids.SESSION:
            return c
        for ch in (getattr(c, "children", None) or []) if isinstance(getattr(c, "children", None), list) else []:
            got = find(ch)
            if got is not None:
                return got
        return None

    a, b = find(app.app.layout()), find(app.app.layout())
    assert a.storage_type == "session" and sources.session_key(a.data) == a.data and a.data != b.data


# ------------------------------------------------------------------------------------------ History datasets
@pytest.fixture
def roots(tmp_path, monkeypatch):
    from dashboard.history.generate import generate

    root = tmp_path / "root"
    outside = tmp_path / "outside"
    generate(root / "team-ds", brokers=3, days=1, seed=1, bundles_per_broker=2)
    generate(outside / "secret", brokers=3, days=1, seed=2, bundles_per_broker=2)
    (root / "escape").symlink_to(outside / "secret")
    monkeypatch.setenv("SHEDLAB_HISTORY_ROOTS", str(root))
    return root, outside


def test_sec008_history_datasets_by_name_only(roots):
    from dashboard.history import service as S
    from dashboard.history.dataset import dataset_by_name, list_datasets

    root, outside = roots
    assert dataset_by_name("team-ds") == (root / "team-ds").resolve()
    assert dataset_by_name(str(root / "team-ds")) == (root / "team-ds").resolve()  # as older pages stored it
    names = {d["id"] for d in list_datasets()}
    assert "team-ds" in names and "escape" not in names and "secret" not in names
    values = {o["value"] for o in S.dataset_options()}
    assert "team-ds" in values and "sample" in values and not any("/" in v for v in values)
    messages = set()
    for bad in ("/root", "/nonexistent", str(outside / "secret"), "escape", "../outside/secret", ".hidden",
                "team-ds/../../outside/secret", "x" * 5000, "", None, 3, ["team-ds"], "team ds", "team-ds\x00"):
        with pytest.raises(InputError) as e:
            dataset_by_name(bad)
        messages.add(str(e.value))
    assert len(messages) == 1  # the same words whether a path exists or not


def test_sec009_history_page_callbacks_refuse_paths(roots):
    from callbacks import history as cb

    root, outside = roots
    for bad in ("/root", "/nonexistent", "x" * 5000, str(outside / "secret")):
        out = cb.dataset_changed(bad)
        assert out[0] is None and "unknown dataset" in json.dumps(out[-1].to_plotly_json(), default=str)
    assert cb.dataset_changed("team-ds")[0] is not None
    from dashboard.history import service as S

    assert S.job_result({"ok": True, "dataset": str(outside / "secret"), "job": "aggregate", "params": {}}) is None
    assert S.job_result({"ok": True, "dataset": "team-ds", "job": 3, "params": "x"}) is None


def test_sec010_results_go_to_the_cache_dir_with_a_cap(roots, tmp_path, monkeypatch):
    import dashboard.cache as C

    monkeypatch.setenv("SHEDLAB_CACHE_DIR", str(tmp_path / "cache"))
    # the process's cache and job manager are made on first use: whatever this test makes under its
    # own cache dir is put back afterwards, so later tests (the browser tests' Cancel) use the suite's
    for name in ("_cache", "_cache_pid", "_manager"):
        monkeypatch.setattr(C, name, getattr(C, name))
    from dashboard.history import jobs as J

    root, _ = roots
    ds = root / "team-ds"
    for i in range(3):
        J.run_job("aggregate", ds, {"weights": [1, 0, 1, 1], "top_n": 5 + i}, engine="pandas", write=True)
        time.sleep(0.05)
    assert not (ds / "_results").exists()
    dirs = sorted(J.results_root().iterdir(), key=lambda d: d.stat().st_mtime)
    assert len(dirs) == 3 and all(d.stat().st_mode & 0o777 == 0o700 for d in dirs)
    newest = dirs[-1]
    assert J.evict_results(keep=newest, limit=1) == 2
    assert list(J.results_root().iterdir()) == [newest]


# ------------------------------------------------------------------------------------------ login
def _tiny_app():
    from dash import Dash, Input, Output, html

    app = Dash(__name__)
    app.layout = html.Div([html.Button(id="b"), html.Div(id="o")])

    @app.callback(Output("o", "children"), Input("b", "n_clicks"))
    def _cb(n):
        return str(n)

    return app


def test_sec011_basic_auth_from_a_file(tmp_path, monkeypatch):
    from werkzeug.security import generate_password_hash

    from dashboard.web_safety import harden

    f = tmp_path / "users"
    f.write_text("# team\nalice:" + generate_password_hash("s3cret") + "\n")
    os.chmod(f, 0o600)
    monkeypatch.setenv("SHEDLAB_BASIC_AUTH_FILE", str(f))
    app = _tiny_app()
    harden(app)
    c = app.server.test_client()

    def auth(v):
        return {"Authorization": v}

    good = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert c.get("/").status_code == 401
    assert c.get("/", headers=auth("Basic " + base64.b64encode(b"alice:nope").decode())).status_code == 401
    assert c.get("/", headers=auth("Basic " + base64.b64encode(b"bob:s3cret").decode())).status_code == 401
    for junk in ("Bearer x", "Basic", "Basic !!!", "Basic " + base64.b64encode(b"\xff\xfe").decode(),
                 "Basic " + "A" * 5000):
        assert c.get("/", headers=auth(junk)).status_code == 401  # never a 500
    assert c.get("/", headers=auth(good)).status_code == 200
    body = {"output": "o.children", "outputs": {"id": "o", "property": "children"},
            "inputs": [{"id": "b", "property": "n_clicks", "value": 1}], "changedPropIds": ["b.n_clicks"]}
    assert c.post("/_dash-update-component", json=body).status_code == 401
    for junk in (b"{bad", b"[]", b"null"):  # dash-auth reads the body before the login: still never a 5xx
        assert c.post("/_dash-update-component", data=junk, content_type="application/json").status_code in (400, 401)
    assert c.post("/_dash-update-component", json=body, headers=auth(good)).status_code == 200


def test_sec012_trusted_proxy_header_and_bad_files(tmp_path, monkeypatch):
    from dashboard.web_safety import harden, load_users

    monkeypatch.setenv("SHEDLAB_TRUSTED_USER_HEADER", "X-Forwarded-User")
    app = _tiny_app()
    harden(app)
    c = app.server.test_client()
    assert c.get("/_dash-layout").status_code == 401
    assert c.get("/_dash-layout", headers={"X-Forwarded-User": "x" * 300}).status_code == 401
    assert c.get("/_dash-layout", headers={"X-Forwarded-User": "alice"}).status_code == 200
    f = tmp_path / "users"
    f.write_text("alice:plaintext\n")
    with pytest.raises(ValueError, match="line 1"):
        load_users(f)
    f.write_text("alice:scrypt:1$x$y\n")
    os.chmod(f, 0o666)
    with pytest.raises(ValueError, match="writable by other users"):
        load_users(f)


def test_sec013_permalinks_and_states_do_not_echo_huge_values():
    from dashboard import permalink
    from dashboard.tuner import state

    st, errs = permalink.decode({"src": "sample:bigo-threshold-first-unload", "seed": "9" * 5000,
                                 "loadBalancerBrokerOverloadedThresholdPercentage": "x" * 300_000})
    assert st.src == "sample:bigo-threshold-first-unload" and len(errs) == 2 and max(map(len, errs)) < 200
    st, errs = state.coerce_state({"shed": "q" * 100_000, "place": "p" * 100_000, "src": "s" * 100_000})
    assert st.src == "" and st.shed == "ThresholdShedder" and max(map(len, errs)) < 200


def test_sec014_login_is_checked_before_anything_else(tmp_path, monkeypatch):
    from dashboard.web_safety import harden

    monkeypatch.setenv("SHEDLAB_TRUSTED_USER_HEADER", "X-Forwarded-User")
    app = _tiny_app()
    harden(app)
    c = app.server.test_client()
    for body in (b"{bad", b"[]", json.dumps({"output": "nope"}).encode()):
        r = c.post("/_dash-update-component", data=body, content_type="application/json")
        assert r.status_code == 401  # not "bad request": an anonymous visitor learns nothing
    assert c.get("/_dash-component-suites/nope/x.js").status_code == 401
    r = c.post("/_dash-update-component", data=b"{bad", content_type="application/json",
               headers={"X-Forwarded-User": "alice"})
    assert r.status_code == 400
