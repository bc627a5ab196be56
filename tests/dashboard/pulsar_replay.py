"""A local replay of Pulsar's admin REST API: one ``http.server`` per broker on 127.0.0.1.

``PulsarReplay(token="secret")`` starts three servers serving the recorded responses of
``fixtures/pulsar``; ``admin_url`` is broker 1's. With a token, every request must carry
``Authorization: Bearer <token>`` (else 401 with Pulsar's ``{"reason": ...}`` body); ``check_auth`` (a callable
on the header) replaces the fixed token, e.g. to accept only unexpired OAuth2 tokens. ``fail`` maps a path (on any
broker) or ``(broker index, path)`` to an HTTP status to answer with instead; ``flaky`` maps the same keys to a
number of 503 answers before the real one, ``slow`` to ``(times, seconds)`` pauses before answering;
``redirect`` maps them to a ``Location`` answered with 302; ``elm``
makes every broker behave like an Extensible Load Manager broker (``load-report`` → HTTP 500, as
``ExtensibleLoadManagerWrapper.generateLoadReport`` throws; ``loadManagerClassName`` =
``ExtensibleLoadManagerImpl`` in ``GET /admin/v2/brokers/configuration/runtime``, a ``Map<String, String>``).
``tls`` (a server ``ssl.SSLContext``) serves HTTPS; ``host`` is the name in the broker ids and ``admin_url``;
``extra_brokers`` adds ids to the cluster's broker list.

Also here: :func:`make_pki` (a test CA, a server certificate for 127.0.0.1/localhost and client certificates,
made with ``cryptography``), :class:`OAuthServer` (an OAuth 2.0 issuer: ``/.well-known/openid-configuration``
and a client-credentials token endpoint answering ``TokenResult`` JSON, as Pulsar's ``TokenClient`` expects) and
:class:`Recorder` (a server that only records what it was sent).
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
import secrets
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "pulsar"
N_BROKERS = 3
ELM_CLASS = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
MODULAR_CLASS = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # failed TLS handshakes are expected in the tests
        pass


def _start(handler, tls: ssl.SSLContext | None = None) -> tuple[_Server, threading.Thread]:
    srv = _Server(("127.0.0.1", 0), handler)
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    return srv, t


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, code: int, body: str, headers: dict | None = None):
        raw = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)


class PulsarReplay:
    def __init__(self, token: str | None = None, fail: dict | None = None, garbage: set | None = None, *,
                 check_auth=None, flaky: dict | None = None, slow: dict | None = None,
                 redirect: dict | None = None, elm: bool = False,
                 tls: ssl.SSLContext | None = None, host: str = "127.0.0.1", extra_brokers: list | None = None):
        self.token = token
        self.check_auth = check_auth
        self.fail = fail or {}
        self.garbage = garbage or set()
        self.flaky = dict(flaky or {})
        self.slow = dict(slow or {})  # key -> (times, seconds): answer that many times only after a pause
        self.redirect = redirect or {}
        self.elm = elm
        self.host = host
        self.extra_brokers = list(extra_brokers or [])  # ids appended to GET /admin/v2/brokers/standalone
        self.scheme = "https" if tls is not None else "http"
        self.requests: list = []  # (broker index, path, authorization header)
        self.servers, self.threads = [], []
        for i in range(N_BROKERS):
            srv, t = _start(self._handler(i), tls)
            self.servers.append(srv)
            self.threads.append(t)
        self.addr = [f"{host}:{s.server_address[1]}" for s in self.servers]

    @property
    def admin_url(self) -> str:
        return f"{self.scheme}://{self.addr[0]}"

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

    def _authorized(self, auth) -> bool:
        if self.check_auth is not None:
            return bool(self.check_auth(auth))
        return not self.token or auth == f"Bearer {self.token}"

    def _handler(self, index: int):
        replay = self

        class Handler(_Quiet):
            def do_GET(self):  # noqa: N802 - http.server API
                auth = self.headers.get("Authorization")
                replay.requests.append((index, self.path, auth))
                if not replay._authorized(auth):
                    return self._send(401, json.dumps({"reason": "Authentication required"}))
                key = (index, self.path)
                where = replay.redirect.get(key, replay.redirect.get(self.path))
                if where:
                    return self._send(302, "", {"Location": where})
                for k in (key, self.path):
                    if replay.slow.get(k, (0, 0))[0] > 0:
                        n, secs = replay.slow[k]
                        replay.slow[k] = (n - 1, secs)
                        time.sleep(secs)
                    if replay.flaky.get(k, 0) > 0:
                        replay.flaky[k] -= 1
                        return self._send(503, json.dumps({"reason": "Service Unavailable"}))
                code = replay.fail.get(key, replay.fail.get(self.path))
                if code:
                    return self._send(code, json.dumps({"reason": f"replayed failure {code}"}))
                if key in replay.garbage:
                    return self._send(200, "<html>not json</html>")
                if self.path == "/admin/v2/brokers/configuration/runtime":
                    return self._send(200, json.dumps({"loadManagerClassName": ELM_CLASS if replay.elm
                                                       else MODULAR_CLASS, "clusterName": "standalone"}))
                if replay.elm and self.path == "/admin/v2/broker-stats/load-report":
                    return self._send(500, json.dumps({"reason": "java.lang.UnsupportedOperationException"}))
                files = {"/admin/v2/clusters": "clusters.json",
                         "/admin/v2/brokers/standalone": "brokers-standalone.json",
                         "/admin/v2/broker-stats/load-report": f"load-report-{index + 1}.json",
                         "/admin/v2/broker-stats/topics": f"topics-{index + 1}.json"}
                name = files.get(self.path)
                if name is None:
                    return self._send(404, json.dumps({"reason": "Not Found"}))
                text = replay._rewrite((FIXTURES / name).read_text())
                if name == "brokers-standalone.json" and replay.extra_brokers:
                    text = json.dumps(json.loads(text) + replay.extra_brokers)
                return self._send(200, text)

        return Handler


class Recorder:
    """A server on 127.0.0.1 answering ``{}`` to every GET and recording (path, headers)."""

    def __init__(self):
        self.seen: list = []
        rec = self

        class Handler(_Quiet):
            def do_GET(self):  # noqa: N802
                rec.seen.append((self.path, dict(self.headers)))
                self._send(200, "{}")

        self.server, self.thread = _start(Handler)
        self.port = self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class OAuthServer:
    """An OAuth 2.0 issuer on 127.0.0.1 for the client-credentials grant (what Pulsar's ``TokenClient`` posts:
    form fields ``grant_type``, ``client_id``, ``client_secret``, ``audience``, ``scope``). Answers
    ``TokenResult`` JSON (``access_token``, ``expires_in``); ``valid(header)`` accepts only a token it issued
    that has not expired, as an admin server checking OAuth2 tokens would."""

    def __init__(self, client_id: str, client_secret: str, *, expires_in: int = 3600, audience: str | None = None,
                 tls: ssl.SSLContext | None = None):
        self.client_id, self.client_secret, self.expires_in, self.audience = client_id, client_secret, expires_in, \
            audience
        self.issued: dict = {}  # token -> expiry (monotonic)
        self.posts: list = []   # the form fields of every token request
        srv = self

        class Handler(_Quiet):
            def do_GET(self):  # noqa: N802
                if self.path == "/.well-known/openid-configuration":
                    return self._send(200, json.dumps({"issuer": srv.issuer_url,
                                                       "token_endpoint": srv.issuer_url + "/oauth/token"}))
                return self._send(404, json.dumps({"error": "not_found"}))

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(n).decode()))
                srv.posts.append(form)
                if self.path != "/oauth/token" or form.get("grant_type") != "client_credentials":
                    return self._send(400, json.dumps({"error": "unsupported_grant_type"}))
                if form.get("client_id") != srv.client_id or form.get("client_secret") != srv.client_secret:
                    return self._send(401, json.dumps({"error": "invalid_client"}))
                if srv.audience and form.get("audience") != srv.audience:
                    return self._send(400, json.dumps({"error": "invalid_request"}))
                tok = secrets.token_urlsafe(24)
                srv.issued[tok] = time.monotonic() + srv.expires_in
                return self._send(200, json.dumps({"access_token": tok, "token_type": "Bearer",
                                                   "expires_in": srv.expires_in}))

        self.server, self.thread = _start(Handler, tls)
        self.issuer_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"

    def valid(self, header) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        exp = self.issued.get(header[len("Bearer "):])
        return exp is not None and time.monotonic() < exp

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_pki(folder: Path) -> dict:
    """A test CA and certificates (EC P-256, fast) in ``folder``: ``ca``, ``server_cert``/``server_key``
    (SAN 127.0.0.1 and localhost), ``client_cert``/``client_key`` (signed by the CA) and ``rogue_cert``/
    ``rogue_key`` (a client certificate from another CA). Returns the paths and ``server_context()``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    now = dt.datetime.now(dt.timezone.utc)

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def ca(cn):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn)).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + dt.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False, encipher_only=False,
                                             decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                .sign(key, hashes.SHA256()))
        return key, cert

    def leaf(ca_key, ca_cert, cn, usage, sans=None):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca_cert.subject)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, b.sign(ca_key, hashes.SHA256())

    def write(stem, key, cert):
        kp, cp = folder / f"{stem}.key.pem", folder / f"{stem}.cert.pem"
        kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()))
        cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return str(cp), str(kp)

    ca_key, ca_cert = ca("shedlab test CA")
    (folder / "ca.cert.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    sk, sc = leaf(ca_key, ca_cert, "127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH,
                  [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    ck, cc = leaf(ca_key, ca_cert, "shedlab-collector", ExtendedKeyUsageOID.CLIENT_AUTH)
    rk, rc = ca("rogue CA")
    rck, rcc = leaf(rk, rc, "intruder", ExtendedKeyUsageOID.CLIENT_AUTH)
    out = {"ca": str(folder / "ca.cert.pem")}
    out["server_cert"], out["server_key"] = write("server", sk, sc)
    out["client_cert"], out["client_key"] = write("client", ck, cc)
    out["rogue_cert"], out["rogue_key"] = write("rogue", rck, rcc)

    def server_context(client_cert: bool = True) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(out["server_cert"], out["server_key"])
        if client_cert:  # mTLS: a client certificate signed by the test CA is required
            ctx.load_verify_locations(cafile=out["ca"])
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx

    out["server_context"] = server_context
    return out
