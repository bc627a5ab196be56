"""What makes the web app safe to share: request checks, error handlers, bounded logs, optional login.

:func:`harden` is called once by ``app.py`` on the Flask server behind Dash:

* **Malformed requests get a short 4xx, never a 500 or a traceback.** A body to
  ``/_dash-update-component`` must be a JSON object naming a registered callback output with list-shaped
  ``inputs``/``state`` (checked before Dash parses it: Dash answers 500 with a ``KeyError`` otherwise),
  one item per declared input/state naming that dependency (id and property; a list of items for a
  wildcard ``ALL`` one) and as many outputs as the callback has (Dash takes values by position and
  raises ``IndexError``); a pathname/search for Dash's pages router that is not a path/string is
  replaced before Dash sees it, so the router answers its 404 page (:func:`_normalise_router_body`);
  an unknown ``/_dash-component-suites/`` path is 404 (Dash raises ``DependencyException``); a body
  nested too deeply to decode (``RecursionError``) is a 400 like any other malformed body; an HTTP error
  keeps its code with a one-line text body. Request bodies are capped (``SHEDLAB_MAX_REQUEST_MB``,
  Flask's ``MAX_CONTENT_LENGTH`` → 413).
* **Once a callback request's shape has been checked, an exception is the server's**: it is logged
  with its traceback (bounded, below) and answered ``500 internal error`` with a one-line body (no
  traceback, no exception text), so a bug reaches monitoring as the server's fault; an exception before
  the check passed stays a ``400``.
* **Callbacks check their values first** with :func:`as_dict`, :func:`as_list`, :func:`as_str`,
  :func:`as_number` and :func:`str_list`: any JSON may arrive for any property, so a callback treats a
  value of the wrong type or size as missing (or says so in its page's alert) and never raises. The
  request fuzz (``tests/dashboard/test_request_fuzz.py``) asserts no callback raised.
* **Log lines are bounded** (:func:`bound_log_records`): a record's message and traceback are cut to
  ``SHEDLAB_LOG_MAX_CHARS`` characters (default 2000), so a 300 KB id sent by a client is not echoed.
* **Optional login** (off by default, for a server on 127.0.0.1):
  ``SHEDLAB_BASIC_AUTH_FILE`` — HTTP basic auth through the ``dash-auth`` package, users from a file of
  ``user:hash`` lines (hashes from ``werkzeug.security.generate_password_hash``);
  ``SHEDLAB_TRUSTED_USER_HEADER`` — a header (e.g. ``X-Forwarded-User``) that a reverse proxy in front
  of the app sets after its own login; requests without it get 401. Only safe when the app is reachable
  through that proxy alone (``docs/security.md``).

Departure from Dash: Dash answers 500 (with the exception text in the log) for these malformed
requests; here they are client errors.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import threading
from pathlib import Path

__all__ = ["harden", "bound_log_records", "clip", "load_users", "LOG_MAX_CHARS", "MAX_REQUEST_BYTES", "as_dict",
           "as_list", "as_str", "as_number", "str_list", "MAX_VALUE_CHARS"]

log = logging.getLogger(__name__)

#: longest log message / traceback text (characters)
LOG_MAX_CHARS = int(os.getenv("SHEDLAB_LOG_MAX_CHARS", "2000"))
#: largest request body (uploads travel base64-encoded in one callback POST): SHEDLAB_MAX_REQUEST_MB, by
#: default 160 MB or, when SHEDLAB_MAX_UPLOAD_MB is raised, enough for one file of that size as a data URL
_UPLOAD_MB = float(os.getenv("SHEDLAB_MAX_UPLOAD_MB", "100") or 100)
MAX_REQUEST_BYTES = int(float(os.getenv("SHEDLAB_MAX_REQUEST_MB") or max(160.0, _UPLOAD_MB * 4 / 3 + 8)) * 1024 * 1024)
_USER_HEADER_MAX = 256


def clip(value, limit: int = 200) -> str:
    """``str(value)`` cut to ``limit`` characters, saying how long it was (for logs and messages)."""
    s = value if isinstance(value, str) else repr(value)
    return s if len(s) <= limit else f"{s[:limit]}… ({len(s):,} chars)"


_installed = False


def bound_log_records(limit: int | None = None) -> None:
    """Make every log record's message (and traceback text) at most ``limit`` characters, whatever
    logger or handler writes it (a log-record factory; installed once per process)."""
    global _installed
    lim = limit or LOG_MAX_CHARS
    if _installed:
        return
    base = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        rec = base(*args, **kwargs)
        try:
            msg = rec.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not lose the record
            msg = clip(rec.msg, lim)
        if len(msg) > lim:
            rec.msg, rec.args = clip(msg, lim), None
        if rec.exc_info and rec.exc_info[0] is not None:
            text = logging.Formatter().formatException(rec.exc_info)
            lines = [clip(line, lim) for line in text.splitlines()]
            text = "\n".join(lines)
            rec.exc_text = text if len(text) <= 4 * lim else text[:lim] + "\n…\n" + text[-2 * lim:]
        return rec

    logging.setLogRecordFactory(factory)
    _installed = True


# ------------------------------------------------------------------------------------------------- callback values
#: longest string a callback takes from a request value (longer ones are treated as missing)
MAX_VALUE_CHARS = 20_000


def as_dict(value, default=None):
    """``value`` when it is a dict, else ``default`` (callbacks check a request's values with these first:
    a client can send any JSON for any property)."""
    return value if isinstance(value, dict) else default


def as_list(value, default=None):
    """``value`` when it is a list, else ``default``."""
    return value if isinstance(value, list) else default


def as_str(value, default=None, limit: int = MAX_VALUE_CHARS):
    """``value`` when it is a string of at most ``limit`` characters, else ``default``."""
    return value if isinstance(value, str) and len(value) <= limit else default


def as_number(value, default=None, lo: float | None = None, hi: float | None = None):
    """``value`` when it is a finite int/float (not a bool) within ``[lo, hi]``, else ``default``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    if isinstance(value, float) and not math.isfinite(value):
        return default
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return default
    return value


def str_list(value, limit: int = MAX_VALUE_CHARS, max_items: int = 10_000):
    """The strings of ``value`` when it is a list (other items dropped), else ``[]``."""
    if not isinstance(value, list):
        return []
    return [v for v in value[:max_items] if isinstance(v, str) and len(v) <= limit]


# ------------------------------------------------------------------------------------------------- requests
def _callback_body_problem(body, callback_map) -> str | None:
    """What is wrong with a ``/_dash-update-component`` body (None when its shape is Dash's)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    out = body.get("output")
    if not isinstance(out, str) or out not in callback_map:
        return "unknown callback output"
    if not isinstance(body.get("outputs"), (dict, list)):
        return "outputs missing"
    for k in ("inputs", "state", "changedPropIds"):
        if k in body and not isinstance(body[k], list):
            return f"{k} must be a list"
    if not isinstance(body.get("inputs"), list):
        return "inputs missing"

    def items_ok(items):
        for x in items:
            if isinstance(x, list):
                if not items_ok(x):
                    return False
            elif not (isinstance(x, dict) and "id" in x and isinstance(x.get("property"), str)):
                return False
        return True

    for k in ("inputs", "state"):
        if not items_ok(body.get(k) or []):
            return f"malformed {k}"
    outs = body["outputs"] if isinstance(body["outputs"], list) else [body["outputs"]]
    if not items_ok(outs):
        return "malformed outputs"
    # one item per declared dependency, naming it (a list of items for a wildcard ALL/ALLSMALLER one):
    # Dash takes the values by position (IndexError when some are missing) without looking at the ids
    spec = callback_map[out]
    for k in ("inputs", "state"):
        want = spec.get(k) or []
        got = body.get(k) or []
        if len(got) != len(want):
            return f"{k}: {len(want)} expected"
        for w, g in zip(want, got):
            if not _item_matches(w, g):
                return f"{k} do not match the callback"
    if not spec.get("no_output"):
        n_out = _n_outputs(spec.get("outputs_indices"))
        if isinstance(body["outputs"], list) != isinstance(spec.get("outputs_indices"), list) or len(outs) != n_out:
            return "outputs do not match the callback"
    return None


def _item_matches(want: dict, got) -> bool:
    """Whether a request's input/state item ``got`` is one the renderer sends for dependency ``want``
    (``{"id", "property"}`` of Dash's callback map; a pattern id is its JSON text)."""
    wid, prop = str(want.get("id", "")), want.get("property")
    if not wid.startswith("{"):
        return isinstance(got, dict) and got.get("id") == wid and got.get("property") == prop
    try:
        pattern = json.loads(wid)
    except ValueError:
        return False
    wild = any(v in (["ALL"], ["ALLSMALLER"]) for v in pattern.values())
    items = got if wild else [got]
    if not isinstance(items, list):
        return False
    for it in items:
        if not (isinstance(it, dict) and it.get("property") == prop and isinstance(it.get("id"), dict)
                and set(it["id"]) == set(pattern)
                and all(isinstance(v, list) or it["id"][key] == v for key, v in pattern.items())):
            return False
    return True


def _n_outputs(indices) -> int:
    if isinstance(indices, (list, tuple)):
        return sum(_n_outputs(i) for i in indices)
    if isinstance(indices, dict):
        return sum(_n_outputs(i) for i in indices.values())
    return 1


def _normalise_router_body(body, prefix: str) -> None:
    """Dash's pages router (``_pages_location`` pathname/search → page content) raises on a pathname
    that is not a string under the app's path prefix (``UnsupportedRelativePath``, ``AttributeError``)
    and on a search that is not a string. A browser only sends strings there, so such values are
    crafted: the pathname becomes one that no page has (Dash answers its "404 - Page not found"
    layout), an odd search becomes empty. Over-long values are treated the same way."""
    for item in body.get("inputs") or []:
        if not isinstance(item, dict) or item.get("id") != "_pages_location":
            continue
        v = item.get("value")
        if item.get("property") == "pathname":
            if not (isinstance(v, str) and v.startswith(prefix) and len(v) <= 2000):
                item["value"] = prefix + "not-found"
        elif item.get("property") == "search":
            if not (isinstance(v, str) and len(v) <= 8000):
                item["value"] = ""


def _short(code: int, text: str):
    from flask import Response

    return Response(text + "\n", status=code, mimetype="text/plain")


def harden(app) -> None:
    """Install the request checks, error handlers, body cap, bounded logs and (when configured) login."""
    from flask import g, request
    from werkzeug.exceptions import HTTPException

    from dash.exceptions import DependencyException

    server = app.server
    server.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    bound_log_records()
    prefix = app.config.routes_pathname_prefix or "/"
    update_path = prefix + "_dash-update-component"

    @server.before_request
    def _check_callback_body():
        if request.path != update_path:
            return None
        if request.method != "POST":
            return _short(405, "method not allowed")
        try:
            body = request.get_json(silent=True)
            problem = _callback_body_problem(body, app.callback_map)
        except RecursionError:  # a body nested deeper than the decoder (or the shape check) recurses
            problem = "the body is nested too deeply"
        if problem:
            log.info("refused callback request: %s", problem)
            return _short(400, f"bad request: {problem}")
        if body["output"].startswith(".._pages_content."):
            _normalise_router_body(body, prefix)  # in place: Dash reads the same (cached) parsed body
        g.shedlab_body_checked = True  # from here on, an exception is the server's (500), not the client's
        return None

    @server.errorhandler(DependencyException)
    def _unknown_dependency(_exc):
        return _short(404, "not found")

    @server.errorhandler(Exception)
    def _any_error(exc):
        if isinstance(exc, HTTPException):
            return _short(exc.code or 400, f"{exc.code} {exc.name}".strip())
        if request.path == update_path and not g.get("shedlab_body_checked"):
            log.info("refused callback request: %s while reading it", type(exc).__name__)
            return _short(400, "bad request: the request could not be processed")
        if request.path == update_path:
            out = request.get_json(silent=True)["output"]  # checked above: a JSON object naming a callback
            log.error("callback request failed: %s (%s): %s", clip(out, 120), type(exc).__name__, clip(str(exc)),
                      exc_info=exc)
            return _short(500, "internal error: the server could not handle this request")
        log.error("request %s failed (%s)", clip(request.path, 120), type(exc).__name__, exc_info=exc)
        return _short(500, "internal error")

    _login(app)


# ------------------------------------------------------------------------------------------------- login
def load_users(path) -> dict[str, str]:
    """``{user: password hash}`` from a file of ``user:hash`` lines (``#`` comments and blank lines skipped).

    Raises ``ValueError`` naming the file and line for anything else, and when the file is readable or
    writable by other users (it should be ``0600``)."""
    p = Path(path)
    st = p.stat()
    if st.st_mode & 0o022:
        raise ValueError(f"{p}: writable by other users; chmod 600 it")
    users = {}
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, h = line.partition(":")
        if not sep or not user or not h or "$" not in h:
            raise ValueError(f"{p} line {n}: expected user:hash (a werkzeug.security.generate_password_hash "
                             "value, e.g. scrypt:32768:8:1$...)")
        users[user] = h
    if not users:
        raise ValueError(f"{p}: no users")
    return users


def _login(app) -> None:
    auth_file = os.getenv("SHEDLAB_BASIC_AUTH_FILE")
    header = os.getenv("SHEDLAB_TRUSTED_USER_HEADER")
    if auth_file and header:
        raise SystemExit("shedlab: set SHEDLAB_BASIC_AUTH_FILE or SHEDLAB_TRUSTED_USER_HEADER, not both")
    if not (auth_file or header):
        return
    if auth_file:
        _basic_auth(app, auth_file)
    else:
        _header_auth(app, header)
    # the login check runs first, before Dash's set-up and the body checks: without a login nothing else answers
    funcs = app.server.before_request_funcs.setdefault(None, [])
    funcs.insert(0, funcs.pop())


def _basic_auth(app, path) -> None:
    import base64
    import binascii

    import dash_auth
    import flask
    from werkzeug.security import check_password_hash

    try:
        users = load_users(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SystemExit(f"shedlab: SHEDLAB_BASIC_AUTH_FILE: {exc}") from None
    ok_cache: dict[bytes, str] = {}  # sha256(header) -> user, so the slow hash runs once per login
    lock = threading.Lock()

    class _BasicAuth(dash_auth.BasicAuth):
        """dash-auth's basic auth; a malformed ``Authorization`` header is a failed login (401), not a 500,
        and passwords are checked against hashes (constant time) instead of plain text."""

        def is_authorized(self):
            h = flask.request.headers.get("Authorization", "")
            if not h.startswith("Basic ") or len(h) > 1024:
                return False
            digest = hashlib.sha256(h.encode("utf-8", "replace")).digest()
            with lock:
                if digest in ok_cache:
                    return True
            try:
                user, _, pw = base64.b64decode(h[6:], validate=True).decode("utf-8").partition(":")
            except (binascii.Error, ValueError, UnicodeDecodeError):
                return False
            want = users.get(user)
            good = want is not None and check_password_hash(want, pw)
            if want is None:  # same work for an unknown user
                hmac.compare_digest(pw, pw)
            if good:
                with lock:
                    if len(ok_cache) > 1000:
                        ok_cache.clear()
                    ok_cache[digest] = user
            return good

    _BasicAuth(app, auth_func=lambda _u, _p: False)
    log.info("login: HTTP basic auth for %d user(s) from %s", len(users), path)


def _header_auth(app, header: str) -> None:
    from flask import request

    name = header.strip()
    if not name or len(name) > 100 or not all(c.isalnum() or c == "-" for c in name):
        raise SystemExit(f"shedlab: SHEDLAB_TRUSTED_USER_HEADER: not a header name: {clip(header, 60)!r}")

    @app.server.before_request
    def _require_user():
        user = request.headers.get(name, "").strip()
        if not user or len(user) > _USER_HEADER_MAX:
            return _short(401, f"login required (the reverse proxy sets {name})")
        return None

    log.info("login: trusting the %s header set by the reverse proxy", name)
