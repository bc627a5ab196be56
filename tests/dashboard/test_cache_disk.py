"""The app's diskcache writes a value's file in one call and reads back what was stored."""
import builtins

import diskcache
import diskcache.core as core

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
