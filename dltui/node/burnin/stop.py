"""``stop``: ends a run. Under systemd through ``systemctl stop`` (then ``reset-failed``, so
no failed unit is left); else SIGTERM to the run's own driver (its pid checked against the run
folder first). The run then stops its stressors and deletes its scratch files itself; this
waits for its exit code and prints one JSON line."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time

from dltui.node.burnin.places import RunDir, emit


def _systemctl(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemctl"] + list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _scratch_left(run: RunDir) -> bool:
    scratch = run.plan().get("scratch")
    return bool(scratch and os.path.exists(scratch))


def _stop_unit(run: RunDir, unit: str) -> int:
    """systemctl stop (SIGTERM to the driver, which winds down), then reset-failed: the
    unit's name is free again and no failed unit is left behind."""
    proc = _systemctl("stop", unit)
    _systemctl("reset-failed", unit)  # nothing to reset after a clean end: that is fine
    done = run.exists("exit_code")
    reason: str | None = None
    if proc.returncode != 0:
        reason = "systemctl stop %s failed: %s" % (unit, proc.stdout.strip()[-300:])
    elif not done:
        reason = "the run's unit %s stopped but the run wrote no exit code" % unit
    emit({"ok": reason is None, "unit": unit, "scratch_left": _scratch_left(run), "reason": reason})
    return 0 if reason is None else 1


def cmd_stop(args: argparse.Namespace) -> int:
    run = RunDir(os.path.abspath(args.dir))
    unit = run.plan().get("unit")
    if unit:
        return _stop_unit(run, unit)
    if run.exists("exit_code"):
        emit({"ok": True, "already": True})
        return 0
    try:
        pid = run.driver_pid()
        if not run.is_driver(pid):  # the pid was reused by something else
            raise OSError("process %d is not this run's driver" % pid)
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError) as exc:
        emit({"ok": False, "reason": "cannot signal the run: %s" % exc})
        return 1
    deadline = time.time() + args.wait
    while time.time() < deadline and not run.exists("exit_code"):
        time.sleep(0.2)
    done = run.exists("exit_code")
    emit(
        {
            "ok": done,
            "scratch_left": _scratch_left(run),
            "reason": None if done else "the run did not end within %g s" % args.wait,
        }
    )
    return 0 if done else 1
