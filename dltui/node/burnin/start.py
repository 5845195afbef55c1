"""``start``: checks the plan, takes the node's burn-in lock (a second start is refused), makes
the run folder, and launches ``run`` detached: a transient systemd unit when root on a systemd
node, else a new session (setsid) with every stream redirected, so the SSH channel that started
it closes and a dropped connection cannot reach it. Prints one JSON line."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from dltui.node.burnin.places import (
    EXIT_REFUSED,
    Refused,
    base_dir,
    emit,
    take_lock,
    write_json_atomic,
)
from dltui.node.burnin.plan import Plan, check_args, plan_from


def systemd_usable() -> bool:
    return (
        os.geteuid() == 0
        and os.path.isdir("/run/systemd/system")
        and bool(shutil.which("systemd-run"))
    )


def _remove_sent(path: str | None) -> None:
    """The script sent for this start and the private folder it came in: nothing is left."""
    if path:
        os.unlink(path)
        try:
            os.rmdir(os.path.dirname(path))  # only ever an empty folder
        except OSError:
            pass


def cmd_start(args: argparse.Namespace) -> int:
    try:
        check_args(args)
        base = base_dir()
        lock_fd = take_lock(base)
        run_dir = os.path.join(base, args.run_id)
        plan = plan_from(args)
        try:
            os.mkdir(run_dir, 0o700)
        except OSError as exc:
            raise Refused(
                "cannot create the run directory %s: %s" % (run_dir, exc.strerror)
            ) from None
    except Refused as exc:
        _remove_sent(args.self_path)
        emit({"ok": False, "reason": str(exc)})
        return EXIT_REFUSED
    write_json_atomic(os.path.join(run_dir, "plan.json"), plan)
    driver = os.path.join(run_dir, "driver.py")
    shutil.copyfile(args.self_path or os.path.abspath(sys.argv[0]), driver)
    _remove_sent(args.self_path)
    with open(os.path.join(base, "active"), "w") as f:
        f.write(args.run_id + "\n")
    log = os.path.join(run_dir, "run.log")
    python = sys.executable or "python3"
    launcher = args.launcher
    if launcher == "auto":
        launcher = "systemd" if systemd_usable() else "setsid"
    if launcher == "systemd":
        plan["unit"] = "dltui-burnin-%s" % args.run_id  # stop goes through systemctl then
        write_json_atomic(os.path.join(run_dir, "plan.json"), plan)
        os.close(lock_fd)  # the unit's driver takes the lock; the unit name is a lock as well
        return _start_systemd(plan, run_dir, driver, python, log)
    argv = [python, "-I", "-S", driver, "run", "--dir", run_dir, "--lock-fd", str(lock_fd)]
    with open(os.devnull, "rb") as devnull, open(log, "ab") as out:
        # A new session: the SSH session's hang-up does not reach it, and with every stream
        # redirected the channel that started it closes as soon as we exit.
        proc = subprocess.Popen(
            argv,
            stdin=devnull,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(lock_fd,),
            cwd=run_dir,
        )
    emit({"ok": True, "run_id": args.run_id, "dir": run_dir, "launcher": "setsid", "pid": proc.pid})
    return 0


def _start_systemd(plan: Plan, run_dir: str, driver: str, python: str, log: str) -> int:
    """root + systemd: a transient unit (no --collect: Result and ExecMainStatus must stay)."""
    run_id = plan["run_id"]
    unit = "dltui-burnin-%s" % run_id
    argv = [
        "systemd-run",
        "--unit=" + unit,
        "--description=dltui burn-in %s" % run_id,
        "--remain-after-exit",
        "-p",
        "RuntimeMaxSec=%d" % (plan["duration_s"] + 3600),
        # The stressors are looked up on the PATH the operator's session had, not the unit's.
        "--setenv=PATH=" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        "-p",
        "StandardOutput=append:" + log,
        "-p",
        "StandardError=append:" + log,
        python,
        "-I",
        "-S",
        driver,
        "run",
        "--dir",
        run_dir,
    ]
    proc = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if proc.returncode != 0:
        emit({"ok": False, "reason": "systemd-run failed: %s" % proc.stdout.strip()[-300:]})
        return EXIT_REFUSED
    emit({"ok": True, "run_id": run_id, "dir": run_dir, "launcher": "systemd", "unit": unit})
    return 0
