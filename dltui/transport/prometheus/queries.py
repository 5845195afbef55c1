"""What the Prometheus source asks: the series it reads and its PromQL queries (three every
refresh, a fourth for the GPUs' facts now and then), with ``--match`` added inside every
selector."""

from __future__ import annotations

import re

from . import fabric, smartctl

RATE_WINDOW = "2m"  # irate takes the newest two points in it: covers scrape intervals up to 1 min
# File systems an operator does not fill with data sets or checkpoints.
PSEUDO_FS = {"tmpfs", "devtmpfs", "squashfs", "nsfs", "ramfs", "autofs", "fuse.lxcfs"}

DCGM_FIELDS = {
    "GPU_TEMP": "temperature_c",
    "MEMORY_TEMP": "memory_temperature_c",
    "POWER_USAGE": "power_w",
    "POWER_MGMT_LIMIT": "power_limit_w",
    "GPU_UTIL": "utilization_percent",
    "MEM_COPY_UTIL": "memory_utilization_percent",
    "SM_CLOCK": "sm_clock_mhz",
    "MEM_CLOCK": "memory_clock_mhz",
    "FB_USED": "memory_used_mib",
    "PCIE_REPLAY_COUNTER": "pcie_replay_count",
    "PCIE_LINK_GEN": "pcie_gen",
    "PCIE_LINK_WIDTH": "pcie_width",
    "FAN_SPEED": "fan_percent",
    "PSTATE": "pstate",
    "ECC_SBE_VOL_TOTAL": "ecc_corrected_volatile",
    "ECC_DBE_VOL_TOTAL": "ecc_uncorrected_volatile",
    "ECC_SBE_AGG_TOTAL": "ecc_corrected_aggregate",
    "ECC_DBE_AGG_TOTAL": "ecc_uncorrected_aggregate",
    "CORRECTABLE_REMAPPED_ROWS": "remapped_rows_correctable",
    "UNCORRECTABLE_REMAPPED_ROWS": "remapped_rows_uncorrectable",
    "ROW_REMAP_FAILURE": "remapped_rows_failure",
    "ROW_REMAP_PENDING": "remapped_rows_pending",
}
# AMD's device-metrics-exporter (ROCm/device-metrics-exporter, docs/configuration/metricslist.md):
# its GPUMetricField names in lower case, behind an optional prefix (CommonConfig
# MetricsFieldPrefix, "amd_" in AMD's own dashboards); a GPU is its gpu_id label, relabelled
# ``gpu`` in the query so DCGM's and AMD's GPUs are read alike. VRAM in MB (MiB).
AMD_PREFIX = "amd_"
AMD_FIELDS = {
    "gpu_edge_temperature": "temperature_c",  # MI2xx; MI3xx has no edge sensor
    "gpu_junction_temperature": "hotspot_temperature_c",
    "gpu_memory_temperature": "memory_temperature_c",
    "gpu_package_power": "power_w",  # MI3xx: current socket power
    "gpu_average_package_power": "power_w",  # MI2xx
    "gpu_gfx_activity": "utilization_percent",
    "gpu_umc_activity": "memory_utilization_percent",
    "gpu_used_vram": "memory_used_mib",
    "gpu_total_vram": "FB_TOTAL",  # the total, as DCGM's FB_TOTAL is read
    "pcie_replay_count": "pcie_replay_count",
    "gpu_ecc_correct_total": "ecc_corrected_volatile",
    "gpu_ecc_uncorrect_total": "ecc_uncorrected_volatile",
    "gpu_ecc_correct_xgmi_wafl": "xgmi_errors_total",  # the two are summed
    "gpu_ecc_uncorrect_xgmi_wafl": "xgmi_errors_total",
}
_AMD_FACT_LABELS = "instance, hostname, gpu_id, card_series, card_model, gpu_uuid, serial_number, driver_version"
# Intel Gaudi's Prometheus Metric Exporter (docs.habana.ai, Orchestration/Prometheus_Metric_Exporter):
# habanalabs_* series, one per AIP, its index the ``id`` label (relabelled ``gpu``), no
# hostname label: the node is its instance's (node_exporter on the same host). Name ->
# (GpuSample field, scale to dltui's unit): power in mW, memory in bytes. A series the
# exporter does not publish stays n/a.
GAUDI_PREFIX = "habanalabs_"
GAUDI_FIELDS: dict[str, tuple[str, float]] = {
    "temperature_onchip": ("temperature_c", 1.0),
    "power_mW": ("power_w", 1e-3),
    "power_default_limit_mW": ("power_limit_w", 1e-3),
    "utilization": ("utilization_percent", 1.0),
    "memory_used_bytes": ("memory_used_mib", 1.0 / 2**20),
    "memory_total_bytes": ("FB_TOTAL", 1.0 / 2**20),  # the total, as DCGM's FB_TOTAL is read
    "clock_soc_mhz": ("sm_clock_mhz", 1.0),
    "pcie_replay_count": ("pcie_replay_count", 1.0),
    "pci_link_width": ("pcie_width", 1.0),
}
_GAUDI_FACT_LABELS = "instance, id, UUID, driver"
# The clock-event mask under its current name and its deprecated one (same NVML bits).
REASON_FIELDS = ("CLOCKS_EVENT_REASONS", "CLOCK_THROTTLE_REASONS")
_OTHER_DCGM = ("FB_FREE", "FB_RESERVED", "FB_TOTAL", "XID_ERRORS", *fabric.NVLINK_FIELDS)

# Every refresh: only what tells one GPU's readings apart. The facts (UUID, model, bus id,
# driver) ride on every series too, but change only when a GPU does: asked by GPU_FACTS_QUERY,
# once per GPU rather than once per reading, on the first refresh, every FACTS_EVERY_S and
# whenever a GPU shows up that they do not cover.
_GPU_LABELS = "__name__, instance, Hostname, hostname, gpu"
_GPU_FACT_LABELS = (
    "instance, Hostname, hostname, gpu, UUID, modelName, pci_bus_id, DCGM_FI_DRIVER_VERSION"
)
# The GPU queries: every refresh, and the facts query (with smartctl_exporter's drives) when
# due (see source.py).
REFRESH_QUERIES = ("gpu", "host", "rates")
GPU_FACTS_QUERY = "gpu_facts"
SLOW_QUERIES = (GPU_FACTS_QUERY, smartctl.QUERY)
FACTS_EVERY_S = 60.0
_HOST_LABELS = (  # job: which scrape jobs serve nodes (up), see mapping.Targets
    "__name__, instance, job, nodename, release, pretty_name, name, mountpoint, fstype, device, "
    + fabric.IB_LABELS
)
HOST_GAUGES = (
    "up",
    "node_uname_info",
    "node_os_info",
    "node_boot_time_seconds",
    "node_memory_MemTotal_bytes",
    "node_memory_MemAvailable_bytes",
    "node_memory_Cached_bytes",
    "node_memory_Buffers_bytes",
    "node_memory_Shmem_bytes",
    "node_memory_SwapTotal_bytes",
    "node_memory_SwapFree_bytes",
    "node_load1",
    "node_load5",
    "node_load15",
    "node_procs_running",
    "node_procs_blocked",
    "node_filesystem_size_bytes",
    "node_filesystem_free_bytes",
    "node_filesystem_avail_bytes",
    "node_network_receive_errs_total",
    "node_network_transmit_errs_total",
    "node_network_receive_drop_total",
    "node_network_transmit_drop_total",
    *fabric.IB_GAUGES,
)
_RATES = (  # (dltui tag, counter)
    ("disk_read", "node_disk_read_bytes_total"),
    ("disk_written", "node_disk_written_bytes_total"),
    ("disk_busy", "node_disk_io_time_seconds_total"),
    ("net_rx", "node_network_receive_bytes_total"),
    ("net_tx", "node_network_transmit_bytes_total"),
    ("psi_cpu_some", "node_pressure_cpu_waiting_seconds_total"),
    ("psi_io_some", "node_pressure_io_waiting_seconds_total"),
    ("psi_io_full", "node_pressure_io_stalled_seconds_total"),
    ("psi_memory_some", "node_pressure_memory_waiting_seconds_total"),
    ("psi_memory_full", "node_pressure_memory_stalled_seconds_total"),
)


class SelectorError(ValueError):
    pass


def matchers(selector: str | None) -> str:
    """``--match`` as the label matchers to add inside every selector's braces:
    ``{job="gpu"}`` and ``job="gpu"`` both give ``job="gpu"``."""
    if not selector:
        return ""
    inner = selector.strip()
    if inner.startswith("{"):
        if not inner.endswith("}"):
            raise SelectorError(f"--match {selector!r}: unbalanced braces")
        inner = inner[1:-1].strip()
    if not re.fullmatch(r'(\s*[A-Za-z_]\w*\s*(=~|!=|!~|=)\s*"(\\.|[^"\\])*"\s*,?)*', inner):
        raise SelectorError(f'--match {selector!r}: expected label matchers such as job="gpu"')
    return inner.rstrip(", ")


def queries(selector: str | None = None) -> dict[str, str]:
    """The PromQL queries of the source by name (see the package docstring): the
    ``REFRESH_QUERIES`` every refresh, ``GPU_FACTS_QUERY`` when the facts are due."""
    m = matchers(selector)
    extra = f",{m}" if m else ""
    fields = sorted({*DCGM_FIELDS, *REASON_FIELDS, *_OTHER_DCGM})
    # GPU_I_ID="": whole GPUs only (a MIG instance's series carry its GPU's values again).
    dcgm = f'{{__name__=~"DCGM_FI_DEV_({"|".join(fields)})",GPU_I_ID=""{extra}}}'
    # "max by (the labels read here)": Prometheus drops the rest (job, device, pod, a site's
    # own relabels) before they cross the network; the name stays (an aggregation keeps the
    # labels it is grouped by, __name__ included).
    amd = f'{{__name__=~"({AMD_PREFIX})?({"|".join(sorted(AMD_FIELDS))})"{extra}}}'
    gaudi = f'{{__name__=~"{GAUDI_PREFIX}({"|".join(sorted(GAUDI_FIELDS))})"{extra}}}'
    gpu = (
        f"max by ({_GPU_LABELS}) ({dcgm}) or "
        f'label_replace(max by (__name__, instance, hostname, gpu_id) ({amd}), "gpu", "$1", "gpu_id", "(.*)") or '
        f'label_replace(max by (__name__, instance, id) ({gaudi}), "gpu", "$1", "id", "(.*)")'
    )
    gpu_facts = (
        f"count by ({_GPU_FACT_LABELS}) ({dcgm}) or "
        f'label_replace(count by ({_AMD_FACT_LABELS}) ({amd}), "gpu", "$1", "gpu_id", "(.*)") or '
        f'label_replace(count by ({_GAUDI_FACT_LABELS}) ({gaudi}), "gpu", "$1", "id", "(.*)")'
    )
    # Pseudo file systems are dropped by Prometheus itself: a series without fstype matches
    # fstype!~"..." (its value is ""), so the other gauges are kept.
    pseudo = "|".join(sorted(PSEUDO_FS))  # "." in fuse.lxcfs matches itself too
    host = (
        f"max by ({_HOST_LABELS}) "
        f'({{__name__=~"{"|".join(HOST_GAUGES)}",fstype!~"{pseudo}"{extra}}})'
    )
    parts = [
        "label_replace(sum by (instance, mode) "
        f"(irate(node_cpu_seconds_total{{{m}}}[{RATE_WINDOW}])),"
        ' "dltui", "cpu", "", "")',
        f'label_replace(count by (instance) (node_cpu_seconds_total{{mode="idle"{extra}}}),'
        ' "dltui", "cpus", "", "")',
    ]
    for tag, counter in _RATES:
        parts.append(
            f"label_replace(max by (instance, device) (irate({counter}{{{m}}}[{RATE_WINDOW}])),"
            f' "dltui", "{tag}", "", "")'
        )
    for tag, counter in fabric.IB_RATES:  # per HCA port: device and port
        parts.append(
            f"label_replace(max by (instance, device, port) (irate({counter}{{{m}}}[{RATE_WINDOW}])),"
            f' "dltui", "{tag}", "", "")'
        )
    return {
        "gpu": gpu,
        "host": host,
        "rates": " or ".join(parts),
        GPU_FACTS_QUERY: gpu_facts,
        smartctl.QUERY: smartctl.query(m),
    }
