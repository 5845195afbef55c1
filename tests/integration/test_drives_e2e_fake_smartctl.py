"""End to end: real sshd nodes behind a jump host, the real probe, and a fake ``smartctl`` on
one node's PATH replaying real captures (tests/fixtures/smartctl): a failing NVMe drive (critical
warning 0x10) and a SATA drive with 304 reallocated sectors. ``dltui snapshot --json`` carries
the drives and the node's stack facts, raises the drive alerts on that node only, and exits 2;
a node with this machine's real smartctl reports what it finds, without complaint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.needs import require

from .conftest import build_lab
from .sshd import REPO, client_env

FAKE = REPO / "tests" / "fakes" / "smartctl"
CAPTURES = REPO / "tests" / "fixtures" / "smartctl"
DRIVES = {
    "/dev/nvme0": ["nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json"],
    "/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json"],
}


@pytest.fixture
def disk_lab(tmp_path):
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu-disk",))
    node = lab.nodes["gpu-disk"]
    shutil.copy(FAKE, node.bin / "smartctl")
    (node.bin / "smartctl.drives.json").write_text(
        json.dumps({dev: [str(CAPTURES / c) for c in caps] for dev, caps in DRIVES.items()})
    )
    lab.nodes["gpu01"].path = str(lab.nodes["gpu01"].bin) + ":/usr/bin:/bin"  # no sbin, as a user's
    try:
        yield lab.start()
    finally:
        lab.close()


def test_snapshot_reports_the_failing_drive_and_its_alerts_fake_smartctl(disk_lab, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "gpu-disk", "--json", "--seconds", "6", "--interval", "0.5"],
        cwd=REPO,
        env=client_env(disk_lab.make_home(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 2, done.stderr + done.stdout
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["status"] == "ok"
    drives = {d["device"]: d for d in node["sample"]["drives"]}
    assert set(drives) == {"/dev/nvme0", "/dev/sda"}
    assert drives["/dev/nvme0"]["critical_warnings"] == ["volatile_memory_backup_failed"]
    assert drives["/dev/nvme0"]["smart_passed"] is False
    assert drives["/dev/sda"]["reallocated_sectors_total"] == 304
    alerts = {a["rule"]: a for a in node["alerts"]}
    assert alerts["drive_failing"]["severity"] == "critical"
    assert alerts["drive_failing"]["message"].startswith(
        "NVMe critical warning 0x10 (volatile_memory_backup_failed) on /dev/nvme0 "
        "(SAMSUNG MZWLL3T2HAJQ-00005, S/N REDACTED)"
    )
    assert alerts["drive_errors"]["severity"] == "info"
    assert "304 reallocated sectors on /dev/sda" in alerts["drive_errors"]["message"]
    stack = node["facts"]["stack"]
    assert set(stack) >= {"driver_held", "auto_upgrades", "reboot_reasons"}
    calls = (disk_lab.nodes["gpu-disk"].bin / "smartctl.calls").read_text().splitlines()
    assert calls[0] == "smartctl --scan-open -j"  # as root on the node: no sudo
    assert "smartctl -j -a -n standby /dev/nvme0" in calls


def test_a_node_with_the_real_smartctl_and_no_readable_drive_reports_none_and_no_trouble(disk_lab, tmp_path):
    """gpu01 runs this machine's own smartctl (found in /usr/sbin although that is not on its
    PATH): a virtual machine's disk gives it nothing to read, which is no problem to report."""
    real = shutil.which("smartctl", path="/usr/sbin:/sbin:/usr/local/sbin")
    require(real is not None, "no smartctl installed on this machine (apt-get install smartmontools)")
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "gpu01", "--json", "--seconds", "5", "--interval", "0.5"],
        cwd=REPO,
        env=client_env(disk_lab.make_home(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=90,
    )
    (node,) = json.loads(done.stdout)["nodes"]
    scan = json.loads(subprocess.run([real, "--scan-open", "-j"], capture_output=True, text=True).stdout)
    assert len(node["sample"]["drives"]) == len(scan.get("devices", []))
    assert not [e for e in node["timeline"] if e["message"].startswith("drives:")]
