"""The BMC's event log (PSU, fan, power events): ``ipmitool sel elist`` before the load and
after it; the lines that are new are the run's (power and fan events fail the node)."""

from __future__ import annotations

import os
import shutil

from dltui.node.burnin.baseline import Baseline, run_text
from dltui.node.burnin.places import Result, RunDir


def sel_lines() -> tuple[list[str] | None, str]:
    """``ipmitool sel elist`` lines, or (None, why): as this user, else ``sudo -n``."""
    if not shutil.which("ipmitool"):
        return None, "ipmitool is not installed on the node"
    out, why = run_text(["ipmitool", "sel", "elist"])
    if out is None and os.geteuid() != 0 and shutil.which("sudo"):
        out, why_sudo = run_text(["sudo", "-n", "ipmitool", "sel", "elist"])
        why = "%s; with sudo -n: %s" % (why.strip(), why_sudo.strip())
    if out is None:
        return None, "ipmitool sel elist failed: %s" % why.strip()[:300]
    return [x for x in out.splitlines() if x.strip()], ""


class BmcSel(Baseline):
    key = "bmc"

    def __init__(self) -> None:
        self._before: set[str] | None = None

    def before(self, run: RunDir, result: Result) -> None:
        lines, why = sel_lines()
        if lines is None:
            result[self.key] = {"tool": None, "reason": why}
            return
        self._before = set(lines)
        result[self.key] = {"tool": "ipmitool", "before": len(lines)}

    def after(self, run: RunDir, result: Result, since: float) -> None:
        if self._before is None:
            return
        lines, why = sel_lines()
        if lines is None:
            result[self.key] = {"tool": None, "reason": "after the run: %s" % why}
            return
        new = [x for x in lines if x not in self._before]
        with open(run.path("bmc_sel.log"), "w") as f:
            f.write("".join(x + "\n" for x in new))
        result[self.key].update(
            {"after": len(lines), "new": len(new), "output": "bmc_sel.log", "exit_code": 0}
        )
