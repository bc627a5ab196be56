"""Property-based tests (hypothesis) over the pages' upload parsers and the History readers:
arbitrary bytes, arbitrary JSON and deeply nested JSON give a parsed result or an ``InputError`` (an
alert in the page, exit 2 on the command line), never another exception (an HTTP 500). The parsers
go through :mod:`engine.bounded`; ``tests/engine/test_fuzz_parsers.py`` covers the engine's own.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.engine.test_fuzz_parsers import FEW, FUZZ, JSON_VALUES, _is_result_or_input_error


@FEW
@given(st.binary(max_size=300), st.sampled_from(["prometheus", "vmexport", "promtool", "auto"]))
def test_history_readers(raw, fmt):
    from dashboard.history.ingest import read_input

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "in.json"
        p.write_bytes(raw)
        _is_result_or_input_error(read_input, p, fmt)


@FEW
@given(st.text(max_size=200))
def test_history_broker_map(text):
    from dashboard.history.ingest import load_broker_map

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "map.yaml"
        p.write_text(text)
        _is_result_or_input_error(load_broker_map, p)


# ------------------------------------------------------------------------------------------ page parsers
@FUZZ
@given(st.binary(max_size=300) | JSON_VALUES.map(lambda v: json.dumps(v).encode())
       | st.integers(60, 3000).map(lambda n: b'{"a": ' + b"[" * n + b"]" * n + b"}"))
def test_bundles_page_upload_parser(raw):
    """The Bundles page's upload parser (deeply nested JSON must not answer HTTP 500)."""
    from dashboard.bundles import parse_upload_bytes

    _is_result_or_input_error(parse_upload_bytes, raw, "upload.json")


@FUZZ
@given(st.binary(max_size=300) | st.integers(60, 3000).map(lambda n: b'{"tables": ' + b"[" * n + b"]" * n + b"}"))
def test_pegasus_page_upload_parser(raw):
    import base64

    from dashboard.pegasus import source_from_upload

    url = "data:application/json;base64," + base64.b64encode(raw).decode()
    _is_result_or_input_error(source_from_upload, url, "p.json")
