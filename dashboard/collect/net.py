"""HTTP for the collector: one ``httpx`` client, an allow-list for the web form, credentials kept to their hosts.

Rules (see ``docs/security.md``, "Live-cluster collector"):

* **Allow-list** (:class:`Policy`, the web form only; the command line is the operator's own tool and has none).
  ``SHEDLAB_COLLECT_ALLOW`` lists host names (``pulsar.example.com``, ``*.pulsar.example.com``) and CIDRs
  (``10.1.0.0/16``, ``127.0.0.1/32``). A target is allowed when *every* address its name resolves to is inside a
  listed CIDR, or when its name is listed and none of its addresses is a loopback, link-local (cloud metadata
  ``169.254.169.254`` included), unspecified, multicast or reserved address. An IP literal is checked without any
  DNS or network traffic. The connection then goes to the address that was checked (the name is kept for the
  ``Host`` header and TLS SNI / certificate check), so a second DNS answer cannot send it elsewhere.
  Refused targets get "not allowed"; failing connections "no answer" — nothing an internal service said.
* **Credentials** (token, OAuth2 access token, basic ``user:password@``) go only to the origins
  (scheme, host, port) they were given for: the admin URL and the brokers that admin URL lists. Redirects are
  followed by hand (at most 3): to another origin they go without any credentials, and under a policy every
  target is checked again. Cookies are never kept.
* **Redaction**: every message uses :func:`redact`, which drops ``user:password@`` from URLs.
* **Retries**: 5xx answers, timeouts and refused connections are retried with exponential backoff
  (``retries`` extra attempts, ``backoff`` × 2^n seconds).

Departure from ``pulsar-admin``: proxies and ``SSL_CERT_FILE``-style environment settings are not read
(``trust_env=False``), so the checks above see the real target.
"""
from __future__ import annotations

import fnmatch
import http.cookiejar
import ipaddress
import json
import re
import socket
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx

from engine.errors import ShedlabError

__all__ = ["CollectError", "NotAllowed", "Policy", "Http", "redact", "origin_of", "MAX_RESPONSE"]

MAX_RESPONSE = 64 * 1024 * 1024
MAX_REDIRECTS = 3
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/@\s]*@")


class CollectError(ShedlabError):
    """A request failed or returned something that is not what Pulsar returns (one line)."""


class NotAllowed(CollectError):
    """The target is refused by the allow-list (message: only "not allowed")."""


def redact(text) -> str:
    """``text`` with every ``scheme://user:password@`` reduced to ``scheme://``."""
    return _USERINFO.sub(r"\1", str(text))


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, lower-case host, port) of ``url``; the unit credentials are scoped to."""
    u = urlsplit(url)
    try:
        port = u.port
    except ValueError:
        raise CollectError(f"{redact(url)}: bad port") from None
    return (u.scheme.lower(), (u.hostname or "").lower(), port or (443 if u.scheme == "https" else 80))


_ALWAYS_REFUSED = "loopback, link-local, unspecified, multicast or reserved"


def _special(ip) -> bool:
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast or ip.is_reserved


@dataclass
class Policy:
    """The web form's allow-list (see the module docstring)."""
    names: list = field(default_factory=list)     # lower-case host names or fnmatch patterns
    networks: list = field(default_factory=list)  # ipaddress networks

    @classmethod
    def parse(cls, text: str | None) -> "Policy":
        pol = cls()
        for item in re.split(r"[\s,]+", (text or "").strip()):
            if not item:
                continue
            try:
                pol.networks.append(ipaddress.ip_network(item, strict=False))
                continue
            except ValueError:
                pass
            if not re.fullmatch(r"[A-Za-z0-9*._\-]{1,253}", item):
                raise CollectError(f"SHEDLAB_COLLECT_ALLOW: {item[:60]!r} is neither a host name nor a CIDR")
            pol.names.append(item.lower().rstrip("."))
        return pol

    @property
    def empty(self) -> bool:
        return not self.names and not self.networks

    def _name_listed(self, host: str) -> bool:
        return any(fnmatch.fnmatchcase(host, pat) for pat in self.names)

    def _in_networks(self, ip) -> bool:
        return any(ip.version == n.version and ip in n for n in self.networks)

    def resolve(self, host: str, port: int) -> str:
        """The address to connect to for ``host`` (checked), or :class:`NotAllowed`."""
        host = (host or "").lower().rstrip(".")
        if not host:
            raise NotAllowed("not allowed")
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:  # no DNS, no traffic
            addrs = [literal]
        else:
            if not self._name_listed(host) and not self.networks:
                raise NotAllowed("not allowed")
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                raise CollectError("no answer") from None
            addrs = []
            for info in infos:
                ip = ipaddress.ip_address(info[4][0].split("%", 1)[0])
                if ip not in addrs:
                    addrs.append(ip)
            if not addrs:
                raise CollectError("no answer")
        listed = literal is None and self._name_listed(host)
        for ip in addrs:
            if getattr(ip, "ipv4_mapped", None):
                ip = ip.ipv4_mapped
            if self._in_networks(ip):
                continue
            if listed and not _special(ip):
                continue
            raise NotAllowed("not allowed")
        return str(addrs[0])


def _no_cookies() -> http.cookiejar.CookieJar:
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


class Http:
    """GET JSON with retries, hand-followed redirects, per-origin credentials and an optional :class:`Policy`.

    ``auth_for(origin)`` returns the headers to send to ``origin`` (``{}`` for an origin without credentials);
    ``on_unauthorized()`` is called once on a 401 from a credentialed origin and returns True when the request
    is worth repeating (an OAuth2 token will be fetched again).
    """

    def __init__(self, *, verify: ssl.SSLContext | bool = True, timeout: float = 10.0, retries: int = 2,
                 backoff: float = 0.25, policy: Policy | None = None, auth_for=None, on_unauthorized=None,
                 parallel: int = 8, sleep=time.sleep):
        self.policy = policy
        self.timeout = timeout
        self.retries = max(0, int(retries))
        self.backoff = backoff
        self.sleep = sleep
        self.auth_for = auth_for or (lambda origin: {})
        self.on_unauthorized = on_unauthorized
        self.requests = 0
        self.client = httpx.Client(verify=verify, timeout=httpx.Timeout(timeout), trust_env=False,
                                   follow_redirects=False, cookies=_no_cookies(),
                                   limits=httpx.Limits(max_connections=max(4, parallel * 2)),
                                   headers={"User-Agent": "shedlab-collect", "Accept": "application/json"})

    def close(self):
        self.client.close()

    # ------------------------------------------------------------------ one request
    def _send(self, url: str, headers: dict) -> httpx.Response:
        """One GET (streamed, bounded); under a policy, to the checked address with the name in Host/SNI."""
        target, extensions, hdrs = url, {}, dict(headers)
        if self.policy is not None:
            sch, host, port = origin_of(url)
            ip = self.policy.resolve(host, port)
            if ip != host:
                u = urlsplit(url)
                netloc = (f"[{ip}]" if ":" in ip else ip) + f":{port}"
                target = urlunsplit((u.scheme, netloc, u.path, u.query, ""))
                hdrs["Host"] = u.netloc.rsplit("@", 1)[-1]
                if sch == "https":
                    extensions["sni_hostname"] = host
        self.requests += 1
        req = self.client.build_request("GET", target, headers=hdrs, extensions=extensions)
        resp = self.client.send(req, stream=True)
        try:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE:
                    raise CollectError(f"{redact(url)}: response larger than {MAX_RESPONSE // 1048576} MB")
                chunks.append(chunk)
            resp._content = b"".join(chunks)  # noqa: SLF001 - the bounded body, read once
        finally:
            resp.close()
        return resp

    def get_json(self, url: str, *, quiet: bool = False, text: bool = False):
        """The JSON body of ``GET url``. ``quiet``: errors say only "no answer" / "not allowed" / the HTTP status.
        ``text``: the body as text instead (an endpoint answering a bare string, e.g. ``.../antiAffinity``)."""
        shown = redact(url)
        cred_origin = origin_of(url)
        current, hops, refreshed = url, 0, False
        attempt = 0
        while True:
            headers = dict(self.auth_for(origin_of(current))) if origin_of(current) == cred_origin else {}
            try:
                resp = self._send(current, headers)
            except NotAllowed:
                raise NotAllowed(f"{shown}: not allowed") from None
            except (httpx.TimeoutException, httpx.TransportError, OSError) as exc:
                if attempt < self.retries and not isinstance(exc, ssl.SSLError) and not _tls_failure(exc):
                    self.sleep(self.backoff * (2 ** attempt))
                    attempt += 1
                    continue
                if quiet:
                    raise CollectError(f"{shown}: no answer") from None
                raise CollectError(f"{shown}: {_transport_reason(exc)}") from None
            except CollectError as exc:
                if quiet or str(exc) == "no answer":
                    raise CollectError(f"{shown}: no answer") from None
                raise
            code = resp.status_code
            if code in (301, 302, 303, 307, 308) and resp.headers.get("location"):
                hops += 1
                if hops > MAX_REDIRECTS:
                    raise CollectError(f"{shown}: more than {MAX_REDIRECTS} redirects")
                nxt = str(httpx.URL(current).join(resp.headers["location"]))
                if urlsplit(nxt).scheme not in ("http", "https"):
                    raise CollectError(f"{shown}: redirect to a non-http URL")
                current = nxt  # credentials follow only while the origin stays the same (see headers above)
                continue
            if code == 401 and headers and self.on_unauthorized and not refreshed:
                refreshed = True
                if self.on_unauthorized():  # True when a fresh credential was obtained (OAuth2)
                    continue
            if code >= 500 and attempt < self.retries:
                self.sleep(self.backoff * (2 ** attempt))
                attempt += 1
                continue
            if code >= 400:
                reason = "" if quiet else _pulsar_reason(resp)
                hint = ""
                if code in (401, 403):
                    hint = " (check the token)" if quiet else " (check the credentials: --client-conf, --token-file)"
                err = HttpStatusError(f"{shown}: HTTP {code} {resp.reason_phrase}{': ' + reason if reason else ''}"
                                      f"{hint}")
                err.status = code
                raise err
            if text:
                return resp.content.decode("utf-8", "replace")
            try:
                return json.loads(resp.content.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                raise CollectError(f"{shown}: not JSON ({type(exc).__name__})") from None


class HttpStatusError(CollectError):
    """An HTTP error answer (``status`` holds the code)."""
    status = 0


def _tls_failure(exc) -> bool:
    text = str(exc).lower()
    return "certificate" in text or "ssl" in text or "tls" in text or "handshake" in text


def _transport_reason(exc) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "no answer (timed out)"
    if _tls_failure(exc):
        return f"TLS failed ({redact(str(exc))[:200] or type(exc).__name__})"
    return f"cannot connect ({type(exc).__name__})"


def _pulsar_reason(resp: httpx.Response) -> str:
    try:
        obj = json.loads(resp.content[:4096].decode("utf-8", "replace"))
        if isinstance(obj, dict) and isinstance(obj.get("reason"), str):
            return redact(obj["reason"][:200])
    except Exception:  # noqa: BLE001 - the body is only a hint
        pass
    return ""
