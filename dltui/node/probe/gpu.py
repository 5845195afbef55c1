"""Which GPU sources a node has (the records' shapes are in ``gpu_records``).

NVIDIA: NVML (through the ``pynvml`` shipped with the probe), then one long-lived
``nvidia-smi`` loop, then nothing. A node without an NVIDIA driver is a fact, not an error.
Other vendors (``open_accelerators``): AMD (``amd.py``, its own order of sources) and Intel
Gaudi (``gaudi.py``); a node with several vendors' cards reports every one.
"""

from __future__ import annotations

import os

from .gpu_records import GpuSource, nvml_library_loads
from .problems import Problems

NO_DRIVER = "no NVIDIA driver found"


def which(name: str) -> str | None:
    """``shutil.which`` for a plain name, without importing shutil (and the archive modules it
    pulls in) into every probe's start."""
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def open_gpu(problems: Problems, interval_s: float) -> tuple[GpuSource | None, str | None, str | None]:
    """-> (collector or None, source, note). ``source`` is "nvml", "nvidia-smi" or None.

    Collectors are imported here, not at the top: a node uses one of them or none.
    """
    unavailable, no_driver = "NVML Shared Library Not Found", True
    if nvml_library_loads():
        from .nvml import NvmlCollector, NvmlUnavailable

        try:
            return NvmlCollector(problems, interval_s), "nvml", None
        except NvmlUnavailable as exc:
            unavailable, no_driver = str(exc), exc.no_driver
    binary = which("nvidia-smi")
    if binary is not None:
        from .smi import SmiCollector

        note = "NVML not usable (%s): reading nvidia-smi instead" % unavailable
        return SmiCollector(problems, interval_s, binary), "nvidia-smi", note
    if no_driver:
        return None, None, NO_DRIVER
    reason = "NVML: %s" % unavailable
    problems.report("gpu", reason)
    return None, None, reason


def open_accelerators(
    problems: Problems, interval_s: float, sys_dir: str, proc: str = "/proc"
) -> list[tuple[str, GpuSource]]:
    """-> [(source name, collector)] for the non-NVIDIA accelerators this node has, each
    source decided here, once per connection. Imported only when their tool or files exist."""
    found: list[tuple[str, GpuSource]] = []
    # ROCm's folder, where the AMD SMI library would be (amd_library.rocm_root's order)
    rocm = os.path.isdir(os.environ.get("ROCM_HOME") or os.environ.get("ROCM_PATH") or "/opt/rocm")
    if amd_present(sys_dir) or rocm or which("amd-smi") or which("rocm-smi"):
        from .amd import open_amd  # six modules: ~5 ms of every cold start, so AMD nodes only

        amd = open_amd(problems, interval_s, sys_dir, which, proc)
        if amd is not None:
            found.append((amd.source, amd))
    binary = which("hl-smi")
    if binary is not None:
        from .gaudi import GaudiCollector

        found.append(("hl-smi", GaudiCollector(problems, interval_s, binary)))
    return found


AMD_PCI_VENDOR = "0x1002"  # amd_json.AMD_PCI_VENDOR, not imported from there: that is the import saved


def amd_present(sys_dir: str) -> bool:
    """Whether a DRM card of AMD's PCI vendor is under ``sys_dir`` (``amd_sysfs.find_cards``
    then decides which are amdgpu compute cards): one listing and a read per card."""
    drm = os.path.join(sys_dir, "class", "drm")
    try:
        names = os.listdir(drm)
    except OSError:
        return False
    for name in names:
        if not name.startswith("card") or not name[4:].isdigit():
            continue
        try:
            with open(os.path.join(drm, name, "device", "vendor")) as f:
                if f.read().strip() == AMD_PCI_VENDOR:
                    return True
        except OSError:
            continue
    return False
