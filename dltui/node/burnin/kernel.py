"""The kernel's words during the run (EDAC, MCE and PCIe AER lines are judged from them):
``journalctl -k`` since the start, else ``dmesg`` lines stamped after it; when neither can be
read the check is "not run"."""

from __future__ import annotations

import re
import time

from dltui.node.burnin.baseline import Baseline, run_text
from dltui.node.burnin.places import Result, RunDir


class KernelLog(Baseline):
    """Nothing to read before: the log's own time stamps mark what the run added."""

    key = "kernel"

    def after(self, run: RunDir, result: Result, since: float) -> None:
        out, why = run_text(
            ["journalctl", "-k", "--since", "@%d" % since, "--no-pager", "-o", "short-iso"]
        )
        tool = "journalctl"
        if out is None or "No journal files were found" in why:
            tool = "dmesg"
            out, why = run_text(["dmesg"])
            if out is not None:
                out = "\n".join(dmesg_since(out.splitlines(), since)) + "\n"
        if out is None:
            result[self.key] = {"tool": None, "reason": "kernel log unreadable: %s" % why[:200]}
            return
        with open(run.path("kernel.log"), "w") as f:
            f.write(out)
        result[self.key] = {"tool": tool, "exit_code": 0, "output": "kernel.log"}


def dmesg_since(lines: list[str], since: float) -> list[str]:
    """dmesg lines ("[seconds since boot] text") logged at or after wall time ``since``."""
    try:
        with open("/proc/uptime") as f:
            boot = time.time() - float(f.read().split()[0])
    except (OSError, ValueError):
        return lines
    kept = []
    for line in lines:
        m = re.match(r"^\[\s*(\d+\.\d+)\]", line)
        if m and boot + float(m.group(1)) >= since - 1:
            kept.append(line)
    return kept
