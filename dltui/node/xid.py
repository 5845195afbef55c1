"""NVIDIA XID error codes: what each means, how bad it is, what the operator should do.

Part of the contract both ends read (beside ``schema`` and ``wire``): the probe names an XID
in the events it sends from either source on the node (the kernel log, NVML events), and the
anomaly engine rates its ``xid`` alert from the same table. Severities and actions follow
NVIDIA's XID catalog and NVSentinel's mapping; codes not listed are warnings to look up.
"""

from __future__ import annotations

from collections import namedtuple

XidInfo = namedtuple("XidInfo", "meaning severity action")

_APP = "check the job; in a burn-in this is a failure"
_RESET = "reset the GPU; if that fails, reboot the node"
_NVLINK = "check both ends of the NVLink (the fault may be the peer), then reset"

TABLE = {
    8: XidInfo("GPU stopped processing", "warning", "restart the job"),
    13: XidInfo("graphics engine exception", "info", _APP),
    31: XidInfo("GPU memory page fault (MMU fault)", "info", _APP),
    43: XidInfo("GPU stopped processing a channel", "info", _APP),
    45: XidInfo(
        "preemptive cleanup after a kill or an earlier error", "info", "read the XID before it"
    ),
    46: XidInfo("GPU stopped processing (timeout)", "critical", _RESET),
    48: XidInfo(
        "double-bit ECC error", "critical", "drain the node, reset the GPU, run diagnostics"
    ),
    62: XidInfo("internal micro-controller halt", "critical", _RESET),
    63: XidInfo(
        "ECC page retirement or row remap recorded", "warning", "schedule a GPU reset to apply it"
    ),
    64: XidInfo(
        "ECC page retirement or row remap failed", "critical", "reset the GPU; RMA if it recurs"
    ),
    74: XidInfo("NVLink error", "critical", _NVLINK),
    79: XidInfo(
        "GPU has fallen off the bus",
        "critical",
        "power-cycle the node; check riser, seating and PSU",
    ),
    92: XidInfo(
        "high single-bit ECC error rate", "warning", "watch the trend and plan diagnostics"
    ),
    94: XidInfo(
        "contained uncorrectable ECC error (one application killed)",
        "warning",
        "restart the application and watch row remaps",
    ),
    95: XidInfo(
        "uncontained uncorrectable ECC error", "critical", "reset the GPU and drain the node"
    ),
    109: XidInfo("context switch timeout", "critical", _RESET),
    119: XidInfo("GSP RPC timeout", "critical", _RESET),
    120: XidInfo("GSP error", "critical", _RESET),
    140: XidInfo("unrecovered ECC error (ECC escape)", "critical", _RESET),
    143: XidInfo("GPU initialization failure", "critical", _RESET),
    154: XidInfo(
        "GPU recovery action changed",
        "warning",
        "follow the GPU's recovery action (nvidia-smi -q: GPU Recovery Action)",
    ),
}
for _code in range(144, 151):
    TABLE[_code] = XidInfo("NVLink error", "critical", _NVLINK)

UNKNOWN = XidInfo("unlisted XID", "warning", "look it up in NVIDIA's XID catalog")


def describe(xid: int) -> XidInfo:
    """The table entry for ``xid`` (an int); unlisted codes get a warning to look them up."""
    return TABLE.get(xid, UNKNOWN)
