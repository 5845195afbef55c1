"""Fabric rules on ports read by the probe's own collector from real sysfs captures (the
prometheus/procfs and node_exporter ``class/infiniband`` trees), and NVLink records parsed from
real ``nvidia-smi nvlink`` output. Each degraded variant is made from a capture in the test, and
the test says how."""

from pathlib import Path

import pytest

from dltui import snapshot
from dltui.config import Config, ConfigError, parse
from dltui.core.fabric import badge
from dltui.node.probe.infiniband import InfinibandCollector
from dltui.node.probe.nvlink_smi import parse_errors, parse_status, records
from tests import sysfs_tree
from tests.unit.rules_support import Rig, busy_gpu

NVLINK = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi-nvlink"
A100_STATUS = (NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s.txt").read_text()
A100_ERRORS = (NVLINK / "derived_a100-sxm4-80gb_nvlink-e.txt").read_text()
ALL_INACTIVE = (NVLINK / "azurehpc_a100-sxm4-80gb_nvlink-s_all-inactive.txt").read_text()


@pytest.fixture
def eight_hcas(tmp_path):
    """A GPU node's eight HCAs built from procfs's captured mlx5_0 (see sysfs_tree.eight_hcas)."""
    return sysfs_tree.eight_hcas(tmp_path / "sys")


def watch(rig, collector, seconds, **records):
    rig.run(seconds, [busy_gpu(0)], hosts=lambda t: {"ib_ports": collector.sample(), **records})


def test_a_port_that_goes_down_is_critical_with_the_cable_as_next_step(eight_hcas):
    rig = Rig()
    ib = InfinibandCollector(str(eight_hcas), counter_refresh_s=0)
    watch(rig, ib, 5)
    assert rig.alerts() == {}
    assert badge(rig.node().sample, rig.node().alerts) == "ok"
    sysfs_tree.take_down(eight_hcas, "mlx5_2")  # the cable pulled: DOWN, Polling
    watch(rig, ib, 3)
    alert = rig.alert("ib_port_down", None)
    assert alert.severity == "critical"
    assert alert.message.startswith("HCA port mlx5_2 DOWN (physical link Polling), up earlier")
    assert "check the cable, the transceiver and the switch port" in alert.message
    assert badge(rig.node().sample, rig.node().alerts) == "down"
    assert snapshot.exit_code(rig.fleet) == 2
    sysfs_tree.write(sysfs_tree.port(eight_hcas, "mlx5_2") / "state", "4: ACTIVE")
    sysfs_tree.write(sysfs_tree.port(eight_hcas, "mlx5_2") / "phys_state", "5: LinkUp")
    watch(rig, ib, 40)
    assert rig.alert("ib_port_down", None) is None


def test_a_port_never_seen_up_is_critical_where_the_group_expects_it_else_a_warning(tmp_path):
    """node_exporter's capture as found: every port ACTIVE/LinkUp. Its mlx4_0 port 2 is taken
    down before the first sample (a node that booted with a cable missing)."""
    root = sysfs_tree.unpack(sysfs_tree.NODE_EXPORTER, tmp_path / "sys")
    sysfs_tree.take_down(root, "mlx4_0", 2)
    rig = Rig()
    watch(rig, InfinibandCollector(str(root)), 5)
    alert = rig.alert("ib_port_down", None)  # no group describes the node: its siblings do
    assert alert.severity == "warning"
    assert alert.message.startswith(
        "HCA port mlx4_0:2 DOWN (physical link Polling) while its 2 siblings are ACTIVE"
    )
    cfg = parse({"groups": {"ib": {"hosts": ["gpu*"], "ib_rate_gbps": 40}}})
    rig = Rig(cfg=cfg)
    watch(rig, InfinibandCollector(str(root)), 5)
    assert rig.alert("ib_port_down", None).message.startswith(
        "HCA port mlx4_0:2 DOWN (physical link Polling), expected up at 40 Gb/s"
    )


def test_a_port_down_since_first_sight_beside_active_siblings_is_a_warning_naming_ignore_ports(eight_hcas):
    """mlx5_1 DOWN/Polling before the first sample (a cable never plugged, or a spare port) while
    the other seven HCAs are ACTIVE, on a node no group describes."""
    sysfs_tree.take_down(eight_hcas, "mlx5_1")
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    alert = rig.alert("ib_port_down", None)
    assert alert.severity == "warning"
    assert alert.message.startswith("HCA port mlx5_1 DOWN (physical link Polling) while its 7 siblings are ACTIVE")
    assert alert.message.endswith(
        "— unused, or a cable? If unused, add it to [rules.ib_port_down] ignore_ports; "
        "else check the cable, the transceiver and the switch port"
    )
    assert badge(rig.node().sample, rig.node().alerts) == "down"
    assert snapshot.exit_code(rig.fleet) == 1
    sysfs_tree.take_down(eight_hcas, "mlx5_5")  # a second one, up to now: it was up, so critical
    watch(rig, InfinibandCollector(str(eight_hcas)), 3)
    alert = rig.alert("ib_port_down", None)
    assert alert.severity == "critical"
    assert alert.message.startswith(
        "HCA ports mlx5_5 DOWN (physical link Polling), up earlier; "
        "mlx5_1 DOWN (physical link Polling) while 6 of its 7 siblings are ACTIVE"
    )
    assert alert.message.endswith(
        "— check the cable, the transceiver and the switch port (ibstat shows it; the switch logs "
        "its side); a port never up may be unused: add it to [rules.ib_port_down] ignore_ports"
    )


def test_a_port_in_ignore_ports_and_a_node_with_every_port_down_stay_silent(eight_hcas):
    sysfs_tree.take_down(eight_hcas, "mlx5_1")
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    assert rig.alert("ib_port_down", None).severity == "warning"  # as above, until ignored:
    rig = Rig(cfg=Config(rules={"ib_port_down": {"ignore_ports": ["mlx5_1"]}}))
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    assert rig.alert("ib_port_down", None) is None
    for i in range(8):  # nothing ACTIVE to compare with: an unused fabric, as before
        sysfs_tree.take_down(eight_hcas, f"mlx5_{i}")
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    assert rig.alert("ib_port_down", None) is None


def test_siblings_are_the_ports_of_the_same_link_layer(eight_hcas):
    """mlx5_6 and mlx5_7 made RoCE ports (link_layer Ethernet, as a ConnectX in Ethernet mode
    reads), the other six staying InfiniBand."""
    for name in ("mlx5_6", "mlx5_7"):
        sysfs_tree.write(sysfs_tree.port(eight_hcas, name) / "link_layer", "Ethernet")
    sysfs_tree.take_down(eight_hcas, "mlx5_7")
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    assert rig.alert("ib_port_down", None).message.startswith(
        "HCA port mlx5_7 DOWN (physical link Polling) while its 1 sibling is ACTIVE"
    )
    sysfs_tree.take_down(eight_hcas, "mlx5_6")  # both RoCE ports down, from the first sample on
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 5)
    assert rig.alert("ib_port_down", None) is None  # the six ACTIVE InfiniBand ports are not siblings


def test_the_group_rate_is_a_number_and_an_unknown_group_key_is_refused():
    with pytest.raises(ConfigError, match=r'ib_rate_gbps = "400": expected a number from 0 to 100000 Gb/s'):
        parse({"groups": {"ib": {"hosts": ["gpu*"], "ib_rate_gbps": "400"}}})
    with pytest.raises(ConfigError, match="ib_rate"):
        parse({"groups": {"ib": {"hosts": ["gpu*"], "ib_rate": 400}}})


def test_a_port_slower_than_its_siblings_is_a_warning_naming_both_rates(eight_hcas):
    """mlx5_2 keeps the capture's own 25 Gb/s 1X EDR: one lane of four trained."""
    sysfs_tree.write(sysfs_tree.port(eight_hcas, "mlx5_2") / "rate", "25 Gb/sec (1X EDR)")
    rig = Rig()
    watch(rig, InfinibandCollector(str(eight_hcas)), 15)
    alert = rig.alert("ib_port_rate_low", None)
    assert alert.severity == "warning"
    assert alert.message.startswith("mlx5_2 at 25 Gb/s (1X EDR), its siblings at 100 Gb/s for 14s")
    assert alert.message.endswith("— reseat or replace the cable/transceiver; check the switch port's speed")
    assert badge(rig.node().sample, rig.node().alerts) == "slow"


def test_every_port_below_the_groups_rate_is_slow_even_when_all_agree(eight_hcas):
    rig = Rig(cfg=parse({"groups": {"ib": {"hosts": ["gpu01"], "ib_rate_gbps": 200}}}))
    watch(rig, InfinibandCollector(str(eight_hcas)), 15)
    alert = rig.alert("ib_port_rate_low", None)
    assert "mlx5_0 at 100 Gb/s (4X EDR), the group expects 200 Gb/s" in alert.message
    assert len(alert.evidence["ports"]) == 8


def test_ignored_ports_are_left_alone(eight_hcas):
    cfg = Config(rules={"ib_port_rate_low": {"ignore_ports": ["mlx5_2"]}})
    sysfs_tree.write(sysfs_tree.port(eight_hcas, "mlx5_2") / "rate", "25 Gb/sec (1X EDR)")
    rig = Rig(cfg=cfg)
    watch(rig, InfinibandCollector(str(eight_hcas)), 15)
    assert rig.alert("ib_port_rate_low", None) is None


def test_rising_symbol_errors_and_link_downs_warn_with_their_rate(eight_hcas):
    rig = Rig()
    ib = InfinibandCollector(str(eight_hcas), counter_refresh_s=0)
    watch(rig, ib, 10)
    assert rig.alert("ib_port_errors", None) is None  # the captured counters alone are history
    sysfs_tree.add_to_counter(eight_hcas, "mlx5_5", "symbol_error", 120)
    sysfs_tree.add_to_counter(eight_hcas, "mlx5_5", "link_downed", 2)
    watch(rig, ib, 10)
    alert = rig.alert("ib_port_errors", None)
    assert alert.severity == "warning"
    assert "mlx5_5 link downs +2" in alert.message and "mlx5_5 symbol errors +120" in alert.message
    assert "/min" not in alert.message  # seconds of history: no rate yet
    assert "in the last 10 min" in alert.message
    assert "the link is flapping" in alert.message and "swap the cable or transceiver" in alert.message
    watch(rig, ib, 110)
    sysfs_tree.add_to_counter(eight_hcas, "mlx5_5", "symbol_error", 120)  # two minutes after the first
    watch(rig, ib, 5)
    assert "mlx5_5 symbol errors +240 (119.0/min)" in rig.alert("ib_port_errors", None).message
    assert badge(rig.node().sample, rig.node().alerts) == "errors"
    watch(rig, ib, 700)  # no new error for longer than the window
    assert rig.alert("ib_port_errors", None) is None


def test_a_reset_counter_is_not_a_rise(eight_hcas):
    rig = Rig()
    ib = InfinibandCollector(str(eight_hcas), counter_refresh_s=0)
    sysfs_tree.add_to_counter(eight_hcas, "mlx5_1", "symbol_error", 500)
    watch(rig, ib, 10)
    sysfs_tree.write(sysfs_tree.port(eight_hcas, "mlx5_1") / "counters" / "symbol_error", 0)  # perfquery -x
    watch(rig, ib, 10)
    assert rig.alert("ib_port_errors", None) is None


def nvlink_node(status=A100_STATUS, errors=A100_ERRORS, gpus=8):
    """The A100 capture's GPU repeated as the node's ``gpus`` GPUs (the capture holds GPU 7)."""
    one = records(parse_status(status), parse_errors(errors))[0]
    return [dict(one, gpu=i) for i in range(gpus)]


def test_an_nvlink_that_goes_down_is_critical_and_names_the_link():
    rig = Rig()
    links = nvlink_node()
    rig.run(5, [busy_gpu(0)], nvlinks=links)
    assert rig.alerts() == {}
    down = [dict(n) for n in links]
    status = A100_STATUS.replace("Link 4: 25 GB/s", "Link 4: <inactive>")  # one link of GPU 3 lost
    down[3] = dict(nvlink_node(status)[3])
    rig.run(3, [busy_gpu(0)], nvlinks=down)
    alert = rig.alert("nvlink_degraded", 3)
    assert alert.severity == "critical"
    assert alert.message.startswith("NVLink 11 of 12 links active: link 4 down, up earlier")
    assert "XID 74" in alert.message


def test_a_gpu_whose_links_are_all_inactive_is_critical_against_its_siblings():
    """GPU 6 as Azure's capture shows it: NVML cannot read NVLink, all links are inactive."""
    links = nvlink_node()
    links[6] = records(parse_status(ALL_INACTIVE), {})[0]
    rig = Rig()
    rig.run(5, [busy_gpu(0)], nvlinks=links)
    alert = rig.alert("nvlink_degraded", 6)
    assert alert.message.startswith("NVLink 0 of 12 links active (the other GPUs have 12)")
    assert [k for k in rig.alerts()] == [("nvlink_degraded", 6)]


def test_a_slow_link_is_a_warning():
    links = nvlink_node()
    links[2] = nvlink_node(A100_STATUS.replace("Link 10: 25 GB/s", "Link 10: 1.562 GB/s"))[2]
    rig = Rig()
    rig.run(5, [busy_gpu(0)], nvlinks=links)
    alert = rig.alert("nvlink_degraded", 2)
    assert alert.severity == "warning"
    assert alert.message.startswith("NVLink link 10 at 1.562 GB/s, the others at 25 GB/s")


def test_rising_nvlink_replays_warn_and_a_pcie_only_node_is_not_judged():
    rig = Rig()
    rig.run(10, [busy_gpu(0)], nvlinks=nvlink_node())
    errors = A100_ERRORS.replace("Link 3: Replay Errors: 0", "Link 3: Replay Errors: 40")
    rig.run(10, [busy_gpu(0)], nvlinks=nvlink_node(errors=errors))
    alert = rig.alert("nvlink_errors", 5)
    assert alert.severity == "warning"
    assert alert.message.startswith("NVLink errors replay +40 in the last 10 min")
    pcie = Rig()
    pcie.run(10, [busy_gpu(0)])
    assert pcie.alerts() == {} and badge(pcie.node().sample, pcie.node().alerts) is None
