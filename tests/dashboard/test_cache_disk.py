"""The app's diskcache writes a value's file in one call and reads back what was stored."""
import builtins

import diskcache
import diskcache.core as core
import pytest

from dashboard.cache import disk_class


def test_big_values_are_written_whole_and_read_back(tmp_path, monkeypatch):
    """A pickled value full of newline bytes (a big snapshot's arrays) and a long text: one write each
    (diskcache's own writer makes one per line), and the same values come back."""
    writes = []

    class Recorder:
        def __init__(self, f):
            self.f = f

        def write(self, chunk):
            writes.append(len(chunk))
            return self.f.write(chunk)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    real = builtins.open

    def opener(path, mode="r", *a, **k):
        f = real(path, mode, *a, **k)
        return Recorder(f) if "x" in mode or "w" in mode else f

    monkeypatch.setattr(core, "open", opener, raising=False)
    value = {"arrays": b"\n" * 200_000 + bytes(range(256)) * 1_000, "names": ["t/n/0x0\n"] * 5_000}
    text = "a line\n" * 20_000
    with diskcache.Cache(str(tmp_path / "ours"), disk=disk_class()) as c:
        c.set("v", value)
        c.set("t", text)
        assert len(writes) == 2
        assert c.get("v") == value and c.get("t") == text
    writes.clear()
    with diskcache.Cache(str(tmp_path / "plain")) as c:
        c.set("v", value)
        assert len(writes) > 100_000  # what the one-call writer avoids


class Held:
    """A value part whose pickling waits until the test lets it go (the write behind is then under way).
    The gate is a file: the pickling may run in a child process (Linux) or in a thread."""

    def __init__(self, gate, payload):
        self.gate, self.payload = str(gate), payload

    def __reduce__(self):
        import os
        import time

        deadline = time.monotonic() + 30
        while not os.path.exists(self.gate):
            assert time.monotonic() < deadline, "the test never let the write go"
            time.sleep(0.01)
        with open(self.gate + ".pid", "w") as f:  # who pickled it
            f.write(str(os.getpid()))
        return Held._restored, (self.payload,)

    @staticmethod
    def _restored(payload):
        return {"held": payload}


@pytest.mark.parametrize("forked", [True, False], ids=["pickled by a forked child", "pickled by the thread"])
def test_a_value_written_behind_is_marked_until_stored_and_waited_for(tmp_path, monkeypatch, forked):
    """While the write runs, the key counts as stored and a reader waits; then the reader gets the value,
    which any other handle on the cache reads back too (pickled straight into diskcache's value file, by a
    forked child on Linux, by the writing thread elsewhere)."""
    import os
    import threading
    import uuid

    from dashboard.cache import cache_dir, get_cache, get_waiting, is_stored, set_behind
    from engine import forked as forked_mod

    if forked and not forked_mod.CAN_FORK:
        pytest.skip("fork and memfd_create are Linux's")
    monkeypatch.setattr(forked_mod, "CAN_FORK", forked)

    key = f"test-behind:{uuid.uuid4().hex}"
    gate = tmp_path / "go"
    value = {"rows": list(range(50_000)), "part": Held(gate, "names\n" * 1_000)}
    writer = set_behind(key, value, expire=60)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("v", get_waiting(key)))
    reader.start()
    try:
        assert is_stored(key) and key not in get_cache()
        reader.join(0.3)
        assert reader.is_alive()  # waiting for the write, not answering "missing"
    finally:
        gate.touch()
    writer.join(30)
    reader.join(30)
    want = {"rows": list(range(50_000)), "part": {"held": "names\n" * 1_000}}
    assert got["v"] == want
    assert (int((tmp_path / "go.pid").read_text()) != os.getpid()) == forked  # who pickled it
    assert not any(k.startswith("writing:") and k.endswith(key) for k in get_cache().iterkeys())
    with diskcache.Cache(str(cache_dir() / "data"), disk=disk_class()) as other:  # another process's handle
        assert other.get(key) == want
    get_cache().delete(key)


@pytest.mark.parametrize("forked", [True, False], ids=["pickled by a forked child", "pickled by the thread"])
def test_a_write_behind_that_fails_is_logged_leaves_no_file_and_ends_the_wait(caplog, monkeypatch, forked):
    import threading
    import uuid

    from dashboard.cache import cache_dir, get_waiting, is_stored, set_behind
    from engine import forked as forked_mod

    if forked and not forked_mod.CAN_FORK:
        pytest.skip("fork and memfd_create are Linux's")
    monkeypatch.setattr(forked_mod, "CAN_FORK", forked)

    def value_files():
        return sorted((cache_dir() / "data").rglob("*.val"))

    before = value_files()
    key = f"test-behind:{uuid.uuid4().hex}"
    set_behind(key, {"rows": list(range(10_000)), "lock": threading.Lock()}).join(30)  # a lock does not pickle
    assert not is_stored(key)
    assert get_waiting(key, wait=30) is None  # at once: the failed write removed its marker
    assert "could not store test-behind in the cache" in caplog.text
    assert value_files() == before


def test_a_pickling_child_that_never_ends_is_ended(tmp_path, monkeypatch, caplog):
    """A child stuck in the pickling is killed after its time: the write fails (logged, no file left,
    the marker gone), and the thread ends, so the process can exit."""
    import uuid

    from dashboard import cache as cache_mod
    from engine.forked import CAN_FORK

    if not CAN_FORK:
        pytest.skip("fork and memfd_create are Linux's")
    monkeypatch.setattr(cache_mod, "WRITE_BEHIND_S", 0.5)
    files = lambda: sorted((cache_mod.cache_dir() / "data").rglob("*.val"))  # noqa: E731
    before = files()
    key = f"test-behind:{uuid.uuid4().hex}"
    writer = cache_mod.set_behind(key, {"part": Held(tmp_path / "never", "x")})  # its gate never opens
    writer.join(30)
    assert not writer.is_alive()
    assert not cache_mod.is_stored(key)
    assert "ended with status -9" in caplog.text
    assert files() == before
