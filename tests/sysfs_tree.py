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
