"""Host keys and client keys against real sshd: refused clearly, never prompted for."""

from __future__ import annotations

import subprocess

import pytest

from dltui.core import status as st
from dltui.transport.ssh.options import SshOptions

from .sshd import keygen
from .streaming import Streaming

pytestmark = pytest.mark.sshd


async def test_unknown_host_key_is_refused_with_its_fingerprint(shared_lab, tmp_path, use_home):
    jump, gpu01 = shared_lab.nodes["jump"], shared_lab.nodes["gpu01"]
    home = use_home(shared_lab.make_home(tmp_path, known=[jump, shared_lab.nodes["gpu02"]]))
    before = (home / ".ssh" / "known_hosts").read_text()
    async with Streaming(["gpu01", "gpu02"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.HOST_KEY_UNKNOWN, "gpu01 refused")
        await s.until_samples(["gpu02"], 2)  # the rest of the fleet streams
        reason = s.state.nodes["gpu01"].reason
    assert reason.startswith(
        f"host key of [127.0.0.1]:{gpu01.port} is not in {home}/.ssh/known_hosts "
        f"(ssh-ed25519 {gpu01.fingerprint()}). Check the fingerprint, then connect once with ssh "
        "to record it, or run dltui with --accept-new-host-keys; retrying at "
    )
    assert (home / ".ssh" / "known_hosts").read_text() == before


async def test_changed_host_key_is_refused_with_the_new_fingerprint(shared_lab, tmp_path, use_home):
    jump, gpu01, gpu02 = (shared_lab.nodes[n] for n in ("jump", "gpu01", "gpu02"))
    home = use_home(shared_lab.make_home(tmp_path / "home", known=[jump, gpu02]))
    keygen(tmp_path / "old-key", "the key gpu01 had before a reinstall")
    with open(home / ".ssh" / "known_hosts", "a") as known:
        known.write(gpu01.known_hosts_line(tmp_path / "old-key"))
    async with Streaming(["gpu01", "gpu02"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.HOST_KEY_CHANGED, "gpu01 refused")
        await s.until_samples(["gpu02"], 2)
        reason = s.state.nodes["gpu01"].reason
    name = f"[127.0.0.1]:{gpu01.port}"
    assert reason.startswith(
        f"HOST KEY CHANGED for {name}: it now offers ssh-ed25519 {gpu01.fingerprint()}, which differs "
        f"from the key in {home}/.ssh/known_hosts (a reinstalled node, or someone in the middle). "
        f"If the change is expected: ssh-keygen -R '{name}' -f {home}/.ssh/known_hosts, then reconnect"
    )


async def test_unknown_jump_host_key_blocks_every_node_behind_it(shared_lab, tmp_path, use_home):
    jump = shared_lab.nodes["jump"]
    use_home(shared_lab.make_home(tmp_path, known=[shared_lab.nodes["gpu01"], shared_lab.nodes["gpu02"]]))
    async with Streaming(["gpu01", "gpu02"]) as s:
        await s.until(lambda f: all(n.status == st.HOST_KEY_UNKNOWN for n in f), "both nodes refused")
        for name in ("gpu01", "gpu02"):
            assert s.state.nodes[name].reason.startswith(
                f"jump host jump: host key of [127.0.0.1]:{jump.port} is not in "
            )
            assert jump.fingerprint() in s.state.nodes[name].reason


async def test_accept_new_host_keys_records_unknown_keys_but_refuses_changed_ones(shared_lab, tmp_path, use_home):
    jump, gpu01, gpu02 = (shared_lab.nodes[n] for n in ("jump", "gpu01", "gpu02"))
    home = use_home(shared_lab.make_home(tmp_path / "home", known=[]))  # nothing known yet
    keygen(tmp_path / "old-key", "gpu02's key before a reinstall")
    known_hosts = home / ".ssh" / "known_hosts"
    known_hosts.write_text(gpu02.known_hosts_line(tmp_path / "old-key"))
    async with Streaming(["gpu01", "gpu02"], SshOptions(accept_new_host_keys=True)) as s:
        await s.until(lambda f: f.nodes["gpu02"].status == st.HOST_KEY_CHANGED, "gpu02 refused")
        await s.until_samples(["gpu01"], 2)
        assert s.state.nodes["gpu01"].status == st.OK
    lines = known_hosts.read_text().splitlines(keepends=True)
    assert lines[0] == gpu02.known_hosts_line(tmp_path / "old-key")  # the changed key stays as it was
    assert sorted(lines[1:]) == sorted([jump.known_hosts_line(), gpu01.known_hosts_line()])
    # ssh(1) itself trusts what dltui recorded
    check = subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{gpu01.port}", "-f", str(known_hosts)], capture_output=True, text=True
    )
    assert check.returncode == 0 and gpu01.known_hosts_line().split()[2] in check.stdout


async def test_wrong_client_key_is_auth_failed(shared_lab, tmp_path, use_home):
    keygen(tmp_path / "stranger", "a key no node knows")
    use_home(shared_lab.make_home(tmp_path / "home", key=tmp_path / "stranger"))
    async with Streaming(["gpu01"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.AUTH_FAILED, "gpu01 auth-failed")
        reason = s.state.nodes["gpu01"].reason
    user, port = shared_lab.user, shared_lab.nodes["jump"].port
    assert reason.startswith(
        f"jump host jump: {user}@127.0.0.1:{port} refused every key offered: check the key (-i or IdentityFile) "
        "and the node's authorized_keys; retrying at "
    )


async def test_passphrase_protected_key_without_agent_is_auth_failed_not_a_prompt(shared_lab, tmp_path, use_home):
    home = use_home(shared_lab.make_home(tmp_path / "home"))
    key = home / ".ssh" / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-p", "-N", "secret words", "-f", str(key)], check=True, stdin=subprocess.DEVNULL)
    async with Streaming(["gpu01"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.AUTH_FAILED, "gpu01 auth-failed")
        reason = s.state.nodes["gpu01"].reason
    assert reason.startswith(
        f"jump host jump: {shared_lab.user}@127.0.0.1:{shared_lab.nodes['jump'].port} refused every key offered; "
        "~/.ssh/id_ed25519 needs a passphrase, which dltui never asks for: add it to the agent with ssh-add "
        "(the agent is not running); retrying at "
    )


async def test_identity_file_and_user_known_hosts_file_from_the_config_are_used(shared_lab, tmp_path, use_home):
    """Nothing at the default paths: the key and known_hosts are where the config says."""
    home = use_home(shared_lab.make_home(tmp_path / "home"))
    ssh_dir = home / ".ssh"
    (ssh_dir / "id_ed25519").rename(tmp_path / "fleet-key")
    (ssh_dir / "known_hosts").rename(tmp_path / "fleet-known-hosts")
    config = ssh_dir / "config"
    config.write_text(
        f"Host *\n  IdentityFile {tmp_path}/fleet-key\n  UserKnownHostsFile {tmp_path}/fleet-known-hosts\n"
        + config.read_text()
    )
    async with Streaming(["gpu01"]) as s:
        await s.until_samples(["gpu01"], 2)
        assert s.state.nodes["gpu01"].status == st.OK
    # --known-hosts overrides the config's file: now nothing is known
    options = SshOptions(known_hosts=str(tmp_path / "empty-known-hosts"))
    async with Streaming(["gpu01"], options) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.HOST_KEY_UNKNOWN, "jump refused")
        assert s.state.nodes["gpu01"].reason.startswith(
            f"jump host jump: host key of [127.0.0.1]:{shared_lab.nodes['jump'].port} is not in {tmp_path}/empty-known-hosts ("
        )


async def test_an_unreadable_known_hosts_refuses_plainly_and_the_fleet_keeps_retrying(shared_lab, tmp_path, use_home):
    home = use_home(shared_lab.make_home(tmp_path))
    known = home / ".ssh" / "known_hosts"
    known.unlink()
    known.mkdir()  # a directory where the file should be: unreadable as known_hosts
    async with Streaming(["gpu01", "gpu02"]) as s:
        await s.until(lambda f: all(n.status == st.HOST_KEY_UNKNOWN for n in f), "both nodes refused")
        reason = s.state.nodes["gpu01"].reason
    assert reason.startswith("jump host jump: cannot read known_hosts: [Errno 21] Is a directory: ")
    assert "retrying at " in reason
