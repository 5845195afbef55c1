"""Burn-in starts and stops go to the audit log (XDG_STATE_HOME pointed at a temp dir), refused
ones included: the session's own records, and the dashboard's :burnin under --read-only."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from dltui.burnin.session import BurnIn, Plan
from dltui.transport.ssh.options import SshOptions


class _Answer:
    def __init__(self, answer: dict[str, Any]):
        self.answer = answer

    def json_line(self) -> dict[str, Any]:
        return self.answer


class _Shell:
    """Answers the driver's start and stop as a node would (the edge this test fakes)."""

    options = SshOptions()

    def __init__(self, answers: dict[str, dict[str, Any]]):
        self.answers = answers
        self.sent: list[str] = []

    async def run(self, node: str, command: str, data: bytes | None = None, timeout_s=None):
        self.sent.append(command)
        return _Answer(self.answers[node])


def _entries(tmp_path) -> list[dict[str, Any]]:
    path = tmp_path / "dltui" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path


def test_start_and_stop_are_audited_per_node_refusals_too(state):
    shell = _Shell(
        {"a": {"ok": True, "dir": "/x"}, "b": {"ok": False, "reason": "already running"}}
    )
    session = BurnIn(shell, ["a", "b"], "r1")  # type: ignore[arg-type]
    asyncio.run(session.start(Plan(duration_s=5, gpu="none", launcher="systemd")))
    asyncio.run(session.stop())
    got = {(e["action"], e["node"]): e for e in _entries(state)}
    assert got[("burnin-start", "a")]["outcome"] == "ok"
    refused = got[("burnin-start", "b")]
    assert refused["outcome"] == "failed" and refused["message"] == "already running"
    argv = got[("burnin-start", "a")]["argv"]
    assert argv[:2] == ["dltui-burnin", "start"] and argv[argv.index("--launcher") + 1] == "systemd"
    assert " ".join(argv[2:]) in shell.sent[0]  # the argv that was sent
    assert got[("burnin-stop", "a")]["outcome"] == "ok"
    assert {e["run_id"] for e in _entries(state)} == {"r1"}
    assert all(e["user"] and e["duration_s"] >= 0 and e["time"] > 0 for e in _entries(state))


def test_dashboard_burnin_refused_under_read_only_is_audited(state):
    from dltui.ui.burnin_launch import open_burnin

    node = SimpleNamespace(name="gpu01")
    app = SimpleNamespace(
        transports=[SimpleNamespace(options=SshOptions(), names=["gpu01"])],
        fleet=_Fleet([node]),
        cfg=SimpleNamespace(read_only=True, burnin=None),
    )
    with pytest.raises(ValueError, match="read-only"):
        open_burnin(app, "burnin", "10s")
    (entry,) = _entries(state)
    assert (entry["node"], entry["action"], entry["outcome"]) == ("gpu01", "burnin-start", "refused")
    assert entry["argv"] is None and "read-only" in entry["message"]


class _Fleet(list):
    def clock(self) -> float:
        return 0.0
