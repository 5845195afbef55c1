"""The probe's HCA port reader on real sysfs captures (prometheus/procfs and node_exporter's
``class/infiniband`` trees), through the ``sysfs`` root every sysfs read of the probe takes."""

from dltui.node import bundle
from dltui.node.probe.collect import Collector
from dltui.node.probe.infiniband import InfinibandCollector, parse_rate, parse_state
from dltui.node.probe.main import parse_args
from tests import sysfs_tree


def by_name(records):
    return {r["name"]: r for r in records}


def test_procfs_capture_reads_as_the_hcas_it_holds(tmp_path):
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    ports = by_name(InfinibandCollector(str(root)).sample())
    assert sorted(ports) == ["hfi1_0:1", "mlx4_0:1", "mlx4_0:2", "mlx5_0:1"]
    opa = ports["hfi1_0:1"]
    assert (opa["state"], opa["phys_state"], opa["rate_gbps"], opa["rate_detail"]) == ("ACTIVE", "LinkUp", 100.0, "4X EDR")
    assert opa["link_layer"] == "InfiniBand" and opa["hca_type"] is None  # the capture has no hca_type for it
    mlx5 = ports["mlx5_0:1"]
    assert (mlx5["rate_gbps"], mlx5["rate_detail"], mlx5["hca_type"]) == (25.0, "1X EDR", "MT4118")
    assert mlx5["phys_state"] == "ACTIVE"  # as captured: the capture's phys_state file says "4: ACTIVE"
    counters = {k: v for k, v in ports["mlx4_0:1"].items() if k.endswith("_total")}
    assert counters == {
        "symbol_errors_total": 0,
        "link_downed_total": 0,
        "link_error_recovery_total": 0,
        "rcv_errors_total": 0,
        "xmit_discards_total": 0,
        "excessive_buffer_overrun_errors_total": 0,
        "local_link_integrity_errors_total": 0,
    }
    assert ports["mlx4_0:2"]["link_layer"] == "InfiniBand"  # the capture's file has a trailing blank line
    assert all(p["rx_bytes_per_s"] is None for p in ports.values())  # no rate from one reading


def test_node_exporter_capture_iwarp_counters_without_a_pma_are_not_reported_not_zero(tmp_path):
    root = sysfs_tree.unpack(sysfs_tree.NODE_EXPORTER, tmp_path)
    ports = by_name(InfinibandCollector(str(root)).sample())
    iwarp = ports["i40iw0:1"]
    assert iwarp["symbol_errors_total"] is None  # the file reads "N/A (no PMA)"
    assert (iwarp["rate_gbps"], iwarp["rate_detail"], iwarp["hca_type"]) == (10.0, "4X", "I40IW")
    assert ports["mlx4_0:1"]["xmit_discards_total"] == 5
    assert ports["mlx4_0:2"]["rcv_errors_total"] is None  # port 2 of the capture has no such file


def test_data_rates_come_from_the_64_bit_counters_in_4_byte_words(tmp_path):
    """node_exporter's mlx4_0 port 1 holds both the 32-bit ``counters/port_rcv_data`` and the
    pre-4.5 kernels' ``counters_ext/port_rcv_data_64``: the wide one is read. The test adds
    1,000,000 words to it between two readings 10 s apart (on the collector's clock)."""
    root = sysfs_tree.unpack(sysfs_tree.NODE_EXPORTER, tmp_path)
    now = [100.0]
    ib = InfinibandCollector(str(root), clock=lambda: now[0])
    ib.sample()
    path = sysfs_tree.port(root, "mlx4_0") / "counters_ext" / "port_rcv_data_64"
    sysfs_tree.write(path, int(path.read_text()) + 1_000_000)
    now[0] += 10.0
    port = by_name(ib.sample())["mlx4_0:1"]
    assert port["rx_bytes_per_s"] == 4_000_000 / 10.0
    assert port["tx_bytes_per_s"] == 0.0  # its transmit counter did not move


def test_counters_are_read_every_few_seconds_and_state_every_sample(tmp_path):
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    now = [100.0]
    ib = InfinibandCollector(str(root), clock=lambda: now[0])
    ib.sample()
    now[0] += 1.0  # one sample later: the counters' refresh is not due
    sysfs_tree.add_to_counter(root, "mlx5_0", "symbol_error", 7)
    sysfs_tree.take_down(root, "mlx5_0")
    port = by_name(ib.sample())["mlx5_0:1"]
    assert (port["state"], port["phys_state"]) == ("DOWN", "Polling")  # at once
    assert port["symbol_errors_total"] == 0  # the last counter reading, repeated


def test_roce_port_names_its_netdev(tmp_path):
    """The captures hold no RoCE port: this test gives procfs's mlx5_0 an Ethernet link layer
    and the ``device/net/<if>`` entry a RoCE HCA has (real sysfs: ``device`` is the PCI device)."""
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    sysfs_tree.write(sysfs_tree.port(root, "mlx5_0") / "link_layer", "Ethernet")
    sysfs_tree.write(root / "class/infiniband/mlx5_0/device/net/ens1f0np0/dev_port", "0")
    sysfs_tree.write(root / "class/infiniband/mlx4_0/device/net/ib0/dev_port", "0")
    sysfs_tree.write(root / "class/infiniband/mlx4_0/device/net/ib1/dev_port", "1")
    ports = by_name(InfinibandCollector(str(root)).sample())
    assert (ports["mlx5_0:1"]["link_layer"], ports["mlx5_0:1"]["netdev"]) == ("Ethernet", "ens1f0np0")
    assert (ports["mlx4_0:1"]["netdev"], ports["mlx4_0:2"]["netdev"]) == ("ib0", "ib1")


def test_a_node_without_an_rdma_driver_reports_no_port(tmp_path):
    assert InfinibandCollector(str(tmp_path)).sample() == []


def test_the_whole_probe_reads_its_sysfs_root_for_nics_disks_and_hcas(tmp_path):
    """One sysfs root for every read: the HCA capture plus an empty net/ and block/ (the probe
    then lists no NIC and no disk, where the machine's own /sys has several)."""
    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path)
    (root / "class" / "net").mkdir()
    (root / "block").mkdir()
    collector = Collector(1.0, sys_dir=str(root))
    try:
        facts = collector.facts()
        sample = collector.sample()
    finally:
        collector.close()
    assert facts["nics"] == [] and facts["block_devices"] == []
    assert [p["name"] for p in sample["ib_ports"]] == ["hfi1_0:1", "mlx4_0:1", "mlx4_0:2", "mlx5_0:1"]


def test_sysfs_reaches_the_probe_as_an_argument_quoted_for_the_shell():
    assert parse_args(["--interval", "1.0", "--sysfs", "/host/sys"]).sysfs == "/host/sys"
    assert parse_args(["--interval", "1.0"]).sysfs == "/sys"
    assert "--sysfs" not in bundle.probe_args(1.0)  # the default is not spelled out
    command = bundle.ssh_command(1.0, 30.0, sysfs="/host/my sys")
    assert command.endswith("--stdin-watchdog 30.0 --sysfs '/host/my sys'")


def test_sysfs_file_formats():
    assert parse_state("4: ACTIVE") == "ACTIVE" and parse_state("5: LinkUp") == "LinkUp"
    assert parse_state("") is None and parse_state(None) is None
    assert parse_rate("400 Gb/sec (4X NDR)") == (400.0, "4X NDR")
    assert parse_rate("2.5 Gb/sec (1X SDR)") == (2.5, "1X SDR")
    assert parse_rate("garbage") == (None, None)


def test_probe_sysfs_from_the_config_reaches_the_local_transport(tmp_path):
    """``dltui snapshot`` of this machine with ``[probe] sysfs`` at procfs's captured tree (plus
    an empty net/ and block/): the in-process probe lists the tree's HCA ports and none of this
    machine's NICs or disks among the facts (interface rates come from /proc, not sysfs)."""
    import json
    import os
    import subprocess
    import sys

    root = sysfs_tree.unpack(sysfs_tree.PROCFS, tmp_path / "host-sys")
    (root / "class" / "net").mkdir()
    (root / "block").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'[probe]\nsysfs = "{root}"\n')
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    env.pop("DLTUI_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "--json", "--seconds", "1", "--interval", "0.5",
         "--config", str(config)],
        capture_output=True, text=True, timeout=60, env=env, cwd=str(sysfs_tree.FIXTURES.parents[2]),
    )
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["name"] == "localhost"
    assert [p["name"] for p in node["sample"]["ib_ports"]] == ["hfi1_0:1", "mlx4_0:1", "mlx4_0:2", "mlx5_0:1"]
    assert node["facts"]["nics"] == [] and node["facts"]["block_devices"] == []


def test_probe_sysfs_must_be_an_absolute_path(tmp_path):
    import pytest

    from dltui.config import ConfigError, load

    config = tmp_path / "config.toml"
    config.write_text('[probe]\nsysfs = "host/sys"\n')
    with pytest.raises(ConfigError, match=r'\[probe\] sysfs must be an absolute path such as "/host/sys"'):
        load(str(config))
    config.write_text('[probe]\nsysfs_root = "/host/sys"\n')
    with pytest.raises(ConfigError, match=r"\[probe\] unknown key 'sysfs_root' \(did you mean 'sysfs'\?\)"):
        load(str(config))
