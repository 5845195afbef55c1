"""The probe's unit poll: systemctl show parsing, not-found, no systemd said once, the newest
checkpoint (bounded), and GPU processes matched to their unit by cgroup."""

import os
import shutil
import subprocess

from dltui.node.probe.problems import Problems
from dltui.node.probe.units import UnitPoller, mark_unit_processes, newest_file
from dltui.node.schema import parse_show, unit_record

# `systemctl show dl_train.service nosuch.service -p …` as systemd 252 printed it (the
# integration tests' systemd node, Debian 12)
SHOW = """Id=dl_train.service
LoadState=loaded
ActiveState=active
SubState=running
Result=success
NRestarts=2
MainPID=175
ExecMainStatus=0
InvocationID=1454b4f5371743338423c6399c55d625
ExecMainStartTimestampMonotonic=3735918025
MemoryCurrent=[not set]
CPUUsageNSec=[not set]

Id=nosuch.service
LoadState=not-found
ActiveState=inactive
SubState=dead
Result=success
NRestarts=0
MainPID=0
ExecMainStatus=0
InvocationID=
ExecMainStartTimestampMonotonic=0
MemoryCurrent=[not set]
CPUUsageNSec=[not set]
"""


def test_show_blocks_become_unit_records():
    blocks = parse_show(SHOW)
    train, missing = (unit_record(b["Id"], b) for b in blocks)
    assert (
        train["active_state"] == "active"
        and train["restarts_total"] == 2
        and train["main_pid"] == 175
    )
    assert train["started_monotonic_us"] == 3735918025 and train["memory_current_bytes"] is None
    assert missing["load_state"] == "not-found" and missing["error"] is None


class _Run:
    def __init__(self, result=None, exc=None):
        self.calls = 0
        self.result, self.exc = result, exc

    def __call__(self, argv, **kw):
        self.calls += 1
        if self.exc:
            raise self.exc
        return self.result


def test_one_systemctl_for_all_units_then_only_every_poll_period():
    run = _Run(subprocess.CompletedProcess([], 0, SHOW.encode(), b""))
    clock = [100.0]
    poller = UnitPoller(
        ["dl_train.service", "nosuch.service"],
        None,
        Problems(),
        run=run,
        poll_s=30,
        invocation_dir="/nonexistent",
        clock=lambda: clock[0],
    )
    units, _ = poller.sample()
    assert [u["name"] for u in units] == ["dl_train.service", "nosuch.service"]
    clock[0] += 10
    poller.sample()
    assert run.calls == 1  # between polls nothing is spawned
    clock[0] += 25
    poller.sample()
    assert run.calls == 2


def test_a_new_invocation_triggers_a_poll_at_once(tmp_path):
    run = _Run(subprocess.CompletedProcess([], 0, SHOW.encode(), b""))
    link = tmp_path / "invocation:dl_train.service"
    link.symlink_to("aaaa")
    poller = UnitPoller(
        ["dl_train.service"],
        None,
        Problems(),
        run=run,
        invocation_dir=str(tmp_path),
        clock=lambda: 0.0,
    )
    poller.sample()
    poller.sample()
    assert run.calls == 1
    link.unlink()
    link.symlink_to("bbbb")  # systemd started it again
    poller.sample()
    assert run.calls == 2


def test_no_systemctl_is_noted_once_as_information_and_never_asked_again():
    """A container without systemd is normal: an info note, not a probe failure."""
    problems = Problems()
    run = _Run(exc=FileNotFoundError("systemctl"))
    poller = UnitPoller(["dl_train.service"], None, problems, run=run, poll_s=0)
    units, _ = poller.sample()
    assert units[0]["error"] == "no systemd on this node"
    poller.sample()
    assert run.calls == 1
    assert problems.drain() == []
    (note,) = problems.drain_notes()
    assert (note["kind"], note["severity"]) == ("units", "info")
    assert note["message"] == "no systemctl on this node: unit state is not read"
    assert note["data"]["id"]  # the operator's side keeps the first of a session, by this id
    assert problems.drain_notes() == []


def test_this_machine_without_systemd_as_init_says_so_once():
    """Real systemctl where PID 1 is not systemd (the CI container): one plain report."""
    if shutil.which("systemctl") is None or os.path.exists("/run/systemd/system"):
        import pytest

        pytest.skip("needs systemctl installed and systemd not running as PID 1")
    problems = Problems()
    poller = UnitPoller(["dl_train.service"], None, problems, poll_s=0)
    poller.sample()
    poller.sample()
    assert problems.drain() == []
    notes = problems.drain_notes()
    assert len(notes) == 1 and "no systemd on this node" in notes[0]["message"]
    assert notes[0]["severity"] == "info"


def test_newest_checkpoint_is_bounded_work(tmp_path):
    for i in range(10):
        p = tmp_path / f"step-{i}.pt"
        p.write_text("x")
        os.utime(p, (1000 + i, 1000 + i))
    path, mtime, seen = newest_file(str(tmp_path / "*.pt"))
    assert path.endswith("step-9.pt") and mtime == 1009 and seen == 10
    _, _, seen = newest_file(str(tmp_path / "*.pt"), limit=4)
    assert seen == 4
    assert newest_file(str(tmp_path / "none-*.pt")) == (None, None, 0)


def test_gpu_processes_are_matched_to_their_unit_by_cgroup(tmp_path):
    for pid, cgroup in (
        (41, "0::/system.slice/dl_train.service\n"),
        (42, "0::/user.slice/session-3.scope\n"),
    ):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cgroup").write_text(cgroup)
    gpus = [{"processes": [{"pid": 41}, {"pid": 42}, {"pid": 43}]}, {"processes": [{"pid": 41}]}]
    mark_unit_processes(gpus, ["dl_train.service"], proc=str(tmp_path))
    assert [p.get("unit") for p in gpus[0]["processes"]] == ["dl_train.service", None, None]
    assert gpus[1]["processes"][0]["unit"] == "dl_train.service"
