"""The probe's training containers (node/probe/containers.py): real ``docker inspect`` and
``podman container inspect`` captures, read directly and through a FAKE docker / podman CLI on
the PATH (tests/fakes/container-engine, replaying the capture); the restart-policy rule on them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from dltui.core.models import ContainerSample, Sample, UnitSample
from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.node.probe.containers import ContainerPoller, container_record
from dltui.node.probe.problems import Problems
from dltui.node.schema import CONTAINER_FIELDS

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
DOCKER = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"
PODMAN = FIXTURES / "podman-container-inspect_docs-example-INVALID-JSON.txt"


def _podman_objects() -> list:
    # The man page trimmed two capability lists by hand, leaving "…",\n ]: drop those commas
    # (the only edit), and the rest is podman's own layout.
    return json.loads(re.sub(r",(\s*\])", r"\1", PODMAN.read_text()))


def test_docker_shape():
    rec = container_record("portainer", "docker", json.loads(DOCKER.read_text()))
    assert set(rec) == set(CONTAINER_FIELDS)
    assert rec["state"] == "running" and rec["restart_policy"] == "always" and rec["restarts_total"] == 0
    assert rec["oom_killed"] is False and rec["health"] is None and rec["exit_code"] == 0
    assert rec["image"] == "portainer/portainer:latest"
    assert rec["started_at"] == "2019-04-13T22:38:24.498745809Z"


def test_podman_shape_differs_and_reads_the_same():
    rec = container_record("foobar", "podman", _podman_objects()[0])
    assert rec["state"] == "exited"
    assert rec["restart_policy"] == "no"  # podman writes no policy as ""
    assert rec["image"] == "docker.io/library/alpine:latest"  # ImageName, not the image id
    assert rec["health"] is None  # State.Healthcheck with Status "": no health check
    assert rec["exit_code"] == 0 and rec["oom_killed"] is False


@pytest.fixture
def fake_engine(tmp_path, monkeypatch):
    """A PATH holding only the FAKE engine CLI (as docker or podman) and the basics."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def install(tool: str, capture: Path) -> Path:
        shutil.copy(REPO / "tests" / "fakes" / "container-engine", bin_dir / tool)
        monkeypatch.setenv(f"FAKE_ENGINE_CAPTURE_{tool.upper()}", str(capture))
        monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "calls.log"))
        return tmp_path / "calls.log"

    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")  # no other docker or podman
    return install


def test_poller_reads_docker_every_poll_not_every_sample_fake_docker(fake_engine):
    log = fake_engine("docker", DOCKER)
    now = [0.0]
    poller = ContainerPoller(["portainer"], Problems(), clock=lambda: now[0], poll_s=15)
    first = poller.sample()
    assert [(r["name"], r["engine"], r["state"], r["restart_policy"]) for r in first] == [
        ("portainer", "docker", "running", "always")
    ]
    for t in (1, 5, 14):  # samples between polls: no engine call
        now[0] = t
        assert poller.sample() == first
    now[0] = 15
    poller.sample()
    assert log.read_text().splitlines() == ["docker inspect --type container portainer"] * 2


def test_poller_falls_back_to_podman_fake_podman(fake_engine, tmp_path):
    fixed = tmp_path / "podman-inspect.json"
    fixed.write_text(json.dumps(_podman_objects()))
    fake_engine("podman", fixed)
    records = ContainerPoller(["foobar"], Problems()).sample()
    assert records[0]["engine"] == "podman" and records[0]["restart_policy"] == "no"


def test_no_engine_is_said_in_the_record(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    records = ContainerPoller(["trainer"], Problems()).sample()
    assert records[0]["error"] == "no docker or podman on this node"


def _alerts(sample: Sample) -> dict:
    fleet = FleetState(["n"], engine=build_engine())
    fleet.on_status("n", "ok")
    for t in (1000.0, 1010.0, 1020.0):  # slow rules are judged every few seconds
        sample.time = t
        fleet.on_sample("n", sample)
    return {rule: a for (rule, _gpu), a in fleet.nodes["n"].alerts.items()}


def test_restart_policy_rules_both_ways_through_the_engine():
    kept = ContainerSample("t", restart_policy="always")
    assert "container_no_restart" not in _alerts(Sample(time=0.0, containers=[kept]))
    bare = ContainerSample("trainer", restart_policy="no")
    found = _alerts(Sample(time=0.0, containers=[bare]))["container_no_restart"]
    assert found.severity == "warning"
    assert found.message.startswith("trainer: restart policy no — the job will not come back after a crash")
    unit = UnitSample("dl_train.service", load_state="loaded", restart_policy="no")
    found = _alerts(Sample(time=0.0, units=[unit]))["unit_no_restart"]
    assert found.severity == "warning"
    assert found.message.startswith("dl_train.service: Restart=no — the job will not come back after a crash")
    unknown = UnitSample("dl_train.service", load_state="loaded")  # an older probe: not judged
    assert "unit_no_restart" not in _alerts(Sample(time=0.0, units=[unknown]))


def test_container_flapping_counts_restart_rises_and_oom_makes_it_critical():
    fleet = FleetState(["n"], engine=build_engine())
    fleet.on_status("n", "ok")
    for i, t in enumerate((1000.0, 1060.0, 1120.0, 1180.0)):
        c = ContainerSample("trainer", restart_policy="on-failure:5", restarts_total=i, state="restarting",
                            exit_code=137, oom_killed=i == 3)
        fleet.on_sample("n", Sample(time=t, containers=[c]))
    alert = fleet.nodes["n"].alerts[("container_flapping", None)]
    assert alert.severity == "critical"
    assert alert.message.startswith(
        "trainer restarted 3 times in 15m00s (RestartCount 3, now restarting, last exit 137, last exit an OOM kill)"
    )


def test_a_label_selector_finds_the_container_by_its_labels_fake_docker(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(REPO / "tests" / "fakes" / "container-engine", bin_dir / "docker")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_ENGINE_CAPTURE_DOCKER", str(DOCKER))
    monkeypatch.setenv("FAKE_ENGINE_NAMES", "trainer")
    monkeypatch.setenv("FAKE_ENGINE_LABELS", "role=trainer")
    found, missing = ContainerPoller(["label=role=trainer", "label=role=eval"], Problems()).sample()
    assert (found["name"], found["state"], found["restart_policy"]) == ("trainer", "running", "always")
    assert missing["name"] == "label=role=eval" and missing["error"] == "no container matches label=role=eval"
