"""The append-only audit log of actions: one JSON object per line, in the state folder.

Audit first: before a command that changes a node is sent, its intent (time, local user, node,
action, the exact argv) is appended and fsynced; when that fails the action is refused and
nothing is sent (``AuditError``). Its outcome follows under the same ``id`` once known: ok,
failed, not-permitted, unreachable, timeout, or interrupted (Ctrl-C, SIGTERM, the dashboard
closed while it ran). A refusal, with nothing sent, is one line. Nothing secret is ever in an
action's argv or result, so nothing secret is written.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from dltui.private_files import UnsafePath, open_private
from dltui.state_dir import state_dir

INTENT = "intent"  # the outcome word of the line written before sending
INTERRUPTED = "interrupted"


def default_path() -> Path:
    return state_dir() / "audit.jsonl"


class AuditError(Exception):
    """The audit log cannot be written; the message says where and why, in one line."""


class AuditLog:
    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_path()
        # who asked, when not the terminal this runs in (``dltui serve``: "browser ADDR");
        # on every line when set
        self.origin: str | None = None

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
        """One line for an action that sent nothing (refused). Raises ``AuditError``."""
        entry = {
            "time": round(time.time(), 3),
            "user": _local_user(),
            "node": node,
            "action": action,
            "argv": list(argv) if argv is not None else None,
            "outcome": outcome,
            "message": message,
            "duration_s": round(duration_s, 3),
            **self._origin(),
            **extra,
        }
        self._write(entry)
        return entry

    def begin(
        self, node: str, action: str, argv: Sequence[str], **extra: Any
    ) -> Pending:
        """The intent, written and fsynced before ``argv`` is sent. Raises ``AuditError``:
        then the caller must not send it."""
        entry = {
            "time": round(time.time(), 3),
            "user": _local_user(),
            "node": node,
            "action": action,
            "argv": list(argv),
            "outcome": INTENT,
            "id": secrets.token_hex(6),
            **self._origin(),
            **extra,
        }
        self._write(entry)
        return Pending(self, entry)

    def _origin(self) -> dict[str, str]:
        return {"origin": self.origin} if self.origin else {}

    def _write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            # O_APPEND: concurrent dltui sessions never interleave within a line (one write each)
            fd = open_private(self.path, os.O_WRONLY | os.O_APPEND, durable=True)
            try:
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except UnsafePath as exc:  # a link, another user's file or folder (named when it is that)
            why = exc.strerror if exc.filename == str(self.path) else str(exc)
            raise AuditError(f"cannot write the audit log {self.path}: {why}") from None
        except OSError as exc:
            raise AuditError(
                f"cannot write the audit log {self.path}: {exc.strerror or exc}"
            ) from None

    def entries(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]


class Pending:
    """An action whose intent is in the log and whose outcome is not yet. As a context
    manager: leaving it by an exception before ``finish`` writes ``interrupted`` (a
    cancellation, Ctrl-C, SIGTERM turned into one) or ``failed`` (a bug), then lets it go on."""

    def __init__(self, log: AuditLog, intent: dict[str, Any]):
        self.log = log
        self.intent = intent
        self.started = time.monotonic()
        self.finished = False
        self.sent: bool | None = None  # set by the caller: whether the command went out

    def finish(
        self, outcome: str, message: str, duration_s: float | None = None, **extra: Any
    ) -> str | None:
        """Writes the outcome; None, or why it could not be written (the action has been sent
        by now: that is said with its result, never raised)."""
        self.finished = True
        took = time.monotonic() - self.started if duration_s is None else duration_s
        entry = {
            "time": round(time.time(), 3),
            **{k: self.intent[k] for k in ("user", "node", "action", "argv", "id")},
            "outcome": outcome,
            "message": message,
            "duration_s": round(took, 3),
            **({} if self.sent is None else {"sent": self.sent}),
            **{k: v for k, v in self.intent.items() if k not in _INTENT_KEYS},
            **extra,
        }
        try:
            self.log._write(entry)
        except AuditError as exc:
            return str(exc)
        return None

    def __enter__(self) -> Pending:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None or self.finished:
            return
        if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
            self.finish(INTERRUPTED, "dltui was interrupted before the outcome was known")
        else:
            self.finish("failed", f"dltui error before the outcome was known: {exc!r}")


_INTENT_KEYS = ("time", "user", "node", "action", "argv", "outcome", "id")


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
