"""dashboard.uploads.decode_data_url: the SIMD base64 decoder accepts and refuses exactly what the
standard library's strict decoder does (a ``dcc.Upload`` data URL)."""
from __future__ import annotations

import base64
import random

import pytest

from dashboard.uploads import decode_data_url
from engine.errors import InputError


def test_same_bytes_as_the_standard_library():
    rnd = random.Random(7)
    for n in list(range(1, 70)) + [4096, 100_003]:
        raw = bytes(rnd.randrange(256) for _ in range(n)) if n < 5000 else rnd.randbytes(n)
        b64 = base64.b64encode(raw).decode()
        assert decode_data_url("data:application/json;base64," + b64, "f.json", 1 << 20) == raw


@pytest.mark.parametrize("b64", ["QUJD====", "QUJDRA==", "QUJDRA=="[:-1] + "="])
def test_padding_as_the_standard_library(b64):
    try:
        want = base64.b64decode(b64, validate=True)
    except ValueError:
        want = None
    if want is None:
        with pytest.raises(InputError, match="bad base64"):
            decode_data_url("data:;base64," + b64, "f.json", 1 << 20)
    else:  # surplus padding: accepted by the standard library, so accepted here
        assert decode_data_url("data:;base64," + b64, "f.json", 1 << 20) == want


@pytest.mark.parametrize("b64", ["QU JD", "QUJD\n", "QUJ=RA==", "Q", "é", "QUJD!"])
def test_bad_base64_refused_naming_the_file(b64):
    with pytest.raises(InputError, match=r"f\.json: the upload is corrupted \(bad base64\)"):
        decode_data_url("data:;base64," + b64, "f.json", 1 << 20)


@pytest.mark.parametrize("b64", [
    "QUJD" * 9, "QUJD" * 9 + "QQ==", "QUJD" * 9 + "QUI=", "QUJD" * 9 + "QUJD====",  # whole, padded, surplus padding
    "QUJD" * 3 + "QQ==" + "QUJD" * 6,  # padding inside an early piece
    "QUJD" * 4 + "QQ==" + "QUJD" * 2,  # padding at the end of a piece that is not the last
    "QUJD" * 5 + " " + "QUJD" * 4, "QUJD" * 5 + "!" + "QUJD" * 4, "QUJD" * 9 + "\n",  # a foreign character
    "QUJD" * 9 + "Q", "QUJD" * 9 + "QU", "QUJD" * 8 + "QUJ",  # a length that is not a multiple of 4
    "QUJD" * 8 + "é",
])
def test_piecewise_decoding_decides_as_the_whole(b64, monkeypatch):
    """A big data URL is decoded a few characters at a time (here 8): the same bytes, and the same
    refusals, as decoding the text at once with the standard library's strict decoder."""
    import dashboard.uploads as up

    monkeypatch.setattr(up, "_CHUNK", 8)
    try:
        want = base64.b64decode(b64, validate=True)
    except ValueError:
        want = None
    url = "data:application/json;base64," + b64
    if want is None:
        with pytest.raises(InputError, match="bad base64"):
            decode_data_url(url, "f.json", 1 << 20)
    else:
        assert decode_data_url(url, "f.json", 1 << 20) == want


def test_piecewise_decoding_is_used_for_clean_text(monkeypatch):
    import dashboard.uploads as up

    monkeypatch.setattr(up, "_CHUNK", 8)
    whole = []
    monkeypatch.setattr(up, "_b64decode", lambda t: whole.append(t) or base64.b64decode(t, validate=True))
    raw = bytes(range(200))
    assert decode_data_url("data:;base64," + base64.b64encode(raw).decode(), "f.json", 1 << 20) == raw
    assert whole == []  # decoded piece by piece, never as one text
