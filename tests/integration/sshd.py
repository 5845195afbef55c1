"""Real OpenSSH servers for tests: one ``sshd`` per node, on loopback or inside a network
namespace, plus a client home (``~/.ssh`` with a key, a config and known_hosts).

Each node has its own directory
(host key, sshd_config, pid file, log, ``home/``, ``bin/``); ``SetEnv`` gives the node's
sessions that ``HOME`` (no ``.bashrc`` to slow them) and a ``PATH`` starting with ``bin/``,
where a test puts the node's tools (a fake ``nvidia-smi``, a ``python3`` wrapper).

Ports come from the kernel (bind to port 0) with a retry when sshd loses the race for one, so
pytest-xdist workers never collide; network-namespace nodes use port 22 in their own namespace.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

from dltui.node.bundle import PROBE_ENTRY

SSHD = "/usr/sbin/sshd"
REPO = Path(__file__).resolve().parents[2]
FAKE_SMI = REPO / "tests" / "fakes" / "nvidia-smi"
SMI_CAPTURE = REPO / "tests" / "fixtures" / "nvidia-smi" / "h100-80gb-hbm3_590.48.01_load_query-gpu-all.csv"
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
READY_TIMEOUT_S = 10.0


class SshdError(RuntimeError):
    pass


def keygen(path: Path, comment: str) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def known_hosts_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


class SshdNode:
    """One sshd. ``kill()`` is a crash (the whole process tree, SIGKILL); ``start()`` again
    brings it back on the same address and port with the same host key."""

    def __init__(self, name: str, base: Path, authorized_keys: Path, address: str = "127.0.0.1",
                 port: int | None = None, netns: str | None = None):
        self.name = name
        self.dir = base / name
        self.address = address
        self.port = port
        self.fixed_port = port is not None
        self.netns = netns
        self.authorized_keys = authorized_keys
        self.proc: subprocess.Popen | None = None
        self.env: dict[str, str] = {}
        self.path = f"{self.bin}:{SYSTEM_PATH}"
        (self.dir / "home").mkdir(parents=True)
        self.bin.mkdir()
        keygen(self.hostkey, f"{name}-host")

    @property
    def bin(self) -> Path:
        return self.dir / "bin"

    @property
    def hostkey(self) -> Path:
        return self.dir / "hostkey"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    def install_fake_smi(self) -> None:
        """The test-only ``nvidia-smi`` replaying a real H100 capture on this node's PATH."""
        shutil.copy(FAKE_SMI, self.bin / "nvidia-smi")
        self.env["FAKE_SMI_CAPTURE"] = str(SMI_CAPTURE)

    def write_config(self) -> None:
        env = " ".join(f"{k}={v}" for k, v in {"HOME": self.dir / "home", "PATH": self.path, **self.env}.items())
        (self.dir / "sshd_config").write_text(
            f"ListenAddress {self.address}\n"
            f"HostKey {self.hostkey}\n"
            f"PidFile {self.dir / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\n"
            "StrictModes no\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\n"
            "UsePAM no\n"
            "UseDNS no\n"
            "PrintMotd no\n"
            "AllowTcpForwarding yes\n"
            "MaxSessions 64\n"
            "MaxStartups 100:30:200\n"
            "LogLevel VERBOSE\n"
            f"SetEnv {env}\n"
        )

    def start(self) -> None:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        for _ in range(5):
            if self.port is None:
                self.port = free_port()
            self.write_config()
            prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
            with open(self.log, "w") as log:
                self.proc = subprocess.Popen(
                    [*prefix, SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config"), "-p", str(self.port)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._wait_ready():
                return
            if self.fixed_port:
                break
            self.port = None  # another process took the port between our probe and sshd's bind
        raise SshdError(f"sshd {self.name} did not start:\n{self.log.read_text()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + READY_TIMEOUT_S
        mark = f"port {self.port}."
        while time.monotonic() < deadline:
            text = self.log.read_text()
            if mark in text:
                return True
            if self.proc.poll() is not None:
                if "Address already in use" in text:
                    return False
                raise SshdError(f"sshd {self.name} exited with {self.proc.returncode}:\n{text}")
            time.sleep(0.005)
        self.kill()
        raise SshdError(f"sshd {self.name} not ready after {READY_TIMEOUT_S} s:\n{self.log.read_text()}")

    def processes(self) -> list[psutil.Process]:
        """sshd and every process it started (sessions, shells, probes)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def probe_processes(self) -> list[psutil.Process]:
        found = []
        for proc in self.processes():
            try:
                if any(PROBE_ENTRY in arg for arg in proc.cmdline()):  # the loader names it
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        return found

    def kill(self) -> None:
        """A crash: SIGKILL to sshd and all its descendants at once."""
        if self.proc is None:
            return
        for proc in self.processes():
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()  # CI's PID 1 reaps orphans lazily: reap our own child
        self.proc = None

    def known_hosts_line(self, key: Path | None = None) -> str:
        """This node's known_hosts line (with another host key's public half if ``key``)."""
        pub = Path(f"{key or self.hostkey}.pub").read_text().split()
        return f"{known_hosts_name(self.address, self.port)} {pub[0]} {pub[1]}\n"

    def fingerprint(self) -> str:
        out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", f"{self.hostkey}.pub"],
                             check=True, capture_output=True, text=True).stdout
        return out.split()[1]


class SshLab:
    """sshd nodes (a jump host and nodes only reachable as ``ProxyJump jump``) plus client homes."""

    def __init__(self, base: Path):
        self.base = base
        self.user = getpass.getuser()
        self.client_key = base / "client" / "id_ed25519"
        self.client_key.parent.mkdir(parents=True)
        keygen(self.client_key, "dltui-test-client")
        self.authorized_keys = base / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.nodes: dict[str, SshdNode] = {}
        self.jump: SshdNode | None = None
        # ssh_config() values; ServerAliveInterval takes whole seconds (1 s x 2: a silent node
        # is noticed in about 3 s)
        self.keepalive_s = 1
        self.keepalive_count = 2
        self.connect_timeout_s = 5

    def add_node(self, name: str, *, jump: bool = False, fake_smi: bool = True, **kwargs) -> SshdNode:
        node = SshdNode(name, self.base, self.authorized_keys, **kwargs)
        if fake_smi:
            node.install_fake_smi()
        self.nodes[name] = node
        if jump:
            self.jump = node
        return node

    def start(self) -> "SshLab":
        for node in self.nodes.values():
            node.start()
        return self

    def close(self) -> None:
        for node in self.nodes.values():
            node.kill()

    def ssh_config(self) -> str:
        """Host blocks as an operator would write them; nodes go through ``jump``."""
        blocks = []
        for node in self.nodes.values():
            lines = [f"Host {node.name}", f"  HostName {node.address}", f"  Port {node.port}", f"  User {self.user}"]
            if self.jump is not None and node is not self.jump:
                lines.append(f"  ProxyJump {self.jump.name}")
            blocks.append("\n".join(lines))
        blocks.append(
            f"Host *\n  ServerAliveInterval {self.keepalive_s}\n  ServerAliveCountMax {self.keepalive_count}\n"
            f"  ConnectTimeout {self.connect_timeout_s}"
        )
        return "\n\n".join(blocks) + "\n"

    def make_home(self, path: Path, *, known: list[SshdNode] | None = None, key: Path | None = None) -> Path:
        """A client ``$HOME`` with ``~/.ssh/{config,known_hosts,id_ed25519}``; known_hosts holds
        ``known`` (default: every node). Returns the home directory."""
        ssh_dir = path / ".ssh"
        ssh_dir.mkdir(parents=True, mode=0o700)
        key = key or self.client_key
        shutil.copy(key, ssh_dir / "id_ed25519")
        shutil.copy(f"{key}.pub", ssh_dir / "id_ed25519.pub")
        (ssh_dir / "config").write_text(self.ssh_config())
        nodes = self.nodes.values() if known is None else known
        (ssh_dir / "known_hosts").write_text("".join(n.known_hosts_line() for n in nodes))
        return path


def client_env(home: Path) -> dict[str, str]:
    """Environment for a dltui subprocess using ``home``'s ``~/.ssh`` and no SSH agent."""
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
    return env
