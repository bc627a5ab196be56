"""One way for a page to answer a download button: build the file, or say why not and keep the page.

Every page has buttons that make a file on the server — figures rendered by Kaleido, a report, a
CSV or JSON plan, ``broker.conf`` lines. Each download callback is then two lines::

    from dashboard import downloads

    def export_figures(n, fmt, ...):
        return downloads.respond(lambda: downloads.figures(tuner_figures(a), fmt, "shedlab-figures"),
                                 "figure export", alert)

:func:`respond` returns ``(data for dcc.Download, alert children)``: the file and ``no_update`` when
it was built; ``no_update`` and one alert naming the failure otherwise — a bad input
(:class:`~engine.errors.ShedlabError`) as a warning with its message, anything else (Chromium
missing, a render timeout) as an error, logged. The file builders (:func:`text`, :func:`data`,
:func:`figures`, :func:`csv`) give the dict ``dcc.Download`` takes.
"""
from __future__ import annotations

import base64
import io
import logging
from typing import Callable

from dash import no_update

from engine.errors import ShedlabError

__all__ = ["text", "data", "figures", "csv", "respond", "MIME"]

log = logging.getLogger(__name__)

#: content types by file extension
MIME = {"csv": "text/csv", "json": "application/json", "html": "text/html", "txt": "text/plain",
        "sh": "text/plain", "conf": "text/plain", "zip": "application/zip", "png": "image/png",
        "svg": "image/svg+xml"}


def _mime(filename: str, mime: str | None) -> str:
    return mime or MIME.get(filename.rsplit(".", 1)[-1].lower(), "application/octet-stream")


def text(content: str, filename: str, mime: str | None = None) -> dict:
    """A text file for ``dcc.Download`` (content type from the extension unless given)."""
    return {"content": content, "filename": filename, "type": _mime(filename, mime)}


def data(content: bytes, filename: str, mime: str | None = None) -> dict:
    """A binary file for ``dcc.Download`` (base64, as ``dcc.send_bytes`` makes it)."""
    return {"content": base64.b64encode(content).decode(), "filename": filename, "type": _mime(filename, mime),
            "base64": True}


def figures(figs: dict, fmt: str, stem: str) -> dict:
    """Every figure of ``figs`` (``{name: (title, figure)}``) rendered on the server (Kaleido with the
    system Chromium) as ``<name>.png`` or ``.svg``, zipped as ``<stem>.zip``."""
    from .export import figures_zip

    fmt = fmt if fmt in ("png", "svg") else "png"
    return data(figures_zip(figs, fmt), f"{stem}.zip")


def csv(frame, filename: str) -> dict:
    """A pandas DataFrame (or rows: a list of dicts) as a CSV file, without the index."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(list(frame))
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return text(buf.getvalue(), filename)


def respond(build: Callable[[], dict], what: str, alert: Callable, *, logger: logging.Logger | None = None):
    """``(file, no_update)`` from ``build()``, or ``(no_update, [alert])`` saying why it failed.

    ``what`` names the download in the message ("figure export", "report"); ``alert(kind, text)``
    makes the page's alert component. A :class:`~engine.errors.ShedlabError` (bad or expired input)
    is said, not logged; any other exception is logged with its traceback.
    """
    try:
        return build(), no_update
    except ShedlabError as exc:
        return no_update, [alert("warning", f"{what}: {exc}")]
    except Exception as exc:  # noqa: BLE001 - Chromium missing, a render timeout, …: say so, keep the page
        (logger or log).exception("%s failed", what)
        return no_update, [alert("error", f"{what} failed: {type(exc).__name__}: {exc}")]
