"""Run: one action on one node, from its first check to its audited result. Audit first: the
command that changes the node is sent only once its intent is in the audit log (fsynced);
when the log cannot be written the action is refused, nothing sent. The outcome follows; an
action left by Ctrl-C, SIGTERM or a closed dashboard while it ran is logged ``interrupted``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from dltui.core.models import UnitSample
from dltui.transport.command import TIMED_OUT, CommandResult, Runner, shell_line

from .audit import AuditError, AuditLog, Pending
from .policy import FAILED, REFUSED, TIMEOUT, UNREACHABLE, ActionResult, Outcome


class Attempt:
    def __init__(self, audit: AuditLog | None, node: str, action: str):
        self.audit = audit  # None: a preview, of which nothing is audited
        self.node = node
        self.action = action
        self.started = time.monotonic()
        self.pending: Pending | None = None  # the intent written, its outcome not yet

    def refuse(self, why: str) -> ActionResult:
        return self.done(REFUSED, why, None)

    def declare(self, argv: Sequence[str]) -> Pending | ActionResult:
        """Writes the intent to send ``argv``, or answers the refusal when it cannot be
        written. Hold the answer as a context manager around everything up to the result:
        leaving it by Ctrl-C, SIGTERM or a cancellation logs ``interrupted``."""
        if self.audit is None:
            raise RuntimeError("a preview sends nothing")
        try:
            self.pending = self.audit.begin(self.node, self.action, argv)
        except AuditError as exc:
            return self._result(REFUSED, f"{exc}; nothing was sent", None)
        self.pending.sent = False
        return self.pending

    async def send(
        self, runner: Runner, argv: Sequence[str], timeout_s: float
    ) -> CommandResult:
        if self.pending is None:  # audit first, by construction
            raise RuntimeError("an action is sent only after its intent is audited")
        self.pending.sent = True
        return await runner.run_command(self.node, argv, timeout_s)

    def trouble(
        self, res: CommandResult, argv: Sequence[str] | None = None, audit: bool = True
    ) -> ActionResult:
        """The node's trouble (unreachable, timed out, an error) as the action's result."""
        if res.problem == TIMED_OUT:
            outcome, message = TIMEOUT, res.reason or "timed out"
        elif res.problem is not None:
            outcome, message = UNREACHABLE, res.reason or "unreachable"
        else:
            outcome, message = FAILED, f"{shell_line(res.argv[:3])}…: {res.first_error_line()}"
        if not audit:
            return self._result(outcome, message, None)
        return self.done(outcome, message, argv)

    def done(
        self,
        outcome: Outcome,
        message: str,
        argv: Sequence[str] | None,
        details: list[str] | None = None,
        unit: UnitSample | None = None,
    ) -> ActionResult:
        """The result, audited (the outcome of the intent, or one line when nothing was sent)."""
        duration = time.monotonic() - self.started
        lost: str | None = None
        if self.pending is not None:
            lost = self.pending.finish(outcome, message, duration)
        elif self.audit is not None:
            try:
                self.audit.record(self.node, self.action, argv, outcome, message, duration)
            except AuditError as exc:
                lost = str(exc)
        if lost:
            message = f"{message} (not in the audit log: {lost})"
        return self._result(outcome, message, argv, details, unit)

    def _result(
        self,
        outcome: Outcome,
        message: str,
        argv: Sequence[str] | None,
        details: list[str] | None = None,
        unit: UnitSample | None = None,
    ) -> ActionResult:
        return ActionResult(
            self.node,
            self.action,
            outcome,
            message,
            tuple(argv) if argv else None,
            time.monotonic() - self.started,
            details or [],
            unit,
        )
