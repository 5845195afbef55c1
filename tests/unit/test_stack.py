"""The locked stack (dltui/node/probe/stack.py): node roots assembled from fixture files (dpkg status
files written by the real dpkg, APT and dnf configuration; tests/fixtures/stack/PROVENANCE.md),
read through ``read_stack(root=…)``; and once this machine's own files."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from dltui.node.probe import aptconf, stack

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stack"
RUNNING = "5.15.0-119-generic"


def node_root(tmp_path: Path, files: dict[str, str], links: dict[str, str] = (), dirs=()) -> tuple[str, str]:
    """A node's / (and its /sys) under tmp_path: ``files`` maps a path on the node to a fixture
    file's name (or, starting with ``=``, the text itself)."""
    root, sys_dir = tmp_path / "root", tmp_path / "sys"
    root.mkdir()
    sys_dir.mkdir()
    for where, what in files.items():
        base = sys_dir if where.startswith("/sys/") else root
        target = base / where.removeprefix("/sys/").lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if what.startswith("="):
            target.write_text(what[1:])
        else:
            shutil.copy(FIXTURES / what, target)
    for where, points_to in dict(links).items():
        target = root / where.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(points_to)
    for d in dirs:
        (root / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return str(root), str(sys_dir)


UBUNTU_AUTO = {
    "/etc/apt/apt.conf.d/20auto-upgrades": "apt_20auto-upgrades_on",
    "/etc/apt/apt.conf.d/50unattended-upgrades": "apt_50unattended-upgrades_security-only",
    "/usr/bin/unattended-upgrade": "=#!/usr/bin/python3\n",
    f"/lib/modules/{RUNNING}/modules.dep": "=",
}
TIMER = {"/etc/systemd/system/timers.target.wants/apt-daily-upgrade.timer": "/lib/systemd/system/apt-daily-upgrade.timer"}


def test_an_unheld_driver_under_unattended_upgrades_is_unlocked(tmp_path):
    root, sys_dir = node_root(
        tmp_path, {**UBUNTU_AUTO, "/var/lib/dpkg/status": "dpkg-status_ubuntu-driver-535_unheld"}, TIMER
    )
    s = stack.read_stack(root, sys_dir, RUNNING)
    assert s["package_manager"] == "dpkg"
    assert s["driver_packages"] == [
        "libnvidia-compute-535", "nvidia-dkms-535", "nvidia-driver-535", "nvidia-kernel-common-535", "nvidia-utils-535"
    ]  # the container toolkit is not the driver
    assert s["driver_held"] is False and s["driver_packages_unheld"] == s["driver_packages"]
    assert s["driver_package_version"] == "535.183.01"
    assert s["auto_upgrades"] is True and s["auto_upgrades_skip_driver"] is False
    assert s["auto_upgrades_source"] == "APT::Periodic::Unattended-Upgrade 1"
    assert s["reboot_reasons"] == []


def test_held_packages_are_locked_and_a_held_metapackage_alone_is_not(tmp_path):
    root, sys_dir = node_root(tmp_path, {**UBUNTU_AUTO, "/var/lib/dpkg/status": "dpkg-status_ubuntu-driver-535_held"}, TIMER)
    held = stack.read_stack(root, sys_dir, RUNNING)
    assert held["driver_held"] is True and held["driver_packages_unheld"] == []
    shutil.copy(FIXTURES / "dpkg-status_ubuntu-driver-535_metapackage-held-only", Path(root) / "var/lib/dpkg/status")
    partly = stack.read_stack(root, sys_dir, RUNNING)
    assert partly["driver_held"] is False
    assert "nvidia-driver-535" not in partly["driver_packages_unheld"]
    assert "libnvidia-compute-535" in partly["driver_packages_unheld"]


def test_a_blacklist_covering_every_driver_package_keeps_unattended_upgrades_off_it(tmp_path):
    root, sys_dir = node_root(
        tmp_path,
        {**UBUNTU_AUTO, "/var/lib/dpkg/status": "dpkg-status_ubuntu-driver-535_unheld",
         "/etc/apt/apt.conf.d/52site-driver-blacklist": "apt_52site-driver-blacklist"},
        TIMER,
    )
    s = stack.read_stack(root, sys_dir, RUNNING)
    assert s["auto_upgrades"] is True and s["auto_upgrades_skip_driver"] is True


@pytest.mark.parametrize(
    "change, why",
    [
        ({"/etc/apt/apt.conf.d/20auto-upgrades": "apt_20auto-upgrades_off"}, "Unattended-Upgrade 0"),
        ({"/usr/bin/unattended-upgrade": None}, "unattended-upgrades not installed"),
        ({"timer": "masked"}, "apt-daily-upgrade.timer disabled"),
        ({"timer": None}, "apt-daily-upgrade.timer disabled"),
        ({"/etc/apt/apt.conf.d/20auto-upgrades.dpkg-old": "apt_20auto-upgrades_on",
          "/etc/apt/apt.conf.d/20auto-upgrades": "apt_20auto-upgrades_off"}, "Unattended-Upgrade 0"),
    ],
)
def test_unattended_upgrades_count_as_off_when_apt_would_not_run_them(tmp_path, change, why):
    files = {**UBUNTU_AUTO, "/var/lib/dpkg/status": "dpkg-status_ubuntu-driver-535_unheld"}
    links = dict(TIMER)
    timer = change.pop("timer", "enabled")
    for where, what in change.items():
        if what is None:
            files.pop(where)
        else:
            files[where] = what
    if timer != "enabled":
        links = {"/etc/systemd/system/apt-daily-upgrade.timer": "/dev/null"} if timer == "masked" else {}
    root, sys_dir = node_root(tmp_path, files, links, dirs=("/etc/systemd/system/timers.target.wants",))
    s = stack.read_stack(root, sys_dir, RUNNING)
    assert s["auto_upgrades"] is False
    assert why in s["auto_upgrades_source"]


def test_a_pending_reboot_gives_each_reason(tmp_path):
    root, sys_dir = node_root(
        tmp_path,
        {
            **UBUNTU_AUTO,
            "/var/lib/dpkg/status": "dpkg-status_ubuntu-driver-535_held",
            "/lib/modules/5.15.0-122-generic/modules.dep": "=",
            "/lib/modules/5.15.0-99-generic/modules.dep": "=",  # older: sorts below 119 as a number
            "/lib/modules/6.2.0-1-generic/updates/dkms/nvidia.ko": "=",  # left behind, no modules.dep
            "/run/reboot-required": "=*** System restart required ***\n",
            "/run/reboot-required.pkgs": "=linux-image-5.15.0-122-generic\nlinux-base\n",
            "/sys/module/nvidia/version": "=535.161.08\n",
        },
        TIMER,
    )
    s = stack.read_stack(root, sys_dir, RUNNING)
    assert s["kernel_newest_installed"] == "5.15.0-122-generic"
    assert s["driver_module_version"] == "535.161.08"
    assert s["reboot_reasons"] == [
        "reboot-required by linux-image-5.15.0-122-generic, linux-base",
        f"kernel 5.15.0-122-generic installed, {RUNNING} running",
        "NVIDIA driver 535.183.01 installed, kernel module 535.161.08 loaded",
    ]


def test_rpm_versionlock_holds_the_driver_and_dnf_automatic_upgrades(tmp_path):
    root, sys_dir = node_root(
        tmp_path,
        {"/etc/dnf/automatic.conf": "dnf_automatic.conf_apply-updates"},
        {"/etc/systemd/system/timers.target.wants/dnf-automatic.timer": "/usr/lib/systemd/system/dnf-automatic.timer"},
        dirs=("/var/lib/rpm",),
    )
    unlocked = stack.read_stack(root, sys_dir, RUNNING)
    assert (unlocked["package_manager"], unlocked["driver_held"], unlocked["auto_upgrades"]) == ("rpm", False, True)
    assert unlocked["auto_upgrades_source"] == "dnf-automatic timer, apply_updates = yes"
    lock = Path(root) / "etc/dnf/plugins/versionlock.list"
    lock.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "dnf_versionlock.list_nvidia-driver-550", lock)
    assert stack.read_stack(root, sys_dir, RUNNING)["driver_held"] is True


def test_apt_config_syntax_scopes_lists_clear_and_comments():
    config = aptconf.AptConfig()
    config.parse(
        '// c\nAPT { Periodic { Unattended-Upgrade "1"; Verbose 2; }; };\n'
        '# hash comment\nUnattended-Upgrade::Package-Blacklist { "a"; /* "b"; */ "c"; };\n'
        "#clear Unattended-Upgrade::Package-Blacklist;\n"
        'Unattended-Upgrade::Package-Blacklist { "d"; };\n'
    )
    assert config.get("apt::periodic::unattended-upgrade") == "1"
    assert config.get("APT::Periodic::Verbose") == "2"  # unquoted, as APT tolerates
    assert config.items("Unattended-Upgrade::Package-Blacklist") == ["d"]


def test_the_dpkg_scan_is_fast_on_a_big_status_file():
    """A GPU server's status file is megabytes (CUDA toolkits): the scan reads only the driver's
    stanzas. Sizing only (no timing assertion): it finds the same packages in 5 MB."""
    one = (FIXTURES / "dpkg-status_ubuntu-driver-535_unheld").read_bytes()
    filler = b"".join(b"Package: lib%05d\nStatus: install ok installed\nVersion: 1.0\n\n" % i for i in range(60000))
    big = filler + one + filler
    started = time.perf_counter()
    found = stack.dpkg_driver_packages(big)
    print(f"{len(big) / 1e6:.1f} MB in {1000 * (time.perf_counter() - started):.1f} ms")
    assert [name for name, _, _ in found] == [name for name, _, _ in stack.dpkg_driver_packages(one)]


def test_this_machines_real_files_read_without_error():
    """Once on the real / of the machine running the tests: whatever it holds, the reading is
    complete and consistent."""
    s = stack.read_stack()
    assert set(s) == set(stack.STACK_FIELDS)
    assert isinstance(s["reboot_reasons"], list)
    if os.path.exists("/var/lib/dpkg/status"):
        assert s["package_manager"] == "dpkg" and isinstance(s["auto_upgrades"], bool)
        assert s["auto_upgrades_source"].startswith("APT::Periodic::Unattended-Upgrade")
    if s["driver_packages"] is None:
        assert s["driver_held"] is None  # no driver packages: nothing held or unheld
