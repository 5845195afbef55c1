"""AMD's binary gpu_metrics file: the throttle status, read from bytes laid out as the kernel's
``struct gpu_metrics_v1_x`` (drivers/gpu/drm/amd/include/kgd_pp_interface.h, linux 6.2, MIT).

The structures below are written field by field from that header and laid out by ctypes the
way a C compiler lays them out (natural alignment), so the offsets the probe uses are checked
against the layout, not against themselves."""

from __future__ import annotations

import ctypes
import time

import pytest

from dltui.node.probe.amd_metrics import THROTTLE_STATUS_AT, throttle_status, throttled
from dltui.node.probe.amd_sysfs import find_cards
from tests import sysfs_tree

u8, u16, u32, u64 = ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64
HEADER = [("structure_size", u16), ("format_revision", u8), ("content_revision", u8)]
CLOCKS = ["gfxclk", "socclk", "uclk", "vclk0", "dclk0", "vclk1", "dclk1"]


class V1_3(ctypes.LittleEndianStructure):
    _fields_ = HEADER + [
        (f"temperature_{t}", u16) for t in ("edge", "hotspot", "mem", "vrgfx", "vrsoc", "vrmem")
    ] + [
        ("average_gfx_activity", u16), ("average_umc_activity", u16), ("average_mm_activity", u16),
        ("average_socket_power", u16), ("energy_accumulator", u64), ("system_clock_counter", u64),
    ] + [(f"average_{c}_frequency", u16) for c in CLOCKS] + [(f"current_{c}", u16) for c in CLOCKS] + [
        ("throttle_status", u32), ("current_fan_speed", u16), ("pcie_link_width", u16),
        ("pcie_link_speed", u16), ("padding", u16), ("gfx_activity_acc", u32), ("mem_activity_acc", u32),
        ("temperature_hbm", u16 * 4), ("firmware_timestamp", u64), ("voltage_soc", u16),
        ("voltage_gfx", u16), ("voltage_mem", u16), ("padding1", u16), ("indep_throttle_status", u64),
    ]


def _v1_4_fields(jpeg: bool):
    return HEADER + [
        ("temperature_hotspot", u16), ("temperature_mem", u16), ("temperature_vrsoc", u16),
        ("curr_socket_power", u16), ("average_gfx_activity", u16), ("average_umc_activity", u16),
        ("vcn_activity", u16 * 4),
    ] + ([("jpeg_activity", u16 * 32)] if jpeg else []) + [
        ("energy_accumulator", u64), ("system_clock_counter", u64), ("throttle_status", u32),
        ("gfxclk_lock_status", u32), ("pcie_link_width", u16), ("pcie_link_speed", u16),
    ]  # (the rest of the struct: counters and clocks this reader does not use)


class V1_4(ctypes.LittleEndianStructure):
    _fields_ = _v1_4_fields(jpeg=False)


class V1_5(ctypes.LittleEndianStructure):
    _fields_ = _v1_4_fields(jpeg=True)


def blob(layout, minor, status, **fields) -> bytes:
    metrics = layout(format_revision=1, content_revision=minor, throttle_status=status, **fields)
    metrics.structure_size = ctypes.sizeof(layout)
    return bytes(metrics)


@pytest.mark.parametrize("layout, minor", [(V1_3, 1), (V1_3, 2), (V1_3, 3), (V1_4, 4), (V1_5, 5)])
def test_the_offsets_are_where_the_kernel_struct_puts_throttle_status(layout, minor):
    assert THROTTLE_STATUS_AT[(1, minor)] == layout.throttle_status.offset


@pytest.mark.parametrize("layout, minor", [(V1_3, 3), (V1_4, 4), (V1_5, 5)])
def test_throttle_status_read_from_documented_layouts(layout, minor):
    # neighbours set to values that would be misread if an offset were off by a field
    busy = blob(layout, minor, 0x8, energy_accumulator=2**40 + 5, system_clock_counter=12345678901)
    assert throttle_status(busy) == 0x8 and throttled(busy) is True
    idle = blob(layout, minor, 0, energy_accumulator=2**63, system_clock_counter=2**33)
    assert throttle_status(idle) == 0 and throttled(idle) is False


def test_unknown_revisions_short_files_and_unreported_status_are_n_a():
    assert throttled(blob(V1_5, 6, 1)) is None  # v1.6+: layout not checked, never guessed
    assert throttled(blob(V1_3, 3, 0xFFFFFFFF)) is None  # the driver's "not reported"
    assert throttled(blob(V1_3, 3, 1)[:60]) is None  # cut before the field
    assert throttled(b"") is None and throttled(None) is None


def test_sysfs_card_reports_throttled_from_its_gpu_metrics_file(tmp_path):
    root = sysfs_tree.amd_cards(tmp_path / "sys", count=2)
    device = (root / "class" / "drm" / "card0" / "device").resolve()
    (device / "gpu_metrics").write_bytes(blob(V1_3, 3, 0x4, temperature_edge=45))
    cards = find_cards(str(root))  # the file is looked for once, when the card is found
    # card1 has no gpu_metrics file: n/a, not "not throttled"
    try:
        first, second = (card.sample(time.monotonic()) for card in cards)
        assert first["throttled"] is True and second["throttled"] is None
        with open(f"{cards[0].dir}/gpu_metrics", "wb") as f:
            f.write(blob(V1_3, 3, 0))
        assert cards[0].sample(time.monotonic())["throttled"] is False  # re-read each sample (pread)
    finally:
        for card in cards:
            card.close()
