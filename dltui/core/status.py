"""Connection status words: one word per node, with a plain-words reason beside it."""

CONNECTING = "connecting"
OK = "ok"
RECONNECTING = "reconnecting"
UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
AUTH_FAILED = "auth-failed"
HOST_KEY_UNKNOWN = "host-key-unknown"
HOST_KEY_CHANGED = "host-key-changed"
PROBE_FAILED = "probe-failed"

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
ADVICE = {
    AUTH_FAILED: "check the user and key the SSH config gives this host (ssh -v HOST)",
    HOST_KEY_UNKNOWN: "verify the fingerprint, then add it (ssh HOST once, or --accept-new-host-keys)",
    HOST_KEY_CHANGED: "the host key changed: verify the host before replacing its known_hosts line",
    PROBE_FAILED: "the probe could not run: is python3 (3.8+) installed on the node?",
    TIMEOUT: "check the network path and the jump host",
    UNREACHABLE: "check the network path and the jump host",
}
