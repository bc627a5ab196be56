"""A local replay of Pulsar's admin REST API: one ``http.server`` per broker on 127.0.0.1.

``PulsarReplay(token="secret")`` starts three servers serving the recorded responses of
``fixtures/pulsar``; ``admin_url`` is broker 1's. With a token, every request must carry
``Authorization: Bearer <token>`` (else 401 with Pulsar's ``{"reason": ...}`` body). ``fail`` maps a
path (on any broker) or ``(broker index, path)`` to an HTTP status to answer with instead.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "pulsar"
N_BROKERS = 3


class PulsarReplay:
    def __init__(self, token: str | None = None, fail: dict | None = None, garbage: set | None = None):
        self.token = token
        self.fail = fail or {}
        self.garbage = garbage or set()
        self.requests: list = []  # (broker index, path, authorization header)
        self.servers = []
        for i in range(N_BROKERS):
            srv = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(i))
            self.servers.append(srv)
        self.addr = [f"127.0.0.1:{s.server_address[1]}" for s in self.servers]
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in self.servers]
        for t in self.threads:
            t.start()

    @property
    def admin_url(self) -> str:
        return f"http://{self.addr[0]}"

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _rewrite(self, text: str) -> str:
        for i in range(N_BROKERS):
            text = text.replace(f"broker-{i + 1}.pulsar.local:8080", self.addr[i])
        return text

    def _handler(self, index: int):
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, body: str):
                raw = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):  # noqa: N802 - http.server API
                auth = self.headers.get("Authorization")
                replay.requests.append((index, self.path, auth))
                if replay.token and auth != f"Bearer {replay.token}":
                    return self._send(401, json.dumps({"reason": "Authentication required"}))
                code = replay.fail.get((index, self.path), replay.fail.get(self.path))
                if code:
                    return self._send(code, json.dumps({"reason": f"replayed failure {code}"}))
                if (index, self.path) in replay.garbage:
                    return self._send(200, "<html>not json</html>")
                files = {"/admin/v2/clusters": "clusters.json",
                         "/admin/v2/brokers/standalone": "brokers-standalone.json",
                         "/admin/v2/broker-stats/load-report": f"load-report-{index + 1}.json",
                         "/admin/v2/broker-stats/topics": f"topics-{index + 1}.json"}
                name = files.get(self.path)
                if name is None:
                    return self._send(404, json.dumps({"reason": "Not Found"}))
                return self._send(200, replay._rewrite((FIXTURES / name).read_text()))

        return Handler
