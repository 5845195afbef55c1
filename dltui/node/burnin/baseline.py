"""The seam for evidence a burn-in reads before the load and again at the end, judged by what
changed (the BMC's event log, the kernel's log; a new one adds a module and a line in
``preflight.baselines``)."""

from __future__ import annotations

import subprocess

from dltui.node.burnin.places import Result, RunDir


class Baseline:
    """One piece of before/after evidence, recorded as ``result[key]``: ``{"tool": None,
    "reason": why}`` when it could not be read, else what the verdict judges (an output file
    in the run folder, counts)."""

    key = ""

    def before(self, run: RunDir, result: Result) -> None:
        """In preflight, before any stressor starts."""

    def after(self, run: RunDir, result: Result, since: float) -> None:
        """At the end of the run, stopped or not (``since``: when the run started)."""


def run_text(argv: list[str]) -> tuple[str | None, str]:
    """(stdout, stderr) of a short command; (None, why) when it fails."""
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, "%s: %s" % (argv[0], exc)
    if proc.returncode != 0:
        return None, "%s: %s" % (argv[0], (proc.stderr.strip() or "exit %d" % proc.returncode))
    return proc.stdout, proc.stderr
