"""How to reach nodes over SSH: the command-line flags that mirror ssh(1)'s."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SshOptions:
    jump: str | None = None  # -J/--jump: like ssh -J, comma-separated for a chain
    ssh_config: str | None = None  # -F: default ~/.ssh/config
    identity: tuple[str, ...] = ()  # -i: extra private keys
    known_hosts: str | None = None  # --known-hosts: else the config's UserKnownHostsFile, else ~/.ssh/known_hosts
    accept_new_host_keys: bool = False  # StrictHostKeyChecking=accept-new
    connect_timeout_s: float = 10.0  # unless the SSH config sets ConnectTimeout
    keepalive_interval_s: float = 15.0  # unless ServerAliveInterval is set
    keepalive_count: int = 3  # unless ServerAliveCountMax is set
    python: str = "python3"  # the node's interpreter
    sysfs: str = "/sys"  # where the node's sysfs is mounted, for the probe ([probe] sysfs)
