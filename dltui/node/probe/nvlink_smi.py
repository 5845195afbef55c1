"""NVLink from ``nvidia-smi nvlink -s`` (link state and speed) and ``-e`` (error counters): the
fallback where NVML cannot be loaded.

``-s`` prints, per GPU, ``GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-…)`` then one line per link:
``Link 0: 25 GB/s`` or ``Link 3: <inactive>``; a GPU whose links are all down gets ``NVML: Unable
to retrieve NVLink information as all links are inactive`` instead; a GPU without NVLink gets
no link line at all. ``-e`` prints ``Link 0: Replay Errors: 0`` / ``Recovery Errors`` / ``CRC
Errors`` per link (drivers before R450: ``CRC Flit Errors`` and ``CRC Data Errors``; NVLink 5
adds more kinds, not read here).

Both run in a thread every ``REFRESH_S``, never in the sample loop: each start of nvidia-smi
costs tens of milliseconds (seconds with persistence mode off), and an NVLink failure is also
an XID 74 in the kernel log, which the probe reads as it happens. A node whose first ``-s``
shows no NVLink is not asked again.
"""

from __future__ import annotations

import re
import threading
from typing import Any

REFRESH_S = 30.0
TIMEOUT_S = 30.0
# The first poll waits this long: the probe's own start (its hello, the GPU facts' nvidia-smi
# runs) comes first, as for the kernel log, so a fleet starting together is on screen sooner.
FIRST_POLL_DELAY_S = 3.0
ALL_INACTIVE = "all links are inactive"

_GPU = re.compile(r"^GPU (\d+):")
_LINK = re.compile(r"^\s*Link (\d+):\s*(.*?)\s*$")
_SPEED = re.compile(r"^([\d.]+)\s*([GM])B/s$")
_COUNTER = re.compile(r"^([A-Za-z][A-Za-z ]*?) Errors:\s*(\d+)\s*$")


def parse_status(text: str) -> dict[int, dict[str, Any]]:
    """``-s`` -> {GPU index: {"links_up": [...], "link_speeds_gbytes_per_s": [...],
    "links_total": n or None}}; GPUs without a link line (no NVLink) are left out."""
    out: dict[int, dict[str, Any]] = {}
    gpu: int | None = None
    links: dict[int, float | None] = {}

    def close() -> None:
        if gpu is not None and links:
            ordered = [links.get(i) for i in range(max(links) + 1)]
            out[gpu] = {
                "links_up": [speed is not None for speed in ordered],
                "link_speeds_gbytes_per_s": [speed if speed else None for speed in ordered],
                "links_total": len(ordered),
            }

    for line in text.splitlines():
        header = _GPU.match(line)
        if header:
            close()
            gpu, links = int(header.group(1)), {}
            continue
        if gpu is None:
            continue
        if ALL_INACTIVE in line:
            out[gpu] = {"links_up": [], "link_speeds_gbytes_per_s": [], "links_total": None}
            gpu = None
            continue
        link = _LINK.match(line)
        if link:
            links[int(link.group(1))] = _speed(link.group(2))
    close()
    return out


def _speed(value: str) -> float | None:
    """``25 GB/s`` -> 25.0; ``26.562 GB/s`` -> 26.562; ``<inactive>`` -> None (down); an unknown
    shape counts as up with its speed unknown (0.0, shown as n/a)."""
    if "inactive" in value:
        return None
    m = _SPEED.match(value)
    if not m:
        return 0.0
    number = float(m.group(1))
    return number if m.group(2) == "G" else number / 1000.0


def parse_errors(text: str) -> dict[int, dict[str, int]]:
    """``-e`` -> {GPU index: {"replay_errors_total", "recovery_errors_total",
    "crc_errors_total"}}, each summed over the GPU's links."""
    out: dict[int, dict[str, int]] = {}
    totals: dict[str, int] | None = None
    for line in text.splitlines():
        header = _GPU.match(line)
        if header:
            totals = out.setdefault(int(header.group(1)), {})
            continue
        link = _LINK.match(line)
        if totals is None or not link:
            continue
        counter = _COUNTER.match(link.group(2))
        if not counter:
            continue
        kind = counter.group(1).lower()
        field = "crc_errors_total" if kind.startswith("crc") else "%s_errors_total" % kind
        if field in ("crc_errors_total", "replay_errors_total", "recovery_errors_total"):
            totals[field] = totals.get(field, 0) + int(counter.group(2))
    return {gpu: t for gpu, t in out.items() if t}


def records(
    status: dict[int, dict[str, Any]], errors: dict[int, dict[str, int]]
) -> list[dict[str, Any]]:
    """One ``nvlink`` record per GPU that has links (see schema.NVLINK_FIELDS)."""
    out = []
    for gpu in sorted(status):
        links = status[gpu]
        out.append(
            dict(
                links,
                gpu=gpu,
                links_active=sum(1 for up in links["links_up"] if up),
                crc_errors_total=errors.get(gpu, {}).get("crc_errors_total"),
                replay_errors_total=errors.get(gpu, {}).get("replay_errors_total"),
                recovery_errors_total=errors.get(gpu, {}).get("recovery_errors_total"),
                error=None,
            )
        )
    return out


class SmiNvlink:
    """``nvidia-smi nvlink -s`` and ``-e`` every REFRESH_S in a thread; ``sample`` returns the
    latest records at once."""

    def __init__(
        self,
        binary: str,
        problems: Any,
        refresh_s: float = REFRESH_S,
        first_delay_s: float = FIRST_POLL_DELAY_S,
    ) -> None:
        self.binary = binary
        self.problems = problems
        self.refresh_s = refresh_s
        self.first_delay_s = first_delay_s
        self.latest: list[dict[str, Any]] = []
        self.has_nvlink: bool | None = None  # None until the first answer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvidia-smi-nvlink", daemon=True)
        self._thread.start()

    def sample(self) -> list[dict[str, Any]]:
        return self.latest

    def _run(self) -> None:
        from .smi import describe_failure, run_smi

        if self._stop.wait(self.first_delay_s):
            return
        while not self._stop.is_set():
            code, status_text = run_smi([self.binary, "nvlink", "-s"], TIMEOUT_S)
            # parsed whatever the exit status: some drivers exit non-zero for "all inactive"
            status = parse_status(status_text)
            if not status:
                if not self.has_nvlink:
                    self.has_nvlink = False  # PCIe-only GPUs (or no answer at first): done
                    return
                self.problems.report("nvlink", describe_failure(code, status_text))
            else:
                self.problems.clear("nvlink")
                self.has_nvlink = True
                code, errors_text = run_smi([self.binary, "nvlink", "-e"], TIMEOUT_S)
                self.latest = records(status, parse_errors(errors_text) if code == 0 else {})
            self._stop.wait(self.refresh_s)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
