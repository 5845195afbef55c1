"""Failures of one data source, reported once in plain words while the probe keeps going."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any


class Problems:
    """Remembers which sources are failing so each failure is reported once, not every tick.

    A source that recovers is cleared; if it fails again later it is reported again.
    """

    def __init__(self) -> None:
        self.active: dict[str, str] = {}
        self.pending: list[tuple[str, str]] = []
        self.notes: list[tuple[str, str]] = []  # normal conditions worth saying once, not failures

    def report(self, source: str, message: str) -> None:
        if self.active.get(source) != message:
            self.active[source] = message
            self.pending.append((source, message))

    def clear(self, source: str) -> None:
        self.active.pop(source, None)

    def drain(self) -> list[tuple[str, str]]:
        pending, self.pending = self.pending, []
        return pending

    def note(self, source: str, message: str) -> None:
        """A normal condition worth saying once (a container without systemd): an info event
        with a stable id, so the operator's side keeps the first and drops a reconnect's."""
        self.notes.append((source, message))

    def drain_notes(self) -> list[dict[str, Any]]:
        """The notes as event dicts (shaped like NodeEvent)."""
        notes, self.notes = self.notes, []
        return [note_event(source, message) for source, message in notes]

    def guard(self, source: str) -> _Guard:
        """Run a block for ``source``; an exception becomes a report instead of a crash."""
        return _Guard(self, source)


class _Guard:
    """``with problems.guard(source):`` -- a plain object, not a generator context manager:
    a host sample enters seven of these every second, and a generator's setup was most of it."""

    __slots__ = ("problems", "source")

    def __init__(self, problems: Problems, source: str) -> None:
        self.problems = problems
        self.source = source

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if kind is None:
            if self.source in self.problems.active:
                self.problems.clear(self.source)
            return False
        if exc is None or not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit:
            return False  # not a source's fault
        self.problems.report(self.source, describe(exc))  # one broken source must not stop the probe
        return True


def note_event(source: str, message: str) -> dict[str, Any]:
    return {
        "time": round(time.time(), 3),
        "kind": source,
        "message": message,
        "severity": "info",
        "data": {"id": "note:%s:%s" % (source, message)},
    }


def describe(exc: BaseException) -> str:
    """One line for an exception: its message, or its type when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
