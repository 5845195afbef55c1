"""The actions themselves: unit status, logs, restart / stop / start, and signals to a GPU
process. Each change goes validate (``validate``) → authorise (``authorise``) → run, audited
first (``run``) → verify (``verify``); the preamble every change shares (read-only, validate,
who we are on the node) is ``ActionService._begin``.

``ActionService`` works on any ``Runner`` (transport/command.py): the SSH fleet's live
connections, an ``SshCommands`` for the CLI, this machine, or the demo's simulation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

from dltui.config import DEFAULT_UNITS
from dltui.core.models import UnitSample
from dltui.transport.command import CommandResult, Runner, shell_line

from . import authorise, validate
from . import commands as cmd
from .audit import AuditLog
from .journal import journal_denied, journal_entries, journal_line
from .policy import FAILED, NOT_PERMITTED, OK, REFUSED, TIMEOUT, ActionResult, ActionSettings
from .query import NodeQueries
from .run import Attempt
from .verify import Verifier, held_by_start_limit, start_limit_advice

Checked = TypeVar("Checked")


class SignalPlan(NamedTuple):
    """What a signal will run, and why that PID may be signalled."""

    argv: list[str]
    reason: str  # "a GPU process", "a process of dl_train.service"
    who: cmd.Identity
    pid: int


class ActionService:
    def __init__(
        self, runner: Runner, settings: ActionSettings | None = None, audit: AuditLog | None = None
    ):
        self.runner = runner
        self.settings = settings or ActionSettings()
        self.audit = audit or AuditLog()
        if self.settings.origin:  # a browser tab's dashboard (dltui serve)
            self.audit.origin = self.settings.origin
        self.queries = NodeQueries(runner, self.settings)
        self.verifier = Verifier(self.queries, self.settings)

    async def _begin(
        self,
        attempt: Attempt,
        check: Callable[[], Checked],
        named: Callable[[Checked], str] | None = None,
    ) -> tuple[Checked, cmd.Identity] | ActionResult:
        """The preamble of every change: refused under read-only, then ``check`` (validate;
        ``named`` gives the action its checked name), then who we are on the node."""
        if self.settings.read_only:
            return attempt.refuse(validate.READ_ONLY)
        try:
            checked = check()
        except validate.Invalid as exc:
            return attempt.refuse(str(exc))
        if named is not None:
            attempt.action = named(checked)
        who = await self.queries.identity(attempt.node)
        if isinstance(who, CommandResult):
            return attempt.trouble(who)
        return checked, who

    # -- read ---------------------------------------------------------------------------------

    async def status(self, node: str, unit: str) -> ActionResult:
        attempt = Attempt(self.audit, node, f"status {unit}")
        try:
            unit = validate.unit(unit)
        except validate.Invalid as exc:
            return attempt.refuse(str(exc))
        state = await self.queries.show(node, unit)
        if isinstance(state, CommandResult):
            if "not been booted with systemd" in state.stderr:
                return ActionResult(node, f"status {unit}", FAILED, "no systemd on this node")
            return attempt.trouble(state, audit=False)
        return ActionResult(
            node,
            f"status {unit}",
            OK,
            describe_unit(state),
            None,
            time.monotonic() - attempt.started,
            unit=state,
        )

    async def logs(self, node: str, unit: str, lines: int = 50) -> ActionResult:
        attempt = Attempt(self.audit, node, f"logs {unit}")
        try:
            unit = validate.unit(unit)
            lines = validate.journal_lines(lines)
        except validate.Invalid as exc:
            return attempt.refuse(str(exc))
        attempt.action = f"logs {unit}"
        res = await self.queries.run(node, cmd.journal_argv(unit, lines))
        if not res.ok:
            return attempt.trouble(res, audit=False)
        entries = journal_entries(res.stdout)
        text = [journal_line(e) for e in entries]
        message = f"{len(text)} journal lines of {unit}"
        if not entries and "insufficient permissions" in res.stderr + res.stdout:
            message = journal_denied(unit)
        return ActionResult(
            node, attempt.action, OK, message, None, time.monotonic() - attempt.started, text
        )

    # -- change a unit ------------------------------------------------------------------------

    async def preview_unit(self, node: str, verb: str, unit: str) -> str:
        """The exact remote command line a unit change will run on ``node`` (after reading who
        the connection is there), or in brackets why it will not run. Nothing is audited: it
        is what the confirm dialog shows."""
        attempt = Attempt(None, node, f"{verb} {unit}")
        begun = await self._begin(attempt, lambda: validate.unit_change(verb, unit))
        if isinstance(begun, ActionResult):
            if begun.outcome == REFUSED:
                return f"(refused: {begun.message})"
            return f"(cannot reach {node}: {begun.message})"
        (_, base), who = begun
        argv = authorise.change_argv(base, who, self.settings.privilege)
        return shell_line(cmd.with_timeout(argv, self.settings.timeout_s))

    async def unit_change(
        self, node: str, verb: str, unit: str, confirmed: bool = True
    ) -> ActionResult:
        attempt = Attempt(self.audit, node, f"{verb} {unit}")
        begun = await self._begin(
            attempt, lambda: validate.unit_change(verb, unit), lambda c: f"{verb} {c[0]}"
        )
        if isinstance(begun, ActionResult):
            return begun
        (unit, base), who = begun
        if who.systemctl is None:
            return attempt.done(FAILED, "no systemctl on this node: it does not run systemd", None)
        argv = authorise.change_argv(base, who, self.settings.privilege)
        if not confirmed:
            return attempt.refuse(
                f"changes need confirmation (--yes); would run: {shell_line(argv)}"
            )
        sent = cmd.with_timeout(argv, self.settings.timeout_s)
        pending = attempt.declare(sent)
        if isinstance(pending, ActionResult):
            return pending
        with pending:
            before = await self.queries.show(node, unit)
            if isinstance(before, CommandResult):
                return attempt.trouble(before)
            if before.load_state == "not-found":
                return attempt.done(
                    FAILED,
                    f"{unit} does not exist on this node (LoadState=not-found)",
                    None,
                    unit=before,
                )
            since_us = await self.queries.clock_us(node)  # "this action's" lines start here
            res = await attempt.send(self.runner, sent, self.settings.timeout_s + 5)
            if not res.ok:
                return await self._change_failed(
                    attempt, verb, unit, who, argv, sent, res, before, since_us
                )
            if verb == "stop":
                return await self.verifier.stopped(attempt, unit, sent)
            return await self.verifier.running(attempt, verb, unit, before, sent, since_us)

    async def _change_failed(
        self,
        attempt: Attempt,
        verb: str,
        unit: str,
        who: cmd.Identity,
        argv: list[str],
        sent: list[str],
        res: CommandResult,
        before: UnitSample,
        since_us: int | None,
    ) -> ActionResult:
        if res.problem is not None:
            return attempt.trouble(res, argv=sent)
        if res.exit_status == 124:  # coreutils timeout cut it off on the node
            return attempt.done(
                TIMEOUT, f"no answer within {self.settings.timeout_s:g} s: cut off", sent
            )
        denied = authorise.unit_denial(who, argv, res, verb, unit)
        if denied is not None:
            return attempt.done(NOT_PERMITTED, denied[0], sent, details=denied[1])
        error = res.first_error_line()
        after = await self.queries.show(attempt.node, unit)
        state = after if isinstance(after, UnitSample) else None
        new_run = (
            state.invocation_id
            if state is not None and state.invocation_id and state.invocation_id != before.invocation_id
            else None
        )
        journal = await self.queries.run_journal(attempt.node, unit, new_run, since_us)
        if held_by_start_limit([res.stderr, *journal]):
            error = f"systemd refused: {start_limit_advice(unit)}"
        return attempt.done(
            FAILED, f"systemctl {verb} failed: {error}", sent, details=journal, unit=state
        )

    # -- signals ------------------------------------------------------------------------------

    async def plan_signal(
        self,
        node: str,
        pid_text: str | int,
        signal: str = "TERM",
        units: Iterable[str] = DEFAULT_UNITS,
        gpu_pids: Iterable[int] = (),
    ) -> SignalPlan | ActionResult:
        """What a signal will run on ``node``, or the refusal (audited). The PID must be, at
        this moment, a GPU process (``gpu_pids`` from the newest sample, or
        ``nvidia-smi --query-compute-apps`` on the node) or a process of one of ``units``
        (its /proc/PID/cgroup)."""
        attempt = Attempt(self.audit, node, f"signal {signal} {pid_text}")
        return await self._plan_signal(attempt, pid_text, signal, units, gpu_pids)

    async def _plan_signal(
        self,
        attempt: Attempt,
        pid_text: str | int,
        signal: str,
        units: Iterable[str],
        gpu_pids: Iterable[int],
    ) -> SignalPlan | ActionResult:
        begun = await self._begin(attempt, lambda: validate.signal(pid_text, signal, units))
        if isinstance(begun, ActionResult):
            return begun
        (pid, base, checked_units), who = begun
        found = await authorise.signal_reason(
            self.queries, attempt.node, pid, checked_units, gpu_pids
        )
        if isinstance(found, CommandResult):
            if found.problem is not None:
                return attempt.trouble(found)
            return attempt.refuse(f"no process {pid} on this node")
        reason, owner = found
        if reason is None:
            return attempt.refuse(
                f"PID {pid} is neither a GPU process nor a process of "
                f"{', '.join(checked_units) or 'the unit'}: refused"
            )
        if owner == str(who.uid):
            argv = base
        else:
            argv = authorise.change_argv(base, who, self.settings.privilege)
        return SignalPlan(argv, reason, who, pid)

    async def preview_signal(
        self,
        node: str,
        pid_text: str | int,
        signal: str,
        units: Iterable[str],
        gpu_pids: Iterable[int] = (),
    ) -> str | ActionResult:
        plan = await self.plan_signal(node, pid_text, signal, units, gpu_pids)
        if isinstance(plan, ActionResult):
            return plan
        return shell_line(cmd.with_timeout(plan.argv, self.settings.query_timeout_s))

    async def signal(
        self,
        node: str,
        pid_text: str | int,
        signal: str = "TERM",
        units: Iterable[str] = DEFAULT_UNITS,
        gpu_pids: Iterable[int] = (),
        confirmed: bool = True,
    ) -> ActionResult:
        """TERM (or KILL) a GPU process or a process of the unit (see ``plan_signal``)."""
        attempt = Attempt(self.audit, node, f"signal {signal} {pid_text}")
        plan = await self._plan_signal(attempt, pid_text, signal, units, gpu_pids)
        if isinstance(plan, ActionResult):
            return plan
        if not confirmed:
            return attempt.refuse(
                f"changes need confirmation (--yes); would run: {shell_line(plan.argv)}"
            )
        sent = cmd.with_timeout(plan.argv, self.settings.query_timeout_s)
        pending = attempt.declare(sent)
        if isinstance(pending, ActionResult):
            return pending
        with pending:
            res = await attempt.send(self.runner, sent, self.settings.query_timeout_s + 5)
            if not res.ok:
                denied = authorise.signal_denial(plan.who, plan.argv, res)
                if denied is not None:
                    return attempt.done(NOT_PERMITTED, denied[0], sent, details=denied[1])
                if res.problem is not None:
                    return attempt.trouble(res, argv=sent)
                return attempt.done(FAILED, f"kill failed: {res.first_error_line()}", sent)
            said = f"sent {signal} to {plan.pid} ({plan.reason})"
            if await self.verifier.gone(node, plan.pid):
                return attempt.done(OK, f"{said}; it exited", sent)
            hint = "" if signal == "KILL" else "; KILL needs a second confirmation"
            return attempt.done(
                FAILED,
                f"{said}, still running after {self.settings.signal_wait_s:g} s{hint}",
                sent,
            )


def describe_unit(u: UnitSample) -> str:
    if u.error:
        return f"{u.name}: {u.error}"
    if u.load_state == "not-found":
        return f"{u.name}: not-found"
    text = f"{u.name}: {u.active_state}/{u.sub_state}"
    if u.result and u.result != "success":
        text += f", Result={u.result}"
    text += f", NRestarts={u.restarts_total}, MainPID={u.main_pid}"
    if u.exec_main_status:
        text += f", last exit status {u.exec_main_status}"
    return text
