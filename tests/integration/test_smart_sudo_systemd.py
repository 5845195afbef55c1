"""SMART as a non-root operator on a real systemd node (systemd_node.py): the probe runs over
real sshd as ``ops``, whose sudo refuses smartctl; the timeline says so once with a sudoers
line; that line, installed verbatim, lets the next connection read the drives through
``sudo -n``. smartctl there is the fake one replaying real captures (tests/fixtures/smartctl),
installed at /usr/local/bin, the first on ops's PATH; it needs root as the real one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import require
from .sshd import REPO
from .systemd_node import OPERATOR, SystemdNode, missing

pytestmark = [pytest.mark.systemd, pytest.mark.oldest_python_only]  # sudo and smartctl on the node: no operator Python in it

FAKE = REPO / "tests" / "fakes" / "smartctl"
CAPTURES = REPO / "tests" / "fixtures" / "smartctl"
ON_NODE = "/usr/local/share/dltui-test-smart"
SMARTCTL = "/usr/local/bin/smartctl"
DRIVES = {
    "/dev/nvme0": "nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json",
    "/dev/sda": "sata_seagate-st3500418as_reallocated-304.json",
}


@pytest.fixture(scope="module")
def sd_node(tmp_path_factory):
    why = missing()
    require(why is None, why or "")
    node = SystemdNode(tmp_path_factory.mktemp("sdsmart") / "client", 3)
    try:
        node.start()
        node.exec(["mkdir", "-p", ON_NODE])
        for name in DRIVES.values():
            node.exec(["sh", "-c", f"cat > {ON_NODE}/{name}"], input=(CAPTURES / name).read_text())
        node.exec(["sh", "-c", f"cat > {SMARTCTL} && chmod 755 {SMARTCTL}"], input=FAKE.read_text())
        table = {dev: [f"{ON_NODE}/{name}"] for dev, name in DRIVES.items()}
        node.exec(["sh", "-c", "cat > /usr/local/bin/smartctl.drives.json"], input=json.dumps(table))
        yield node
    finally:
        node.close()
        intact = node.canary_intact()
        node.remove_canary()
        assert intact, f"the host's /tmp lost {node.canary} while a systemd node ran"


def _snapshot(node: SystemdNode) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", node.name, "-F", str(node.base / "ssh_config"),
         "--json", "--seconds", "8", "--interval", "0.5"],
        cwd=REPO,
        env=dict(os.environ, HOME=str(node.base), PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1, 2), done.stderr + done.stdout
    (report,) = json.loads(done.stdout)["nodes"]
    assert report["status"] == "ok", report
    return report


def test_sudo_refusal_names_a_line_that_installed_verbatim_lets_smart_be_read_fake_smartctl(sd_node):
    refused = _snapshot(sd_node)
    assert refused["sample"]["drives"] == []
    notes = [e["message"] for e in refused["timeline"] if e["message"].startswith("drives:")]
    assert len(notes) == 1, notes  # said once
    assert "sudo refused smartctl (a password is required)" in notes[0]
    line = notes[0].split("add with visudo: ", 1)[1]
    assert line == (
        f"{OPERATOR} ALL=(root) NOPASSWD: {SMARTCTL} --scan-open -j, "
        f"{SMARTCTL} -j -a -n standby /dev/nvme0, {SMARTCTL} -j -a -n standby /dev/sda"
    )
    sd_node.install_sudoers_text(sd_node.sudoers_text() + line + "\n")

    allowed = _snapshot(sd_node)
    drives = {d["device"]: d for d in allowed["sample"]["drives"]}
    assert set(drives) == set(DRIVES)
    assert drives["/dev/nvme0"]["critical_warnings"] == ["volatile_memory_backup_failed"]
    assert not [e for e in allowed["timeline"] if e["message"].startswith("drives:")]
    assert {a["rule"]: a["severity"] for a in allowed["alerts"]}["drive_failing"] == "critical"
    calls = sd_node.exec(["cat", "/usr/local/bin/smartctl.calls"]).stdout.splitlines()
    assert "smartctl -j -a -n standby /dev/sda" in calls  # run as root, through sudo
