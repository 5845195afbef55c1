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
