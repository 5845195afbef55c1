"""Audit first: a change is sent only once its intent is in the audit log (fsynced); an audit
log that cannot be written refuses the action with one line and sends nothing; the outcome
follows under the same id, ``interrupted`` when the action is cancelled while it runs; the
state folder is 0700 and its files 0600 whatever the umask.

The node here is a runner answering ``systemctl show`` as systemd does (the edge faked: the
same flows against a real systemd are in tests/integration/test_systemd_actions.py)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from dltui.actions.audit import INTENT, INTERRUPTED, AuditError, AuditLog
from dltui.actions.policy import OK, REFUSED, ActionSettings
from dltui.actions.service import ActionService
from dltui.state_dir import open_private
from dltui.transport.command import CommandResult

FAST = ActionSettings(settle_s=0.2, start_wait_s=2.0, poll_s=0.02)


class _FakeSystemdNode:
    """Answers as a root shell on a systemd node would: who we are, ``systemctl show`` of a
    unit, and ``systemctl restart`` (a new InvocationID). Records every argv it receives,
    with the audit log's last line at that moment."""

    def __init__(self, log: Path):
        self.log = log
        self.invocation = "a" * 32
        self.received: list[list[str]] = []
        self.logged_before_change: list[dict] = []

    async def run_command(self, node, argv, timeout_s):
        argv = list(argv)
        self.received.append(argv)
        if argv[0] == "sh":  # IDENTITY_ARGV
            return CommandResult(tuple(argv), 0, "0\nroot\n/usr/bin/systemctl\n/usr/bin/kill\n")
        if "show" in argv:
            props = (
                f"Id={argv[2]}\nLoadState=loaded\nActiveState=active\nSubState=running\n"
                f"Result=success\nNRestarts=0\nMainPID=4242\nExecMainStatus=0\n"
                f"InvocationID={self.invocation}\n"
            )
            return CommandResult(tuple(argv), 0, props)
        if "restart" in argv:
            lines = self.log.read_text().splitlines() if self.log.is_file() else []
            self.logged_before_change.append(json.loads(lines[-1]) if lines else {})
            self.invocation = "b" * 32
            return CommandResult(tuple(argv), 0)
        return CommandResult(tuple(argv), 1, "", f"unexpected {argv}")

    def changes(self) -> list[list[str]]:
        return [a for a in self.received if "restart" in a]


def test_the_intent_is_fsynced_before_the_change_is_sent_and_the_outcome_follows(tmp_path):
    log = tmp_path / "state" / "dltui" / "audit.jsonl"
    node = _FakeSystemdNode(log)
    svc = ActionService(node, FAST, AuditLog(log))
    result = asyncio.run(svc.unit_change("gpu01", "restart", "dl_train.service"))
    assert result.outcome == OK, result
    (before,) = node.logged_before_change
    assert before["outcome"] == INTENT and before["argv"] == list(result.argv)
    intent, outcome = AuditLog(log).entries()
    assert (intent["outcome"], outcome["outcome"]) == (INTENT, OK)
    assert intent["id"] == outcome["id"] and outcome["sent"] is True
    assert {"time", "user", "node", "action", "argv"} <= set(intent)
    assert intent["argv"] == ["timeout", "-k", "2", "90", "systemctl", "restart", "dl_train.service"]


def test_an_audit_log_that_cannot_be_written_refuses_and_sends_nothing(tmp_path):
    """As root, chmod does not stop a write: a folder where the log file goes does."""
    log = tmp_path / "state" / "dltui" / "audit.jsonl"
    log.mkdir(parents=True)
    node = _FakeSystemdNode(log)
    svc = ActionService(node, FAST, AuditLog(log))
    result = asyncio.run(svc.unit_change("gpu01", "restart", "dl_train.service"))
    assert result.outcome == REFUSED and result.argv is None
    assert "cannot write the audit log" in result.message and str(log) in result.message
    assert "nothing was sent" in result.message and "\n" not in result.message
    assert node.changes() == []
    assert [a[0] for a in node.received] == ["sh"]  # who we are; not even the unit's state


def test_a_change_cancelled_while_it_settles_is_logged_interrupted(tmp_path):
    log = tmp_path / "audit.jsonl"
    node = _FakeSystemdNode(log)
    slow = ActionSettings(settle_s=60.0, start_wait_s=2.0, poll_s=0.02)
    svc = ActionService(node, slow, AuditLog(log))

    async def restart_then_cancel() -> None:
        task = asyncio.ensure_future(svc.unit_change("gpu01", "restart", "dl_train.service"))
        while not node.changes():  # sent, now verifying and settling
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(restart_then_cancel())
    intent, outcome = AuditLog(log).entries()
    assert outcome["id"] == intent["id"]
    assert outcome["outcome"] == INTERRUPTED and outcome["sent"] is True
    assert outcome["argv"] == intent["argv"]


def test_a_refusal_is_one_line_and_a_broken_log_does_not_turn_it_into_a_crash(tmp_path):
    log = tmp_path / "audit.jsonl"
    svc = ActionService(_FakeSystemdNode(log), ActionSettings(read_only=True), AuditLog(log))
    asyncio.run(svc.unit_change("gpu01", "restart", "dl_train.service"))
    (entry,) = AuditLog(log).entries()
    assert entry["outcome"] == REFUSED and entry["argv"] is None and "id" not in entry
    log.unlink()
    log.mkdir()
    result = asyncio.run(svc.unit_change("gpu01", "restart", "dl_train.service"))
    assert result.outcome == REFUSED and "read-only" in result.message
    assert "not in the audit log" in result.message


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_the_state_folder_is_0700_and_the_log_0600_whatever_the_umask(tmp_path, umask):
    state = tmp_path / "xdg" / "dltui"
    old = os.umask(umask)
    try:
        AuditLog(state / "audit.jsonl").record("n", "restart x", None, REFUSED, "why", 0.0)
    finally:
        os.umask(old)
    assert (state / "audit.jsonl").stat().st_mode & 0o777 == 0o600
    assert state.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "xdg").stat().st_mode & 0o777 == 0o700  # a missing parent too


def test_an_existing_file_keeps_its_mode_and_is_appended_to(tmp_path):
    path = tmp_path / "audit.jsonl"
    path.write_text('{"earlier": true}\n')
    path.chmod(0o640)  # an operator widened it on purpose (a log shipper's group)
    os.close(open_private(path, os.O_WRONLY | os.O_APPEND))
    AuditLog(path).record("n", "a", None, REFUSED, "", 0.0)
    assert path.stat().st_mode & 0o777 == 0o640
    assert len(path.read_text().splitlines()) == 2


def test_begin_raises_the_plain_reason_when_the_folder_cannot_be_made(tmp_path):
    (tmp_path / "state").write_text("a file where the state folder goes")
    with pytest.raises(AuditError, match="cannot write the audit log"):
        AuditLog(tmp_path / "state" / "dltui" / "audit.jsonl").begin("n", "restart x", ["x"])


def test_a_new_audit_log_is_in_its_folder_for_good_the_folders_are_fsynced(tmp_path, monkeypatch):
    """fsync of the file keeps its lines, not its name: when the log (and its folders) are
    first made, each folder that names one is fsynced before the first line counts as written.
    os.fsync is watched (and still called) to see which files and folders it is given."""
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def watched(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), stat.S_ISDIR(os.fstat(fd).st_mode)))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watched)
    state = tmp_path / "xdg" / "dltui"  # neither folder there yet
    log = AuditLog(state / "audit.jsonl")
    log.begin("n", "restart x", ["systemctl", "restart", "x"])
    folders = {path for path, is_dir in synced if is_dir}
    assert folders == {str(state), str(state.parent), str(tmp_path)}
    assert (str(state / "audit.jsonl"), False) in synced
    synced.clear()
    log.record("n", "restart x", None, REFUSED, "why", 0.0)  # the file is there: itself only
    assert synced == [(str(state / "audit.jsonl"), False)]
