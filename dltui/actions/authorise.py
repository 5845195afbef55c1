"""Authorise: whether dltui may do this, and with which privilege. As root a command runs as
it is; otherwise under ``sudo -n`` (or polkit for systemctl), never behind a password prompt.
A PID may be signalled only while it is a GPU process or a process of the node's unit. When
sudo or polkit says no, the answer says exactly what to allow."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dltui.node.schema import sudo_refused
from dltui.transport.command import CommandResult

from . import commands as cmd
from .query import NodeQueries

_POLKIT_DENIED = ("Interactive authentication required", "Access denied")


def change_argv(base: Sequence[str], who: cmd.Identity, privilege: str) -> list[str]:
    return cmd.privileged(base, who, privilege)


async def signal_reason(
    queries: NodeQueries, node: str, pid: int, units: Sequence[str], gpu_pids: Iterable[int]
) -> tuple[str | None, str] | CommandResult:
    """(why ``pid`` may be signalled, or None; its owner's uid) — or the node's trouble. The
    node's GPU processes now count; the newest sample's list only where nvidia-smi cannot
    answer (an older PID may since belong to another process)."""
    look = await queries.process(node, pid)
    if look.problem is not None or look.exit_status != 0:
        return look
    owner_line, _, cgroup = look.stdout.partition("\n")
    unit_of = next((u for u in units if f"/{u}" in cgroup), None)
    if unit_of:
        return f"a process of {unit_of}", owner_line.strip()
    fresh = await queries.gpu_pids(node)
    on_gpu = fresh if fresh is not None else set(gpu_pids)
    return ("a GPU process" if pid in on_gpu else None), owner_line.strip()


def sudo_denied(argv: Sequence[str], res: CommandResult) -> bool:
    return sudo_refused(argv, res.stderr)


def polkit_denied(res: CommandResult) -> bool:
    return any(s in res.stderr for s in _POLKIT_DENIED)


def unit_denial(
    who: cmd.Identity, argv: list[str], res: CommandResult, verb: str, unit: str
) -> tuple[str, list[str]] | None:
    """(message, details: what to allow) when sudo or polkit refused a unit change."""
    error = res.first_error_line()
    if sudo_denied(argv, res):
        return (  # the command is said once: in the line that allows it
            f"sudo refused ({error}); dltui never types a password. To let {who.user} run "
            "exactly this command, add with visudo:",
            [
                cmd.sudoers_line(who, argv),
                'or, with polkit (no sudo; set [actions] privilege = "polkit"):',
                cmd.polkit_rule(who, verb, unit),
            ],
        )
    if polkit_denied(res):
        return (
            f"polkit refused ({error}); allow it with a rule such as:",
            [cmd.polkit_rule(who, verb, unit)],
        )
    return None


def signal_denial(
    who: cmd.Identity, argv: list[str], res: CommandResult
) -> tuple[str, list[str]] | None:
    if res.problem is None and sudo_denied(argv, res):
        return (
            f"sudo refused ({res.first_error_line()}); "
            "to allow exactly this command, add with visudo:",
            [cmd.sudoers_line(who, argv)],
        )
    return None
