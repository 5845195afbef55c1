"""The /proc parsers on real captures from other machines (tests/fixtures/proc, see its
PROVENANCE.md) and on the odd cases the kernel really produces."""

from pathlib import Path

import pytest

from dltui.node.probe.host import memory_record
from dltui.node.probe.procfs import (
    SECTOR_BYTES,
    CpuTimes,
    parse_diskstats,
    parse_loadavg,
    parse_meminfo,
    parse_mounts,
    parse_net_dev,
    parse_pid_state,
    parse_pressure,
    parse_stat,
    unescape_octal,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "proc"


def fixture(name):
    return (FIXTURES / name).read_text()


def test_every_fixture_has_its_provenance():
    provenance = (FIXTURES / "PROVENANCE.md").read_text()
    files = sorted(p.name for p in FIXTURES.iterdir() if p.name != "PROVENANCE.md")
    assert len(files) == 8
    for name in files:
        assert "`%s`" % name in provenance


# ---- /proc/stat ---------------------------------------------------------------------------


def test_stat_eight_cpus_and_totals():
    stat = parse_stat(fixture("node-exporter_stat"))
    assert sorted(stat["cores"]) == [0, 1, 2, 3, 4, 5, 6, 7]
    # guest (44) and guest_nice (36) are left out: the kernel counts them in user and nice.
    assert stat["cpu"] == CpuTimes(301854, 612, 111922, 8979004, 3552, 2, 3944, 0)
    assert stat["cores"][7] == CpuTimes(29098, 268, 10164, 1139282, 555, 0, 31, 0)
    assert stat["procs_running"] == 2
    assert stat["procs_blocked"] == 0
    assert stat["btime"] == 1418183276


def test_loadavg():
    assert parse_loadavg("0.22 0.09 0.03 1/120 4242\n") == (0.22, 0.09, 0.03)


# ---- /proc/meminfo ------------------------------------------------------------------------


def test_meminfo_kernel_6_12_in_bytes():
    info = parse_meminfo(fixture("almalinux10-k6.12_meminfo"))
    assert info["MemTotal"] == 65429972 * 1024
    assert info["MemAvailable"] == 63242600 * 1024
    assert info["DirectMap1G"] == 55574528 * 1024
    assert info["HugePages_Total"] == 0  # a count, no unit: not multiplied


def test_meminfo_only_the_names_asked():
    info = parse_meminfo(fixture("almalinux10-k6.12_meminfo"), {"MemTotal", "Shmem"})
    assert info == {"MemTotal": 67000291328, "Shmem": 79704064}


def test_memory_record_uses_mem_available():
    record = memory_record(parse_meminfo(fixture("almalinux10-k6.12_meminfo")))
    assert record == {
        "total_bytes": 67000291328,
        "used_bytes": 2239868928,  # MemTotal - MemAvailable
        "available_bytes": 64760422400,
        "cached_bytes": 31819182080,  # Cached + SReclaimable, as free(1)
        "buffers_bytes": 1469366272,
        "shmem_bytes": 79704064,
        "swap_total_bytes": 34325131264,
        "swap_used_bytes": 0,
    }


def test_memory_record_without_mem_available_estimates_nothing():
    """Kernels before 3.14: available is unknown, used is free(1)'s older formula."""
    record = memory_record(parse_meminfo(fixture("node-exporter_meminfo")))
    assert record["available_bytes"] is None
    # (3742148 - 225472 free - 22040 buffers - 930888 cached - 44772 SReclaimable) kB
    assert record["used_bytes"] == 2579431424
    assert record["total_bytes"] == 3831959552
    assert record["cached_bytes"] == 999075840
    assert record["swap_used_bytes"] == 1063874560


# ---- /proc/diskstats ----------------------------------------------------------------------


def test_diskstats_20_columns_nvme_and_md():
    disks = parse_diskstats(fixture("almalinux10-k6.12_diskstats_nvme-md-17fields"))
    assert len(disks) == 11
    nvme = disks["nvme1n1"]
    assert nvme.reads == 389347453
    assert nvme.read_sectors * SECTOR_BYTES == 26880702768128
    assert nvme.write_sectors * SECTOR_BYTES == 383259947008
    assert (nvme.read_ms, nvme.write_ms) == (436688967, 7724419)
    assert (nvme.io_ticks_ms, nvme.time_in_queue_ms) == (9630357, 444432805)
    assert disks["md0"].reads == 100
    assert disks["md0"].read_sectors == 4704


def test_diskstats_14_18_and_20_columns_all_parsed():
    text = fixture("node-exporter_diskstats_mixed-field-counts")
    disks = parse_diskstats(text)
    assert len(disks) == len(text.splitlines()) == 51
    sda = disks["sda"]  # 14 columns
    assert sda.read_sectors * SECTOR_BYTES == 513713216512
    assert (sda.reads, sda.writes, sda.write_sectors) == (25354637, 28444756, 505697032)
    assert (sda.io_ticks_ms, sda.time_in_queue_ms) == (9653880, 82621804)
    sdb = disks["sdb"]  # 18 columns
    assert sdb.read_sectors * SECTOR_BYTES == 4944782848
    assert (sdb.io_ticks_ms, sdb.time_in_queue_ms) == (60730, 67070)
    sdc = disks["sdc"]  # 20 columns
    assert sdc.read_sectors * SECTOR_BYTES == 848782848
    assert (sdc.reads, sdc.io_ticks_ms, sdc.time_in_queue_ms) == (126552, 10730, 17070)


def test_diskstats_names_filter():
    disks = parse_diskstats(fixture("node-exporter_diskstats_mixed-field-counts"), {"vda", "sr0"})
    assert sorted(disks) == ["sr0", "vda"]
    assert disks["vda"].writes == 6038856


# ---- /proc/net/dev ------------------------------------------------------------------------


def test_net_dev_names_without_space_after_colon():
    nics = parse_net_dev(fixture("almalinux10-k6.12_net-dev_wireguard-podman"))
    assert list(nics)[:4] == ["lo", "eno1", "wg0", "podman0"]
    assert len(nics) == 12
    podman = nics["podman0"]
    assert (podman.rx_bytes, podman.rx_packets) == (7170041319, 27941108)
    assert (podman.tx_bytes, podman.tx_packets) == (6204523344, 32919695)
    assert nics["compute0"].tx_bytes == 23647084827
    wg = nics["wg0"]
    assert (wg.rx_errors, wg.rx_drops, wg.tx_errors, wg.tx_drops) == (430, 0, 790, 1981)
    assert nics["eno1"].tx_drops == 6


def test_net_dev_docker_host():
    nics = parse_net_dev(fixture("procfs_net-dev_docker-host"))
    assert list(nics) == ["vethf345468", "lo", "docker0", "eth0"]
    eth0 = nics["eth0"]
    assert (eth0.rx_bytes, eth0.rx_packets, eth0.tx_bytes, eth0.tx_packets) == (
        874354587,
        1036395,
        563352563,
        732147,
    )
    assert nics["vethf345468"].rx_bytes == 648


# ---- /proc/pressure -----------------------------------------------------------------------


def test_pressure_io_some_and_full():
    psi = parse_pressure(fixture("node-exporter_pressure-io"))
    assert psi["some"] == {"avg10": 0.18, "avg60": 0.34, "avg300": 0.10, "total": 159886802}
    assert psi["full"]["total"] == 159229614


def test_pressure_cpu_with_only_some():
    """/proc/pressure/cpu before kernel 5.13 has no ``full`` line."""
    psi = parse_pressure("some avg10=1.50 avg60=0.80 avg300=0.20 total=98765432\n")
    assert psi == {"some": {"avg10": 1.5, "avg60": 0.8, "avg300": 0.2, "total": 98765432}}


# ---- /proc/self/mounts and /proc/<pid>/stat -----------------------------------------------


def test_mounts_octal_escapes():
    mounts = parse_mounts(
        "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
        "/dev/md0 /srv/data\\040set xfs rw,noatime 0 0\n"
        "//nas/share /mnt/tab\\011and\\134slash cifs rw 0 0\n"
    )
    assert [m.mountpoint for m in mounts] == ["/", "/srv/data set", "/mnt/tab\tand\\slash"]
    assert mounts[1].device == "/dev/md0"
    assert mounts[1].fstype == "xfs"
    assert mounts[2].options == "rw"


@pytest.mark.parametrize(
    "field, expected",
    [("plain", "plain"), ("a\\040b", "a b"), ("new\\012line", "new\nline"), ("\\9", "\\9")],
)
def test_unescape_octal(field, expected):
    assert unescape_octal(field) == expected


def test_pid_state_after_the_last_parenthesis():
    """A command name may hold spaces and parentheses: ``(a) R (b))`` is all comm."""
    line = "4242 (a) R (b)) D 1 4242 4242 0 -1 4194560 120 0 0 0 5 3 0 0 20 0 1 0 5000"
    assert parse_pid_state(line) == "D"
    assert parse_pid_state(line.encode()) == b"D"
    assert parse_pid_state("1 (systemd) S 0 1 1 0 -1") == "S"
