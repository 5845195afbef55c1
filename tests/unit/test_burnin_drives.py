"""The burn-in's drive check: the node side reads SMART before and after the load
(dltui/node/burnin/drives.py, through the fake smartctl replaying real captures, a real
subprocess), the verdict (dltui/burnin/drive_check.py) fails a rise with its evidence."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from dltui.burnin import verdict as v
from dltui.node.burnin.drives import DriveHealth
from dltui.node.probe.smart import SmartReader

from .test_burnin_verdict import _run

REPO = Path(__file__).resolve().parents[2]
CAPTURES = REPO / "tests" / "fixtures" / "smartctl"


@pytest.fixture
def node_bin():
    folder = Path(tempfile.mkdtemp(prefix="dltui-burnin-smart-"))
    shutil.copy(REPO / "tests" / "fakes" / "smartctl", folder / "smartctl")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _drives_result(node_bin: Path, table: dict[str, list[str]]) -> dict:
    """result["drives"] as the driver writes it: a read before the load, one after."""
    (node_bin / "smartctl.drives.json").write_text(
        json.dumps({dev: [str(CAPTURES / c) for c in caps] for dev, caps in table.items()})
    )
    baseline = DriveHealth()
    baseline._reader = SmartReader(root=True, find=lambda n: str(node_bin / "smartctl"))
    result: dict = {}
    baseline.before(None, result)  # type: ignore[arg-type]  # the run folder is not read
    baseline.after(None, result, 0.0)  # type: ignore[arg-type]
    return result


def _judge(drives: dict) -> v.Item:
    run = _run(seconds=30)
    run.result.update(drives)
    return next(i for i in v.judge(run).items if i.check == "drives")


def test_reallocated_and_pending_sectors_rising_during_the_run_fail_the_node_fake_smartctl(node_bin):
    result = _drives_result(node_bin, {
        "/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json",
                     "derived_sata_seagate-st3500418as_reallocated-311.json"],
        "/dev/nvme0": ["nvme_samsung-mzql23t8hcls_healthy.json"],
    })
    assert result["drives"]["before"]["/dev/sda"]["reallocated_sectors_total"] == 304
    assert result["drives"]["after"]["/dev/sda"]["reallocated_sectors_total"] == 311
    item = _judge(result)
    assert item.status == v.FAIL
    assert item.evidence == (
        "/dev/sda (ST3500418AS, S/N REDACTED): reallocated sectors 304 → 311 during the run; "
        "/dev/sda (ST3500418AS, S/N REDACTED): pending sectors 0 → 2 during the run"
    )
    assert item.next_step.startswith("back up what the drive holds and replace it")


def test_a_drive_failing_before_the_load_fails_the_node_fake_smartctl(node_bin):
    item = _judge(_drives_result(node_bin, {"/dev/nvme0": ["nvme_samsung-mzwll3t2hajq_critical-warning-0x10.json"]}))
    assert item.status == v.FAIL
    assert "NVMe critical warning volatile_memory_backup_failed before the run" in item.evidence


def test_steady_drives_pass_and_a_drive_unreadable_at_the_end_warns_fake_smartctl(node_bin):
    steady = _judge(_drives_result(node_bin, {"/dev/nvme0": ["nvme_samsung-970-evo_media-errors-7.json"]}))
    assert steady.status == v.PASS and steady.evidence.startswith("1 drive: SMART passing")
    lost = _judge(_drives_result(node_bin, {"/dev/sda": ["sata_seagate-st3500418as_reallocated-304.json",
                                                         "open-failed_windows.json"]}))
    assert lost.status == v.WARN
    assert "not read after the run (Smartctl open device: /dev/sda failed" in lost.evidence


def test_no_smartctl_is_not_run_and_optional_by_default():
    run = _run()
    run.result["drives"] = {"tool": None, "reason": "smartctl not found: drive health (SMART) is not read"}
    verdict = v.judge(run)
    item = next(i for i in verdict.items if i.check == "drives")
    assert item.status == v.NOT_RUN and "smartctl not found" in item.evidence
    assert verdict.status == v.PASS and verdict.headline() == "PASS (not run: drives)"
