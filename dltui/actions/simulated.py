"""How a simulated node (the demo fleet's) answers the actions' commands: who we are,
``systemctl show`` / restart / stop / start of its training unit, its journal, the GPU
processes, a kill. Given to the demo transport as its command hook by whoever builds it."""

from __future__ import annotations

import json

from dltui.transport.demo import jobs as demo_jobs
from dltui.transport.demo.node import SimNode

from .commands import IDENTITY_ARGV


def answer(n: SimNode, argv: list[str], now: float) -> tuple[str, int]:
    """(output, exit status) of ``argv`` (without its timeout and sudo) on node ``n``."""
    unit = n.unit
    if tuple(argv) == IDENTITY_ARGV:
        return "0\nroot\n/usr/bin/systemctl\n/usr/bin/kill\n", 0
    tool = argv[0].rsplit("/", 1)[-1] if argv else ""
    if tool == "systemctl" and argv[1:2] == ["show"]:
        units = [a for a in argv[2:] if a.endswith(".service")]
        return "\n".join(
            unit.show(n.boot_time) if u == n.unit_name else "LoadState=not-found\n" for u in units
        ), 0
    if tool == "systemctl" and len(argv) == 3 and argv[2] == n.unit_name:
        if argv[1] in ("restart", "start"):
            unit.restart(now, crashed=False)
        elif argv[1] == "stop":
            unit.stop()
        return "", 0
    if tool == "date":  # the node's clock, µs
        return f"{int(now * 1e6)}\n", 0
    if tool == "journalctl":
        return _journal(n, argv, now), 0
    if tool == "sh" and argv[1:2] == ["-c"] and argv[-1].startswith("/proc/"):
        pid = int(argv[-1].split("/")[2])
        mine = pid == unit.main_pid or pid in n.gpu_pids()
        return "0\n" + ("0::/system.slice/dl_train.service\n" if mine else "0::/user.slice\n"), 0
    if tool in ("scontrol", "docker"):  # what the GPU processes' job or container is
        known = demo_jobs.answer(n.index, argv, now)
        if known is not None:
            return known
    if tool == "nvidia-smi":
        return "".join(f"{pid}\n" for pid in n.gpu_pids()), 0
    if tool == "kill":
        return "", 0
    if tool == "test":
        return "", 1  # the signalled process is gone
    return f"demo: {' '.join(argv)}: not simulated", 127


def _journal(n: SimNode, argv: list[str], now: float) -> str:
    """Three lines of training progress a second; the crash-looping node's last one its crash."""
    step = int(now) % 100000
    after = -1  # --after-cursor: only what came later (a frozen demo clock adds nothing)
    if "--after-cursor" in argv:
        after = int(argv[argv.index("--after-cursor") + 1].rsplit("=", 1)[-1])
    lines = []
    for k in range(3):
        if step * 3 + k <= after:
            continue
        text = f"step {step * 3 + k}: loss {2.0 + (step % 7) / 10:.3f}, {1180 + k} samples/s"
        if n.crashloops and k == 2:
            text = "RuntimeError: CUDA error: an illegal memory access was encountered"
        lines.append(
            json.dumps(
                {
                    "__CURSOR": f"s=demo;i={step * 3 + k}",
                    "__REALTIME_TIMESTAMP": str(int(now * 1e6)),
                    "MESSAGE": text,
                }
            )
        )
    return "\n".join(lines) + "\n"
