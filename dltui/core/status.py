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
