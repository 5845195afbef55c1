"""The fabric in the exposition: HCA ports (``dltui_infiniband_port_*``, labelled ``node``,
``device``, ``port``) and each GPU's NVLink (``dltui_gpu_nvlink_*``, the GPU's labels). Names
and units follow metrics.py: rates in bytes per second, counters ``_total``, facts ``_info``;
a value not reported is no series."""

from __future__ import annotations

from dltui.core.models import IbPortSample, NvlinkSample, Sample

from .page import Labels, Page, labels

GBPS = 1e9 / 8  # Gb/s -> bytes per second

_PORT_ERRORS = (
    ("symbol_error", lambda p: p.symbol_errors_total),
    ("link_downed", lambda p: p.link_downed_total),
    ("link_error_recovery", lambda p: p.link_error_recovery_total),
    ("port_rcv_errors", lambda p: p.rcv_errors_total),
    ("port_xmit_discards", lambda p: p.xmit_discards_total),
    ("excessive_buffer_overrun_errors", lambda p: p.excessive_buffer_overrun_errors_total),
    ("local_link_integrity_errors", lambda p: p.local_link_integrity_errors_total),
)
_NVLINK_ERRORS = (
    ("crc", lambda n: n.crc_errors_total),
    ("replay", lambda n: n.replay_errors_total),
    ("recovery", lambda n: n.recovery_errors_total),
)


def render(page: Page, node_labels: Labels, sample: Sample, gpu_labels: dict[int, Labels]) -> None:
    """The node's HCA ports and its GPUs' NVLink; ``gpu_labels`` by GPU index."""
    _ports(page, node_labels, sample.ib_ports)
    _nvlinks(page, sample.nvlinks, gpu_labels)


def _ports(page: Page, n: Labels, ports: list[IbPortSample]) -> None:
    if not ports:
        return
    info = page.family(
        "dltui_infiniband_port_info",
        "gauge",
        "An InfiniBand/RoCE HCA port and its facts (value 1).",
    )
    up = page.family(
        "dltui_infiniband_port_up",
        "gauge",
        "1 when the port is ACTIVE with its physical link up, else 0.",
    )
    rate = page.family(
        "dltui_infiniband_port_rate_bytes_per_second",
        "gauge",
        "The port's negotiated signalling rate.",
    )
    rx = page.family(
        "dltui_infiniband_port_receive_bytes_per_second", "gauge", "Port receive rate."
    )
    tx = page.family(
        "dltui_infiniband_port_transmit_bytes_per_second", "gauge", "Port transmit rate."
    )
    errors = page.family(
        "dltui_infiniband_port_errors_total",
        "counter",
        "Port error counters, by sysfs counter name (some older HCAs saturate them at 16 bits).",
    )
    for p in ports:
        lab = n + labels(
            ("device", p.device or p.name), ("port", None if p.port is None else str(p.port))
        )
        info.add(
            lab
            + labels(  # facts only: a state as a label would make a new series at each change
                ("link_layer", p.link_layer),
                ("hca_type", p.hca_type),
                ("netdev", p.netdev),
            ),
            1,
        )
        up.add(lab, p.up)
        rate.add(lab, p.rate_gbps, GBPS)
        rx.add(lab, p.rx_bytes_per_s)
        tx.add(lab, p.tx_bytes_per_s)
        for counter, get in _PORT_ERRORS:
            errors.add(lab + (("counter", counter),), get(p))


def _nvlinks(page: Page, links: list[NvlinkSample], gpu_labels: dict[int, Labels]) -> None:
    if not links:
        return
    active = page.family(
        "dltui_gpu_nvlink_links_active", "gauge", "NVLinks of the GPU that are up."
    )
    total = page.family("dltui_gpu_nvlink_links", "gauge", "NVLinks the GPU has.")
    speed = page.family(
        "dltui_gpu_nvlink_link_speed_bytes_per_second",
        "gauge",
        "One NVLink's speed, 0 when it is down.",
    )
    errors = page.family(
        "dltui_gpu_nvlink_errors_total",
        "counter",
        "NVLink errors over all the GPU's links, by type.",
    )
    for x in links:
        lab = gpu_labels.get(x.gpu) or labels(("gpu", str(x.gpu)))
        active.add(lab, x.links_active)
        total.add(lab, x.links_total)
        pairs = zip(x.links_up, x.link_speeds_gbytes_per_s, strict=False)  # lists of one length
        for link, (is_up, gbytes) in enumerate(pairs):
            if is_up is not None:
                speed.add(lab + (("link", str(link)),), (gbytes or 0.0) if is_up else 0.0, 1e9)
        for kind, get in _NVLINK_ERRORS:
            errors.add(lab + (("type", kind),), get(x))
