"""Failures of one data source, reported once in plain words while the probe keeps going."""

import contextlib


class Problems:
    """Remembers which sources are failing so each failure is reported once, not every tick.

    A source that recovers is cleared; if it fails again later it is reported again.
    """

    def __init__(self):
        self.active = {}
        self.pending = []

    def report(self, source, message):
        if self.active.get(source) != message:
            self.active[source] = message
            self.pending.append((source, message))

    def clear(self, source):
        self.active.pop(source, None)

    def drain(self):
        pending, self.pending = self.pending, []
        return pending

    @contextlib.contextmanager
    def guard(self, source):
        """Run a block for ``source``; an exception becomes a report instead of a crash."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - one broken source must not stop the probe
            self.report(source, describe(exc))
        else:
            self.clear(source)


def describe(exc):
    """One line for an exception: its message, or its type when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
