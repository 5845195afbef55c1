"""The burn-in follow's reconnect backoff: it grows while the node gives nothing, and starts
over after a follow that read samples (that connection worked; the next drop is new trouble).

The node's follow stream is scripted here (``remote.follow_once`` replaced: the edge faked);
the real stream through a dropped sshd is tests/integration/test_burnin_e2e.py."""

from __future__ import annotations

import asyncio

import pytest

from dltui.burnin import remote
from dltui.burnin.remote import NodeRunView, RunCollector
from dltui.transport.command import REFUSED, UNREACHABLE, CommandError


class _Runner:
    def __init__(self) -> None:
        self.dropped = 0

    async def reconnect(self, name: str) -> None:
        self.dropped += 1


def test_the_backoff_grows_while_nothing_comes_and_starts_over_after_progress(monkeypatch):
    # each step: bytes of samples read before the stream broke, and how it ended
    script = [
        (0, CommandError(UNREACHABLE, "connection refused")),
        (0, CommandError(UNREACHABLE, "connection refused")),
        (0, None),  # ended early without a word
        (4096, CommandError(UNREACHABLE, "connection lost")),
        (0, CommandError(UNREACHABLE, "connection refused")),
        (100, "ended"),
    ]
    attempts: list[int] = []

    async def follow_once(runner, view, python, on_status=None):
        read, end = script.pop(0)
        view.offset += read
        if isinstance(end, CommandError):
            raise end
        if end == "ended":
            view.ended = True
            return True
        return False

    def backoff_s(attempt: int) -> float:
        attempts.append(attempt)
        return 0.0

    monkeypatch.setattr(remote, "follow_once", follow_once)
    monkeypatch.setattr(remote, "backoff_s", backoff_s)
    view = NodeRunView("gpu01", "r1", RunCollector())
    runner = _Runner()
    asyncio.run(remote.follow(runner, view, "python3"))  # type: ignore[arg-type]
    assert attempts == [1, 2, 3, 1, 2]
    assert view.ended and view.reattached == 5 and runner.dropped == 5
    assert view.reason == "connection refused"


def test_a_run_that_is_not_on_the_node_is_raised_not_retried(monkeypatch):
    async def follow_once(runner, view, python, on_status=None):
        raise CommandError(REFUSED, "no burn-in run r1")

    monkeypatch.setattr(remote, "follow_once", follow_once)
    view = NodeRunView("gpu01", "r1", RunCollector())
    with pytest.raises(CommandError, match="no burn-in run"):
        asyncio.run(remote.follow(_Runner(), view, "python3"))  # type: ignore[arg-type]
    assert view.reattached == 0 and view.reason == "no burn-in run r1"
