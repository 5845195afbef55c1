"""drain / resume against a real Slurm (tests/integration/slurm_lab.py) over a real sshd: the
CLI as an operator runs it, each scontrol sent through sshd to the lab node, the node's state
read back from the controller."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sshd import REPO, client_env

HOST = "slurm01"


@pytest.fixture
def operator(slurm_sshd, slurm_lab, tmp_path):
    """Runs ``dltui ARGS`` as the operator (own ~/.ssh, own audit log); the node ends resumed."""
    lab, _node = slurm_sshd
    home = lab.make_home(tmp_path / "home")
    env = client_env(home)
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    slurm_lab.idle()  # no job of an earlier test still completing: the node reads IDLE(+DRAIN)

    def dltui(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dltui", *args], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=120)

    dltui.audit = tmp_path / "state" / "dltui" / "audit.jsonl"  # type: ignore[attr-defined]
    yield dltui
    slurm_lab.cancel_all()
    if "DRAIN" in slurm_lab.node_state():
        slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=RESUME")


def _audit(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_drain_then_resume_over_sshd_real_slurm(operator, slurm_lab):
    name = slurm_lab.node_name
    done = operator("drain", HOST, "--reason", "GPU 3 at 91 °C", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert slurm_lab.node_state().startswith("IDLE+DRAIN")  # (+NOT_RESPONDING a moment after a resume)
    assert slurm_lab.node_reason().startswith("dltui: GPU 3 at 91 °C [")
    assert f"{HOST}: ok: {name} reads IDLE+DRAIN" in done.stdout and "): dltui: GPU 3 at 91 °C [" in done.stdout
    intent, outcome = _audit(operator.audit)[-2:]
    assert intent["outcome"] == "intent" and outcome["outcome"] == "ok"
    assert intent["argv"][-3:] == [f"NodeName={name}", "State=DRAIN", intent["argv"][-1]]
    assert intent["argv"][-1].startswith("Reason=dltui: GPU 3 at 91 °C [")

    back = operator("resume", HOST, "--yes")
    assert back.returncode == 0, back.stdout + back.stderr
    assert "DRAIN" not in slurm_lab.node_state()
    assert f"{HOST}: ok: {name} resumed" in back.stdout


def test_drain_without_yes_shows_the_exact_command_and_sends_nothing(operator, slurm_lab):
    done = operator("drain", HOST, "--reason", "fan noise")
    assert done.returncode == 1
    assert "would run: scontrol update NodeName=" in done.stdout
    assert "'Reason=dltui: fan noise [" in done.stdout
    assert "DRAIN" not in slurm_lab.node_state()
    assert [r["outcome"] for r in _audit(operator.audit)] == ["refused"]


def test_read_only_refuses_drain_and_resume_real_slurm(operator, slurm_lab):
    done = operator("drain", HOST, "--reason", "x", "--yes", "--read-only")
    assert done.returncode == 1
    assert "refused: read-only" in done.stdout
    assert "DRAIN" not in slurm_lab.node_state()
    slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=DRAIN", "Reason=dltui: earlier [x]")
    back = operator("resume", HOST, "--yes", "--read-only")
    assert back.returncode == 1 and "refused: read-only" in back.stdout
    assert "DRAIN" in slurm_lab.node_state()


def test_resume_leaves_someone_elses_drain_unless_forced(operator, slurm_lab):
    name = slurm_lab.node_name
    slurm_lab.scontrol("update", f"NodeName={name}", "State=DRAIN", "Reason=NHC: IB port down")
    refused = operator("resume", HOST, "--yes")
    assert refused.returncode == 1
    assert "not by dltui: a drain someone else set is theirs to undo (--force" in refused.stdout
    assert "'NHC: IB port down'" in refused.stdout
    assert "DRAIN" in slurm_lab.node_state() and slurm_lab.node_reason().startswith("NHC: IB port down [")
    forced = operator("resume", HOST, "--yes", "--force")
    assert forced.returncode == 0, forced.stdout
    assert "DRAIN" not in slurm_lab.node_state()


def test_drain_with_a_running_job_reads_draining(operator, slurm_lab):
    job = slurm_lab.submit("sleep 300")
    slurm_lab.wait_job(job)
    done = operator("drain", HOST, "--reason", "ECC errors", "--yes")
    assert done.returncode == 0, done.stdout
    assert "(draining)" in done.stdout
    assert slurm_lab.job_state(job) == "RUNNING"  # a drain lets running work finish


async def test_dashboard_drains_from_the_node_screen_real_slurm_fake_smi(slurm_sshd, slurm_lab, tmp_path, use_home):
    """The dashboard over real sshd: the SCHED column reads Slurm (idle), D on the row asks the
    reason, the dialog shows the exact scontrol line, y drains, and the column reads drain with
    dltui's reason. The GPUs are the FAKE nvidia-smi's."""
    from textual.widgets import Input

    from dltui import cli, wiring
    from dltui.ui.screens import ConfirmScreen, PromptScreen

    lab, _node = slurm_sshd
    use_home(lab.make_home(tmp_path / "home"))
    settings = cli.settings(cli.CommonOptions())
    app, fleet = wiring.dashboard_app(settings, wiring.Hosts((HOST,)))
    try:
        with fleet:
            async with app.run_test(size=(160, 48)) as pilot:
                state = app.fleet.nodes[HOST]

                async def until(check, what):
                    for _ in range(300):
                        if check():
                            return
                        await pilot.pause(0.1)
                    raise AssertionError(f"never: {what}")

                await until(lambda: state.scheduler is not None and state.scheduler.word == "idle", "SCHED idle")
                await pilot.press("D")  # one node: its screen is the dashboard
                await until(lambda: isinstance(app.screen, PromptScreen), "the reason prompt")
                app.screen.query_one(Input).value = "fan failure"  # over the worst alert's words
                await pilot.press("enter")
                await until(lambda: isinstance(app.screen, ConfirmScreen), "the confirm dialog")
                (node, line), = app.screen.lines
                assert node == HOST
                assert line.startswith(f"scontrol update NodeName={slurm_lab.node_name} State=DRAIN 'Reason=dltui: ")
                assert "fan failure [" in line
                await pilot.press("y")
                await until(lambda: HOST in app.actions.results, "the result")
                assert app.actions.results[HOST].ok, app.actions.results[HOST].message
                await until(lambda: state.scheduler is not None and state.scheduler.word == "drain", "SCHED drain")
                assert "fan failure" in state.scheduler.cell()
    finally:
        if "DRAIN" in slurm_lab.node_state():
            slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=RESUME")


@pytest.fixture
async def node_runner(slurm_sshd, tmp_path, use_home):
    """The CLI's runner (SSH to slurm01 through sshd) with an ActionService on it."""
    from dltui.actions.audit import AuditLog
    from dltui.actions.policy import ActionSettings
    from dltui.actions.scheduler import SchedulerActions
    from dltui.actions.service import ActionService
    from dltui.transport.ssh.commands import SshCommands
    from dltui.transport.ssh.options import SshOptions

    lab, _node = slurm_sshd
    use_home(lab.make_home(tmp_path / "home"))
    runner = SshCommands(SshOptions())
    actions = SchedulerActions(ActionService(runner, ActionSettings(), AuditLog(tmp_path / "audit.jsonl")))
    try:
        yield runner, actions
    finally:
        await runner.close()


async def test_burnin_refuses_a_node_running_a_job_naming_it_real_slurm(node_runner, slurm_lab):
    from dltui.burnin import scheduler_gate

    runner, _ = node_runner
    assert await scheduler_gate.refusals(runner, [HOST], {}) == {}  # idle: free to load
    job = slurm_lab.submit("sleep 300", "--job-name=llama-ft")
    slurm_lab.wait_job(job)
    try:
        refused = await scheduler_gate.refusals(runner, [HOST], {})
    finally:
        slurm_lab.cancel_all()
    why = f"Slurm has it mix (MIXED): job {job} llama-ft (nobody); not loaded (--force to run anyway)"
    assert refused == {HOST: why}


async def test_drain_on_fail_drains_with_the_verdicts_line_real_slurm(node_runner, slurm_lab):
    from dltui.burnin import scheduler_gate
    from dltui.burnin.items import FAIL, PASS, GpuVerdict, Item, NodeVerdict

    _, actions = node_runner
    bad = NodeVerdict(HOST, gpus=[GpuVerdict(3, [Item("xid", FAIL, "XID 79 (fell off the bus)")])])
    good = NodeVerdict("other", gpus=[GpuVerdict(0, [Item("thermal", PASS, "max 71 °C")])])
    slurm_lab.idle()
    try:
        results = await scheduler_gate.drain_failed(actions, [bad, good], "r1", {})
        assert [r.node for r in results] == [HOST]  # only the FAIL node
        assert results[0].ok, results[0].message
        assert slurm_lab.node_state().startswith("IDLE+DRAIN")
        assert slurm_lab.node_reason().startswith("dltui: burn-in r1 FAIL: GPU 3 xid: XID 79 (fell off the bus) [")
    finally:
        slurm_lab.scontrol("update", f"NodeName={slurm_lab.node_name}", "State=RESUME")
