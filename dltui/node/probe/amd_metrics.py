"""AMD's binary ``gpu_metrics`` file (sysfs, beside ``gpu_busy_percent``): the throttle status
the driver's text files do not carry.

A versioned C struct (``struct gpu_metrics_v1_x`` in the kernel's
drivers/gpu/drm/amd/include/kgd_pp_interface.h, MIT) behind a common header: ``uint16
structure_size, uint8 format_revision, uint8 content_revision``. Only the revisions whose layout
was checked against that header (linux 6.2) are read; any other is n/a, never a guess. The
offsets follow from C's natural alignment of the fields before ``throttle_status``:

- v1.1-v1.3 (MI100/MI200 class): header, 6 u16 temperatures, 3 u16 activities, u16 power,
  u64 energy, u64 timestamp, 7+7 u16 clocks -> ``uint32 throttle_status`` at byte 68
- v1.4 (MI300): header, 3 u16 temperatures, u16 power, 2 u16 activities, u16 vcn[4], u64
  energy, u64 timestamp -> byte 40
- v1.5 (MI300): as v1.4 with u16 jpeg[32] after vcn -> byte 104

``throttle_status`` is an ASIC-dependent bit mask: any bit set means the SMU is holding clocks
back (the value amd-smi prints as its throttle status); all ones is the driver's "not
reported".
"""

from __future__ import annotations

import struct

THROTTLE_STATUS_AT = {(1, 1): 68, (1, 2): 68, (1, 3): 68, (1, 4): 40, (1, 5): 104}
_HEADER = struct.Struct("<HBB")
_U32 = struct.Struct("<I")
NOT_REPORTED = 0xFFFFFFFF


def throttle_status(raw: bytes | None) -> int | None:
    """The ``throttle_status`` mask of a gpu_metrics blob, or None (unknown revision, short)."""
    if raw is None or len(raw) < _HEADER.size:
        return None
    size, major, minor = _HEADER.unpack_from(raw, 0)
    at = THROTTLE_STATUS_AT.get((major, minor))
    if at is None or min(size, len(raw)) < at + _U32.size:
        return None
    status: int = _U32.unpack_from(raw, at)[0]
    return None if status == NOT_REPORTED else status


def throttled(raw: bytes | None) -> bool | None:
    status = throttle_status(raw)
    return None if status is None else status != 0
