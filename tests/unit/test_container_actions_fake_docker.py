"""The training container's actions through a FAKE docker CLI on the PATH (no engine runs here),
replaying a real ``docker inspect`` capture and keeping what restart / stop / start change:
validated, confirmed, audited intent-first, verified by ``inspect``, refused under read-only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from dltui.actions.audit import AuditLog
from dltui.actions.containers import ContainerActions
from dltui.actions.policy import ActionSettings
from dltui.actions.service import ActionService
from dltui.transport.command import LocalRunner

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
CAPTURE = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(REPO / "tests" / "fakes" / "container-engine", bin_dir / "docker")
    logs = tmp_path / "trainer.log"
    logs.write_text("".join(f"2026-12-06T04:00:{i:02d}Z step {i} loss 2.{i}\n" for i in range(30)))
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ENGINE_CAPTURE_DOCKER", str(CAPTURE))
    monkeypatch.setenv("FAKE_ENGINE_STATE", str(tmp_path / "docker-state.json"))
    monkeypatch.setenv("FAKE_ENGINE_NAMES", "trainer")
    monkeypatch.setenv("FAKE_ENGINE_CONTAINER_LOG", str(logs))
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "docker-calls.log"))
    return tmp_path


def _actions(tmp_path, read_only=False):
    settings = ActionSettings(read_only=read_only, poll_s=0.05, start_wait_s=5)
    return ContainerActions(ActionService(LocalRunner(), settings, AuditLog(tmp_path / "audit.jsonl")))


def _calls(tmp_path) -> list[str]:
    path = tmp_path / "docker-calls.log"
    return path.read_text().splitlines() if path.exists() else []


async def test_restart_is_audited_first_and_verified_by_a_new_start_fake_docker(fake_docker):
    actions = _actions(fake_docker)
    done = await actions.change("localhost", "restart", "trainer", "docker")
    assert done.ok, done.message
    assert done.message.startswith("trainer restarted: running since 20")
    assert done.argv == ("timeout", "-k", "2", "100", "docker", "restart", "trainer")
    audit = [json.loads(line) for line in (fake_docker / "audit.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in audit] == ["intent", "ok"]
    assert _calls(fake_docker)[:2] == ["docker inspect trainer", "docker restart trainer"]


async def test_stop_then_start_fake_docker(fake_docker):
    actions = _actions(fake_docker)
    stopped = await actions.change("localhost", "stop", "trainer", "docker")
    assert stopped.ok and stopped.message == "trainer stopped: exited"
    started = await actions.change("localhost", "start", "trainer", "docker")
    assert started.ok, started.message


async def test_refusals_send_nothing_fake_docker(fake_docker):
    actions = _actions(fake_docker)
    unconfirmed = await actions.change("localhost", "restart", "trainer", "docker", confirmed=False)
    assert unconfirmed.outcome == "refused" and "would run: docker restart trainer" in unconfirmed.message
    bad = await actions.change("localhost", "restart", "--rm", "docker")
    assert bad.outcome == "refused" and "not a container name" in bad.message
    locked = await _actions(fake_docker, read_only=True).change("localhost", "stop", "trainer", "docker")
    assert locked.outcome == "refused" and "read-only" in locked.message
    assert [c for c in _calls(fake_docker) if "inspect" not in c] == []


async def test_a_missing_container_fails_with_the_engines_words_fake_docker(fake_docker):
    done = await _actions(fake_docker).change("localhost", "restart", "other", "docker")
    assert done.outcome == "failed" and "No such object: other" in done.message


async def test_logs_tail_fake_docker(fake_docker):
    res = await _actions(fake_docker).logs("localhost", "trainer", "docker", lines=5)
    assert res.ok
    assert res.details == [f"2026-12-06T04:00:{i:02d}Z step {i} loss 2.{i}" for i in range(25, 30)]
    assert _calls(fake_docker) == ["docker logs --tail 5 --timestamps trainer"]
