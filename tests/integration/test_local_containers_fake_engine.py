"""The training container of a node watched in process (``localhost``, transport/local.py): the
same probe code as over SSH (node/probe/containers.py) reads the group's containers with this
machine's engine — here the FAKE engine CLI (tests/fakes/container-engine, replaying a real
``docker inspect`` capture) first on PATH as ``docker``, since no engine runs on the test machines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.integration.sshd import REPO

FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
CAPTURE = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"


def test_localhost_reports_its_configured_training_containers_fake_engine(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(REPO / "tests" / "fakes" / "container-engine", bin_dir / "docker")
    (tmp_path / "state.json").write_text(json.dumps({"trainer": {"policy": "no", "RestartCount": 3}}))
    calls = tmp_path / "calls.log"
    config = tmp_path / "config.toml"
    config.write_text('[groups.here]\nhosts = ["localhost"]\ncontainers = ["trainer", "gone"]\n')
    env = dict(
        os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
        XDG_STATE_HOME=str(tmp_path / ".state"), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        FAKE_ENGINE_CAPTURE_DOCKER=str(CAPTURE), FAKE_ENGINE_STATE=str(tmp_path / "state.json"),
        FAKE_ENGINE_NAMES="trainer", FAKE_ENGINE_LOG=str(calls),
    )
    env.pop("DLTUI_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "localhost", "--json", "--seconds", "1.5",
         "--interval", "0.5", "--config", str(config)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.stdout, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    trainer, gone = node["sample"]["containers"]
    assert (trainer["name"], trainer["engine"], trainer["state"], trainer["restart_policy"]) == (
        "trainer", "docker", "running", "no")
    assert trainer["restarts_total"] == 3 and trainer["image"] == "portainer/portainer:latest"
    assert trainer["error"] is None
    assert gone["error"] == "no container gone on this node"
    # the probe's rule, both ways: a container that will not come back after a crash warns
    assert any(a["rule"] == "container_no_restart" for a in node["alerts"]), node["alerts"]
    # read by the one poller, slowly: one inspect for both names in a 1.5 s window, never per sample
    inspects = [line for line in calls.read_text().splitlines() if "inspect" in line]
    assert len(inspects) == 1, inspects
