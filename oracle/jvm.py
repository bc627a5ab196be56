"""One JVM per release line: our driver over Pulsar's classes, fed JSON lines, answering JSON lines."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

from .lines import classpath

def java_for(version: str) -> str:
    """The java binary for a line: Pulsar 5's classes need Java 21+ (found by ``java21.sh``, as the build
    found it); the others run on the default ``java``."""
    if version.startswith("5."):
        got = subprocess.run([str(Path(__file__).with_name("java21.sh")), "java"], capture_output=True, text=True)
        if got.returncode == 0 and got.stdout.strip():
            return got.stdout.strip()
        raise OracleError(f"pulsar-broker {version} needs a Java 21+ runtime and none was found")
    return shutil.which("java") or "java"


class OracleError(RuntimeError):
    pass


class Oracle:
    """``with Oracle("4.2.4") as o: answers = o.ask(cases)`` — cases streamed through one JVM."""

    def __init__(self, version: str, quick_jit: bool = True):
        """``quick_jit``: the client compiler only (``-XX:TieredStopAtLevel=1``): for a few thousand cases
        per JVM, with five JVMs on two cores, the server compiler's work costs more CPU than its faster
        code saves (about a third less CPU at 4,000 cases, an eighth at 12,000); the long campaign
        turns it off."""
        cp = classpath(version)
        if cp is None:
            raise OracleError(f"the oracle for pulsar-broker {version} is not built: run `make oracle-build`")
        self.version = version
        self.proc = subprocess.Popen(
            # bytecode verification off: the "filters" case subclasses PulsarService, whose verification would
            # load the whole broker's dependency tree (only the classes these paths run are on the classpath)
            [java_for(version), "-Xss4m", "-XX:+UseSerialGC", "-XX:+UnlockDiagnosticVMOptions",
             "-XX:-BytecodeVerificationRemote", *(["-XX:TieredStopAtLevel=1"] if quick_jit else []), "-cp", cp,
             "org.shedlab.oracle.Driver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1 << 16)

    def ask(self, cases, text: str | None = None) -> list[dict]:
        """Answers to ``cases`` (dicts with an ``id``), in order. ``text``: the cases already written as
        JSON lines (one per case; several JVMs can be fed the same text). Writing runs in a thread so a long
        batch never blocks on a full pipe."""
        cases = list(cases)
        err = []

        def feed():
            try:
                if text is not None:
                    self.proc.stdin.write(text)
                else:
                    for c in cases:
                        self.proc.stdin.write(json.dumps(c, separators=(",", ":")) + "\n")
                self.proc.stdin.flush()
            except Exception as exc:  # the JVM died: the reader reports it
                err.append(exc)

        t = threading.Thread(target=feed, daemon=True)
        t.start()
        out = []
        for c in cases:
            line = self.proc.stdout.readline()
            if not line:
                raise OracleError(f"the oracle JVM ({self.version}) stopped after {len(out)} answers: {err}")
            a = json.loads(line)
            if a.get("id") != c.get("id"):
                raise OracleError(f"answer for {a.get('id')!r} where {c.get('id')!r} was expected")
            out.append(a)
        t.join()
        return out

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
