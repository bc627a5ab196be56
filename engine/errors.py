"""Errors raised by the engine for bad input or usage.

Every error names the file (``source``) and, where it applies, the field, so the command line
can print one clear line and exit with status 2 and the dashboard can show an alert.
"""
from __future__ import annotations

__all__ = ["ShedlabError", "InputError", "UsageError"]


class ShedlabError(Exception):
    """Base class of every error Shedlab reports to a user instead of crashing."""


class InputError(ShedlabError, ValueError):
    """Bad input data: not JSON, wrong type, negative or NaN usage, too large, ...

    Parameters
    ----------
    message : str
        What is wrong, in words a user understands.
    source : str, optional
        The file (or upload) the data came from.
    field : str, optional
        The JSON path / config key / column that is wrong, e.g. ``brokers["b1"].cpu.usage``.
    """

    def __init__(self, message: str, source: str | None = None, field: str | None = None):
        self.message = message
        self.source = source
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:  # one line: "FILE: field X: message"
        parts = []
        if self.source:
            parts.append(str(self.source))
        if self.field:
            parts.append(f"field {self.field}")
        parts.append(self.message)
        return ": ".join(parts)

    def with_source(self, source: str) -> "InputError":
        """Return a copy naming ``source`` when the error was raised without one."""
        if self.source:
            return self
        return InputError(self.message, source=source, field=self.field)


class UsageError(ShedlabError):
    """Bad command-line usage (unknown strategy name, missing option, ...)."""
