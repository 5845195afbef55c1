"""The training unit: round trip of ``systemctl show`` and the node-side cost of the unit poll.

Boots a real systemd node (tests/integration/systemd_node.py: systemd as PID 1 of its own
namespaces on a throw-away overlay root, sshd inside) behind a real sshd jump host on
loopback, then measures in the same run:

- round trip of ``systemctl show dl_train.service -p …`` as dltui sends it: a new session on
  its existing connection through the jump (``SshCommands``), against the OpenSSH reference
  an operator would type, ``ssh -J jump node systemctl show …`` (a fresh connection each
  time). Target: dltui ≤ 0.3× the reference;
- node-side CPU of the probe's unit poll (one ``systemctl show`` for all units, plus what
  systemd itself spends answering it, plus the newest-checkpoint glob), and of the per-sample
  ``readlink`` of ``/run/systemd/units/invocation:UNIT`` between polls; per 1 s interval at the
  default poll period, against the probe's own host sample measured in the same process.
  Target: ≤ 0.5 ms per interval.

Needs root, openssh-server, systemd, overlayfs. Prints figures only; nothing is asserted.

    python bench/unit_actions.py [--rounds 30]
"""

import argparse
import asyncio
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.actions.commands import show_argv  # noqa: E402
from dltui.node import bundle  # noqa: E402
from dltui.node.probe.units import UNIT_POLL_S  # noqa: E402
from dltui.transport.command import shell_line  # noqa: E402
from dltui.transport.ssh.commands import SshCommands  # noqa: E402
from dltui.transport.ssh.options import SshOptions  # noqa: E402
from tests.integration.sshd import SshLab  # noqa: E402
from tests.integration.systemd_node import SystemdNode, missing  # noqa: E402

# The probe goes to the node as the product ships it (node/bundle.py), here base64 on stdin:
# the node has a /tmp of its own, so a checkout there is not a path it can import from.
NODE_SIDE = (
    "import binascii, sys\nP = binascii.a2b_base64(sys.stdin.read())\nD = P[P.index(b'\\n') + 1 :]\n"
    + bundle.importer(bundle.packages(bundle.sources()))
    + r"""
import json, os, resource, sys, time
from dltui.node.probe.host import HostCollector
from dltui.node.probe.problems import Problems
from dltui.node.probe.units import UnitPoller

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def pid1():
    f = open("/proc/1/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

n = int(sys.argv[1])
poller = UnitPoller(["dl_train.service"], "/var/lib/ckpt/*.pt", Problems())
poller.sample()
t, s = cpu(), pid1()
for _ in range(n):
    poller._next = 0.0  # due: a full poll every time
    poller.sample()
full, systemd = (cpu() - t) / n, (pid1() - s) / n
light = UnitPoller(["dl_train.service"], None, Problems(), poll_s=1e9)
light.sample()
t = cpu()
for _ in range(20 * n):
    light.sample()
between = (cpu() - t) / (20 * n)
host = HostCollector(Problems())
host.sample()
t = cpu()
for _ in range(n):
    host.sample()
    time.sleep(0.01)
ref = (cpu() - t) / n
print(json.dumps({"full": full, "systemd": systemd, "between": between, "host": ref}))
"""
)


def config(lab: SshLab, node: SystemdNode, base: Path) -> Path:
    jump = lab.jump
    known = base / "known_hosts"
    known.write_text(jump.known_hosts_line() + (node.base / "known_hosts").read_text())
    cfg = base / "ssh_config"
    cfg.write_text(
        f"Host jump\n  HostName {jump.address}\n  Port {jump.port}\n  User {lab.user}\n"
        f"Host node\n  HostName {node.ip}\n  User root\n  ProxyJump jump\n"
        f"Host *\n  IdentityFile {lab.client_key}\n  IdentityFile {node.base / 'client_key'}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {known}\n  BatchMode yes\n  ConnectTimeout 5\n"
    )
    return cfg


async def dltui_round_trips(cfg: Path, argv, rounds: int) -> list[float]:
    commands = SshCommands(SshOptions(ssh_config=str(cfg)))
    try:
        first = await commands.run_command("node", argv, 10)  # connects: jump, then the node
        if not first.ok:
            raise SystemExit(f"dltui could not run systemctl show: {first.first_error_line()}")
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            res = await commands.run_command("node", argv, 10)
            times.append(time.perf_counter() - start)
            assert res.ok and "ActiveState=active" in res.stdout, res
        return times
    finally:
        await commands.close()


def openssh_round_trips(cfg: Path, argv, rounds: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        done = subprocess.run(
            ["ssh", "-F", str(cfg), "node", shell_line(argv)],
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
        if done.returncode != 0 or "ActiveState=active" not in done.stdout:
            raise SystemExit(f"OpenSSH reference failed: {done.stderr.strip()}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    why = missing()
    if why:
        raise SystemExit(f"cannot run: {why}")
    with tempfile.TemporaryDirectory(prefix="dltui-bench-unit-") as tmp:
        base = Path(tmp)
        lab = SshLab(base / "lab")
        lab.add_node("jump", jump=True, fake_smi=False)
        node = SystemdNode(base / "node", 9)
        try:
            lab.start()
            node.start()
            print(f"systemd node booted in {node.boot_s:.2f} s")
            cfg = config(lab, node, base)
            argv = show_argv(["dl_train.service"])
            ours = asyncio.run(dltui_round_trips(cfg, argv, args.rounds))
            ref = openssh_round_trips(cfg, argv, max(5, args.rounds // 3))
            m_ours, m_ref = statistics.median(ours), statistics.median(ref)
            print(
                f"systemctl show round trip through the jump: dltui (existing connection) median "
                f"{m_ours * 1000:.1f} ms, OpenSSH ssh -J (fresh) median {m_ref * 1000:.1f} ms: "
                f"{m_ours / m_ref:.3f}x (target <= 0.3x)"
            )
            probe = base64.b64encode(bundle.payload()).decode()
            out = node.exec(["python3", "-I", "-S", "-c", NODE_SIDE, "20"], timeout=120, input=probe).stdout
            f = json.loads(out)
            per_interval = (f["full"] + f["systemd"]) / UNIT_POLL_S + f["between"]
            print(
                f"unit poll on the node: one full poll {f['full'] * 1000:.2f} ms CPU "
                "(probe + systemctl) "
                f"+ {f['systemd'] * 1000:.2f} ms in systemd (PID 1); readlink between polls "
                f"{f['between'] * 1e6:.1f} us"
            )
            print(
                f"per 1 s interval at the default poll every {UNIT_POLL_S:g} s: "
                f"{per_interval * 1000:.3f} ms CPU "
                f"(target <= 0.5 ms); {per_interval / f['host']:.2f}x the probe's own host sample "
                f"({f['host'] * 1000:.2f} ms); polling every second would cost "
                f"{(f['full'] + f['systemd']) * 1000:.2f} ms"
            )
        finally:
            node.close()
            lab.close()
            intact = node.canary_intact()
            node.remove_canary()
            if not intact:
                raise SystemExit("the host's /tmp canary vanished while the systemd node ran")


if __name__ == "__main__":
    main()
