"""A hostile recording played with the real ``python -m dltui replay`` in a real terminal
(tmux): a recording from someone else names a node, a GPU, its process, the unit's SubState, a
status reason and an XID line ``python3 ESC]0;PWNED BEL ESC[2J [@click=app.quit]x[/] <script>…``
with a bidi override and an 8-bit CSI, and carries a sample whose temperature is the word "hot".
The terminal's title is unchanged, the screen stays drawn with those words made visible, the
node opens, the rest of the recording plays, and ``q`` ends it with exit 0."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.hostile import HOSTILE_PRINTED

from .test_terminal import REPO, Tmux

T0 = 1_767_258_000.0
RACK = "rack\x1b]0;PWNED\x07\u202e7"  # a node name in the recording's header
SHOWN = "python3 ␛]0;PWNED␇␛[2J[@click=app.quit]x[/]<script>"  # the start of HOSTILE, made visible


def hostile_recording(path) -> None:
    lines = [{"dltui_recording": 1, "started": T0, "nodes": ["gpu01", RACK], "dltui": "0.0.0"}]

    def add(t, node, kind, **kw):
        lines.append({"t": T0 + t, "node": node, "kind": kind, **kw})

    def sample(t, temperature):
        gpu = {"index": 0, "name": HOSTILE_PRINTED, "utilization_percent": 97, "temperature_c": temperature,
               "memory_total_mib": 81559.0,
               "processes": [{"pid": 4242, "name": HOSTILE_PRINTED, "gpu_memory_mib": 512.0}]}
        unit = {"name": "dl_train.service", "load_state": "loaded", "active_state": "active",
                "sub_state": HOSTILE_PRINTED}
        add(t, "gpu01", "sample", sample={"time": T0 + t, "gpus": [gpu], "units": [unit]})

    add(0.1, "gpu01", "status", status="ok", reason=None)
    add(0.2, "gpu01", "hello", interval_s=1.0,
        facts={"hostname": "gpu01", "kernel": HOSTILE_PRINTED, "gpus": [{"index": 0, "name": HOSTILE_PRINTED}]})
    sample(1.0, "hot")  # unreadable: the playback goes on past it
    for i in range(4):
        sample(2.0 + i, 61 + i)
    add(3.5, "gpu01", "event", event={"time": T0 + 3.5, "kind": "xid", "message": HOSTILE_PRINTED, "gpu": 0})
    add(4.0, RACK, "status", status="unreachable", reason=HOSTILE_PRINTED)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_hostile_recording_keeps_the_terminal_title_and_its_screen(tmp_path):
    recording = tmp_path / "hostile.jsonl"
    hostile_recording(recording)
    tmux = Tmux(tmp_path)
    done = tmp_path / "exit-code"
    env = f"PYTHONPATH={REPO} XDG_CONFIG_HOME={tmp_path} XDG_STATE_HOME={tmp_path}"
    command = f"cd {REPO} && env {env} {sys.executable} -m dltui replay {recording} --speed 0; echo $? > {done}"
    try:
        tmux("new-session", "-d", "-s", "dash", "-x", "160", "-y", "48", "sleep 3600")
        tmux("set-option", "-t", "dash", "remain-on-exit", "on")  # a crash leaves its last screen
        tmux("select-pane", "-t", "dash", "-T", "operator-title")
        tmux("respawn-pane", "-k", "-t", "dash", command)
        screen = tmux.wait_for("rack␛]0;PWNED␇\\u202e7")  # the fleet: the node's name, visible
        screen = tmux.wait_for("✖ unreachable")
        assert "python3 ␛]0;PWNED␇␛[2J" in screen  # its status reason in the NOTE column
        assert "q Quit" in screen.splitlines()[-1]  # the footer: nothing cleared the screen
        assert tmux("display", "-p", "-t", "dash", "#{pane_title}").strip() == "operator-title"
        tmux("send-keys", "-t", "dash", "Enter")  # gpu01, the first row
        screen = tmux.wait_for(f"GPU0 · {SHOWN}")
        screen = tmux.wait_for("end of recording (8 lines, 1 unreadable)")
        assert f"active/{SHOWN}" in screen and f"kernel {SHOWN}" in screen
        assert "64°C" in screen  # the last sample played, past the unreadable one
        assert tmux("display", "-p", "-t", "dash", "#{pane_title}").strip() == "operator-title"
        assert tmux.quit(done) == "0"
    finally:
        subprocess.run([*tmux.base, "kill-server"], capture_output=True)
