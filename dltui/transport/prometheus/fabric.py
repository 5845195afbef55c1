"""The fabric from Prometheus: node_exporter's ``node_infiniband_*`` series as HCA ports and
dcgm-exporter's NVLink error counters as each GPU's NVLink record, on the probe's own models.

node_exporter exports no link layer and no netdev (None here); dcgm-exporter exports no link
state (its ``DCGM_FI_DEV_NVLINK_*`` fields are counters), so from Prometheus a GPU's NVLink has
its error counters only, and only where the site enabled those fields: the link-down rule has
nothing to judge there (n/a), the error rule does.
"""

from __future__ import annotations

from typing import Any

from dltui.core.models import IbPortSample, NvlinkSample

# node_exporter's InfiniBand gauges and counters read as gauges (the rules take the rises).
IB_GAUGES = (
    "node_infiniband_info",
    "node_infiniband_state_id",
    "node_infiniband_physical_state_id",
    "node_infiniband_rate_bytes_per_second",
    "node_infiniband_symbol_error_total",
    "node_infiniband_link_downed_total",
    "node_infiniband_link_error_recovery_total",
    "node_infiniband_port_errors_received_total",
    "node_infiniband_port_discards_transmitted_total",
    "node_infiniband_excessive_buffer_overrun_errors_total",
    "node_infiniband_local_link_integrity_errors_total",
)
IB_LABELS = "port, hca_type"  # beside the host query's device label
# (dltui tag, counter of 4-byte words already multiplied to bytes by node_exporter)
IB_RATES = (
    ("ib_rx", "node_infiniband_port_data_received_bytes_total"),
    ("ib_tx", "node_infiniband_port_data_transmitted_bytes_total"),
)
# As node_exporter documents the ids (infiniband_linux.go).
STATES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
_COUNTERS = {
    "node_infiniband_symbol_error_total": "symbol_errors_total",
    "node_infiniband_link_downed_total": "link_downed_total",
    "node_infiniband_link_error_recovery_total": "link_error_recovery_total",
    "node_infiniband_port_errors_received_total": "rcv_errors_total",
    "node_infiniband_port_discards_transmitted_total": "xmit_discards_total",
    "node_infiniband_excessive_buffer_overrun_errors_total": "excessive_buffer_overrun_errors_total",
    "node_infiniband_local_link_integrity_errors_total": "local_link_integrity_errors_total",
}
# dcgm-exporter field (after DCGM_FI_DEV_) -> what it adds to
NVLINK_FIELDS = {
    "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "crc_errors_total",
    "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "crc_errors_total",
    "NVLINK_REPLAY_ERROR_COUNT_TOTAL": "replay_errors_total",
    "NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "recovery_errors_total",
}

Ports = dict[tuple[str, str], dict[str, Any]]  # (device, port) -> readings


def add_gauge(
    ports: Ports,
    hca_types: dict[str, str],
    metric: str,
    labels: dict[str, str],
    value: float | None,
) -> None:
    """One ``node_infiniband_*`` series of the host query's answer."""
    device = labels.get("device")
    if not device:
        return
    if metric == "node_infiniband_info":
        if labels.get("hca_type"):
            hca_types[device] = labels["hca_type"]
        return
    port = labels.get("port")
    if port is not None and value is not None:
        ports.setdefault((device, port), {})[metric] = value


def add_rate(ports: Ports, tag: str, labels: dict[str, str], value: float) -> None:
    device, port = labels.get("device"), labels.get("port")
    if device and port is not None:
        ports.setdefault((device, port), {})[tag] = value


def ib_ports(ports: Ports, hca_types: dict[str, str]) -> list[IbPortSample]:
    out = []
    for (device, port), v in sorted(ports.items()):
        state, phys = v.get("node_infiniband_state_id"), v.get("node_infiniband_physical_state_id")
        rate = v.get("node_infiniband_rate_bytes_per_second")
        record: dict[str, Any] = {
            k: int(v[metric]) for metric, k in _COUNTERS.items() if v.get(metric) is not None
        }
        out.append(
            IbPortSample(
                name=f"{device}:{port}",
                device=device,
                port=int(port) if port.isdigit() else None,
                state=None if state is None else STATES.get(int(state), str(int(state))),
                phys_state=None if phys is None else PHYS_STATES.get(int(phys), str(int(phys))),
                rate_gbps=None if rate is None else round(rate * 8 / 1e9, 3),
                hca_type=hca_types.get(device),
                rx_bytes_per_s=v.get("ib_rx"),
                tx_bytes_per_s=v.get("ib_tx"),
                **record,
            )
        )
    return out


def nvlink(index: int, g: dict[str, Any]) -> NvlinkSample | None:
    """The GPU's NVLink error counters, where dcgm-exporter reports any (not blank)."""
    totals: dict[str, int] = {}
    for field, name in NVLINK_FIELDS.items():
        value = g.get(field)
        if value is not None:
            totals[name] = totals.get(name, 0) + int(value)
    if not totals:
        return None
    return NvlinkSample(
        index,
        crc_errors_total=totals.get("crc_errors_total"),
        replay_errors_total=totals.get("replay_errors_total"),
        recovery_errors_total=totals.get("recovery_errors_total"),
    )
