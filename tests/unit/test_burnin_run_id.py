"""A burn-in run id goes into shell lines and paths on the node: only ids this tool makes pass,
and a bad one is refused before anything is sent."""

import subprocess
import sys

import pytest

from dltui.burnin import ship

ATTEMPTS = ["x$(touch /tmp/p)y", "a`id`", "../etc", "a/b", "run;reboot", "-rf", "a b", "a\nb", ""]


@pytest.mark.parametrize("run_id", ATTEMPTS)
def test_a_run_id_that_is_not_ours_is_refused_before_any_shell_line_is_built(run_id):
    with pytest.raises(ValueError, match="not a burn-in run id"):
        ship.follow_command(run_id, 0)
    with pytest.raises(ValueError):
        ship.stop_command(run_id)


def test_a_run_id_of_ours_is_quoted_and_not_echoed_back():
    line = ship.follow_command("20261203-084000", 0)
    assert "d=\"$b\"/20261203-084000;" in line
    assert "no such burn-in run on this node" in line  # the id is never put in the message


def test_the_cli_refuses_an_injected_run_id_as_a_usage_error_without_connecting():
    run = subprocess.run(
        [sys.executable, "-m", "dltui", "burn-in", "stop", "x$(touch /tmp/p)y", "gpu99"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 3
    assert "is not a burn-in run id" in run.stderr
    assert "gpu99" not in run.stdout  # no per-node answer: nothing was tried


def _follow(tmp_path, run_dir):
    script = tmp_path / "driver.py"
    script.write_text(ship.driver_script(), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script), "follow", "--dir", str(run_dir), "--poll", "0.05"],
        capture_output=True,
        timeout=60,
    )


def test_follow_ends_and_says_lost_when_the_driver_is_gone_without_an_exit_code(tmp_path):
    """A node that rebooted or an OOM-killed driver leaves no exit code: the follow must end
    (said so) instead of waiting for samples that will never come."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "samples.jsonl").write_bytes(b'{"t":1}\n{"t":2}\n')
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (run_dir / "pid").write_text(dead.stdout)  # that process has exited
    out = _follow(tmp_path, run_dir)
    lines = out.stdout.splitlines()
    assert lines[:2] == [b'{"t":1}', b'{"t":2}']  # every sample first
    assert b'"type":"burnin-end"' in lines[-1] and b'"lost":true' in lines[-1]


def test_follow_ends_normally_when_the_driver_wrote_its_exit_code(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "samples.jsonl").write_bytes(b'{"t":1}\n')
    (run_dir / "exit_code").write_text("0\n")
    out = _follow(tmp_path, run_dir)
    last = out.stdout.splitlines()[-1]
    assert b'"type":"burnin-end"' in last and b"lost" not in last
