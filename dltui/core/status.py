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

# The transport's plan for its next try, appended to a down node's reason for the status line
# only: the timeline keeps the event, and a snapshot (which stops trying when it ends) the
# failure.
_RETRY = "; retrying "


def with_retry(reason: str, plan: str) -> str:
    """``lost the connection to X; retrying at 16:06:58 (attempt 2)``."""
    return f"{reason}{_RETRY}{plan}"


def without_retry(reason: str | None) -> str | None:
    """The reason without the retry plan ``with_retry`` added."""
    if not reason:
        return reason
    head, sep, _ = reason.rpartition(_RETRY)
    return head if sep else reason


# What to do about each down status word, in plain words (the node_unreachable alert, the
# snapshot's UNKNOWN line).
ADVICE: dict[str, str] = {
    AUTH_FAILED: "check the user and key the SSH config gives this host (ssh -v HOST)",
    HOST_KEY_UNKNOWN: "verify the fingerprint, then add it (ssh HOST once, or --accept-new-host-keys)",
    HOST_KEY_CHANGED: "the host key changed: verify the host before replacing its known_hosts line",
    PROBE_FAILED: "the probe could not run: is python3 (3.8+) installed on the node?",
    TIMEOUT: "check the network path and the jump host",
    UNREACHABLE: "check the network path and the jump host",
}
