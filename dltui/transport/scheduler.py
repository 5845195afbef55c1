"""Reading the scheduler's view of nodes: Slurm over the node's own connection (a ``Runner``:
``scontrol show node -o NAME``), Kubernetes with the operator's own ``kubectl`` and kubeconfig
on this machine (never on the node). The parsers are ``dltui.core.scheduler``'s.

``SchedulerPoller`` keeps the dashboard's view fresh: every node once per ``interval_s``
(30 s), a node that did not answer sooner, a node without Slurm seldom; it writes what it
reads into the fleet state (``FleetState.on_scheduler``), never per sample.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dltui.core.scheduler import (
    NO_SLURM_WORDS,
    KubeNode,
    SchedulerView,
    SlurmNode,
    parse_kubectl_node,
    parse_scontrol_node,
)
from dltui.core.text import clean

from .command import CommandResult, Runner

if TYPE_CHECKING:
    from dltui.config import Config
    from dltui.core.state import FleetState

    from .base import Sink
    from .command import FleetRunner

READ_TIMEOUT_S = 10.0
NO_SLURM = NO_SLURM_WORDS
NO_KUBECTL = "kubectl not found on this machine"
# A Slurm or Kubernetes node name as it may reach an argv: a host-name shape, never an option.
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")
# One fixed script, no input in it: the node's short name, scontrol's path, and SlurmUser (who
# may change node states without sudo).
SLURM_IDENTITY_ARGV = (
    "sh",
    "-c",
    "hostname -s; command -v scontrol || echo; "
    "scontrol show config 2>/dev/null | sed -n 's/^SlurmUser *= *\\([^(]*\\).*/\\1/p' | head -1",
)


def valid_node_name(name: str) -> bool:
    return bool(_NODE_NAME.match(name))


def show_node_argv(name: str) -> list[str]:
    return ["scontrol", "show", "node", "-o", name]


def kubectl_get_argv(kubectl: Sequence[str], name: str) -> list[str]:
    return [*kubectl, "get", "node", name, "-o", "json"]


@dataclass(frozen=True)
class SlurmIdentity:
    """A node's short host name, where its scontrol is ('' when missing) and SlurmUser."""

    hostname: str
    scontrol: str
    slurm_user: str

    @classmethod
    def parse(cls, text: str) -> SlurmIdentity:
        lines = [clean(line.strip()) for line in text.splitlines()] + ["", "", ""]
        return cls(lines[0], lines[1], lines[2])


def _missing_tool(res: CommandResult) -> bool:
    return res.exit_status == 127  # the shell's "command not found"


async def read_slurm_identity(
    runner: Runner, node: str, timeout_s: float = READ_TIMEOUT_S
) -> SlurmIdentity | CommandResult:
    res = await runner.run_command(node, SLURM_IDENTITY_ARGV, timeout_s)
    if not res.ok:
        return res
    return SlurmIdentity.parse(res.stdout)


async def read_slurm_node(
    runner: Runner, node: str, name: str, timeout_s: float = READ_TIMEOUT_S
) -> SlurmNode | CommandResult:
    """``name``'s Slurm state read on ``node``, or the command's trouble (its result)."""
    res = await runner.run_command(node, show_node_argv(name), timeout_s)
    if not res.ok:
        return res
    parsed = parse_scontrol_node(res.stdout)
    if parsed is None:
        return CommandResult(res.argv, 1, res.stdout, res.stderr or f"scontrol said no node {name!r}")
    return parsed


def slurm_problem(res: CommandResult) -> str:
    """A failed Slurm read in plain words."""
    if res.problem is not None:
        return res.reason or res.problem
    if _missing_tool(res):
        return NO_SLURM
    return f"scontrol: {res.first_error_line()}"


async def read_kube_node(
    runner: Runner, kubectl: Sequence[str], name: str, timeout_s: float = READ_TIMEOUT_S
) -> KubeNode | str:
    """``name`` as the operator's kubectl sees it (``runner`` runs on this machine)."""
    res = await runner.run_command("localhost", kubectl_get_argv(kubectl, name), timeout_s)
    if res.exit_status == 127:
        return NO_KUBECTL
    if not res.ok:
        return f"kubectl: {res.first_error_line()}"
    parsed = parse_kubectl_node(res.stdout)
    return parsed if parsed is not None else "kubectl: not a node object"


@dataclass(frozen=True)
class SchedTarget:
    """Where one dashboard node is read: its Slurm name's mapping (``{host}`` = the node's short
    host name; None: the short host name itself), and its Kubernetes node name (None: not read)."""

    slurm_node: str | None = None
    kube_node: str | None = None
    slurm: bool = True

    def kube_name(self, host: str) -> str:
        """The Kubernetes node name for ``host``: the group's (``{host}`` filled) or its short name."""
        short = host.rsplit("@", 1)[-1].split(":", 1)[0].split(".", 1)[0]
        return (self.kube_node or "{host}").replace("{host}", short)


def targets_from_config(cfg, hosts: Sequence[str]) -> dict[str, SchedTarget]:
    """Each host's ``SchedTarget`` from the first ``[groups.NAME]`` that matches it and sets
    the key (as ``units`` are found)."""
    from fnmatch import fnmatchcase

    groups = list((cfg.groups if cfg is not None else {}).values())
    out = {}
    for host in hosts:
        low = host.lower()
        slurm_node = kube_node = None
        for g in groups:
            if not any(fnmatchcase(low, h.lower()) for h in g.hosts):
                continue
            slurm_node = slurm_node or g.slurm_node
            kube_node = kube_node or g.kubernetes_node
        out[host] = SchedTarget(slurm_node, kube_node)
    return out


class SchedulerPoller:
    """Reads every node's scheduler view every ``interval_s`` and hands it to ``publish``."""

    def __init__(
        self,
        runner: Runner,
        local: Runner,
        targets: Mapping[str, SchedTarget],
        kubectl: Sequence[str] = ("kubectl",),
        interval_s: float = 30.0,
        retry_s: float = 5.0,
        no_slurm_s: float = 600.0,
    ):
        self.runner = runner
        self.local = local
        self.targets = dict(targets)
        self.kubectl = tuple(kubectl)
        self.interval_s = interval_s
        self.retry_s = retry_s
        self.no_slurm_s = no_slurm_s
        self.due: dict[str, float] = dict.fromkeys(self.targets, 0.0)
        self.names: dict[str, str] = {}  # node -> its Slurm name, once learnt
        self.reads = 0  # scontrol / kubectl calls made (the benchmark's count)

    async def read(self, node: str) -> tuple[SchedulerView, float]:
        """(the view, seconds until the next read)."""
        from dltui.core.scheduler import slurm_name_for

        target = self.targets.get(node, SchedTarget())
        slurm: SlurmNode | None = None
        kube: KubeNode | None = None
        problems = []
        wait = self.interval_s
        if target.slurm:
            name = self.names.get(node)
            if name is None:
                ident = await read_slurm_identity(self.runner, node)
                self.reads += 1
                if isinstance(ident, CommandResult):
                    return SchedulerView(problem=slurm_problem(ident)), self.retry_s
                if not ident.scontrol:
                    return SchedulerView(problem=NO_SLURM), self.no_slurm_s
                name = slurm_name_for(ident.hostname, target.slurm_node)
                if valid_node_name(name):
                    self.names[node] = name
            if not valid_node_name(name):
                problems.append(f"not a Slurm node name: {name!r}")
            else:
                got = await read_slurm_node(self.runner, node, name)
                self.reads += 1
                if isinstance(got, CommandResult):
                    problems.append(slurm_problem(got))
                    wait = self.retry_s if got.problem is not None else self.interval_s
                else:
                    slurm = got
        if target.kube_node:
            # the group's name with ``{host}`` filled, as the cordon action names it
            got_k = await read_kube_node(self.local, self.kubectl, target.kube_name(node))
            self.reads += 1
            if isinstance(got_k, str):
                problems.append(got_k)
            else:
                kube = got_k
        return SchedulerView(slurm, kube, "; ".join(problems)), wait

    def due_now(self, live: Callable[[str], bool]) -> list[str]:
        """The nodes to read now: due, and live (``live``: its connection is up)."""
        now = time.monotonic()
        return [n for n, t in self.due.items() if t <= now and live(n)]

    async def turn(
        self,
        publish: Callable[[str, SchedulerView], None],
        live: Callable[[str], bool],
        at_most: int | None = None,
    ) -> None:
        """One pass: each node due and live is read and published (a node not live is asked
        once it is). A caller runs a turn every second or so: a short task, never a loop.
        ``at_most``: read no more nodes than that in this turn, the longest due first (the
        dashboard's cap: a fleet that comes up together would otherwise open a session on
        every node in the same second, on the loop that draws the screen)."""
        due = self.due_now(live)
        if at_most is not None and len(due) > at_most:
            due = sorted(due, key=self.due.__getitem__)[:at_most]
        if not due:
            return
        views = await asyncio.gather(*(self.read(n) for n in due))
        now = time.monotonic()
        for node, (view, wait) in zip(due, views, strict=True):
            publish(node, view)
            self.due[node] = now + wait

    def refresh(self, node: str) -> None:
        """Read ``node`` again at the next turn (after an action changed its state)."""
        self.due[node] = 0.0


def poller_for(
    runner: FleetRunner, cfg: Config | None, *, local: Runner | None = None, interval_s: float = 30.0
) -> SchedulerPoller | None:
    """The poller of the nodes ``runner`` can run commands on (their Slurm through their own
    connections, kubectl on this machine), with the ``[groups]`` mappings of ``cfg``; None
    when there is no such node. The one place a poller is made: the dashboard, the snapshot
    and the exporter read through the same code."""
    from .command import LocalRunner

    runnable = [n for n in runner.by_node if runner.can_run(n)]
    if not runnable:
        return None
    return SchedulerPoller(runner, local or LocalRunner(), targets_from_config(cfg, runnable), interval_s=interval_s)


# How often ``SchedulerReads`` asks the poller which nodes are due (each is read every 30 s):
# short, so that a snapshot of a few seconds has each node's state read at its start.
READS_TICK_S = 0.25


class SchedulerReads:
    """The poller run beside the transports (``wiring.Fleet.lookups``) for the commands without
    a dashboard (snapshot, export): each node is read once it is live, then every 30 s, into
    ``state`` (``FleetState.on_scheduler``). The dashboard runs the same poller from its timer."""

    names: list[str] = []  # no node of its own

    def __init__(self, state: FleetState, poller: SchedulerPoller, tick_s: float = READS_TICK_S):
        self.state = state
        self.poller = poller
        self.tick_s = tick_s

    def live(self, node: str) -> bool:
        from dltui.core import status as st

        got = self.state.nodes.get(node)
        return got is not None and got.status == st.OK

    async def run(self, sink: Sink) -> None:
        while True:
            await self.poller.turn(self.state.on_scheduler, self.live)
            await asyncio.sleep(self.tick_s)
