"""Every entry point speaks only its own words on stderr: no dependency's warning above a
command's answer (a cron mail, a Nagios check, a script reading the first line).

Each command runs as the user runs it, ``python -m dltui``, with warnings raised as errors
(``-W error``, and ``PYTHONWARNINGS=error`` for any Python it starts): a warning a dependency
raises while dltui imports it is a traceback here, not a line a user learns to ignore. The SSH
commands reach real sshd nodes on loopback (their GPUs are a fake nvidia-smi replaying a real
capture: the ``_fake_smi`` lab of these tests)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dltui.cli import SUBCOMMANDS
from tests.own_words import foreign_lines, read_until_own_line

from .sshd import REPO, client_env

HELP_PAGES = [[word, "--help"] for word in SUBCOMMANDS] + [["burn-in", "stop", "--help"], ["burn-in", "attach", "--help"]]


def _env(home: Path) -> dict[str, str]:
    env = client_env(home)
    env["PYTHONWARNINGS"] = "error"
    env["XDG_STATE_HOME"] = str(home / "state")
    env["XDG_CONFIG_HOME"] = str(home / "config")
    env.pop("DLTUI_CONFIG", None)
    return env


def _dltui(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "error", "-m", "dltui", *args], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout, stdin=subprocess.DEVNULL)


def test_version_and_every_help_page_print_nothing_on_stderr(tmp_path):
    env = _env(tmp_path)
    version = _dltui(["--version"], env)
    assert version.returncode == 0 and version.stderr == ""
    for args in [["--help"], *HELP_PAGES]:
        done = _dltui(args, env)
        assert done.returncode == 0 and done.stdout.startswith("usage: dltui"), (args, done.stderr)
        assert done.stderr == "", (args, done.stderr)


def test_a_snapshot_of_this_machine_writes_nothing_on_stderr(tmp_path):
    done = _dltui(["snapshot", "--seconds", "1", "--interval", "0.5"], _env(tmp_path))
    assert done.returncode in (0, 1, 2), done.stderr
    assert done.stdout.startswith("localhost: ") and done.stderr == ""


pytestmark_ssh = pytest.mark.sshd


@pytestmark_ssh
def test_an_ssh_snapshot_and_a_unit_status_speak_only_their_own_words_fake_smi(shared_lab, tmp_path):
    env = _env(shared_lab.make_home(tmp_path / "home"))
    snap = _dltui(["snapshot", "gpu01", "gpu02", "--seconds", "2", "--json"], env)
    assert snap.returncode in (0, 1, 2), snap.stderr
    assert '"name": "gpu01"' in snap.stdout and snap.stderr == ""
    unit = _dltui(["unit", "status", "dl_train.service", "gpu01"], env)
    assert "gpu01" in unit.stdout, unit.stdout + unit.stderr
    assert foreign_lines(unit.stderr) == [], unit.stderr


def _started(args: list[str], env: dict[str, str], own: str) -> None:
    """Start a long-running command, read stderr up to its ``own`` line, stop it with SIGTERM;
    nothing before, after or beside that line may be foreign."""
    proc = subprocess.Popen([sys.executable, "-W", "error", "-m", "dltui", *args], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, before = read_until_own_line(iter(proc.stderr.readline, ""), own)
        assert foreign_lines("".join(before)) == []
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert foreign_lines(rest) == [], rest


@pytestmark_ssh
def test_export_and_serve_start_up_speak_only_their_own_words_fake_smi(shared_lab, tmp_path):
    env = _env(shared_lab.make_home(tmp_path / "home"))
    _started(["export", "gpu02", "--listen", "127.0.0.1:0"], env, "dltui: serving http://")
    _started(["serve", "gpu02", "--listen", "127.0.0.1:0"], env, "dltui: serving the dashboard")


def test_the_one_place_asyncssh_is_imported_silences_only_its_known_warning():
    """The filter is scoped to asyncssh's import: after it, the same warning category raised
    anywhere else (dltui's own code included) still reaches the user."""
    import warnings

    from cryptography.utils import CryptographyDeprecationWarning

    from dltui.transport.ssh.library import asyncssh

    assert asyncssh.connect
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        warnings.warn("still heard", CryptographyDeprecationWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["still heard"]
    assert not any(f[0] == "ignore" and f[2] is CryptographyDeprecationWarning for f in warnings.filters)
    assert os.path.basename(asyncssh.__file__) == "__init__.py"
