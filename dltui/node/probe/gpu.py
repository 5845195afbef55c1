"""Which GPU source a node has (the records' shapes are in ``gpu_records``).

Preference: NVML (through the ``pynvml`` shipped with the probe), then one long-lived
``nvidia-smi`` loop, then nothing. A node without an NVIDIA driver is a fact, not an error.
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
