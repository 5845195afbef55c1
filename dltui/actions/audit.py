"""The append-only audit log of actions: one JSON object per line, under the XDG state dir.

Every action goes here, refused or not: when, who (local user), which node, what, the exact
argv sent (None when refused before anything was built), the outcome and how long it took.
Nothing secret is ever in an action's argv or result, so nothing secret is written.
"""

from __future__ import annotations

import getpass
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def default_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "dltui" / "audit.jsonl"


class AuditLog:
    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()

    def record(
        self,
        node: str,
        action: str,
        argv: Sequence[str] | None,
        outcome: str,
        message: str,
        duration_s: float,
        **extra: Any,
    ) -> dict[str, Any]:
        entry = {
            "time": round(time.time(), 3),
            "user": _local_user(),
            "node": node,
            "action": action,
            "argv": list(argv) if argv is not None else None,
            "outcome": outcome,
            "message": message,
            "duration_s": round(duration_s, 3),
            **extra,
        }
        self._write(entry)
        return entry

    def _write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # O_APPEND: concurrent dltui sessions never interleave within a line (one write each)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def entries(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


class MemoryAudit(AuditLog):
    """The audit of a simulated fleet (the demo): kept in memory, never mixed into the real log."""

    def __init__(self) -> None:
        super().__init__("/nonexistent/demo-audit.jsonl")
        self.kept: list[dict[str, Any]] = []

    def _write(self, entry: dict[str, Any]) -> None:
        self.kept.append(dict(entry, simulated=True))

    def entries(self) -> list[dict[str, Any]]:
        return list(self.kept)
