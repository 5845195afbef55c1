"""A kill is not a mess: SIGTERM and SIGHUP end each command as Ctrl-C does, on real
processes against real sshd nodes — connections closed, the node-side probes gone, the
temporary SSH config slices (dltui-ssh-config-*) removed; and a crash in the dashboard is a
non-zero exit with one line, its traceback in the log file."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.own_words import foreign_lines, own_line, read_until_own_line

from .sshd import REPO, client_env

pytestmark = pytest.mark.sshd


def _wait(condition, what: str, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not seen within {limit_s} s: {what}")
        time.sleep(0.05)


def _env(home: Path, tmp: Path) -> dict[str, str]:
    env = client_env(home)
    env.pop("XDG_RUNTIME_DIR", None)
    env["TMPDIR"] = str(tmp)  # where the SSH config slices go
    env["XDG_STATE_HOME"] = str(home / "state")
    return env


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_snapshot_closes_its_connections_and_leaves_no_temporary_files(shared_lab, tmp_path, sig):
    home = shared_lab.make_home(tmp_path / "home")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gpu01 = shared_lab.nodes["gpu01"]
    before = {p.pid for p in gpu01.probe_processes()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "snapshot", "gpu01", "--seconds", "120"],
        env=_env(home, tmp), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait(lambda: {p.pid for p in gpu01.probe_processes()} - before, "the probe running on gpu01")
        assert [p.name for p in tmp.iterdir()][0].startswith("dltui-ssh-config-")  # in use now
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 3, err  # as Ctrl-C: UNKNOWN, nothing judged
    assert out == "" and "Traceback" not in err
    assert list(tmp.iterdir()) == []
    _wait(lambda: not ({p.pid for p in gpu01.probe_processes()} - before), "the probe gone from gpu01")


def test_a_signalled_export_stops_cleanly_and_its_recording_is_complete(shared_lab, tmp_path):
    """The recorder sits in front of the exporter's fleet and is closed on SIGTERM: a gzip
    recording killed mid-way would lack its trailer and fail to read to the end."""
    home = shared_lab.make_home(tmp_path / "home")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gpu02 = shared_lab.nodes["gpu02"]
    before = {p.pid for p in gpu02.probe_processes()}
    recording = tmp_path / "rec.jsonl.gz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dltui", "export", "gpu02", "--listen", "127.0.0.1:0", "--record", str(recording)],
        env=_env(home, tmp), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        serving, before_it = read_until_own_line(iter(proc.stderr.readline, ""), "dltui: serving ")
        assert foreign_lines("".join(before_it)) == []
        url = serving.split("serving ", 1)[1].split()[0]

        def up() -> bool:
            try:
                page = urllib.request.urlopen(url, timeout=5).read().decode()
            except OSError:
                return False
            return 'dltui_node_up{node="gpu02"} 1' in page

        _wait(up, f"gpu02 up on {url}")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and foreign_lines(err) == []
    assert list(tmp.iterdir()) == []
    _wait(lambda: not ({p.pid for p in gpu02.probe_processes()} - before), "the probe gone from gpu02")
    with gzip.open(recording, "rt") as f:
        kinds = [json.loads(line).get("kind") for line in f]
    assert "hello" in kinds and "delta" in kinds  # --record writes the probe's delta lines (format 2)


def test_a_signalled_unit_command_says_interrupted_and_closes_its_session(shared_lab, tmp_path):
    """A node whose systemctl hangs: SIGTERM ends `dltui unit status` with 143 and no traceback,
    and its session on the node goes with the connection."""
    home = shared_lab.make_home(tmp_path / "home")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gpu01 = shared_lab.nodes["gpu01"]
    hang = gpu01.bin / "systemctl"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dltui", "unit", "status", "dl_train.service", "gpu01"],
            env=_env(home, tmp), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

        def sleeping():
            return [p for p in gpu01.processes() if p.name() == "sleep"]

        try:
            _wait(lambda: sleeping(), "the hung systemctl on gpu01")
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert own_line(err, "dltui: SIGTERM: stopped") and "Traceback" not in err and out == ""
        assert foreign_lines(err) == []
        assert list(tmp.iterdir()) == []
        _wait(lambda: not sleeping(), "the node-side command gone with the connection")
    finally:
        hang.unlink()


class _Tmux:
    def __init__(self, tmp: Path):
        self.base = ["tmux", "-S", str(tmp / "sock"), "-f", "/dev/null"]
        self.env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True, text=True, env=self.env).stdout


@pytest.fixture
def tmux(tmp_path):
    if not Path("/usr/bin/tmux").exists():
        pytest.fail("tmux is missing: install the Debian package tmux")
    t = _Tmux(tmp_path)
    yield t
    subprocess.run([*t.base, "kill-server"], capture_output=True)


def _dashboard_in_tmux(tmux, tmp_path: Path, python: str) -> Path:
    """Run ``python`` (a dltui start) in a 120x40 tmux pane; its exit code goes to a file and
    the pane stays, so what the terminal was left with can be read."""
    status = tmp_path / "exit"
    script = tmp_path / "run.py"
    script.write_text(python)
    env = f"XDG_STATE_HOME={tmp_path / 'state'} PYTHONPATH={REPO}"
    tmux(
        "new-session", "-d", "-s", "dash", "-x", "120", "-y", "40",
        f"cd {REPO}; env {env} {sys.executable} {script}; echo $? > {status}; sleep 60",
    )
    return status


def test_sigterm_quits_the_dashboard_as_q_does(tmux, tmp_path):
    status = _dashboard_in_tmux(
        tmux, tmp_path, "import sys\nfrom dltui.cli import main\nsys.exit(main(['demo', '--nodes', '4']))\n"
    )
    _wait(lambda: "gpu04" in tmux("capture-pane", "-p", "-t", "dash"), "the demo fleet on screen")
    shell = int(tmux("display", "-p", "-t", "dash", "#{pane_pid}").strip())
    import psutil

    (python,) = [p for p in psutil.Process(shell).children() if "python" in p.name()]
    python.send_signal(signal.SIGTERM)
    _wait(status.exists, "the dashboard's exit")
    assert status.read_text().strip() == "0"
    screen = tmux("capture-pane", "-p", "-t", "dash")
    assert "gpu04" not in screen  # the alternate screen is gone: the terminal is restored


def test_a_crash_in_the_dashboard_is_exit_1_one_line_and_the_traceback_in_the_log(tmux, tmp_path):
    """A bug in a screen (here a MarkupError, as node text with '[/]' once raised) must not exit 0
    nor flood the terminal: one line names it, the log file keeps the traceback."""
    crash = (
        "import sys\n"
        "from textual.markup import MarkupError\n"
        "from dltui.ui.screens import FleetScreen\n"
        "def broken(self, now):\n"
        "    raise MarkupError(\"closing tag '[/]' does not match any open tag\")\n"
        "FleetScreen.update_view = broken  # the fault, injected at the edge of the screen\n"
        "from dltui.cli import main\n"
        "sys.exit(main(['demo', '--nodes', '3']))\n"
    )
    status = _dashboard_in_tmux(tmux, tmp_path, crash)
    _wait(status.exists, "the dashboard's exit")
    assert status.read_text().strip() == "1"
    log = tmp_path / "state" / "dltui" / "dltui.log"
    screen = [line for line in tmux("capture-pane", "-p", "-J", "-t", "dash").splitlines() if line.strip()]
    assert screen == [
        f"dltui: the dashboard stopped on an error: MarkupError: closing tag '[/]' does not match any "
        f"open tag (details in {log})"
    ]
    text = log.read_text()
    assert "the dashboard stopped on an error" in text and "Traceback" in text and "update_view" in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"
