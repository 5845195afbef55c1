"""The training container's actions: its log tail, and restart / stop / start — the unit
actions' twin, on the same path (``service.py``): refused under --read-only, the name validated
(docker's own rule), the exact command shown before it runs, audited intent-first, then
verified with the engine's ``inspect`` (running with a new StartedAt after a restart or start;
not running after a stop). The engine is the one the probe found (docker, else podman). As root,
or in the docker group, the command runs as is; a refusal says how to allow exactly it."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from dltui.core.text import clean
from dltui.transport.command import CommandResult, shell_line

from . import commands as cmd
from . import names
from .policy import FAILED, NOT_PERMITTED, OK, TIMEOUT, ActionResult
from .run import Attempt
from .service import ActionService

VERBS = ("restart", "stop", "start")
ENGINES = ("docker", "podman")
LOG_LINES = 20
STOP_WAIT_S = 10  # docker stop's own grace before KILL; the command's timeout allows for it


@dataclass(frozen=True)
class Seen:
    """What ``inspect`` says of a container now."""

    state: str
    started_at: str


def _seen(res: CommandResult) -> Seen | None:
    try:
        data = json.loads(res.stdout or "[]")
    except ValueError:
        return None
    obj = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
    state = obj.get("State") if obj is not None else None
    if not isinstance(state, dict):
        return None
    return Seen(clean(str(state.get("Status") or "")), clean(str(state.get("StartedAt") or "")))


class ContainerActions:
    def __init__(self, service: ActionService):
        self.service = service
        self.settings = service.settings

    def _check(self, verb: str, name: str, engine: str) -> list[str]:
        if verb not in VERBS:
            raise ValueError(f"unknown container action {verb!r}")
        if engine not in ENGINES:
            raise ValueError(f"unknown container engine {engine!r}")
        return [engine, verb, names.container_name(name)]

    async def _inspect(self, node: str, engine: str, name: str) -> Seen | CommandResult:
        res = await self.service.queries.run(node, [engine, "inspect", name])
        if not res.ok:
            return res
        seen = _seen(res)
        return seen if seen is not None else CommandResult(res.argv, 1, res.stdout, f"{engine} inspect: not JSON")

    async def logs(self, node: str, name: str, engine: str, lines: int = LOG_LINES) -> ActionResult:
        """The container's newest log lines (``docker logs --tail N``); nothing is audited."""
        attempt = Attempt(self.service.audit, node, f"logs {name}")
        try:
            self._check("restart", name, engine)
        except names.InvalidName as exc:
            return attempt.refuse(str(exc))
        except ValueError as exc:
            return attempt.refuse(str(exc))
        res = await self.service.queries.run(node, [engine, "logs", "--tail", str(int(lines)), "--timestamps", name])
        if not res.ok:
            return attempt.trouble(res, audit=False)
        # the engine writes the container's stderr to ours: both are its log
        text = [clean(line) for line in (res.stdout + res.stderr).splitlines() if line.strip()]
        return ActionResult(node, attempt.action, OK, f"{len(text)} log lines of {name}", None,
                            time.monotonic() - attempt.started, text[-lines:])

    def preview(self, verb: str, name: str, engine: str) -> str:
        """The exact command line (or why it will not run), for the confirm dialog."""
        try:
            return shell_line(cmd.with_timeout(self._check(verb, name, engine), self._timeout()))
        except ValueError as exc:  # InvalidName is a ValueError
            return f"(refused: {exc})"

    def _timeout(self) -> float:
        return self.settings.timeout_s + STOP_WAIT_S

    async def change(self, node: str, verb: str, name: str, engine: str, confirmed: bool = True) -> ActionResult:
        attempt = Attempt(self.service.audit, node, f"{verb} container {name}")
        begun = await self.service._begin(attempt, lambda: self._check(verb, name, engine))  # noqa: SLF001
        if isinstance(begun, ActionResult):
            return begun
        argv, _who = begun
        if not confirmed:
            return attempt.refuse(f"changes need confirmation (--yes); would run: {shell_line(argv)}")
        before = await self._inspect(node, engine, name)
        if isinstance(before, CommandResult):
            return attempt.trouble(before, audit=True)
        sent = cmd.with_timeout(argv, self._timeout())
        pending = attempt.declare(sent)
        if isinstance(pending, ActionResult):
            return pending
        with pending:
            res = await attempt.send(self.service.runner, sent, self._timeout() + 5)
            if res.problem is not None:
                return attempt.trouble(res, argv=sent)
            if res.exit_status == 124:
                return attempt.done(TIMEOUT, f"no answer within {self._timeout():g} s: cut off", sent)
            if not res.ok:
                error = res.first_error_line()
                if "permission denied" in error.lower():
                    return attempt.done(
                        NOT_PERMITTED,
                        f"{engine} refused us ({error}): add the SSH user to the docker group, or with visudo:",
                        sent, details=[f"USER ALL=(root) NOPASSWD: /usr/bin/{engine} {verb} {name}"],
                    )
                return attempt.done(FAILED, f"{engine} {verb} failed: {error}", sent)
            return await self._verify(attempt, verb, name, engine, before, sent)

    async def _verify(
        self, attempt: Attempt, verb: str, name: str, engine: str, before: Seen, sent: list[str]
    ) -> ActionResult:
        deadline = time.monotonic() + self.settings.start_wait_s
        last: Seen | CommandResult | None = None
        while True:
            last = await self._inspect(attempt.node, engine, name)
            if isinstance(last, Seen):
                if verb == "stop" and last.state != "running":
                    return attempt.done(OK, f"{name} stopped: {last.state}", sent)
                if verb != "stop" and last.state == "running" and last.started_at != before.started_at:
                    return attempt.done(OK, f"{name} {verb}ed: running since {last.started_at}", sent)
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(self.settings.poll_s)
        seen = f"{last.state} (started {last.started_at})" if isinstance(last, Seen) else "unreadable"
        return attempt.done(FAILED, f"sent, but {name} reads {seen}", sent)
