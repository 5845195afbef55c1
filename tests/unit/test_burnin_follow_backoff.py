"""The burn-in follow's reconnect backoff: it grows while the node gives nothing, and starts
over after a follow that read samples (that connection worked; the next drop is new trouble).

The node's follow stream is scripted here (``remote.follow_once`` replaced: the edge faked);
the real stream through a dropped sshd is tests/integration/test_burnin_e2e.py."""

from __future__ import annotations

import asyncio

import pytest

from dltui.burnin import remote
from dltui.burnin.remote import NodeRunView, RunCollector
from dltui.core import status as st
from dltui.transport.ssh.errors import Failure


class _Shell:
    def __init__(self) -> None:
        self.dropped = 0

    async def drop(self, name: str) -> None:
        self.dropped += 1


def test_the_backoff_grows_while_nothing_comes_and_starts_over_after_progress(monkeypatch):
    # each step: bytes of samples read before the stream broke, and how it ended
    script = [
        (0, Failure(st.UNREACHABLE, "connection refused")),
        (0, Failure(st.UNREACHABLE, "connection refused")),
        (0, None),  # ended early without a word
        (4096, Failure(st.RECONNECTING, "connection lost")),
        (0, Failure(st.UNREACHABLE, "connection refused")),
        (100, "ended"),
    ]
    attempts: list[int] = []

    async def follow_once(shell, view, on_status=None):
        read, end = script.pop(0)
        view.offset += read
        if isinstance(end, Failure):
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
    shell = _Shell()
    asyncio.run(remote.follow(shell, view))  # type: ignore[arg-type]
    assert attempts == [1, 2, 3, 1, 2]
    assert view.ended and view.reattached == 5 and shell.dropped == 5
    assert view.reason == "connection refused"


def test_a_run_that_is_not_on_the_node_is_raised_not_retried(monkeypatch):
    async def follow_once(shell, view, on_status=None):
        raise Failure(st.PROBE_FAILED, "no burn-in run r1")

    monkeypatch.setattr(remote, "follow_once", follow_once)
    view = NodeRunView("gpu01", "r1", RunCollector())
    with pytest.raises(Failure, match="no burn-in run"):
        asyncio.run(remote.follow(_Shell(), view))  # type: ignore[arg-type]
    assert view.reattached == 0 and view.reason == "no burn-in run r1"
