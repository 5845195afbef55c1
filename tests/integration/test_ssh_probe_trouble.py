"""A node that cannot run the probe, or whose probe output is polluted."""

from __future__ import annotations

import os
import shutil

import pytest

from dltui.core import status as st

from .sshd import SYSTEM_PATH
from .streaming import Streaming

pytestmark = pytest.mark.sshd


async def test_node_without_python3_is_probe_failed_then_recovers_when_installed(shared_lab, tmp_path, use_home):
    use_home(shared_lab.make_home(tmp_path))
    node = shared_lab.nodes["nopython"]
    python3 = node.bin / "python3"
    async with Streaming(["nopython"]) as s:
        try:
            await s.until(lambda f: f.nodes["nopython"].status == st.PROBE_FAILED, "probe-failed")
            assert s.state.nodes["nopython"].reason.startswith(
                "python3 not found on the node — install python3 (3.8+); retrying at "
            )
            os.symlink(shutil.which("python3", path=SYSTEM_PATH), python3)  # an operator installs it
            await s.until(lambda f: f.nodes["nopython"].status == st.OK, "ok after python3 was installed")
            await s.until_samples(["nopython"], 2)
        finally:
            python3.unlink(missing_ok=True)
    assert s.state.hellos["nopython"] == 1


async def test_garbage_lines_are_counted_and_streaming_continues(shared_lab, tmp_path, use_home):
    use_home(shared_lab.make_home(tmp_path))
    async with Streaming(["garbage", "gpu01"]) as s:
        await s.until_samples(["garbage"], 3)
        node = s.state.nodes["garbage"]
        assert node.status == st.OK
        # three bad lines (a banner, truncated JSON, a JSON list); the reader reports the first
        # and then every 100th, so the state has heard of one
        assert node.malformed_lines == 1
        messages = [e.message for e in node.timeline if e.kind == "malformed-line"]
        assert messages == [
            "probe printed a malformed line (1 so far): 'Welcome to gpu-garbage!' "
            "(Expecting value: line 1 column 1 (char 0))"
        ]
        assert s.state.nodes["gpu01"].malformed_lines == 0


async def test_a_node_without_systemd_is_said_once_a_session_as_information(shared_lab, tmp_path, use_home):
    """These loopback nodes run without systemd as PID 1, like a container: the probe asked
    for a unit says so once, as info; the probe a reconnect starts says it again, unheard."""
    if os.path.exists("/run/systemd/system"):
        pytest.skip("this machine runs systemd as PID 1: its nodes have systemd")
    use_home(shared_lab.make_home(tmp_path))
    gpu01 = shared_lab.nodes["gpu01"]

    def notes(f) -> list:
        return [e for e in f.nodes["gpu01"].timeline if "unit state is not read" in e.message]

    async with Streaming(["gpu01"], probe=(("dl_train.service",), None)) as s:
        await s.until(lambda f: notes(f), "the note about systemd")
        for probe in gpu01.probe_processes():  # the probe dies: a new session, a new probe
            probe.kill()
        await s.until(lambda f: f.hellos["gpu01"] == 2, "the second session's hello")
        await s.until_samples(["gpu01"], 3)
    (note,) = notes(s.state)
    assert (note.kind, note.severity) == ("units", "info")
    assert note.message.startswith(("no systemd on this node (", "no systemctl on this node"))
    assert not [e for e in s.state.nodes["gpu01"].timeline if e.kind == "probe-error"]
