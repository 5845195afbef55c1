"""HostCollector on this machine's real /proc and /sys, and its rate arithmetic on real
counters (tests/fixtures/proc)."""

import os
import threading
import time
from pathlib import Path

import pytest

from dltui.core.models import BlockDeviceFacts, NicFacts, NodeFacts
from dltui.node.probe import host
from dltui.node.probe.files import READ_CHUNK
from dltui.node.probe.host import (
    BoundedStatvfs,
    HostCollector,
    cpu_percents,
    disk_record,
    network_record,
    watched_mounts,
)
from dltui.node.probe.problems import Problems
from dltui.node.probe.procfs import parse_diskstats, parse_mounts, parse_net_dev, parse_stat
from dltui.node.schema import RECORD_FIELDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "proc"
RATE_FIELDS = {
    "cpu": ("total_percent", "user_percent", "system_percent", "iowait_percent", "steal_percent"),
    "disk": ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops", "busy_percent",
             "queue_depth"),
    "network": ("rx_bytes_per_s", "tx_bytes_per_s", "rx_packets_per_s", "tx_packets_per_s"),
}


@pytest.fixture(scope="module")
def real_samples():
    """Two samples of the real host, 0.3 s apart, and the problems they raised."""
    problems = Problems()
    collector = HostCollector(problems)
    first = collector.sample()
    time.sleep(0.3)
    second = collector.sample()
    collector.close()
    return first, second, problems.drain()


def assert_records_match_schema(sample):
    assert set(sample) == {"cpu", "memory", "pressure", "tasks", "disks", "filesystems", "networks"}
    cpu = dict(sample["cpu"])
    cores = cpu.pop("cores")
    assert tuple(cpu) == RECORD_FIELDS["cpu"]
    for core in cores:
        assert tuple(core) == RECORD_FIELDS["core"]
    for kind in ("memory", "tasks", "pressure"):
        if sample[kind] is not None:
            assert tuple(sample[kind]) == RECORD_FIELDS[kind]
    lists = (("disks", "disk"), ("filesystems", "filesystem"), ("networks", "network"))
    for list_name, kind in lists:
        for record in sample[list_name]:
            assert tuple(record) == RECORD_FIELDS[kind]


def test_real_samples_have_exactly_the_schema_fields(real_samples):
    first, second, problems = real_samples
    assert problems == []
    assert_records_match_schema(first)
    assert_records_match_schema(second)


def test_first_sample_has_no_rates_second_has(real_samples):
    first, second, _ = real_samples
    for name in RATE_FIELDS["cpu"]:
        assert first["cpu"][name] is None
        assert isinstance(second["cpu"][name], float)
        assert all(core[name] is None for core in first["cpu"]["cores"])
        assert all(isinstance(core[name], float) for core in second["cpu"]["cores"])
    for list_name, kind in (("disks", "disk"), ("networks", "network")):
        for record in first[list_name]:
            assert all(record[name] is None for name in RATE_FIELDS[kind])
        # a device that appeared between the two (another test's veth on a shared machine)
        # has no earlier reading: only those seen twice have rates
        before = {r["name"] for r in first[list_name]}
        again = [r for r in second[list_name] if r["name"] in before]
        assert again, list_name
        for record in again:
            assert all(isinstance(record[name], (int, float)) for name in RATE_FIELDS[kind])


def test_real_cpu_percentages(real_samples):
    cpu = real_samples[1]["cpu"]
    stat = parse_stat(Path("/proc/stat").read_text())
    assert [core["index"] for core in cpu["cores"]] == sorted(stat["cores"])
    for record in [cpu] + cpu["cores"]:
        for name in RATE_FIELDS["cpu"]:
            assert 0.0 <= record[name] <= 100.0
        # system includes irq and softirq, so the parts add up to the total (to rounding)
        parts = record["user_percent"] + record["system_percent"] + record["steal_percent"]
        assert abs(parts - record["total_percent"]) <= 0.2
    assert cpu["load_1"] >= 0.0


def test_real_memory_total_is_meminfo_mem_total(real_samples):
    mem_total_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    memory = real_samples[1]["memory"]
    assert memory["total_bytes"] == mem_total_kb * 1024
    assert 0 < memory["used_bytes"] < memory["total_bytes"]
    assert 0 < memory["available_bytes"] <= memory["total_bytes"]


def test_real_tasks(real_samples):
    tasks = real_samples[1]["tasks"]
    assert tasks["running"] >= 1  # this test is running
    assert tasks["blocked_io"] >= 0
    assert tasks["d_state_processes"] >= 0


def test_real_pressure_is_none_exactly_when_the_kernel_has_no_psi(real_samples):
    pressure = real_samples[1]["pressure"]
    if os.path.exists("/proc/pressure/io"):
        assert 0.0 <= pressure["io_some_avg10_percent"] <= 100.0
        assert 0.0 <= pressure["memory_full_avg60_percent"] <= 100.0
    else:
        assert pressure is None


def test_real_disks_are_whole_devices(real_samples):
    names = [disk["name"] for disk in real_samples[1]["disks"]]
    block = set(os.listdir("/sys/block"))
    in_diskstats = set(parse_diskstats(Path("/proc/diskstats").read_text()))
    physical = {
        name
        for name in block
        if (Path("/sys/block", name, "device")).exists()
        and int(Path("/sys/block", name, "size").read_text()) > 0
        and not name.startswith(("sr", "fd"))
    }
    assert physical <= set(names) <= block & in_diskstats
    assert not [n for n in names if n.startswith(("loop", "ram", "zram"))]
    for disk in real_samples[1]["disks"]:
        assert 0.0 <= disk["busy_percent"] <= 100.0


def test_real_networks_are_every_interface_but_lo(real_samples):
    expected = set(parse_net_dev(Path("/proc/net/dev").read_text())) - {"lo"}
    networks = real_samples[1]["networks"]
    assert {n["name"] for n in networks} == expected
    for record in networks:
        assert record["rx_bytes_per_s"] >= 0
        assert record["rx_errors_total"] >= 0


def test_real_root_filesystem_matches_statvfs(real_samples):
    by_mountpoint = {fs["mountpoint"]: fs for fs in real_samples[1]["filesystems"]}
    root = by_mountpoint["/"]
    stats = os.statvfs("/")
    assert root["total_bytes"] == stats.f_blocks * stats.f_frsize
    assert 0.0 <= root["used_percent"] <= 100.0
    shm_is_tmpfs = any(
        m.mountpoint == "/dev/shm" and m.fstype == "tmpfs"
        for m in parse_mounts(Path("/proc/self/mounts").read_text())
    )
    assert ("/dev/shm" in by_mountpoint) == shm_is_tmpfs
    assert len(by_mountpoint) == len(real_samples[1]["filesystems"])  # no mount point twice


def test_real_facts():
    problems = Problems()
    collector = HostCollector(problems)
    facts = collector.facts()
    disks = [d["name"] for d in collector.sample()["disks"]]
    collector.close()
    assert problems.drain() == []
    node_fields = set(NodeFacts.__dataclass_fields__)
    assert set(facts) <= node_fields
    assert facts["hostname"] == os.uname().nodename
    assert facts["kernel"] == os.uname().release
    stat = parse_stat(Path("/proc/stat").read_text())
    assert facts["cpu_count"] == len(stat["cores"])
    assert facts["boot_time"] == stat["btime"]
    mem_total_kb = int(Path("/proc/meminfo").read_text().split("\n")[0].split()[1])
    assert facts["memory_total_bytes"] == mem_total_kb * 1024
    assert facts["python"].count(".") == 2
    if os.path.exists("/etc/os-release"):
        assert facts["os"]
    assert sorted(disks) == [b["name"] for b in facts["block_devices"]]
    for device in facts["block_devices"]:
        assert set(device) == set(BlockDeviceFacts.__dataclass_fields__)
        sectors = int(Path("/sys/block", device["name"], "size").read_text())
        assert device["size_bytes"] == sectors * 512
        assert isinstance(device["rotational"], bool)
    interfaces = sorted(set(os.listdir("/sys/class/net")) - {"lo"})
    assert [nic["name"] for nic in facts["nics"]] == interfaces
    for nic in facts["nics"]:
        assert set(nic) == set(NicFacts.__dataclass_fields__)
        assert nic["mtu"] == int(Path("/sys/class/net", nic["name"], "mtu").read_text())
        assert nic["speed_mbps"] is None or nic["speed_mbps"] >= 0
    assert NodeFacts.from_dict(facts).hostname == facts["hostname"]


# ---- a broken source on a copy of the real /proc ---------------------------------------


def copy_of_proc(tmp_path, leave_out=()):
    """A directory with copies of the real /proc files the collector reads."""
    names = ["stat", "loadavg", "meminfo", "diskstats", "net/dev", "self/mounts"]
    for resource in ("cpu", "io", "memory"):
        if os.path.exists("/proc/pressure/" + resource):
            names.append("pressure/" + resource)
    for name in names:
        if name.split("/")[0] in leave_out or name in leave_out:
            continue
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path("/proc", name).read_bytes())
    return tmp_path


def test_missing_diskstats_is_reported_once_and_the_rest_still_comes(tmp_path):
    proc = copy_of_proc(tmp_path, leave_out=("diskstats",))
    problems = Problems()
    collector = HostCollector(problems, proc=str(proc))
    sample = collector.sample()
    reported = problems.drain()
    assert [source for source, _ in reported] == ["disks"]
    assert "diskstats" in reported[0][1]
    assert sample["disks"] == []
    assert sample["cpu"]["load_1"] is not None
    assert len(sample["cpu"]["cores"]) == len(parse_stat((proc / "stat").read_text())["cores"])
    assert sample["memory"]["total_bytes"] > 0
    interfaces = set(parse_net_dev((proc / "net/dev").read_text())) - {"lo"}
    assert {n["name"] for n in sample["networks"]} == interfaces
    assert "/" in [fs["mountpoint"] for fs in sample["filesystems"]]
    assert sample["tasks"]["d_state_processes"] is None  # the first scan comes with the second sample
    assert_records_match_schema(sample)

    assert collector.sample()["tasks"]["d_state_processes"] == 0  # no process directories in the copy
    assert problems.drain() == []  # still broken, not reported again

    (proc / "diskstats").write_bytes(Path("/proc/diskstats").read_bytes())
    recovered = collector.sample()["disks"]
    collector.close()
    assert "disks" not in problems.active
    real_collector = HostCollector(Problems())
    real = real_collector.sample()["disks"]
    real_collector.close()
    assert [d["name"] for d in recovered] == [d["name"] for d in real]
    for disk in recovered:  # no previous reading to take a rate from
        assert all(disk[name] is None for name in RATE_FIELDS["disk"])


def test_no_psi_on_the_kernel_means_pressure_none_not_zeros(tmp_path):
    proc = copy_of_proc(tmp_path, leave_out=("pressure",))
    problems = Problems()
    collector = HostCollector(problems, proc=str(proc))
    sample = collector.sample()
    collector.close()
    assert sample["pressure"] is None
    assert problems.drain() == []


# ---- rates from real counters ---------------------------------------------------------


def test_cpu_percents_from_real_counters():
    previous = parse_stat((FIXTURES / "node-exporter_stat").read_text())["cpu"]
    current = previous._replace(
        user=previous.user + 30,
        nice=previous.nice + 10,
        system=previous.system + 15,
        idle=previous.idle + 100,
        iowait=previous.iowait + 20,
        irq=previous.irq + 5,
        softirq=previous.softirq + 10,
        steal=previous.steal + 10,
    )
    assert cpu_percents(previous, current) == {
        "total_percent": 40.0,
        "user_percent": 20.0,
        "system_percent": 15.0,
        "iowait_percent": 10.0,
        "steal_percent": 5.0,
    }
    # proc(5): iowait can decrease; a backwards counter counts as 0, not negative
    backwards = current._replace(iowait=previous.iowait - 3)
    assert cpu_percents(previous, backwards)["iowait_percent"] == 0.0
    assert cpu_percents(None, current)["total_percent"] is None


def test_disk_rates_from_real_counters():
    text = (FIXTURES / "almalinux10-k6.12_diskstats_nvme-md-17fields").read_text()
    previous = parse_diskstats(text)["nvme1n1"]
    current = previous._replace(
        reads=previous.reads + 100,
        read_sectors=previous.read_sectors + 2048,
        read_ms=previous.read_ms + 50,
        writes=previous.writes + 20,
        write_sectors=previous.write_sectors + 160,
        write_ms=previous.write_ms + 10,
        io_ticks_ms=previous.io_ticks_ms + 250,
        time_in_queue_ms=previous.time_in_queue_ms + 600,
    )
    assert disk_record("nvme1n1", current, previous, 0.5) == {
        "name": "nvme1n1",
        "read_bytes_per_s": 2097152,
        "write_bytes_per_s": 163840,
        "read_iops": 200.0,
        "write_iops": 40.0,
        "busy_percent": 50.0,
        "queue_depth": 1.2,
        "await_ms": 0.5,  # (50 + 10) ms / 120 I/Os
    }
    idle = disk_record("nvme1n1", previous, previous, 1.0)
    assert idle["await_ms"] is None  # no I/O completed: no latency to speak of
    assert idle["busy_percent"] == 0.0
    replaced = disk_record("nvme1n1", previous, current, 1.0)  # counters went backwards
    assert replaced["read_bytes_per_s"] is None


def test_network_rates_from_real_counters():
    text = (FIXTURES / "almalinux10-k6.12_net-dev_wireguard-podman").read_text()
    previous = parse_net_dev(text)["wg0"]
    current = previous._replace(
        rx_bytes=previous.rx_bytes + 1250000,
        tx_bytes=previous.tx_bytes + 2500,
        rx_packets=previous.rx_packets + 1000,
        tx_packets=previous.tx_packets + 3,
    )
    assert network_record("wg0", current, previous, 2.0) == {
        "name": "wg0",
        "rx_bytes_per_s": 625000,
        "tx_bytes_per_s": 1250,
        "rx_packets_per_s": 500.0,
        "tx_packets_per_s": 1.5,
        "rx_errors_total": 430,
        "tx_errors_total": 790,
        "rx_drops_total": 0,
        "tx_drops_total": 1981,
    }
    first = network_record("wg0", current, None, 0.0)
    assert first["rx_bytes_per_s"] is None
    assert first["tx_drops_total"] == 1981


# ---- which file systems --------------------------------------------------------------


def test_watched_mounts_keep_storage_once_and_skip_pseudo_file_systems():
    mounts = parse_mounts(
        "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n"
        "proc /proc proc rw 0 0\n"
        "tmpfs /dev/shm tmpfs rw 0 0\n"
        "tmpfs /run tmpfs rw 0 0\n"
        "tmpfs /tmp tmpfs rw 0 0\n"
        "/dev/nvme0n1p2 /var/lib/docker ext4 rw,relatime 0 0\n"
        "/dev/md0 /srv/data\\040set xfs rw 0 0\n"
        "/dev/md0 /data xfs rw 0 0\n"
        "nas:/export/datasets /mnt/datasets nfs4 rw 0 0\n"
        "nas:/export/datasets /var/lib/kubelet/pods/p/volumes/nfs nfs4 rw 0 0\n"
        "JuiceFS:ckpt /mnt/jfs fuse.juicefs rw 0 0\n"
        "lxcfs /var/lib/lxcfs fuse.lxcfs rw 0 0\n"
        "overlay /var/lib/docker/overlay2/abc/merged overlay rw 0 0\n"
        "systemd-1 /mnt/auto autofs rw 0 0\n"
        "tank/home /home zfs rw 0 0\n"
        "/dev/sdb1 /tmp ext4 rw 0 0\n"
    )
    watched = [(m.mountpoint, m.device, may_hang) for m, may_hang in watched_mounts(mounts)]
    assert watched == [
        ("/", "/dev/nvme0n1p2", False),
        ("/dev/shm", "tmpfs", False),
        ("/tmp", "/dev/sdb1", False),  # the later mount hides the tmpfs under it
        ("/data", "/dev/md0", False),  # shortest of the two mount points of md0
        ("/mnt/datasets", "nas:/export/datasets", True),
        ("/mnt/jfs", "JuiceFS:ckpt", True),
        ("/home", "tank/home", False),
    ]


def test_overlay_root_is_kept_in_a_container():
    mounts = parse_mounts("overlay / overlay rw,lowerdir=/a,upperdir=/b 0 0\n")
    assert [(m.mountpoint, hang) for m, hang in watched_mounts(mounts)] == [("/", False)]


def test_bounded_statvfs_gives_up_on_a_hung_call_fake_hang(monkeypatch):
    """A hung NFS server is faked by an os.statvfs that blocks until released."""
    release = threading.Event()
    real_statvfs = os.statvfs
    calls = []

    def hanging_statvfs(path):
        calls.append(path)
        release.wait()
        return real_statvfs("/")

    monkeypatch.setattr(host.os, "statvfs", hanging_statvfs)
    statvfs = BoundedStatvfs(timeout_s=0.05)
    with pytest.raises(TimeoutError, match="statvfs /mnt/nfs timed out"):
        statvfs("/mnt/nfs")
    with pytest.raises(TimeoutError, match="statvfs /mnt/nfs timed out"):
        statvfs("/mnt/nfs")
    assert calls == ["/mnt/nfs"]  # the second call did not start another stuck thread
    release.set()
    while [t for t in threading.enumerate() if t.name == "statvfs /mnt/nfs"]:
        time.sleep(0.01)
    assert statvfs("/mnt/nfs").f_blocks == real_statvfs("/").f_blocks
    assert calls == ["/mnt/nfs", "/mnt/nfs"]


def test_statvfs_timeout_is_reported_once_per_mount_fake_hang(tmp_path, monkeypatch):
    """The collector keeps sampling past a hung network mount and says so once."""
    proc = copy_of_proc(tmp_path)
    (proc / "self/mounts").write_text(
        (proc / "self/mounts").read_text() + "nas:/export /mnt/hung nfs4 rw 0 0\n"
    )
    release = threading.Event()
    real_statvfs = os.statvfs

    def statvfs(path):
        if path == "/mnt/hung":
            release.wait()
        return real_statvfs(path)

    monkeypatch.setattr(host.os, "statvfs", statvfs)
    monkeypatch.setattr(host, "STATVFS_TIMEOUT_S", 0.05)
    problems = Problems()
    collector = HostCollector(problems, proc=str(proc))
    try:
        for _ in range(3):
            sample = collector.sample()
        hung = [fs for fs in sample["filesystems"] if fs["mountpoint"] == "/mnt/hung"]
        assert hung == [
            {
                "mountpoint": "/mnt/hung",
                "device": "nas:/export",
                "fstype": "nfs4",
                "total_bytes": None,
                "used_bytes": None,
                "available_bytes": None,
                "used_percent": None,
                "inodes_used_percent": None,
            }
        ]
        assert problems.drain() == [("statvfs /mnt/hung", "statvfs /mnt/hung timed out")]
        assert sample["memory"]["total_bytes"] > 0
    finally:
        collector.close()
        release.set()


def test_filesystem_percentages_count_only_what_non_root_can_use():
    """df(1) arithmetic: root's reserved blocks and inodes are neither used nor available."""
    import collections

    from dltui.node.probe.host import filesystem_record
    from dltui.node.probe.procfs import parse_mounts

    mount = parse_mounts("/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n")[0]
    Stat = collections.namedtuple("Stat", "f_frsize f_blocks f_bfree f_bavail f_files f_ffree f_favail")
    # 1000 blocks, 100 free of which 50 reserved for root; 1000 inodes, 200 free, 150 for non-root
    rec = filesystem_record(mount, Stat(4096, 1000, 100, 50, 1000, 200, 150))
    assert rec["used_bytes"] == 900 * 4096
    assert rec["available_bytes"] == 50 * 4096
    assert rec["used_percent"] == round(100 * 900 / 950, 1)
    assert rec["inodes_used_percent"] == round(100 * 800 / 950, 1)


def test_per_container_interfaces_are_not_shown_but_bridges_are():
    from dltui.node.probe.host import shown_nic

    assert [n for n in ("lo", "eth0", "docker0", "cni0", "veth1a2b", "cali12ab", "lxc9f", "tap0", "ib0", "bond0")
            if shown_nic(n)] == ["eth0", "docker0", "cni0", "ib0", "bond0"]


def test_network_mounts_are_asked_every_tenth_tick_and_repeated_between(tmp_path, monkeypatch):
    """Each ask of an NFS mount costs a thread; capacity moves slowly (os.statvfs counted)."""
    proc = copy_of_proc(tmp_path)
    (proc / "self/mounts").write_text((proc / "self/mounts").read_text() + "nas:/export /mnt/nas nfs4 rw 0 0\n")
    real_statvfs = os.statvfs
    asked = []

    def statvfs(path):
        if path == "/mnt/nas":
            asked.append(path)
            return real_statvfs("/")
        return real_statvfs(path)

    monkeypatch.setattr(host.os, "statvfs", statvfs)
    collector = HostCollector(Problems(), proc=str(proc))
    try:
        samples = [collector.sample() for _ in range(host.REMOTE_STATVFS_EVERY_TICKS + 1)]
    finally:
        collector.close()
    assert len(asked) == 2  # the first tick and the eleventh
    nas = [[fs for fs in s["filesystems"] if fs["mountpoint"] == "/mnt/nas"][0] for s in samples]
    assert all(rec == nas[0] for rec in nas[1:-1]) and nas[0]["total_bytes"] == real_statvfs("/").f_blocks * real_statvfs("/").f_frsize


def test_the_files_kept_open_are_read_whole_and_anew_every_tick(tmp_path):
    """The files read every tick stay open between ticks: each sample still reads what they
    say now, all of it (a /proc/stat of thousands of CPUs takes more than one read)."""
    proc = copy_of_proc(tmp_path)
    collector = HostCollector(Problems(), proc=str(proc))
    before = collector.sample()
    lines = (proc / "stat").read_text().splitlines()
    total = next(line for line in lines if line.startswith("cpu "))
    cores = [f"cpu{i} {total[3:].strip()}" for i in range(3000)]
    others = [line for line in lines if not line.startswith("cpu")]
    (proc / "stat").write_text("\n".join([total, *cores, *others]) + "\n")
    assert (proc / "stat").stat().st_size > READ_CHUNK
    meminfo = (proc / "meminfo").read_text().splitlines()
    meminfo[0] = "MemTotal:       1000000 kB"
    (proc / "meminfo").write_text("\n".join(meminfo) + "\n")
    after = collector.sample()
    collector.close()
    assert len(before["cpu"]["cores"]) == os.cpu_count()
    assert [c["index"] for c in after["cpu"]["cores"]] == list(range(3000))
    assert after["memory"]["total_bytes"] == 1000000 * 1024
