"""What went wrong on an SSH hop, as one status word and a plain-words reason with the fix."""

from __future__ import annotations

import asyncio
import errno
import os
import socket

from dltui.core import status as st
from dltui.core.status import Status
from dltui.core.text import clean

from .config import HostSettings
from .known_hosts import CHANGED, OfferedKey, host_pattern
from .library import asyncssh

DEFAULT_KEY_FILES = ("id_ed25519", "id_ecdsa", "id_rsa")  # what ssh(1) tries without IdentityFile


class Failure(Exception):
    """A node (or the hop in front of it) cannot be streamed from right now."""

    def __init__(self, status: Status, reason: str):
        reason = clean(reason)  # it may quote the node: its sshd's words, the probe's stderr
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


def via_jump(jump: str, failure: Failure) -> Failure:
    """A failure of a jump host, as seen by a node behind it."""
    status = st.UNREACHABLE if failure.status in (st.TIMEOUT, st.RECONNECTING) else failure.status
    return Failure(status, f"jump host {jump}: {failure.reason}")


def describe(
    exc: BaseException,
    hop: HostSettings,
    offered: OfferedKey | None,
    extra_keys: tuple[str, ...] = (),
) -> Failure:
    """Map an exception from connecting to (or streaming over) ``hop`` to a Failure."""
    where = hop.address
    if isinstance(exc, Failure):
        return exc
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return _host_key(exc, hop, offered)
    if isinstance(exc, asyncssh.PermissionDenied):
        return Failure(st.AUTH_FAILED, _auth_reason(hop, extra_keys))
    if isinstance(exc, asyncssh.KeyImportError):
        return Failure(st.AUTH_FAILED, f"cannot use a private key: {exc}")
    if isinstance(exc, asyncssh.ChannelOpenError):
        if exc.code == asyncssh.OPEN_CONNECT_FAILED:
            return Failure(st.UNREACHABLE, f"the jump host cannot reach {where}: {exc.reason}")
        return Failure(st.UNREACHABLE, f"cannot open a channel to {where}: {exc.reason}")
    if isinstance(exc, asyncssh.ConnectionLost):
        if "keepalive" in exc.reason:
            return Failure(
                st.UNREACHABLE, f"{where} stopped answering keepalives (network down or node hung)"
            )
        detail = "" if exc.reason.lower() == "connection lost" else f": {exc.reason}"
        return Failure(st.UNREACHABLE, f"lost the connection to {where}{detail}")
    if isinstance(exc, asyncssh.DisconnectError):
        return Failure(st.UNREACHABLE, f"{where} closed the connection: {exc.reason}")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Failure(st.TIMEOUT, f"no SSH answer from {where} within {hop.connect_timeout_s:g} s")
    if isinstance(exc, socket.gaierror):
        return Failure(st.UNREACHABLE, f"cannot resolve {hop.hostname}: {exc.strerror}")
    if isinstance(exc, ConnectionRefusedError):
        return Failure(st.UNREACHABLE, f"{where} refused the connection (sshd not running?)")
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return Failure(st.UNREACHABLE, f"no route to {where}: {os.strerror(exc.errno)}")
        return Failure(st.UNREACHABLE, f"{where}: {exc.strerror or exc}")
    return Failure(st.UNREACHABLE, f"{where}: {type(exc).__name__}: {exc}")


def _host_key(exc: Exception, hop: HostSettings, offered: OfferedKey | None) -> Failure:
    if offered is None:  # refused for another reason (revoked key, bad certificate)
        return Failure(st.HOST_KEY_CHANGED, f"{hop.address}: {exc}")
    name = host_pattern(offered.host, offered.port)
    files = hop.known_hosts_files or ()
    known = files[0] if files else "known_hosts"
    if offered.verdict == CHANGED:
        return Failure(
            st.HOST_KEY_CHANGED,
            f"HOST KEY CHANGED for {name}: it now offers {offered.key_type} {offered.fingerprint}, "
            f"which differs from the key in {known} (a reinstalled node, or someone in the middle). "
            f"If the change is expected: ssh-keygen -R '{name}' -f {known}, then reconnect",
        )
    return Failure(
        st.HOST_KEY_UNKNOWN,
        f"host key of {name} is not in {known} ({offered.key_type} {offered.fingerprint}). "
        f"Check the fingerprint, then connect once with ssh to record it, or run dltui with --accept-new-host-keys",
    )


def _auth_reason(hop: HostSettings, extra_keys: tuple[str, ...]) -> str:
    reason = f"{hop.user}@{hop.address} refused every key offered"
    locked = [path for path in _candidate_keys(hop, extra_keys) if _needs_passphrase(path)]
    if locked:
        shown = ", ".join(_home_relative(p) for p in locked)
        agent = "is running" if os.environ.get("SSH_AUTH_SOCK") else "is not running"
        return (
            f"{reason}; {shown} needs a passphrase, which dltui never asks for: add it to the "
            f"agent with ssh-add (the agent {agent})"
        )
    return f"{reason}: check the key (-i or IdentityFile) and the node's authorized_keys"


def _candidate_keys(hop: HostSettings, extra_keys: tuple[str, ...]) -> list[str]:
    files = list(extra_keys) + list(hop.identity_files)
    if not hop.identity_files:
        files += [os.path.join(os.path.expanduser("~"), ".ssh", name) for name in DEFAULT_KEY_FILES]
    return [os.path.expanduser(f) for f in files if os.path.isfile(os.path.expanduser(f))]


def _needs_passphrase(path: str) -> bool:
    try:
        asyncssh.read_private_key(path)
    except asyncssh.KeyImportError as exc:
        return "passphrase" in str(exc).lower()
    except (OSError, ValueError):
        return False
    return False


def _home_relative(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def probe_exit_reason(
    python: str, exit_status: int | None, exit_signal: tuple | None, stderr: bytes
) -> str:
    """Why the probe's process ended, from its exit status and the tail of its stderr."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    if exit_status == 127:  # the shell found no such command
        return f"{python} not found on the node — install python3 (3.8+)"
    if exit_status == 126:
        return f"{python} on the node cannot be run ({last or 'permission denied'})"
    if "SyntaxError" in last:
        return f"the node's {python} is too old for the probe — install python3 (3.8+)"
    if exit_signal is not None:
        return f"the probe was killed by signal {exit_signal[0]}" + (f": {last}" if last else "")
    return f"the probe exited with status {exit_status}" + (
        f": {last}" if last else " without a message"
    )
