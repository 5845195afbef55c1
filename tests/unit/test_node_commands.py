"""The one node-command contract (``transport.command``): who can run commands is declared
(``TakesCommands``), not guessed; the node's trouble is a typed result or the one error type;
the dashboard's burn-in runs on its SSH fleet's own connections, not a second pool."""

from __future__ import annotations

import asyncio

import pytest

from dltui.burnin.remote import Answer
from dltui.config import Config
from dltui.transport.command import (
    REFUSED,
    TIMED_OUT,
    UNREACHABLE,
    CommandError,
    CommandResult,
    FleetRunner,
    timed_out,
)
from dltui.transport.demo import DemoTransport
from dltui.transport.ssh.commands import FleetCommands
from dltui.transport.ssh.fleet import SshFleet
from dltui.transport.ssh.options import SshOptions
from dltui.wiring import dashboard_services


class _Recording:
    """A transport that says nothing about commands (as a replay or a Prometheus fleet)."""

    names = ["r1"]

    async def run(self, sink) -> None:
        return None


def test_the_dashboards_burnin_runs_on_the_ssh_fleets_own_connections():
    fleet = SshFleet(["gpu01", "gpu02"], 1.0, SshOptions(python="python3.11"))
    services = dashboard_services([fleet], Config())
    launcher = services.burnin
    assert launcher is not None and launcher.hosts == ("gpu01", "gpu02")
    assert isinstance(launcher.runner, FleetCommands) and launcher.runner.fleet is fleet
    session = launcher.session(["gpu01"], "r1")
    assert session.runner is launcher.runner and session.python == "python3.11"
    assert launcher.plan(duration_s=30).interval_s == Config().interval_s  # Plan.from_config


def test_a_demo_or_a_recording_offers_no_burnin_and_only_declared_transports_take_commands():
    demo = DemoTransport(nodes=2, gpus=1)
    services = dashboard_services([demo, _Recording()], Config())  # type: ignore[list-item]
    assert services.burnin is None
    runner = FleetRunner([demo, _Recording()])  # type: ignore[list-item]
    assert runner.can_run(demo.names[0]) and not runner.can_run("r1")
    res = asyncio.run(runner.run_command("r1", ["true"], 5.0))
    assert res.problem == UNREACHABLE and "cannot run commands" in (res.reason or "")


def test_a_fleet_node_not_connected_answers_unreachable_and_its_stream_raises_the_one_error():
    commands = FleetCommands(SshFleet(["gpu01"], 1.0, SshOptions()))  # not running: no connection yet
    res = asyncio.run(commands.run_command("gpu01", ["true"], 5.0))
    assert (res.ok, res.problem) == (False, UNREACHABLE) and "gpu01 is not connected" in (res.reason or "")
    with pytest.raises(CommandError, match="not connected") as caught:
        res.check()
    assert caught.value.problem == UNREACHABLE

    async def follow() -> None:
        async with commands.stream("gpu01", ["cat"]):
            pass

    with pytest.raises(CommandError) as streamed:
        asyncio.run(follow())
    assert streamed.value.problem == UNREACHABLE


def test_check_passes_a_result_that_ran_whatever_its_exit_status():
    ran = CommandResult(("false",), 1, "", "no")
    assert ran.check() is ran and not ran.ok
    late = timed_out(["sleep", "9"], 1.0, 1.0)
    with pytest.raises(CommandError) as caught:
        late.check()
    assert caught.value.problem == TIMED_OUT


def test_the_drivers_answer_is_read_typed_from_its_last_json_line():
    said = '{"ok": true, "dir": "/x"}\n{"ok": false, "reason": "already running", "scratch_left": true}\n'
    answer = Answer.of(CommandResult(("sh",), 1, said))
    assert answer == Answer(False, "already running", scratch_left=True)
    assert Answer.of(CommandResult(("sh",), 0, '{"ok": true}\n')).ok
    mute = Answer.of(CommandResult(("sh",), 127, "", "sh: 1: python3: not found\n"))
    assert mute == Answer(False, "exit 127: sh: 1: python3: not found")
    refused = Answer.of(CommandResult(("sh",), None, problem=REFUSED, reason="too much"))
    assert refused == Answer(False, "too much")
