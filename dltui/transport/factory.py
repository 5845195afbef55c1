"""Node names to transports: this machine in process, the rest over one SSH fleet."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Transport
from .hostspec import expand_ranges
from .local import LOCAL_NAMES, LocalTransport
from .ssh.options import SshOptions


def build_transports(
    hosts: list[str], interval_s: float, ssh: SshOptions, probe_extras=None
) -> list[Transport]:
    """``[]`` or ``["localhost"]`` means this machine; other names go to the SSH transport.
    Ranges (``gpu[01-16]``) are expanded; a bad one raises ``HostSpecError``.
    ``probe_extras(name)`` gives a node's (units, checkpoint glob, training containers) to report."""
    hosts = list(dict.fromkeys(expand_ranges(hosts)))  # a node named twice is one node
    transports: list[Transport] = []
    remote = [h for h in hosts if h not in LOCAL_NAMES]
    if not hosts or len(remote) < len(hosts):
        units, checkpoint, containers = probe_extras("localhost") if probe_extras else ((), None, ())
        transports.append(
            LocalTransport(interval_s, units=units, checkpoint=checkpoint, sysfs=ssh.sysfs, containers=containers)
        )
    if remote:
        from .ssh.fleet import SshFleet

        transports.append(SshFleet(remote, interval_s, ssh, probe_extras))
    return transports


def node_names(transports: Sequence[Transport]) -> list[str]:
    return [name for t in transports for name in t.names]
