"""A hostile node over a real sshd: what reaches the operator's terminal holds none of its bytes.

The node (fake ``nvidia-smi``, ``journalctl`` and ``systemctl`` on its PATH, faithful to the real
tools' output formats) names its GPU, its GPU process, its unit's SubState, a journal line and
kernel XID/OOM lines ``python3 ESC]0;PWNED BEL ESC[2J [@click=app.quit]x[/] <script>…`` with a
bidi override and an 8-bit CSI: what any user on a node can make them say (``exec -a``, logger).
The dashboard runs in a real terminal (tmux): its title is unchanged, the screen stays drawn, the
node screen opens. The CLI's bytes hold no ESC, BEL, C1 or bidi character from the node.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dltui.core.text import clean
from tests.hostile import HOSTILE_PRINTED
from tests.ui.test_terminal import Tmux

from .conftest import require
from .sshd import REPO, SSHD, SshLab, client_env

pytestmark = pytest.mark.sshd

SHOWN = clean(HOSTILE_PRINTED)  # what the operator must see instead: every byte visible
APPS_CAPTURE = REPO / "tests/fixtures/nvidia-smi/h100-80gb-hbm3-mig_590.48.01_load_query-compute-apps.csv"
# Bytes a terminal acts on: ESC, BEL, 8-bit CSI (U+009B in UTF-8), the bidi override.
TERMINAL_BYTES = (b"\x1b", b"\x07", "\x9b".encode(), "\u202e".encode(), "\u202c".encode())

JOURNALCTL = """#!/usr/bin/env python3
# journalctl -o json as the real one prints it: MESSAGE as a byte array where it holds controls
import json, sys, time
HOSTILE = %r
args = sys.argv[1:]
now = int(time.time() * 1e6)
if "-k" in args:  # the kernel log: an XID and an OOM kill naming the process
    texts = ["NVRM: Xid (PCI:0000:00:09): 79, pid=21180, name=" + HOSTILE + ", GPU has fallen off the bus.",
             "Out of memory: Killed process 21180 (" + HOSTILE + ") total-vm:1kB, anon-rss:1024kB"]
else:
    texts = [HOSTILE]
if "-f" in args or "--after-cursor" in args:
    if "-f" in args:
        time.sleep(3600)  # a follower with nothing new
    sys.exit(0)
for i, text in enumerate(texts):
    print(json.dumps({"MESSAGE": list(text.encode()), "__CURSOR": "c%%d" %% i,
                      "__REALTIME_TIMESTAMP": str(now), "_SYSTEMD_UNIT": "dl_train.service"}))
"""

SYSTEMCTL = """#!/usr/bin/env python3
# systemctl show UNIT -p A,B --no-pager: Key=Value lines; SubState is the node's words
import sys
HOSTILE = %r
args = sys.argv[1:]
if args[:1] != ["show"]:
    sys.exit("fake systemctl: only 'show' is faked")
values = {"Id": "dl_train.service", "LoadState": "loaded", "ActiveState": "active", "SubState": HOSTILE,
          "Result": "success", "NRestarts": "0", "MainPID": "21180", "ExecMainStatus": "0",
          "InvocationID": "0123456789abcdef0123456789abcdef"}
wanted = args[args.index("-p") + 1].split(",") if "-p" in args else list(values)
sys.stdout.write("".join("%%s=%%s\\n" %% (k, values.get(k, "")) for k in wanted))
"""


def hostile_process_names(capture: str) -> str:
    """The compute-apps capture with every process named as the hostile user names it (the
    name is the column between the pid and the memory, and may itself hold ", ")."""
    header, *rows = capture.splitlines()
    renamed = []
    for row in rows:
        cells = row.split(", ")
        renamed.append(", ".join([*cells[:6], HOSTILE_PRINTED, cells[-1]]) if len(cells) >= 8 else row)
    return "\n".join([header, *renamed]) + "\n"


@pytest.fixture(scope="module")
def hostile_lab(tmp_path_factory):
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    require(os.geteuid() == 0, "real-sshd tests run as root (sshd must switch users and use /run/sshd)")
    base = tmp_path_factory.mktemp("hostile")
    lab = SshLab(base / "lab")
    lab.add_node("jump", jump=True, fake_smi=False)
    node = lab.add_node("gpu01")
    scenario = base / "scenario.jsonl"
    scenario.write_text(json.dumps({"name": HOSTILE_PRINTED}) + "\n")
    apps = base / "compute-apps.csv"
    apps.write_text(hostile_process_names(APPS_CAPTURE.read_text()))
    node.env.update(FAKE_SMI_SCENARIO=str(scenario), FAKE_SMI_APPS=str(apps))
    for name, script in (("journalctl", JOURNALCTL), ("systemctl", SYSTEMCTL)):
        (node.bin / name).write_text(script % HOSTILE_PRINTED)
        (node.bin / name).chmod(0o755)
    try:
        lab.start()
        yield lab, lab.make_home(base / "home")
    finally:
        lab.close()


def dltui(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dltui", *args], cwd=REPO, env=client_env(home),
                          capture_output=True, timeout=120)


def assert_no_terminal_bytes(data: bytes) -> None:
    for raw in TERMINAL_BYTES:
        assert raw not in data, f"{raw!r} reached the terminal: {data[:400]!r}"


@pytest.mark.parametrize("args", [
    ("unit", "status", "dl_train.service", "gpu01"),
    ("unit", "logs", "dl_train.service", "gpu01"),
    ("snapshot", "gpu01", "--seconds", "3"),
])
def test_the_cli_prints_a_hostile_nodes_text_visible_and_inert_fake_smi(hostile_lab, args):
    _, home = hostile_lab
    done = dltui(home, *args)
    assert_no_terminal_bytes(done.stdout + done.stderr)
    text = done.stdout.decode()
    assert "␛]0;PWNED␇␛[2J" in text, text  # the node's words are there, every byte made visible
    assert "[@click=app.quit]x[/]<script>" in text


def test_the_json_snapshot_keeps_the_data_json_escaped_fake_smi(hostile_lab):
    _, home = hostile_lab
    done = dltui(home, "snapshot", "gpu01", "--json", "--seconds", "3")
    assert_no_terminal_bytes(done.stdout + done.stderr)
    (node,) = json.loads(done.stdout)["nodes"]
    (gpu,) = node["sample"]["gpus"]
    assert gpu["name"] == SHOWN and node["facts"]["gpus"][0]["name"] == SHOWN
    assert SHOWN in {p["name"] for p in gpu["processes"]}
    assert node["sample"]["units"][0]["sub_state"] == SHOWN


def test_the_dashboard_keeps_the_terminal_title_and_its_screen_fake_smi(hostile_lab, tmp_path):
    _, home = hostile_lab
    tmux = Tmux(tmp_path)
    done = tmp_path / "exit-code"
    env = " ".join(f"{k}={v}" for k, v in client_env(home).items() if k in ("HOME", "PYTHONPATH"))
    command = f"cd {REPO} && env -u SSH_AUTH_SOCK {env} {sys.executable} -m dltui gpu01; echo $? > {done}"
    try:
        tmux("new-session", "-d", "-s", "dash", "-x", "160", "-y", "48", "sleep 3600")
        tmux("set-option", "-t", "dash", "remain-on-exit", "on")  # a crash leaves its last screen
        tmux("select-pane", "-t", "dash", "-T", "operator-title")
        tmux("respawn-pane", "-k", "-t", "dash", command)
        # Near the top, whatever this machine's NIC count does to the panes below: the GPU's
        # model (header, GPU pane title), the unit's SubState and its journal line.
        tmux.wait_for("GPU0 · python3 ␛]0;PWNED␇␛[2J[@click=app.quit]x[/]<script>")
        screen = tmux.wait_for("active/python3 ␛]0;PWNED␇␛[2J")
        # and the unit's journal line, read a moment later (by its time stamp: the processes
        # pane that also names the process is pushed off screen when the host has many NICs)
        journal_line = re.compile(r"\d\d:\d\d:\d\d python3 ␛\]0;PWNED␇␛\[2J")
        deadline = time.monotonic() + 30
        while not journal_line.search(screen):
            assert time.monotonic() < deadline, screen
            time.sleep(0.1)
            screen = tmux.screen()
        assert "gpu01  ● ok" in screen
        assert tmux("display", "-p", "-t", "dash", "#{pane_title}").strip() == "operator-title"
        assert "q Quit" in screen.splitlines()[-1]  # the footer: nothing cleared the screen
        assert tmux.quit(done) == "0"
    finally:
        subprocess.run([*tmux.base, "kill-server"], capture_output=True)
