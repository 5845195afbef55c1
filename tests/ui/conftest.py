"""Times drawn on screen (chart axes) are local time: every UI test draws them in UTC."""

import time

import pytest


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
