"""Failures of one data source, reported once in plain words while the probe keeps going."""


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

    def guard(self, source):
        """Run a block for ``source``; an exception becomes a report instead of a crash."""
        return _Guard(self, source)


class _Guard:
    """``with problems.guard(source):`` -- a plain object, not a generator context manager:
    a host sample enters seven of these every second, and a generator's setup was most of it."""

    __slots__ = ("problems", "source")

    def __init__(self, problems, source):
        self.problems = problems
        self.source = source

    def __enter__(self):
        return None

    def __exit__(self, kind, exc, tb):
        if kind is None:
            if self.source in self.problems.active:
                self.problems.clear(self.source)
            return False
        if not issubclass(kind, Exception):  # KeyboardInterrupt, SystemExit: not a source's fault
            return False
        self.problems.report(self.source, describe(exc))  # one broken source must not stop the probe
        return True


def describe(exc):
    """One line for an exception: its message, or its type when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
