"""A host name is never handed to a ProxyCommand's shell when ssh(1) would refuse it.

The client's SSH config reaches every node through ``ProxyCommand sh -c "… %h … %r …"`` (a
relay through the lab's jump host with OpenSSH's own ``ssh -W``), as many sites write it. The
proxy works — a real node answers through it — and it notes each host and user it was started
for. A HOST like ``inj$(touch …)`` (or a user like ``$(touch …)@gpu01``) must stop every
command with one line before any ProxyCommand runs: the file it would create never appears
(before the check, it did: ``pwned`` and ``ran-inj…``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .sshd import client_env

pytestmark = pytest.mark.sshd


@pytest.fixture
def proxied(shared_lab, tmp_path):
    """(client env, the ssh config using the ProxyCommand, the folder the proxy writes into)."""
    jump, gpu01 = shared_lab.nodes["jump"], shared_lab.nodes["gpu01"]
    home = shared_lab.make_home(tmp_path / "home")
    ssh_dir = home / ".ssh"
    marks = tmp_path / "marks"
    marks.mkdir()
    relay = ssh_dir / "relay_config"  # how the relay (OpenSSH's ssh) reaches the jump host
    relay.write_text(
        f"Host jump\n  HostName {jump.address}\n  Port {jump.port}\n  User {shared_lab.user}\n"
        f"  IdentityFile {ssh_dir / 'id_ed25519'}\n  UserKnownHostsFile {ssh_dir / 'known_hosts'}\n"
        "  StrictHostKeyChecking yes\n  BatchMode yes\n"
    )
    config = ssh_dir / "proxied_config"
    config.write_text(
        f"Host *\n  User {shared_lab.user}\n  Port {gpu01.port}\n  ConnectTimeout 5\n"
        f'  ProxyCommand sh -c "touch {marks}/ran-%h-by-%r; exec ssh -F {relay} -W 127.0.0.1:%p jump"\n'
    )
    pub = Path(f"{gpu01.hostkey}.pub").read_text().split()
    with open(ssh_dir / "known_hosts", "a") as known:  # the node as the proxy's %h names it
        known.write(f"[gpu01]:{gpu01.port} {pub[0]} {pub[1]}\n")
    return client_env(home), config, marks


def dltui(env, *args, timeout=60):
    # run from the test's own home: a burn-in that got as far as its report writes it there
    return subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True, text=True,
                          cwd=env["HOME"], env=env, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_proxy_command_is_live_for_a_good_name(proxied, shared_lab):
    """The control: through this ProxyCommand a real node answers, and the proxy says it ran."""
    env, config, marks = proxied
    done = dltui(env, "snapshot", "-F", str(config), "--seconds", "2", "--interval", "0.5", "gpu01")
    assert done.stdout.startswith("gpu01: ok"), done.stdout + done.stderr
    assert sorted(p.name for p in marks.iterdir()) == [f"ran-gpu01-by-{shared_lab.user}"]


@pytest.mark.parametrize(
    "command, code",
    [
        (["snapshot", "--seconds", "1"], 3),
        (["export", "--listen", "127.0.0.1:0"], 2),
        (["watch"], 2),
        (["serve", "--listen", "127.0.0.1:0"], 2),  # refused at start, not in each browser tab
        (["unit", "status", "dl_train.service"], 2),
        (["burn-in", "--duration", "1m"], 3),
    ],
)
def test_a_host_with_shell_characters_stops_the_command_before_any_proxy_command(proxied, command, code):
    env, config, marks = proxied
    planted = marks / "pwned"
    host = f"inj$(touch {planted})"
    done = dltui(env, *command, "-F", str(config), host)
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr == (
        f"dltui: {host!r}: '$' is not allowed in a host name (ssh refuses it too: a ProxyCommand's shell "
        "would read it)\n"
    )
    assert list(marks.iterdir()) == []  # no proxy started, nothing touched


def test_a_user_with_shell_characters_is_refused_too(proxied):
    env, config, marks = proxied
    done = dltui(env, "signal", "4242", f"$(touch {marks}/pwned)@gpu01", "-F", str(config))
    assert done.returncode == 2 and done.stderr.startswith("dltui: ") and done.stderr.count("\n") == 1
    assert "'(' is not allowed in a user name" in done.stderr
    assert list(marks.iterdir()) == []


def test_a_jump_host_with_shell_characters_is_never_connected_to(proxied):
    """``-J`` hops are parsed by the same rule with the settings, before anything connects: a
    usage error in one line (UNKNOWN for snapshot, 2 for the rest), and the proxy (which every
    Host would use) never runs."""
    env, config, marks = proxied
    jump = f"inj$(touch {marks}/pwned)"
    for command, code in ((["snapshot", "--seconds", "1"], 3), (["unit", "status", "dl_train.service"], 2)):
        done = dltui(env, *command, "-F", str(config), "-J", jump, "gpu01")
        assert done.returncode == code, done.stdout + done.stderr
        assert done.stdout == ""
        assert done.stderr.startswith(f"dltui: {jump!r}: '$' is not allowed in a host name") and done.stderr.count("\n") == 1
    assert list(marks.iterdir()) == []
