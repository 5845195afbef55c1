"""A node that prints without end costs a bounded amount of memory: a command's output is cut to
its tail while it is read (over a real sshd, and on this machine), never buffered whole."""

from __future__ import annotations

import tracemalloc

import pytest

from dltui.transport.command import OUTPUT_KEPT, LocalRunner
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions

pytestmark = pytest.mark.sshd

PRINTED = 24 * 1024 * 1024  # 96 times what is kept
FLOOD = ["sh", "-c", f"head -c {PRINTED} /dev/zero | tr '\\0' x; echo; echo END; echo WARN >&2"]
HELD_AT_MOST = 8 * 1024 * 1024  # the kept tails, the read chunks and the SSH window: well below PRINTED


async def _peak(job):
    tracemalloc.start()
    try:
        result = await job
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _check(result, peak):
    assert result.ok, result
    assert len(result.stdout) == OUTPUT_KEPT and result.stdout.endswith("x\nEND\n")
    assert result.stderr == "WARN\n"
    assert peak < HELD_AT_MOST, f"{peak} bytes held while reading {PRINTED}"


async def test_a_flood_on_this_machine_is_cut_while_it_is_read():
    _check(*await _peak(LocalRunner().run_command("localhost", FLOOD, 120)))


async def test_a_flood_over_ssh_is_cut_while_it_is_read(shared_lab, tmp_path, use_home):
    use_home(shared_lab.make_home(tmp_path))
    commands = SshCommands(SshOptions())
    try:
        assert await commands.connect("gpu01") is None
        _check(*await _peak(commands.run_command("gpu01", FLOOD, 120)))
    finally:
        await commands.close()
