"""Who runs scontrol: as root, or as SlurmUser, directly; as anyone else under ``sudo -n`` with
scontrol's full path (never a password prompt), and a refusal names the sudoers line. The node's
answers are this project's real Slurm lab captures, replayed by a runner at the command seam."""

from __future__ import annotations

from pathlib import Path

from dltui.actions.audit import AuditLog
from dltui.actions.policy import ActionSettings
from dltui.actions.scheduler import SchedulerActions
from dltui.actions.service import ActionService
from dltui.transport.command import CommandResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scheduler"
IDLE = (FIXTURES / "scontrol-show-node-oneliner_dltui-lab-22.05.8-idle.txt").read_text()
SUDO_REFUSED = "sudo: a password is required\n"


class ReplayRunner:
    """Answers each command from what the lab printed for it; records what was sent."""

    def __init__(self, uid: int, user: str, slurm_user: str = "slurm", sudo_ok: bool = True):
        self.who = f"{uid}\n{user}\n/usr/bin/systemctl\n/usr/bin/kill\n"
        self.slurm = f"vm\n/usr/bin/scontrol\n{slurm_user}\n"
        self.sudo_ok = sudo_ok
        self.sent: list[tuple[str, ...]] = []

    async def run_command(self, node, argv, timeout_s):
        argv = tuple(argv)
        self.sent.append(argv)
        if argv[:2] == ("sh", "-c") and "id -u" in argv[2]:
            return CommandResult(argv, 0, self.who)
        if argv[:2] == ("sh", "-c") and "hostname -s" in argv[2]:
            return CommandResult(argv, 0, self.slurm)
        if argv[:3] == ("scontrol", "show", "node"):
            return CommandResult(argv, 0, IDLE)
        if "sudo" in argv and not self.sudo_ok:
            return CommandResult(argv, 1, "", SUDO_REFUSED)
        return CommandResult(argv, 0, "")


def _actions(runner, tmp_path):
    return SchedulerActions(ActionService(runner, ActionSettings(), AuditLog(tmp_path / "audit.jsonl")))


async def test_root_and_slurm_user_run_scontrol_directly(tmp_path):
    for uid, user in ((0, "root"), (64030, "slurm")):
        planned = await _actions(ReplayRunner(uid, user), tmp_path).plan_slurm("gpu01", "drain", "hot GPU")
        assert planned[0][:4] == ["scontrol", "update", "NodeName=vm", "State=DRAIN"]


async def test_anyone_else_goes_through_sudo_n_with_the_full_path(tmp_path):
    planned = await _actions(ReplayRunner(1000, "ops"), tmp_path).plan_slurm("gpu01", "drain", "hot GPU")
    assert planned[0][:5] == ["sudo", "-n", "/usr/bin/scontrol", "update", "NodeName=vm"]


async def test_a_sudo_refusal_names_the_sudoers_line(tmp_path):
    runner = ReplayRunner(1000, "ops", sudo_ok=False)
    actions = _actions(runner, tmp_path)
    actions.operator = "root"  # who runs dltui here: written into the reason
    done = await actions.slurm("gpu01", "drain", "hot GPU", confirmed=True)
    assert done.outcome == "not-permitted"
    assert "dltui never types a password" in done.message
    # sudoers escapes '=' and ':' in arguments, and the reason's brackets for fnmatch
    assert done.details == [
        "ops ALL=(root) NOPASSWD: /usr/bin/scontrol update NodeName\\=vm State\\=DRAIN "
        "Reason\\=dltui\\: hot GPU \\\\[root\\\\]"
    ]
