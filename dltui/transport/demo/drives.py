"""The demo fleet's drives and software stacks (``node.py`` places them on its nodes).

Every node has the three Samsung NVMe drives its facts list, read by SMART every 5 minutes of
simulated time, and a held 550 driver. Two nodes tell stories: gpu10's dataset drive has
degraded (NVMe critical warning 0x04, media errors), and gpu11 was left unheld under
unattended-upgrades, which rebooted it into a newer kernel and driver than its siblings run.
Values are fixed per node (no random stream is shared with the samples).
"""

from __future__ import annotations

import zlib

from dltui.core.models import DriveSample, StackFacts
from dltui.node.schema import decode_critical_warning

SMART_EVERY_S = 300.0
FAILING_DRIVE_INDEX = 9  # gpu10
UPGRADED_INDEX = 10  # gpu11
DRIVER, KERNEL = "550.90.07", "5.15.0-119-generic"
UPGRADED_DRIVER, UPGRADED_KERNEL = "550.127.05", "5.15.0-122-generic"
_DRIVES = (  # device, model, bytes, endurance used %
    ("/dev/nvme0", "SAMSUNG MZ1L21T9HCLS-00A07", 1_920_383_410_176, 2),
    ("/dev/nvme1", "SAMSUNG MZQL27T6HBLA-00A07", 7_681_501_126_656, 7),
    ("/dev/nvme2", "SAMSUNG MZQL27T6HBLA-00A07", 7_681_501_126_656, 4),
)
_PACKAGES = (
    "nvidia-driver-550-server",
    "libnvidia-compute-550-server",
    "nvidia-dkms-550-server",
    "nvidia-utils-550-server",
    "nvidia-fabricmanager-550",
)


def drives(name: str, index: int, now: float) -> list[DriveSample]:
    """The node's drives as their newest reading (taken on the 5-minute grid) says: the same
    objects until the next reading, as the probe's decoder keeps unchanged records. One
    reading kept per node, whatever the fleet's size (a shared LRU of 1,024 missed on every
    sample of a larger fleet, and built three drives a node each second)."""
    read = now - now % SMART_EVERY_S
    newest = _NEWEST.get((name, index))
    if newest is None or newest[0] != read:
        newest = _NEWEST[name, index] = (read, _reading(name, index, read))
    return newest[1]


_NEWEST: dict[tuple[str, int], tuple[float, list[DriveSample]]] = {}  # node -> (read at, drives)


def _reading(name: str, index: int, read: float) -> list[DriveSample]:
    seed = zlib.crc32(name.encode())
    out = []
    for slot, (device, model, size, used) in enumerate(_DRIVES):
        failing = index % 16 == FAILING_DRIVE_INDEX and slot == 1
        warning = 0x04 if failing else 0
        out.append(
            DriveSample(
                device=device,
                type="nvme",
                protocol="NVMe",
                model=model,
                serial="S6%02dNA0W%05d" % (slot, (seed >> slot) % 100000),
                capacity_bytes=size,
                smart_passed=not failing,
                critical_warning_mask=warning,
                critical_warnings=decode_critical_warning(warning),
                available_spare_percent=100 if not failing else 62,
                available_spare_threshold_percent=10,
                endurance_used_percent=used if not failing else 41,
                media_errors_total=0 if not failing else 38,
                error_log_entries_total=0 if not failing else 1270,
                unsafe_shutdowns_total=3 + (seed >> (8 + slot)) % 5,
                temperature_c=34 + slot * 3 + (seed >> (4 + slot)) % 4,
                power_on_hours=11_240 + slot,
                read_time=read,
            )
        )
    return out


def stack(index: int) -> StackFacts:
    upgraded = index % 16 == UPGRADED_INDEX
    version = UPGRADED_DRIVER if upgraded else DRIVER
    return StackFacts(
        package_manager="dpkg",
        driver_packages=list(_PACKAGES),
        driver_packages_unheld=list(_PACKAGES) if upgraded else [],
        driver_package_version=version,
        driver_held=not upgraded,
        driver_module_version=version,
        auto_upgrades=True,
        auto_upgrades_skip_driver=False,
        auto_upgrades_source="APT::Periodic::Unattended-Upgrade 1",
        kernel_newest_installed=UPGRADED_KERNEL if upgraded else KERNEL,
        reboot_reasons=[],
    )


def kernel(index: int) -> str:
    return UPGRADED_KERNEL if index % 16 == UPGRADED_INDEX else KERNEL


def driver(index: int) -> str:
    return UPGRADED_DRIVER if index % 16 == UPGRADED_INDEX else DRIVER
