"""The demo fleet's AMD and Gaudi nodes: each reports as the probe's sources would (vendor,
what the card has, None for what it does not) and has a trouble of its own that a rule names."""

from dltui.core.rules import build_engine
from dltui.core.state import FleetState
from dltui.transport.demo import DemoTransport


def _stepped(steps: int = 180):
    demo = DemoTransport(nodes=12, seed=7)
    fleet = FleetState(demo.names, clock=demo.clock, engine=build_engine())
    demo.step_into(fleet, steps)
    return fleet


def test_the_mi300x_node_reports_no_edge_sensor_and_its_gpu5_xgmi_errors_rise():
    node = _stepped().nodes["gpu09"]
    assert node.facts.gpu_source == "amd-sysfs" and node.facts.cuda_version is None
    assert node.facts.stack.rocm_version == "6.2.4"
    gpus = node.sample.gpus
    assert {(g.vendor, g.name) for g in gpus} == {("amd", "AMD Instinct MI300X")}
    assert all(g.temperature_c is None and g.hotspot_temperature_c > 60 for g in gpus)
    assert all(g.clock_event_reasons_mask is None and g.temperature_margin_c is None for g in gpus)
    assert node.sample.nvlinks == []
    assert [k for k in node.alerts] == [("xgmi_errors", 5)]
    assert node.alerts[("xgmi_errors", 5)].severity == "critical"


def test_the_gaudi_node_loses_one_aip_and_says_where_to_look_in_gaudis_words():
    node = _stepped().nodes["gpu12"]
    assert node.facts.gpu_source == "hl-smi"
    assert {g.driver_version for g in node.facts.gpus} == {"1.22.1-97ec1a4"}
    gpus = node.sample.gpus
    assert {(g.vendor, g.name) for g in gpus} == {("intel", "HL-325L")}
    readable = [g for g in gpus if g.error is None]
    assert len(readable) == 7 and all(g.pcie_gen is None and g.sm_clock_mhz is None for g in readable)
    lost = node.alerts[("gpu_missing", 6)]
    assert lost.severity == "critical"
    assert lost.message.startswith("GPU cannot be read: hl-smi reports no readings for this AIP")
    assert "journalctl -k | grep habanalabs" in lost.message and "XID" not in lost.message
    unlocked = node.alerts[("stack_unlocked", None)]
    assert unlocked.message.startswith("Intel Gaudi driver packages not held (habanalabs-firmware)")


def test_the_probe_and_the_demo_say_the_same_of_an_unreadable_aip():
    from dltui.node.probe import gaudi as probe_gaudi
    from dltui.transport.demo import accelerators

    assert accelerators.NO_READINGS == probe_gaudi.NO_READINGS


def test_the_fleet_filter_finds_nodes_by_vendor_and_by_hotspot_temperature():
    from dltui.ui.fleet_query import parse_filter

    fleet = _stepped()
    now = fleet.clock()

    def shown(text: str) -> list[str]:
        keep = parse_filter(text)
        return [node.name for node in fleet if keep(node, now)]

    assert shown("vendor=amd") == ["gpu09"]
    assert shown("vendor=intel") == ["gpu12"]
    assert "gpu09" not in shown("vendor=nvidia") and "gpu01" in shown("vendor=nvidia")
    assert shown("hotspot>60") == ["gpu09"]  # NVIDIA and Gaudi report no junction: n/a, not 0
