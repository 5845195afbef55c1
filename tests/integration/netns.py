"""A network-namespace lab (root only):

    [laptop] lap0 10.77.1.1 ==veth== jmp0 10.77.1.2 [jump: sshd :22, br0 10.77.0.1/24]
                                       br0 -- v-gpu01 ==veth== eth0 10.77.0.2 [gpu01: sshd :22]
                                       br0 -- v-gpu02 ==veth== eth0 10.77.0.3 [gpu02: sshd :22]

Namespaces start with forwarding off, so the GPU nodes are reachable only through the jump's
sshd, as behind a real bastion. Names are unique per run; ``destroy()`` deletes the namespaces
and with them every veth and the bridge. The test client stays in pytest's namespace and runs
its event loop in a thread that entered the laptop namespace (``run_in``).
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import os
import subprocess
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable

from .sshd import SshLab

CLONE_NEWNET = 0x40000000
_runs = itertools.count()


class NetnsError(RuntimeError):
    pass


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def tc(*args: str) -> None:
    done = subprocess.run(["tc", *args], capture_output=True, text=True)
    if done.returncode:
        raise NetnsError(f"tc {' '.join(args)}: {done.stderr.strip()}")


def can_build() -> str | None:
    """None when namespaces can be built here, else why not (in plain words)."""
    if os.geteuid() != 0:
        return "network-namespace tests need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    probe = f"dltui-probe{os.getpid()}"
    try:
        ip("netns", "add", probe)
    except (NetnsError, FileNotFoundError) as exc:
        return f"cannot create a network namespace here: {exc}"
    ip("netns", "del", probe)
    return None


class NetnsLab:
    JUMP_LAPTOP_SIDE = "10.77.1.2"

    def __init__(self, base: Path, nodes: tuple[str, ...] = ("gpu01", "gpu02")):
        tag = f"dltui{os.getpid()}-{next(_runs)}"
        self.ns = {role: f"{tag}-{role}" for role in ("laptop", "jump", *nodes)}
        self.node_names = nodes
        self.built: list[str] = []
        self.ssh = SshLab(base)

    def build(self) -> "NetnsLab":
        for ns in self.ns.values():
            ip("netns", "add", ns)
            self.built.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        laptop, jump = self.ns["laptop"], self.ns["jump"]
        ip("-n", laptop, "link", "add", "lap0", "type", "veth", "peer", "name", "jmp0", "netns", jump)
        ip("-n", laptop, "addr", "add", "10.77.1.1/24", "dev", "lap0")
        ip("-n", laptop, "link", "set", "lap0", "up")
        ip("-n", jump, "addr", "add", f"{self.JUMP_LAPTOP_SIDE}/24", "dev", "jmp0")
        ip("-n", jump, "link", "set", "jmp0", "up")
        ip("-n", jump, "link", "add", "br0", "type", "bridge")
        ip("-n", jump, "addr", "add", "10.77.0.1/24", "dev", "br0")
        ip("-n", jump, "link", "set", "br0", "up")
        self.ssh.add_node("jump", jump=True, fake_smi=False, address=self.JUMP_LAPTOP_SIDE, port=22, netns=jump)
        for i, name in enumerate(self.node_names):
            ns, address = self.ns[name], f"10.77.0.{i + 2}"
            ip("-n", jump, "link", "add", f"v-{name}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("-n", jump, "link", "set", f"v-{name}", "master", "br0", "up")
            ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            self.ssh.add_node(name, address=address, port=22, netns=ns)
        self.ssh.start()
        return self

    def destroy(self) -> None:
        self.ssh.close()
        for ns in self.built:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.built.clear()

    def set_link(self, node: str, up: bool) -> None:
        """Cable pulled (or plugged back) on ``node``: no FIN, no RST, just silence."""
        ip("-n", self.ns[node], "link", "set", "eth0", "up" if up else "down")

    def throttle(self, node: str, rate: str) -> None:
        """Limit what ``node`` sends to ``rate`` (a tc rate such as ``64kbit``)."""
        tc("-n", self.ns[node], "qdisc", "replace", "dev", "eth0", "root", "tbf",
           "rate", rate, "burst", "1600", "latency", "10s")

    def unthrottle(self, node: str) -> None:
        tc("-n", self.ns[node], "qdisc", "del", "dev", "eth0", "root")

    def run_in(self, role: str, scenario: Callable[[], Awaitable[Any]]) -> Any:
        """``asyncio.run(scenario())`` in a thread inside namespace ``role``; returns its result."""
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                _enter(self.ns[role])
                outcome["value"] = asyncio.run(scenario())
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc

        thread = threading.Thread(target=target, name=f"netns-{role}")
        thread.start()
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")


def _enter(ns: str) -> None:
    """setns(2) for this thread only (threads it starts inherit the namespace)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {ns}: {os.strerror(err)}")
    finally:
        os.close(fd)
