"""The training container over a real sshd: the probe, shipped as always, reads the node's
FAKE docker CLI (no engine runs here; it replays a real ``docker inspect`` capture) for the
group's containers; the sample carries them, the restart-policy rule warns, and a restart from
the action path reaches the node through sshd and is verified."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from dltui.actions.audit import AuditLog
from dltui.actions.containers import ContainerActions
from dltui.actions.policy import ActionSettings
from dltui.actions.service import ActionService
from dltui.core import status as st
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions
from tests.integration.conftest import require
from tests.integration.sshd import REPO, SSHD, SshLab

from .streaming import Streaming

FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
CAPTURE = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"


@pytest.fixture(scope="module")
def docker_node(tmp_path_factory):
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    base = tmp_path_factory.mktemp("ctrlab")
    lab = SshLab(base)
    node = lab.add_node("ctr01")
    shutil.copy(REPO / "tests" / "fakes" / "container-engine", node.bin / "docker")
    (base / "trainer.log").write_text("".join(f"step {i} loss 2.{i}\n" for i in range(12)))
    (base / "state.json").write_text(json.dumps({"trainer": {"policy": "no", "RestartCount": 2}}))
    node.env.update({
        "FAKE_ENGINE_CAPTURE_DOCKER": str(CAPTURE), "FAKE_ENGINE_STATE": str(base / "state.json"),
        "FAKE_ENGINE_NAMES": "trainer", "FAKE_ENGINE_CONTAINER_LOG": str(base / "trainer.log"),
    })
    try:
        yield lab.start()
    finally:
        lab.close()


async def test_probe_reports_the_training_container_over_sshd_fake_docker(docker_node, tmp_path, use_home):
    use_home(docker_node.make_home(tmp_path / "home"))
    async with Streaming(["ctr01"], probe=((), None, ("trainer", "gone"))) as s:
        def reported(fleet) -> bool:
            node = fleet.nodes["ctr01"]
            return node.status == st.OK and node.sample is not None and len(node.sample.containers) == 2

        await s.until(reported, "ctr01 reporting its containers")
        trainer, gone = s.state.nodes["ctr01"].sample.containers
    assert (trainer.name, trainer.engine, trainer.state, trainer.restart_policy, trainer.restarts_total) == (
        "trainer", "docker", "running", "no", 2)
    assert trainer.image == "portainer/portainer:latest" and trainer.oom_killed is False
    assert gone.error == "no container gone on this node"


async def test_restart_over_sshd_is_verified_and_logs_follow_fake_docker(docker_node, tmp_path, use_home):
    use_home(docker_node.make_home(tmp_path / "home"))
    runner = SshCommands(SshOptions())
    actions = ContainerActions(ActionService(runner, ActionSettings(poll_s=0.1), AuditLog(tmp_path / "audit.jsonl")))
    try:
        logs = await actions.logs("ctr01", "trainer", "docker", lines=3)
        assert logs.details == ["step 9 loss 2.9", "step 10 loss 2.10", "step 11 loss 2.11"]
        done = await actions.change("ctr01", "restart", "trainer", "docker")
    finally:
        await runner.close()
    assert done.ok, done.message
    assert done.message.startswith("trainer restarted: running since ")
