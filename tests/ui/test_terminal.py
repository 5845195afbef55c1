"""The real ``python -m dltui demo`` in a real terminal (tmux), read back with capture-pane."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class Tmux:
    """A private tmux server (own socket, no user config) holding one 160x48 window."""

    def __init__(self, tmp: Path):
        self.base = ["tmux", "-S", str(tmp / "sock"), "-f", "/dev/null"]
        # COLUMNS/LINES (pytest sets them) would pin the app to 80x24 whatever the pane size.
        self.env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True, text=True, env=self.env).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "dash")

    def wait_for(self, text: str, limit_s: float = 30.0) -> str:
        """Poll the screen until ``text`` shows; fail with the screen after ``limit_s``."""
        deadline = time.monotonic() + limit_s
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{text!r} never appeared; the screen:\n{screen}")
            time.sleep(0.05)

    def quit(self, exit_code_file: Path, limit_s: float = 30.0) -> str:
        """Press ``q``; the exit status the pane's shell wrote to ``exit_code_file`` (the command
        ends ``; echo $? > FILE``), once it is there."""
        self("send-keys", "-t", "dash", "q")
        deadline = time.monotonic() + limit_s
        while not exit_code_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return exit_code_file.read_text().strip()


@pytest.fixture
def tmux(tmp_path):
    t = Tmux(tmp_path)
    yield t
    subprocess.run([*t.base, "kill-server"], capture_output=True)


def test_dltui_demo_draws_the_fleet_opens_a_node_and_quits(tmux, tmp_path):
    done = tmp_path / "exit-code"
    env = f"PYTHONPATH={REPO} XDG_CONFIG_HOME={tmp_path}"
    # stderr stays on the pane: Textual draws there.
    command = f"cd {REPO} && env {env} {sys.executable} -m dltui demo --nodes 12; echo $? > {done}"
    tmux("new-session", "-d", "-s", "dash", "-x", "160", "-y", "48", command)
    tmux.wait_for("GPU7")  # the 160-column layout: one column per GPU
    screen = tmux.wait_for("96 GPUs")  # every node has sent a sample
    assert "12 nodes" in screen and "gpu12" in screen and "unreachable" not in screen
    tmux("send-keys", "-t", "dash", "j", "Enter")
    screen = tmux.wait_for("GPU3 · H100 80GB HBM3")
    assert "gpu02" in screen and "driver 550.90.07" in screen
    tmux("send-keys", "-t", "dash", "Escape")
    tmux.wait_for("JOBS")  # back on the fleet (at 160 columns whose work it is before disk and net)
    assert tmux.quit(done) == "0"
