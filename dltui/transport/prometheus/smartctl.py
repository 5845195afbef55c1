"""smartctl_exporter's ``smartctl_*`` series mapped onto the probe's drive records.

One query, asked with the GPUs' facts (the first refresh and every ``FACTS_EVERY_S``):
smartctl_exporter itself re-reads the drives once a minute by default, and SMART counters move
over days. Series are grouped by only the labels read here. Drives are keyed by the host part
of their ``instance`` and smartctl_exporter's ``device`` label (``nvme0``, ``sda``,
``bus_0_megaraid_1``); ``mapping.Fleet`` places each host's drives on its node.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dltui.core.models import DriveSample
from dltui.node.schema import decode_critical_warning

QUERY = "smartctl"
# smartctl_exporter gauge -> DriveSample field
_FIELDS = {
    "smartctl_device_smart_status": "smart_passed",
    "smartctl_device_critical_warning": "critical_warning_mask",
    "smartctl_device_available_spare": "available_spare_percent",
    "smartctl_device_available_spare_threshold": "available_spare_threshold_percent",
    "smartctl_device_percentage_used": "endurance_used_percent",
    "smartctl_device_media_errors": "media_errors_total",
    "smartctl_device_num_err_log_entries": "error_log_entries_total",
    "smartctl_device_temperature": "temperature_c",  # temperature_type="current" only
    "smartctl_device_power_on_seconds": "power_on_hours",
    "smartctl_device_capacity_bytes": "capacity_bytes",
    "smartctl_scsi_grown_defect_list": "reallocated_sectors_total",
}
# smartctl_device_attribute{attribute_value_type="raw"} by ATA attribute id
_ATTRIBUTES = {
    "5": "reallocated_sectors_total",
    "197": "pending_sectors",
    "198": "offline_uncorrectable_sectors",
    "199": "udma_crc_errors_total",
}
_SAS_UNCORRECTED = (
    "smartctl_read_total_uncorrected_errors",
    "smartctl_write_total_uncorrected_errors",
)
_INFO = "smartctl_device"
_LABELS = "__name__, instance, device, temperature_type, attribute_id, model_name, serial_number, interface, protocol"


def query(matchers: str) -> str:
    """The PromQL for every drive series dltui maps (``matchers``: ``--match``'s, or "")."""
    extra = f",{matchers}" if matchers else ""
    names = "|".join(sorted([*_FIELDS, *_SAS_UNCORRECTED, _INFO]))
    attrs = "|".join(_ATTRIBUTES)
    return (
        f'max by ({_LABELS}) ({{__name__=~"{names}"{extra}}} or '
        f'smartctl_device_attribute{{attribute_value_type="raw",attribute_id=~"{attrs}"{extra}}})'
    )


def drives_by_host(answer: dict[str, Any], host_of: Any) -> dict[str, list[DriveSample]]:
    """The answer's drives by host (``host_of(instance)``), each as one ``DriveSample``."""
    found: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for s in answer["result"]:
        m = s["metric"]
        name, device = m.get("__name__", ""), m.get("device")
        if not device:
            continue
        d = found[(host_of(m.get("instance", "")), device)]
        x = float(s["value"][1])
        if x != x:
            continue  # NaN: no value
        d.setdefault("read_time", float(s["value"][0]))
        if name == _INFO:
            d.update(  # label values are anyone's words: printable characters only
                model=printable(m.get("model_name")),
                serial=printable(m.get("serial_number")),
                type=printable(m.get("interface")),
                protocol=printable(m.get("protocol")),
            )
        elif name == "smartctl_device_attribute":
            field = _ATTRIBUTES.get(m.get("attribute_id", ""))
            # the query asks for raw values only (and drops the label): normalised ones aside
            if field is not None and m.get("attribute_value_type", "raw") == "raw":
                d[field] = int(x)
        elif name in _SAS_UNCORRECTED:
            d["media_errors_total"] = d.get("media_errors_total", 0) + int(x)
        elif name == "smartctl_device_temperature":
            if m.get("temperature_type", "current") == "current":
                d["temperature_c"] = int(x)
        elif name in _FIELDS:
            d[_FIELDS[name]] = x
    out: dict[str, list[DriveSample]] = defaultdict(list)
    for (host, device), d in sorted(found.items()):
        out[host].append(_drive(printable(device) or "?", d))
    return dict(out)


_NVME_ONLY = (
    "critical_warning_mask",
    "available_spare_percent",
    "available_spare_threshold_percent",
    "endurance_used_percent",
    "error_log_entries_total",
)


def _drive(device: str, d: dict[str, Any]) -> DriveSample:
    if d.get("protocol") not in (None, "NVMe"):
        # older smartctl_exporters write 0 for the NVMe gauges of SATA/SAS drives: not reported
        for name in _NVME_ONLY:
            d.pop(name, None)
        if d.get("protocol") == "ATA":
            d.pop("media_errors_total", None)
    mask = _int(d.get("critical_warning_mask"))
    passed = d.get("smart_passed")
    hours = d.get("power_on_hours")
    return DriveSample(
        device=device,
        type=d.get("type"),
        protocol=d.get("protocol"),
        model=d.get("model"),
        serial=d.get("serial"),
        capacity_bytes=_int(d.get("capacity_bytes")),
        smart_passed=None if passed is None else passed == 1,
        critical_warning_mask=mask,
        critical_warnings=decode_critical_warning(mask),
        available_spare_percent=_int(d.get("available_spare_percent")),
        available_spare_threshold_percent=_int(d.get("available_spare_threshold_percent")),
        endurance_used_percent=_int(d.get("endurance_used_percent")),
        media_errors_total=_int(d.get("media_errors_total")),
        error_log_entries_total=_int(d.get("error_log_entries_total")),
        reallocated_sectors_total=_int(d.get("reallocated_sectors_total")),
        pending_sectors=_int(d.get("pending_sectors")),
        offline_uncorrectable_sectors=_int(d.get("offline_uncorrectable_sectors")),
        udma_crc_errors_total=_int(d.get("udma_crc_errors_total")),
        temperature_c=_int(d.get("temperature_c")),
        power_on_hours=None if hours is None else int(hours // 3600),
        read_time=d.get("read_time"),
    )


def printable(value: Any) -> str | None:
    """A label value (the client cleaned it already), cut short: a drive's words, not a page."""
    if value is None:
        return None
    return str(value)[:80] or None


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
