"""The files dltui writes on the operator's machine, through the command line an operator types
(``python -m dltui``), as root, with files and links planted first by another user (uid 65534,
through setpriv) in a folder others can write into: the victim stays as it was, the refusal is
one line naming the path, and nothing is sent. Under umask 000 what dltui makes is still 0600
(files) and 0700 (folders). Nothing relies on fs.protected_symlinks.

(The same, function by function: tests/unit/test_private_files.py.)"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.planted import NOBODY, VICTIM_TEXT, as_nobody, shared_tmp

ROOT = Path(__file__).resolve().parents[2]
LINK = "is a symbolic link; dltui does not write through links"
THEIRS = "belongs to nobody (uid 65534), not to you; dltui does not write into another user's file"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def shared():
    """A /tmp of its own (1777), a victim file of root's, a private state folder and a fake
    ``systemctl`` that writes down every call."""
    with shared_tmp("dltui-planted-") as (base, _, _):
        (base / "bin").mkdir()
        fake = base / "bin" / "systemctl"
        fake.write_text(f'#!/bin/sh\necho "$*" >> {base}/systemctl.calls\n')
        fake.chmod(0o755)
        yield base


def dltui(base: Path, *args: str, state: Path | None = None, umask: int = 0o022) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(base / "home"), XDG_STATE_HOME=str(state or base / "state"),
               PATH=f"{base / 'bin'}:{os.environ['PATH']}")
    env.pop("DLTUI_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=60, umask=umask)


def calls(base: Path) -> str:
    path = base / "systemctl.calls"
    return path.read_text() if path.exists() else ""


# -- --log-file, the default log, the audit log ----------------------------------------------


def test_a_log_file_linked_by_another_user_is_refused_in_one_line(shared):
    log = shared / "tmp" / "dltui.log"
    as_nobody("ln", "-s", str(shared / "victim"), str(log))
    for argv in (["snapshot", "--seconds", "0.2"], ["burn-in", "attach", "r1", "gpu99"]):
        done = dltui(shared, *argv, "--debug", "--log-file", str(log))
        assert (done.returncode, done.stderr, done.stdout) == (3, f"dltui: {log}: {LINK}\n", "")
    assert (shared / "victim").read_text() == VICTIM_TEXT


def test_another_users_0666_file_in_a_0777_folder_is_not_kept_as_the_log(shared):
    folder = shared / "logs"
    folder.mkdir()
    folder.chmod(0o777)  # no sticky bit: anyone may rename or replace what is in it
    log = folder / "dltui.log"
    as_nobody("sh", "-c", f"umask 0; printf 'theirs\\n' > {log}")
    done = dltui(shared, "snapshot", "--seconds", "0.2", "--debug", "--log-file", str(log))
    assert (done.returncode, done.stderr) == (3, f"dltui: {log}: {THEIRS}\n")
    assert log.read_text() == "theirs\n" and log.stat().st_uid == NOBODY


def test_a_state_folder_of_another_users_is_refused_before_anything_runs(shared):
    as_nobody("mkdir", "-m", "0777", str(shared / "tmp" / "dltui"))
    done = dltui(shared, "unit", "restart", "train.service", "localhost", "--yes", state=shared / "tmp")
    assert done.returncode == 2
    assert done.stderr == (
        f"dltui: {shared / 'tmp' / 'dltui'}: belongs to nobody (uid 65534), not to you; "
        "dltui does not write into another user's folder\n"
    )
    assert list((shared / "tmp" / "dltui").iterdir()) == [] and calls(shared) == ""


def test_a_restart_whose_audit_log_is_a_planted_link_is_refused_and_nothing_is_sent(shared):
    """The state folder world-writable (an XDG_STATE_HOME in a shared place): another user
    links audit.jsonl to a file of root's. The action is refused before systemctl is run."""
    folder = shared / "state" / "dltui"
    folder.mkdir(parents=True)
    folder.chmod(0o1777)
    audit = folder / "audit.jsonl"
    as_nobody("ln", "-s", str(shared / "victim"), str(audit))
    done = dltui(shared, "unit", "restart", "train.service", "localhost", "--yes")
    assert done.returncode == 1
    assert done.stdout == (
        f"localhost: refused: cannot write the audit log {audit}: {LINK}; nothing was sent\n"
    )
    assert (shared / "victim").read_text() == VICTIM_TEXT and calls(shared) == ""


# -- --record ----------------------------------------------------------------------------------


def test_a_recording_path_linked_by_another_user_is_refused_in_one_line(shared):
    path = shared / "tmp" / "night.jsonl"
    as_nobody("ln", "-s", str(shared / "victim"), str(path))
    done = dltui(shared, "snapshot", "--seconds", "0.2", "--record", str(path))
    assert (done.returncode, done.stderr, done.stdout) == (3, f"dltui: {path}: {LINK}\n", "")
    assert (shared / "victim").read_text() == VICTIM_TEXT


def test_under_umask_000_recordings_logs_and_the_audit_are_0600_in_0700_folders(shared):
    tmp = shared / "tmp"
    done = dltui(shared, "snapshot", "--seconds", "0.3", "--debug", "--record", str(tmp / "r.jsonl"),
                 "--log-file", str(tmp / "named" / "dltui.log"), umask=0)
    assert done.returncode in (0, 1, 2), done.stderr
    gz = dltui(shared, "snapshot", "--seconds", "0.3", "--debug", "--record", str(tmp / "r.jsonl.gz"), umask=0)
    assert gz.returncode in (0, 1, 2), gz.stderr
    restart = dltui(shared, "unit", "restart", "train.service", "localhost", "--yes", umask=0)
    assert "train.service" in calls(shared), restart  # it did run: the audit has its lines
    state = shared / "state" / "dltui"
    made = [tmp / "r.jsonl", tmp / "r.jsonl.gz", tmp / "named" / "dltui.log", state / "dltui.log",
            state / "audit.jsonl"]
    assert {str(p): mode(p) for p in made} == {str(p): 0o600 for p in made}
    assert (mode(tmp / "named"), mode(state), mode(state.parent)) == (0o700, 0o700, 0o700)


# -- the burn-in report folder -------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["attach", "r1", "gpu99"], ["gpu99", "--run-id", "r1"]])
def test_a_report_folder_planted_at_a_named_runs_name_is_refused_before_connecting(shared, argv):
    """``attach RUN`` (its id is on the command line, which any user can read in ps) or
    ``--run-id``: the folder burnin-RUN is known in advance. Another user's link there, or a
    folder of theirs, is said at once; nothing is started, nothing written through."""
    tmp, target = shared / "tmp", shared / "target"
    target.mkdir()
    as_nobody("ln", "-s", str(target), str(tmp / "burnin-r1"))
    started = time.monotonic()
    done = dltui(shared, "burn-in", *argv, "--report", str(tmp))
    assert (done.returncode, done.stderr) == (3, f"dltui: {tmp / 'burnin-r1'}: {LINK}\n")
    assert time.monotonic() - started < 30 and list(target.iterdir()) == [] and calls(shared) == ""
