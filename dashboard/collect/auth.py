"""Pulsar's ``client.conf`` and its authentication plugins, as ``pulsar-admin`` reads them.

Keys read (Pulsar's ``conf/client.conf`` names): ``webServiceUrl``, ``authPlugin``, ``authParams``,
``tlsTrustCertsFilePath``, ``tlsCertificateFilePath`` / ``tlsKeyFilePath`` (client certificate, mTLS),
``tlsAllowInsecureConnection``, ``tlsEnableHostnameVerification``. Other keys are ignored.

``authPlugin`` (class names of ``org.apache.pulsar.client.impl.auth``):

* ``AuthenticationToken`` — ``authParams`` is ``token:<jwt>``, ``file:///path/to/token``, ``env:VAR``,
  ``data:<jwt>`` or the bare token (as ``AuthenticationToken.configure``). Sent as ``Authorization: Bearer``.
* ``oauth2.AuthenticationOAuth2`` — ``authParams`` is JSON: ``type`` (only ``client_credentials``),
  ``issuerUrl``, ``privateKey`` (``file:///path/key.json`` or ``data:application/json;base64,...``; the key file
  holds ``client_id`` and ``client_secret``, class ``KeyFile``), optional ``audience``, ``scope``,
  ``wellKnownMetadataPath``, and for the identity provider's TLS ``trustCertsFilePath``, ``tlsCertFile``/``tlsKeyFile``
  (``FlowBase``). As ``ClientCredentialsFlow``: the token endpoint is read from
  ``<issuerUrl>/.well-known/openid-configuration``
  (``token_endpoint``), then ``POST`` ``grant_type=client_credentials&client_id&client_secret[&audience][&scope]``
  as a form (``TokenClient``); the answer is ``TokenResult`` (``access_token``, ``expires_in``).
  The token is cached and fetched again once it has expired (``AuthenticationOAuth2`` with its default
  ``earlyTokenRefreshPercent`` = 1); departure: Shedlab fetches it up to 2 s *before* expiry (Pulsar's backoff
  also stops 2 s before expiry) and once more when a broker answers 401, instead of failing that request.
* ``AuthenticationTls`` — ``authParams`` ``tlsCertFile:/path,tlsKeyFile:/path`` (or the same as JSON): the
  client certificate, like ``tlsCertificateFilePath``/``tlsKeyFilePath``.

Secrets are read from files or the environment and never printed.
"""
from __future__ import annotations

import base64
import json
import os
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlencode, urlsplit

import httpx

from .net import CollectError, redact

__all__ = ["ClientConf", "TokenAuth", "OAuth2ClientCredentials", "read_client_conf", "parse_properties",
           "make_auth", "ssl_context"]

MAX_CONF = 256 * 1024
MAX_SECRET = 64 * 1024

_PLUGINS = {
    "org.apache.pulsar.client.impl.auth.AuthenticationToken": "token",
    "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2": "oauth2",
    "org.apache.pulsar.client.impl.auth.AuthenticationTls": "tls",
    "org.apache.pulsar.client.impl.auth.AuthenticationDisabled": "none",
}


def parse_properties(text: str, source: str = "client.conf") -> dict:
    """``key=value`` lines (``key: value`` too), ``#``/``!`` comments, as Java properties (no continuations)."""
    out = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for sep_i, ch in enumerate(line):
            if ch in "=:":
                break
        else:
            raise CollectError(f"{source}: line {n}: expected key=value")
        key, value = line[:sep_i].strip(), line[sep_i + 1:].strip()
        if key:
            out[key] = value
    return out


def _read_small(path: str | Path, what: str, limit: int = MAX_SECRET) -> str:
    p = Path(path).expanduser()
    try:
        with p.open("rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise CollectError(f"{what}: cannot read {p} ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > limit:
        raise CollectError(f"{what}: {p} is larger than {limit // 1024} KB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CollectError(f"{what}: {p} is not UTF-8 text") from None


def _file_url_path(url: str) -> str:
    u = urlsplit(url)
    return unquote(u.path) if u.netloc in ("", "localhost") else url


class TokenAuth:
    """A static bearer token (``AuthenticationToken``)."""

    def __init__(self, token: str):
        self.token = (token or "").strip()
        if not self.token:
            raise CollectError("the token is empty")
        if any(c in self.token for c in "\r\n\0"):
            raise CollectError("the token holds line breaks")

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    def invalidate(self):
        pass

    @classmethod
    def from_params(cls, params: str) -> "TokenAuth":
        p = (params or "").strip()
        if p.startswith("token:"):
            return cls(p[len("token:"):])
        if p.startswith("data:"):
            return cls(p[len("data:"):])
        if p.startswith("file:"):
            return cls(_read_small(_file_url_path(p), "authParams file:"))
        if p.startswith("env:"):
            var = p[len("env:"):]
            val = os.environ.get(var)
            if not val:
                raise CollectError(f"authParams env:{var}: the environment variable is not set")
            return cls(val)
        return cls(p)


@dataclass
class OAuth2ClientCredentials:
    """``AuthenticationOAuth2`` with the client-credentials flow (see the module docstring)."""
    issuer_url: str
    private_key: str
    audience: str | None = None
    scope: str | None = None
    verify: object = True
    timeout: float = 10.0
    well_known_path: str = "/.well-known/openid-configuration"
    early_seconds: float = 2.0
    clock: object = time.time
    fetches: int = 0
    _token: str | None = None
    _expires_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_params(cls, params: str, *, verify=True, timeout: float = 10.0) -> "OAuth2ClientCredentials":
        try:
            obj = json.loads(params or "")
        except (json.JSONDecodeError, RecursionError):
            raise CollectError("authParams of AuthenticationOAuth2 must be JSON "
                               '({"type": "client_credentials", "issuerUrl": ..., "privateKey": ...})') from None
        if not isinstance(obj, dict):
            raise CollectError("authParams of AuthenticationOAuth2 must be a JSON object")
        typ = obj.get("type", "client_credentials")
        if typ != "client_credentials":
            raise CollectError(f"authParams type {str(typ)[:40]!r}: only client_credentials is supported")
        for key in ("issuerUrl", "privateKey"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise CollectError(f"authParams of AuthenticationOAuth2: {key} is required")
        if urlsplit(obj["issuerUrl"]).scheme not in ("http", "https"):
            raise CollectError("authParams issuerUrl must be an http(s) URL")
        ver = verify
        trust, cert, key = (obj.get(k) if isinstance(obj.get(k), str) and obj.get(k) else None
                            for k in ("trustCertsFilePath", "tlsCertFile", "tlsKeyFile"))
        if trust or cert or key:
            ver = ssl_context(trust, cert, key)
        path = obj.get("wellKnownMetadataPath") or "/.well-known/openid-configuration"
        if not isinstance(path, str) or not path.startswith("/") or len(path) > 200:
            raise CollectError("authParams wellKnownMetadataPath must be a path starting with /")
        return cls(obj["issuerUrl"], obj["privateKey"], obj.get("audience") or None, obj.get("scope") or None,
                   verify=ver, timeout=timeout, well_known_path=path)

    def _key_file(self) -> tuple[str, str]:
        pk = self.private_key
        if pk.startswith("data:"):
            head, _, body = pk[5:].partition(",")
            if not head.startswith("application/json"):
                raise CollectError("privateKey data: URL must be application/json")
            text = base64.b64decode(body).decode("utf-8", "replace") if head.endswith(";base64") else unquote(body)
        elif pk.startswith("file:"):
            text = _read_small(_file_url_path(pk), "privateKey")
        else:
            text = _read_small(pk, "privateKey")
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise CollectError("privateKey: the key file is not JSON (KeyFile: client_id, client_secret)") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("client_id"), str) \
                or not isinstance(obj.get("client_secret"), str):
            raise CollectError("privateKey: the key file needs client_id and client_secret")
        return obj["client_id"], obj["client_secret"]

    def _fetch(self):
        client_id, secret = self._key_file()
        well_known = self.issuer_url.rstrip("/") + self.well_known_path
        shown = redact(self.issuer_url)
        with httpx.Client(verify=self.verify, timeout=self.timeout, trust_env=False, follow_redirects=False) as c:
            try:
                meta = c.get(well_known, headers={"Accept": "application/json"})
                if meta.status_code != 200:
                    raise CollectError(f"OAuth2 {shown}: openid-configuration answered HTTP {meta.status_code}")
                endpoint = meta.json().get("token_endpoint")
                if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
                    raise CollectError(f"OAuth2 {shown}: openid-configuration has no token_endpoint")
                body = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
                if self.audience:
                    body["audience"] = self.audience
                if self.scope:
                    body["scope"] = self.scope
                resp = c.post(endpoint, content=urlencode(sorted(body.items())),
                              headers={"Accept": "application/json",
                                       "Content-Type": "application/x-www-form-urlencoded"})
            except httpx.HTTPError as exc:
                raise CollectError(f"OAuth2 {shown}: no answer ({type(exc).__name__})") from None
            except (ValueError, AttributeError):
                raise CollectError(f"OAuth2 {shown}: openid-configuration is not a JSON object") from None
        if resp.status_code != 200:
            err = ""
            try:
                obj = resp.json()
                if isinstance(obj, dict) and isinstance(obj.get("error"), str):
                    err = ": " + obj["error"][:80]  # TokenError.error, never the description of a secret
            except ValueError:
                pass
            raise CollectError(f"OAuth2 {redact(endpoint)}: HTTP {resp.status_code}{err}")
        try:
            tr = resp.json()
            token, expires = tr["access_token"], float(tr.get("expires_in") or 3600)
        except (ValueError, KeyError, TypeError):
            raise CollectError(f"OAuth2 {redact(endpoint)}: the answer has no access_token") from None
        self.fetches += 1
        self._token = TokenAuth(token).token
        self._expires_at = self.clock() + expires
        self._lifetime = expires

    def headers(self) -> dict:
        with self._lock:
            early = min(self.early_seconds, 0.1 * getattr(self, "_lifetime", 0.0))
            if self._token is None or self.clock() >= self._expires_at - early:
                self._fetch()
            return {"Authorization": f"Bearer {self._token}"}

    def invalidate(self) -> bool:
        """Forget the token (the next request fetches a new one); True: worth repeating the request."""
        with self._lock:
            self._token = None
        return True


@dataclass
class ClientConf:
    """What the collector needs from ``client.conf`` and the command line."""
    web_service_url: str | None = None
    auth: object = None  # TokenAuth | OAuth2ClientCredentials | None
    trust_certs: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    allow_insecure: bool = False
    hostname_verification: bool = True
    auth_plugin: str | None = None
    auth_params: str | None = field(default=None, repr=False)


def _bool(v) -> bool:
    return str(v).strip().lower() == "true"


def make_auth(plugin: str | None, params: str | None, *, verify=True, timeout: float = 10.0, conf=None):
    """The auth object for ``authPlugin``/``authParams`` (``None`` when disabled). TLS auth fills ``conf``."""
    plugin = (plugin or "").strip()
    if not plugin:
        return None
    kind = _PLUGINS.get(plugin)
    if kind is None:
        raise CollectError(f"authPlugin {plugin[:100]!r} is not supported (token, OAuth2 client credentials, TLS)")
    if kind == "none":
        return None
    if kind == "token":
        return TokenAuth.from_params(params or "")
    if kind == "oauth2":
        return OAuth2ClientCredentials.from_params(params or "", verify=verify, timeout=timeout)
    # tls: "tlsCertFile:/p,tlsKeyFile:/p" (configureFromPulsar1AuthParamString) or JSON
    p = (params or "").strip()
    vals = {}
    if p.startswith("{"):
        try:
            vals = json.loads(p)
        except (json.JSONDecodeError, RecursionError):
            raise CollectError("authParams of AuthenticationTls is not JSON") from None
    else:
        for part in p.split(","):
            k, _, v = part.partition(":")
            vals[k.strip()] = v.strip()
    if conf is not None:
        conf.cert_file = vals.get("tlsCertFile") or conf.cert_file
        conf.key_file = vals.get("tlsKeyFile") or conf.key_file
    return None


def read_client_conf(path) -> ClientConf:
    """``client.conf`` → :class:`ClientConf` (auth built later, once TLS settings are known)."""
    text = _read_small(path, "client.conf", MAX_CONF)
    props = parse_properties(text, str(path))
    conf = ClientConf(
        web_service_url=props.get("webServiceUrl") or None,
        trust_certs=props.get("tlsTrustCertsFilePath") or None,
        cert_file=props.get("tlsCertificateFilePath") or None,
        key_file=props.get("tlsKeyFilePath") or None,
        allow_insecure=_bool(props.get("tlsAllowInsecureConnection", "false")),
        # Pulsar's client.conf default is false; Shedlab verifies host names unless the file says false
        hostname_verification=not (props.get("tlsEnableHostnameVerification", "").strip().lower() == "false"),
    )
    conf.auth_plugin = props.get("authPlugin") or None
    conf.auth_params = props.get("authParams") or None
    return conf


def ssl_context(trust_certs: str | None = None, cert_file: str | None = None, key_file: str | None = None, *,
                allow_insecure: bool = False, hostname_verification: bool = True) -> ssl.SSLContext:
    """The TLS context: the custom CA (else the system's), the client certificate for mTLS."""
    ctx = ssl.create_default_context()
    try:
        if trust_certs:
            ctx.load_verify_locations(cafile=str(Path(trust_certs).expanduser()))
        if cert_file or key_file:
            if not (cert_file and key_file):
                raise CollectError("a client certificate needs both tlsCertificateFilePath and tlsKeyFilePath")
            ctx.load_cert_chain(str(Path(cert_file).expanduser()), str(Path(key_file).expanduser()))
    except (OSError, ssl.SSLError) as exc:
        raise CollectError(f"TLS files: {getattr(exc, 'strerror', None) or exc}") from None
    if allow_insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif not hostname_verification:
        ctx.check_hostname = False
    return ctx
