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
