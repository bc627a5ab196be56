"""Helpers for dashboard tests: data URLs as dcc.Upload sends them, a fresh session id."""
import base64
import uuid

import pytest


def data_url(raw: bytes, mime: str = "application/octet-stream") -> str:
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


@pytest.fixture
def sid():
    return uuid.uuid4().hex
