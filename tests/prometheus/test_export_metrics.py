"""The exporter's page: Prometheus names and units, absent values absent, escaping, alerts,
and a page that ``promtool check metrics`` (the real tool) accepts."""

from __future__ import annotations

import pytest

from dltui.core import status as st
from dltui.core.models import FilesystemSample, GpuFacts, GpuSample, MemorySample, NodeFacts, Sample
from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.core.timeline import Alert
from dltui.export.metrics import CachedPage, render
from dltui.export.page import escape_label
from dltui.transport.demo import DemoTransport

from .tools import promtool_check


def _series(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def _one_node() -> FleetState:
    fleet = FleetState(["gpu01"])
    fleet.on_status("gpu01", st.OK)
    fleet.on_hello(
        "gpu01", NodeFacts(hostname="gpu01", gpus=[GpuFacts(0, name="NVIDIA H100", uuid="GPU-a")])
    )
    gpu = GpuSample(
        0,
        utilization_percent=87.0,
        memory_used_mib=1024.0,
        temperature_c=0.0,
        memory_temperature_c=None,
        power_w=310.5,
        sm_clock_mhz=1980.0,
    )
    fleet.on_sample(
        "gpu01",
        Sample(
            time=1700000000.0,
            memory=MemorySample(total_bytes=64 * 2**30, used_bytes=None),
            filesystems=[FilesystemSample('/mnt/we"ird\\dir\nx', fstype="ext4", total_bytes=100)],
            gpus=[gpu],
        ),
    )
    return fleet


def test_gpu_values_in_base_units_with_node_gpu_uuid_model_labels():
    s = _series(render(_one_node()))
    lab = 'node="gpu01",gpu="0",uuid="GPU-a",model="NVIDIA H100"'
    assert s[f"dltui_gpu_utilization_ratio{{{lab}}}"] == 0.87
    assert s[f"dltui_gpu_memory_used_bytes{{{lab}}}"] == 1024 * 2**20
    assert s[f"dltui_gpu_power_watts{{{lab}}}"] == 310.5
    assert s[f"dltui_gpu_sm_clock_hertz{{{lab}}}"] == 1980e6
    assert s[f"dltui_gpu_temperature_celsius{{{lab}}}"] == 0.0  # a real 0 is kept


def test_a_value_not_reported_is_an_absent_series_never_zero():
    text = render(_one_node())
    assert "dltui_gpu_memory_temperature_celsius" not in text
    assert "dltui_memory_used_bytes" not in text
    assert "dltui_memory_total_bytes" in text
    assert "dltui_cpu_utilization_ratio" not in text  # the sample had no CPU at all


def test_label_values_are_escaped_and_promtool_accepts_them():
    text = render(_one_node())
    assert 'mountpoint="/mnt/we\\"ird\\\\dir\\nx"' in text
    assert escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr


def test_open_alerts_are_series_of_value_one_with_node_gpu_rule_severity():
    fleet = _one_node()
    node = fleet.nodes["gpu01"]
    node.alerts[("thermal", 0)] = Alert("thermal", "critical", "hot", since=1700000000.0, gpu=0)
    node.alerts[("node_stale", None)] = Alert("node_stale", "warning", "late", since=1.0)
    s = _series(render(fleet))
    assert s['dltui_alert{node="gpu01",gpu="0",rule="thermal",severity="critical"}'] == 1
    assert s['dltui_alert{node="gpu01",rule="node_stale",severity="warning"}'] == 1


def test_node_status_and_up():
    fleet = _one_node()
    fleet.on_status("gpu01", st.UNREACHABLE, "connection refused")
    s = _series(render(fleet))
    assert s['dltui_node_up{node="gpu01"}'] == 0
    assert s['dltui_node_status{node="gpu01",status="unreachable"}'] == 1


def test_no_label_names_a_process():
    demo = DemoTransport(nodes=4, gpus=8)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 130)
    text = render(fleet)
    assert "pid" not in text.lower()
    assert "dltui_alert{" in text  # the demo fleet has open alerts by now
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_units_state_is_one_series_per_systemd_state_and_its_restarts_a_counter():
    """The demo's crash-looping training unit, the Prometheus way: dltui_unit_state has a
    series per ActiveState word, 1 on the unit's own; restarts are a counter."""
    demo = DemoTransport(nodes=12, gpus=2)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 30)
    text = render(fleet)
    s = _series(text)
    units = {(k.split('node="')[1].split('"')[0], k.split('unit="')[1].split('"')[0]) for k in s if k.startswith("dltui_unit_state{")}
    assert units, "the demo's nodes report their training unit"
    for node, unit in units:
        states = {k: v for k, v in s.items() if k.startswith(f'dltui_unit_state{{node="{node}",unit="{unit}",')}
        assert sorted(states.values()) == [0] * (len(states) - 1) + [1]
        active = s[f'dltui_unit_active{{node="{node}",unit="{unit}"}}']
        assert active == s[f'dltui_unit_state{{node="{node}",unit="{unit}",state="active"}}']
        assert f'dltui_unit_restarts_total{{node="{node}",unit="{unit}"}}' in s
    assert "# TYPE dltui_unit_restarts_total counter" in text
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr


def test_cached_page_renders_once_per_fleet_change():
    demo = DemoTransport(nodes=2, gpus=2)
    fleet = FleetState(demo.names, clock=demo.clock)
    demo.step_into(fleet, 2)
    page = CachedPage(fleet)
    first = page.body()
    assert page.body() is first and page.renders == 1
    demo.step_into(fleet, 1)
    assert page.body() != first and page.renders == 2


def test_drives_and_the_stack_in_base_units_and_promtool_accepts_them():
    """The demo fleet's gpu10 (a drive with NVMe critical warning 0x04, 38 media errors) and
    gpu11 (driver not held): SMART as ratios, counters and an info series; the stack as 0/1."""
    demo = DemoTransport(nodes=12, gpus=2)
    fleet = FleetState(demo.names, engine=build_engine(), clock=demo.clock)
    demo.step_into(fleet, 10)
    text = render(fleet)
    s = _series(text)
    nvme1 = 'node="gpu10",device="/dev/nvme1"'
    assert s[f"dltui_drive_smart_passed{{{nvme1}}}"] == 0
    assert s[f"dltui_drive_critical_warning{{{nvme1}}}"] == 4
    assert s[f"dltui_drive_available_spare_ratio{{{nvme1}}}"] == pytest.approx(0.62)
    assert s[f"dltui_drive_endurance_used_ratio{{{nvme1}}}"] == pytest.approx(0.41)
    assert s[f"dltui_drive_media_errors_total{{{nvme1}}}"] == 38
    assert s[f"dltui_drive_power_on_seconds_total{{{nvme1}}}"] == 11241 * 3600
    info = [k for k in s if k.startswith(f"dltui_drive_info{{{nvme1},")]
    assert info == [f'dltui_drive_info{{{nvme1},model="SAMSUNG MZQL27T6HBLA-00A07",'
                    'serial="S601NA0W20028",type="nvme",protocol="NVMe"}']
    assert "dltui_drive_pending_sectors" not in text  # NVMe drives have no ATA attributes: absent
    assert s['dltui_stack_driver_held{node="gpu11"}'] == 0 and s['dltui_stack_driver_held{node="gpu10"}'] == 1
    assert s['dltui_stack_reboot_pending{node="gpu11"}'] == 0
    check = promtool_check(text)
    assert check.returncode == 0, check.stdout + check.stderr
