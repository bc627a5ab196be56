"""Helpers for dashboard tests: data URLs as dcc.Upload sends them, a fresh session id, a Spark session."""
import base64
import os
import uuid

import pytest


def data_url(raw: bytes, mime: str = "application/octet-stream") -> str:
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


@pytest.fixture
def sid():
    return uuid.uuid4().hex


@pytest.fixture(scope="package")
def spark():
    """The ``local[2]`` Spark session the dashboard tests share (skipped without Java), stopped after the
    last of them: one JVM for every module instead of one per module (each start and warm-up costs
    seconds). Tests that need a session of their own (a forked child, a standalone cluster) start it in
    their own process."""
    from dashboard.spark import java_available

    ok, why = java_available()
    if not ok:
        pytest.skip(f"Spark needs Java: {why}")
    old = os.environ.get("LB_SPARK_MASTER")
    os.environ["LB_SPARK_MASTER"] = "local[2]"
    from dashboard.spark import get_spark, stop_spark

    s = get_spark()
    yield s
    stop_spark()
    if old is None:
        os.environ.pop("LB_SPARK_MASTER", None)
    else:
        os.environ["LB_SPARK_MASTER"] = old
