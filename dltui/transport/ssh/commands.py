"""Commands on nodes without a dashboard: ``dltui unit``, ``dltui signal``, benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

from ..command import CommandResult
from .errors import Failure
from .options import SshOptions
from .sessions import SessionRunner


class SshCommands:
    """A ``Runner`` over SSH: one connection per node, opened on first use the way the
    dashboard opens it (SSH config, shared jump connection, checked host keys), reused for
    every later command (``sessions.SessionRunner``)."""

    def __init__(self, options: SshOptions):
        self.sessions = SessionRunner(options)

    async def connect(self, node: str) -> str | None:
        """None once connected to ``node``, else why not, in plain words."""
        try:
            await self.sessions.connection(node)
        except Failure as failure:
            return f"{failure.status}: {failure.reason}"
        return None

    async def run_command(self, node: str, argv: Sequence[str], timeout_s: float) -> CommandResult:
        return await self.sessions.run(node, argv, timeout_s)

    async def close(self) -> None:
        await self.sessions.close()
