"""XIDs: the table, the kernel-log reader on the node, and the ``xid`` alert in the engine.

Kernel lines below are in the formats real drivers print (NVIDIA's XID documentation and
bug reports). Where journalctl's output is supplied by the test, the name says ``fake_journalctl``.
"""

import json
import os
import subprocess

from dltui.core.models import GpuFacts, NodeEvent, NodeFacts
from dltui.node.probe.kernel_log import JournalSource, KernelLog, parse_kmsg_record, parse_line
from dltui.node.probe.problems import Problems
from dltui.node.schema import pci_key, xid_event
from dltui.node.xid import describe
from tests.unit.rules_support import Rig, busy_gpu

FELL_OFF = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
DOUBLE_BIT = "NVRM: Xid (PCI:0000:01:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error"
CHANNEL = "NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000009 intr 00800000"


def test_the_table_rates_xids_as_the_telemetry_notes_say():
    assert describe(79) == ("GPU has fallen off the bus", "critical", "power-cycle the node; check riser, seating and PSU")
    assert [describe(x).severity for x in (13, 31, 43, 45)] == ["info"] * 4
    assert [describe(x).severity for x in (8, 63, 92, 94, 154)] == ["warning"] * 5
    assert [describe(x).severity for x in (46, 48, 62, 64, 74, 95, 109, 119, 120, 140, 143)] == ["critical"] * 11
    assert {describe(x).meaning for x in range(144, 151)} == {"NVLink error"}
    assert describe(999) == ("unlisted XID", "warning", "look it up in NVIDIA's XID catalog")


def test_xid_lines_and_the_fallen_off_the_bus_line_without_a_number():
    assert parse_line(FELL_OFF) == ("0000:3b:00", 79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    assert parse_line("[ 1399.140323] " + CHANNEL) == ("0000:01:00", 32, "Channel ID 00000009 intr 00800000")
    assert parse_line("NVRM: Xid (PCI:0000:01:00): 79") == ("0000:01:00", 79, "")
    assert parse_line("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.") == ("0000:3b:00.0", 79, "GPU has fallen off the bus")
    assert parse_line("NVRM: GPU at PCI:0000:01:00: GPU-34d7319c-5b19-1e75-186d-c187099e4fe5") is None
    assert parse_line("EXT4-fs (vda): mounted filesystem") is None


def test_pci_ids_match_across_xid_lines_and_nvml_bus_ids():
    assert pci_key("0000:3b:00") == pci_key("00000000:3B:00.0") == pci_key("3b:00.0") == (0, 0x3B, 0)
    assert pci_key("0000:3b:00") != pci_key("0000:19:00")
    assert pci_key("garbage") is None and pci_key(None) is None


def test_an_event_names_the_gpu_the_meaning_and_the_action():
    event = xid_event(1700000000.1234, "0000:3b:00", 79, "GPU has fallen off the bus.", 3)
    assert event == {
        "time": 1700000000.123,
        "kind": "xid",
        "message": "XID 79 on GPU 3: GPU has fallen off the bus — power-cycle the node; check riser, seating and PSU",
        "gpu": 3,
        "severity": "critical",
        "data": {"xid": 79, "pci": "0000:3b:00", "detail": "GPU has fallen off the bus.", "id": None},
    }
    assert NodeEvent.from_dict(event).severity == "critical"
    assert xid_event(1.0, "0000:3b:00", 13, "", None)["message"].startswith("XID 13 on PCI 0000:3b:00: graphics engine exception")


def test_kmsg_records_split_into_boot_time_and_first_line():
    record = b"4,812,93112233,-;" + FELL_OFF.encode() + b"\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n"
    assert parse_kmsg_record(record) == (93.112233, FELL_OFF)
    assert parse_kmsg_record(b"no header here") is None


class FakeJournalctl:
    """Answers journalctl's argv like a journal holding ``entries`` (dicts as -o json prints)."""

    def __init__(self, entries, grep=True, stderr=""):
        self.entries = entries
        self.grep = grep
        self.stderr = stderr
        self.calls = []
        self.followers = []
        self.popen = _follow_popen(self)

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        if "--grep" in argv and not self.grep:
            return subprocess.CompletedProcess(argv, 1, "", "journalctl: unrecognized option '--grep'\n")
        chosen = self.entries
        if "--after-cursor" in argv:
            after = argv[argv.index("--after-cursor") + 1]
            chosen = chosen[[e["__CURSOR"] for e in chosen].index(after) + 1 :]
        if "--grep" in argv:
            chosen = [e for e in chosen if "NVRM" in e["MESSAGE"] or "Killed process" in e["MESSAGE"]]
        if "-n" in argv:
            chosen = chosen[-int(argv[argv.index("-n") + 1]) :]
        out = "".join(json.dumps(e) + "\n" for e in chosen)
        return subprocess.CompletedProcess(argv, 0 if chosen else 1 if "--grep" in argv else 0, out, self.stderr)


class FakeFollower:
    """``journalctl -f`` as Popen gives it: a real pipe the test writes entries into."""

    def __init__(self, entries):
        read_fd, self.write_fd = os.pipe()
        self.stdout = os.fdopen(read_fd, "rb", buffering=0)
        self.ended = False
        for e in entries:
            self.emit(e)

    def emit(self, e):
        os.write(self.write_fd, (json.dumps(e) + "\n").encode())

    def end(self):
        if not self.ended:
            self.ended = True
            os.close(self.write_fd)

    def poll(self):
        return 0 if self.ended else None

    def terminate(self):
        self.end()

    def wait(self, timeout=None):
        return 0


def _follow_popen(journal):
    def popen(argv, **kwargs):
        journal.calls.append(argv)
        after = argv[argv.index("--after-cursor") + 1]
        cursors = [e["__CURSOR"] for e in journal.entries]
        follower = FakeFollower(journal.entries[cursors.index(after) + 1 :])
        journal.followers.append(follower)
        return follower

    return popen


def entry(n, message):
    return {"__CURSOR": f"s=abc;i={n}", "__REALTIME_TIMESTAMP": str(1_700_000_000_000_000 + n * 1_000_000), "MESSAGE": message}


def test_journal_reads_this_boot_once_then_follows_after_its_cursor_fake_journalctl():
    journal = FakeJournalctl([entry(1, "Linux version 6.1"), entry(2, FELL_OFF), entry(3, "usb 1-1: new device")])
    source = JournalSource(journal, journal.popen)
    assert source.open() is None
    assert source.read() == [(1_700_000_002.0, FELL_OFF, None)]
    assert journal.calls[1][-3:] == ["-b", "--grep", "NVRM: (Xid|GPU .*fallen off the bus)|Killed process"]
    journal.entries.append(entry(4, DOUBLE_BIT))
    journal.entries.append(entry(5, "usb 1-2: new device"))
    # then one journalctl -f after the newest line open() saw: every kernel line, filtered by
    # the caller, so the cursor keeps up even when no XID comes
    assert source.read() == [(1_700_000_004.0, DOUBLE_BIT, None), (1_700_000_005.0, "usb 1-2: new device", None)]
    assert journal.calls[2][1:] == ["-k", "-f", "--no-tail", "-o", "json", "--no-pager", "--after-cursor", "s=abc;i=3"]
    assert source.read() == []
    journal.followers[0].emit(entry(6, CHANNEL))  # a line the kernel logs while it follows
    assert source.read() == [(1_700_000_006.0, CHANNEL, None)]
    assert len(journal.calls) == 3  # no journalctl per poll
    journal.followers[0].end()  # journalctl went away: started again after the last line seen
    journal.entries += [entry(6, CHANNEL), entry(7, FELL_OFF)]
    assert source.read() == []  # this poll drains the ended follower
    assert source.read() == [(1_700_000_007.0, FELL_OFF, None)]
    assert journal.calls[3][-2:] == ["--after-cursor", "s=abc;i=6"]
    source.close()
    assert journal.followers[1].ended


def test_journal_without_grep_support_is_filtered_here_fake_journalctl():
    journal = FakeJournalctl([entry(1, "Linux version 6.1"), entry(2, CHANNEL)], grep=False)
    source = JournalSource(journal)
    assert source.open() is None
    lines = source.read()
    assert [parse_line(text) for _, text, _ in lines] == [None, ("0000:01:00", 32, "Channel ID 00000009 intr 00800000")]
    assert source.grep is False


def test_a_journal_without_kernel_messages_is_not_usable_fake_journalctl():
    hint = "Hint: You are currently not seeing messages from other users and the system.\n"
    assert JournalSource(FakeJournalctl([], stderr=hint)).open() == "journalctl: no permission to read the system journal"
    assert JournalSource(FakeJournalctl([])).open() == "journalctl: the journal holds no kernel messages for this boot"


def test_reader_maps_pci_ids_to_gpu_indexes_fake_journalctl():
    journal = FakeJournalctl([entry(1, "Linux version 6.1"), entry(2, FELL_OFF), entry(3, DOUBLE_BIT)])
    log = KernelLog(Problems(), run=journal, poll_s=60)
    log.set_gpus([{"index": 0, "bus_id": "00000000:19:00.0"}, {"index": 3, "bus_id": "00000000:3B:00.0"}])
    events = log.events()  # the first call starts the thread
    assert log.first_poll.wait(10)
    events += log.events()
    log.close()
    assert [(e["data"]["xid"], e["gpu"], e["severity"]) for e in events] == [(79, 3, "critical"), (48, None, "critical")]
    assert log.events() == []


def test_no_readable_kernel_log_is_one_note_not_a_flood(tmp_path):
    problems = Problems()
    log = KernelLog(problems, run=FakeJournalctl([]), kmsg_path=str(tmp_path / "no-kmsg"), poll_s=0.01)
    log.events()
    assert log.first_poll.wait(10)
    for _ in range(5):
        assert log.events() == []
    log.close()
    (note,) = problems.drain()
    assert note[0] == "kernel log"
    assert note[1].startswith("XIDs and OOM kills are not read from the kernel log (journalctl: the journal holds no kernel messages")
    assert "no-kmsg: No such file or directory" in note[1]
    assert problems.drain() == []


def test_reader_on_this_machines_real_kernel_log():
    """Whatever this machine allows: the first poll finishes, and it yields well-formed XID or
    OOM-kill events (no XIDs on a machine without NVIDIA GPUs) or one note."""
    problems = Problems()
    log = KernelLog(problems, poll_s=60)
    log.events()
    assert log.first_poll.wait(30)
    events = log.events()
    log.close()
    for e in events:
        assert (e["kind"] == "xid" and isinstance(e["data"]["xid"], int)) or (
            e["kind"] == "oom-kill" and isinstance(e["data"]["pid"], int) and e["data"]["process"]
        )
    assert len(problems.drain()) <= 1


def xid_rig():
    facts = NodeFacts(
        hostname="gpu01",
        boot_time=1_699_990_000.0,
        gpus=[GpuFacts(0, bus_id="00000000:19:00.0"), GpuFacts(3, bus_id="00000000:3B:00.0")],
    )
    return Rig(facts=facts)


def event(xid, when, gpu=None, pci="0000:3b:00"):
    return NodeEvent.from_dict(xid_event(when, pci, xid, "", gpu))


def test_an_xid_raises_an_alert_rated_by_its_worst_xid_and_dated_from_the_first():
    rig = xid_rig()
    rig.fleet.on_event("gpu01", event(13, 1_700_000_000.0))  # the probe could not map it: the engine does
    alert = rig.alert("xid", 3)
    assert (alert.severity, alert.since) == ("info", 1_700_000_000.0)
    assert alert.message == "XID 13: graphics engine exception — check the job; in a burn-in this is a failure"
    rig.fleet.on_event("gpu01", event(79, 1_700_000_050.0, gpu=3))
    alert = rig.alert("xid", 3)
    assert alert.severity == "critical" and alert.since == 1_700_000_000.0
    assert alert.message.startswith("XID 79: GPU has fallen off the bus (2 XIDs so far: 13, 79) — power-cycle")
    rig.fleet.on_event("gpu01", event(45, 1_700_000_060.0, gpu=3))
    assert rig.alert("xid", 3).severity == "critical"  # a later info XID does not lower it
    assert rig.timeline("xid") == [("alert-opened", "info"), ("alert-changed", "critical")]


def test_the_same_xid_read_again_after_a_reconnect_counts_once():
    rig = xid_rig()
    for _ in range(3):
        rig.fleet.on_event("gpu01", event(79, 1_700_000_000.0, gpu=3))
    assert rig.alert("xid", 3).message.startswith("XID 79: GPU has fallen off the bus — ")


def test_xid_alerts_clear_on_acknowledge_or_a_new_boot():
    rig = xid_rig()
    rig.fleet.on_event("gpu01", event(79, 1_700_000_000.0, gpu=3))
    rig.fleet.on_event("gpu01", event(31, 1_700_000_001.0, gpu=0, pci="0000:19:00"))
    rig.run(10, [busy_gpu(0), busy_gpu(3)])
    assert set(rig.alerts()) == {("xid", 0), ("xid", 3)}  # samples never clear an XID
    rig.fleet.engine.acknowledge(rig.node(), "xid", 0, rig.clock.t)
    assert set(rig.alerts()) == {("xid", 3)}
    rig.hello("gpu01", NodeFacts(hostname="gpu01", boot_time=1_700_000_500.0))  # rebooted
    rig.fleet.tick()
    assert rig.alerts() == {}
    closed = [e.message for e in rig.node().timeline if e.kind == "alert-closed"]
    assert closed[0].startswith("acknowledged after") and closed[1].startswith("new boot after")


def test_a_kernel_line_sent_again_by_a_reconnect_backfill_is_one_timeline_entry():
    """Every new session backfills the boot's XIDs; the id (boot + µs since boot) keeps each once."""
    from dltui.config import Config
    from dltui.core.models import NodeEvent
    from dltui.core.rules import build_engine
    from dltui.core.state import FleetState

    fleet = FleetState(["gpu01"], engine=build_engine(Config()), clock=lambda: 1_700_000_100.0)
    first = xid_event(1700000000.5, "0000:3b:00", 79, "GPU has fallen off the bus.", 3, "boot-a/93112233")
    again = xid_event(1700000000.9, "0000:3b:00", 79, "GPU has fallen off the bus.", 3, "boot-a/93112233")
    later = xid_event(1700000050.0, "0000:3b:00", 79, "GPU has fallen off the bus.", 3, "boot-a/143000000")
    for e in (first, again, later):
        fleet.on_event("gpu01", NodeEvent.from_dict(e))
    node = fleet.nodes["gpu01"]
    assert [e.kind for e in node.timeline].count("xid") == 2


def test_kmsg_lines_carry_their_microseconds_since_boot(tmp_path):
    """The id's clock: kmsg's own timestamp, not one recomputed from wall and monotonic time."""
    from dltui.node.probe.kernel_log import KmsgSource

    path = tmp_path / "kmsg"
    path.write_bytes(b"4,812,93112233,-;" + FELL_OFF.encode() + b"\n")
    source = KmsgSource(str(path))
    assert source.open() is None
    ((_, text, since_boot_us),) = source.read()
    source.close()
    assert (text, since_boot_us) == (FELL_OFF, 93112233)
