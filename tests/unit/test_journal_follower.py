"""The long-lived ``journalctl -f`` the probe follows the journal with: read as lines come,
restarted when it ends, and never left behind (a fake journalctl script on PATH replays kernel
lines; its name says fake_journalctl)."""

import os
import subprocess
import sys
import textwrap
import time

import psutil

from dltui.node.probe.kernel_log import KernelLog
from dltui.node.probe.problems import Problems

OOM = "Out of memory: Killed process 4242 (python3) total-vm:1000kB, anon-rss:2097152kB, file-rss:0kB"


def fake_journalctl(tmp_path, late_line):
    """journalctl that has one kernel line; with -f it prints ``late_line`` after a moment and
    then waits, as a follower on a quiet journal does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "journalctl"
    entries = [{"__CURSOR": "c1", "__REALTIME_TIMESTAMP": "1700000001000000", "MESSAGE": "Linux version 6.1"}]
    late = {"__CURSOR": "c2", "__REALTIME_TIMESTAMP": "1700000002000000", "MESSAGE": late_line}
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys, time
        entries = {entries!r}
        if "-f" in sys.argv:
            time.sleep(0.3)
            print(json.dumps({late!r}), flush=True)
            time.sleep(3600)
        elif "--grep" not in sys.argv:
            for e in entries:
                print(json.dumps(e))
        """))
    script.chmod(0o755)
    return bin_dir


def followers(root: int | None = None):
    """The fake journalctl followers started under ``root`` (this test process by default):
    only our own, whatever other tests on the machine run at the same time."""
    found = []
    for p in psutil.Process(root).children(recursive=True):
        try:
            cmdline = p.cmdline()
        except psutil.Error:  # gone meanwhile
            continue
        if "-f" in cmdline and cmdline[-1] == "c1" and cmdline[1].endswith("journalctl"):
            found.append(p)
    return found


def test_the_follower_delivers_lines_as_they_come_and_ends_with_the_reader_fake_journalctl(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{fake_journalctl(tmp_path, OOM)}:{os.environ['PATH']}")
    log = KernelLog(Problems(), poll_s=0.1)
    events = log.events()
    deadline = time.monotonic() + 20
    while not events and time.monotonic() < deadline:
        time.sleep(0.1)
        events = log.events()
    assert [e["kind"] for e in events] == ["oom-kill"] and events[0]["data"]["pid"] == 4242
    assert len(followers()) == 1  # one journalctl for the probe's life, not one per poll
    log.close()
    assert followers() == []


def test_a_probe_killed_outright_takes_its_follower_with_it_fake_journalctl(tmp_path):
    bin_dir = fake_journalctl(tmp_path, OOM)
    probe = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""\
            import time
            from dltui.node.probe.kernel_log import KernelLog
            from dltui.node.probe.problems import Problems
            log = KernelLog(Problems(), poll_s=0.1)
            while not log.events():
                time.sleep(0.1)
            print("following", flush=True)
            time.sleep(3600)
            """)],
        env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"),
        stdout=subprocess.PIPE,
    )
    try:
        assert probe.stdout.readline() == b"following\n"
        (follower,) = followers(probe.pid)
        probe.kill()  # SIGKILL: no finally, no close()
        probe.wait()
        follower.wait(timeout=10)  # PR_SET_PDEATHSIG ended it
        assert not follower.is_running()
    finally:
        probe.kill()
        probe.stdout.close()
