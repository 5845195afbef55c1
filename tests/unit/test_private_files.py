"""The files dltui writes on the operator's machine (the audit log, its own log, ``--record``
files, the burn-in report) in folders others can write into. Another user (uid 65534, through
setpriv) plants a link, a file of theirs, a FIFO or a folder of theirs where dltui writes; the
step runs as root, as dltui often does; the victim stays as it was and the refusal is one line
naming the path. Files made are 0600 and folders 0700 under umask 000. A world-writable sticky
folder of the test's own stands in for /tmp; nothing relies on fs.protected_symlinks.

(The same through the command line: tests/integration/test_planted_files.py.)"""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dltui import logs
from dltui.actions.audit import AuditError, AuditLog
from dltui.burnin import demo, verdict
from dltui.burnin.remote import new_run_id
from dltui.burnin.session import BurnIn
from dltui.core.state import FleetState
from dltui.node.burnin.plan import RUN_ID
from dltui.transport.recording.recorder import Recorder, RecordError
from dltui.transport.ssh.commands import SshCommands
from dltui.transport.ssh.options import SshOptions
from tests.planted import NOBODY, VICTIM_TEXT, as_nobody, shared_tmp

LINK = "is a symbolic link; dltui does not write through links"
THEIRS = "belongs to nobody (uid 65534), not to you; dltui does not write into another user's file"


@pytest.fixture
def shared():
    """A /tmp of its own (1777) and a victim file of root's."""
    with shared_tmp("dltui-planted-") as (_, tmp, victim):
        yield tmp, victim


@pytest.fixture
def umask_000():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def record(audit: AuditLog) -> None:
    audit.record("gpu01", "restart", None, "refused", "a test", 0.0)


# -- the audit log -------------------------------------------------------------------------


def test_the_audit_log_never_writes_through_a_planted_link(shared):
    tmp, victim = shared
    path = tmp / "audit.jsonl"
    as_nobody("ln", "-s", str(victim), str(path))
    with pytest.raises(AuditError) as refused:
        record(AuditLog(path))
    assert str(refused.value) == f"cannot write the audit log {path}: {LINK}"
    assert victim.read_text() == VICTIM_TEXT


def test_the_audit_log_refuses_another_users_file_and_leaves_it_as_it_was(shared):
    tmp, _ = shared
    path = tmp / "audit.jsonl"
    as_nobody("sh", "-c", f"umask 0; printf 'their line\\n' > {path}")
    with pytest.raises(AuditError) as refused:
        record(AuditLog(path))
    assert str(refused.value) == f"cannot write the audit log {path}: {THEIRS}"
    assert path.read_text() == "their line\n" and path.stat().st_uid == NOBODY


def test_the_audit_log_refuses_a_state_folder_of_another_users(shared):
    tmp, _ = shared
    folder = tmp / "dltui"
    as_nobody("mkdir", "-m", "0755", str(folder))
    with pytest.raises(AuditError) as refused:
        record(AuditLog(folder / "audit.jsonl"))
    assert str(refused.value) == (
        f"cannot write the audit log {folder / 'audit.jsonl'}: {folder}: belongs to nobody (uid 65534), not to you; "
        "dltui does not write into another user's folder"
    )
    assert list(folder.iterdir()) == []


def test_the_audit_log_never_follows_another_users_link_to_a_folder_of_roots(shared):
    """The state folder a link of nobody's to a folder of root's: the folder's owner alone
    would pass, the link's owner does not."""
    tmp, victim = shared
    link = tmp / "dltui"
    as_nobody("ln", "-s", str(victim.parent), str(link))
    with pytest.raises(AuditError) as refused:
        record(AuditLog(link / "audit.jsonl"))
    assert str(refused.value) == (
        f"cannot write the audit log {link / 'audit.jsonl'}: {link}: is a symbolic link of nobody (uid 65534); "
        "dltui does not follow another user's link"
    )
    assert not (victim.parent / "audit.jsonl").exists()


def test_the_audit_log_is_never_a_second_name_of_another_file(shared):
    """A hard link writes into the file it names (root's here: this machine's
    fs.protected_hardlinks stops nobody making one; where it is 0, nobody could)."""
    tmp, victim = shared
    path = tmp / "audit.jsonl"
    victim.chmod(0o600)
    os.link(victim, path)
    with pytest.raises(AuditError, match=re.escape(f"{path}: has 2 hard links")):
        record(AuditLog(path))
    assert victim.read_text() == VICTIM_TEXT


def test_a_fifo_planted_as_the_audit_log_is_refused_without_waiting_for_a_reader(shared):
    tmp, _ = shared
    path = tmp / "audit.jsonl"
    as_nobody("mkfifo", "-m", "0666", str(path))
    code = (
        "import sys; from dltui.actions.audit import AuditLog, AuditError\n"
        "try:\n    AuditLog(sys.argv[1]).record('gpu01', 'restart', None, 'refused', 'x', 0.0)\n"
        "except AuditError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30)
    assert done.stdout == (
        f"cannot write the audit log {path}: is not a regular file; dltui writes only into its own files\n"
    )


def test_the_operators_own_audit_log_is_appended_to_across_runs_until_others_can_write_it(shared, umask_000):
    tmp, _ = shared
    path = tmp / "state" / "dltui" / "audit.jsonl"
    record(AuditLog(path))
    record(AuditLog(path))  # a second session: the same file, appended to
    assert len(path.read_text().splitlines()) == 2
    assert (mode(path), mode(path.parent), mode(path.parent.parent)) == (0o600, 0o700, 0o700)
    path.chmod(0o666)  # anyone could now rewrite what was done
    with pytest.raises(AuditError, match=re.escape(f"{path}: can be written by others (mode 0666)")):
        record(AuditLog(path))
    assert len(path.read_text().splitlines()) == 2


# -- dltui's own log -----------------------------------------------------------------------


@pytest.fixture
def restored_logging():
    """logs.setup changes the "dltui" and "asyncssh" loggers of this process: put them back."""
    loggers = [logging.getLogger(name) for name in ("dltui", "asyncssh")]
    kept = [(lg, list(lg.handlers), lg.level, lg.propagate) for lg in loggers]
    yield
    for lg, handlers, level, propagate in kept:
        for handler in lg.handlers:
            if handler not in handlers:
                handler.close()
        lg.handlers[:] = handlers
        lg.setLevel(level)
        lg.propagate = propagate


def test_a_link_planted_after_the_log_was_checked_is_not_written_through(shared, restored_logging, capsys):
    """The log file is opened when there is something to write: a link planted between the
    check at start and that moment is refused too, in one line, once."""
    tmp, victim = shared
    path = tmp / "dltui.log"
    logs.setup(str(path))
    as_nobody("ln", "-s", str(victim), str(path))
    logging.getLogger("dltui").warning("something to log")
    logging.getLogger("dltui").warning("and more")
    assert victim.read_text() == VICTIM_TEXT
    assert capsys.readouterr().err == f"dltui: {path}: {LINK}; not logging\n"


def test_the_log_is_appended_to_across_runs_0600_and_another_users_file_is_left_alone(
    shared, restored_logging, umask_000
):
    tmp, _ = shared
    path = tmp / "logs" / "dltui.log"
    for n in range(2):
        logs.setup(str(path))
        logging.getLogger("dltui").warning("run %d", n)
        logging.getLogger("dltui").handlers[-1].close()
    assert [line.split(": ", 1)[1] for line in path.read_text().splitlines()] == ["run 0", "run 1"]
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)
    theirs = tmp / "theirs.log"  # --log-file naming a 0666 file another user left in a shared folder
    as_nobody("sh", "-c", f"umask 0; printf 'theirs\\n' > {theirs}")
    with pytest.raises(logs.LogFileError) as refused:
        logs.setup(str(theirs))
    assert str(refused.value) == f"{theirs}: {THEIRS}"
    assert theirs.read_text() == "theirs\n"


# -- recordings ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_recording_never_writes_through_a_planted_link(shared, name):
    tmp, victim = shared
    path = tmp / name
    as_nobody("ln", "-s", str(victim), str(path))
    with pytest.raises(RecordError) as refused:
        Recorder.create(FleetState(), path, ["gpu01"])
    assert str(refused.value) == f"{path}: {LINK}"
    assert victim.read_text() == VICTIM_TEXT


def test_a_recording_refuses_another_users_file_by_its_owner(shared):
    tmp, _ = shared
    path = tmp / "r.jsonl"
    as_nobody("sh", "-c", f"umask 0; printf 'theirs\\n' > {path}")
    with pytest.raises(RecordError) as refused:
        Recorder.create(FleetState(), path, ["gpu01"])
    assert str(refused.value) == f"{path}: {THEIRS}"
    assert path.read_text() == "theirs\n"


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.gz"])
def test_a_recording_is_0600_under_umask_000(tmp_path, umask_000, name):
    path = tmp_path / name
    with Recorder.create(FleetState(), path, ["gpu01"]) as recorder:
        recorder.on_status("gpu01", "ok")
    assert mode(path) == 0o600
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    assert json.loads(raw.splitlines()[0])["nodes"] == ["gpu01"]  # whole, the gzip trailer too


# -- the burn-in report and its run id -------------------------------------------------------


def judged_session(run_id: str) -> BurnIn:
    """A finished run held in memory (the demo's, simulated), as ``judge`` leaves it."""
    session = BurnIn(SshCommands(SshOptions()), [], run_id)
    session.runs = demo.runs(load_s=30)
    session.verdicts = [verdict.judge(r, session.thresholds) for r in session.runs]
    return session


def test_the_report_never_writes_through_a_folder_link_planted_at_its_name(shared):
    tmp, victim = shared
    target = victim.parent / "target"
    target.mkdir()
    (target / "report.md").write_text(VICTIM_TEXT)
    folder = tmp / "burnin-r1"
    as_nobody("ln", "-s", str(target), str(folder))
    with pytest.raises(OSError) as refused:
        judged_session("r1").write_report(folder)
    assert str(refused.value) == f"{folder}: {LINK}"
    assert [p.name for p in target.iterdir()] == ["report.md"] and (target / "report.md").read_text() == VICTIM_TEXT


def test_the_report_refuses_a_folder_of_another_users_holding_a_link(shared):
    """The audit's finding: the folder pre-created by another user, report.md in it a link;
    its owner could also change the verdict afterwards."""
    tmp, victim = shared
    folder = tmp / "burnin-r1"
    as_nobody("mkdir", "-m", "0777", str(folder))
    as_nobody("ln", "-s", str(victim), str(folder / "report.md"))
    with pytest.raises(OSError) as refused:
        judged_session("r1").write_report(folder)
    assert str(refused.value) == (
        f"{folder}: belongs to nobody (uid 65534), not to you; dltui does not write into another user's folder"
    )
    assert victim.read_text() == VICTIM_TEXT and sorted(p.name for p in folder.iterdir()) == ["report.md"]


def test_the_report_folder_is_0700_its_files_0600_and_attaching_again_rewrites_them(shared, umask_000):
    tmp, _ = shared
    folder = tmp / "burnin-r1"
    session = judged_session("r1")
    paths = session.write_report(folder)
    assert mode(folder) == 0o700
    assert {p.name: mode(p) for p in folder.iterdir()} == {
        "report.json": 0o600, "report.md": 0o600, "report.html": 0o600, "recording.jsonl": 0o600,
    }
    assert json.loads(paths["json"].read_text())["run_id"] == "r1"
    again = session.write_report(folder)  # ``burn-in attach`` to the same run, later
    assert again == paths and sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in paths.values())


def test_new_run_ids_carry_a_random_part_and_pass_the_run_id_check():
    """The report folder is burnin-RUN in a folder others may write into: a run id that is the
    start time alone is a name they can plant first."""
    ids = {new_run_id() for _ in range(20)}  # the same second, mostly
    assert len(ids) == 20
    assert all(RUN_ID.match(i) and re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", i) for i in ids)
