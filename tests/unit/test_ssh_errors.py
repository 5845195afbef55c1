"""Exceptions from SSH hops become one status word and a reason that says what to do."""

import asyncio
import errno
import socket

import asyncssh
import pytest

from dltui.core import status as st
from dltui.transport.hostspec import parse_destination
from dltui.transport.ssh.config import HostSettings
from dltui.transport.ssh.errors import Failure, describe, probe_exit_reason, via_jump

HOP = HostSettings(
    dest=parse_destination("gpu01"),
    hostname="10.0.0.7",
    port=22,
    user="ops",
    proxy_jump=None,
    known_hosts_files=("/home/ops/.ssh/known_hosts",),
    identity_files=(),
    certificate_files=(),
    identities_only=False,
    ciphers=None,
    connect_timeout_s=10.0,
    keepalive_interval_s=15.0,
    keepalive_count=3,
)


@pytest.mark.parametrize(
    "exc, status, reason",
    [
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), st.UNREACHABLE,
         "10.0.0.7:22 refused the connection (sshd not running?)"),
        (OSError(errno.ENETUNREACH, "unreachable"), st.UNREACHABLE, "no route to 10.0.0.7:22: Network is unreachable"),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), st.UNREACHABLE,
         "cannot resolve 10.0.0.7: Name or service not known"),
        (asyncio.TimeoutError(), st.TIMEOUT, "no SSH answer from 10.0.0.7:22 within 10 s"),
        (asyncssh.ConnectionLost("Server not responding to keepalive"), st.UNREACHABLE,
         "10.0.0.7:22 stopped answering keepalives (network down or node hung)"),
        (asyncssh.ConnectionLost("Connection lost"), st.UNREACHABLE, "lost the connection to 10.0.0.7:22"),
        (asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "Connection refused"), st.UNREACHABLE,
         "the jump host cannot reach 10.0.0.7:22: Connection refused"),
        (asyncssh.KeyImportError("Passphrase must be specified to import encrypted private keys"), st.AUTH_FAILED,
         "cannot use a private key: Passphrase must be specified to import encrypted private keys"),
    ],
)
def test_exception_to_status_and_reason(exc, status, reason):
    failure = describe(exc, HOP, None)
    assert (failure.status, failure.reason) == (status, reason)


def test_a_jumps_trouble_is_named_for_the_nodes_behind_it():
    down = via_jump("bastion", Failure(st.TIMEOUT, "no SSH answer from 10.0.0.1:22 within 10 s"))
    assert (down.status, down.reason) == (st.UNREACHABLE, "jump host bastion: no SSH answer from 10.0.0.1:22 within 10 s")
    auth = via_jump("bastion", Failure(st.AUTH_FAILED, "ops@10.0.0.1:22 refused every key offered"))
    assert (auth.status, auth.reason) == (st.AUTH_FAILED, "jump host bastion: ops@10.0.0.1:22 refused every key offered")


@pytest.mark.parametrize(
    "status, signal, stderr, reason",
    [
        (127, None, b"bash: line 1: exec: python3: not found\n", "python3 not found on the node — install python3 (3.8+)"),
        (1, None, b'  File "<string>", line 3\nSyntaxError: invalid syntax\n',
         "the node's python3 is too old for the probe — install python3 (3.8+)"),
        (1, None, b"Traceback (most recent call last):\nMemoryError\n", "the probe exited with status 1: MemoryError"),
        (None, ("KILL", False, "", ""), b"", "the probe was killed by signal KILL"),
        (0, None, b"", "the probe exited with status 0 without a message"),
    ],
)
def test_probe_exit_reason(status, signal, stderr, reason):
    assert probe_exit_reason("python3", status, signal, stderr) == reason
