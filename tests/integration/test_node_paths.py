"""Node side, no guessable names: what dltui creates on a node lives in folders made by
``mktemp -d`` or checked to be the user's own, and a PID is signalled only once it is known to be
the process dltui started. Another local user (uid 65534, through setpriv) pre-creates files and
links where the code writes; the step runs as root; the victim file stays as it was and no other
process is signalled. A world-writable sticky folder of the test's own stands in for /tmp, and
nothing relies on fs.protected_symlinks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dltui.burnin import remote, ship
from tests.planted import NOBODY, VICTIM_TEXT, as_nobody, shared_tmp

from .conftest import require


@pytest.fixture
def node():
    """A /tmp of its own (1777, as on a node), a victim file and a victim process of root's."""
    with shared_tmp("dltui-paths-") as (_, tmp, victim):
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            yield tmp, victim, sleeper
        finally:
            sleeper.kill()
            sleeper.wait()


def sh(command: str, tmp: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", command], env={**os.environ, "TMPDIR": str(tmp), **env},
                          capture_output=True, timeout=60)


def iperf_servers(port: int) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[:2] == ["iperf3", "-s"]
            and str(port) in p.info["cmdline"]]


def test_the_iperf3_server_keeps_its_pid_where_no_one_else_can_write(node):
    require(bool(shutil.which("iperf3")), "iperf3 is missing")
    tmp, victim, sleeper = node
    port = 20000 + os.getpid() % 20000
    # What the old code wrote to and trusted: dltui-iperf3-RUN.pid in $TMPDIR. Planted by nobody:
    # a link to the victim file, and a pid file naming the victim process.
    as_nobody("ln", "-s", str(victim), str(tmp / "dltui-iperf3-20260101-000000.pid"))
    as_nobody("sh", "-c", f"echo {sleeper.pid} > {tmp}/dltui-iperf3.pid")
    started = sh(remote.iperf_server_command(port, 60), tmp)
    server = remote.iperf_server_started(started.stdout, port, 60)
    assert server is not None, started
    folder = Path(server.folder)
    assert folder.parent == tmp and folder.stat().st_uid == 0 and (folder.stat().st_mode & 0o777) == 0o700
    deadline = time.monotonic() + 30
    while not iperf_servers(port):  # a guard against a hang, not a timing check
        assert time.monotonic() < deadline, "the iperf3 server never started"
        time.sleep(0.05)
    sh(remote.iperf_server_stop_command(server), tmp)
    deadline = time.monotonic() + 30
    while iperf_servers(port):
        assert time.monotonic() < deadline, "the iperf3 server was not stopped"
        time.sleep(0.05)
    assert not folder.exists()
    assert victim.read_text() == VICTIM_TEXT and sleeper.poll() is None


@pytest.mark.parametrize("owner", ["nobody", "root"])
def test_a_pid_is_signalled_only_when_it_is_the_server_we_started(node, owner):
    """A folder another user made (a path that reached the stop step), or our own folder whose
    pid has since been reused by another process: nothing is signalled."""
    tmp, victim, sleeper = node
    folder = tmp / "dltui-iperf3.AbC123"
    if owner == "nobody":
        as_nobody("sh", "-c", f"mkdir -m 700 {folder} && echo {sleeper.pid} > {folder}/pid")
    else:
        folder.mkdir(mode=0o700)
        (folder / "pid").write_text(f"{sleeper.pid}\n")
    sh(remote.iperf_server_stop_command(remote.IperfServer(str(folder), 5201, 60)), tmp)
    assert sleeper.poll() is None  # still running: never signalled
    assert folder.exists() == (owner == "nobody")  # another user's folder is not even removed


def test_a_burn_in_never_uses_a_folder_another_user_owns(node):
    tmp, victim, sleeper = node
    base = tmp / "burnin"
    as_nobody("mkdir", "-m", "777", str(base))
    as_nobody("ln", "-s", str(victim), str(base / "lock"))
    as_nobody("ln", "-s", str(victim), str(base / "active"))
    cmd = ship.start_command(["--run-id", "r1", "--duration", "3", "--launcher", "setsid"], python=sys.executable)
    done = subprocess.run(["sh", "-c", cmd], input=ship.driver_script(), capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp), "DLTUI_BURNIN_DIR": str(base)}, timeout=60)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 4 and answer["reason"] == (
        f"{base} belongs to uid {NOBODY}, not to this user: burn-in refuses to use it"
    )
    assert victim.read_text() == VICTIM_TEXT and not (base / "r1").exists()
    assert sorted(p.name for p in tmp.iterdir()) == ["burnin"]  # the script sent, and its folder, gone
