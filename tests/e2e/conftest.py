"""Shared fixtures of the browser tests."""
import pytest


@pytest.fixture(scope="module")
def dash_app():
    """The Shedlab Dash app, as ``dash_duo.start_server`` takes it."""
    import app as appmod

    return appmod.app
