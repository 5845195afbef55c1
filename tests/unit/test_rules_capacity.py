"""Capacity rules: GPU memory, host memory, file systems (including /dev/shm)."""

from dltui import snapshot
from tests.unit.rules_support import Rig, busy_gpu, filesystem, pressure

TIB = 1 << 40


def memory(available_percent, swap_used=0):
    available = int(TIB * available_percent / 100)
    return {
        "total_bytes": TIB, "used_bytes": TIB - available, "available_bytes": available, "cached_bytes": 0,
        "buffers_bytes": 0, "shmem_bytes": 0, "swap_total_bytes": 8 << 30, "swap_used_bytes": swap_used,
    }


def test_full_gpu_memory_is_only_info():
    rig = Rig()
    rig.run(65, [busy_gpu(0, memory_used_mib=80000)])
    alert = rig.alert("gpu_memory_full")
    assert (alert.severity, alert.message) == (
        "info",
        "GPU memory 98 % used (80000 of 81559 MiB) for 1m00s — caching allocators hold memory on purpose: act only on out-of-memory errors",
    )
    assert snapshot.exit_code(rig.fleet) == 0


def test_host_memory_nearly_gone_warns_and_memory_stalls_are_critical():
    rig = Rig()
    rig.run(36, [busy_gpu(0)], memory=memory(3.0, swap_used=2 << 30))
    alert = rig.alert("host_memory_low", None)
    assert alert.severity == "warning"
    assert alert.message.startswith("3.0 % of memory available (30.7G of 1.0T), memory pressure full avg10 0 %, swap 2.0G used for 35s — the OOM killer is near")
    rig.run(36, [busy_gpu(0)], memory=memory(3.0), pressure=pressure(memory_full=9))
    assert rig.alert("host_memory_low", None).severity == "critical"
    rig.run(30, [busy_gpu(0)], memory=memory(6.0))  # inside the band: stays
    assert rig.alert("host_memory_low", None) is not None
    rig.run(65, [busy_gpu(0)], memory=memory(20.0))
    assert rig.alert("host_memory_low", None) is None


def test_a_filling_root_warns_and_a_full_dev_shm_is_critical_with_its_own_advice():
    rig = Rig()
    rig.run(65, [busy_gpu(0)], filesystems=[filesystem("/", 91.0), filesystem("/dev/shm", 40.0, fstype="tmpfs")])
    alert = rig.alert("filesystem_full", None)
    assert (alert.severity, alert.message) == ("warning", "/ 91 % used for 1m00s — free space or grow the file system")
    rig.run(65, [busy_gpu(0)], filesystems=[filesystem("/", 91.0), filesystem("/dev/shm", 96.0, fstype="tmpfs")])
    alert = rig.alert("filesystem_full", None)
    assert alert.severity == "critical"
    assert alert.message.startswith("/ 91 % used; /dev/shm 96 % used for ")
    assert "DataLoader workers pass batches through /dev/shm and die with a bus error when it fills" in alert.message


def test_inodes_count_as_used_space():
    rig = Rig()
    rig.run(65, [busy_gpu(0)], filesystems=[filesystem("/data", 50.0, inodes_used_percent=97.0)])
    assert rig.alert("filesystem_full", None).message.startswith("/data 97 % of inodes used")


def test_a_file_system_that_will_be_full_within_the_hour_is_critical():
    total = 1 << 40

    def filling(t):  # 40 % of 1 TiB used, writing 400 MB/s: full within the hour
        used = int(0.4 * total + 4e8 * t)
        return {"filesystems": [filesystem("/ckpt", 100 * used / total, total_bytes=total)]}

    rig = Rig()
    rig.run(580, [busy_gpu(0)], hosts=filling)
    assert rig.alert("filesystem_full", None) is None  # a burst is not a trend: 10 min of it is
    rig.run(70, [busy_gpu(0)], hosts=lambda t: filling(t + 580))
    alert = rig.alert("filesystem_full", None)
    assert alert.severity == "critical"
    assert alert.message == "/ckpt 63 % used, full in ~16m44s at 381M/s for 1m15s — free space or grow the file system"


def test_a_file_system_below_the_thresholds_is_quiet():
    rig = Rig()
    rig.run(400, [busy_gpu(0)], filesystems=[filesystem("/", 85.0)])
    assert rig.alerts() == {}
