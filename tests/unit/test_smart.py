"""Drive health from smartctl's JSON (dltui/node/probe/smart.py), on real captures of healthy and
failing NVMe, SATA and SAS drives (tests/fixtures/smartctl/PROVENANCE.md), and the reader run
against the fake ``smartctl`` replaying them (tests/fakes/smartctl) as a real subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dltui.node import schema
from dltui.node.probe import smart
from tests.needs import require

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "tests" / "fixtures" / "smartctl"
FAKE = REPO / "tests" / "fakes" / "smartctl"


def capture(name: str) -> dict:
    return json.loads((CAPTURES / name).read_text())


def record(name: str, device: str = "/dev/x") -> dict:
    return smart.drive_record(device, capture(name), 1767258000.0)


def test_a_healthy_nvme_drive_reads_as_passing_with_its_spare_wear_and_counters():
    r = record("nvme_samsung-mzql23t8hcls_healthy.json", "/dev/nvme9")
    assert r["smart_passed"] is True
    assert (r["critical_warning_mask"], r["critical_warnings"]) == (0, [])
    assert (r["available_spare_percent"], r["available_spare_threshold_percent"]) == (100, 10)
    assert (r["endurance_used_percent"], r["media_errors_total"], r["unsafe_shutdowns_total"]) == (3, 0, 1)
    assert (r["temperature_c"], r["power_on_hours"], r["capacity_bytes"]) == (22, 4369, 3840755982336)
    assert (r["type"], r["protocol"], r["model"]) == ("nvme", "NVMe", "SAMSUNG MZQL23T8HCLS-00A07")
    assert r["reallocated_sectors_total"] is None and r["pending_sectors"] is None  # ATA only: n/a, not 0
    assert r["error"] is None


def test_a_failing_nvme_drive_names_its_critical_warning_bit():
    r = record("nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json")
    assert r["smart_passed"] is False
    assert r["critical_warning_mask"] == 0x10
    assert r["critical_warnings"] == ["volatile_memory_backup_failed"]
    # the same names smartctl itself gives the bits
    assert capture("nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json")["smart_status"]["nvme"][
        "volatile_memory_backup_failed"
    ] is True


def test_spare_below_threshold_is_bit_0():
    r = record("derived_nvme_spare-below-threshold.json")
    assert r["critical_warnings"] == ["spare_below_threshold"]
    assert r["available_spare_percent"] < r["available_spare_threshold_percent"]


def test_every_critical_warning_bit_decodes_and_unknown_bits_stay_visible():
    assert schema.decode_critical_warning(0x3F) == [name for _, name in schema.CRITICAL_WARNING_BITS]
    assert schema.decode_critical_warning(0x44) == ["reliability_degraded", "0x40"]
    assert schema.decode_critical_warning(None) is None


def test_a_sata_drive_gives_its_reallocated_pending_and_uncorrectable_sectors():
    r = record("sata_seagate-st3500418as_reallocated-304.json")
    assert r["smart_passed"] is True
    assert (r["reallocated_sectors_total"], r["pending_sectors"], r["offline_uncorrectable_sectors"]) == (304, 0, 0)
    assert r["udma_crc_errors_total"] == 0
    assert r["available_spare_percent"] is None and r["critical_warnings"] is None  # NVMe only


def test_a_failed_sata_drive_behind_usb_reads_as_failed_with_its_counts():
    r = record("sata_hitachi-hds721050dle630_failed-usb.json")
    assert r["smart_passed"] is False
    assert (r["reallocated_sectors_total"], r["pending_sectors"]) == (1975, 8)
    assert r["model"] == "Hitachi HDS721050DLE630"


def test_a_sas_drive_maps_grown_defects_and_uncorrected_errors():
    r = record("sas_seagate-st373453lc_grown-defects.json")
    assert r["reallocated_sectors_total"] == 260  # scsi_grown_defect_list
    assert r["media_errors_total"] == 1 + 535  # uncorrected read + write errors
    assert r["model"] == "SEAGATE ST373453LC" and r["temperature_c"] == 33


def test_text_from_the_drive_keeps_printable_characters_only():
    data = capture("nvme_samsung-mzql23t8hcls_healthy.json")
    data["model_name"] = "EVIL\x1b]0;PWNED\x07[@click=app.quit]" + "x" * 200
    r = smart.drive_record("/dev/nvme0", data, 0.0)
    assert "\x1b" not in r["model"] and "\x07" not in r["model"]
    assert len(r["model"]) == smart.TEXT_LIMIT


def test_scans_name_each_drive_and_the_raid_disks_by_their_type():
    plain = smart.scanned_devices(capture("scan_seven-sata-as-scsi.json"))
    assert [d for d, _ in plain] == [f"/dev/sd{c}" for c in "abcdefg"]
    assert plain[0][1] == ["/dev/sda"]  # no -d: smartctl's detection on open finds SAT itself
    raid = smart.scanned_devices(
        {"devices": [{"name": "/dev/bus/0", "type": "megaraid,0"}, {"name": "/dev/bus/0", "type": "megaraid,1"},
                     {"name": "/dev/sdz", "type": "sat", "open_error": "/dev/sdz: Permission denied"}]}
    )
    assert raid == [("/dev/bus/0 megaraid,0", ["-d", "megaraid,0", "/dev/bus/0"]),
                    ("/dev/bus/0 megaraid,1", ["-d", "megaraid,1", "/dev/bus/0"])]
    assert smart.scanned_devices(capture("scan-open_no-devices_debian12-vm.json")) == []


def test_an_open_failure_is_could_not_read_with_smartctls_words():
    data = capture("open-failed_windows.json")
    assert data["smartctl"]["exit_status"] & 0x03  # bit 1: open failed
    assert smart.messages(data)[0].startswith("Smartctl open device: /dev/sda failed")


# -- the reader, with the fake smartctl as a real subprocess ------------------------------------


@pytest.fixture
def fake_smartctl():
    """A node's bin/ with the fake smartctl and its drive table; returns (bin, write_table).
    Readable by every account: one test runs the reader as nobody."""
    bin_dir = Path(tempfile.mkdtemp(prefix="dltui-smart-"))
    bin_dir.chmod(0o755)
    shutil.copy(FAKE, bin_dir / "smartctl")

    def drives(table: dict[str, list[str]]) -> None:
        (bin_dir / "smartctl.drives.json").write_text(
            json.dumps({dev: [str(CAPTURES / c) for c in caps] for dev, caps in table.items()})
        )

    yield bin_dir, drives
    shutil.rmtree(bin_dir, ignore_errors=True)


def reader(bin_dir: Path, root: bool = True) -> smart.SmartReader:
    path = str(bin_dir / "smartctl")
    return smart.SmartReader(root=root, find=lambda name: path if name == "smartctl" else shutil.which(name))


def test_the_reader_scans_then_reads_each_drive_as_root_fake_smartctl(fake_smartctl):
    bin_dir, drives = fake_smartctl
    drives({"/dev/nvme0": ["nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json"],
            "/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json"]})
    records = reader(bin_dir).read()
    by = {r["device"]: r for r in records}
    assert set(by) == {"/dev/nvme0", "/dev/sda"}
    assert by["/dev/nvme0"]["critical_warnings"] == ["volatile_memory_backup_failed"]
    assert by["/dev/sda"]["reallocated_sectors_total"] == 304
    calls = (bin_dir / "smartctl.calls").read_text().splitlines()
    assert calls == ["smartctl --scan-open -j", "smartctl -j -a -n standby /dev/nvme0",
                     "smartctl -j -a -n standby /dev/sda"]


def test_a_drive_that_stops_answering_keeps_its_last_reading_with_the_reason_fake_smartctl(fake_smartctl):
    bin_dir, drives = fake_smartctl
    drives({"/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json", "open-failed_windows.json"]})
    r = reader(bin_dir)
    first = r.read()
    r.records = first
    second = r.read()
    assert second[0]["reallocated_sectors_total"] == 304  # what it said last
    assert second[0]["error"].startswith("Smartctl open device: /dev/sda failed")


def test_a_counter_rises_between_two_reads_fake_smartctl(fake_smartctl):
    bin_dir, drives = fake_smartctl
    drives({"/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json",
                         "derived_sata_seagate-st3500418as_reallocated-311.json"]})
    r = reader(bin_dir)
    assert r.read()[0]["reallocated_sectors_total"] == 304
    assert r.read()[0]["reallocated_sectors_total"] == 311


def test_no_smartctl_is_said_once_and_never_asked_again():
    r = smart.SmartReader(root=True, find=lambda name: None)
    assert r.read() == []
    assert r.given_up and "smartctl not found" in r.note and "smartmontools 7" in r.note


def test_this_machines_real_smartctl_scan_reads_without_error():
    """Once against the real binary where there is one: its scan parses, whatever it finds."""
    real = smart.find_tool("smartctl")
    require(real is not None and os.geteuid() == 0, "no smartctl here, or not root")
    r = smart.SmartReader(root=True)
    records = r.read()
    assert r.note is None
    assert all(rec["device"] for rec in records)


def test_sudo_refusal_names_the_exact_sudoers_line_for_the_scan_and_each_drive_fake_smartctl(fake_smartctl):
    """As an account with no sudo rights (nobody), the real sudo refuses; the note carries one
    sudoers line naming the scan and each drive's read exactly as the reader runs them."""
    require(os.geteuid() == 0 and bool(shutil.which("setpriv")) and bool(shutil.which("sudo")),
            "needs root, setpriv and sudo")
    bin_dir, drives = fake_smartctl
    drives({"/dev/nvme0": ["nvme_samsung-mzql23t8hcls_healthy.json"]})
    script = (
        "import json, sys; sys.path.insert(0, %r)\n"
        "from dltui.node.probe.smart import SmartReader\n"
        "r = SmartReader(find=lambda n: %r if n == 'smartctl' else __import__('shutil').which(n))\n"
        "print(json.dumps([r.read(), r.note, r.given_up]))\n" % (str(REPO), str(bin_dir / "smartctl"))
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-c", script],
        capture_output=True, text=True, timeout=60, cwd="/",
    )
    assert done.returncode == 0, done.stderr
    records, note, given_up = json.loads(done.stdout)
    assert records == [] and given_up  # not asked again on this connection: each refusal is logged
    fake = bin_dir / "smartctl"
    assert note.startswith("drive health is not read: sudo refused smartctl (")
    assert note.endswith(
        f"nobody ALL=(root) NOPASSWD: {fake} --scan-open -j, {fake} -j -a -n standby /dev/nvme0"
    )
