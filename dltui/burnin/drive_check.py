"""The burn-in's drive check: SMART counters before and after the load (node/burnin/drives.py).

A drive that reports itself failing (SMART overall-health, an NVMe critical warning other than
low spare) at either end, or whose media errors, reallocated or offline-uncorrectable sectors
rose during the run, fails the node; pending sectors rising (they may yet be rewritten fine), or
a drive that could not be read again at the end, warn. A drive with a new serial at the end was
swapped: it is not compared.
"""

from __future__ import annotations

from typing import Any

from dltui.config import BurninSection

from .items import FAIL, NOT_RUN, PASS, WARN, Item, NodeRun

_FAILING_RISES = (
    ("media_errors_total", "media errors"),
    ("reallocated_sectors_total", "reallocated sectors"),
    ("offline_uncorrectable_sectors", "offline uncorrectable sectors"),
)
_WARNING_RISES = (("pending_sectors", "pending sectors"),)
_REPLACE = "back up what the drive holds and replace it (the serial is what the RMA needs)"


def judge(run: NodeRun, cfg: BurninSection) -> Item:
    drives = run.result.get("drives") or {}
    if drives.get("tool") is None:
        return Item(
            "drives",
            NOT_RUN,
            drives.get("reason") or "SMART was not read",
            "install smartmontools 7+ on the node; as a non-root account, add the "
            "sudoers line the run's log gives",
        )
    before, after = drives.get("before") or {}, drives.get("after")
    if after is None:
        return Item(
            "drives",
            NOT_RUN,
            drives.get("reason") or "SMART was not read after the run",
            "read the node's SMART by hand: smartctl -a DEV",
        )
    if not after and not before:
        return Item("drives", NOT_RUN, "smartctl found no drive it can read on the node", "")
    failing, risen, warned = [], [], []
    for device, a in sorted(after.items()):
        b = before.get(device)
        name = _name(a)
        for end, d in (("before the run", b), ("after the run", a)):
            why = _failing(d)
            if why:
                failing.append(f"{name}: {why} {end}")
                break
        if b is None or b.get("serial") != a.get("serial"):
            continue  # a drive added or swapped during the run: nothing to compare with
        if a.get("error"):
            warned.append(f"{name}: not read after the run ({a['error']})")
            continue
        risen += _rises(name, b, a, _FAILING_RISES)
        warned += _rises(name, b, a, _WARNING_RISES)
    if failing or risen:
        return Item("drives", FAIL, "; ".join(failing + risen + warned), _REPLACE)
    if warned:
        return Item(
            "drives",
            WARN,
            "; ".join(warned),
            "run a long self-test (smartctl -t long DEV) and read its result; replace "
            "the drive if the count keeps rising",
        )
    return Item(
        "drives",
        PASS,
        f"{len(after)} drive{'s' if len(after) != 1 else ''}: SMART "
        "passing, no media error or bad sector added during the run",
    )


def _name(d: dict[str, Any]) -> str:
    details = ", ".join(
        x for x in (d.get("model"), f"S/N {d['serial']}" if d.get("serial") else None) if x
    )
    return f"{d['device']} ({details})" if details else d["device"]


def _failing(d: dict[str, Any] | None) -> str:
    if d is None:
        return ""
    bits = [b for b in d.get("critical_warnings") or () if b != "spare_below_threshold"]
    if bits:
        return "NVMe critical warning " + ", ".join(bits)
    if d.get("smart_passed") is False and (d.get("critical_warnings") or []) != [
        "spare_below_threshold"
    ]:
        return "SMART overall-health FAILED"
    return ""


def _rises(
    name: str, b: dict[str, Any], a: dict[str, Any], fields: tuple[tuple[str, str], ...]
) -> list[str]:
    grew = [
        f"{words} {b[k]} → {a[k]}"
        for k, words in fields
        if a.get(k) is not None and b.get(k) is not None and a[k] > b[k]
    ]
    return [f"{name}: {', '.join(grew)} during the run"] if grew else []
