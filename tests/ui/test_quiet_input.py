"""The quiet input driver (dltui/ui/quiet_input.py) in a real pseudo-terminal: keys, an Escape
alone and an escape sequence parse as with Textual's driver, the app quits at once, and its
input thread sleeps while no key comes."""

from __future__ import annotations

import hashlib
import inspect
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.drivers.linux_driver import LinuxDriver

# Textual 8.2.8's LinuxDriver.run_input_thread, which QuietLinuxDriver repeats with its own
# timeout: an upgrade that changes it fails here (read the new loop, carry the change over to
# quiet_input.py, then record the new hash)
RUN_INPUT_THREAD_SHA = "d796af6d69db337d"

APP = """
import sys
from textual.app import App
from textual.widgets import Static
from dltui.ui.quiet_input import QuietLinuxDriver

class KeysApp(App):
    def compose(self):
        yield Static("ready")

    def on_key(self, event):
        with open(sys.argv[1], "a") as f:
            f.write(event.key + "\\n")
        if event.key == "q":
            self.exit()

KeysApp(driver_class=QuietLinuxDriver).run()
"""


def test_textuals_input_loop_is_the_one_repeated():
    source = inspect.getsource(LinuxDriver.run_input_thread)
    assert hashlib.sha256(source.encode()).hexdigest()[:16] == RUN_INPUT_THREAD_SHA


def _drain(fd: int, until: float) -> bytes:
    out = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


def _input_thread_switches(pid: int) -> int:
    """Voluntary context switches of the app's threads but the main one (input, output)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        if int(tid) == pid:
            continue
        status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        total += int(next(ln for ln in status.splitlines() if ln.startswith("voluntary_ctxt_switches")).split()[1])
    return total


def _wait_for_key(keys: Path, count: int, main: int) -> None:
    """Until the app has written ``count`` keys (the terminal's output drained meanwhile)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if keys.exists() and len(keys.read_text().split()) >= count:
            return
        _drain(main, time.monotonic() + 0.1)
    raise AssertionError(f"the app took fewer than {count} keys in 60 s")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux driver")
def test_keys_escape_and_quit_through_a_pty_with_the_input_thread_asleep(tmp_path):
    keys = tmp_path / "keys"
    script = tmp_path / "app.py"
    script.write_text(APP)
    main, child = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(keys)], stdin=child, stdout=child, stderr=child, env=env,
        start_new_session=True,
    )
    os.close(child)
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"ready" not in seen and time.monotonic() < deadline:
            seen += _drain(main, time.monotonic() + 0.2)
        assert b"ready" in seen
        # Idle: the fewest wakeups of the app's other threads in a 2 s window of five (a busy
        # machine may still be drawing the first screen in the first window)
        idle_switches = []
        for _ in range(5):
            before = _input_thread_switches(proc.pid)
            _drain(main, time.monotonic() + 2.0)
            idle_switches.append(_input_thread_switches(proc.pid) - before)
            if idle_switches[-1] <= 4:
                break
        # each key once the one before it has arrived: an Escape alone is told from the start
        # of a sequence only by ESCDELAY passing with nothing after it
        for count, key in enumerate((b"a", b"\x1b", b"\x1b[B"), start=1):
            os.write(main, key)
            _wait_for_key(keys, count, main)
        os.write(main, b"q")
        _drain(main, time.monotonic() + 0.5)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    assert keys.read_text().split() == ["a", "escape", "down", "q"]
    # Textual's own input thread wakes ten times a second (some 20 switches in every 2 s)
    assert min(idle_switches) <= 4
