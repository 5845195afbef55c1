"""How often the probe's HCA port reader reads each sysfs file (infiniband.py's cadence), on
the prometheus/procfs capture's real ``class/infiniband`` tree: the state every sample, the
rate and physical state on a change of state or every LINK_REFRESH_S, the counters every
COUNTER_REFRESH_S, and nothing rebuilt while nothing changed."""

from dltui.node.probe.infiniband import (
    COUNTER_REFRESH_S,
    LINK_REFRESH_S,
    InfinibandCollector,
    parse_counter_bytes,
)
from tests import sysfs_tree


def mlx5(records):
    """The capture's mlx5_0 port 1 (it holds other HCAs too)."""
    return next(r for r in records if r["name"] == "mlx5_0:1")


def one_port(root, now):
    ib = InfinibandCollector(str(root), clock=lambda: now[0])
    return ib, ib.sample()


def test_an_unchanged_port_is_the_same_list_and_record_from_sample_to_sample(tmp_path):
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    now = [100.0]
    ib, first = one_port(root, now)
    now[0] += 1.0
    second = ib.sample()
    assert second is first and mlx5(second) is mlx5(first)  # nothing decoded or built again
    now[0] += COUNTER_REFRESH_S
    sysfs_tree.add_to_counter(root, "mlx5_0", "symbol_error", 3)
    third = ib.sample()
    assert third is not first
    assert mlx5(third)["symbol_errors_total"] == mlx5(first)["symbol_errors_total"] + 3
    assert mlx5(first)["symbol_errors_total"] is not None  # (records once returned never change)


def test_rate_is_read_again_with_a_new_state_or_after_the_link_refresh(tmp_path):
    """A link that retrains to a lower speed and stays ACTIVE shows its new rate within
    LINK_REFRESH_S; one whose state changes shows it at once."""
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    now = [100.0]
    ib, first = one_port(root, now)
    rate_file = sysfs_tree.port(root, "mlx5_0") / "rate"
    sysfs_tree.write(rate_file, "50 Gb/sec (2X EDR)")
    now[0] += COUNTER_REFRESH_S  # the counters' refresh: the rate is not due yet
    assert mlx5(ib.sample())["rate_gbps"] == mlx5(first)["rate_gbps"] != 50.0
    now[0] += LINK_REFRESH_S
    port = mlx5(ib.sample())
    assert (port["rate_gbps"], port["rate_detail"]) == (50.0, "2X EDR")
    sysfs_tree.write(rate_file, "25 Gb/sec (1X EDR)")
    sysfs_tree.take_down(root, "mlx5_0")
    now[0] += 1.0
    port = mlx5(ib.sample())
    assert (port["state"], port["phys_state"], port["rate_gbps"]) == ("DOWN", "Polling", 25.0)


def test_counter_bytes_parse_as_numbers_or_none():
    assert parse_counter_bytes(b"4294967295\n") == 4294967295
    assert parse_counter_bytes(b"N/A (no PMA)\n") is None
    assert parse_counter_bytes(b"") is None
    assert parse_counter_bytes(None) is None
