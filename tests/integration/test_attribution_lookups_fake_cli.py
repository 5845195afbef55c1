"""The container lookups through the command seam: real subprocesses of fake ``docker``,
``podman`` and ``crictl`` CLIs (tests/fakes/container-engine) that replay real inspect captures,
on the PATH as a node would have them. No container engine runs on these machines; the cgroup
paths are the real captures' (tests/fixtures/scheduler/)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dltui.core.models import GpuProcess, GpuSample, NodeEvent, Sample
from dltui.core.state import FleetState
from dltui.node.probe.attribution import parse_cgroup
from dltui.transport.attribution import LOOKUP_EVERY_S, AttributionLookups
from dltui.transport.command import LocalRunner
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions
from tests.integration.conftest import require
from tests.integration.sshd import SSHD, SshLab

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "scheduler"
FAKE = REPO / "tests" / "fakes" / "container-engine"
DOCKER_CAPTURE = FIXTURES / "docker-engine-api-container-inspect_portainer-running_watchtower.json"
CRICTL_CAPTURE = FIXTURES / "crictl-inspect_crio-k8s-container_litmus.json"


class Events:
    """A sink that keeps the events it is given."""

    def __init__(self):
        self.events: list[tuple[str, NodeEvent]] = []

    def on_event(self, name, event):
        self.events.append((name, event))


@pytest.fixture
def node_path(tmp_path, monkeypatch):
    """A bin folder with the fake CLIs, first on PATH (LocalRunner's subprocesses inherit it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin")
    monkeypatch.setenv("FAKE_ENGINE_LOG", str(tmp_path / "calls.log"))
    return bin_dir


def install(bin_dir: Path, *tools: str) -> None:
    for tool in tools:
        shutil.copy(FAKE, bin_dir / tool)


def state_with(cgroup_capture: str, container_id: str | None = None) -> FleetState:
    """A fleet of one node whose GPU holds one process with the capture's cgroup."""
    fields = parse_cgroup((FIXTURES / cgroup_capture).read_text())
    if container_id is not None:  # the inspect capture's container, found under that runtime's path
        fields["container_id"] = container_id
    state = FleetState(["n1"])
    state.node("n1").sample = Sample(time=0.0, gpus=[GpuSample(0, processes=[GpuProcess(7, "python", **fields)])])
    return state


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_docker_container_named_once_a_minute_fake_cli(node_path, tmp_path, monkeypatch):
    install(node_path, "docker")
    monkeypatch.setenv("FAKE_ENGINE_CAPTURE_DOCKER", str(DOCKER_CAPTURE))
    cid = "b978af0b858aa8855cce46b628817d4ed58e58f2c4f66c9b9c5449134ed4c008"
    state = state_with("cgroup-v2_docker-systemd_kepler.txt", cid)
    clock = [0.0]
    lookups = AttributionLookups(state, LocalRunner(), ["n1"], clock=lambda: clock[0])
    sink = Events()
    for _ in range(30):  # thirty scans within the minute: one inspect
        asyncio.run(lookups.scan(sink))
        clock[0] += 1.0
    info = state.node("n1").containers[cid]
    assert (info.name, info.image, info.state, info.restart_policy, info.engine) == (
        "portainer", "portainer/portainer:latest", "running", "always", "docker")
    assert calls(tmp_path) == [f"docker inspect {cid}"]
    clock[0] += LOOKUP_EVERY_S
    asyncio.run(lookups.scan(sink))
    assert len(calls(tmp_path)) == 2 and sink.events == []


def test_podman_asked_when_docker_is_missing_and_that_said_once_fake_cli(node_path, tmp_path, monkeypatch):
    """No docker on the node: podman is asked; the node says once that docker is not there."""
    install(node_path, "podman")
    monkeypatch.setenv("FAKE_ENGINE_CAPTURE_PODMAN", str(DOCKER_CAPTURE))  # podman answers in Docker's shape
    cid = "b978af0b858aa8855cce46b628817d4ed58e58f2c4f66c9b9c5449134ed4c008"
    state = state_with("cgroup-v1_docker-cgroupfs_elastic.txt", cid)
    clock = [0.0]
    lookups = AttributionLookups(state, LocalRunner(), ["n1"], clock=lambda: clock[0])
    sink = Events()
    for _ in range(3):
        asyncio.run(lookups.scan(sink))
        clock[0] += LOOKUP_EVERY_S
    assert state.node("n1").containers[cid].engine == "podman"
    said = [e.message for _, e in sink.events]
    assert said == ["docker is not on this node: container names and states not shown"]
    assert calls(tmp_path) == [f"podman inspect {cid}"] * 3


def test_crictl_names_the_pod_fake_cli(node_path, tmp_path, monkeypatch):
    install(node_path, "crictl")
    state = state_with("cgroup-v2_k8s-crio-systemd-burstable_neuvector-kubic.txt")
    cid = "f33f47b0db740bb647cb3e7ac62d96c74966dbb99cbfaf4563bfd42d387e8b44"
    monkeypatch.setenv("FAKE_ENGINE_CAPTURE_CRICTL", str(CRICTL_CAPTURE))
    monkeypatch.setenv("FAKE_ENGINE_IDS", cid)  # the capture's container under the cgroup capture's id
    lookups = AttributionLookups(state, LocalRunner(), ["n1"])
    asyncio.run(lookups.scan(Events()))
    (info,) = state.node("n1").containers.values()
    assert (info.pod_name, info.pod_namespace, info.name) == ("app-7f99cf5459-gdqw7", "myteam", "nginx-unprivileged")
    assert calls(tmp_path) == [f"crictl inspect {cid}"]


def test_socket_for_root_only_asks_sudo_and_a_refusal_names_the_sudoers_line_once_fake_cli(monkeypatch):
    """crictl's socket is root's: the lookup retries through ``sudo -n``; a user sudo refuses
    gets one note with the sudoers line, and is not asked again."""
    nobody = subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True)
    # CI has them (make test installs sudo and util-linux): a gap fails there, as for sshd
    require(nobody.returncode == 0 and bool(shutil.which("sudo")) and bool(shutil.which("setpriv")),
            "needs the nobody user, sudo and setpriv")
    # a folder the unprivileged user can reach (pytest's tmp_path is root's alone)
    base = Path(tempfile.mkdtemp(prefix="dltui-attr-"))
    try:
        base.chmod(0o755)
        bin_dir = base / "bin"
        bin_dir.mkdir(mode=0o755)
        install(bin_dir, "crictl")
        log = base / "calls.log"
        log.touch()
        log.chmod(0o666)
        monkeypatch.setenv("PATH", f"{bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin")
        monkeypatch.setenv("FAKE_ENGINE_LOG", str(log))
        monkeypatch.setenv("FAKE_ENGINE_CAPTURE_CRICTL", str(CRICTL_CAPTURE))
        monkeypatch.setenv("FAKE_ENGINE_DENIED", "crictl")

        class AsNobody(LocalRunner):
            """This machine as an unprivileged user (the SSH user of a node without sudo rights)."""

            async def run_command(self, node, argv, timeout_s):
                return await super().run_command(
                    node, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv], timeout_s
                )

        state = state_with("cgroup-v2_k8s-containerd-systemd-besteffort_neuvector.txt")
        clock = [0.0]
        lookups = AttributionLookups(state, AsNobody(), ["n1"], clock=lambda: clock[0])
        sink = Events()
        for _ in range(3):
            asyncio.run(lookups.scan(sink))
            clock[0] += LOOKUP_EVERY_S
        assert state.node("n1").containers == {}
        (note,) = [e.message for _, e in sink.events]
        assert note.startswith("crictl needs root here (its socket) and sudo -n refused")
        assert note.endswith("nobody ALL=(root) NOPASSWD: /usr/bin/crictl inspect *")
        # asked once as the user (denied), then sudo refused: never again
        assert log.read_text().splitlines() == [
            "crictl inspect 25d057a4c6c9555f2a0eb106e8896968c28f1c44aca4754174851aca7f89ad26"
        ]
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_lookups_over_a_real_sshd_to_a_node_with_fake_docker_and_crictl(tmp_path, use_home):
    """The same lookups through the SSH command runner: each a session on the node's one
    connection, the fake CLIs on the node's PATH (as the probe's node would have them)."""
    require(Path(SSHD).exists(), f"{SSHD} is missing: install openssh-server")
    lab = SshLab(tmp_path / "lab")
    node = lab.add_node("ctr01", fake_smi=False)
    install(node.bin, "docker", "crictl")
    docker_id = "b978af0b858aa8855cce46b628817d4ed58e58f2c4f66c9b9c5449134ed4c008"
    docker = parse_cgroup((FIXTURES / "cgroup-v1_docker-systemd_neuvector-centos.txt").read_text())
    pod = parse_cgroup((FIXTURES / "cgroup-hybrid_k8s-containerd-systemd-burstable_elastic-eks-amzn2.txt").read_text())
    node.env.update(FAKE_ENGINE_CAPTURE_DOCKER=str(DOCKER_CAPTURE), FAKE_ENGINE_CAPTURE_CRICTL=str(CRICTL_CAPTURE),
                    FAKE_ENGINE_IDS=pod["container_id"], FAKE_ENGINE_LOG=str(tmp_path / "calls.log"))
    docker["container_id"] = docker_id
    state = FleetState(["ctr01"])
    state.node("ctr01").sample = Sample(time=0.0, gpus=[
        GpuSample(0, processes=[GpuProcess(7, "python", **docker)]),
        GpuSample(1, processes=[GpuProcess(8, "python", **pod)]),
    ])
    try:
        lab.start()
        use_home(lab.make_home(tmp_path / "home"))
        runner = SshCommands(SshOptions())
        try:
            await AttributionLookups(state, runner, ["ctr01"]).scan(Events())
        finally:
            await runner.close()
    finally:
        lab.close()
    containers = state.node("ctr01").containers
    assert containers[docker_id].name == "portainer"
    assert containers[pod["container_id"]].pod_name == "app-7f99cf5459-gdqw7"
    assert sorted(calls(tmp_path)) == [f"crictl inspect {pod['container_id']}", f"docker inspect {docker_id}"]
