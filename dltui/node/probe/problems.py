"""Failures of one data source, reported once in plain words while the probe keeps going."""

from __future__ import annotations

import contextlib
from typing import Iterator


class Problems:
    """Remembers which sources are failing so each failure is reported once, not every tick.

    A source that recovers is cleared; if it fails again later it is reported again.
    """

    def __init__(self) -> None:
        self.active: dict[str, str] = {}
        self.pending: list[tuple[str, str]] = []

    def report(self, source: str, message: str) -> None:
        if self.active.get(source) != message:
            self.active[source] = message
            self.pending.append((source, message))

    def clear(self, source: str) -> None:
        self.active.pop(source, None)

    def drain(self) -> list[tuple[str, str]]:
        pending, self.pending = self.pending, []
        return pending

    @contextlib.contextmanager
    def guard(self, source: str) -> Iterator[None]:
        """Run a block for ``source``; an exception becomes a report instead of a crash."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - one broken source must not stop the probe
            self.report(source, describe(exc))
        else:
            self.clear(source)


def describe(exc: BaseException) -> str:
    """One line for an exception: its message, or its type when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
