"""drive_failing, drive_wear, drive_errors on drives read from the real smartctl captures
(tests/fixtures/smartctl), and stack_unlocked, reboot_pending on stack facts."""

from __future__ import annotations

import json
from pathlib import Path

from dltui.config import Config
from dltui.core.models import DriveSample, NodeFacts, Sample, StackFacts
from dltui.node.probe.smart import drive_record

from .rules_support import Rig, host

CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "smartctl"


def drive(capture: str, device: str = "/dev/nvme0") -> dict:
    return drive_record(device, json.loads((CAPTURES / capture).read_text()), 0.0)


def feed(rig: Rig, drives: list[dict], seconds: float = 6.0) -> None:
    """Samples carrying the same drive readings for ``seconds`` (slow rules run every 5 s)."""
    end = rig.clock.t + seconds
    while rig.clock.t < end:
        data = host()
        data.update(time=rig.clock.t, gpus=[], drives=drives)
        rig.fleet.on_sample("gpu01", Sample.from_dict(data))
        rig.fleet.tick()
        rig.clock.t += 1.0


def test_healthy_drives_raise_nothing():
    rig = Rig()
    feed(rig, [drive("nvme_samsung-mzql23t8hcls_healthy.json")])
    assert not [k for k in rig.alerts() if k[0].startswith("drive_")]


def test_an_nvme_critical_warning_is_critical_naming_the_device_and_the_bit():
    rig = Rig()
    feed(rig, [drive("nvme_samsung-mzql23t8hcls_healthy.json", "/dev/nvme1"),
               drive("nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json", "/dev/nvme0")])
    alert = rig.alert("drive_failing", None)
    assert alert.severity == "critical"
    assert alert.message.startswith(
        "NVMe critical warning 0x10 (volatile_memory_backup_failed) on /dev/nvme0 "
        "(SAMSUNG MZWLL3T2HAJQ-00005, S/N REDACTED) — back up"
    )
    assert "/dev/nvme1" not in alert.message and alert.evidence == {"drives": ["/dev/nvme0"]}


def test_a_failed_sata_drive_is_critical_and_its_unreadable_sectors_warn_at_first_sight():
    rig = Rig()
    feed(rig, [drive("sata_hitachi-hds721050dle630_failed-usb.json", "/dev/sdc")])
    assert "SMART overall-health self-assessment FAILED" in rig.alert("drive_failing", None).message
    errors = rig.alert("drive_errors", None)
    assert errors.severity == "warning"  # 8 pending: unreadable now, not history
    assert errors.message.startswith(
        "8 currently unreadable (pending) sectors, 1975 reallocated sectors on /dev/sdc ("
    )
    assert errors.message.endswith(
        "— the drive cannot read those sectors now: back up what it holds, run a long self-test "
        "(smartctl -t long), and replace it if they stay or grow"
    )
    assert errors.evidence["drives"] == ["/dev/sdc"]


def test_pending_sectors_warn_at_first_sight_and_reallocated_alone_stay_history():
    """The Seagate read first as derived (311 reallocated, 2 pending), beside its real 304
    reading (reallocated only) as a second drive."""
    rig = Rig()
    history = drive("sata_seagate-st3500418as_reallocated-304.json", "/dev/sdb")
    history["serial"] = "OTHER"
    feed(rig, [drive("derived_sata_seagate-st3500418as_reallocated-311.json", "/dev/sda"), history])
    alert = rig.alert("drive_errors", None)
    assert alert.severity == "warning"
    assert alert.message.startswith(
        "2 currently unreadable (pending) sectors, 311 reallocated sectors on /dev/sda (ST3500418AS, S/N "
    )
    assert "/dev/sdb" not in alert.message and alert.evidence["drives"] == ["/dev/sda"]
    alone = Rig()
    feed(alone, [history])
    assert alone.alert("drive_errors", None).severity == "info"


def test_offline_uncorrectable_sectors_warn_at_first_sight():
    """The real Seagate capture (304 reallocated) with attribute 198 Offline_Uncorrectable's raw
    value set to 8 in the test: the offline scan found 8 sectors it could not read."""
    data = json.loads((CAPTURES / "sata_seagate-st3500418as_reallocated-304.json").read_text())
    (attr,) = [a for a in data["ata_smart_attributes"]["table"] if a["id"] == 198]
    attr["raw"] = {"string": "8", "value": 8}
    rig = Rig()
    feed(rig, [drive_record("/dev/sda", data, 0.0)])
    alert = rig.alert("drive_errors", None)
    assert alert.severity == "warning"
    assert alert.message.startswith("8 offline uncorrectable sectors, 304 reallocated sectors on /dev/sda (")


def test_spare_under_threshold_is_a_warning_not_a_failure():
    rig = Rig()
    feed(rig, [drive("derived_nvme_spare-below-threshold.json")])
    assert rig.alert("drive_failing", None) is None
    wear = rig.alert("drive_wear", None)
    assert wear.severity == "warning"
    assert "available spare 5 % under its threshold 10 %" in wear.message


def test_endurance_used_past_the_threshold_is_a_warning_and_the_threshold_is_tunable():
    rig = Rig()
    feed(rig, [drive("derived_nvme_endurance-used-92.json")])
    assert "92 % of its rated endurance used" in rig.alert("drive_wear", None).message
    relaxed = Rig(cfg=Config(rules={"drive_wear": {"used_percent": 95}}))
    feed(relaxed, [drive("derived_nvme_endurance-used-92.json")])
    assert relaxed.alert("drive_wear", None) is None


def test_rising_reallocated_sectors_warn_then_fall_back_to_info_after_clear_s():
    rig = Rig(cfg=Config(rules={"drive_errors": {"clear_s": 60}}))
    feed(rig, [drive("sata_seagate-st3500418as_reallocated-304.json", "/dev/sda")])
    assert rig.alert("drive_errors", None).severity == "info"  # lifetime counts: history
    feed(rig, [drive("derived_sata_seagate-st3500418as_reallocated-311.json", "/dev/sda")])
    rising = rig.alert("drive_errors", None)
    assert rising.severity == "warning"
    assert "reallocated sectors 304 → 311, pending sectors 0 → 2" in rising.message
    rewritten = drive("derived_sata_seagate-st3500418as_reallocated-311.json", "/dev/sda")
    rewritten["pending_sectors"] = 0  # its 2 pending sectors rewritten fine: readable again
    feed(rig, [rewritten], seconds=70)
    assert rig.alert("drive_errors", None).severity == "info"


def test_rising_nvme_media_errors_warn():
    rig = Rig()
    feed(rig, [drive("nvme_samsung-970-evo_media-errors-7.json")])
    feed(rig, [drive("derived_nvme_samsung-970-evo_media-errors-9.json")])
    assert "media errors 7 → 9" in rig.alert("drive_errors", None).message


def test_a_replaced_drive_is_a_new_baseline_not_a_rise():
    rig = Rig()
    feed(rig, [drive("nvme_samsung-970-evo_media-errors-7.json")])
    other = drive("derived_nvme_samsung-970-evo_media-errors-9.json")
    other["serial"] = "NEW-SERIAL"
    feed(rig, [other])
    assert rig.alert("drive_errors", None).severity == "info"


def test_a_sas_drive_with_uncorrected_errors_and_grown_defects_is_reported_as_history():
    rig = Rig()
    feed(rig, [drive("sas_seagate-st373453lc_grown-defects.json", "/dev/sdb")])
    alert = rig.alert("drive_errors", None)
    assert alert.severity == "info"
    assert alert.message.startswith(
        "536 media errors, 260 reallocated sectors on /dev/sdb (SEAGATE ST373453LC, S/N REDACTED)"
    )


# -- the stack ------------------------------------------------------------------------------------

UNLOCKED = StackFacts(
    "dpkg", ["nvidia-driver-535", "libnvidia-compute-535"], ["nvidia-driver-535", "libnvidia-compute-535"],
    "535.183.01", False, "535.183.01", True, False, "APT::Periodic::Unattended-Upgrade 1",
)


def stack_rig(stack: StackFacts, cfg: Config | None = None) -> Rig:
    rig = Rig(cfg=cfg, facts=NodeFacts(hostname="gpu01", driver_version="535.183.01", stack=stack))
    feed(rig, [])
    return rig


def test_an_unheld_driver_under_automatic_upgrades_is_unlocked_with_the_hold_command():
    alert = stack_rig(UNLOCKED).alert("stack_unlocked", None)
    assert alert.severity == "warning"
    assert alert.message.startswith(
        "NVIDIA driver packages not held (nvidia-driver-535, libnvidia-compute-535) while automatic "
        "upgrades may replace them (APT::Periodic::Unattended-Upgrade 1)"
    )
    assert "apt-mark hold nvidia-driver-535 libnvidia-compute-535" in alert.message


def test_stack_unlocked_is_info_when_tuned_and_quiet_when_held_blacklisted_or_no_upgrades():
    info = stack_rig(UNLOCKED, Config(rules={"stack_unlocked": {"warning": False}}))
    assert info.alert("stack_unlocked", None).severity == "info"
    from dataclasses import replace

    for calm in (replace(UNLOCKED, driver_held=True, driver_packages_unheld=[]),
                 replace(UNLOCKED, auto_upgrades=False),
                 replace(UNLOCKED, auto_upgrades_skip_driver=True)):
        assert stack_rig(calm).alert("stack_unlocked", None) is None


def test_reboot_pending_is_info_with_every_reason():
    from dataclasses import replace

    rig = stack_rig(replace(UNLOCKED, driver_held=True, reboot_reasons=[
        "kernel 5.15.0-122-generic installed, 5.15.0-119-generic running",
        "NVIDIA driver 535.183.01 installed, kernel module 535.161.08 loaded",
    ]))
    alert = rig.alert("reboot_pending", None)
    assert alert.severity == "info"
    assert alert.message.startswith(
        "reboot pending: kernel 5.15.0-122-generic installed, 5.15.0-119-generic running; "
        "NVIDIA driver 535.183.01 installed, kernel module 535.161.08 loaded — reboot when"
    )
    assert stack_rig(UNLOCKED).alert("reboot_pending", None) is None


def test_drive_samples_survive_the_models_json_round_trip():
    d = DriveSample(**drive("nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json"))
    assert Sample.from_dict(json.loads(json.dumps(Sample(time=1.0, drives=[d]).to_dict()))).drives == [d]


def test_the_text_report_names_each_drive_and_the_stack():
    from dltui.report_text import render

    rig = stack_rig(UNLOCKED)
    feed(rig, [drive("nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json")])
    text = render(rig.fleet)
    assert "  stack: driver packages NOT held, automatic upgrades on\n" in text
    assert (
        "  drive /dev/nvme0: SAMSUNG MZWLL3T2HAJQ-00005 S/N REDACTED: SMART FAILED "
        "(volatile_memory_backup_failed), spare 100/10 %, used 0 %, media errors 0, temp 40°C\n"
    ) in text
    assert "[CRITICAL] NVMe critical warning 0x10" in text
