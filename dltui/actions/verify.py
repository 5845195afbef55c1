"""Verify: whether a change did what it was asked, from the node's own state. A (re)start
succeeds with a new InvocationID, ActiveState=active, and still so after the settle time with
no NRestarts rise; a stop with inactive or failed; a signal when the process is gone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from dltui.core.models import UnitSample
from dltui.transport.command import CommandResult

from .policy import FAILED, OK, ActionResult, ActionSettings
from .query import NodeQueries
from .run import Attempt

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


class Verifier:
    def __init__(self, queries: NodeQueries, settings: ActionSettings):
        self.queries = queries
        self.settings = settings

    async def running(
        self,
        attempt: Attempt,
        verb: str,
        unit: str,
        before: UnitSample,
        sent: list[str],
        since_us: int | None = None,
    ) -> ActionResult:
        """New InvocationID and active, then still active after the settle time with no
        NRestarts rise (a start of a unit already running keeps its invocation)."""
        s = self.settings
        node = attempt.node
        loop = asyncio.get_running_loop()
        keep = verb == "start" and before.active_state == "active"
        deadline = loop.time() + s.start_wait_s
        state = before
        while True:
            got = await self.queries.show(node, unit)
            if isinstance(got, CommandResult):
                return attempt.trouble(got, argv=sent)
            state = got
            fresh = keep or (state.invocation_id and state.invocation_id != before.invocation_id)
            if fresh and state.active_state == "active":
                break
            new_run = state.invocation_id if fresh and not keep else None
            if fresh and (state.active_state == "failed" or state.sub_state == "auto-restart"):
                return await self.not_running(
                    attempt, verb, unit, state, sent, "it exited at once", new_run, since_us
                )
            if loop.time() >= deadline:
                return await self.not_running(
                    attempt, verb, unit, state, sent, f"not active after {s.start_wait_s:g} s",
                    new_run, since_us,
                )
            await asyncio.sleep(s.poll_s)
        invocation, restarts = state.invocation_id, state.restarts_total
        settle_until = loop.time() + s.settle_s
        while loop.time() < settle_until:
            await asyncio.sleep(min(s.poll_s * 4, max(0.0, settle_until - loop.time())))
            got = await self.queries.show(node, unit)
            if isinstance(got, CommandResult):
                return attempt.trouble(got, argv=sent)
            state = got
            rose = (state.restarts_total or 0) > (restarts or 0)
            if state.active_state != "active" or state.invocation_id != invocation or rose:
                why = f"did not stay active for {s.settle_s:g} s"
                if rose:
                    why += f" (NRestarts {restarts} → {state.restarts_total})"
                return await self.not_running(
                    attempt, verb, unit, state, sent, why, invocation, since_us
                )
        word = "restarted" if verb == "restart" else "started" if not keep else "already running"
        message = (
            f"{unit} {word}: active (InvocationID {(state.invocation_id or '')[:8]}…, "
            f"MainPID {state.main_pid}), stable for {s.settle_s:g} s"
        )
        return attempt.done(OK, message, sent, unit=state)

    async def not_running(
        self,
        attempt: Attempt,
        verb: str,
        unit: str,
        state: UnitSample,
        sent: list[str],
        why: str,
        invocation: str | None = None,
        since_us: int | None = None,
    ) -> ActionResult:
        """``invocation``: the run this action started (None: none started); its journal is
        shown, never an earlier run's (``NodeQueries.run_journal``)."""
        word = {"restart": "restarted", "start": "started"}.get(verb, verb)
        journal = await self.queries.run_journal(attempt.node, unit, invocation, since_us)
        message = (
            f"{word} but failed: {why}; ActiveState={state.active_state}/{state.sub_state}, "
            f"Result={state.result}, "
            f"ExecMainStatus={state.exec_main_status}, NRestarts={state.restarts_total}"
        )
        if held_by_start_limit([state.result or "", *journal]):
            message += f". {start_limit_advice(unit)}"
        return attempt.done(FAILED, message, sent, details=journal, unit=state)

    async def stopped(self, attempt: Attempt, unit: str, sent: list[str]) -> ActionResult:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.start_wait_s
        while True:
            got = await self.queries.show(attempt.node, unit)
            if isinstance(got, CommandResult):
                return attempt.trouble(got, argv=sent)
            if got.active_state in ("inactive", "failed"):
                return attempt.done(
                    OK, f"{unit} stopped: {got.active_state} (Result={got.result})", sent, unit=got
                )
            if loop.time() >= deadline:
                return attempt.done(
                    FAILED,
                    f"{unit} still {got.active_state}/{got.sub_state} "
                    f"after {self.settings.start_wait_s:g} s",
                    sent,
                    unit=got,
                )
            await asyncio.sleep(self.settings.poll_s)

    async def gone(self, node: str, pid: int) -> bool:
        """Whether ``pid`` exited within the signal wait."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.signal_wait_s
        while True:
            res = await self.queries.exists(node, pid)
            if res.problem is None and res.exit_status == 1:
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(self.settings.poll_s)
