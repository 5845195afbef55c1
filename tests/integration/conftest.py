"""Fixtures for tests against real sshd servers (see ``sshd.py``).

Shared servers are session-scoped and sync; a test that kills a server builds its own lab.
Every test gets its own client ``$HOME`` (``~/.ssh``) and no SSH agent, so the product's real
default paths are exercised and no test can change another's known_hosts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.needs import require

from .slurm_lab import SlurmLab
from .slurm_lab import missing as slurm_missing
from .sshd import SSHD, SYSTEM_PATH, SshLab
from .systemd_node import SystemdNode, missing

__all__ = ["require"]  # the integration tests import it from here


def build_lab(base: Path, extra_nodes: tuple[str, ...] = ()) -> SshLab:
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    require(os.geteuid() == 0, "real-sshd tests run as root (sshd must switch users and use /run/sshd)")
    lab = SshLab(base)
    lab.add_node("jump", jump=True, fake_smi=False)
    for name in ("gpu01", "gpu02", *extra_nodes):
        lab.add_node(name)
    return lab


@pytest.fixture(scope="session")
def shared_lab(tmp_path_factory):
    """jump + gpu01 + gpu02 (+ nodes with a broken or slow python3) for tests that do not kill
    servers."""
    lab = build_lab(tmp_path_factory.mktemp("sshlab"), extra_nodes=("nopython", "garbage", "slowstart"))
    lab.nodes["nopython"].path = str(lab.nodes["nopython"].bin)  # a PATH with no python3 on it
    garbage = lab.nodes["garbage"].bin / "python3"
    garbage.write_text(
        "#!/bin/sh\n"
        "# a node whose python3 prints junk before running the real one\n"
        "echo 'Welcome to gpu-garbage!'\n"
        "echo '{\"type\": \"sample\", \"time\": 1'\n"
        "echo '[1, 2, 3]'\n"
        f"PATH={SYSTEM_PATH} exec python3 \"$@\"\n"
    )
    garbage.chmod(0o755)
    slow = lab.nodes["slowstart"].bin / "python3"
    slow.write_text(
        "#!/bin/sh\n"
        "# a node whose python3 takes seconds to start (a loaded machine, a cold file cache)\n"
        "sleep 3\n"
        f"PATH={SYSTEM_PATH} exec python3 \"$@\"\n"
    )
    slow.chmod(0o755)
    try:
        yield lab.start()
    finally:
        lab.close()


@pytest.fixture
def private_lab(tmp_path):
    """jump + gpu01 + gpu02 of this test's own: it may kill and restart them."""
    lab = build_lab(tmp_path / "lab")
    try:
        yield lab.start()
    finally:
        lab.close()


@pytest.fixture
def use_home(monkeypatch):
    """Point ``$HOME`` at a client home made by ``SshLab.make_home`` and drop the SSH agent."""

    def use(home: Path) -> Path:
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))  # its audit log
        monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
        return home

    return use


# Two real systemd nodes shared by the systemd tests of every module (one boot per session).
@pytest.fixture(scope="session")
def sd_nodes(tmp_path_factory):
    """Two real systemd nodes; on the second, dl_train.service cannot start."""
    why = missing()
    require(why is None, why or "")
    base = tmp_path_factory.mktemp("sdclient")
    nodes = []
    try:
        for i in range(2):
            nodes.append(SystemdNode(base / f"n{i}", i).start())
        nodes[1].exec(
            [
                "sh",
                "-c",
                "mkdir -p /etc/systemd/system/dl_train.service.d && printf "
                "'[Service]\\nExecStart=\\n"
                "ExecStart=/bin/sh -c \"echo CUDA error: no device >&2; exit 2\"\\n' "
                "> /etc/systemd/system/dl_train.service.d/broken.conf && systemctl daemon-reload",
            ]
        )
        # one ssh config naming both nodes
        config = base / "ssh_config"
        config.write_text("".join((n.base / "ssh_config").read_text() for n in nodes))
        yield nodes, str(config)
    finally:
        for n in nodes:
            n.close()
        for n in nodes:
            intact = n.canary_intact()
            n.remove_canary()
            assert intact, f"the host's /tmp lost {n.canary} while a systemd node ran"


# One real Slurm (slurmctld + slurmd + munged, tests/integration/slurm_lab.py) per session and
# per xdist worker: each worker boots its own on ports of its own.
@pytest.fixture(scope="session")
def slurm_lab():
    """A real one-node Slurm cluster: ``.env`` (SLURM_CONF), ``.submit(script, user=uid)``,
    ``.node_state()``, ``.job_pids(job)``. A test that drains the node resumes it before it ends."""
    why = slurm_missing()
    require(why is None, why or "")
    lab = SlurmLab()
    try:
        yield lab.start()
    finally:
        lab.close()


@pytest.fixture(scope="session")
def slurm_sshd(slurm_lab, tmp_path_factory):
    """A real sshd node, ``slurm01``, on this machine, whose sessions see the Slurm lab
    (SLURM_CONF): the probe and every scontrol of dltui go through sshd, as to a cluster node.
    Yields (the SshLab, the node)."""
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    lab = SshLab(tmp_path_factory.mktemp("slurmssh"))
    node = lab.add_node("slurm01")
    node.env.update(slurm_lab.env)
    try:
        yield lab.start(), node
    finally:
        lab.close()
