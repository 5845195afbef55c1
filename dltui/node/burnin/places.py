"""Where a burn-in lives on the node: the base folder, the node's lock, a run's folder and its
files (JSON written atomically), and the one-line JSON answers the driver prints to dltui."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import sys
import time
from typing import Any, Dict

EXIT_REFUSED = 4  # start refused (bad plan, or a burn-in already running)

# What result.json and status.json hold: JSON objects, judged on the operator's side.
Result = Dict[str, Any]


class Refused(Exception):
    """The plan cannot run here; the message says why in plain words."""


def base_dir() -> str:
    """The folder that holds every run (and the node's lock): ``$DLTUI_BURNIN_DIR``, else
    ``/var/lib/dltui/burnin`` as root, else the user's XDG state folder."""
    override = os.environ.get("DLTUI_BURNIN_DIR")
    if override:
        return override
    if os.geteuid() == 0:
        return "/var/lib/dltui/burnin"
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "dltui", "burnin")


def write_json_atomic(path: str, obj: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def read_json(path: str, default: Any = None) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def emit(obj: dict[str, Any]) -> None:
    """One JSON answer line on stdout: what dltui reads back from start and stop."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def private_dir(path: str) -> None:
    """Makes ``path`` (0700) or checks the one there is this user's own: a real directory (not a
    link), owned by this user, writable by no one else. Another user's folder would let them
    plant links or files the run then writes through or trusts."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused("%s is not a directory (a link?): burn-in refuses to use it" % path)
    if st.st_uid != os.geteuid():
        raise Refused("%s belongs to uid %d, not to this user: burn-in refuses to use it"
                      % (path, st.st_uid))
    if st.st_mode & 0o022:
        raise Refused("%s is writable by other users (mode %o): make it 0700"
                      % (path, stat.S_IMODE(st.st_mode)))


def take_lock(base: str) -> int:
    """The node's burn-in lock (flock on base/lock): held by the running driver for its life."""
    private_dir(base)
    fd = os.open(os.path.join(base, "lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        active = ""
        try:
            with open(os.path.join(base, "active")) as f:
                active = f.read().strip()
        except OSError:
            pass
        raise Refused(  # noqa: B904 - the reason is the other run, not the OSError
            "a burn-in is already running on this node%s; stop it first"
            % (" (run %s)" % active if active else "")
        )
    return fd


class RunDir:
    """One run's folder: plan.json, driver.py, pid, run.log (the driver's stdout), status.json,
    samples.jsonl, the stressors' output, result.json, exit_code."""

    def __init__(self, path: str) -> None:
        self.dir = path

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def exists(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def plan(self) -> dict[str, Any]:
        return read_json(self.path("plan.json"), {})

    def log(self, msg: str) -> None:
        """A line of run.log (the driver's stdout is that file)."""
        sys.stdout.write("%s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), msg))
        sys.stdout.flush()

    def write_exit_code(self, code: int) -> None:
        with open(self.path("exit_code"), "w") as f:
            f.write("%d\n" % code)

    def driver_pid(self) -> int:
        """The pid in the run's pid file (OSError or ValueError when it cannot be read)."""
        with open(self.path("pid")) as f:
            return int(f.read().strip())

    def is_driver(self, pid: int) -> bool:
        """Whether ``pid`` is this run's driver: a live process started from this run folder
        (a pid reused by something else does not count)."""
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return self.dir.encode() in f.read()
        except OSError:
            return False

    def driver_alive(self) -> bool:
        """Whether the run's driver still runs. No pid file yet: it is still starting."""
        try:
            pid = self.driver_pid()
        except FileNotFoundError:
            return True
        except (OSError, ValueError):
            return False
        return self.is_driver(pid)
