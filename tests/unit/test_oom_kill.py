"""OOM kills: the kernel-log lines on the node, and ``host_memory_low`` going critical.

The kernel lines are the formats of mm/oom_kill.c (``Killed process`` since 4.19 with the
``Out of memory`` / ``Memory cgroup out of memory`` prefix; a bare line before). Where
journalctl's output is supplied by the test, the name says ``fake_journalctl``.
"""

import time

import pytest

from dltui.core.models import NodeEvent
from dltui.node.probe.kernel_log import KernelLog, parse_oom
from dltui.node.probe.problems import Problems
from dltui.node.schema import oom_event
from tests.unit.rules_support import Rig, busy_gpu
from tests.unit.test_rules_capacity import memory
from tests.unit.test_xid import FELL_OFF, FakeJournalctl, entry

GLOBAL = (
    "Out of memory: Killed process 48213 (python3) total-vm:412345678kB, anon-rss:201326592kB, "
    "file-rss:0kB, shmem-rss:1024kB, UID:1000 pgtables:401234kB oom_score_adj:0"
)
CGROUP = "Memory cgroup out of memory: Killed process 7781 (pt_data_worker) total-vm:9437184kB, anon-rss:4194304kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:8400kB oom_score_adj:0"
OLD_KERNEL = "Killed process 2211 (python) total-vm:31457280kB, anon-rss:20971520kB, file-rss:0kB"


@pytest.mark.parametrize(
    "line, parsed",
    [
        (GLOBAL, (48213, "python3", False, 192 << 30)),
        (CGROUP, (7781, "pt_data_worker", True, 4 << 30)),
        (OLD_KERNEL, (2211, "python", False, 20 << 30)),
        ("Out of memory (oom_kill_allocating_task): Killed process 99 (stress) total-vm:1kB", (99, "stress", False, None)),
        ("Out of memory: Kill process 2211 (python) score 912 or sacrifice child", None),  # the old line before the kill
        ("oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task=python3,pid=48213,uid=1000", None),  # same kill, counted once
        ("systemd[1]: session-4.scope: Killed process 1234 (bash) with signal SIGKILL.", None),  # not the OOM killer
        (FELL_OFF, None),
    ],
)
def test_oom_kill_lines_in_the_kernels_formats(line, parsed):
    assert parse_oom(line) == parsed


def test_the_reader_sends_xids_and_oom_kills_in_kernel_order_fake_journalctl():
    journal = FakeJournalctl([entry(1, "Linux version 6.1"), entry(2, CGROUP), entry(3, FELL_OFF), entry(4, "usb 1-1: new device")])
    log = KernelLog(Problems(), run=journal, poll_s=60)
    log.set_gpus([{"index": 3, "bus_id": "00000000:3B:00.0"}])
    events = log.events()
    assert log.first_poll.wait(10)
    events += log.events()
    log.close()
    assert [e["kind"] for e in events] == ["oom-kill", "xid"]
    oom = events[0]
    assert oom["severity"] == "critical" and oom["time"] == 1_700_000_002.0
    assert oom["message"] == (
        "OOM killer ended pt_data_worker (pid 7781) holding 4.0 GiB: a memory cgroup's limit (container, job or unit) ran out"
    )
    assert events[1]["gpu"] == 3


def kill(when, pid=48213, line_id=None):
    return NodeEvent.from_dict(oom_event(when, pid, "python3", False, 192 << 30, line_id=line_id))


def test_an_oom_kill_makes_host_memory_low_critical_even_with_memory_free_again():
    rig = Rig()
    rig.run(5, [busy_gpu(0)], memory=memory(40.0))
    rig.fleet.on_event("gpu01", kill(rig.clock.t - 2, line_id="boot-1/100"))
    rig.run(35, [busy_gpu(0)], memory=memory(40.0))
    alert = rig.alert("host_memory_low", None)
    assert alert.severity == "critical"
    assert alert.message.startswith(
        "OOM killer ended python3 (pid 48213) holding 192.0 GiB: the node's memory ran out (32s ago), "
        "40 % of memory available again for 30s — "
    )
    assert alert.message.endswith("find what grew (DataLoader workers, pinned memory, /dev/shm); a cgroup kill is the job's or container's limit")
    # a second kill, and the first read again by a reconnect's backfill (same kernel line id)
    rig.fleet.on_event("gpu01", kill(rig.clock.t, pid=48999, line_id="boot-1/200"))
    rig.fleet.on_event("gpu01", kill(rig.clock.t - 37, line_id="boot-1/100"))
    rig.run(10, [busy_gpu(0)], memory=memory(40.0))
    assert rig.alert("host_memory_low", None).message.startswith("2 OOM kills in 10m00s, the latest: OOM killer ended python3 (pid 48999)")
    rig.run(600 + 65, [busy_gpu(0)], memory=memory(40.0))  # the window, then clear_s, pass with memory to spare
    assert rig.alert("host_memory_low", None) is None


def test_an_old_oom_kill_from_the_boots_backfill_is_history_not_an_alert():
    rig = Rig()
    rig.fleet.on_event("gpu01", kill(rig.clock.t - 3 * 3600, line_id="boot-1/5"))
    rig.run(65, [busy_gpu(0)], memory=memory(40.0))
    assert rig.alert("host_memory_low", None) is None
    assert any(e.kind == "oom-kill" for e in rig.node().timeline)  # still on the node's timeline


def test_the_probe_opens_the_kernel_log_on_every_node_but_only_after_its_first_samples(monkeypatch):
    from dltui.node.probe import collect

    monkeypatch.setattr(collect, "KERNEL_LOG_DELAY_S", 0.2)
    collector = collect.Collector(0.1)  # this machine: no NVIDIA driver, OOM kills still matter
    try:
        collector.facts()
        collector.sample()
        assert collector.events() == [] and collector.kernel_log is None  # the first sample goes out first
        deadline = time.monotonic() + 5
        while collector.kernel_log is None and time.monotonic() < deadline:
            time.sleep(0.05)
            collector.events()
        assert collector.kernel_log is not None
        assert collector.kernel_log.first_poll.wait(30)
    finally:
        collector.close()


def test_a_kill_while_memory_is_still_short_says_both():
    rig = Rig()
    rig.fleet.on_event("gpu01", kill(rig.clock.t, line_id="boot-1/7"))
    rig.run(35, [busy_gpu(0)], memory=memory(3.0, swap_used=2 << 30))
    message = rig.alert("host_memory_low", None).message
    assert message.startswith("OOM killer ended python3 (pid 48213) holding 192.0 GiB: the node's memory ran out (")
    assert "3.0 % of memory available (30.7G of 1.0T), memory pressure full avg10 0 %, swap 2.0G used for " in message
