"""What the operator's side reads of a burn-in over real sshd is capped while it is read: the
follow stream's lines, and the run's files fetched for the verdict. The node is hostile at the
edge: a run folder whose driver prints a line of megabytes into the follow stream, a stressor
log bigger than dltui reads, and a ``tail`` on the node's PATH that ignores ``-c``."""

from __future__ import annotations

import json
import os

import pytest

from dltui.burnin import remote
from dltui.burnin.remote import NodeRunView, RunCollector
from dltui.node.schema import PROTOCOL
from dltui.node.wire import Encoder
from dltui.transport.command import CommandError
from dltui.transport.protocol import MAX_LINE_BYTES
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions
from tests.unit.test_wire import collected

from .conftest import require
from .sshd import SSHD, SshLab

pytestmark = pytest.mark.sshd
RUN = "20261203-101500"
# The run folder's driver, in follow mode: prints what the test put in the folder's "stream"
FOLLOWER = (
    "import os, sys\n"
    "here = os.path.dirname(os.path.abspath(__file__))\n"
    "with open(os.path.join(here, 'stream'), 'rb') as f:\n"
    "    sys.stdout.buffer.write(f.read())\n"
)


@pytest.fixture
def node(tmp_path, use_home):
    """One real sshd node whose burn-in folder is the test's (DLTUI_BURNIN_DIR), holding a run."""
    require(os.path.exists(SSHD), f"{SSHD} is missing: install openssh-server")
    require(os.geteuid() == 0, "real-sshd tests run as root (sshd must switch users and use /run/sshd)")
    lab = SshLab(tmp_path / "lab")
    gpu01 = lab.add_node("gpu01", fake_smi=False)
    gpu01.env["DLTUI_BURNIN_DIR"] = str(tmp_path / "burnin")
    run = tmp_path / "burnin" / RUN
    run.mkdir(parents=True)
    (run / "driver.py").write_text(FOLLOWER)
    try:
        lab.start()
        use_home(lab.make_home(tmp_path / "client"))
        yield gpu01, run
    finally:
        lab.close()


async def test_a_line_of_megabytes_in_the_follow_stream_is_one_malformed_line_and_the_run_goes_on(node):
    """Before the cap, readline handed back the first ~2 MiB of it without a newline, which
    the follow took for a dropped connection: it reconnected at the same offset for ever."""
    _, run = node
    enc = Encoder()
    hello = {"type": "hello", "protocol": PROTOCOL, "time": 1.0, "interval_s": 1.0, "facts": {"hostname": "gpu01"}}
    sample_lines = [
        json.dumps(hello).encode() + b"\n",
        json.dumps(enc.encode(collected(1.0))).encode() + b"\n",
        b'{"type":"sample","time":' + b"9" * (3 * MAX_LINE_BYTES) + b"}\n",
        json.dumps(enc.encode(collected(2.0))).encode() + b"\n",
    ]
    end = b'{"type":"burnin-end","offset":0}\n'
    (run / "stream").write_bytes(b"".join(sample_lines) + end)
    runner = SshCommands(SshOptions())
    view = NodeRunView("gpu01", RUN, RunCollector())
    try:
        assert await remote.follow_once(runner, view, "python3") is True
    finally:
        await runner.close()
    assert view.ended and view.collector.count == 2
    assert view.reader is not None and view.reader.malformed == 1
    assert view.offset == sum(len(line) for line in sample_lines)  # past it: a resume skips it


async def test_fetch_reads_the_tail_of_a_log_over_the_cap_and_says_how_long_it_was(node):
    _, run = node
    (run / "result.json").write_text('{"phases": {}}')
    log = b"".join(b"line %07d\n" % i for i in range(100_000))  # 1.3 MB
    (run / "gpu_burn.log").write_bytes(log)
    runner = SshCommands(SshOptions())
    try:
        got = await remote.fetch(runner, "gpu01", RUN, ["result.json", "gpu_burn.log", "nccl.log"], file_max=64 << 10)
    finally:
        await runner.close()
    assert got.files == {"result.json": b'{"phases": {}}', "gpu_burn.log": log[-(64 << 10):]}
    assert got.cut == {"gpu_burn.log": len(log)}


async def test_fetch_refuses_a_node_that_sends_more_than_it_was_asked_for(node):
    """A node's ``tail`` that ignores ``-c`` sends the whole log: the answer is refused once
    it passes what the files asked for may hold, not read to its end."""
    gpu01, run = node
    fake_tail = gpu01.bin / "tail"
    fake_tail.write_text('#!/bin/sh\n# tail -c K FILE, the whole FILE instead\nexec cat "$3"\n')
    fake_tail.chmod(0o755)
    (run / "gpu_burn.log").write_bytes(b"x" * (1 << 20))
    runner = SshCommands(SshOptions())
    try:
        with pytest.raises(CommandError, match="gpu01 answered with more than .* bytes: refused"):
            await remote.fetch(runner, "gpu01", RUN, ["gpu_burn.log", "nccl.log"], file_max=64 << 10)
    finally:
        await runner.close()
