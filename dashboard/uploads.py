"""What every upload goes through first: a safe display label and the size-checked bytes.

``dcc.Upload`` hands the server a data URL and the browser's file name. The name is only ever shown
(never used as a path); the data URL is size-checked before decoding (on its base64 length) and after.
Each page passes its own limit; the messages name the file, as :class:`~engine.errors.InputError` does.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import io
import re
import secrets

from engine.errors import InputError

__all__ = ["safe_label", "decode_data_url", "keyed_digest"]

MB = 1024 * 1024
_UNSAFE = re.compile(r"[^\w.\- ()\[\]+,:@=#%~]")


def safe_label(filename) -> str:
    """A display label for an uploaded file name: the base name, printable, without markup characters,
    at most 80 characters; ``"upload"`` when nothing is left. Never a path."""
    if not isinstance(filename, str) or not filename.strip():
        return "upload"
    base = re.split(r"[\\/]", filename.strip())[-1]
    base = "".join(ch for ch in base if ch.isprintable())
    return _UNSAFE.sub("_", base)[:80].strip() or "upload"


def decode_data_url(contents, label: str, limit: int, env: str | None = None) -> bytes:
    """The bytes of a ``dcc.Upload`` data URL, refused (``InputError`` naming ``label``) when it is not
    a data URL, larger than ``limit`` bytes (checked before and after decoding), not base64, or empty.
    ``env``: the variable that raises the limit, named in the message."""
    if not isinstance(contents, str) or "," not in contents[:300]:
        raise InputError("the upload did not arrive as a data URL", source=label)
    start = contents.index(",") + 1
    too_big = f"the file is larger than the {limit / MB:g} MB upload limit" + (
        f" (set {env} on the server to raise it)" if env else "")
    if len(contents) - start > (limit * 4) // 3 + 16:
        raise InputError(too_big, source=label)
    try:
        raw = _b64decode_from(contents, start)
    except (binascii.Error, ValueError):
        raise InputError("the upload is corrupted (bad base64)", source=label) from None
    if len(raw) > limit:
        raise InputError(too_big, source=label)
    if not raw.strip():
        raise InputError("the file is empty", source=label)
    return raw


_CHUNK = 1 << 22  # characters of base64 decoded at a time (a multiple of 4)


def _b64decode_from(contents: str, start: int) -> bytes:
    """:func:`_b64decode` of ``contents[start:]`` without copying the text first: a big data URL (a 590 MB
    file's is 790 MB) is decoded a few MB at a time into one buffer, ~0.4 s less for 590 MB. Every piece but
    the last holds a multiple of 4 characters and no padding, so the pieces decode to the whole's bytes;
    anything a piece refuses, or a ``=`` before the last piece, is decided on the whole text as before."""
    n = len(contents) - start
    if n <= 2 * _CHUNK:
        return _b64decode(contents[start:])
    last = start + (n - 1) // _CHUNK * _CHUNK  # the last piece: 1 to _CHUNK characters
    if contents.find("=", start, last) < 0:
        try:
            import pybase64
        except ImportError:  # pragma: no cover - pinned in requirements.txt
            pybase64 = None
        if pybase64 is not None:
            out = io.BytesIO()
            try:
                for at in range(start, len(contents), _CHUNK):
                    out.write(pybase64.b64decode(contents[at:at + _CHUNK], validate=True))
                return out.getvalue()
            except (binascii.Error, ValueError):
                pass
    return _b64decode(contents[start:])


def _b64decode(b64: str) -> bytes:
    """Strict base64 (``base64.b64decode(validate=True)``), by ``pybase64``'s SIMD decoder (a 64 MB
    snapshot's data URL: ~0.07 s instead of ~0.25 s); what it refuses is decided by the standard library
    (it also takes surplus padding), so the same inputs are accepted."""
    try:
        import pybase64
    except ImportError:  # pragma: no cover - pinned in requirements.txt
        return base64.b64decode(b64, validate=True)
    try:
        return pybase64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        return base64.b64decode(b64, validate=True)


_SECRET_KEY = "shedlab:upload-id-secret"


def keyed_digest(raw: bytes, n: int = 20) -> str:
    """``n`` hex digits of HMAC-SHA256(``raw``) under a secret of this installation (32 random bytes kept in
    the app's cache, the same for every worker): equal bytes give equal ids, so an upload repeated is
    recognised, but nobody can compute the id of a file without the server's secret (a plain content hash
    let anyone who guessed a file open someone else's upload)."""
    from .cache import get_cache

    cache = get_cache()
    key = cache.get(_SECRET_KEY)
    if not isinstance(key, bytes) or len(key) < 32:
        cache.add(_SECRET_KEY, secrets.token_bytes(32))  # the first worker wins; the others read it back
        key = cache.get(_SECRET_KEY)
    return hmac.new(key, raw, hashlib.sha256).hexdigest()[:n]
