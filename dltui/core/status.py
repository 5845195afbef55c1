"""Connection status words: one word per node, with a plain-words reason beside it.

``Status`` is the type of the word wherever it travels (transports, fleet state, the JSON
snapshot); a word read from outside (a recording) goes through ``status_of``.
"""

from __future__ import annotations

from typing import Literal, get_args

Status = Literal[
    "connecting",
    "ok",
    "reconnecting",
    "unreachable",
    "timeout",
    "auth-failed",
    "host-key-unknown",
    "host-key-changed",
    "probe-failed",
]
STATUSES: tuple[Status, ...] = get_args(Status)

CONNECTING: Status = "connecting"
OK: Status = "ok"
RECONNECTING: Status = "reconnecting"
UNREACHABLE: Status = "unreachable"
TIMEOUT: Status = "timeout"
AUTH_FAILED: Status = "auth-failed"
HOST_KEY_UNKNOWN: Status = "host-key-unknown"
HOST_KEY_CHANGED: Status = "host-key-changed"
PROBE_FAILED: Status = "probe-failed"


def status_of(word: object) -> Status | None:
    """``word`` as a status, None when it is not one (from a recording of another version)."""
    return next((s for s in STATUSES if s == word), None)

# Statuses that mean "we have no live data from this node" (snapshot exit code 3).
DOWN = frozenset(
    {UNREACHABLE, TIMEOUT, AUTH_FAILED, HOST_KEY_UNKNOWN, HOST_KEY_CHANGED, PROBE_FAILED, RECONNECTING}
)
