"""A node's sysfs for the tests: a real capture (``tests/fixtures/sysfs/*.ttar``) unpacked into a
directory the probe reads as its ``[probe] sysfs``, and small edits to make degraded variants
(a port down, a slower rate, a counter that rose), each named by the test that makes it.

``ttar`` is the text archive prometheus/procfs and node_exporter keep their fixtures in:
``Directory: P`` / ``Path: P`` + ``Lines: N`` + N lines / ``SymlinkTo: T``, each entry followed
by ``Mode:`` and a ``# ttar - - -`` separator; a last line ending in ``EOF`` has no newline.
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sysfs"
PROCFS = FIXTURES / "procfs_class-infiniband.ttar"
NODE_EXPORTER = FIXTURES / "node-exporter_class-infiniband.ttar"


def unpack(archive: Path, root: Path) -> Path:
    """Unpack ``archive`` under ``root`` as a sysfs root (the archive's ``…sys/`` prefix is
    dropped); returns ``root``. Several archives can share one root."""
    lines = archive.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("Directory: "):
            (root / _inside(line[11:])).mkdir(parents=True, exist_ok=True)
        elif line.startswith("Path: "):
            target = root / _inside(line[6:])
            count = int(lines[i].split(": ", 1)[1])
            body = lines[i + 1 : i + 1 + count]
            i += 1 + count
            text = "\n".join(body) + "\n"
            if text.endswith("EOF\n"):
                text = text[:-4]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        elif line.startswith("SymlinkTo: "):
            raise ValueError(f"{archive.name}: symlinks are not used by the infiniband trees")
    return root


def _inside(path: str) -> str:
    """``fixtures/sys/class/infiniband`` -> ``class/infiniband``."""
    head, sep, rest = path.partition("sys/")
    if not sep:
        raise ValueError(f"not a sysfs path: {path}")
    return rest


def port(root: Path, device: str, number: int = 1) -> Path:
    return root / "class" / "infiniband" / device / "ports" / str(number)


def write(path: Path, value: str | int) -> None:
    """Set one attribute as the kernel shows it (one line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{value}\n", encoding="utf-8")


def take_down(root: Path, device: str, number: int = 1) -> None:
    """The port as a pulled cable leaves it: DOWN, the PHY polling for a peer."""
    write(port(root, device, number) / "state", "1: DOWN")
    write(port(root, device, number) / "phys_state", "2: Polling")


def add_to_counter(root: Path, device: str, name: str, rise: int, number: int = 1) -> None:
    path = port(root, device, number) / "counters" / name
    write(path, int(path.read_text().split()[0]) + rise)


def copy_device(root: Path, source: str, name: str) -> Path:
    """A sibling HCA made from a captured one (the captures hold one or two HCAs; a node with
    eight is built from them, said so by each test that does it)."""
    import shutil

    src = root / "class" / "infiniband" / source
    dst = root / "class" / "infiniband" / name
    shutil.copytree(src, dst)
    return dst


def eight_hcas(root: Path, rate: str = "100 Gb/sec (4X EDR)") -> Path:
    """A GPU node's eight one-port HCAs under ``root``, built from procfs's captured ``mlx5_0``
    (copied as mlx5_1..mlx5_7; the capture's other HCAs left out), each port at ``rate`` and
    LinkUp (the capture's port reads 25 Gb/s 1X EDR and "4: ACTIVE" as its physical state)."""
    import shutil

    unpack(PROCFS, root)
    for name in ("hfi1_0", "mlx4_0"):
        shutil.rmtree(root / "class" / "infiniband" / name)
    for i in range(1, 8):
        copy_device(root, "mlx5_0", f"mlx5_{i}")
    for i in range(8):
        write(port(root, f"mlx5_{i}") / "rate", rate)
        write(port(root, f"mlx5_{i}") / "phys_state", "5: LinkUp")
    return root


# -- amdgpu cards ------------------------------------------------------------------------------

# One MI250 GCD's readings as ``rocm-smi -a --json`` reported them (tests/fixtures/amd/
# rocm-smi-showallinfo-mi250-rocm6.json: edge 43, junction 44, memory 53 °C, 91 W of 560,
# GPU use 0 %, sclk 800 of 500-1700 MHz, mclk 1600, PCIe replay count 3824, bus 0000:29:00.0,
# VBIOS 113-D65209-073), written as the amdgpu driver's files show them. No sysfs capture of an
# AMD GPU exists under a permissive licence: the layout follows the kernel's amdgpu
# documentation (Documentation/gpu/amdgpu/driver-misc.rst, thermal.rst), the values the capture.
MI250_FILES = {
    "vendor": "0x1002",
    "device": "0x740c",
    "gpu_busy_percent": "0",
    "mem_busy_percent": "0",
    "mem_info_vram_total": str(64 << 30),
    "mem_info_vram_used": str(10 << 20),
    "current_link_speed": "16.0 GT/s PCIe",
    "current_link_width": "16",
    "max_link_speed": "16.0 GT/s PCIe",
    "max_link_width": "16",
    "pcie_replay_count": "3824",
    "pp_dpm_sclk": "0: 500Mhz\n1: 800Mhz *\n2: 1700Mhz",
    "pp_dpm_mclk": "0: 400Mhz\n1: 700Mhz\n2: 1200Mhz\n3: 1600Mhz *",
    "vbios_version": "113-D65209-073",
    "serial_number": "PCB052715-0006",
    "unique_id": "1f9de0957d137942",
    "product_name": "AMD INSTINCT MI250 (MCM) OAM AC MBA",
    "ras/umc_err_count": "ue: 0\nce: 0",
    "ras/xgmi_wafl_err_count": "ue: 0\nce: 0",
    "hwmon/hwmon{n}/temp1_label": "edge",
    "hwmon/hwmon{n}/temp1_input": "43000",
    "hwmon/hwmon{n}/temp1_crit": "100000",
    "hwmon/hwmon{n}/temp1_emergency": "105000",
    "hwmon/hwmon{n}/temp2_label": "junction",
    "hwmon/hwmon{n}/temp2_input": "44000",
    "hwmon/hwmon{n}/temp2_crit": "110000",
    "hwmon/hwmon{n}/temp2_emergency": "115000",
    "hwmon/hwmon{n}/temp3_label": "mem",
    "hwmon/hwmon{n}/temp3_input": "53000",
    "hwmon/hwmon{n}/temp3_crit": "95000",
    "hwmon/hwmon{n}/temp3_emergency": "105000",
    "hwmon/hwmon{n}/power1_average": "91000000",
    "hwmon/hwmon{n}/power1_cap": "560000000",
    "hwmon/hwmon{n}/power1_cap_max": "560000000",
}


def amd_cards(root: Path, count: int = 2) -> Path:
    """``count`` amdgpu cards under ``root``/class/drm (card0..), each its own PCI device
    (bus 0000:29+i:00.0) holding MI250_FILES, with a display connector beside card0 as real
    trees have; returns ``root``."""
    for i in range(count):
        device = root / "devices" / "pci0000:00" / f"0000:{0x29 + i:02x}:00.0"
        for name, value in MI250_FILES.items():
            write(device / name.format(n=2 + i), value)
        card = root / "class" / "drm" / f"card{i}"
        card.mkdir(parents=True, exist_ok=True)
        (card / "device").symlink_to(device)
    (root / "class" / "drm" / "card0-DP-1").mkdir(parents=True, exist_ok=True)
    return root


def amd_file(root: Path, card: int, name: str) -> Path:
    """One of card ``card``'s files (``name`` as in MI250_FILES, hwmon's number filled in)."""
    return root / "class" / "drm" / f"card{card}" / "device" / name.format(n=2 + card)
