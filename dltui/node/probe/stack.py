"""The software stack and whether it is locked: read once per connection, from files only.

The guides say: install the NVIDIA driver from the distribution's packages, hold it, let
automatic upgrades take security updates only, reboot into what was installed. This module
tells, without running a process:

- the driver packages installed and whether every one is held (dpkg's ``hold`` selection, which
  ``apt-mark hold`` sets, read from ``/var/lib/dpkg/status``; on RPM systems a versionlock
  entry or a dnf ``exclude`` for the driver);
- whether automatic upgrades may touch them (unattended-upgrades enabled by
  ``APT::Periodic::Unattended-Upgrade`` with the package installed and its timer not disabled,
  and no ``Package-Blacklist`` entry covering the driver; dnf-automatic installing updates);
- whether a reboot is pending (``/run/reboot-required``, a newer kernel under ``/lib/modules``
  than the one running, or NVIDIA packages newer than the loaded kernel module).

Every path is read under ``root`` (``/``) so tests point it at a fixture tree. Stdlib only, 3.8.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any

from ..schema import STACK_FIELDS
from .aptconf import read_apt_config

# Packages that make up the driver (kernel module, its userspace, the fabric manager that must
# match it). The container toolkit and CUDA toolkits are not the driver.
# AMD's out-of-tree driver and its firmware (amdgpu-dkms*), Habana's driver, firmware and
# thunk (habanalabs-*) are held the same way.
_DRIVER_PREFIXES = (
    "nvidia-|libnvidia-|libcuda1|cuda-drivers|linux-modules-nvidia-|linux-objects-nvidia-"
    "|linux-signatures-nvidia-|kmod-nvidia|xorg-x11-drv-nvidia|amdgpu-dkms|habanalabs-"
)
_DRIVER_PACKAGE = re.compile("^(?:%s)" % _DRIVER_PREFIXES)
# A literal prefix before the alternatives lets the regex engine skip ahead fast: a dpkg status
# file is megabytes, and a scan of every stanza in Python took 5 ms per 700 KB.
_DRIVER_STANZA = re.compile(rb"\nPackage: ((?:%s)\S*)\n" % _DRIVER_PREFIXES.encode())
_NOT_DRIVER = re.compile("^(?:nvidia-container|libnvidia-container|nvidia-docker|nvidia-cuda-)")
# The package whose version is the userspace driver's, most telling first.
_USERSPACE = ("libnvidia-compute-", "libcuda1", "nvidia-driver", "cuda-drivers")
_BLACKLIST_KEYS = ("Unattended-Upgrade::Package-Blacklist", "Unattended-Upgrade::Package-Blocklist")
MAX_LISTED = 20  # package names kept in a fact
_VERSION_PART = re.compile(r"(\d+|[^\d]+)")


def read_stack(
    root: str = "/", sys_dir: str = "/sys", running_kernel: str | None = None
) -> dict[str, Any]:
    """The ``stack`` fact (schema.STACK_FIELDS); ``running_kernel`` defaults to ``uname -r``."""
    kernel = running_kernel or os.uname().release
    stack: dict[str, Any] = dict.fromkeys(STACK_FIELDS)
    stack["driver_module_version"] = _module_version(sys_dir)
    stack["rocm_version"] = _read(_at(root, "opt/rocm/.info/version")).strip()[:64] or None
    if os.path.exists(_at(root, "var/lib/dpkg/status")):
        stack.update(_dpkg(root))
    elif os.path.isdir(_at(root, "var/lib/rpm")) or os.path.isdir(
        _at(root, "usr/lib/sysimage/rpm")
    ):
        stack.update(_rpm(root))
    newest = newest_kernel(_modules_dirs(root))
    stack["kernel_newest_installed"] = newest
    reasons = []
    flag = _first_existing(root, ("run/reboot-required", "var/run/reboot-required"))
    if flag is not None:
        pkgs = _lines(flag + ".pkgs")[:MAX_LISTED]
        reasons.append("reboot-required" + (" by " + ", ".join(pkgs) if pkgs else ""))
    if newest and _version_key(newest) > _version_key(kernel):
        reasons.append("kernel %s installed, %s running" % (newest, kernel))
    installed, loaded = stack.get("driver_package_version"), stack["driver_module_version"]
    if installed and loaded and installed != loaded:
        reasons.append("NVIDIA driver %s installed, kernel module %s loaded" % (installed, loaded))
    stack["reboot_reasons"] = reasons
    return stack


def dpkg_driver_packages(status: bytes) -> list[tuple[str, str, bool]]:
    """(name, version, held) of each installed driver package in a dpkg status file. Scans for
    ``Package:`` lines and parses only the driver's stanzas: the file is megabytes."""
    found = []
    status = b"\n" + status
    for match in _DRIVER_STANZA.finditer(status):
        name = match.group(1)
        if _NOT_DRIVER.match(name.decode("utf-8", "replace")):
            continue
        end = status.find(b"\n\n", match.end())
        stanza = status[match.end() : end if end >= 0 else len(status)]
        fields = dict(
            line.split(b": ", 1)
            for line in stanza.split(b"\n")
            if b": " in line and not line.startswith(b" ")
        )
        words = fields.get(b"Status", b"").split()
        if len(words) == 3 and words[2] == b"installed":
            version = fields.get(b"Version", b"").decode("utf-8", "replace")
            found.append((name.decode("utf-8", "replace"), version, words[0] == b"hold"))
    return found


def upstream_version(debian_version: str) -> str:
    """``1:535.183.01-0ubuntu0.22.04.1`` -> ``535.183.01``: the driver's own number."""
    version = debian_version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def newest_kernel(modules_dirs: list[str]) -> str | None:
    """The newest kernel release that has modules installed (a folder left behind by a removed
    kernel holds no ``modules.dep``)."""
    releases = []
    for base in modules_dirs:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        releases += [n for n in names if os.path.exists(os.path.join(base, n, "modules.dep"))]
    return max(releases, key=_version_key) if releases else None


def _dpkg(root: str) -> dict[str, Any]:
    with open(_at(root, "var/lib/dpkg/status"), "rb") as f:
        packages = dpkg_driver_packages(f.read())
    out: dict[str, Any] = {"package_manager": "dpkg"}
    if packages:
        names = [name for name, _, _ in packages]
        unheld = [name for name, _, held in packages if not held]
        out["driver_packages"] = names[:MAX_LISTED]
        out["driver_packages_unheld"] = unheld[:MAX_LISTED]
        out["driver_held"] = not unheld
        out["driver_package_version"] = _userspace_version(packages)
    config = read_apt_config(_at(root, "etc/apt"))
    out.update(_unattended(root, config, packages))
    return out


def _userspace_version(packages: list[tuple[str, str, bool]]) -> str | None:
    for prefix in _USERSPACE:
        for name, version, _ in packages:
            if name.startswith(prefix) and version:
                return upstream_version(version)
    return None


def _unattended(root: str, config: Any, packages: list[tuple[str, str, bool]]) -> dict[str, Any]:
    """Whether unattended-upgrades runs, and whether its blacklist keeps the driver out."""
    interval = config.get("APT::Periodic::Unattended-Upgrade")
    installed = os.path.exists(_at(root, "usr/bin/unattended-upgrade"))
    timer = _at(root, "etc/systemd/system/apt-daily-upgrade.timer")
    masked = os.path.realpath(timer) == "/dev/null" if os.path.islink(timer) else False
    wants = _at(root, "etc/systemd/system/timers.target.wants")
    disabled = os.path.isdir(wants) and not os.path.lexists(
        os.path.join(wants, "apt-daily-upgrade.timer")
    )
    on = installed and interval not in (None, "", "0") and not masked and not disabled
    blacklist = [entry for key in _BLACKLIST_KEYS for entry in config.items(key)]
    names = [name for name, _, _ in packages]
    skipped = bool(names) and all(_listed(name, blacklist) for name in names)
    return {
        "auto_upgrades": on,
        "auto_upgrades_skip_driver": skipped if names else None,
        "auto_upgrades_source": "APT::Periodic::Unattended-Upgrade %s" % (interval or "unset")
        + ("" if installed else ", unattended-upgrades not installed")
        + (", apt-daily-upgrade.timer disabled" if masked or disabled else ""),
    }


def _listed(name: str, patterns: list[str]) -> bool:
    """unattended-upgrades matches its blacklist with ``re.match`` (older ones with fnmatch)."""
    for pattern in patterns:
        try:
            if re.match(pattern, name):
                return True
        except re.error:
            if fnmatch.fnmatchcase(name, pattern):
                return True
    return False


def _rpm(root: str) -> dict[str, Any]:
    """RPM systems: the driver counts as held when a versionlock entry or a dnf ``exclude``
    names it; automatic upgrades are dnf-automatic's timer set to install updates."""
    locks = []
    for path in ("etc/dnf/plugins/versionlock.list", "etc/yum/pluginconf.d/versionlock.list"):
        locks += [line for line in _lines(_at(root, path)) if not line.startswith("#")]
    dnf = _ini(_at(root, "etc/dnf/dnf.conf"))
    excludes = " ".join(
        dnf.get("main", "exclude", fallback="").split(",")
        + [dnf.get("main", "excludepkgs", fallback="")]
    )
    held = any(_DRIVER_PACKAGE.match(_lock_name(line)) for line in locks) or any(
        _DRIVER_PACKAGE.match(word) for word in excludes.split()
    )
    automatic = _ini(_at(root, "etc/dnf/automatic.conf"))
    apply = automatic.get("commands", "apply_updates", fallback="no").strip().lower() in (
        "yes",
        "true",
        "1",
    )
    wants = _at(root, "etc/systemd/system/timers.target.wants")
    install_timer = os.path.lexists(os.path.join(wants, "dnf-automatic-install.timer"))
    plain_timer = os.path.lexists(os.path.join(wants, "dnf-automatic.timer"))
    return {
        "package_manager": "rpm",
        "driver_held": held,
        "auto_upgrades": install_timer or (plain_timer and apply),
        "auto_upgrades_source": "dnf-automatic"
        + (
            " (install timer)"
            if install_timer
            else " timer, apply_updates = %s" % ("yes" if apply else "no")
        ),
    }


def _lock_name(line: str) -> str:
    """``0:nvidia-driver-550.54.15-1.el9.*`` or ``nvidia-driver-3:550.54.15-1.el9.*`` -> the
    name part (what ``dnf versionlock list`` shows)."""
    entry = line.strip().split(":", 1)[-1] if re.match(r"^\d+:", line.strip()) else line.strip()
    return re.split(r"-\d", entry, maxsplit=1)[0]


def _module_version(sys_dir: str) -> str | None:
    """The loaded GPU kernel module's version (``modinfo``'s, as sysfs shows it): NVIDIA's,
    else AMD's out-of-tree amdgpu (the in-box one has none), else Habana's."""
    for module in ("nvidia", "amdgpu", "habanalabs"):
        version = _read(os.path.join(sys_dir, "module", module, "version")).strip()
        if version:
            return version
    return None


def _modules_dirs(root: str) -> list[str]:
    dirs = [_at(root, "lib/modules"), _at(root, "usr/lib/modules")]
    real = {os.path.realpath(d) for d in dirs if os.path.isdir(d)}
    return sorted(real)


def _version_key(release: str) -> tuple[Any, ...]:
    """Natural order of kernel releases: ``6.1.0-21-amd64`` > ``6.1.0-9-amd64``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _VERSION_PART.findall(release))


def _ini(path: str) -> Any:
    import configparser  # RPM systems only: not worth its import on the others

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        pass
    return parser


def _at(root: str, path: str) -> str:
    return os.path.join(root, path)


def _first_existing(root: str, paths: tuple[str, ...]) -> str | None:
    for path in paths:
        full = _at(root, path)
        if os.path.exists(full):
            return full
    return None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _lines(path: str) -> list[str]:
    return [line.strip() for line in _read(path).splitlines() if line.strip()]
