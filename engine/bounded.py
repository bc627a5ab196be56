"""Bounded readers: every byte, nesting level, YAML node and zip member Shedlab reads has a limit.

The limits and their environment variables are in :mod:`engine.limits`; each is read when it is
checked. Every problem is one :class:`engine.errors.InputError` naming the file (and the member of
a zip), never a ``RecursionError``, ``MemoryError``, ``BadZipFile`` or ``RuntimeError``.

* :func:`read_bytes_bounded` — a file, device (``/dev/zero``) or stream (``-`` is stdin) read with at
  most ``SHEDLAB_MAX_INPUT_MB`` + 1 bytes: the size the file system reports is never trusted.
* :func:`json_depth` / :func:`loads_json` — JSON whose nesting is measured *before* ``json.loads``
  by a bracket scan that skips string contents (vectorised with numpy, no recursion), refused over
  ``SHEDLAB_MAX_NESTING``; ``NaN`` / ``Infinity`` are refused (they are not JSON).
* :func:`loads_yaml` — YAML through PyYAML's safe loader (no Python tags) with the nesting depth
  and the number of nodes *after aliases are expanded* (``SHEDLAB_MAX_YAML_NODES``, the "billion
  laughs") counted while composing, before anything is constructed; ``SHEDLAB_MAX_YAML_MB`` bounds
  the text.
* :func:`read_zip` — the members of a zip archive held in memory: the entry count
  (``SHEDLAB_MAX_ZIP_MEMBERS``), the bytes each member really expands to (counted while reading,
  headers are not trusted; ``SHEDLAB_MAX_INPUT_MB`` per member, ``SHEDLAB_MAX_ZIP_MB`` in all),
  encrypted members and corrupt data; members with unsafe names (absolute, ``..``, drive letters)
  are left out (names are never used as paths).
"""
from __future__ import annotations

import io
import json
import struct
import sys
import zipfile
import zlib
from pathlib import Path, PurePosixPath

import numpy as np

from .errors import InputError
from .limits import limit, limit_bytes

__all__ = ["read_bytes_bounded", "check_size", "json_depth", "loads_json", "loads_yaml", "read_zip",
           "decode_text"]

_CHUNK = 1 << 20


def _mb(n: float) -> str:
    return f"{n / 1048576:,.1f} MB"


def check_size(n: int, source: str | None, env: str = "SHEDLAB_MAX_INPUT_MB") -> None:
    """Refuse ``n`` bytes over the limit ``env``."""
    cap = limit_bytes(env)
    if n > cap:
        raise InputError(f"larger than the {_mb(cap)} limit ({'more than ' if n == cap + 1 else ''}{_mb(n)}; "
                         f"set {env} to raise it)", source=source)


def read_bytes_bounded(path, source: str | None = None) -> bytes:
    """The bytes of a file, device or stream (``"-"``: standard input), at most the input limit.

    Reads ``limit + 1`` bytes at most, whatever ``stat`` says (``/dev/zero`` reports 0 bytes)."""
    cap = limit_bytes("SHEDLAB_MAX_INPUT_MB")
    if str(path) == "-":
        src = source or "<stdin>"
        data = _read_stream(sys.stdin.buffer, cap, src)
    else:
        p = Path(path)
        src = source or str(p)
        try:
            if p.is_dir():
                raise InputError("is a directory, expected a file", source=src)
            with open(p, "rb") as f:
                data = _read_stream(f, cap, src)
        except InputError:
            raise
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=src) from None
        except ValueError:  # a NUL byte in the name
            raise InputError("not a valid file name", source=repr(str(path))[:200]) from None
    check_size(len(data), src)
    return data


def _read_stream(f, cap: int, source: str) -> bytes:
    # one read of at most cap + 1 bytes (a buffered file or pipe returns all of it, or up to EOF, without
    # the copies of a chunked loop: 64 MB took 0.1 s); the loop is for streams that return less
    chunks, left = [], cap + 1
    while left > 0:
        chunk = f.read(left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def decode_text(raw: bytes, source: str | None) -> str:
    """UTF-8 (a BOM tolerated), or ``InputError``."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}; is this a binary file?)", source=source) from None


# ---------------------------------------------------------------------------------------- JSON
_QUOTE, _BSLASH = 0x22, 0x5C
_DELTA = np.zeros(256, np.int8)
_DELTA[[0x5B, 0x7B]] = 1   # [ {
_DELTA[[0x5D, 0x7D]] = -1  # ] }


def json_depth(data: bytes | str, stop_over: int | None = None) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text, ignoring brackets inside strings.

    Vectorised, in 4 MB pieces, no recursion; stops early once the depth exceeds ``stop_over``. On
    text that is not valid JSON the answer is an estimate (``json.loads`` refuses it anyway)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    depth = 0
    best = 0
    in_string = False
    bs_run = 0  # backslashes ending the previous piece
    step = 4 << 20
    for start in range(0, len(data), step):
        a = np.frombuffer(data, np.uint8, count=min(step, len(data) - start), offset=start)
        b = a | 0x20  # '[' -> '{', ']' -> '}'
        pos = np.flatnonzero((b == 0x7B) | (b == 0x7D) | (a == _QUOTE))
        if not len(pos):
            bs_run = _trailing_backslashes(a, bs_run)
            continue
        ch = a[pos]
        is_q = ch == _QUOTE
        qpos = pos[is_q]
        if len(qpos):
            # a quote is escaped when an odd number of backslashes precede it
            prev_bs = np.zeros(len(qpos), bool)
            cand = qpos > 0
            prev_bs[cand] = a[qpos[cand] - 1] == _BSLASH
            if qpos[0] == 0 and bs_run:
                prev_bs[0] = True
            escaped = np.zeros(len(qpos), bool)
            cand = np.flatnonzero(prev_bs)
            if len(cand):
                # length of the run of backslashes just before each candidate quote (vectorised)
                bs = np.flatnonzero(a == _BSLASH)
                starts = np.ones(len(bs), bool)
                starts[1:] = bs[1:] != bs[:-1] + 1
                run_start = bs[starts][np.cumsum(starts) - 1]  # where each backslash's run begins
                qc = qpos[cand]
                n = np.zeros(len(cand), np.int64)
                inner = qc > 0
                if inner.any():
                    rs = run_start[np.searchsorted(bs, qc[inner] - 1)]
                    n_inner = qc[inner] - rs
                    n_inner[rs == 0] += bs_run  # the run continues the previous piece's trailing one
                    n[inner] = n_inner
                n[~inner] = bs_run  # a quote opening the piece
                escaped[cand] = n % 2 == 1
            real_q = np.zeros(len(pos), bool)
            real_q[np.flatnonzero(is_q)[~escaped]] = True
        else:
            real_q = np.zeros(len(pos), bool)
        # string parity before each interesting byte
        nq_before = np.cumsum(real_q) - real_q
        inside = (nq_before % 2 == 1) ^ in_string
        delta = _DELTA[ch].astype(np.int64)
        delta[inside | is_q] = 0
        levels = depth + np.cumsum(delta)
        if len(levels):
            best = max(best, int(levels.max()))
            depth = int(levels[-1])
        in_string = bool(in_string ^ (int(real_q.sum()) % 2 == 1))
        bs_run = _trailing_backslashes(a, bs_run)
        if stop_over is not None and best > stop_over:
            return best
    return best


def _trailing_backslashes(a: np.ndarray, carry: int) -> int:
    """Backslashes ending ``a`` (plus ``carry`` when ``a`` is nothing but backslashes)."""
    if not len(a):
        return carry
    rev = a[::-1] != _BSLASH
    i = int(rev.argmax())
    return len(a) + carry if not rev[i] else i


def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def loads_json(data: bytes | str, source: str | None, what: str = "JSON"):
    """Parse JSON (bytes: UTF-8, BOM tolerated) within the size and nesting limits.

    ``InputError`` names the line and column of a syntax error, or the limit crossed."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        check_size(len(data), source)
        text = decode_text(data, source)
    else:
        text = data
        check_size(len(text), source)
    if not text.strip():
        raise InputError("the file is empty", source=source)
    cap = limit("SHEDLAB_MAX_NESTING")
    d = json_depth(text, stop_over=cap)
    if d > cap:
        raise InputError(f"{what} nested more than {cap} levels deep (set SHEDLAB_MAX_NESTING to raise it)",
                         source=source)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source=source) from None
    except (ValueError, RecursionError) as exc:  # NaN/Infinity, a 5,000-digit integer
        raise InputError(f"not valid JSON: {exc}", source=source) from None


# ---------------------------------------------------------------------------------------- YAML
def _bounded_loader():
    import yaml

    class BoundedSafeLoader(yaml.SafeLoader):
        """PyYAML's safe loader counting depth and expanded nodes while it composes."""

        def __init__(self, stream, max_depth: int, max_nodes: int):
            super().__init__(stream)
            self._depth = 0
            self._max_depth = max_depth
            self._max_nodes = max_nodes
            self._weight: dict[int, int] = {}

        def compose_node(self, parent, index):
            self._depth += 1
            if self._depth > self._max_depth:
                raise _YamlLimit(f"YAML nested more than {self._max_depth} levels deep "
                                 f"(set SHEDLAB_MAX_NESTING to raise it)")
            try:
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
            w = self._weight.get(id(node))
            if w is None:
                if isinstance(node, yaml.SequenceNode):
                    w = 1 + sum(self._weight.get(id(c), 1) for c in node.value)
                elif isinstance(node, yaml.MappingNode):
                    w = 1 + sum(self._weight.get(id(k), 1) + self._weight.get(id(v), 1) for k, v in node.value)
                else:
                    w = 1
                self._weight[id(node)] = w
            if w > self._max_nodes:
                raise _YamlLimit(f"YAML expands to more than {self._max_nodes:,} nodes (aliases counted each "
                                 f"time they are used; set SHEDLAB_MAX_YAML_NODES to raise it)")
            return node

    return BoundedSafeLoader


class _YamlLimit(Exception):
    pass


_LOADER = None


def loads_yaml(text: str | bytes, source: str | None):
    """Parse one YAML document (a JSON document is YAML too) within the YAML limits."""
    global _LOADER
    import yaml

    if isinstance(text, (bytes, bytearray)):
        check_size(len(text), source, "SHEDLAB_MAX_YAML_MB")
        text = decode_text(bytes(text), source)
    check_size(len(text.encode("utf-8", "surrogatepass")), source, "SHEDLAB_MAX_YAML_MB")
    if _LOADER is None:
        _LOADER = _bounded_loader()
    loader = None
    try:
        loader = _LOADER(text, limit("SHEDLAB_MAX_NESTING"), limit("SHEDLAB_MAX_YAML_NODES"))
        return loader.get_single_data()
    except _YamlLimit as exc:
        raise InputError(str(exc), source=source) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise InputError(f"not valid YAML{where}: {exc.problem or exc.context}", source=source) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise InputError(f"not valid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         source=source) from None
    finally:
        if loader is not None:
            loader.dispose()


# ---------------------------------------------------------------------------------------- zip
def _eocd_entries(raw: bytes) -> int | None:
    """The entry count the end-of-central-directory record (or its Zip64 form) claims."""
    i = raw.rfind(b"PK\x05\x06", max(0, len(raw) - 65_557))
    if i < 0 or i + 22 > len(raw):
        return None
    n = struct.unpack_from("<H", raw, i + 10)[0]
    if n == 0xFFFF:
        j = raw.rfind(b"PK\x06\x06", 0, i)
        if j >= 0 and j + 56 <= len(raw):
            n = struct.unpack_from("<Q", raw, j + 32)[0]
    return n


def _unsafe_name(name: str) -> bool:
    n = name.replace("\\", "/")
    return (n.startswith("/") or (len(n) > 1 and n[1] == ":") or ".." in PurePosixPath(n).parts
            or "\x00" in n)


def read_zip(raw: bytes, source: str, want=None) -> dict[str, bytes]:
    """The members of a zip archive (posix name -> bytes), within the zip limits.

    ``want(name) -> bool`` picks the members to read (the others are only counted). Directories and
    ``__MACOSX/`` entries and unsafe names (absolute, ``..``) are left out. ``InputError`` (naming the
    member) for a corrupt or truncated archive, an encrypted member, an unsupported compression method, or
    more members / more bytes than the limits — counted while decompressing, not taken from the
    headers."""
    check_size(len(raw), source)
    max_members = limit("SHEDLAB_MAX_ZIP_MEMBERS")
    claimed = _eocd_entries(raw)
    if claimed is not None and claimed > max_members:
        raise InputError(f"the archive lists {claimed:,} files, more than the {max_members:,} limit "
                         f"(set SHEDLAB_MAX_ZIP_MEMBERS to raise it)", source=source)
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, struct.error,
            NotImplementedError, RuntimeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a valid zip archive ({_zip_reason(exc)})", source=source) from None
    if len(infos) > max_members:
        raise InputError(f"the archive holds {len(infos):,} files, more than the {max_members:,} limit "
                         f"(set SHEDLAB_MAX_ZIP_MEMBERS to raise it)", source=source)
    per_member = limit_bytes("SHEDLAB_MAX_INPUT_MB")
    total_cap = limit_bytes("SHEDLAB_MAX_ZIP_MB")
    total = 0
    out: dict[str, bytes] = {}
    for info in infos:
        name = info.filename
        where = f"{source}:{name}"
        if _unsafe_name(name):
            continue  # absolute or with '..': never a dump's file (and names are never used as paths)
        name = name.replace("\\", "/")
        if info.is_dir() or name.startswith("__MACOSX/"):
            continue
        if info.flag_bits & 0x1:
            raise InputError("the file is encrypted (password-protected zips are not read)", source=where)
        if want is not None and not want(name):
            continue
        buf = io.BytesIO()
        try:
            with zf.open(info) as f:
                while True:
                    chunk = f.read(_CHUNK)
                    if not chunk:
                        break
                    buf.write(chunk)
                    total += len(chunk)
                    if buf.tell() > per_member:
                        raise InputError(f"expands to more than the {_mb(per_member)} limit of one file "
                                         f"(set SHEDLAB_MAX_INPUT_MB to raise it)", source=where)
                    if total > total_cap:
                        raise InputError(f"the archive expands to more than the {_mb(total_cap)} limit "
                                         f"(set SHEDLAB_MAX_ZIP_MB to raise it)", source=source)
        except InputError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError,
                struct.error, NotImplementedError, RuntimeError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read this member of the zip: {_zip_reason(exc)}", source=where) from None
        if buf.tell() != info.file_size:
            raise InputError(f"corrupt archive: the header says {info.file_size:,} bytes, the member holds "
                             f"{buf.tell():,}", source=where)
        out[name] = buf.getvalue()
    return out


def _zip_reason(exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return "unsupported compression method"
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "encrypted"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
