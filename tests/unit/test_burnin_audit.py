"""Burn-in starts and stops go to the audit log (XDG_STATE_HOME pointed at a temp dir), refused
ones included: the session's own records, and the dashboard's :burnin under --read-only."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dltui.actions.audit import AuditLog
from dltui.burnin.session import BurnIn, BurnInLauncher, Plan
from dltui.transport.command import CommandResult


class _Runner:
    """Answers the driver's start and stop as a node would (the edge this test fakes), through
    the node-command contract the session sends every command through."""

    python = "python3"

    def address(self, node: str) -> str:
        return node

    def __init__(self, answers: dict[str, dict[str, Any]], log: Path | None = None):
        self.answers = answers
        self.log = log
        self.sent: list[str] = []  # the shell lines, as ``sh -c LINE`` carries them
        self.logged_before: list[dict[str, Any]] = []  # the log's last line for the node, as sent

    async def run_command(self, node: str, argv, timeout_s, *, stdin=None, limit=None, binary=False) -> CommandResult:
        assert list(argv[:2]) == ["sh", "-c"]
        self.sent.append(argv[2])
        if self.log is not None:
            mine = [e for e in _read(self.log) if e["node"] == node]
            self.logged_before.append(mine[-1] if mine else {})
        if binary:  # fetch: none of the run's files
            return CommandResult(tuple(argv), 0)
        return CommandResult(tuple(argv), 0, json.dumps(self.answers[node]) + "\n")


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _entries(tmp_path) -> list[dict[str, Any]]:
    return _read(tmp_path / "dltui" / "audit.jsonl")


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path


def test_start_and_stop_are_audited_per_node_refusals_too(state):
    runner = _Runner(
        {"a": {"ok": True, "dir": "/x"}, "b": {"ok": False, "reason": "already running"}},
        state / "dltui" / "audit.jsonl",
    )
    session = BurnIn(runner, ["a", "b"], "r1")  # type: ignore[arg-type]
    asyncio.run(session.start(Plan(duration_s=5, gpu="none", launcher="systemd")))
    asyncio.run(session.stop())
    # audit first: whatever reached a node had its intent in the log already, fsynced
    assert len(runner.logged_before) == 4
    assert all(e.get("outcome") == "intent" for e in runner.logged_before)
    intents = [e for e in _entries(state) if e["outcome"] == "intent"]
    outcomes = [e for e in _entries(state) if e["outcome"] != "intent"]
    assert sorted(e["id"] for e in intents) == sorted(e["id"] for e in outcomes)
    got = {(e["action"], e["node"]): e for e in outcomes}
    assert got[("burnin-start", "a")]["outcome"] == "ok"
    refused = got[("burnin-start", "b")]
    assert refused["outcome"] == "failed" and refused["message"] == "already running"
    argv = got[("burnin-start", "a")]["argv"]
    assert argv[:2] == ["dltui-burnin", "start"] and argv[argv.index("--launcher") + 1] == "systemd"
    assert " ".join(argv[2:]) in runner.sent[0]  # the argv that was sent
    assert got[("burnin-stop", "a")]["outcome"] == "ok"
    assert {e["run_id"] for e in _entries(state)} == {"r1"}
    assert all(e["user"] and e["duration_s"] >= 0 and e["time"] > 0 for e in outcomes)
    assert all(e["sent"] is True for e in outcomes)
    assert (state / "dltui" / "audit.jsonl").stat().st_mode & 0o777 == 0o600
    assert (state / "dltui").stat().st_mode & 0o777 == 0o700


def test_dashboard_burnin_refused_under_read_only_is_audited(state):
    from dltui.config import Config
    from dltui.ui.burnin_launch import open_burnin

    # as dltui.wiring builds it for the dashboard: its SSH nodes, its audit log, its config
    launcher = BurnInLauncher(_Runner({}), ("gpu01",), AuditLog(), Config(read_only=True))  # type: ignore[arg-type]
    app = SimpleNamespace()  # refused before anything is asked or shown
    with pytest.raises(ValueError, match="read-only"):
        open_burnin(app, launcher, ["gpu01"], "burnin", "10s")  # type: ignore[arg-type]
    (entry,) = _entries(state)
    assert (entry["node"], entry["action"], entry["outcome"]) == ("gpu01", "burnin-start", "refused")
    assert entry["argv"] is None and "read-only" in entry["message"]


def test_start_and_stop_send_nothing_when_the_audit_log_cannot_be_written(state):
    (state / "dltui" / "audit.jsonl").mkdir(parents=True)  # as root, only this stops a write
    runner = _Runner({"a": {"ok": True, "dir": "/x"}, "b": {"ok": True, "dir": "/x"}})
    session = BurnIn(runner, ["a", "b"], "r2")  # type: ignore[arg-type]
    asyncio.run(session.start(Plan(duration_s=5, gpu="none", net="b")))
    answers = asyncio.run(session.stop())
    assert runner.sent == []  # no driver, no stop, and not the peer's iperf3 server either
    assert set(session.failed) == {"a", "b"}
    assert all("cannot write the audit log" in why for why in session.failed.values())
    assert all(not a.ok and "nothing was sent" in a.reason for a in answers.values())


def _peer_server(session: BurnIn) -> str:
    """As after a start with --net b: the peer's iperf3 server; returns its stop's shell line."""
    from dltui.burnin import remote

    session.iperf_peer = "b"
    session.iperf_server = remote.IperfServer("/tmp/dltui-iperf3.AbC123", 5201, 700)
    return remote.iperf_server_stop_command(session.iperf_server)


def test_the_stop_of_the_peers_iperf3_server_is_audited_before_it_is_sent(state):
    runner = _Runner({"a": {"ok": True}, "b": {}}, state / "dltui" / "audit.jsonl")
    session = BurnIn(runner, ["a"], "r3")  # type: ignore[arg-type]
    line = _peer_server(session)
    asyncio.run(session.judge())
    assert line in runner.sent
    before = runner.logged_before[runner.sent.index(line)]
    assert (before["action"], before["outcome"], before["argv"]) == ("burnin-iperf-server-stop", "intent", ["sh", "-c", line])
    (outcome,) = [e for e in _entries(state) if e["action"] == "burnin-iperf-server-stop" and e["outcome"] != "intent"]
    assert (outcome["node"], outcome["outcome"], outcome["id"]) == ("b", "ok", before["id"])
    assert session.iperf_peer is None


def test_the_peers_iperf3_server_is_left_to_its_time_limit_when_the_audit_log_cannot_be_written(state):
    (state / "dltui" / "audit.jsonl").mkdir(parents=True)
    runner = _Runner({"a": {"ok": True}, "b": {}})
    session = BurnIn(runner, ["a"], "r4")  # type: ignore[arg-type]
    line = _peer_server(session)
    asyncio.run(session.judge())
    assert line not in runner.sent
    assert len(session.notices) == 1 and "nothing was sent" in session.notices[0]
