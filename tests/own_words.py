"""What a dltui command wrote on stderr, told apart from anything else that got there.

dltui's own lines on stderr start with ``dltui: ``. A dependency's warning, a Python
traceback or an ``Exception ignored in`` line does not; tests look for dltui's line wherever it
is instead of reading the first line (a new dependency warning above it once failed two tests
while the product was right).
"""

from __future__ import annotations

from collections.abc import Iterable

OWN = "dltui: "


def own_line(stderr: str, start: str) -> str:
    """The first line of ``stderr`` that starts with ``start`` (a ``dltui: …`` line); fails with
    all of stderr when there is none."""
    for line in stderr.splitlines():
        if line.startswith(start):
            return line
    raise AssertionError(f"no line starting {start!r} on stderr:\n{stderr}")


def foreign_lines(stderr: str) -> list[str]:
    """Lines on stderr that dltui did not write (blank lines aside)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(OWN)]


def read_until_own_line(lines: Iterable[str], start: str, limit: int = 50) -> tuple[str, list[str]]:
    """Read a running process's stderr (``lines``: ``iter(proc.stderr.readline, "")``) up to its
    line starting with ``start``; returns that line and every line read before it."""
    seen: list[str] = []
    for line in lines:
        if line.startswith(start):
            return line, seen
        seen.append(line)
        if len(seen) >= limit:
            break
    raise AssertionError(f"no line starting {start!r} on stderr; read:\n{''.join(seen)}")
