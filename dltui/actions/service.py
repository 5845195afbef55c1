"""The actions themselves: unit status, logs, restart / stop / start, and signals to a GPU
process, each validated, privileged as little as possible, verified and audited.

``ActionService`` works on any ``Runner`` (command.py): the SSH fleet's live connections,
an ``SshCommands`` for the CLI, this machine, or the demo's simulation.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Sequence

from dltui.core.models import UnitSample
from dltui.core.text import clean, clean_value
from dltui.node.probe.privilege import sudo_refused
from dltui.node.probe.units import parse_show, unit_record
from dltui.transport.command import TIMED_OUT, CommandResult, Runner, shell_line

from . import commands as cmd
from . import names
from .audit import AuditLog
from .policy import (
    FAILED,
    NOT_PERMITTED,
    OK,
    REFUSED,
    TIMEOUT,
    UNREACHABLE,
    ActionResult,
    ActionSettings,
)

JOURNAL_LINES = 20
JOURNAL_TRIES, JOURNAL_RETRY_S = 4, 0.5  # an invocation's journal read again while empty
READ_ONLY = "read-only: actions that change a node are disabled"
_POLKIT_DENIED = ("Interactive authentication required", "Access denied")
# The words of systemctl and of the unit's journal when its start rate limit refuses a start.
# systemd 252 keeps Result=exit-code and says only "Start request repeated too quickly" in the
# journal, while systemctl blames the control process: the journal is the reliable witness.
_START_LIMIT = ("attempted too often", "start-limit-hit", "repeated too quickly")


def held_by_start_limit(texts: Iterable[str]) -> bool:
    return any(marker in text for text in texts for marker in _START_LIMIT)


def start_limit_advice(unit: str) -> str:
    """What to do once systemd's start rate limit holds a unit: another restart cannot help."""
    return (
        f"{unit} hit its start limit (StartLimitBurst starts within StartLimitIntervalSec): "
        "systemd refuses further starts, so restarting again will not help. Find why it fails "
        f"(journal below), fix that, then allow starts again: systemctl reset-failed {unit}"
    )


class ActionService:
    def __init__(
        self, runner: Runner, settings: ActionSettings | None = None, audit: AuditLog | None = None
    ):
        self.runner = runner
        self.settings = settings or ActionSettings()
        self.audit = audit or AuditLog()
        self._who: dict[str, cmd.Identity] = {}

    # -- what a change will send, for the confirm dialog ---------------------------------------

    async def preview_unit(self, node: str, verb: str, unit: str) -> str:
        """The exact remote command line a unit change will run on ``node`` (after reading who
        the connection is there). Raises ``names.InvalidName``; an unreachable node gives its
        reason instead of a line."""
        unit = names.unit_name(unit)
        who = await self.identity(node)
        if isinstance(who, CommandResult):
            return f"(cannot reach {node}: {who.first_error_line()})"
        return shell_line(
            cmd.with_timeout(
                self._change_argv(cmd.unit_argv(verb, unit), who), self.settings.timeout_s
            )
        )

    # -- read ---------------------------------------------------------------------------------

    async def status(self, node: str, unit: str) -> ActionResult:
        started = time.monotonic()
        try:
            unit = names.unit_name(unit)
        except names.InvalidName as exc:
            return self._refused(node, f"status {unit}", str(exc), started)
        state = await self.show(node, unit)
        if isinstance(state, CommandResult):
            if "not been booted with systemd" in state.stderr:
                return ActionResult(node, f"status {unit}", FAILED, "no systemd on this node")
            return self._trouble(node, f"status {unit}", state, started, audit=False)
        return ActionResult(
            node,
            f"status {unit}",
            OK,
            describe_unit(state),
            None,
            time.monotonic() - started,
            unit=state,
        )

    async def logs(self, node: str, unit: str, lines: int = 50) -> ActionResult:
        started = time.monotonic()
        try:
            unit = names.unit_name(unit)
            lines = names.journal_lines(lines)
        except names.InvalidName as exc:
            return self._refused(node, f"logs {unit}", str(exc), started)
        res = await self.runner.run_command(
            node, cmd.journal_argv(unit, lines), self.settings.query_timeout_s
        )
        if not res.ok:
            return self._trouble(node, f"logs {unit}", res, started, audit=False)
        entries = journal_entries(res.stdout)
        text = [journal_line(e) for e in entries]
        message = f"{len(text)} journal lines of {unit}"
        if not entries and "insufficient permissions" in res.stderr + res.stdout:
            message = journal_denied(unit)
        return ActionResult(
            node, f"logs {unit}", OK, message, None, time.monotonic() - started, text
        )

    async def show(self, node: str, unit: str) -> UnitSample | CommandResult:
        res = await self.runner.run_command(
            node, cmd.show_argv([unit]), self.settings.query_timeout_s
        )
        if not res.ok:
            return res
        blocks = parse_show(res.stdout)
        state = clean_value(blocks[0]) if blocks else {"LoadState": "not-found"}
        return UnitSample(**unit_record(unit, state))

    async def identity(self, node: str) -> cmd.Identity | CommandResult:
        who = self._who.get(node)
        if who is not None:
            return who
        res = await self.runner.run_command(node, cmd.IDENTITY_ARGV, self.settings.query_timeout_s)
        if not res.ok:
            return res
        try:
            who = self._who[node] = cmd.Identity.parse(res.stdout)
        except ValueError:
            return CommandResult(
                res.argv, 1, res.stdout, f"could not tell who we are on {node}: {res.stdout[:80]!r}"
            )
        return who

    # -- change a unit ------------------------------------------------------------------------

    async def unit_change(
        self, node: str, verb: str, unit: str, confirmed: bool = True
    ) -> ActionResult:
        started = time.monotonic()
        action = f"{verb} {unit}"
        if self.settings.read_only:
            return self._refused(node, action, READ_ONLY, started)
        try:
            unit = names.unit_name(unit)
            base = cmd.unit_argv(verb, unit)
        except (names.InvalidName, ValueError) as exc:
            return self._refused(node, action, str(exc), started)
        action = f"{verb} {unit}"
        who = await self.identity(node)
        if isinstance(who, CommandResult):
            return self._trouble(node, action, who, started)
        if who.systemctl is None:
            return self._done(
                node,
                action,
                FAILED,
                "no systemctl on this node: it does not run systemd",
                None,
                started,
            )
        argv = self._change_argv(base, who)
        if not confirmed:
            return self._refused(
                node,
                action,
                f"changes need confirmation (--yes); would run: {shell_line(argv)}",
                started,
            )
        before = await self.show(node, unit)
        if isinstance(before, CommandResult):
            return self._trouble(node, action, before, started)
        if before.load_state == "not-found":
            return self._done(
                node,
                action,
                FAILED,
                f"{unit} does not exist on this node (LoadState=not-found)",
                None,
                started,
                unit=before,
            )
        sent = cmd.with_timeout(argv, self.settings.timeout_s)
        res = await self.runner.run_command(node, sent, self.settings.timeout_s + 5)
        if not res.ok:
            return await self._change_failed(
                node, action, verb, unit, who, argv, sent, res, started
            )
        if verb == "stop":
            return await self._verify_stop(node, action, unit, sent, started)
        return await self._verify_running(node, action, verb, unit, before, sent, started)

    def _change_argv(self, base: Sequence[str], who: cmd.Identity) -> list[str]:
        return cmd.privileged(base, who, self.settings.privilege)

    async def _change_failed(
        self,
        node: str,
        action: str,
        verb: str,
        unit: str,
        who: cmd.Identity,
        argv: list[str],
        sent: list[str],
        res: CommandResult,
        started: float,
    ) -> ActionResult:
        if res.problem is not None:
            return self._trouble(node, action, res, started, argv=sent)
        if res.exit_status == 124:  # coreutils timeout cut it off on the node
            return self._done(
                node,
                action,
                TIMEOUT,
                f"no answer within {self.settings.timeout_s:g} s: cut off",
                sent,
                started,
            )
        error = res.first_error_line()
        if sudo_refused(argv, res.stderr):
            line = cmd.sudoers_line(who, argv)
            return self._done(
                node,
                action,
                NOT_PERMITTED,
                f"sudo refused ({error}): {who.user} may not run '{shell_line(argv[2:])}' "
                "without a password. "
                "dltui never types a password. To allow exactly this command, add with visudo:",
                sent,
                started,
                details=[
                    line,
                    'or, with polkit (no sudo; set [actions] privilege = "polkit"):',
                    cmd.polkit_rule(who, verb, unit),
                ],
            )
        if any(s in res.stderr for s in _POLKIT_DENIED):
            return self._done(
                node,
                action,
                NOT_PERMITTED,
                f"polkit refused ({error}); allow it with a rule such as:",
                sent,
                started,
                details=[cmd.polkit_rule(who, verb, unit)],
            )
        journal = await self._journal(node, unit, None)
        if held_by_start_limit([res.stderr, *journal]):
            error = f"systemd refused: {start_limit_advice(unit)}"
        return self._done(
            node,
            action,
            FAILED,
            f"systemctl {verb} failed: {error}",
            sent,
            started,
            details=journal,
        )

    async def _verify_running(
        self,
        node: str,
        action: str,
        verb: str,
        unit: str,
        before: UnitSample,
        sent: list[str],
        started: float,
    ) -> ActionResult:
        """New InvocationID and active, then still active after the settle time with no
        NRestarts rise (a start of a unit already running keeps its invocation)."""
        s = self.settings
        loop = asyncio.get_running_loop()
        keep = verb == "start" and before.active_state == "active"
        deadline = loop.time() + s.start_wait_s
        state = before
        while True:
            got = await self.show(node, unit)
            if isinstance(got, CommandResult):
                return self._trouble(node, action, got, started, argv=sent)
            state = got
            fresh = keep or (state.invocation_id and state.invocation_id != before.invocation_id)
            if fresh and state.active_state == "active":
                break
            if fresh and (state.active_state == "failed" or state.sub_state == "auto-restart"):
                return await self._not_running(
                    node, action, verb, unit, state, sent, started, "it exited at once"
                )
            if loop.time() >= deadline:
                return await self._not_running(
                    node,
                    action,
                    verb,
                    unit,
                    state,
                    sent,
                    started,
                    f"not active after {s.start_wait_s:g} s",
                )
            await asyncio.sleep(s.poll_s)
        invocation, restarts = state.invocation_id, state.restarts_total
        settle_until = loop.time() + s.settle_s
        while loop.time() < settle_until:
            await asyncio.sleep(min(s.poll_s * 4, max(0.0, settle_until - loop.time())))
            got = await self.show(node, unit)
            if isinstance(got, CommandResult):
                return self._trouble(node, action, got, started, argv=sent)
            state = got
            rose = (state.restarts_total or 0) > (restarts or 0)
            if state.active_state != "active" or state.invocation_id != invocation or rose:
                why = f"did not stay active for {s.settle_s:g} s"
                if rose:
                    why += f" (NRestarts {restarts} → {state.restarts_total})"
                return await self._not_running(
                    node, action, verb, unit, state, sent, started, why, invocation
                )
        word = "restarted" if verb == "restart" else "started" if not keep else "already running"
        message = (
            f"{unit} {word}: active (InvocationID {(state.invocation_id or '')[:8]}…, "
            f"MainPID {state.main_pid}), stable for {s.settle_s:g} s"
        )
        return self._done(node, action, OK, message, sent, started, unit=state)

    async def _not_running(
        self,
        node: str,
        action: str,
        verb: str,
        unit: str,
        state: UnitSample,
        sent: list[str],
        started: float,
        why: str,
        invocation: str | None = None,
    ) -> ActionResult:
        word = {"restart": "restarted", "start": "started"}.get(verb, verb)
        journal = await self._journal(node, unit, invocation or state.invocation_id or None)
        message = (
            f"{word} but failed: {why}; ActiveState={state.active_state}/{state.sub_state}, "
            f"Result={state.result}, "
            f"ExecMainStatus={state.exec_main_status}, NRestarts={state.restarts_total}"
        )
        if held_by_start_limit([state.result or "", *journal]):
            message += f". {start_limit_advice(unit)}"
        return self._done(node, action, FAILED, message, sent, started, details=journal, unit=state)

    async def _verify_stop(
        self, node: str, action: str, unit: str, sent: list[str], started: float
    ) -> ActionResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.start_wait_s
        while True:
            got = await self.show(node, unit)
            if isinstance(got, CommandResult):
                return self._trouble(node, action, got, started, argv=sent)
            if got.active_state in ("inactive", "failed"):
                return self._done(
                    node,
                    action,
                    OK,
                    f"{unit} stopped: {got.active_state} (Result={got.result})",
                    sent,
                    started,
                    unit=got,
                )
            if loop.time() >= deadline:
                return self._done(
                    node,
                    action,
                    FAILED,
                    f"{unit} still {got.active_state}/{got.sub_state} "
                    f"after {self.settings.start_wait_s:g} s",
                    sent,
                    started,
                    unit=got,
                )
            await asyncio.sleep(self.settings.poll_s)

    async def _journal(self, node: str, unit: str, invocation: str | None) -> list[str]:
        """The last lines of that invocation; journald stores a dying unit's last words a
        moment after systemd reports the failure, so an empty answer is asked again, then the
        unit's own last lines stand in."""
        for attempt in range(JOURNAL_TRIES):
            if attempt:
                await asyncio.sleep(JOURNAL_RETRY_S)
            res = await self.runner.run_command(
                node,
                cmd.journal_argv(unit, JOURNAL_LINES, invocation),
                self.settings.query_timeout_s,
            )
            if not res.ok:
                return [f"(journal not read: {res.first_error_line()})"]
            entries = journal_entries(res.stdout)[-JOURNAL_LINES:]
            if entries:
                return [journal_line(e) for e in entries]
            if "insufficient permissions" in res.stderr + res.stdout:
                return [f"({journal_denied(unit)})"]
        return await self._journal(node, unit, None) if invocation else []

    # -- signals ------------------------------------------------------------------------------

    async def plan_signal(
        self,
        node: str,
        pid_text: str | int,
        signal: str = "TERM",
        units: Iterable[str] = ("dl_train.service",),
        gpu_pids: Iterable[int] = (),
    ) -> tuple[list[str], str, cmd.Identity] | ActionResult:
        """What a signal will run on ``node`` — (argv, why this PID may be signalled, who) — or
        the refusal (audited). The PID must be, at this moment, a GPU process (``gpu_pids``
        from the newest sample, or ``nvidia-smi --query-compute-apps`` on the node) or a
        process of one of ``units`` (its /proc/PID/cgroup)."""
        started = time.monotonic()
        action = f"signal {signal} {pid_text}"
        if self.settings.read_only:
            return self._refused(node, action, READ_ONLY, started)
        try:
            pid = names.pid(pid_text)
            base = cmd.kill_argv(pid, signal)
            units = [names.unit_name(u) for u in units]
        except (names.InvalidName, ValueError) as exc:
            return self._refused(node, action, str(exc), started)
        who = await self.identity(node)
        if isinstance(who, CommandResult):
            return self._trouble(node, action, who, started)
        look = await self.runner.run_command(
            node,
            ["sh", "-c", 'stat -c %u "$1" && cat "$1/cgroup"', "dltui", f"/proc/{pid}"],
            self.settings.query_timeout_s,
        )
        if look.problem is not None:
            return self._trouble(node, action, look, started)
        if look.exit_status != 0:
            return self._refused(node, action, f"no process {pid} on this node", started)
        owner_line, _, cgroup = look.stdout.partition("\n")
        unit_of = next((u for u in units if f"/{u}" in cgroup), None)
        reason = f"a process of {unit_of}" if unit_of else None
        if reason is None:
            # The node's answer now; the newest sample's list only where nvidia-smi cannot
            # answer (an older PID may since belong to another process).
            fresh = await self._gpu_pids(node)
            on_gpu = fresh if fresh is not None else set(gpu_pids)
            if pid in on_gpu:
                reason = "a GPU process"
        if reason is None:
            return self._refused(
                node,
                action,
                f"PID {pid} is neither a GPU process nor a process of "
                f"{', '.join(units) or 'the unit'}: refused",
                started,
            )
        argv = base if owner_line.strip() == str(who.uid) else self._change_argv(base, who)
        return argv, reason, who

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
        return shell_line(cmd.with_timeout(plan[0], self.settings.query_timeout_s))

    async def signal(
        self,
        node: str,
        pid_text: str | int,
        signal: str = "TERM",
        units: Iterable[str] = ("dl_train.service",),
        gpu_pids: Iterable[int] = (),
        confirmed: bool = True,
    ) -> ActionResult:
        """TERM (or KILL) a GPU process or a process of the unit (see ``plan_signal``)."""
        started = time.monotonic()
        action = f"signal {signal} {pid_text}"
        plan = await self.plan_signal(node, pid_text, signal, units, gpu_pids)
        if isinstance(plan, ActionResult):
            return plan
        argv, reason, who = plan
        pid = int(pid_text)
        if not confirmed:
            return self._refused(
                node,
                action,
                f"changes need confirmation (--yes); would run: {shell_line(argv)}",
                started,
            )
        sent = cmd.with_timeout(argv, self.settings.query_timeout_s)
        res = await self.runner.run_command(node, sent, self.settings.query_timeout_s + 5)
        if not res.ok:
            if res.problem is None and sudo_refused(argv, res.stderr):
                return self._done(
                    node,
                    action,
                    NOT_PERMITTED,
                    f"sudo refused ({res.first_error_line()}); "
                    "to allow exactly this command, add with visudo:",
                    sent,
                    started,
                    details=[cmd.sudoers_line(who, argv)],
                )
            if res.problem is not None:
                return self._trouble(node, action, res, started, argv=sent)
            return self._done(
                node, action, FAILED, f"kill failed: {res.first_error_line()}", sent, started
            )
        gone = await self._wait_gone(node, pid)
        if gone:
            return self._done(
                node, action, OK, f"sent {signal} to {pid} ({reason}); it exited", sent, started
            )
        hint = "" if signal == "KILL" else "; KILL needs a second confirmation"
        return self._done(
            node,
            action,
            FAILED,
            f"sent {signal} to {pid} ({reason}), "
            f"still running after {self.settings.signal_wait_s:g} s{hint}",
            sent,
            started,
        )

    async def _gpu_pids(self, node: str) -> set[int] | None:
        res = await self.runner.run_command(
            node,
            ["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader,nounits"],
            self.settings.query_timeout_s,
        )
        if not res.ok:
            return None
        return {
            int(line) for line in (x.strip() for x in res.stdout.splitlines()) if line.isdigit()
        }

    async def _wait_gone(self, node: str, pid: int) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.signal_wait_s
        while True:
            res = await self.runner.run_command(
                node, ["test", "-e", f"/proc/{pid}"], self.settings.query_timeout_s
            )
            if res.problem is None and res.exit_status == 1:
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(self.settings.poll_s)

    # -- results and the audit log ------------------------------------------------------------

    def _refused(self, node: str, action: str, why: str, started: float) -> ActionResult:
        return self._done(node, action, REFUSED, why, None, started)

    def _trouble(
        self,
        node: str,
        action: str,
        res: CommandResult,
        started: float,
        argv: Sequence[str] | None = None,
        audit: bool = True,
    ) -> ActionResult:
        if res.problem == TIMED_OUT:
            outcome, message = TIMEOUT, res.reason or "timed out"
        elif res.problem is not None:
            outcome, message = UNREACHABLE, res.reason or "unreachable"
        else:
            outcome, message = FAILED, f"{shell_line(res.argv[:3])}…: {res.first_error_line()}"
        if not audit:
            return ActionResult(node, action, outcome, message, None, time.monotonic() - started)
        return self._done(node, action, outcome, message, argv, started)

    def _done(
        self,
        node: str,
        action: str,
        outcome: str,
        message: str,
        argv: Sequence[str] | None,
        started: float,
        details: list[str] | None = None,
        unit: UnitSample | None = None,
    ) -> ActionResult:
        duration = time.monotonic() - started
        self.audit.record(node, action, argv, outcome, message, duration)
        return ActionResult(
            node,
            action,
            outcome,
            message,
            tuple(argv) if argv else None,
            duration,
            details or [],
            unit,
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


def journal_entries(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def journal_line(entry: dict) -> str:
    message = entry.get("MESSAGE")
    if isinstance(message, list):  # journald's byte-array form for non-UTF-8 messages
        message = bytes(b for b in message if isinstance(b, int)).decode("utf-8", "replace")
    if message is None:
        message = "(message too long for the journal's JSON; read it with journalctl --all)"
    when = entry.get("__REALTIME_TIMESTAMP")
    stamp = (
        time.strftime("%H:%M:%S", time.localtime(int(str(when)) / 1e6))
        if str(when or "").isdigit()
        else "--:--:--"
    )
    return clean(f"{stamp} {message}")


def journal_denied(unit: str) -> str:
    return (
        f"the journal of {unit} is not readable by this user: "
        "add it to group systemd-journal or adm"
    )
