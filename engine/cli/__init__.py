"""The ``python -m engine`` command line.

Each sub-command lives in its own module in this package and exposes two functions:

``register(subparsers)``
    add its ``argparse`` sub-parser (``subparsers.add_parser(NAME, ...)``) and call
    ``parser.set_defaults(func=run)``;
``run(args) -> int``
    do the work, print text (or JSON with ``--json``) and return the exit status.

Errors: raise :class:`engine.errors.InputError` / :class:`engine.errors.UsageError`; ``main``
prints one line ``error: ...`` on stderr and returns 2. Argparse usage errors also exit 2 with one
line. No traceback reaches the user.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from ..errors import ShedlabError
from ..results import BuiltOnRead

__all__ = ["main", "build_parser", "COMMAND_MODULES", "print_json"]

#: sub-command modules, in the order ``--help`` lists them
COMMAND_MODULES = ["shed", "place", "replay", "simulate", "findings", "bundles", "pegasus", "releases"]


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D401 - argparse hook
        self.exit(2, f"error: {self.prog}: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``only``: register just that sub-command (``main`` does, when the command line names
    one, so ``shed`` does not import the ``bundles`` command's pandas)."""
    parser = _OneLineParser(
        prog="python -m engine",
        description="Shedlab engine: what Pulsar's (and Pegasus') load balancer would decide.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    for name in ([only] if only in COMMAND_MODULES else COMMAND_MODULES):
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a command not built yet
            if exc.name == f"{__name__}.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def print_json(obj) -> None:
    """Print ``obj`` as JSON (the stable contract for scripts), indented by 2.

    ``orjson`` writes it (the ``json`` module indents in pure Python: 0.25 s for the 1.6 MB answer of
    ``shed --json`` on 1,000 brokers) as UTF-8, a non-finite float as ``null``; ``json`` when orjson
    cannot (an integer beyond 64 bits)."""
    try:
        import orjson

        data = orjson.dumps(obj, default=_json_default,
                            option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    except (ImportError, TypeError, ValueError):
        json.dump(obj, sys.stdout, indent=2, allow_nan=False, default=_json_default)
        sys.stdout.write("\n")
        return
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None:  # UTF-8 bytes, whatever the console's encoding (JSON is UTF-8)
        sys.stdout.flush()
        buf.write(data + b"\n")
        buf.flush()
    else:
        sys.stdout.write(data.decode() + "\n")


def _json_default(o):
    import math

    try:
        import numpy as np

        if isinstance(o, np.generic):
            o = o.item()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, (bool, int, float, str)):  # a numpy scalar, as its Python value
        return o
    if isinstance(o, (set, frozenset, tuple, BuiltOnRead)):
        return list(o)
    if hasattr(o, "to_json"):
        return o.to_json()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def main(argv=None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except ShedlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return 0
    except OSError as exc:  # a path the system refuses (too long, not permitted, a loop, ...): the user's input
        name = str(exc.filename)[:120] if exc.filename is not None else ""
        print(f"error: {name + ': ' if name else ''}{exc.strerror or exc}", file=sys.stderr)
        return 2
