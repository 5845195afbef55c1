"""What a test needs from the machine: in CI a gap fails the run, on a workstation it skips."""

from __future__ import annotations

import os

import pytest


def require(condition: bool, what: str) -> None:
    """CI must have what the tests need (``CI=true``: a gap fails); elsewhere it skips."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(what)
    pytest.skip(what)
