"""Failures of one data source, reported once in plain words while the probe keeps going."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator


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

    @contextlib.contextmanager
    def guard(self, source: str) -> Iterator[None]:
        """Run a block for ``source``; an exception becomes a report instead of a crash."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - one broken source must not stop the probe
            self.report(source, describe(exc))
        else:
            self.clear(source)


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
